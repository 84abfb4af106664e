#!/usr/bin/env bash
# Builds the CLI/controller image from the Containerfile exactly as a user would
# (`podman build .` from a clean clone), on a machine that reaches no container
# registry: the build stage's `docker.io/library/rust:1.89-bookworm` is replaced by
# a local stand-in made the same way — Debian bookworm (debootstrap, from Debian's
# packages) with gcc and libc6-dev, this machine's stable Rust toolchain, and its
# cargo registry cache with CARGO_NET_OFFLINE=true (the build cannot reach crates.io
# from inside the container). Then the image is run. Slow (a release build with thin
# LTO inside the container: ~15 min on 2 cores); not part of CI.
#
# Usage: scripts/verify-containerfile.sh [IMAGE]   (needs root, podman, debootstrap)
set -euo pipefail
cd "$(dirname "$0")/.."
image=${1:-localhost/berth:containerfile-check}
base=docker.io/library/rust:1.89-bookworm
work=$(mktemp -d /tmp/berth-containerfile.XXXXXX)
trap 'rm -rf "$work"' EXIT

if ! podman image exists "$base"; then
  echo "== a stand-in for $base (no registry reachable)"
  root="$work/rootfs"
  debootstrap --variant=minbase --include=gcc,libc6-dev,ca-certificates bookworm "$root" \
    http://deb.debian.org/debian >"$work/debootstrap.log"
  toolchain=$(rustc --print sysroot)
  mkdir -p "$root/usr/local/rust" "$root/usr/local/cargo"
  cp -a "$toolchain/." "$root/usr/local/rust/"
  cp -a "${CARGO_HOME:-$HOME/.cargo}/registry" "$root/usr/local/cargo/"
  tar -C "$root" -cf "$work/rootfs.tar" .
  podman import \
    --change 'ENV PATH=/usr/local/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV CARGO_HOME=/usr/local/cargo' \
    --change 'ENV CARGO_NET_OFFLINE=true' \
    "$work/rootfs.tar" "$base" >/dev/null
fi

echo "== podman build from a clean clone"
git clone -q . "$work/clone"
(cd "$work/clone" && time podman build --pull=never -t "$image" .)
echo "== the image"
podman image inspect "$image" --format 'size {{.Size}} bytes, user {{.Config.User}}, entrypoint {{.Config.Entrypoint}} {{.Config.Cmd}}'
run=(podman run --rm --ulimit nofile=1024:1024 --ulimit nproc=4096:4096)
"${run[@]}" "$image" version
"${run[@]}" -v "$PWD/examples/llm-d:/work" -w /work "$image" images
