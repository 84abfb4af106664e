#!/usr/bin/env python3
"""`berth dev` on a real control plane, side by side with the same steps by hand.

    python3 scripts/bench-dev.py [--quick] [--debug]

On a fresh plane from `scripts/testenv up` (stopped afterwards), with the release
build of berth (`--debug`: target/debug/berth, for a quick look), it measures:
  1. start -> ready: `berth dev --once` (first apply, rollout, initial sync of FILES
     files into the pod) against `berth apply` followed by `berth sync --once` (the
     same steps by hand), each in a fresh namespace, ROUNDS times, medians;
  2. save -> visible: EDITS single-file edits with `berth dev` running, each timed
     from the write to the new content being in the pod's file (kwok runs the pod's
     exec on this machine, so that file is read here every millisecond), p50 and
     p95; once over berth's exec stream, once with `--no-stream` (an exec per
     update); beside them, one `kubectl exec POD -- cat FILE` read alone (the goal:
     an update through the stream costs less than that one exec);
  3. config edit -> new pods synced: a literal of a generated config changed in
     berth.yaml, timed to the `synced` event from the replacement pod;
  4. memory: RSS of a `berth dev` session whose Deployment has 10 pods, every
     container's log streamed while LINES lines are written to the plane's pod.log;
  5. values edit -> applied: a `helm:` source (a local chart, testenv's helm 4)
     whose values file changes a pod's env value, timed from the write to the
     `applied` event of the changed Deployment, EDITS/5 times, median; beside it,
     one `berth apply` run by hand after the same edit (helm template included).
kwok runs each pod's exec on this machine, so a pod's `/x` is this machine's `/x`.
--quick: 200 files, 10 edits, 2 rounds, 500 log lines.
"""

import argparse
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_ARGS = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
_ARGS.add_argument("--quick", action="store_true", help="fewer files, edits and rounds")
_ARGS.add_argument("--debug", action="store_true", help="target/debug/berth instead of the release build")
ARGS = _ARGS.parse_args()
QUICK = ARGS.quick
DEBUG = ARGS.debug
FILES, EDITS, ROUNDS, LINES = (200, 10, 2, 500) if QUICK else (1000, 50, 3, 5000)
IMAGE = "ghcr.io/acme/app:v1"


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def berth_yaml(target, level="info", replicas=1):
    return (
        f"name: bench\nmanifests: [deploy.yaml]\nimages:\n  app: {{image: {IMAGE}}}\n"
        f"configs:\n  app-config:\n    literals: [LEVEL={level}]\n"
        f"sync:\n  - name: app\n    target: {{component: app}}\n    paths: [{{from: src/, to: {target}/}}]\n"
    ), (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app}\nspec:\n"
        f"  replicas: {replicas}\n  selector: {{matchLabels: {{app: app}}}}\n"
        "  template:\n    metadata: {labels: {app: app}}\n    spec:\n      containers:\n"
        f"        - name: app\n          image: {IMAGE}\n          envFrom: [{{configMapRef: {{name: app-config}}}}]\n"
    )


def project(work, target, files, replicas=1):
    work.mkdir(parents=True)
    text, deploy = berth_yaml(target, replicas=replicas)
    (work / "berth.yaml").write_text(text)
    (work / "deploy.yaml").write_text(deploy)
    src = work / "src"
    for i in range(files):
        d = src / f"d{i % 20}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.txt").write_text(f"file {i}\n" * 64)
    (src / "edit.txt").write_text("start")
    return work


CHART_DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}}
spec:
  selector: {matchLabels: {app: chart}}
  template:
    metadata: {labels: {app: chart}}
    spec:
      containers:
        - name: app
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
          env: [{name: LEVEL, value: "{{ .Values.level }}"}]
"""


def chart_project(work):
    """A local chart rendered by `helm template`, its level in dev.values.yaml."""
    (work / "chart/templates").mkdir(parents=True)
    (work / "chart/Chart.yaml").write_text("apiVersion: v2\nname: app\nversion: 0.1.0\n")
    (work / "chart/values.yaml").write_text("image: {repository: ghcr.io/acme/app, tag: v0}\nlevel: info\n")
    (work / "chart/templates/deployment.yaml").write_text(CHART_DEPLOYMENT)
    (work / "dev.values.yaml").write_text("level: info\n")
    (work / "berth.yaml").write_text(
        "name: bench\nmanifests:\n  - helm: {chart: chart, release: app, values: [dev.values.yaml]}\n"
        f"images:\n  app: {{image: {IMAGE}, helmValues: {{repository: image.repository, tag: image.tag}}}}\n")
    return work


class Plane:
    def __init__(self, state):
        self.state = state
        out = subprocess.run([str(REPO / "scripts/testenv"), "up", str(state)], check=True,
                             capture_output=True, text=True).stdout
        self.kubeconfig = out.strip().splitlines()[-1].removeprefix("export KUBECONFIG=")
        bins = subprocess.run([str(REPO / "scripts/testenv"), "build"], check=True,
                              capture_output=True, text=True).stdout.strip()
        self.kubectl = str(Path(bins) / "kubectl")
        os.environ["BERTH_HELM"] = str(Path(bins) / "helm")
        self.count = 0

    def run(self, *args, check=True):
        return subprocess.run([self.kubectl, "--kubeconfig", self.kubeconfig, *args], check=check,
                              capture_output=True, text=True)

    def namespace(self):
        self.count += 1
        name = f"bench-dev-{self.count}"
        self.run("create", "namespace", name)
        return name


def visible(path, text, started, timeout=30):
    """Seconds from `started` until `path` holds `text`: kwok runs the pod's exec on
    this machine, so the pod's file is this file, read every millisecond."""
    while True:
        try:
            if path.read_text() == text:
                return time.monotonic() - started
        except (FileNotFoundError, UnicodeDecodeError):
            pass
        if time.monotonic() - started > timeout:
            raise SystemExit(f"`{text}` not visible in the pod after {timeout} s")
        time.sleep(0.001)


