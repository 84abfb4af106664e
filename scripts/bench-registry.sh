# Sourced by scripts/bench-promote.sh and scripts/bench-mirror.sh: local registries and
# random test images. Needs $work (a scratch directory whose `pids` file the caller's
# trap kills), docker-registry, skopeo, curl and python3.

# Starts a registry on a free 127.0.0.1 port; prints host:port. Requests are logged to
# $work/log-PORT (the caller counts them).
start_registry() {
  local port; port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  printf 'version: 0.1\nlog: {level: info, accesslog: {disabled: false}}\nstorage: {filesystem: {rootdirectory: %s/data-%s}}\nhttp: {addr: "127.0.0.1:%s"}\n' "$work" "$port" "$port" > "$work/config-$port.yml"
  docker-registry serve "$work/config-$port.yml" > "$work/log-$port" 2>&1 &
  echo $! >> "$work/pids"
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/v2/" >/dev/null && break; sleep 0.05; done
  echo "127.0.0.1:$port"
}

# push_random_image DEST LAYERS MB: an image of LAYERS random layers of MB megabytes,
# built as an OCI layout and copied to docker://DEST.
push_random_image() {
  local dest=$1 layers=$2 mb=$3 layout d s c cs m ms i
  layout=$(mktemp -d "$work/layout.XXXX"); mkdir -p "$layout/blobs/sha256"
  blob() { local d; d=$(sha256sum "$1" | cut -d' ' -f1); mv "$1" "$layout/blobs/sha256/$d"; echo "$d $(stat -c %s "$layout/blobs/sha256/$d")"; }
  local descriptors=() diffs=()
  for i in $(seq 1 "$layers"); do
    head -c "$((mb * 1000000))" /dev/urandom > "$work/layer"
    read -r d s < <(blob "$work/layer")
    descriptors+=("{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\",\"digest\":\"sha256:$d\",\"size\":$s}"); diffs+=("\"sha256:$d\"")
  done
  printf '{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[%s]}}' "$(IFS=,; echo "${diffs[*]}")" > "$work/config.json"; read -r c cs < <(blob "$work/config.json")
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[%s]}' "$c" "$cs" "$(IFS=,; echo "${descriptors[*]}")" > "$work/manifest.json"; read -r m ms < <(blob "$work/manifest.json")
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"org.opencontainers.image.ref.name":"t"}}]}' "$m" "$ms" > "$layout/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' > "$layout/oci-layout"
  skopeo copy --quiet --insecure-policy --dest-tls-verify=false "oci:$layout:t" "docker://$dest"
}
