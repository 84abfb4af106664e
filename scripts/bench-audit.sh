#!/usr/bin/env bash
# berth audit against `grep -rn` for the same repositories, side by side, on a
# generated 10,000-file git checkout (sources, scripts, Makefiles, CI YAML; one
# file in fifty holds an image copy; a gitignored vendor/ of 2,000 more files
# that grep reads and berth skips, as a real checkout has). ripgrep runs too
# when it is installed: the fastest general searcher, as the floor of what
# reading these files costs on this machine.
# Usage: scripts/bench-audit.sh [FILES]   (needs hyperfine; builds berth --release)
set -euo pipefail
cd "$(dirname "$0")/.."
files="${1:-10000}"
command -v hyperfine >/dev/null || { echo "hyperfine is missing (apt-get install hyperfine)" >&2; exit 1; }
cargo build --release --locked -q -p berth
berth="$PWD/target/release/berth"
tree="$(mktemp -d /tmp/berth-audit-bench.XXXXXX)"
trap 'rm -rf "$tree"' EXIT
python3 - "$tree" "$files" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
random.seed(7)
images = ["ghcr.io/llm-d/llm-d-inference-scheduler", "ghcr.io/llm-d/llm-d-routing-sidecar", "ghcr.io/llm-d/llm-d-inference-sim"]
open(os.path.join(root, "berth.yaml"), "w").write(
    "name: bench\nimages:\n" + "".join(f"  c{i}: {{image: '{r}:dev'}}\n" for i, r in enumerate(images)))
open(os.path.join(root, ".gitignore"), "w").write("vendor/\n")
kinds = [("go", "package x\n\nfunc f() string {\n\treturn \"value\"\n}\n"), ("py", "def f():\n    return 'value'\n"),
         ("sh", "#!/bin/sh\necho value\n"), ("yaml", "steps:\n  - run: make test\n"), ("mk", "all:\n\t@echo value\n")]
def write(path, i):
    ext, body = kinds[i % len(kinds)]
    body = body * 20
    if i % 50 == 0:
        body += f"\nIMAGE = \"{images[i % 3]}:v{i}\"\n"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path + "." + ext, "w").write(body)
for i in range(n):
    write(os.path.join(root, "src", f"d{i % 100}", f"f{i}"), i)
for i in range(n // 5):
    write(os.path.join(root, "vendor", f"d{i % 40}", f"v{i}"), i)
PY
git -C "$tree" init -q && git -C "$tree" add -A &&
  git -C "$tree" -c user.email=bench@example.invalid -c user.name=bench commit -qm tree && git -C "$tree" gc -q
pattern='ghcr\.io/llm-d/llm-d-inference-scheduler|ghcr\.io/llm-d/llm-d-routing-sidecar|ghcr\.io/llm-d/llm-d-inference-sim'
echo "berth audit: $(cd "$tree" && "$berth" audit 2>&1 >/dev/null)"
echo "grep -rnE:   $(cd "$tree" && grep -rnE "$pattern" . | wc -l) lines"
cd "$tree"
rg=()
command -v rg >/dev/null && rg=(-n "rg -n" "rg -n '$pattern' .")
hyperfine -N --warmup 3 --runs 20 --export-json "$tree/h.json" \
  -n "berth audit" "$berth audit" \
  -n "grep -rnE" "grep -rnE '$pattern' ." "${rg[@]}" >/dev/null
python3 - "$tree/h.json" "$(nproc)" <<'PY'
import json, sys
r = {x["command"]: x["mean"] for x in json.load(open(sys.argv[1]))["results"]}
b = r["berth audit"]
for name, mean in r.items():
    print(f"{name:12} {mean*1000:7.1f} ms  {mean/b:5.2f}x berth's time")
print(f"({sys.argv[2]} cores; berth audit is {r['grep -rnE']/b:.2f}x faster than grep -rnE)")
PY
