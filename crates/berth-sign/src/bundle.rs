//! cosign 3's signatures: a sigstore bundle (v0.1–v0.3) attached to the image
//! as an OCI 1.1 referrer, holding a DSSE envelope whose in-toto statement names
//! the image's digest as its subject. The signature is over DSSE's
//! pre-authentication encoding of the payload, so the payload's type is signed too.

use base64::Engine as _;
use berth_ref::Digest;

use crate::PublicKey;

/// The artifact type of a sigstore bundle referrer (and its layer's media type).
pub const BUNDLE_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// The predicate of an image signature (an attestation has another).
const SIGNATURE_PREDICATE: &str = "https://sigstore.dev/cosign/sign/v1";

/// Why a bundle does not vouch for an image.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    /// Not a sigstore bundle with a DSSE envelope.
    #[error("a bundle is not a sigstore bundle with a DSSE envelope")]
    Malformed,
    /// A signature over a blob, not an in-toto statement.
    #[error("a bundle holds a message signature (a blob's), not an image's")]
    MessageSignature,
    /// Not by this key.
    #[error("a bundle is not signed by the key")]
    OtherKey,
    /// An attestation, or another predicate: no image signature.
    #[error("a bundle is an attestation ({0}), not a signature")]
    OtherPredicate(String),
    /// Signed, for another digest.
    #[error("a bundle signs another digest than {0}")]
    OtherDigest(String),
}

/// DSSE's pre-authentication encoding of `payload` of `payload_type`.
pub(crate) fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

/// Whether `bundle` (its JSON bytes) is `key`'s signature of `digest`.
pub fn verify_bundle(key: &PublicKey, bundle: &[u8], digest: &Digest) -> Result<(), BundleError> {
    let value: serde_json::Value =
        serde_json::from_slice(bundle).map_err(|_| BundleError::Malformed)?;
    let is_bundle = value["mediaType"]
        .as_str()
        .is_some_and(|t| t.starts_with("application/vnd.dev.sigstore.bundle"));
    if !is_bundle {
        return Err(BundleError::Malformed);
    }
    let envelope = &value["dsseEnvelope"];
    if envelope.is_null() {
        return Err(if value["messageSignature"].is_null() {
            BundleError::Malformed
        } else {
            BundleError::MessageSignature
        });
    }
    let b64 = |v: &serde_json::Value| {
        v.as_str()
            .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
    };
    let payload = b64(&envelope["payload"]).ok_or(BundleError::Malformed)?;
    let payload_type = envelope["payloadType"]
        .as_str()
        .ok_or(BundleError::Malformed)?;
    let message = pae(payload_type, &payload);
    let signatures = envelope["signatures"]
        .as_array()
        .ok_or(BundleError::Malformed)?;
    let signed = signatures
        .iter()
        .filter_map(|s| b64(&s["sig"]))
        .any(|signature| key.verifies(&message, &signature));
    if !signed {
        return Err(BundleError::OtherKey);
    }
    let statement: serde_json::Value =
        serde_json::from_slice(&payload).map_err(|_| BundleError::Malformed)?;
    let predicate = statement["predicateType"].as_str().unwrap_or_default();
    if predicate != SIGNATURE_PREDICATE {
        return Err(BundleError::OtherPredicate(
            predicate.chars().take(200).collect(),
        ));
    }
    let algorithm = digest.algorithm().as_str();
    let names = (statement["subject"].as_array().into_iter().flatten())
        .any(|s| s["digest"][algorithm].as_str() == Some(digest.hex()));
    if !names {
        return Err(BundleError::OtherDigest(digest.to_string()));
    }
    Ok(())
}

/// The signing certificate a bundle carries (DER), and the chain above it: a
/// certificate-based bundle's `verificationMaterial` (v0.3's `certificate`, or the
/// first of an `x509CertificateChain`); `None` for a key's bundle.
pub fn bundle_certificates(bundle: &[u8]) -> Option<(Vec<u8>, Vec<Vec<u8>>)> {
    let value: serde_json::Value = serde_json::from_slice(bundle).ok()?;
    let material = &value["verificationMaterial"];
    let b64 = |v: &serde_json::Value| {
        v["rawBytes"]
            .as_str()
            .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
    };
    if let Some(leaf) = b64(&material["certificate"]) {
        return Some((leaf, Vec::new()));
    }
    let mut chain: Vec<Vec<u8>> = (material["x509CertificateChain"]["certificates"]
        .as_array()?
        .iter())
    .filter_map(b64)
    .collect();
    if chain.is_empty() {
        return None;
    }
    let leaf = chain.remove(0);
    Some((leaf, chain))
}

/// The CA certificates (DER) of sigstore's `trusted_root.json`: every certificate of
/// every `certificateAuthorities` entry's chain.
pub fn trusted_root_certificates(json: &[u8]) -> Option<Vec<Vec<u8>>> {
    let value: serde_json::Value = serde_json::from_slice(json).ok()?;
    let out: Vec<Vec<u8>> = (value["certificateAuthorities"].as_array()?.iter())
        .flat_map(|ca| {
            ca["certChain"]["certificates"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|c| {
            c["rawBytes"]
                .as_str()
                .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
        })
        .collect();
    (!out.is_empty()).then_some(out)
}
