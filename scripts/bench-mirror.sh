#!/usr/bin/env bash
# `berth mirror`, two figures (#37):
#  1. the configuration for 500 digest-pinned components (`--no-copy`: IDMS, containerd
#     hosts.toml, registries.conf), median of 10;
#  2. mirroring IMAGES images of LAYERS x MB between two local registries, side by side with
#     what a user writes otherwise: `skopeo copy --all` per image plus a hand-written
#     ImageDigestMirrorSet (not timed: free) — wall time and HTTP requests the registries
#     logged, each tool into a fresh destination registry.
# Usage: scripts/bench-mirror.sh [IMAGES] [LAYERS] [MB_PER_LAYER]   (default 5 x 2 x 4 MB)
# Needs docker-registry, skopeo, curl, python3, GNU time.
set -euo pipefail
cd "$(dirname "$0")/.."
images=${1:-5}; layers=${2:-2}; mb=${3:-4}
cargo build --release --quiet -p berth
berth=$PWD/target/release/berth
work=$(mktemp -d)
trap 'xargs -r kill < "$work/pids" 2>/dev/null; rm -rf "$work"' EXIT

# --- 1. configuration for 500 components
mkdir -p "$work/config"
python3 - "$work/config/berth.yaml" <<'PY'
import hashlib, sys
lines = ["name: bench", "images:"]
for i in range(500):
    digest = hashlib.sha256(str(i).encode()).hexdigest()
    lines.append(f"  c{i}: {{image: 'ghcr.io/org{i % 7}/app{i}:v1@sha256:{digest}'}}")
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
read -r config_s config_kib < <(cd "$work/config" && python3 "$OLDPWD/scripts/measure.py" 10 "$berth" mirror --no-copy --to mirror.corp:5000/mirror --out out 2>/dev/null)
files=$(find "$work/config/out" -type f | wc -l)
echo "configuration for 500 components: $(python3 -c "print(f'{$config_s*1000:.1f}')") ms (median of 10, $files files, peak RSS $config_kib KiB)"

# --- 2. mirroring against skopeo copy per image
. scripts/bench-registry.sh
requests() { grep -c '"GET \|"HEAD \|"PUT \|"POST \|"PATCH \|"DELETE ' "$work/log-${1#*:}" || true; }
src=$(start_registry)
mkdir -p "$work/mirror"
printf "name: bench\nimages:\n" > "$work/mirror/berth.yaml"
for n in $(seq 1 "$images"); do
  push_random_image "$src/team/app$n:v1" "$layers" "$mb"
  printf "  app%s: {image: '%s/team/app%s:v1'}\n" "$n" "$src" "$n" >> "$work/mirror/berth.yaml"
done
(cd "$work/mirror" && "$berth" pin --insecure-registry "$src" 2>/dev/null)

a=$(start_registry); b=$(start_registry)
before=$(requests "$src")
start=$(date +%s.%N)
for n in $(seq 1 "$images"); do
  skopeo copy --quiet --all --insecure-policy --src-tls-verify=false --dest-tls-verify=false "docker://$src/team/app$n:v1" "docker://$a/mirror/team/app$n:v1"
done
skopeo_s=$(python3 -c "import time; print(f'{time.time() - $start:.2f}')")
skopeo_src=$(( $(requests "$src") - before )); skopeo_dst=$(requests "$a")
before=$(requests "$src")
start=$(date +%s.%N)
(cd "$work/mirror" && "$berth" mirror --locked --to "$b/mirror" --out out --insecure-registry "$src" --insecure-registry "$b" 2>/dev/null)
berth_s=$(python3 -c "import time; print(f'{time.time() - $start:.2f}')")
berth_src=$(( $(requests "$src") - before )); berth_dst=$(requests "$b")
echo "mirror $images images of $layers x $mb MB: skopeo copy per image ${skopeo_s} s ($skopeo_src requests to the source, $skopeo_dst to the mirror) + a hand-written IDMS; berth mirror ${berth_s} s ($berth_src + $berth_dst requests) + its configuration written"
