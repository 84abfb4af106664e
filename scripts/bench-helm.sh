#!/usr/bin/env bash
# berth render of a `helm:` source versus `helm template` alone, side by side in one
# run, on a chart shaped like llm-d's router (the EPP image in image.repository/tag,
# copied into a sidecar's args and a ConfigMap) with the same values set by hand.
# #35's goal: berth adds at most 10 % or 30 ms.
#
# Usage: scripts/bench-helm.sh [RUNS]   (default 11)
# Needs python3, GNU time and helm (BERTH_HELM, else `helm` on PATH; scripts/testenv
# builds one).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-11}
helm=${BERTH_HELM:-$(command -v helm)}
cargo build --release --quiet -p berth
berth=$PWD/target/release/berth
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HELM_CACHE_HOME=$work/.helm/cache HELM_CONFIG_HOME=$work/.helm/config HELM_DATA_HOME=$work/.helm/data
mkdir -p "$work/charts/router/templates"
printf 'apiVersion: v2\nname: router\nversion: 0.1.0\n' > "$work/charts/router/Chart.yaml"
printf 'image:\n  repository: ghcr.io/llm-d/epp\n  tag: v0.3.0\n' > "$work/charts/router/values.yaml"
cat > "$work/charts/router/templates/deployment.yaml" <<'T'
apiVersion: apps/v1
kind: Deployment
metadata: {name: '{{ .Release.Name }}-epp'}
spec:
  selector: {matchLabels: {app: epp}}
  template:
    metadata: {labels: {app: epp}}
    spec:
      containers:
        - {name: epp, image: '{{ .Values.image.repository }}:{{ .Values.image.tag }}'}
        - {name: sidecar, image: busybox:1.36, args: ['--upstream={{ .Values.image.repository }}:{{ .Values.image.tag }}']}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: '{{ .Release.Name }}-info'}
data: {epp: '{{ .Values.image.repository }}:{{ .Values.image.tag }}'}
T
cat > "$work/berth.yaml" <<'Y'
name: llm
manifests:
  - helm: {chart: charts/router, release: router}
images:
  epp:
    image: ghcr.io/llm-d/epp:v0.3.0
    helmValues: {repository: image.repository, tag: image.tag}
Y
cd "$work"
export BERTH_HELM=$helm EPP_TAG=fix-408
[ "$("$berth" render | grep -c 'ghcr.io/llm-d/epp:fix-408')" = 3 ] || { echo "berth did not move every copy" >&2; exit 1; }
read -r hs _ < <(python3 "$OLDPWD/scripts/measure.py" "$runs" "$helm" template router charts/router --set image.tag=fix-408)
read -r bs _ < <(python3 "$OLDPWD/scripts/measure.py" "$runs" "$berth" render)
python3 - "$hs" "$bs" <<'PY'
import sys
hs, bs = map(float, sys.argv[1:])
print("| helm template s | berth render s | berth adds |")
print("|---|---|---|")
print(f"| {hs:.3f} | {bs:.3f} | {(bs-hs)*1000:.0f} ms ({(bs/hs-1)*100:.0f} %) |")
PY
