//! Signing with a cosign private key (`berth push --sign-key`): the PEM
//! `cosign generate-key-pair` writes (`ENCRYPTED SIGSTORE PRIVATE KEY`, or the
//! older `ENCRYPTED COSIGN PRIVATE KEY`): a JSON envelope whose ciphertext is
//! NaCl's secretbox of a PKCS#8 key under a key derived with scrypt from the
//! password. A plain PKCS#8 `PRIVATE KEY` is read too.

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{
    EcdsaKeyPair, ECDSA_P256_SHA256_ASN1_SIGNING, ECDSA_P384_SHA384_ASN1_SIGNING,
};
use base64::Engine as _;
use crypto_secretbox::aead::{Aead, KeyInit};
use crypto_secretbox::{Nonce, XSalsa20Poly1305};

/// The largest scrypt cost accepted (cosign writes 2^15 or 2^16): a key file must
/// not make berth spend minutes or gigabytes.
const MAX_LOG_N: u8 = 20;

/// Why a private key cannot be used. No variant carries the password or key bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SigningKeyError {
    /// No PEM block of a private key.
    #[error("it holds no cosign private key (`ENCRYPTED SIGSTORE PRIVATE KEY` PEM, as `cosign generate-key-pair` writes) nor a PKCS#8 `PRIVATE KEY`")]
    NotPem,
    /// The envelope is not cosign's.
    #[error("its encrypted key is not in cosign's format ({0})")]
    Envelope(&'static str),
    /// The password does not open it.
    #[error("the password does not decrypt it (COSIGN_PASSWORD)")]
    Password,
    /// Not an ECDSA P-256/P-384 key.
    #[error("it is not an ECDSA P-256 or P-384 key, which berth signs with")]
    Unsupported,
}

/// A private key that signs as cosign does (ECDSA, ASN.1 DER signatures).
pub struct PrivateKey {
    pair: EcdsaKeyPair,
}

impl std::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PrivateKey(…)") // never the key
    }
}

impl PrivateKey {
    /// The key in `text`, decrypted with `password` when it is cosign's encrypted format.
    pub fn from_pem(text: &[u8], password: &[u8]) -> Result<PrivateKey, SigningKeyError> {
        let pem = x509_parser::pem::Pem::iter_from_buffer(text)
            .filter_map(Result::ok)
            .find(|p| p.label.ends_with("PRIVATE KEY"))
            .ok_or(SigningKeyError::NotPem)?;
        let pkcs8 = match pem.label.as_str() {
            "ENCRYPTED SIGSTORE PRIVATE KEY" | "ENCRYPTED COSIGN PRIVATE KEY" => {
                decrypt(&pem.contents, password)?
            }
            "PRIVATE KEY" => pem.contents,
            _ => return Err(SigningKeyError::NotPem),
        };
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &pkcs8)
            .or_else(|_| EcdsaKeyPair::from_pkcs8(&ECDSA_P384_SHA384_ASN1_SIGNING, &pkcs8))
            .map_err(|_| SigningKeyError::Unsupported)?;
        Ok(PrivateKey { pair })
    }

    /// The signature of `message` (ASN.1 DER), base64 as cosign's annotation holds it.
    pub fn sign_base64(&self, message: &[u8]) -> Result<String, SigningKeyError> {
        let signature = self
            .pair
            .sign(&SystemRandom::new(), message)
            .map_err(|_| SigningKeyError::Unsupported)?;
        Ok(base64::engine::general_purpose::STANDARD.encode(signature.as_ref()))
    }
}

/// cosign's envelope opened: the PKCS#8 key inside.
fn decrypt(envelope: &[u8], password: &[u8]) -> Result<Vec<u8>, SigningKeyError> {
    let value: serde_json::Value =
        serde_json::from_slice(envelope).map_err(|_| SigningKeyError::Envelope("not JSON"))?;
    let b64 = |v: &serde_json::Value, what: &'static str| {
        v.as_str()
            .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
            .ok_or(SigningKeyError::Envelope(what))
    };
    if value["kdf"]["name"].as_str() != Some("scrypt")
        || value["cipher"]["name"].as_str() != Some("nacl/secretbox")
    {
        return Err(SigningKeyError::Envelope("not scrypt and nacl/secretbox"));
    }
    let params = &value["kdf"]["params"];
    let n = params["N"]
        .as_u64()
        .ok_or(SigningKeyError::Envelope("no scrypt N"))?;
    let log_n =
        u8::try_from(n.trailing_zeros()).map_err(|_| SigningKeyError::Envelope("scrypt N"))?;
    if !n.is_power_of_two() || log_n > MAX_LOG_N {
        return Err(SigningKeyError::Envelope(
            "scrypt N is not a power of two up to 2^20",
        ));
    }
    let r = params["r"]
        .as_u64()
        .and_then(|r| u32::try_from(r).ok())
        .ok_or(SigningKeyError::Envelope("scrypt r"))?;
    let p = params["p"]
        .as_u64()
        .and_then(|p| u32::try_from(p).ok())
        .ok_or(SigningKeyError::Envelope("scrypt p"))?;
    let params = scrypt::Params::new(log_n, r, p, 32)
        .map_err(|_| SigningKeyError::Envelope("scrypt parameters"))?;
    let salt = b64(&value["kdf"]["salt"], "no salt")?;
    let mut key = [0u8; 32];
    scrypt::scrypt(password, &salt, &params, &mut key)
        .map_err(|_| SigningKeyError::Envelope("scrypt"))?;
    let nonce = b64(&value["cipher"]["nonce"], "no nonce")?;
    if nonce.len() != 24 {
        return Err(SigningKeyError::Envelope("a nonce is 24 bytes"));
    }
    let ciphertext = b64(&value["ciphertext"], "no ciphertext")?;
    let cipher = XSalsa20Poly1305::new(&key.into());
    cipher
        .decrypt(Nonce::from_slice(&nonce), ciphertext.as_slice())
        .map_err(|_| SigningKeyError::Password)
}
