#!/usr/bin/env bash
# `berth promote` of a multi-layer image between two local registries, side by side
# with `skopeo copy` of the same image, then a re-promote of the unchanged image.
# Usage: scripts/bench-promote.sh [LAYERS] [MB_PER_LAYER]   (default 5 x 20 MB)
# Needs docker-registry, skopeo, curl, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
layers=${1:-5}; mb=${2:-20}
cargo build --release --quiet -p berth
berth=$PWD/target/release/berth
work=$(mktemp -d)
# Registries start in $(...) subshells, so their PIDs go to a file the trap reads.
trap 'xargs -r kill < "$work/pids" 2>/dev/null; rm -rf "$work"' EXIT
. scripts/bench-registry.sh
src=$(start_registry)
push_random_image "$src/team/app:v1" "$layers" "$mb"
printf "name: bench\nimages:\n  app: {image: '%s/team/app:v1'}\n" "$src" > "$work/berth.yaml"

# A fresh destination registry for every copy, so that neither tool can mount blobs
# it saw in an earlier run (skopeo remembers blob locations in its blob-info cache).
for run in 1 2 3; do
  a=$(start_registry); b=$(start_registry)
  read -r s _ < <(python3 scripts/measure.py 1 skopeo copy --quiet --insecure-policy --src-tls-verify=false --dest-tls-verify=false "docker://$src/team/app:v1" "docker://$a/prod/app:v1")
  read -r t _ < <(cd "$work" && python3 "$OLDPWD/scripts/measure.py" 1 "$berth" promote --to "$b/prod" --insecure-registry "$src" --insecure-registry "$b" 2>/dev/null)
  echo "$s $t"
  dst=$b
done > "$work/times"
again=$(cd "$work" && { /usr/bin/time -f %e "$berth" promote --to "$dst/prod" --insecure-registry "$src" --insecure-registry "$dst"; } 2>&1)
digest() { skopeo inspect --raw --tls-verify=false "docker://$1" | sha256sum | cut -d' ' -f1; }
[ "$(digest "$dst/prod/app:v1")" = "$(digest "$src/team/app:v1")" ] || { echo "promoted digest differs from the source" >&2; exit 1; }
python3 - "$work/times" "$layers" "$mb" <<'PY'
import statistics, sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
s = statistics.median(r[0] for r in rows); b = statistics.median(r[1] for r in rows)
print(f"promote {sys.argv[2]} x {sys.argv[3]} MB: skopeo copy {s:.2f} s, berth promote {b:.2f} s (berth/skopeo {b/s:.2f}; median of 3)")
PY
echo "re-promote of the unchanged image: $(grep -o '[0-9]* blob(s) sent ([0-9.]* MB)' <<<"$again"), $(tail -n1 <<<"$again") s"
