#!/usr/bin/env bash
# berth render versus kubectl kustomize (an equivalent `images:` entry), side by side
# in one run, on N generated Deployments (two containers each, five images).
#
# Usage: scripts/bench-render.sh [SIDE_BY_SIDE_NS] [BERTH_ONLY_NS]
#   default: "500 1000 2000" side by side, then "5000 50000" for berth alone.
# Needs python3 and kubectl (kustomize is built into kubectl).
set -euo pipefail
cd "$(dirname "$0")/.."
both=${1:-"500 1000 2000"}
alone=${2:-"5000 50000"}
cargo build --release --quiet -p berth
berth=$PWD/target/release/berth
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "| N | input MB | berth s | berth peak MB | kustomize s | kustomize peak MB | kustomize / berth |"
echo "|---|---|---|---|---|---|---|"
row() {  # N with_kustomize
  local n=$1 dir="$work/n$1"
  python3 scripts/gen-deployments.py "$n" "$dir"
  local bytes; bytes=$(stat -c %s "$dir/manifests.yaml")
  read -r bs bk < <(cd "$dir" && env $(cat bench.env) python3 "$OLDPWD/scripts/measure.py" 3 "$berth" render)
  # The work is real: every Deployment comes out, with the overrides applied.
  local out; out=$(cd "$dir" && env $(cat bench.env) "$berth" render)
  [ "$(grep -c '^kind: Deployment' <<<"$out")" = "$n" ] || { echo "berth output is incomplete" >&2; exit 1; }
  grep -q 'image: quay.io/me/llm-d-inference-scheduler:my-fix' <<<"$out" || { echo "berth did not rewrite" >&2; exit 1; }
  if [ "$2" = yes ]; then
    read -r ks kk < <(python3 scripts/measure.py 1 kubectl kustomize "$dir")
    local kout; kout=$(kubectl kustomize "$dir")
    [ "$(grep -c 'image: quay.io/me/llm-d-inference-scheduler:my-fix' <<<"$kout")" = "$(grep -c 'image: quay.io/me/llm-d-inference-scheduler:my-fix' <<<"$out")" ] \
      || { echo "kustomize and berth rewrote different numbers of images" >&2; exit 1; }
    python3 - "$n" "$bytes" "$bs" "$bk" "$ks" "$kk" <<'PY'
import sys
n, b, bs, bk, ks, kk = sys.argv[1:]
b, bs, bk, ks, kk = int(b), float(bs), int(bk), float(ks), int(kk)
print(f"| {n} | {b/1e6:.1f} | {bs:.3f} | {bk/1024:.0f} | {ks:.2f} | {kk/1024:.0f} | {ks/bs:.0f}x |")
PY
  else
    python3 - "$n" "$bytes" "$bs" "$bk" <<'PY'
import sys
n, b, bs, bk = sys.argv[1:]
b, bs, bk = int(b), float(bs), int(bk)
print(f"| {n} | {b/1e6:.1f} | {bs:.3f} | {bk/1024:.0f} (x{bk*1024/b:.1f} input) | - | - | - |")
PY
  fi
}
for n in $both; do row "$n" yes; done
for n in $alone; do row "$n" no; done
