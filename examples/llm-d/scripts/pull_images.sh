#!/bin/bash
# Makes sure every image the development environment runs is present locally,
# pulling what is missing. Shaped like llm-d-router's scripts/pull_images.sh, with
# one change: it builds no image name itself. Run it through berth, which sets
# every *_IMAGE variable from berth.yaml and the overrides in the environment:
#
#   berth env -- scripts/pull_images.sh
#   IMAGE_REGISTRY=quay.io/developer-username EPP_TAG=fix berth env -- scripts/pull_images.sh
#
# DRY_RUN=1 prints the images and pulls nothing.
set -euo pipefail

CONTAINER_RUNTIME="${CONTAINER_RUNTIME:-docker}"
VARIABLES=(EPP_IMAGE SIDECAR_IMAGE VLLM_IMAGE VLLM_RENDER_IMAGE)

for v in "${VARIABLES[@]}"; do
  if [ -z "${!v:-}" ]; then
    echo "error: $v is not set; run me as: berth env -- $0" >&2
    exit 1
  fi
done

echo "--- Using the following images ---"
for v in "${VARIABLES[@]}"; do
  echo "$v=${!v}"
done
[ -n "${DRY_RUN:-}" ] && exit 0

ensure_image() {
  local image="$1"
  if [ -n "$("$CONTAINER_RUNTIME" images -q "$image")" ]; then
    echo "$image: present"
  elif "$CONTAINER_RUNTIME" pull "$image"; then
    echo "$image: pulled"
  else
    echo "error: $image is not present and cannot be pulled" >&2
    exit 1
  fi
}
for v in "${VARIABLES[@]}"; do
  ensure_image "${!v}"
done
