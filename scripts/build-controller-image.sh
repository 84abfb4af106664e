#!/usr/bin/env bash
# Builds the controller image with podman, offline: a statically linked berth
# (glibc, crt-static: no loader or libraries needed at run time) copied into
# `FROM scratch`. Usage: scripts/build-controller-image.sh [IMAGE]
set -euo pipefail
cd "$(dirname "$0")/.."
image=${1:-localhost/berth-controller:dev}
RUSTFLAGS="-C target-feature=+crt-static" cargo build --release --locked -p berth --target x86_64-unknown-linux-gnu
binary=target/x86_64-unknown-linux-gnu/release/berth
if ldd "$binary" 2>&1 | grep -q '=>'; then
  echo "$binary is not statically linked" >&2; exit 1
fi
podman build --pull=never -f Containerfile.prebuilt -t "$image" .
podman run --rm --ulimit nofile=1024:1024 --ulimit nproc=4096:4096 "$image" --version
podman image inspect "$image" --format 'built {{.Id}} ({{.Size}} bytes)'
