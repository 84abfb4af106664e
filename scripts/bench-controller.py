#!/usr/bin/env python3
"""berth controller against a real control plane: memory, reaction time, scale,
and what it asks the API server when nothing happens.

    python3 scripts/bench-controller.py [--quick]

On a fresh plane from `scripts/testenv up` (stopped afterwards), with the release
build of berth and, side by side, `examples/reflector.rs` of berth-controller
twice: a plain kube-runtime reflector over every ConfigMap and Secret (what
operators that watch all ConfigMaps do), and the same over their metadata only
(`--metadata`, the fair baseline: the cheapest way to watch everything):
  1. memory: the three processes' RSS with one Berth, then after 700 unrelated
     ConfigMaps of 200 KB, 5,000 small ConfigMaps and 5,000 small Secrets are created
     elsewhere (the controller's watches of its own objects, its sources and the config
     generations it cleans up after GitOps engines are all label-selected);
  2. scale: 2,000 Berths in 100 namespaces, created before a controller starts,
     from its start to all Ready, and its RSS then;
  3. reaction, with those 2,000 present: 50 edits of a Berth's source ConfigMap,
     each timed from the API server accepting the edit to the Deployment's pod
     template naming the new hashed ConfigMap; then that the rollout completes;
  4. quiet minute: the API server's apiserver_request_total for Berths,
     ConfigMaps, Secrets, Deployments and Leases over 60 s with nothing changing;
  5. the plane's floor, with the controller stopped: the writes a reconcile of each
     of 2,000 more Berths cannot do without (its source read, finalizer, ConfigMap and
     Deployment applied, record created, status and an Event on rolling out and on
     rolled out),
     made by 8 threads over kept-alive connections with no reads but the source and one look at each
     Deployment; with kube-controller-manager's own work on those Deployments, this
     is what any tool applying the same objects would ask of this plane.
--quick uses 70 ConfigMaps of 200 KB, 500 small ones, 500 Secrets, 10 edits and 100 Berths
in 10 namespaces.
--scale-replicas N gives the scale run's Deployments N replicas (default 1); 0 measures the
controller's own work (configs, Deployments, records and status of every Berth, each rollout
judged) without the plane running thousands of pods, which a 2-core test plane cannot.
"""

import argparse
import base64
import concurrent.futures
import http.client
import json
import os
import ssl
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_ARGS = argparse.ArgumentParser(
    description=__doc__.split("\n\n")[0],
    epilog="The whole story is this script's docstring; figures are in BENCHMARKS.md.",
)
_ARGS.add_argument("--quick", action="store_true",
                   help="70 ConfigMaps of 200 KB, 500 small ones, 500 Secrets, 10 edits, 100 Berths in 10 namespaces")
_ARGS.add_argument("--scale-replicas", type=int, default=1, metavar="N",
                   help="replicas of each scale-run Deployment (default 1; 0 measures the controller's "
                        "own work without thousands of pods)")
ARGS = _ARGS.parse_args()
QUICK = ARGS.quick
SCALE_REPLICAS = ARGS.scale_replicas
CONFIGMAPS, SECRETS, EDITS, BERTHS, NAMESPACES = (70, 500, 10, 100, 10) if QUICK else (700, 5000, 50, 2000, 100)
SMALL_CONFIGMAPS = SECRETS


class Api:
    """The few API calls the benchmark makes, over the admin kubeconfig."""

    def __init__(self, kubeconfig):
        config = json.loads(Path(kubeconfig).read_text())
        self.server = config["clusters"][0]["cluster"]["server"]
        user = config["users"][0]["user"]
        tmp = Path(tempfile.mkdtemp(prefix="bench-api."))
        self.certs = tmp
        for name, key in [("ca", None), ("crt", "client-certificate-data"), ("key", "client-key-data")]:
            data = config["clusters"][0]["cluster"]["certificate-authority-data"] if key is None else user[key]
            (tmp / name).write_bytes(base64.b64decode(data))
        self.context = ssl.create_default_context(cafile=str(tmp / "ca"))
        self.context.load_cert_chain(str(tmp / "crt"), str(tmp / "key"))

    def call(self, method, path, body=None, content_type="application/json"):
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        request = urllib.request.Request(self.server + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=60) as response:
                text = response.read()
                return json.loads(text) if text[:1] in (b"{", b"[") else text.decode()
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            if e.code >= 500:
                # An overloaded plane (504: the API server's own timeout): a failed poll.
                raise TimeoutError(f"{method} {path}: {e.code}")
            raise RuntimeError(f"{method} {path}: {e.code} {e.read()[:500]!r}")

    def apply(self, path, body, manager="bench"):
        return self.call("PATCH", f"{path}?fieldManager={manager}&force=true", body,
                         "application/apply-patch+yaml")


