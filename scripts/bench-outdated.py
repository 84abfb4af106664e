#!/usr/bin/env python3
"""`berth outdated` (#50), side by side in one run: 50 components whose
repositories hold 200 tags each, on a local registry, next to the loop a script
would run instead (`skopeo list-tags` per repository, then the newest picked by
`sort -V`): wall time (median of 5) and the HTTP requests the registry served
to each (from its access log).

Usage: scripts/bench-outdated.py [COMPONENTS] [TAGS]   (default 50 200; needs docker-registry, skopeo)
"""
import hashlib
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_registry  # noqa: E402  (beside this script)

ROOT = pathlib.Path(__file__).resolve().parent.parent
COMPONENTS = int(sys.argv[1]) if len(sys.argv) > 1 else 50
TAGS = int(sys.argv[2]) if len(sys.argv) > 2 else 200
MANIFEST = "application/vnd.oci.image.manifest.v1+json"


def request(method: str, url: str, body: bytes = b"", headers=None):
    req = urllib.request.Request(url, data=body if method in ("PUT", "POST") else None, method=method, headers=headers or {})
    with urllib.request.urlopen(req, timeout=10) as response:
        return response.headers


def push_repository(host: str, name: str, tags: list) -> None:
    """One image under every tag: two blobs, then one manifest PUT per tag."""
    layer = f"layer of {name}\n".encode()
    config = json.dumps({"architecture": "amd64", "os": "linux", "rootfs": {"type": "layers", "diff_ids": [f"sha256:{hashlib.sha256(layer).hexdigest()}"]}}).encode()
    for blob in (layer, config):
        location = request("POST", f"http://{host}/v2/{name}/blobs/uploads/")["Location"]
        if location.startswith("/"):
            location = f"http://{host}{location}"
        sep = "&" if "?" in location else "?"
        request("PUT", f"{location}{sep}digest=sha256:{hashlib.sha256(blob).hexdigest()}", blob, {"Content-Type": "application/octet-stream"})
    manifest = json.dumps({"schemaVersion": 2, "mediaType": MANIFEST,
                           "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": f"sha256:{hashlib.sha256(config).hexdigest()}", "size": len(config)},
                           "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": f"sha256:{hashlib.sha256(layer).hexdigest()}", "size": len(layer)}]}).encode()
    for tag in tags:
        request("PUT", f"http://{host}/v2/{name}/manifests/{tag}", manifest, {"Content-Type": MANIFEST})


def tags_of(i: int) -> list:
    """Releases, pre-releases and tags that are no version, as real repositories mix them."""
    out = []
    for n in range(TAGS):
        kind = n % 10
        if kind == 8:
            out.append(f"sha-{hashlib.sha1(f'{i}-{n}'.encode()).hexdigest()[:7]}")
        elif kind == 9:
            out.append(f"v{n // 50}.{n % 50}.0-rc1")
        else:
            out.append(f"v{n // 50}.{n % 50}.{kind}")
    return out + ["latest", "main"]


def main() -> None:
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "berth"], cwd=ROOT, check=True)
    berth = ROOT / "target/release/berth"
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        host, log, registry = bench_registry.start(work)
        try:
            started = time.perf_counter()
            lines = ["name: bench", "images:"]
            for i in range(COMPONENTS):
                push_repository(host, f"acme/c{i}", tags_of(i))
                lines.append(f"  c{i}: {{image: '{host}/acme/c{i}:v0.1.0'}}")
            (work / "berth.yaml").write_text("\n".join(lines) + "\n")
            print(f"pushed {COMPONENTS} repositories x {TAGS + 2} tags in {time.perf_counter() - started:.1f} s")

            def requests() -> int:
                return bench_registry.requests(log)

            def timed(run) -> tuple:
                before = requests()
                start = time.perf_counter()
                out = run()
                wall = time.perf_counter() - start
                time.sleep(0.3)  # the access log is written after the answer
                return wall, requests() - before, out

            def berth_outdated():
                out = subprocess.run([str(berth), "outdated", "--output", "json", "--insecure-registry", host], cwd=work, capture_output=True, text=True)
                assert out.returncode == 0, out.stderr
                return {r["component"]: r["newest"] for r in json.loads(out.stdout)}

            script = (
                "for i in $(seq 0 $(( N - 1 ))); do "
                "printf 'c%s ' $i; skopeo list-tags --tls-verify=false docker://$HOST/acme/c$i "
                "| python3 -c 'import json,sys; print(\"\\n\".join(json.load(sys.stdin)[\"Tags\"]))' "
                "| grep -E '^v[0-9]+\\.[0-9]+\\.[0-9]+$' | sort -V | tail -1; done"
            )

            def skopeo_loop():
                out = subprocess.run(["bash", "-c", script], env={"PATH": "/usr/bin:/bin", "N": str(COMPONENTS), "HOST": host}, capture_output=True, text=True, check=True)
                return dict(line.split() for line in out.stdout.splitlines())

            b = [timed(berth_outdated) for _ in range(5)]
            s = [timed(skopeo_loop) for _ in range(5)]
            assert b[0][2] == s[0][2], (b[0][2], s[0][2])
            bw, sw = statistics.median(w for w, _, _ in b), statistics.median(w for w, _, _ in s)
            print(f"newest release of {COMPONENTS} components x {TAGS + 2} tags (median of 5; requests the registry served):")
            print(f"  berth outdated                       {bw * 1e3:8.1f} ms  {b[0][1]:4} requests")
            print(f"  skopeo list-tags loop + sort -V      {sw * 1e3:8.1f} ms  {s[0][1]:4} requests")
            print(f"  berth is {sw / bw:.1f}x faster; both find the same newest release for every component")
        finally:
            registry.kill()
            registry.wait()


if __name__ == "__main__":
    main()
