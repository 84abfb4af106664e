#!/usr/bin/env python3
"""Runs a command N times; prints median wall seconds and peak RSS (KiB) of that command.

Usage: measure.py RUNS CMD [ARGS...]   (stdout of CMD is discarded; a failure aborts)
Output: one line, "<median seconds> <max peak KiB>".
Peak RSS comes from GNU time (/usr/bin/time, Debian package `time`): a forked
Python child would report Python's own pages, copied before exec, as its peak.
"""
import argparse
import statistics
import subprocess
import sys
import tempfile
import time

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("runs", type=int, help="how many runs")
parser.add_argument("cmd", nargs=argparse.REMAINDER, help="the command and its arguments")
args = parser.parse_args()
runs, cmd = args.runs, args.cmd
if not cmd:
    parser.error("no command to measure")
walls, peaks = [], []
report = tempfile.NamedTemporaryFile(prefix="measure-", suffix=".txt")
for _ in range(runs):
    start = time.perf_counter()
    status = subprocess.call(["/usr/bin/time", "-f", "%M", "-o", report.name, *cmd], stdout=subprocess.DEVNULL)
    walls.append(time.perf_counter() - start)
    if status != 0:
        sys.exit(f"command failed ({status}): {' '.join(cmd)}")
    with open(report.name) as f:
        peaks.append(int(f.read().split()[-1]))
print(f"{statistics.median(walls):.4f} {max(peaks)}")
