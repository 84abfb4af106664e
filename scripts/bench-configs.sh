#!/usr/bin/env bash
# Configs and CA bundles: whole-process cost of `berth render` with
#  - a config of K keys (env file), side by side with `kubectl kustomize`'s
#    configMapGenerator on the same file, at K = 1,000 and 10,000, and berth alone
#    at 100,000 (kustomize took 261 s there: its generator is quadratic);
#  - a CA bundle of 1,000 distinct certificates (plus 1,000 duplicates).
# Usage: scripts/bench-configs.sh   (needs python3, openssl, kubectl, GNU time)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p berth
berth=$PWD/target/release/berth
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
deployment='apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  template:
    spec:
      containers: [{name: app, image: nginx, envFrom: [{configMapRef: {name: settings}}]}]'

echo "| keys | env file | berth render | kustomize | kustomize / berth | same name |"
echo "|---|---|---|---|---|---|"
for k in 1000 10000 100000; do
  dir="$work/k$k"; mkdir -p "$dir"
  python3 -c "import sys; [print(f'KEY_{i}=value-{i}-<&>-é') for i in range(int(sys.argv[1]))]" "$k" > "$dir/app.env"
  printf '%s\n' "$deployment" > "$dir/app.yaml"
  printf 'name: bench\nmanifests: [app.yaml]\nconfigs:\n  settings: {envs: [app.env]}\n' > "$dir/berth.yaml"
  printf 'resources: [app.yaml]\nconfigMapGenerator:\n- name: settings\n  envs: [app.env]\n' > "$dir/kustomization.yaml"
  read -r bs _ < <(cd "$dir" && python3 "$OLDPWD/scripts/measure.py" 3 "$berth" render)
  if [ "$k" -le 10000 ]; then
    read -r ks _ < <(python3 scripts/measure.py 1 kubectl kustomize "$dir")
    ours=$(cd "$dir" && "$berth" render | grep -m1 -o 'settings-[a-z0-9]*')
    theirs=$(kubectl kustomize "$dir" | grep -m1 -o 'settings-[a-z0-9]*')
    same=no; [ "$ours" = "$theirs" ] && same=yes
  else
    ks=nan same=-
  fi
  python3 -c "import sys; k,b,s,kk,same=sys.argv[1:]; kk=float(kk); r='-' if kk!=kk else f'{kk:.2f} s'; x='-' if kk!=kk else f'{kk/float(b):.0f}x'; print(f'| {int(k):,} | {int(s)/1e3:,.0f} kB | {float(b):.3f} s | {r} | {x} | {same} |')" \
    "$k" "$bs" "$(stat -c %s "$dir/app.env")" "$ks" "$same"
done

dir="$work/ca"; mkdir -p "$dir/certs"
openssl ecparam -name prime256v1 -genkey -noout -out "$work/key.pem" 2>/dev/null
for i in $(seq 1 1000); do
  openssl req -x509 -key "$work/key.pem" -subj "/CN=bench-$i" -days 3650 -out "$dir/certs/c$i.pem" 2>/dev/null
done
cat "$dir"/certs/*.pem > "$dir/all.pem"   # every certificate again: 1,000 duplicates
printf '%s\n' "$deployment" > "$dir/app.yaml"
printf 'name: bench\nmanifests: [app.yaml]\ncaBundles:\n  corp: {sources: [certs/, all.pem], inject: {containers: [app]}}\n' > "$dir/berth.yaml"
read -r cs _ < <(cd "$dir" && python3 "$OLDPWD/scripts/measure.py" 3 "$berth" render)
count=$(cd "$dir" && "$berth" render | grep -c 'BEGIN CERTIFICATE')
echo
echo "CA bundle: 2,000 PEM blocks ($(du -sh "$dir/certs" | cut -f1) + $(du -h "$dir/all.pem" | cut -f1)) -> $count distinct certificates: berth render $cs s"
