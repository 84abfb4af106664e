#!/usr/bin/env bash
# N certificates in CA bundles of 250 (a ConfigMap holds at most 1 MiB), each
# rendered in every form (PEM, OpenSSL's hashed directory, PKCS#12, JKS) by
# `berth render` (median of 5), beside what a chart's init container does instead:
# `keytool -importcert` once per certificate into a PKCS#12 store (timed for K
# certificates — each call starts a JVM — and scaled to N).
# Usage: scripts/bench-trust.sh [N] [K]   (default 1000 and 20)
# Needs openssl, keytool, python3, GNU time.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000}; k=${2:-20}
cargo build --release --quiet -p berth
berth=$PWD/target/release/berth
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'name: bench\nmanifests: [app.yaml]\nimages:\n  app: {image: ghcr.io/acme/app:v1}\ncaBundles:\n' > "$work/berth.yaml"
for i in $(seq 1 "$n"); do
  b=$(( (i - 1) / 250 + 1 ))
  if [ ! -d "$work/certs/b$b" ]; then
    mkdir -p "$work/certs/b$b"
    printf '  corp-%s:\n    sources: [certs/b%s/]\n    formats: [pem, pkcs12, jks]\n    inject: {components: [app]}\n' "$b" "$b" >> "$work/berth.yaml"
  fi
  cp_to="$work/certs/b$b/ca$i.pem"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout /dev/null \
    -out "$cp_to" -subj "/CN=Bench CA $i" -days 3650 2>/dev/null
done
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: app, image: ghcr.io/acme/app:v1}]\n' > "$work/app.yaml"
read -r berth_s berth_kib < <(cd "$work" && python3 "$OLDPWD/scripts/measure.py" 5 "$berth" render)
start=$(date +%s.%N)
for i in $(seq 1 "$k"); do
  keytool -importcert -noprompt -storetype PKCS12 -keystore "$work/store.p12" -storepass changeit \
    -alias "ca$i" -file "$(ls "$work"/certs/b*/ca$i.pem)" >/dev/null 2>&1
done
keytool_s=$(python3 -c "import time; print(time.time() - $start)")
python3 - "$n" "$k" "$berth_s" "$berth_kib" "$keytool_s" <<'PY'
import sys
n, k, b, kib, kt = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], float(sys.argv[5])
per = kt / k
print(f"{n} certificates: berth render (PEM + hashed directory + PKCS#12 + JKS, bundles of 250) {b*1000:.0f} ms, peak RSS {int(kib)//1024} MB; "
      f"keytool -importcert {per*1000:.0f} ms per certificate ({k} timed), {per*n:.0f} s for {n} (scaled): {per*n/b:.0f}x")
PY
