#!/bin/sh
# Prints the images a development environment would deploy.
# It asks berth instead of rebuilding names from a hard-coded base.
set -eu
cd "$(dirname "$0")/.."
# Assign first, then eval: a failing `berth` then stops the script (set -e),
# which `eval "$(berth ...)"` alone would hide.
images=$("${BERTH:-berth}" images --output shell)
eval "$images"
echo "EPP_IMAGE=$EPP_IMAGE"
echo "SIDECAR_IMAGE=$SIDECAR_IMAGE"
echo "VLLM_SIMULATOR_IMAGE=$VLLM_SIMULATOR_IMAGE"
