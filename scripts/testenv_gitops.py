"""The GitOps engines of the test control plane (`scripts/testenv build --gitops`,
`scripts/testenv up --gitops DIR`, and `--argocd` for Argo CD): Flux's
source-controller and kustomize-controller, and Argo CD's repo-server,
application-controller and cmp-server with berth's plugin (one multi-call binary),
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

# Argo CD: one binary that is each component by ARGOCD_BINARY_NAME; its go.mod needs
# Go 1.27 (fetched from the proxy as a toolchain module) and replaces its gitops-engine
# with a directory the module zip leaves out (taken from the proxy instead).
ARGOCD = ("argocd", "github.com/argoproj/argo-cd/v3", "v3.6.1",
          ["-dropreplace=github.com/argoproj/argo-cd/gitops-engine/v3"])
ARGOCD_TOOLCHAIN = "go1.27.3"
ARGOCD_NAMESPACE = "argocd"
# The processes `up --argocd` starts, each an argocd (or redis, or git) under its own name.
ARGOCD_PROCESSES = ["redis-server", "gitserver", "argocd-cmp-server", "argocd-cmp-server-helm", "argocd-repo-server",
                    "argocd-application-controller"]
# What of Argo CD's install manifests the plane needs: its CRDs, configuration and
# secret; its Deployments do not run in the plane (the components run here).
ARGOCD_KINDS = ("CustomResourceDefinition", "ConfigMap", "Secret")


def key(go_version):
    digest = hashlib.sha256(json.dumps([FLUX, go_version]).encode())
    return digest.hexdigest()[:16]


def argocd_key(go_version, gitserver_dir):
    digest = hashlib.sha256(json.dumps([ARGOCD, ARGOCD_TOOLCHAIN, go_version]).encode())
    for name in ["go.mod", "go.sum", "main.go"]:
        digest.update((gitserver_dir / name).read_bytes())
    return digest.hexdigest()[:16]


def temporary_go(work, **extra):
    """A Go environment whose module and build caches are under `work` (removed after)."""
    return dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=mod",
                GOMODCACHE=str(work / "modcache"), GOCACHE=str(work / "gocache"), **extra)


def download(module, version, work, env, fail):
    """A writable copy of `module@version`'s source."""
    result = subprocess.run(["go", "mod", "download", "-json", f"{module}@{version}"],
                            cwd=work, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"go mod download {module}@{version}: {result.stdout.strip()} {result.stderr.strip()}")
    source = work / module.replace("/", "_")
    shutil.copytree(json.loads(result.stdout)["Dir"], source)
    for path in [source, *source.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)
    return source


def remove(work):
    # The module cache is read-only by design; make it removable.
    subprocess.run(["chmod", "-R", "u+w", str(work)], capture_output=True)
    shutil.rmtree(work, ignore_errors=True)