def timed(cmd, cwd):
    started = time.monotonic()
    subprocess.run(cmd, cwd=cwd, check=True, capture_output=True)
    return time.monotonic() - started


class Dev:
    """A `berth dev --output json` session and its events."""

    def __init__(self, berth, cwd, kubeconfig, namespace, *flags):
        self.process = subprocess.Popen(
            [berth, "dev", "--output", "json", "--poll", "0.5", "--kubeconfig", kubeconfig, "-n", namespace, *flags],
            cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.events = queue.Queue()
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in self.process.stdout:
            self.events.put((time.monotonic(), json.loads(line)))

    def wait(self, what, check, timeout=120):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SystemExit(f"berth dev: no {what} within {timeout} s")
            try:
                at, event = self.events.get(timeout=left)
            except queue.Empty:
                continue
            if event["event"] == "error":
                print(f"  (berth dev reported: {event['message'][:200]})", file=sys.stderr)
            if check(event):
                return at, event

    def rss_mb(self):
        with open(f"/proc/{self.process.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)


def main():
    if DEBUG:
        subprocess.run(["cargo", "build", "-q", "-p", "berth"], cwd=REPO, check=True)
        berth = str(REPO / "target/debug/berth")
    else:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "berth"], cwd=REPO, check=True)
        berth = str(REPO / "target/release/berth")
    scratch = Path(tempfile.mkdtemp(prefix="bench-dev."))
    plane = Plane(scratch / "plane")
    try:
        print(f"berth dev benchmark ({'quick' if QUICK else 'full'}; {os.cpu_count()} cores; "
              f"{'debug' if DEBUG else 'release'} build); kwok plays the kubelet, exec runs on this machine")

        # 1. start -> ready, against the same steps by hand.
        dev_times, hand_times = [], []
        for r in range(ROUNDS):
            for kind, times in (("dev", dev_times), ("hand", hand_times)):
                ns = plane.namespace()
                target = scratch / f"target-{kind}-{r}"
                work = project(scratch / f"start-{kind}-{r}", target, FILES)
                base = [berth]
                if kind == "dev":
                    times.append(timed([*base, "dev", "--once", "--kubeconfig", plane.kubeconfig, "-n", ns], work))
                else:
                    started = time.monotonic()
                    subprocess.run([*base, "apply", "--kubeconfig", plane.kubeconfig, "-n", ns], cwd=work,
                                   check=True, capture_output=True)
                    subprocess.run([*base, "sync", "--once", "--engine", "kubernetes", "--kubeconfig",
                                    plane.kubeconfig, "-n", ns], cwd=work, check=True, capture_output=True)
                    times.append(time.monotonic() - started)
                synced = sum(1 for _ in target.rglob("*.txt"))
                assert synced == FILES + 1, f"{kind}: {synced} files synced, not {FILES + 1}"
        dev_start, hand_start = statistics.median(dev_times), statistics.median(hand_times)
        print(f"1. start -> ready ({FILES + 1} files synced): berth dev --once {dev_start:.2f} s, "
              f"berth apply + berth sync --once {hand_start:.2f} s (median of {ROUNDS}; "
              f"ratio {hand_start / dev_start:.2f}x)")

        # 2. save -> visible, with berth dev running: over its exec stream, then with
        # --no-stream (an exec per update), side by side with one exec read alone.
        exec_reads, loops = [], {}
        for mode in ("stream", "no-stream"):
            ns = plane.namespace()
            target = scratch / f"target-loop-{mode}"
            work = project(scratch / f"loop-{mode}", target, FILES)
            dev = Dev(berth, work, plane.kubeconfig, ns, *(["--no-stream"] if mode == "no-stream" else []))
            dev.wait("initial sync", lambda e: e["event"] == "synced" and e["reason"] == "initial")
            pod = plane.run("-n", ns, "get", "pods", "-l", "app=app", "-o",
                            "jsonpath={.items[0].metadata.name}").stdout.strip()
            exec_read = ["-n", ns, "exec", pod, "--", "cat", str(target / "edit.txt")]
            for _ in range(10):
                started = time.monotonic()
                plane.run(*exec_read)
                exec_reads.append(time.monotonic() - started)
            latencies = []
            for i in range(EDITS):
                text = f"edit {i} {mode}"
                started = time.monotonic()
                (work / "src/edit.txt").write_text(text)
                latencies.append(visible(target / "edit.txt", text, started))
                time.sleep(0.2)
            # The last edit, read back through the pod's exec as a user would.
            assert plane.run(*exec_read).stdout == text, "the pod's exec reads the last edit"
            loops[mode] = latencies
            if mode == "stream":
                keep = (ns, target, work, pod, dev)
            else:
                dev.stop()
        ns, target, work, pod, dev = keep
        read = statistics.median(exec_reads)
        stream, per_exec = loops["stream"], loops["no-stream"]
        print(f"2. save -> visible ({EDITS} edits each): over the exec stream p50 {percentile(stream, 50) * 1000:.0f} ms, "
              f"p95 {percentile(stream, 95) * 1000:.0f} ms; --no-stream (an exec per update) p50 "
              f"{percentile(per_exec, 50) * 1000:.0f} ms, p95 {percentile(per_exec, 95) * 1000:.0f} ms; "
              f"one `kubectl exec` read alone: p50 {read * 1000:.0f} ms (stream p50 / exec read "
              f"{percentile(stream, 50) / read:.2f})")

        # 3. config edit -> new pod synced.
        text, _ = berth_yaml(target, level="debug")
        started = time.monotonic()
        (work / "berth.yaml").write_text(text)
        at, event = dev.wait("sync into the new pod",
                             lambda e: e["event"] == "synced" and e.get("pod") not in (None, pod))
        print(f"3. config edit -> new pod synced: {at - started:.2f} s (pod {event['pod']})")
        dev.stop()

        # 4. memory with 10 pods streaming logs.
        ns = plane.namespace()
        work = project(scratch / "logs", scratch / "target-logs", 10, replicas=10)
        dev = Dev(berth, work, plane.kubeconfig, ns)
        dev.wait("ready", lambda e: e["event"] == "ready")
        dev.wait("the first sync", lambda e: e["event"] == "synced")
        time.sleep(3)
        idle = dev.rss_mb()
        log = Path(plane.state) / "pod.log"
        counted = {"n": 0}
        token = f"bench-{os.getpid()}"

        def count():
            while counted["n"] < LINES * 10:
                _, event = dev.events.get()
                if event["event"] == "log" and event["text"].startswith(token):
                    counted["n"] += 1
        counter = threading.Thread(target=count, daemon=True)
        counter.start()
        started = time.monotonic()
        with open(log, "a") as f:
            for i in range(LINES):
                stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
                f.write(f"{stamp}.000000000Z stdout F {token} line {i} {'x' * 80}\n")
                if i % 100 == 0:
                    f.flush()
        peak = idle
        while counter.is_alive() and time.monotonic() - started < 120:
            peak = max(peak, dev.rss_mb())
            time.sleep(0.05)
        elapsed = time.monotonic() - started
        print(f"4. memory, 10 pods streaming: {idle:.1f} MB idle, {peak:.1f} MB peak while "
              f"{counted['n']} log lines arrived ({LINES} lines x 10 containers in {elapsed:.1f} s)")
        dev.stop()

        # 5. values edit -> applied, with a helm: source; beside it, berth apply by hand.
        ns = plane.namespace()
        work = chart_project(scratch / "chart-dev")
        dev = Dev(berth, work, plane.kubeconfig, ns)
        dev.wait("ready", lambda e: e["event"] == "ready")
        changed = lambda e: (e["event"] == "applied" and not e["unchanged"]
                             and e["object"]["kind"] == "Deployment")
        edits, by_hand = [], []
        for i in range(max(EDITS // 5, 2)):
            started = time.monotonic()
            (work / "dev.values.yaml").write_text(f"level: dev-{i}\n")
            at, _ = dev.wait("the edited Deployment applied", changed)
            edits.append(at - started)
            time.sleep(0.5)
        dev.stop()
        hand_ns = plane.namespace()
        hand = chart_project(scratch / "chart-hand")
        apply = [berth, "apply", "--kubeconfig", plane.kubeconfig, "-n", hand_ns]
        subprocess.run(apply, cwd=hand, check=True, capture_output=True)
        for i in range(max(EDITS // 5, 2)):
            (hand / "dev.values.yaml").write_text(f"level: hand-{i}\n")
            by_hand.append(timed(apply, hand))
        dev_edit, hand_edit = statistics.median(edits), statistics.median(by_hand)
        print(f"5. values edit -> applied (helm: source, {len(edits)} edits): berth dev {dev_edit * 1000:.0f} ms "
              f"(median), berth apply by hand {hand_edit * 1000:.0f} ms (median)")
    finally:
        subprocess.run([str(REPO / "scripts/testenv"), "down", str(scratch / "plane")], capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
