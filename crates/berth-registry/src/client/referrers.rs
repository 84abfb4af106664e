//! An image's OCI 1.1 referrers (#51): the artifacts whose manifest names the
//! image as its `subject` — cosign 3's signature bundles among them. Asked of the
//! referrers API (`GET /v2/<name>/referrers/<digest>`); a registry without it (404)
//! is read through the referrers tag scheme, the index tagged `sha256-<hex>`
//! that clients keep up to date there.

use berth_ref::{Digest, Reference, Tag};
use oci_client::RegistryOperation;
use reqwest::header::ACCEPT;
use reqwest::StatusCode;

use super::Registry;
use crate::RegistryError;

/// Referrers read per image at most.
const MAX_REFERRERS: usize = 64;
/// Layers read per referrer at most.
const MAX_LAYERS: usize = 8;

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
        let listed = match self.referrers_api(image, digest).await {
            Ok(index) => index,
            // No referrers API: the tag scheme's index, or none at all.
            Err(RegistryError::NotFound { .. }) => {
                let tag = format!("{}-{}", digest.algorithm().as_str(), digest.hex());
                let tag = Tag::parse(&tag).map_err(|e| self.other(image, e.to_string()))?;
                match self.manifest(&image.with_tag(tag)).await {
                    Ok((bytes, _)) => bytes,
                    Err(RegistryError::NotFound { .. }) => return Ok(Vec::new()),
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        };
        let index: serde_json::Value = serde_json::from_slice(&listed)
            .map_err(|_| self.other(image, "its referrers index is not JSON".into()))?;
        let descriptors = index["manifests"].as_array().cloned().unwrap_or_default();
        let mut out = Vec::new();
        for descriptor in descriptors
            .iter()
            .filter(|d| d["artifactType"].as_str() == Some(artifact_type))
            .take(MAX_REFERRERS)
        {
            let Some(manifest) = descriptor["digest"]
                .as_str()
                .and_then(|d| Digest::parse(d).ok())
            else {
                continue;
            };
            let at = image.without_digest().with_digest(manifest.clone());
            let (bytes, _) = self.manifest(&at).await?;
            let value: serde_json::Value = serde_json::from_slice(&bytes)
                .map_err(|_| self.other(&at, "a referrer's manifest is not JSON".into()))?;
            let mut layers = Vec::new();
            for layer in value["layers"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .take(MAX_LAYERS)
            {
                let Some(layer_digest) =
                    layer["digest"].as_str().and_then(|d| Digest::parse(d).ok())
                else {
                    continue;
                };
                let media_type = layer["mediaType"].as_str().unwrap_or_default().to_string();
                layers.push((media_type, self.small_blob(&at, &layer_digest).await?));
            }
            out.push(Referrer { manifest, layers });
        }
        Ok(out)
    }

    /// The referrers API's index for `digest` (404 where the registry has no such API).
    async fn referrers_api(
        &self,
        image: &Reference,
        digest: &Digest,
    ) -> Result<Vec<u8>, RegistryError> {
        let url = self.url(image, &format!("referrers/{digest}"));
        self.retry(image, || async {
            let response = self
                .send(image, RegistryOperation::Pull, |c| {
                    c.get(&url)
                        .header(ACCEPT, "application/vnd.oci.image.index.v1+json")
                })
                .await?;
            let response = self.expect(image, response, &[StatusCode::OK]).await?;
            self.read_manifest(image, response).await
        })
        .await
    }
}
