"""The GitOps engines of the test control plane (`scripts/testenv build --gitops`,
`scripts/testenv up --gitops DIR`): Flux's source-controller and kustomize-controller,
built from the Go module proxy and run as local processes against the plane.

`go install M@V` does not work for them (their go.mod files carry `replace`
directives), so each is built as a user would by hand: `go mod download` of the
module, a writable copy, `go mod edit` (the nested api module the zip leaves out is
taken from the proxy instead; a pin the proxy does not serve is moved to one it
does), then `go build`. Module and build caches are temporary and removed after the
build: the binaries are what is kept (under the testenv cache, keyed by this recipe
and the Go version), so a small CI disk holds ~100 MB instead of gigabytes.
"""

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

# (binary, module, version, `go mod edit` arguments)
FLUX = [
    ("source-controller", "github.com/fluxcd/source-controller", "v1.9.6", [
        "-dropreplace=github.com/fluxcd/source-controller/api",
        # v0.18.3, which v1.9.6 requires, is not served by the proxy.
        "-replace=github.com/fluxcd/pkg/artifact=github.com/fluxcd/pkg/artifact@v0.18.0",
    ]),
    ("kustomize-controller", "github.com/fluxcd/kustomize-controller", "v1.9.6", [
        "-dropreplace=github.com/fluxcd/kustomize-controller/api",
    ]),
]
FLUX_BINARIES = [name for name, _, _, _ in FLUX]
FLUX_NAMESPACE = "flux-system"


def key(go_version):
    digest = hashlib.sha256(json.dumps([FLUX, go_version]).encode())
    return digest.hexdigest()[:16]


def build_flux(cache_root, log, fail):
    """Builds Flux's controllers (if missing) and keeps their CRDs beside them;
    returns the directory."""
    go = subprocess.run(["go", "version"], capture_output=True, text=True).stdout
    out = cache_root / f"gitops-{key(go)}" / "bin"
    if all((out / b).is_file() for b in FLUX_BINARIES) and (out / "flux-crds.yaml").is_file():
        return out
    log(f"building Flux ({', '.join(f'{n} {v}' for n, _, v, _ in FLUX)}) into {out}; "
        "module and build caches are temporary")
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="berth-gitops-build."))
    try:
        env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=mod",
                   GOMODCACHE=str(work / "modcache"), GOCACHE=str(work / "gocache"))
        partial = out.parent / f"bin.partial.{os.getpid()}"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        crds = []
        for name, module, version, edits in FLUX:
            download = subprocess.run(["go", "mod", "download", "-json", f"{module}@{version}"],
                                      cwd=work, env=env, capture_output=True, text=True)
            if download.returncode != 0:
                fail(f"go mod download {module}@{version}: {download.stdout.strip()} {download.stderr.strip()}")
            source = work / name
            shutil.copytree(json.loads(download.stdout)["Dir"], source)
            for path in source.rglob("*"):
                path.chmod(path.stat().st_mode | 0o200)
            for edit in edits:
                subprocess.run(["go", "mod", "edit", edit], cwd=source, env=env, check=True)
            command = ["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", str(partial / name), "."]
            result = subprocess.run(command, cwd=source, env=env)
            if result.returncode != 0:
                fail(f"`{' '.join(command)}` for {module}@{version} failed (exit {result.returncode})")
            crds += sorted((source / "config" / "crd" / "bases").glob("*.yaml"))
        (partial / "flux-crds.yaml").write_text(
            "\n---\n".join(p.read_text().strip() for p in crds) + "\n")
        if out.exists():
            shutil.rmtree(out)
        partial.rename(out)
    finally:
        # The module cache is read-only by design; make it removable.
        subprocess.run(["chmod", "-R", "u+w", str(work)], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    log(f"built Flux in {time.monotonic() - started:.0f} s")
    return out


def start_flux(state, flux_bin, kubeconfig, kubectl, start, free_ports, wait_for):
    """Flux's CRDs, its namespace, and both controllers as local processes on loopback.
    Their ports and storage go in state/flux.json."""
    kubectl("apply", "--server-side", "-f", str(flux_bin / "flux-crds.yaml"))
    kubectl("create", "namespace", FLUX_NAMESPACE, check=False)
    # The controllers look their kinds up at start: the CRDs must be served first. (A CRD
    # created a moment ago may have no status yet, which `kubectl wait` calls an error.)
    deadline = time.monotonic() + 60
    while True:
        names = kubectl("get", "crd", "-o", "name").split()
        flux = [n for n in names if n.endswith(".fluxcd.io")]
        try:
            kubectl("wait", "--for=condition=Established", *flux, "--timeout=5s")
            break
        except RuntimeError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    metrics_sc, health_sc, storage, metrics_kc, health_kc = free_ports(5)
    storage_path = state / "flux-storage"
    storage_path.mkdir(exist_ok=True)
    env = {"RUNTIME_NAMESPACE": FLUX_NAMESPACE, "KUBECONFIG": str(kubeconfig)}
    # controller-runtime reads KUBECONFIG (these controllers have no --kubeconfig flag).
    start("source-controller", flux_bin, [
        f"--metrics-addr=127.0.0.1:{metrics_sc}", f"--health-addr=127.0.0.1:{health_sc}",
        f"--storage-addr=127.0.0.1:{storage}", f"--storage-adv-addr=127.0.0.1:{storage}",
        f"--storage-path={storage_path}", "--enable-leader-election=false",
        "--log-level=info",
    ], env)
    start("kustomize-controller", flux_bin, [
        f"--metrics-addr=127.0.0.1:{metrics_kc}", f"--health-addr=127.0.0.1:{health_kc}",
        "--enable-leader-election=false", "--log-level=info",
    ], env)
    (state / "flux.json").write_text(json.dumps({"storage": storage}) + "\n")

    def healthy(port):
        def check():
            import urllib.request
            return urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1).status == 200
        return check

    wait_for("source-controller /readyz", healthy(health_sc), 60, state, ["source-controller"])
    wait_for("kustomize-controller /readyz", healthy(health_kc), 60, state, ["kustomize-controller"])