def build_argocd(cache_root, gitserver_dir, log, fail):
    """Builds Argo CD and the git server (if missing), with the install manifests the
    plane applies and Argo CD's git wrapper beside them; returns the directory."""
    go = subprocess.run(["go", "version"], capture_output=True, text=True).stdout
    out = cache_root / f"argocd-{argocd_key(go, gitserver_dir)}" / "bin"
    needed = ["argocd", "gitserver", "argocd-manifests.yaml", "git-verify-wrapper.sh"]
    if all((out / n).is_file() for n in needed):
        return out
    name, module, version, edits = ARGOCD
    log(f"building Argo CD {version} (Go {ARGOCD_TOOLCHAIN} from the proxy) and the git server into "
        f"{out}; module and build caches are temporary")
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="berth-argocd-build."))
    try:
        partial = out.parent / f"bin.partial.{os.getpid()}"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        env = temporary_go(work, GOTOOLCHAIN=ARGOCD_TOOLCHAIN)
        source = download(module, version, work, env, fail)
        for edit in edits:
            subprocess.run(["go", "mod", "edit", edit], cwd=source, env=env, check=True)
        command = ["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", str(partial / name), "./cmd"]
        if subprocess.run(command, cwd=source, env=env).returncode != 0:
            fail(f"`{' '.join(command)}` for {module}@{version} failed")
        documents = (source / "manifests" / "core-install.yaml").read_text().split("\n---")
        kept = [d.strip() for d in documents
                if any(f"\nkind: {k}\n" in f"\n{d.strip()}\n" for k in ARGOCD_KINDS)]
        (partial / "argocd-manifests.yaml").write_text("\n---\n".join(kept) + "\n")
        shutil.copy2(source / "hack" / "git-verify-wrapper.sh", partial / "git-verify-wrapper.sh")
        (partial / "git-verify-wrapper.sh").chmod(0o755)
        command = ["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", str(partial / "gitserver"), "."]
        if subprocess.run(command, cwd=gitserver_dir, env=temporary_go(work)).returncode != 0:
            fail(f"`{' '.join(command)}` in {gitserver_dir} failed")
        if out.exists():
            shutil.rmtree(out)
        partial.rename(out)
    finally:
        remove(work)
    log(f"built Argo CD in {time.monotonic() - started:.0f} s")
    return out


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
        env = temporary_go(work)
        partial = out.parent / f"bin.partial.{os.getpid()}"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        crds = []
        for name, module, version, edits in FLUX:
            source = download(module, version, work, env, fail)
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
        remove(work)
    log(f"built Flux in {time.monotonic() - started:.0f} s")
    return out


def start_flux(state, flux_bin, kubeconfig, kubectl, start, free_ports, wait_for):
    """Flux's CRDs, its namespace, and both controllers as local processes on loopback.
    Their ports and storage go in state/flux.json."""
    kubectl("apply", "--server-side", "-f", str(flux_bin / "flux-crds.yaml"))
    kubectl("create", "namespace", FLUX_NAMESPACE, check=False)
    # The controllers look their kinds up at start: the CRDs must be served first.
    wait_established(kubectl, ".fluxcd.io")
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


