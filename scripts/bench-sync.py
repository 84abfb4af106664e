#!/usr/bin/env python3
"""`berth sync` against a real podman container, side by side with `podman cp`.

Measures, in one run on this machine:
  * save-to-visible latency of EDITS single-file edits with `berth sync` watching
    (p50, p95), and the same edits each followed by a `podman cp` (the baseline);
  * initial sync of FILES files (files/s, MB/s) with `berth sync --once`;
  * re-sync of the unchanged tree (`berth sync --once` again).

"Visible" is observed from the host through `podman mount` (vfs storage), polled
every millisecond, so observing costs nothing inside the container.

Usage: scripts/bench-sync.py [--edits 100] [--files 5000] [--file-kb 4]
Needs podman, runc and busybox (Debian: podman runc busybox-static).
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMAGE = "localhost/berth-bench:latest"
APPLETS = ["sh", "tar", "sleep", "find", "sha256sum", "readlink", "rm", "id", "cat"]


def run(cmd, env, **kw):
    return subprocess.run(cmd, env=env, check=True, capture_output=True, text=True, **kw)


def podman_env(work):
    with open(f"{work}/containers.conf", "w") as f:
        f.write('[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]\n'
                '[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n')
    with open(f"{work}/storage.conf", "w") as f:
        f.write(f'[storage]\ndriver = "vfs"\nrunroot = "{work}/runroot"\ngraphroot = "{work}/graph"\n')
    env = dict(os.environ)
    env["CONTAINERS_CONF"] = f"{work}/containers.conf"
    env["CONTAINERS_STORAGE_CONF"] = f"{work}/storage.conf"
    return env


def build_image(work, env):
    rootfs = f"{work}/rootfs"
    os.makedirs(f"{rootfs}/bin")
    os.makedirs(f"{rootfs}/tmp")
    shutil.copy(shutil.which("busybox"), f"{rootfs}/bin/busybox")
    for applet in APPLETS:
        os.symlink("busybox", f"{rootfs}/bin/{applet}")
    run(["tar", "-C", rootfs, "-cf", f"{work}/rootfs.tar", "."], env)
    run(["podman", "import", "-q", "--change", "ENV=PATH=/bin", f"{work}/rootfs.tar", IMAGE], env)


def wait_visible(path, content, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(path, "rb") as f:
                if f.read() == content:
                    return
        except OSError:
            pass
        time.sleep(0.001)
    raise SystemExit(f"{path} never showed the edit")


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--edits", type=int, default=100)
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--file-kb", type=int, default=4)
    args = ap.parse_args()
    for program in ("podman", "runc", "busybox"):
        if not shutil.which(program):
            sys.exit(f"{program} is needed (Debian: apt-get install podman runc busybox-static)")
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "berth"], cwd=ROOT, check=True)
    berth = f"{ROOT}/target/release/berth"

    work = tempfile.mkdtemp(prefix="berth-bench-sync-")
    env = podman_env(work)
    watcher = None
    try:
        build_image(work, env)
        proj = f"{work}/project"
        src = f"{proj}/src"
        os.makedirs(f"{src}/edits")
        with open(f"{proj}/berth.yaml", "w") as f:
            f.write(f"name: bench\nsync:\n  - name: app\n    target: {{image: {IMAGE}}}\n"
                    "    paths: [{from: src/, to: /app/}]\n")
        run(["podman", "run", "-d", "--name", "bench", IMAGE, "/bin/sleep", "3600"], env)
        mount = run(["podman", "mount", "bench"], env).stdout.strip()
        block = os.urandom(args.file_kb * 1024)
        for i in range(args.files):
            d = f"{src}/tree/d{i % 100:02}"
            os.makedirs(d, exist_ok=True)
            with open(f"{d}/f{i:05}.dat", "wb") as f:
                f.write(block[: len(block) - 8] + i.to_bytes(8, "little"))
        total_mb = args.files * args.file_kb * 1024 / 1e6

        cmd = [berth, "sync", "--engine", "podman", "--once"]
        t = time.monotonic()
        run(cmd, env, cwd=proj)
        initial = time.monotonic() - t
        t = time.monotonic()
        out = run(cmd, env, cwd=proj)
        resync = time.monotonic() - t
        assert " 0 written, 0 deleted" in out.stderr, out.stderr

        # berth sync watching: save, then wait until the container has it.
        log = open(f"{work}/sync.log", "w")
        watcher = subprocess.Popen([berth, "sync", "--engine", "podman"], cwd=proj, env=env,
                                   stdout=subprocess.DEVNULL, stderr=log)
        deadline = time.monotonic() + 60
        while "watching" not in open(f"{work}/sync.log").read():
            if time.monotonic() > deadline or watcher.poll() is not None:
                sys.exit("berth sync did not start:\n" + open(f"{work}/sync.log").read())
            time.sleep(0.01)
        berth_lat = []
        for i in range(args.edits):
            content = f"edit {i} {time.time()}\n".encode()
            t = time.monotonic()
            with open(f"{src}/edits/e{i % 10}.txt", "wb") as f:
                f.write(content)
            wait_visible(f"{mount}/app/edits/e{i % 10}.txt", content)
            berth_lat.append(time.monotonic() - t)
            time.sleep(0.05)
        watcher.terminate()
        watcher.wait()
        watcher = None

        # Baseline: the same edits, each followed by `podman cp`.
        cp_lat = []
        for i in range(args.edits):
            content = f"cp edit {i} {time.time()}\n".encode()
            t = time.monotonic()
            local = f"{src}/edits/e{i % 10}.txt"
            with open(local, "wb") as f:
                f.write(content)
            run(["podman", "cp", local, f"bench:/app/edits/e{i % 10}.txt"], env)
            wait_visible(f"{mount}/app/edits/e{i % 10}.txt", content)
            cp_lat.append(time.monotonic() - t)

        ms = lambda s: f"{s * 1000:.0f} ms"
        print(f"machine: {os.cpu_count()} cores; podman {run(['podman', '--version'], env).stdout.split()[-1]}, runc, vfs")
        print(f"save-to-visible over {args.edits} edits:")
        print(f"  berth sync (watching)   p50 {ms(statistics.median(berth_lat))}  p95 {ms(percentile(berth_lat, 95))}  max {ms(max(berth_lat))}")
        print(f"  podman cp per edit      p50 {ms(statistics.median(cp_lat))}  p95 {ms(percentile(cp_lat, 95))}  max {ms(max(cp_lat))}")
        print(f"  ratio (p50)             {statistics.median(cp_lat) / statistics.median(berth_lat):.2f}x faster with berth")
        print(f"initial sync of {args.files} files ({total_mb:.1f} MB): {initial:.2f} s, "
              f"{args.files / initial:.0f} files/s, {total_mb / initial:.1f} MB/s")
        print(f"re-sync of the unchanged tree: {resync:.2f} s")
    finally:
        if watcher:
            watcher.kill()
        subprocess.run(["podman", "rm", "-af", "-t", "0"], env=env, capture_output=True)
        subprocess.run(["chmod", "-R", "u+w", work], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
