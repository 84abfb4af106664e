//! Carrying referrers a registry lists only through the OCI 1.1 referrers API
//! (cosign 3's bundles and attestations, oras' artifacts on a registry that has
//! the API): the tag copy of [`super::copy_attached`] never sees them.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use berth_ref::{Digest, Reference};
use serde_json::{json, Value};

use super::{copy_fetched, media_type, Ends, Progress, Stats};
use crate::client::referrers::{
    declared_type, descriptor_digest, fallback_tag, index_descriptors, MAX_REFERRERS,
};
use crate::{Registry, RegistryError};

/// An OCI image index's media type.
const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";

/// Copies the referrers `ends.source`'s API lists for `digest`, except those the
/// tag scheme's index carried already (`indexed`), each by its digest; returns
/// how many. A target with the API lists them by their `subject`; a target without
/// it gets them in its referrers tag index, as a client writing there would.
pub(super) async fn copy_listed(
    registry: &Arc<Registry>,
    ends: Ends<'_>,
    digest: &Digest,
    indexed: &[Digest],
    stats: &Arc<Stats>,
    progress: &Arc<dyn Progress>,
) -> Result<usize, RegistryError> {
    let Some(listed) = registry.referrers_listed(ends.source, digest).await? else {
        return Ok(0);
    };
    let mut carried = Vec::new();
    for referrer in (listed.iter())
        .filter_map(descriptor_digest)
        .filter(|d| !indexed.contains(d))
        .take(MAX_REFERRERS)
    {
        if carried
            .iter()
            .any(|c: &Value| c["digest"] == referrer.to_string())
        {
            continue;
        }
        let from = ends.source.without_digest().with_digest(referrer.clone());
        let to = ends.target.without_digest().with_digest(referrer.clone());
        let (bytes, _) = registry.manifest(&from).await?;
        let descriptor = descriptor_of(&bytes, &referrer);
        copy_fetched(registry, &from, &to, (&bytes, referrer), stats, progress).await?;
        carried.push(descriptor);
    }
    if !carried.is_empty()
        && registry
            .referrers_listed(ends.target, digest)
            .await?
            .is_none()
    {
        index_by_tag(registry, ends.target, digest, &carried).await?;
        stats.manifests.fetch_add(1, Ordering::Relaxed);
    }
    Ok(carried.len())
}

/// Adds `carried` to `target`'s referrers tag index for `digest` (made when
/// there is none), keeping what it lists already.
async fn index_by_tag(
    registry: &Registry,
    target: &Reference,
    digest: &Digest,
    carried: &[Value],
) -> Result<(), RegistryError> {
    let tagged = target.with_tag(fallback_tag(target, digest)?);
    let mut manifests = match registry.manifest(&tagged).await {
        Ok((bytes, _)) => index_descriptors(target, &bytes)?,
        Err(RegistryError::NotFound { .. }) => Vec::new(),
        Err(e) => return Err(e),
    };
    for descriptor in carried {
        if !manifests
            .iter()
            .any(|m| m["digest"] == descriptor["digest"])
        {
            manifests.push(descriptor.clone());
        }
    }
    let index = json!({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": manifests});
    let bytes = serde_json::to_vec(&index)
        .map_err(|e| RegistryError::other(target, format!("its referrers index: {e}")))?;
    registry.push_manifest(&tagged, &bytes, OCI_INDEX).await
}

/// The descriptor the referrers API would list for a manifest: its media type,
/// digest and size, the artifact type it declares and its annotations.
fn descriptor_of(bytes: &[u8], digest: &Digest) -> Value {
    let manifest: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
    let mut descriptor = json!({
        "mediaType": media_type(bytes),
        "digest": digest.to_string(),
        "size": bytes.len(),
    });
    if let Some(artifact_type) = declared_type(&manifest) {
        descriptor["artifactType"] = artifact_type.into();
    }
    if let Some(annotations) = manifest.get("annotations") {
        descriptor["annotations"] = annotations.clone();
    }
    descriptor
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_referrer_is_indexed_with_the_type_its_manifest_declares() {
        let manifest = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"application/vnd.dev.sigstore.bundle.v0.3+json","config":{"mediaType":"application/vnd.oci.empty.v1+json"},"annotations":{"a":"b"}}"#;
        let digest = Digest::parse(&format!("sha256:{}", "ab".repeat(32))).unwrap();
        let descriptor = descriptor_of(manifest, &digest);
        assert_eq!(
            descriptor,
            json!({
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": digest.to_string(),
                "size": manifest.len(),
                "artifactType": "application/vnd.dev.sigstore.bundle.v0.3+json",
                "annotations": {"a": "b"},
            })
        );
    }
}
