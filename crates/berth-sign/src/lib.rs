//! Image signatures checked over bytes (#51): a cosign public key read from its
//! PEM, a signature verified over a payload, and cosign's simple-signing
//! payload checked against the digest and repository it must name. The
//! registry reads and the policy live elsewhere; this decides.
//!
//! Why not the `sigstore` crate: it is labelled experimental and brings an
//! async client stack; verifying cosign's tag scheme needs only a signature
//! check over the payload, which AWS's libcrypto binding (already built for
//! rustls) does for every key type cosign writes.

mod bundle;
mod certificate;
mod key;
mod log;
mod payload;
mod signing;

pub use bundle::{
    bundle_certificates, trusted_root_certificates, verify_bundle, BundleError, BUNDLE_TYPE,
};
pub use certificate::{certificates_from_pem, trusted_key, CertificateError};
pub use key::{KeyError, PublicKey};
pub use log::{trusted_root_logs, verify_log_entry, LogError, TrustedLog};
pub use payload::{check_payload, expected_payloads, PayloadError, SIMPLE_SIGNING};
pub use signing::{PrivateKey, SigningKeyError};

/// Why one signature of the tag scheme does not vouch for an image.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayerError {
    /// No signature, or not base64.
    #[error("a signature layer carries no base64 signature")]
    NoSignature,
    /// Not by this key.
    #[error("a signature is not by the key")]
    OtherKey,
    /// By the key, over a payload naming another image.
    #[error(transparent)]
    Payload(#[from] PayloadError),
}

/// Whether `signature` (base64, as cosign's annotation holds it) is `key`'s over
/// `payload`, and `payload` names `digest` of `image`'s repository.
pub fn verify_layer(
    key: &PublicKey,
    payload: &[u8],
    signature: Option<&str>,
    image: &berth_ref::Reference,
    digest: &berth_ref::Digest,
) -> Result<(), LayerError> {
    use base64::Engine as _;
    let signature = signature
        .and_then(|s| {
            base64::engine::general_purpose::STANDARD
                .decode(s.trim())
                .ok()
        })
        .ok_or(LayerError::NoSignature)?;
    if !key.verifies(payload, &signature) {
        return Err(LayerError::OtherKey);
    }
    Ok(check_payload(payload, image, digest)?)
}
#[cfg(test)]
mod tests;
