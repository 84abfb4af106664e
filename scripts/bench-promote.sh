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
start_registry() {  # prints host:port
  local port; port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  printf 'version: 0.1\nlog: {level: error}\nstorage: {filesystem: {rootdirectory: %s/data-%s}}\nhttp: {addr: "127.0.0.1:%s"}\n' "$work" "$port" "$port" > "$work/config-$port.yml"
  docker-registry serve "$work/config-$port.yml" >/dev/null 2>&1 &
  echo $! >> "$work/pids"
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/v2/" >/dev/null && break; sleep 0.05; done
  echo "127.0.0.1:$port"
}
src=$(start_registry)

layout=$work/layout; mkdir -p "$layout/blobs/sha256"
blob() { local d; d=$(sha256sum "$1" | cut -d' ' -f1); mv "$1" "$layout/blobs/sha256/$d"; echo "$d $(stat -c %s "$layout/blobs/sha256/$d")"; }
descriptors=(); diffs=()
for i in $(seq 1 "$layers"); do
  head -c "$((mb * 1000000))" /dev/urandom > "$work/layer$i"
  read -r d s < <(blob "$work/layer$i")
  descriptors+=("{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\",\"digest\":\"sha256:$d\",\"size\":$s}"); diffs+=("\"sha256:$d\"")
done
printf '{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[%s]}}' "$(IFS=,; echo "${diffs[*]}")" > "$work/config.json"; read -r c cs < <(blob "$work/config.json")
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[%s]}' "$c" "$cs" "$(IFS=,; echo "${descriptors[*]}")" > "$work/manifest.json"; read -r m ms < <(blob "$work/manifest.json")
printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"org.opencontainers.image.ref.name":"t"}}]}' "$m" "$ms" > "$layout/index.json"
echo '{"imageLayoutVersion":"1.0.0"}' > "$layout/oci-layout"
skopeo copy --quiet --insecure-policy --dest-tls-verify=false "oci:$layout:t" "docker://$src/team/app:v1"
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
