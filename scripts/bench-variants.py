#!/usr/bin/env python3
"""Variants (#49), side by side in one run:

1. `berth images --output env` of 40 components without variants, and of the same
   40 components with 6 variants each: what a family costs a Makefile per call
   (runs interleaved, medians; goal: at most 1 ms more).
2. `berth pin` of one component with 6 variants against a local registry, next to
   the 6 `skopeo inspect --format {{.Digest}}` calls a script would make: wall
   time, and the HTTP requests the registry served to each (from its access log).

Usage: scripts/bench-variants.py [RUNS]   (default 300; needs docker-registry, skopeo)
"""
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_registry  # noqa: E402  (beside this script)

ROOT = pathlib.Path(__file__).resolve().parent.parent
RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 300
VARIANTS = ["rocm", "xpu", "tpu", "cpu", "hpu", "gb200"]


def build() -> pathlib.Path:
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "berth"], cwd=ROOT, check=True)
    return ROOT / "target/release/berth"


def project(n: int, variants: bool) -> str:
    lines = ["name: bench", "registry: {env: IMAGE_REGISTRY}", "images:"]
    for i in range(n):
        lines.append(f"  c{i}:")
        lines.append(f"    image: ghcr.io/acme/c{i}-cuda:v1.{i}.0")
        if variants:
            lines.append("    variants:")
            for v in VARIANTS:
                suffix = ", tagSuffix: -arm64" if v == "gb200" else ""
                repository = f"c{i}-cuda" if v == "gb200" else f"c{i}-{v}"
                lines.append(f"      {v}: {{image: ghcr.io/acme/{repository}{suffix}}}")
    return "\n".join(lines) + "\n"


def images(berth: pathlib.Path, work: pathlib.Path) -> None:
    plain, family = work / "plain.yaml", work / "family.yaml"
    plain.write_text(project(40, False))
    family.write_text(project(40, True))
    env = dict(os.environ, IMAGE_REGISTRY="quay.io/me", C3_TAG="fix-1")
    cmds = {
        "40 components": [str(berth), "--project", str(plain), "images", "--output", "env"],
        "40 components x 6 variants": [str(berth), "--project", str(family), "images", "--output", "env"],
        "true (process floor)": ["true"],
    }
    lines = {k: subprocess.run(c, env=env, capture_output=True, check=True).stdout.count(b"\n") for k, c in cmds.items()}
    times = {k: [] for k in cmds}
    for _ in range(20):  # warm-up
        for c in cmds.values():
            subprocess.run(c, env=env, stdout=subprocess.DEVNULL, check=True)
    for _ in range(RUNS):
        for k, c in cmds.items():
            start = time.perf_counter()
            subprocess.run(c, env=env, stdout=subprocess.DEVNULL, check=True)
            times[k].append(time.perf_counter() - start)
    print(f"berth images --output env, {RUNS} interleaved runs each (median ms, output lines):")
    for k, t in times.items():
        print(f"  {k:28} {statistics.median(t) * 1e3:7.2f} ms  {lines[k]:4} lines")
    more = statistics.median(times["40 components x 6 variants"]) - statistics.median(times["40 components"])
    print(f"  the variants cost {more * 1e3:.2f} ms more per call (goal: at most 1 ms)")


def pin(berth: pathlib.Path, work: pathlib.Path) -> None:
    host, log, registry = bench_registry.start(work)
    try:
        layout = bench_registry.layout(work)
        images = [f"{host}/acme/server-cuda:v1.0.0"]
        images += [f"{host}/acme/server-{v}:v1.0.0" for v in VARIANTS[:4]]
        images += [f"{host}/acme/server-cuda:v1.0.0-arm64"]
        for image in images:
            subprocess.run(["skopeo", "copy", "--quiet", "--insecure-policy", "--dest-tls-verify=false", f"oci:{layout}:t", f"docker://{image}"], check=True)
        variants = "".join(f"      {v}: {{image: '{host}/acme/server-{v}'}}\n" for v in VARIANTS[:4])
        variants += f"      gb200: {{image: '{host}/acme/server-cuda', tagSuffix: -arm64}}\n"
        (work / "berth.yaml").write_text(f"name: bench\nimages:\n  server:\n    image: '{host}/acme/server-cuda:v1.0.0'\n    variants:\n{variants}")

        def requests() -> int:
            return bench_registry.requests(log)

        def timed(cmds) -> tuple:
            before = requests()
            start = time.perf_counter()
            for c in cmds:
                subprocess.run(c, cwd=work, stdout=subprocess.DEVNULL, check=True)
            wall = time.perf_counter() - start
            time.sleep(0.2)  # the access log is written after the answer
            return wall, requests() - before

        berth_runs = [timed([[str(berth), "pin", "--insecure-registry", host]]) for _ in range(5)]
        skopeo = [["skopeo", "inspect", "--tls-verify=false", "--format", "{{.Digest}}", f"docker://{i}"] for i in images]
        skopeo_runs = [timed(skopeo) for _ in range(5)]
        lock = (work / "berth.lock").read_text()
        assert lock.count("digest: ") == 6, lock
        digests = {subprocess.run(c, capture_output=True, text=True, check=True).stdout.strip() for c in skopeo}
        assert digests <= set(l.split(": ")[1] for l in lock.splitlines() if l.strip().startswith("digest:")), (digests, lock)
        b = statistics.median(w for w, _ in berth_runs), berth_runs[0][1]
        s = statistics.median(w for w, _ in skopeo_runs), skopeo_runs[0][1]
        print("pin a 6-member family (median of 5; requests the registry served):")
        print(f"  berth pin                    {b[0] * 1e3:7.1f} ms  {b[1]:3} requests")
        print(f"  6 x skopeo inspect           {s[0] * 1e3:7.1f} ms  {s[1]:3} requests")
        print(f"  berth is {s[0] / b[0]:.1f}x faster with {s[1] / max(b[1], 1):.1f}x fewer requests")
    finally:
        registry.kill()
        registry.wait()


def main() -> None:
    berth = build()
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        images(berth, work)
        pin(berth, work)


if __name__ == "__main__":
    main()
