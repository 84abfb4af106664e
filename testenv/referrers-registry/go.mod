// Builds `referrers-registry` (scripts/testenv), for the signature tests (#51):
// go-containerregistry's registry with the OCI 1.1 referrers API on. A module of
// its own, keyed apart like cosign, so it pins only what that registry needs.
module berth.dev/testenv/referrers-registry

go 1.26.0

require github.com/google/go-containerregistry v0.21.7