def rss_mb(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def berth_object(namespace, name, source, replicas=1):
    return {
        "apiVersion": "berth.dev/v1alpha1", "kind": "Berth",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "workloads": [{
                "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "server", "image": "ghcr.io/acme/server:v1",
                                             "volumeMounts": [{"name": "run", "mountPath": "/etc/run"}]}],
                             "volumes": [{"name": "run", "configMap": {"name": "run-config"}}]}}}}],
            "configs": {"run-config": {"fromConfigMap": {"name": source, "key": "run.yaml"}}},
        },
    }


def source(namespace, name, text):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": {"run.yaml": text}}


def namespace(api, name):
    api.apply(f"/api/v1/namespaces/{name}", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def ready(berth):
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (berth.get("status") or {}).get("conditions", []))


def mounted(api, ns, name):
    d = api.call("GET", f"/apis/apps/v1/namespaces/{ns}/deployments/{name}")
    if not d:
        return None
    return d["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"]


def wait(what, check, timeout=120, every=0.01):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = check()
        except (TimeoutError, urllib.error.URLError, http.client.HTTPException, ConnectionError) as e:
            # A plane busy with thousands of rollouts may not answer one poll in time.
            print(f"{what}: a poll failed ({e}); polling again", file=sys.stderr)
            value = None
        if value:
            return value
        time.sleep(every)
    sys.exit(f"{what}: not within {timeout} s")


def request_counts(api, resources=("berths", "configmaps", "secrets", "deployments", "leases"), by_dry_run=False):
    """apiserver_request_total summed by (resource, verb) for what the controller touches
    (every resource with resources=None; a dry run's verb marked `PATCH (dry run)` with by_dry_run)."""
    counts = {}
    for line in api.call("GET", "/metrics").splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels = dict(part.split("=", 1) for part in line[line.index("{") + 1:line.index("}")].split(","))
        labels = {k: v.strip('"') for k, v in labels.items()}
        if resources is None or labels.get("resource") in resources:
            verb = labels["verb"]
            if by_dry_run and labels.get("dry_run"):
                verb += " (dry run)"
            key = (labels.get("resource", ""), verb)
            counts[key] = counts.get(key, 0) + float(line.rsplit(" ", 1)[1])
    return counts


def scale_requests(before, after):
    """What the plane was asked during the scale run, by every client (the controller,
    kube-controller-manager, kwok): writes, dry runs and reads, in total and per Berth."""
    delta = {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0) > 0}
    writes = sum(n for (r, v), n in delta.items() if v in ("POST", "PUT", "PATCH", "DELETE", "APPLY"))
    dry = sum(n for (r, v), n in delta.items() if v.endswith("(dry run)"))
    reads = sum(n for (r, v), n in delta.items() if v in ("GET", "LIST"))
    top = sorted(delta.items(), key=lambda kv: -kv[1])[:8]
    detail = ", ".join(f"{r} {v}: {n:.0f}" for (r, v), n in top)
    return (f"{sum(delta.values()):.0f} requests to the API server by every client during it "
            f"({sum(delta.values()) / BERTHS:.1f} per Berth): {writes:.0f} writes ({writes / BERTHS:.1f} per Berth), "
            f"{dry:.0f} dry runs, {reads:.0f} reads; most: {detail}"), delta


