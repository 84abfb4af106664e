//! An image's OCI 1.1 referrers (#51): the artifacts whose manifest names the
//! image as its `subject` — cosign 3's signature bundles among them. Asked of the
//! referrers API (`GET /v2/<name>/referrers/<digest>`); a registry without it (404)
//! is read through the referrers tag scheme, the index tagged `sha256-<hex>`
//! that clients keep up to date there.

use berth_ref::{Digest, Reference, Tag};
use serde_json::Value;

use super::Registry;
use crate::RegistryError;

/// Referrers read per image at most.
pub(crate) const MAX_REFERRERS: usize = 64;
/// Layers read per referrer at most.
const MAX_LAYERS: usize = 8;
/// OCI's empty config. go-containerregistry's registry lists a referrer's config
/// media type as its `artifactType`, which for cosign 3's bundles is this, not the
/// bundle type the manifest declares; such a referrer is judged by its manifest.
const EMPTY_CONFIG: &str = "application/vnd.oci.empty.v1+json";

/// One referrer: its manifest's digest and its layers' bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Referrer {
    /// The referrer manifest's digest.
    pub manifest: Digest,
    /// Its layers, as `(media type, bytes)`.
    pub layers: Vec<(String, Vec<u8>)>,
}

impl Registry {
    /// The referrers of `digest` in `image`'s repository whose `artifactType` is
    /// `artifact_type`, each with its layers.
    pub async fn referrers(
        &self,
        image: &Reference,
        digest: &Digest,
        artifact_type: &str,
    ) -> Result<Vec<Referrer>, RegistryError> {
        let descriptors = match self.referrers_listed(image, digest).await? {
            Some(listed) => listed,
            // No referrers API: the tag scheme's index, or none at all.
            None => match self
                .manifest(&image.with_tag(fallback_tag(image, digest)?))
                .await
            {
                Ok((bytes, _)) => index_descriptors(image, &bytes)?,
                Err(RegistryError::NotFound { .. }) => return Ok(Vec::new()),
                Err(e) => return Err(e),
            },
        };
        let mut out = Vec::new();
        for descriptor in descriptors
            .iter()
            .filter(|d| may_be(d, artifact_type))
            .take(MAX_REFERRERS)
        {
            let Some(manifest) = descriptor_digest(descriptor) else {
                continue;
            };
            let at = image.without_digest().with_digest(manifest.clone());
            let (bytes, _) = self.manifest(&at).await?;
            let value: Value = serde_json::from_slice(&bytes)
                .map_err(|_| self.other(&at, "a referrer's manifest is not JSON".into()))?;
            if declared_type(&value) != Some(artifact_type) {
                continue;
            }
            let mut layers = Vec::new();
            for layer in (value["layers"].as_array().into_iter())
                .flatten()
                .take(MAX_LAYERS)
            {
                let Some(layer_digest) = descriptor_digest(layer) else {
                    continue;
                };
                let media_type = layer["mediaType"].as_str().unwrap_or_default().to_string();
                layers.push((media_type, self.small_blob(&at, &layer_digest).await?));
            }
            out.push(Referrer { manifest, layers });
        }
        Ok(out)
    }

    /// The descriptors the referrers API lists for `digest` in `image`'s
    /// repository; `None` where the registry has no such API (404: asked once
    /// per registry).
    pub async fn referrers_listed(
        &self,
        image: &Reference,
        digest: &Digest,
    ) -> Result<Option<Vec<Value>>, RegistryError> {
        let host = image.domain();
        if berth_io::locked(&self.without_referrers).contains(host) {
            return Ok(None);
        }
        match self.referrers_api(image, digest).await {
            Ok(bytes) => index_descriptors(image, &bytes).map(Some),
            Err(RegistryError::NotFound { .. }) => {
                berth_io::locked(&self.without_referrers).insert(host.to_string());
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// The referrers API's index for `digest` (404 where the registry has no such API).
    async fn referrers_api(
        &self,
        image: &Reference,
        digest: &Digest,
    ) -> Result<Vec<u8>, RegistryError> {
        let index = Some("application/vnd.oci.image.index.v1+json");
        (self.get_bounded(image, &format!("referrers/{digest}"), index)).await
    }
}

/// The referrers tag scheme's tag for `digest`: `sha256-<hex>`.
pub(crate) fn fallback_tag(image: &Reference, digest: &Digest) -> Result<Tag, RegistryError> {
    let tag = format!("{}-{}", digest.algorithm().as_str(), digest.hex());
    Tag::parse(&tag).map_err(|e| RegistryError::other(image, e.to_string()))
}

/// The `manifests` of an index's bytes.
pub(crate) fn index_descriptors(
    image: &Reference,
    bytes: &[u8],
) -> Result<Vec<Value>, RegistryError> {
    let index: Value = serde_json::from_slice(bytes)
        .map_err(|_| RegistryError::other(image, "its referrers index is not JSON"))?;
    Ok(match index.get("manifests") {
        Some(Value::Array(descriptors)) => descriptors.clone(),
        _ => Vec::new(),
    })
}

/// A descriptor's digest, when it has a usable one.
pub(crate) fn descriptor_digest(descriptor: &Value) -> Option<Digest> {
    Digest::parse(descriptor["digest"].as_str()?).ok()
}

/// Whether a listed referrer may be of `artifact_type`: it says so, or says
/// nothing better than the empty config (then its manifest decides).
fn may_be(descriptor: &Value, artifact_type: &str) -> bool {
    match descriptor["artifactType"].as_str() {
        None | Some(EMPTY_CONFIG) => true,
        Some(listed) => listed == artifact_type,
    }
}

/// The artifact type a manifest declares: its `artifactType`, else its config's
/// media type (the OCI image spec's rule for the referrers API).
pub(crate) fn declared_type(manifest: &Value) -> Option<&str> {
    manifest["artifactType"]
        .as_str()
        .or_else(|| manifest["config"]["mediaType"].as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const BUNDLE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";

    #[test]
    fn a_referrer_listed_by_its_config_type_is_judged_by_its_manifest() {
        let cases = [
            (json!({"artifactType": BUNDLE}), true),
            (json!({"artifactType": EMPTY_CONFIG}), true),
            (json!({}), true),
            (json!({"artifactType": "application/spdx+json"}), false),
        ];
        for (descriptor, expected) in cases {
            assert_eq!(may_be(&descriptor, BUNDLE), expected, "{descriptor}");
        }
        let declared = [
            (
                json!({"artifactType": BUNDLE, "config": {"mediaType": EMPTY_CONFIG}}),
                Some(BUNDLE),
            ),
            (
                json!({"config": {"mediaType": "application/vnd.cncf.helm.config.v1+json"}}),
                Some("application/vnd.cncf.helm.config.v1+json"),
            ),
            (json!({}), None),
        ];
        for (manifest, expected) in declared {
            assert_eq!(declared_type(&manifest), expected, "{manifest}");
        }
    }
}
