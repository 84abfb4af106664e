"""What the registry benchmarks share: a local `docker-registry` with a JSON access
log on a free port, the count of requests it served, and a one-layer OCI layout to
push from. Imported by scripts/bench-*.py (beside them)."""
import hashlib
import json
import pathlib
import socket
import subprocess
import time
import urllib.request


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start(work: pathlib.Path):
    """A registry serving from WORK/data: (host, its access log, the process); wait for it."""
    host = f"127.0.0.1:{free_port()}"
    log = work / "registry.log"
    (work / "config.yml").write_text(
        f"version: 0.1\nlog: {{level: info, formatter: json}}\nstorage: {{filesystem: {{rootdirectory: {work}/data}}}}\nhttp: {{addr: \"{host}\"}}\n"
    )
    process = subprocess.Popen(["docker-registry", "serve", str(work / "config.yml")], stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    for _ in range(200):
        try:
            urllib.request.urlopen(f"http://{host}/v2/", timeout=1)
            break
        except OSError:
            time.sleep(0.05)
    return host, log, process


def requests(log: pathlib.Path) -> int:
    """The requests the registry has answered so far."""
    return sum(1 for line in open(log) if '"http.request.method"' in line and "response completed" in line)


def layout(work: pathlib.Path, seed: bytes = b"bench layer\n") -> pathlib.Path:
    """A one-layer OCI image layout at WORK/layout, tagged `t` (for `skopeo copy oci:DIR:t`)."""
    out = work / "layout"
    (out / "blobs/sha256").mkdir(parents=True)

    def blob(data: bytes) -> tuple:
        digest = hashlib.sha256(data).hexdigest()
        (out / "blobs/sha256" / digest).write_bytes(data)
        return digest, len(data)

    layer = blob(seed)
    config = blob(json.dumps({"architecture": "amd64", "os": "linux", "rootfs": {"type": "layers", "diff_ids": [f"sha256:{layer[0]}"]}}).encode())
    manifest = blob(json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                                "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": f"sha256:{config[0]}", "size": config[1]},
                                "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": f"sha256:{layer[0]}", "size": layer[1]}]}).encode())
    (out / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": f"sha256:{manifest[0]}", "size": manifest[1], "annotations": {"org.opencontainers.image.ref.name": "t"}}]}))
    (out / "oci-layout").write_text('{"imageLayoutVersion":"1.0.0"}')
    return out