def by_verb_and_resource(controller, floor_):
    """Requests per Berth by resource and verb, the controller's scale run beside the floor's."""
    lines = ["| resource | verb | controller per Berth | floor per Berth |", "|---|---|---|---|"]
    for key in sorted(set(controller) | set(floor_), key=lambda k: (-controller.get(k, 0), k)):
        c, f = controller.get(key, 0) / BERTHS, floor_.get(key, 0) / BERTHS
        if c >= 0.05 or f >= 0.05:
            lines.append(f"| {key[0] or '-'} | {key[1]} | {c:.2f} | {f:.2f} |")
    total_c, total_f = sum(controller.values()) / BERTHS, sum(floor_.values()) / BERTHS
    lines.append(f"| all | all | {total_c:.1f} | {total_f:.1f} (controller / floor: {total_c / total_f:.2f}) |")
    return "\n".join(lines)


def floor(api, berths, namespaces, workers=8):
    """Stage 5: the unavoidable writes of `berths` Berths (see the module doc), timed;
    returns (seconds, the requests asked of the plane meanwhile)."""
    local = threading.local()
    host = urllib.parse.urlparse(api.server)

    def call(method, path, body, content_type="application/json"):
        if not hasattr(local, "connection"):
            local.connection = http.client.HTTPSConnection(host.hostname, host.port, context=api.context,
                                                           timeout=60)
        data = body if isinstance(body, bytes) else json.dumps(body).encode() if body is not None else None
        local.connection.request(method, path, body=data, headers={"Content-Type": content_type} if data else {})
        response = local.connection.getresponse()
        text = response.read()
        if response.status >= 400:
            raise RuntimeError(f"{method} {path}: {response.status} {text[:300]!r}")
        return json.loads(text) if text[:1] == b"{" else None

    def apply(path, body):
        return call("PATCH", f"{path}?fieldManager=floor&force=true", body, "application/apply-patch+yaml")

    def report(ns, name, reason, ready_now):
        apply(f"/apis/berth.dev/v1alpha1/namespaces/{ns}/berths/{name}/status",
              {"apiVersion": "berth.dev/v1alpha1", "kind": "Berth", "status": {"observedGeneration": 1, "conditions": [
                  {"type": "Ready", "status": str(ready_now), "reason": reason, "message": reason,
                   "lastTransitionTime": "2026-12-02T00:00:00Z"}]}})
        call("POST", f"/apis/events.k8s.io/v1/namespaces/{ns}/events", {
            "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"generateName": f"{name}-"},
            "eventTime": "2026-12-02T00:00:00.000000Z", "reportingController": "floor",
            "reportingInstance": "floor", "action": "Reconcile", "reason": reason, "type": "Normal", "note": reason,
            "regarding": {"apiVersion": "berth.dev/v1alpha1", "kind": "Berth", "namespace": ns, "name": name}})

    def where(i):
        return f"floor-{i % namespaces}", f"f-{i}"

    def rolling_out(i):
        ns, name = where(i)
        # A reconcile reads its source (the controller's label patch answers with it).
        call("GET", f"/api/v1/namespaces/{ns}/configmaps/source-{i}", None)
        call("PATCH", f"/apis/berth.dev/v1alpha1/namespaces/{ns}/berths/{name}",
             {"metadata": {"finalizers": ["berth.dev/cleanup"]}}, "application/merge-patch+json")
        apply(f"/api/v1/namespaces/{ns}/configmaps/run-config-{i}", {
            "apiVersion": "v1", "kind": "ConfigMap", "immutable": True,
            "metadata": {"name": f"run-config-{i}", "namespace": ns}, "data": {"run.yaml": f"n: {i}\n"}})
        deployment = berth_object(ns, name, "unused", 0)["spec"]["workloads"][0]
        deployment["metadata"]["namespace"] = ns
        apply(f"/apis/apps/v1/namespaces/{ns}/deployments/{name}", deployment)
        call("POST", f"/api/v1/namespaces/{ns}/secrets", {"apiVersion": "v1", "kind": "Secret",
                                                          "metadata": {"name": f"{name}-r1"}, "data": {"r": "eA=="}})
        report(ns, name, "RollingOut", False)

    def rolled_out(i):
        ns, name = where(i)
        while True:
            d = call("GET", f"/apis/apps/v1/namespaces/{ns}/deployments/{name}", None)
            if d.get("status", {}).get("observedGeneration") == d["metadata"]["generation"]:
                break
            time.sleep(0.5)
        report(ns, name, "RolledOut", True)

    for n in range(namespaces):
        namespace(api, f"floor-{n}")
    for i in range(berths):
        ns, name = where(i)
        api.apply(f"/apis/berth.dev/v1alpha1/namespaces/{ns}/berths/{name}", berth_object(ns, name, "unused", 0))
        api.apply(f"/api/v1/namespaces/{ns}/configmaps/source-{i}",
                  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"source-{i}", "namespace": ns},
                   "data": {"run.yaml": f"n: {i}\n"}})
    before = request_counts(api, resources=None, by_dry_run=True)
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        list(pool.map(rolling_out, range(berths)))
        list(pool.map(rolled_out, range(berths)))
    took = time.monotonic() - started
    return took, scale_requests(before, request_counts(api, resources=None, by_dry_run=True))


