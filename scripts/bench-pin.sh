#!/usr/bin/env bash
# `berth pin` of N tags against a local registry, side by side with the loop of
# `skopeo inspect --format '{{.Digest}}'` people write for the same job.
# Usage: scripts/bench-pin.sh [N]   (default 200; needs docker-registry, skopeo, curl, python3)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-200}
cargo build --release --quiet -p berth
berth=$PWD/target/release/berth
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
host=127.0.0.1:$port
printf 'version: 0.1\nlog: {level: error}\nstorage: {filesystem: {rootdirectory: %s/data}}\nhttp: {addr: "%s"}\n' "$work" "$host" > "$work/config.yml"
docker-registry serve "$work/config.yml" >/dev/null 2>&1 &
registry=$!
trap 'kill $registry 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do curl -fs "http://$host/v2/" >/dev/null && break; sleep 0.05; done

# One small image, then N tags of it (manifest PUTs, so setup stays fast).
layout=$work/layout; mkdir -p "$layout/blobs/sha256"
blob() { local d; d=$(sha256sum "$1" | cut -d' ' -f1); cp "$1" "$layout/blobs/sha256/$d"; echo "$d $(stat -c %s "$1")"; }
echo "bench layer" > "$work/layer"; read -r l ls < <(blob "$work/layer")
printf '{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' "$l" > "$work/config.json"; read -r c cs < <(blob "$work/config.json")
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' "$c" "$cs" "$l" "$ls" > "$work/manifest.json"; read -r m ms < <(blob "$work/manifest.json")
printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"org.opencontainers.image.ref.name":"t"}}]}' "$m" "$ms" > "$layout/index.json"
echo '{"imageLayoutVersion":"1.0.0"}' > "$layout/oci-layout"
skopeo copy --quiet --insecure-policy --dest-tls-verify=false "oci:$layout:t" "docker://$host/bench/app:t0"
curl -fs -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://$host/v2/bench/app/manifests/t0" -o "$work/m.json"
for i in $(seq 1 "$n"); do
  curl -fs -X PUT -H 'Content-Type: application/vnd.oci.image.manifest.v1+json' --data-binary @"$work/m.json" "http://$host/v2/bench/app/manifests/t$i" >/dev/null
done
{ echo "name: bench"; echo "images:"; for i in $(seq 1 "$n"); do echo "  c$i: {image: '$host/bench/app:t$i'}"; done; } > "$work/berth.yaml"
printf '#!/bin/sh\nfor i in $(seq 1 %s); do skopeo inspect --tls-verify=false --format "{{.Digest}}" docker://%s/bench/app:t$i; done\n' "$n" "$host" > "$work/skopeo-loop.sh"

read -r bs _ < <(cd "$work" && python3 "$OLDPWD/scripts/measure.py" 3 "$berth" pin --insecure-registry "$host")
read -r ss _ < <(python3 scripts/measure.py 1 sh "$work/skopeo-loop.sh")
[ "$(grep -c 'digest: ' "$work/berth.lock")" = "$n" ] || { echo "berth.lock is incomplete" >&2; exit 1; }
[ "$(sh "$work/skopeo-loop.sh" | sort -u)" = "$(grep -o 'sha256:[0-9a-f]*' "$work/berth.lock" | sort -u)" ] || { echo "digests differ from skopeo's" >&2; exit 1; }
python3 -c "import sys; n,b,s=sys.argv[1:]; print(f'pin {n} tags: berth {float(b):.2f} s, skopeo inspect loop {float(s):.2f} s: {float(s)/float(b):.0f}x')" "$n" "$bs" "$ss"
