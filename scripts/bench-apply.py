#!/usr/bin/env python3
"""berth apply / diff against kubectl, side by side on one real control plane.

    python3 scripts/bench-apply.py [N] [ROUNDS]      (default 100 Deployments, 3 rounds)

N Deployments, each with its own config (one generated, content-addressed ConfigMap
per Deployment), applied into fresh namespaces:
  - first apply:     `berth apply` (server-side apply, record, rollout wait) versus
                     `kubectl apply --server-side` + `kubectl rollout status` of the
                     same rendered objects (`berth render` output)
  - unchanged apply: the same, a second time
  - diff:            `berth diff` versus `kubectl diff --server-side`, nothing changed
Beside each time, the requests the API server served while the job ran (its
apiserver_request_total: the tool's own, with kube-controller-manager's and kwok's
for the same objects, which both tools cause alike).
Each figure is the median over ROUNDS (a new pair of namespaces per round). The plane is
the one KUBECONFIG names (BERTH_BENCH_KUBECONFIG), else one started by
`scripts/testenv up` in a temporary directory and stopped afterwards. kubectl is the one
scripts/testenv builds from the same Kubernetes module as the server (v1.37), as the
machine's kubectl 1.32 is outside the supported version skew.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run(cmd, **kw):
    result = subprocess.run(cmd, capture_output=True, text=True, **kw)
    return result


def timed(cmd, ok=(0,), **kw):
    start = time.monotonic()
    result = run(cmd, **kw)
    elapsed = time.monotonic() - start
    if result.returncode not in ok:
        sys.exit(f"{' '.join(map(str, cmd))} exited {result.returncode}:\n{result.stderr[-3000:]}")
    return elapsed


def requests(kubectl, env):
    """apiserver_request_total summed over every resource and verb: what the API
    server has been asked by all its clients until now."""
    total = 0.0
    metrics = run([kubectl, "get", "--raw", "/metrics"], env=env).stdout
    for line in metrics.splitlines():
        if line.startswith("apiserver_request_total{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def counted(kubectl, env, *commands):
    """Runs `commands` one after the other: the seconds they took, and the requests the
    API server served meanwhile (less the metrics read's own)."""
    before = requests(kubectl, env)
    took = sum(timed(cmd, **kw) for cmd, kw in commands)
    return took, requests(kubectl, env) - before - 1


def project(dir_, n):
    lines = ["name: bench", "manifests: [deploy.yaml]", "images:", "  app: {image: ghcr.io/acme/app:v1}", "configs:"]
    docs = []
    for i in range(n):
        lines.append(f"  app-{i}-config:\n    literals: [\"INDEX={i}\", \"LEVEL=info\"]")
        docs.append(
            f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-{i}\n  labels: {{bench: apply}}\n"
            f"spec:\n  replicas: 1\n  selector: {{matchLabels: {{app: app-{i}}}}}\n  template:\n"
            f"    metadata: {{labels: {{app: app-{i}}}}}\n    spec:\n      containers:\n"
            f"      - name: app\n        image: ghcr.io/acme/app:v1\n"
            f"        envFrom: [{{configMapRef: {{name: app-{i}-config}}}}]\n"
        )
    (dir_ / "berth.yaml").write_text("\n".join(lines) + "\n")
    (dir_ / "deploy.yaml").write_text("---\n".join(docs))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("n", nargs="?", type=int, default=100, help="Deployments (default 100)")
    parser.add_argument("rounds", nargs="?", type=int, default=3, help="rounds (default 3)")
    args = parser.parse_args()
    n, rounds = args.n, args.rounds
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "berth"], cwd=REPO, check=True)
    berth = REPO / "target/release/berth"
    bins = run([str(REPO / "scripts/testenv"), "build"]).stdout.strip()
    kubectl = Path(bins) / "kubectl"
    own_plane = None
    kubeconfig = os.environ.get("BERTH_BENCH_KUBECONFIG")
    if not kubeconfig:
        own_plane = tempfile.mkdtemp(prefix="berth-bench-plane.")
        line = run([str(REPO / "scripts/testenv"), "up", own_plane]).stdout.strip().splitlines()[-1]
        kubeconfig = line.removeprefix("export KUBECONFIG=")
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"), "KUBECONFIG": kubeconfig}
    work = Path(tempfile.mkdtemp(prefix="berth-bench-apply."))
    try:
        project(work, n)
        rendered = work / "rendered.yaml"
        rendered.write_text(run([str(berth), "render"], cwd=work, env=env).stdout)
        figures = {key: [] for key in ["berth first", "kubectl first", "berth again", "kubectl again",
                                       "berth diff", "kubectl diff"]}
        asked = {key: [] for key in figures}
        for r in range(rounds):
            ns_b, ns_k = f"bench-berth-{os.getpid()}-{r}", f"bench-kubectl-{os.getpid()}-{r}"
            for ns in (ns_b, ns_k):
                timed([kubectl, "create", "namespace", ns], env=env)
            kubectl_apply = [kubectl, "apply", "--server-side", "-n", ns_k, "-f", rendered]
            kubectl_wait = [kubectl, "rollout", "status", "deployment", "-n", ns_k, "-l", "bench=apply",
                            "--timeout=300s"]
            jobs = {
                "first": ([([berth, "apply", "-n", ns_b, "--rollout-timeout", "300"], {"cwd": work, "env": env})],
                          [(kubectl_apply, {"env": env}), (kubectl_wait, {"env": env})]),
                "diff": ([([berth, "diff", "-n", ns_b], {"cwd": work, "env": env})],
                         [([kubectl, "diff", "--server-side", "-n", ns_k, "-f", rendered], {"env": env})]),
            }
            jobs["again"] = jobs["first"]
            for phase in ["first", "again", "diff"]:
                for tool, commands in zip(["berth", "kubectl"], jobs[phase]):
                    took, served = counted(kubectl, env, *commands)
                    figures[f"{tool} {phase}"].append(took)
                    asked[f"{tool} {phase}"].append(served)
            for ns in (ns_b, ns_k):
                run([kubectl, "delete", "namespace", ns, "--wait=false"], env=env)
        median = {k: statistics.median(v) for k, v in figures.items()}
        version = run([kubectl, "version"], env=env).stdout.split("Server Version: ")[-1].strip()
        print(f"{n} Deployments + {n} ConfigMaps, kube-apiserver {version} (scripts/testenv, kwok nodes), "
              f"median of {rounds} rounds")
        print("| job | berth | kubectl | kubectl / berth | requests served: berth | kubectl |")
        print("|---|---|---|---|---|---|")
        for job, key in [("first apply + rollout wait", "first"), ("unchanged apply + rollout wait", "again"),
                         ("diff, nothing changed", "diff")]:
            b, k = median[f"berth {key}"], median[f"kubectl {key}"]
            rb, rk = statistics.median(asked[f"berth {key}"]), statistics.median(asked[f"kubectl {key}"])
            print(f"| {job} | {b:.2f} s | {k:.2f} s | {k / b:.1f}× | {rb:.0f} | {rk:.0f} |")
        print("(requests served: apiserver_request_total while the job ran, every client's — the tool's,\n"
              " and kube-controller-manager's and kwok's work on the same objects, alike for both tools)")
    finally:
        if own_plane:
            run([str(REPO / "scripts/testenv"), "down", own_plane])
            shutil.rmtree(own_plane, ignore_errors=True)  # etcd's data
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