def main():
    # A SIGTERM (or a CI timeout) still stops the plane and removes its data.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "berth"], cwd=REPO, check=True)
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "berth-controller", "--example", "reflector"],
                   cwd=REPO, check=True)
    berth = REPO / "target/release/berth"
    plane = tempfile.mkdtemp(prefix="bench-controller-plane.")
    line = subprocess.run([str(REPO / "scripts/testenv"), "up", plane], capture_output=True, text=True,
                          check=True).stdout.strip().splitlines()[-1]
    kubeconfig = line.removeprefix("export KUBECONFIG=")
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"), "KUBECONFIG": kubeconfig}
    # glibc's allocator setting, passed on to compare RSS with fewer arenas.
    env.update({k: v for k, v in os.environ.items() if k == "MALLOC_ARENA_MAX"})
    api = Api(kubeconfig)
    processes = []
    try:
        crd = subprocess.run([str(berth), "controller", "crd"], capture_output=True, check=True).stdout
        api.call("PATCH", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/berths.berth.dev"
                 "?fieldManager=bench&force=true", crd, "application/apply-patch+yaml")
        time.sleep(2)
        logs = Path(plane)
        controller = subprocess.Popen([str(berth), "controller", "--listen", "127.0.0.1:0"], env=env,
                                      stdout=subprocess.DEVNULL, stderr=open(logs / "controller.log", "w"))
        reflector = subprocess.Popen([str(REPO / "target/release/examples/reflector")], env=env,
                                     stdout=subprocess.DEVNULL, stderr=open(logs / "reflector.log", "w"))
        metadata = subprocess.Popen([str(REPO / "target/release/examples/reflector"), "--metadata"], env=env,
                                    stdout=subprocess.DEVNULL, stderr=open(logs / "metadata.log", "w"))
        processes += [controller, reflector, metadata]
        namespace(api, "react")
        api.apply("/api/v1/namespaces/react/configmaps/react-run", source("react", "react-run", "edit: 0\n"))
        api.apply("/apis/berth.dev/v1alpha1/namespaces/react/berths/react",
                  berth_object("react", "react", "react-run"))
        wait("the first Berth is ready",
             lambda: ready(api.call("GET", "/apis/berth.dev/v1alpha1/namespaces/react/berths/react") or {}),
             timeout=60, every=0.1)
        time.sleep(5)
        empty = (rss_mb(controller.pid), rss_mb(reflector.pid), rss_mb(metadata.pid))

        # 1. Unrelated objects the controller must not hold.
        namespace(api, "noise")
        blob = "x" * (200 * 1024)
        started = time.monotonic()
        for i in range(CONFIGMAPS):
            api.call("POST", "/api/v1/namespaces/noise/configmaps",
                     {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"noise-{i}"}, "data": {"blob": blob}})
        for i in range(SMALL_CONFIGMAPS):
            api.call("POST", "/api/v1/namespaces/noise/configmaps",
                     {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"small-{i}"},
                      "data": {"k": f"value-{i}"}})
        for i in range(SECRETS):
            api.call("POST", "/api/v1/namespaces/noise/secrets",
                     {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": f"noise-{i}"},
                      "data": {"k": base64.b64encode(f"value-{i}".encode()).decode()}})
        created = time.monotonic() - started
        time.sleep(10)
        after = (rss_mb(controller.pid), rss_mb(reflector.pid), rss_mb(metadata.pid))
        reflector.kill()
        metadata.kill()

        # 2. Many Berths, reconciled from scratch: created while no controller runs,
        # then one starts.
        controller.kill()
        controller.wait()
        for n in range(NAMESPACES):
            namespace(api, f"scale-{n}")
        for i in range(BERTHS):
            ns = f"scale-{i % NAMESPACES}"
            api.apply(f"/api/v1/namespaces/{ns}/configmaps/run-{i}", source(ns, f"run-{i}", f"n: {i}\n"))
            api.apply(f"/apis/berth.dev/v1alpha1/namespaces/{ns}/berths/b-{i}",
                      berth_object(ns, f"b-{i}", f"run-{i}", SCALE_REPLICAS))
        scale_before = request_counts(api, resources=None, by_dry_run=True)
        started = time.monotonic()
        controller = subprocess.Popen([str(berth), "controller", "--listen", "127.0.0.1:0"], env=env,
                                      stdout=subprocess.DEVNULL, stderr=open(logs / "controller-scale.log", "w"))
        processes.append(controller)

        def all_ready():
            # resourceVersion=0: served from the API server's watch cache, not a quorum
            # read from etcd, so that polling is not what loads the plane.
            items = api.call("GET", "/apis/berth.dev/v1alpha1/berths?resourceVersion=0")["items"]
            return sum(1 for b in items if b["metadata"]["namespace"].startswith("scale-") and ready(b)) == BERTHS
        # Each poll LISTs every Berth: every 2 s, so that polling is not what loads the plane.
        wait("every Berth is ready", all_ready, timeout=900, every=2)
        scale = time.monotonic() - started
        scale_rss = rss_mb(controller.pid)
        scale_asked, scale_delta = scale_requests(scale_before, request_counts(api, resources=None, by_dry_run=True))

        # Settled: the controller's reconcile count stops moving.
        log = logs / "controller-scale.log"
        address = wait("the metrics address", lambda: next(
            (l.split("address=")[1].strip() for l in log.read_text().splitlines() if "address=" in l), None))

        def reconciles():
            text = urllib.request.urlopen(f"http://{address}/metrics", timeout=5).read().decode()
            return sum(float(l.split()[-1]) for l in text.splitlines()
                       if l.startswith("berth_controller_reconciles_total{"))
        settled_at, last, still = time.monotonic(), reconciles(), 0
        while still < 5 and time.monotonic() - settled_at < 180:
            time.sleep(2)
            now = reconciles()
            still = still + 1 if now == last else 0
            last = now
        settle = time.monotonic() - started
        metrics = urllib.request.urlopen(f"http://{address}/metrics", timeout=5).read().decode()
        outcomes = ", ".join(f"{l.split(chr(34))[1]} {float(l.split()[-1]):.0f}" for l in metrics.splitlines()
                             if l.startswith("berth_controller_applies_total{")) or "none"

        # 3. Reaction to edits of a source, with every Berth of the scale run present.
        latencies = []
        for i in range(1, EDITS + 1):
            before = mounted(api, "react", "react")
            api.apply("/api/v1/namespaces/react/configmaps/react-run", source("react", "react-run", f"edit: {i}\n"))
            accepted = time.monotonic()
            wait("the new generation is mounted", lambda: (mounted(api, "react", "react") or before) != before)
            latencies.append((time.monotonic() - accepted) * 1000)
            time.sleep(0.2)
        final = mounted(api, "react", "react")

        def rolled_out():
            d = api.call("GET", "/apis/apps/v1/namespaces/react/deployments/react")
            s = d.get("status", {})
            return (s.get("observedGeneration") == d["metadata"]["generation"]
                    and s.get("updatedReplicas") == 1 and s.get("availableReplicas") == 1 and s.get("replicas") == 1)
        wait("the last rollout completes", rolled_out, timeout=60, every=0.1)
        latencies.sort()
        p50 = statistics.median(latencies)
        p95 = latencies[min(len(latencies) - 1, int(round(0.95 * len(latencies))) - 1)]

        # 4. A quiet minute.
        time.sleep(10)
        last = reconciles()
        before = request_counts(api)
        time.sleep(60)
        quiet = {k: v - before.get(k, 0) for k, v in request_counts(api).items() if v - before.get(k, 0) > 0}
        quiet_reconciles = reconciles() - last

        # 5. The plane's floor, with no controller running.
        controller.kill()
        controller.wait()
        floor_took, (floor_asked, floor_delta) = floor(api, BERTHS, NAMESPACES)

        print(f"berth controller on kube-apiserver v1.37.2 (scripts/testenv), "
              f"{'quick run' if QUICK else 'full run'}")
        print("| measure | berth controller | metadata-only reflector over all ConfigMaps and Secrets "
              "| reflector over all ConfigMaps and Secrets |")
        print("|---|---|---|---|")
        print(f"| RSS with one Berth | {empty[0]:.1f} MB | {empty[2]:.1f} MB | {empty[1]:.1f} MB |")
        print(f"| RSS after {CONFIGMAPS} ConfigMaps of 200 KB, {SMALL_CONFIGMAPS:,} small ConfigMaps and "
              f"{SECRETS:,} Secrets elsewhere "
              f"(created in {created:.0f} s) | {after[0]:.1f} MB ({after[0] - empty[0]:+.1f}) "
              f"| {after[2]:.1f} MB ({after[2] - empty[2]:+.1f}) "
              f"| {after[1]:.1f} MB ({after[1] - empty[1]:+.1f}) |")
        print(f"\nreaction over {EDITS} source edits with {BERTHS:,} Berths present (API server accepts the edit "
              f"-> pod template names the new ConfigMap): p50 {p50:.0f} ms, p95 {p95:.0f} ms, "
              f"max {latencies[-1]:.0f} ms; the last rollout completed ({final})")
        print(f"scale: {BERTHS} Berths in {NAMESPACES} namespaces ({SCALE_REPLICAS} replica(s) each), "
              f"created before a controller starts: all "
              f"Ready {scale:.1f} s after it started ({last:.0f} reconciles, settled after {settle:.0f} s); "
              f"controller RSS then {scale_rss:.1f} MB; applies by outcome: {outcomes}; {scale_asked}")
        total = sum(quiet.values())
        detail = ", ".join(f"{r} {v}: {n:.0f}" for (r, v), n in sorted(quiet.items())) or "none"
        lists = sum(n for (r, v), n in quiet.items() if v == "LIST" and r != "leases")
        renewals = sum(n for (r, v), n in quiet.items() if v == "WATCH")
        print(f"quiet minute: {quiet_reconciles:.0f} reconciles, {lists:.0f} LIST requests (relisting), "
              f"{renewals:.0f} watches renewed (every client's watches end at their timeout, kube-runtime's "
              f"after 290 s, and are opened again); {total:.0f} requests to berths, configmaps, secrets, "
              f"deployments and leases by every client of the plane ({detail})")
        print(f"floor: the unavoidable writes of {BERTHS} more Berths, 8 at a time, no controller: all done "
              f"{floor_took:.1f} s (the controller took {scale / floor_took:.1f}x as long); {floor_asked}")
        print("\nrequests by resource and verb (every client's, per Berth), the scale run beside the floor:")
        print(by_verb_and_resource(scale_delta, floor_delta))
    finally:
        for p in processes:
            p.kill()
        subprocess.run([str(REPO / "scripts/testenv"), "down", plane], capture_output=True)
        shutil.rmtree(plane, ignore_errors=True)  # etcd's data: hundreds of MB per run
        shutil.rmtree(api.certs, ignore_errors=True)


if __name__ == "__main__":
    main()
