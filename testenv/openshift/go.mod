// OpenShift's API types, for their CRD manifests only: scripts/testenv crds
// copies the ImageDigestMirrorSet and ImageTagMirrorSet CRDs out of this module
// so the tests validate `berth mirror`'s objects against the real schemas.
// Nothing is built from it. The version is the one the OGX operator uses.
module berth.dev/testenv/openshift

go 1.26.0

require github.com/openshift/api v0.0.0-20260610192510-1b2a074e0bd6 // indirect