def wait_established(kubectl, suffix):
    """Waits until every CRD whose name ends in `suffix` is served. (A CRD created a
    moment ago may have no status yet, which `kubectl wait` calls an error.)"""
    deadline = time.monotonic() + 60
    while True:
        crds = [n for n in kubectl("get", "crd", "-o", "name").split() if n.endswith(suffix)]
        try:
            kubectl("wait", "--for=condition=Established", *crds, "--timeout=5s")
            return
        except RuntimeError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def start_argocd(state, argocd_bin, plugin, kubeconfig, kubectl, start, free_ports, wait_for, helm=None):
    """Argo CD's CRDs and configuration, an AppProject `default`, and its components as
    local processes: redis (Debian's), the git server, argocd-cmp-server with berth's
    plugin (`plugin`, its `berth` the one on BERTH_BIN or the repository's debug build,
    looked up when the plugin runs), a second argocd-cmp-server with the chart variant
    (`plugin-helm.yaml` beside `plugin`, its `helm` the plane's), as the repo-server patch
    runs them (one sidecar per plugin), argocd-repo-server and argocd-application-controller.
    Ports and the git server's URL go in state/argocd.json."""
    kubectl("create", "namespace", ARGOCD_NAMESPACE, check=False)
    kubectl("apply", "--server-side", "-n", ARGOCD_NAMESPACE, "-f", str(argocd_bin / "argocd-manifests.yaml"))
    wait_established(kubectl, ".argoproj.io")
    project = {"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
               "metadata": {"name": "default", "namespace": ARGOCD_NAMESPACE},
               "spec": {"sourceRepos": ["*"], "destinations": [{"server": "*", "namespace": "*"}],
                        "clusterResourceWhitelist": [{"group": "*", "kind": "*"}]}}
    project_file = state / "argocd-project.json"
    project_file.write_text(json.dumps(project))
    kubectl("apply", "--server-side", "-f", str(project_file))

    home = state / "argocd"
    for sub in ["tmp", "plugins", "cmp-config", "cmp-config-helm", "git", "bin"]:
        (home / sub).mkdir(parents=True, exist_ok=True)
    shutil.copy2(plugin, home / "cmp-config" / "plugin.yaml")
    shutil.copy2(Path(plugin).with_name("plugin-helm.yaml"), home / "cmp-config-helm" / "plugin.yaml")
    if helm is not None:
        (home / "bin" / "helm").unlink(missing_ok=True)
        (home / "bin" / "helm").symlink_to(helm)
    repo = Path(__file__).resolve().parent.parent
    wrapper = home / "bin" / "berth"
    wrapper.write_text(f'#!/bin/sh\nexec "${{BERTH_BIN:-{repo}/target/debug/berth}}" "$@"\n')
    wrapper.chmod(0o755)
    shutil.copy2(argocd_bin / "git-verify-wrapper.sh", home / "bin" / "git-verify-wrapper.sh")
    redis, repo_port, repo_metrics, controller_metrics = free_ports(4)
    path = f"{home / 'bin'}:{os.environ.get('PATH', '')}"
    common = {"TMPDIR": str(home / "tmp"), "PATH": path, "KUBECONFIG": str(kubeconfig),
              "ARGOCD_PLUGINSOCKFILEPATH": str(home / "plugins"), "ARGOCD_GPG_ENABLED": "false",
              "ARGOCD_FAKE_IN_CLUSTER": "true", "HOME": str(home)}
    start("redis-server", Path("/usr/bin"), [
        "--bind", "127.0.0.1", "--port", str(redis), "--save", "", "--appendonly", "no"], common)
    start("gitserver", argocd_bin, [str(home / "git")], common)
    start("argocd-cmp-server", argocd_bin, [
        "--config-dir-path", str(home / "cmp-config"), "--loglevel", "info", "--logformat", "text"],
        {**common, "ARGOCD_BINARY_NAME": "argocd-cmp-server"})
    start("argocd-cmp-server-helm", argocd_bin, [
        "--config-dir-path", str(home / "cmp-config-helm"), "--loglevel", "info", "--logformat", "text"],
        {**common, "ARGOCD_BINARY_NAME": "argocd-cmp-server"})
    start("argocd-repo-server", argocd_bin, [
        "--address", "127.0.0.1", "--port", str(repo_port), "--metrics-address", "127.0.0.1",
        "--metrics-port", str(repo_metrics), "--redis", f"127.0.0.1:{redis}",
        "--loglevel", "info", "--logformat", "text"],
        {**common, "ARGOCD_BINARY_NAME": "argocd-repo-server"})
    start("argocd-application-controller", argocd_bin, [
        "--kubeconfig", str(kubeconfig), "--namespace", ARGOCD_NAMESPACE,
        # The repo-server's own self-signed certificate, not verified (loopback only).
        "--repo-server", f"127.0.0.1:{repo_port}",
        "--redis", f"127.0.0.1:{redis}", "--metrics-port", str(controller_metrics),
        "--loglevel", "info", "--logformat", "text"],
        {**common, "ARGOCD_BINARY_NAME": "argocd-application-controller"})

    def git_url():
        text = (state / "logs" / "gitserver.log").read_text(errors="replace")
        return next((l.strip() for l in text.splitlines() if l.startswith("http://")), None)

    wait_for("the git server", git_url, 30, state, ["gitserver"])
    wait_for("argocd-cmp-server's sockets", lambda: len(list((home / "plugins").glob("*.sock"))) >= 2, 60,
             state, ["argocd-cmp-server", "argocd-cmp-server-helm"])

    def serving(port):
        def check():
            import socket
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        return check

    wait_for("argocd-repo-server", serving(repo_port), 60, state, ["argocd-repo-server"])
    wait_for("argocd-application-controller /metrics", serving(controller_metrics), 60, state,
             ["argocd-application-controller"])
    (state / "argocd.json").write_text(json.dumps({"git": git_url(), "namespace": ARGOCD_NAMESPACE}) + "\n")
