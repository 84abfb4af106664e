//! cosign's tag scheme, read (#51): an image's signatures are an OCI manifest
//! tagged `sha256-<hex>.sig` in its repository, one layer per signature, each
//! layer a simple-signing payload with the signature in its
//! `dev.cosignproject.cosign/signature` annotation. Read here; verified by the
//! caller (berth-sign), so the registry client holds no trust decisions.

use berth_ref::{Digest, Reference, Tag};

use super::Registry;
use crate::RegistryError;

/// The annotation cosign writes a signature in (base64).
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// Signatures read per image at most: a signature manifest with more is refused.
const MAX_SIGNATURES: usize = 64;

/// One signature of the tag scheme.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// The payload as signed (the layer's bytes).
    pub payload: Vec<u8>,
    /// The layer's media type.
    pub media_type: String,
    /// The signature, base64 as cosign writes it (`None` when the annotation is missing).
    pub signature: Option<String>,
    /// The signing certificate (PEM), for a certificate-based signature.
    pub certificate: Option<String>,
    /// The certificates between it and a root (PEM).
    pub chain: Option<String>,
}

/// An image's signatures under cosign's tag scheme.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signatures {
    /// The signature manifest's digest.
    pub manifest: Digest,
    /// Its signatures, in layer order.
    pub layers: Vec<Signature>,
}

impl Registry {
    /// The signatures cosign's tag scheme holds for `digest` in `image`'s
    /// repository; `None` when there are none. A payload among `known` whose
    /// digest a layer names is not fetched: its bytes are what the layer holds
    /// (the digest proves it), which saves a request per image when the caller
    /// knows the payload cosign writes.
    pub async fn cosign_signatures(
        &self,
        image: &Reference,
        digest: &Digest,
        known: &[Vec<u8>],
    ) -> Result<Option<Signatures>, RegistryError> {
        let tag = format!("{}-{}.sig", digest.algorithm().as_str(), digest.hex());
        let tag = Tag::parse(&tag).map_err(|e| self.other(image, e.to_string()))?;
        let at = image.with_tag(tag);
        let (bytes, manifest) = match self.manifest(&at).await {
            Ok(found) => found,
            Err(RegistryError::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let value: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|_| self.other(&at, "its signature manifest is not JSON".into()))?;
        let layers = value["layers"].as_array().cloned().unwrap_or_default();
        if layers.len() > MAX_SIGNATURES {
            return Err(self.other(
                &at,
                format!("its signature manifest lists {} signatures, more than berth reads ({MAX_SIGNATURES})", layers.len()),
            ));
        }
        let mut out = Vec::new();
        for layer in layers {
            let Some(layer_digest) = layer["digest"].as_str().and_then(|d| Digest::parse(d).ok())
            else {
                continue; // a layer without a digest holds nothing to check
            };
            let held = known.iter().find(|k| super::digest_of(k) == layer_digest);
            let payload = match held {
                Some(bytes) => bytes.clone(),
                None => self.small_blob(&at, &layer_digest).await?,
            };
            out.push(Signature {
                payload,
                media_type: layer["mediaType"].as_str().unwrap_or_default().to_string(),
                signature: layer["annotations"][SIGNATURE_ANNOTATION]
                    .as_str()
                    .map(str::to_string),
                certificate: layer["annotations"]["dev.sigstore.cosign/certificate"]
                    .as_str()
                    .map(str::to_string),
                chain: layer["annotations"]["dev.sigstore.cosign/chain"]
                    .as_str()
                    .map(str::to_string),
            });
        }
        Ok(Some(Signatures {
            manifest,
            layers: out,
        }))
    }
}

impl Registry {
    /// Pushes a signature of `digest` into `image`'s repository under cosign's tag
    /// scheme (`sha256-<hex>.sig`): `payload` as its one layer, `signature`
    /// (base64) in the layer's annotation, a config as cosign writes one. Returns
    /// the signature manifest's digest. An earlier signature of the digest is replaced.
    pub async fn push_cosign_signature(
        &self,
        image: &Reference,
        digest: &Digest,
        payload: &[u8],
        signature: &str,
    ) -> Result<Digest, RegistryError> {
        let tag = format!("{}-{}.sig", digest.algorithm().as_str(), digest.hex());
        let tag = Tag::parse(&tag).map_err(|e| self.other(image, e.to_string()))?;
        let at = image.with_tag(tag);
        let payload_digest = super::digest_of(payload);
        let config = serde_json::to_vec(&serde_json::json!({
            "architecture": "",
            "created": "0001-01-01T00:00:00Z",
            "history": [{"created": "0001-01-01T00:00:00Z"}],
            "os": "",
            "rootfs": {"type": "layers", "diff_ids": [payload_digest.to_string()]},
            "config": {},
        }))
        .map_err(|e| self.other(&at, e.to_string()))?;
        let config_digest = super::digest_of(&config);
        let manifest = serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "size": config.len(), "digest": config_digest.to_string()},
            "layers": [{
                "mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
                "size": payload.len(),
                "digest": payload_digest.to_string(),
                "annotations": {SIGNATURE_ANNOTATION: signature},
            }],
        }))
        .map_err(|e| self.other(&at, e.to_string()))?;
        self.push_blob(&at, &config, &config_digest.to_string())
            .await?;
        self.push_blob(&at, payload, &payload_digest.to_string())
            .await?;
        self.push_manifest(&at, &manifest, "application/vnd.oci.image.manifest.v1+json")
            .await?;
        Ok(super::digest_of(&manifest))
    }
}
