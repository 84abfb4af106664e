#!/usr/bin/env python3
"""Signatures (#51), side by side in one run: `berth pin` of N images signed with cosign 2
(tag scheme) against a local registry, with a `verify:` policy and without one (berth.lock
removed before each run, so every signature is checked), next to the `cosign verify` loop a
script would run instead. Wall time (median of 5; the loop once) and the HTTP requests the
registry served (from its access log).

Usage: scripts/bench-signatures.py [N]   (default 200; needs docker-registry, skopeo, and
cosign 2 from `scripts/testenv build`)
"""
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_registry  # noqa: E402  (beside this script)

ROOT = pathlib.Path(__file__).resolve().parent.parent
N = int(sys.argv[1]) if len(sys.argv) > 1 else 200


def main() -> None:
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "berth"], cwd=ROOT, check=True)
    berth = ROOT / "target/release/berth"
    bins = subprocess.run([str(ROOT / "scripts/testenv"), "build"], capture_output=True, text=True, check=True).stdout.strip()
    cosign = pathlib.Path(bins) / "cosign2"
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        host, log, registry = bench_registry.start(work)
        try:
            layout = bench_registry.layout(work)
            env = {"PATH": "/usr/bin:/bin", "HOME": str(work), "COSIGN_PASSWORD": ""}
            subprocess.run([str(cosign), "generate-key-pair"], cwd=work, env=env, check=True, capture_output=True)
            started = time.perf_counter()
            for i in range(N):
                subprocess.run(["skopeo", "copy", "--quiet", "--insecure-policy", "--dest-tls-verify=false", f"oci:{layout}:t", f"docker://{host}/acme/c{i}:v1"], check=True)
            digest = subprocess.run(["skopeo", "inspect", "--tls-verify=false", "--format", "{{.Digest}}", f"docker://{host}/acme/c0:v1"], capture_output=True, text=True, check=True).stdout.strip()
            for i in range(N):
                subprocess.run([str(cosign), "sign", "--key", "cosign.key", "--tlog-upload=false", "--allow-insecure-registry", "-y", f"{host}/acme/c{i}@{digest}"], cwd=work, env=env, check=True, capture_output=True)
            print(f"pushed and signed {N} images in {time.perf_counter() - started:.0f} s")
            images = "".join(f"  c{i}: {{image: '{host}/acme/c{i}:v1'}}\n" for i in range(N))
            for name, policy in [("plain", ""), ("verified", "verify:\n  - key: cosign.pub\n")]:
                (work / name).mkdir()
                (work / name / "berth.yaml").write_text(f"name: bench\nimages:\n{images}{policy}")
            (work / "verified" / "cosign.pub").write_text((work / "cosign.pub").read_text())

            def requests() -> int:
                return bench_registry.requests(log)

            def timed(run) -> tuple:
                before = requests()
                start = time.perf_counter()
                run()
                wall = time.perf_counter() - start
                time.sleep(0.3)  # the access log is written after the answer
                return wall, requests() - before

            def pin(name):
                def run():
                    (work / name / "berth.lock").unlink(missing_ok=True)
                    subprocess.run([str(berth), "pin", "--insecure-registry", host], cwd=work / name, check=True, capture_output=True)
                return run

            def loop():
                for i in range(N):
                    subprocess.run([str(cosign), "verify", "--key", "cosign.pub", "--insecure-ignore-tlog=true", "--allow-insecure-registry", f"{host}/acme/c{i}@{digest}"], cwd=work, env=env, check=True, capture_output=True)

            plain = [timed(pin("plain")) for _ in range(5)]
            verified = [timed(pin("verified")) for _ in range(5)]
            assert (work / "verified" / "berth.lock").read_text().count("verified:") == N
            cosign_loop = timed(loop)
            p, v = statistics.median(w for w, _ in plain), statistics.median(w for w, _ in verified)
            print(f"berth pin of {N} signed images (median of 5; requests the registry served):")
            print(f"  without verify:        {p * 1e3:8.1f} ms  {plain[0][1]:5} requests ({plain[0][1] / N:.1f} per image)")
            print(f"  with verify: (cosign)  {v * 1e3:8.1f} ms  {verified[0][1]:5} requests ({verified[0][1] / N:.1f} per image)")
            print(f"  {N} x cosign verify     {cosign_loop[0] * 1e3:8.1f} ms  {cosign_loop[1]:5} requests ({cosign_loop[1] / N:.1f} per image), once")
            print(f"  verification costs {v / p:.2f}x a plain pin (goal: at most 2x); berth is {cosign_loop[0] / v:.1f}x faster than the loop")
        finally:
            registry.kill()
            registry.wait()


if __name__ == "__main__":
    main()
