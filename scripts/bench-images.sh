#!/usr/bin/env bash
# Whole-process cost of `berth images --output env` on the llm-d example: what a
# Makefile pays per call. Measured side by side with the floor of starting any
# process (`true`) and a shell (`sh -c :`), in one hyperfine run.
#
# Usage: scripts/bench-images.sh [RUNS]   (default 300; needs hyperfine: apt-get install hyperfine)
# BERTH_BASELINE=PATH adds another berth binary (an older build) to the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-300}
command -v hyperfine >/dev/null || { echo "hyperfine is required: apt-get install hyperfine" >&2; exit 1; }
cargo build --release --quiet -p berth
berth=target/release/berth
project=examples/llm-d/berth.yaml
export IMAGE_REGISTRY=quay.io/developer-username EPP_TAG=my-feature-fix
"$berth" --project "$project" images --output env >/dev/null   # fail early on a broken build
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
baseline=()
if [[ -n "${BERTH_BASELINE:-}" ]]; then
  baseline=(-n "baseline images --output env" "$BERTH_BASELINE --project $project images --output env")
fi
hyperfine --shell=none --warmup 20 --runs "$runs" --export-json "$out/r.json" \
  -n "berth images --output env" "$berth --project $project images --output env" \
  "${baseline[@]}" \
  -n "true (process floor)" "true" \
  -n "sh -c : (shell floor)" "sh -c :" >/dev/null
python3 - "$out/r.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
b = r["berth images --output env"]
print(f"{'command':32} {'mean ms':>8} {'median':>8} {'max':>8}")
for name, x in r.items():
    print(f"{name:32} {x['mean']*1e3:8.2f} {x['median']*1e3:8.2f} {x['max']*1e3:8.2f}")
print(f"berth over the process floor: {(b['mean'] - r['true (process floor)']['mean'])*1e3:.2f} ms; goal: under 5 ms per call")
PY
