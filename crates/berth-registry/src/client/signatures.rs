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
