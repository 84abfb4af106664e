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
        for r in range(rounds):
            ns_b, ns_k = f"bench-berth-{os.getpid()}-{r}", f"bench-kubectl-{os.getpid()}-{r}"
            for ns in (ns_b, ns_k):
                timed([kubectl, "create", "namespace", ns], env=env)
            kubectl_apply = [kubectl, "apply", "--server-side", "-n", ns_k, "-f", rendered]
            kubectl_wait = [kubectl, "rollout", "status", "deployment", "-n", ns_k, "-l", "bench=apply",
                            "--timeout=300s"]
            for phase in ["first", "again"]:
                figures[f"berth {phase}"].append(
                    timed([berth, "apply", "-n", ns_b, "--rollout-timeout", "300"], cwd=work, env=env))
                figures[f"kubectl {phase}"].append(
                    timed(kubectl_apply, env=env) + timed(kubectl_wait, env=env))
            figures["berth diff"].append(timed([berth, "diff", "-n", ns_b], cwd=work, env=env))
            figures["kubectl diff"].append(
                timed([kubectl, "diff", "--server-side", "-n", ns_k, "-f", rendered], env=env))
            for ns in (ns_b, ns_k):
                run([kubectl, "delete", "namespace", ns, "--wait=false"], env=env)
        median = {k: statistics.median(v) for k, v in figures.items()}
        version = run([kubectl, "version"], env=env).stdout.split("Server Version: ")[-1].strip()
        print(f"{n} Deployments + {n} ConfigMaps, kube-apiserver {version} (scripts/testenv, kwok nodes), "
              f"median of {rounds} rounds")
        print("| job | berth | kubectl | kubectl / berth |")
        print("|---|---|---|---|")
        for job, key in [("first apply + rollout wait", "first"), ("unchanged apply + rollout wait", "again"),
                         ("diff, nothing changed", "diff")]:
            b, k = median[f"berth {key}"], median[f"kubectl {key}"]
            print(f"| {job} | {b:.2f} s | {k:.2f} s | {k / b:.1f}× |")
    finally:
        if own_plane:
            run([str(REPO / "scripts/testenv"), "down", own_plane])
            shutil.rmtree(own_plane, ignore_errors=True)  # etcd's data
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
