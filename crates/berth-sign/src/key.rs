//! A cosign public key: the PEM `cosign generate-key-pair` writes (a
//! SubjectPublicKeyInfo: ECDSA P-256 by default, P-384, Ed25519 or RSA).

use aws_lc_rs::signature::{self, UnparsedPublicKey, VerificationAlgorithm};
use berth_ref::Digest;
use sha2::{Digest as _, Sha256};
use x509_parser::oid_registry::{
    OID_EC_P256, OID_KEY_TYPE_EC_PUBLIC_KEY, OID_NIST_EC_P384, OID_PKCS1_RSAENCRYPTION,
    OID_SIG_ED25519,
};
use x509_parser::prelude::FromDer;
use x509_parser::x509::SubjectPublicKeyInfo;

/// Why a key file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// No `-----BEGIN PUBLIC KEY-----` block.
    #[error("it holds no PEM `PUBLIC KEY` block (a cosign public key is `cosign.pub`, not the private `cosign.key`)")]
    NotPem,
    /// The block is no SubjectPublicKeyInfo.
    #[error("its `PUBLIC KEY` block is not a public key (DER SubjectPublicKeyInfo)")]
    NotKey,
    /// A key type cosign does not write.
    #[error(
        "its key type ({0}) is not one cosign signs with: use ECDSA P-256/P-384, Ed25519 or RSA"
    )]
    Unsupported(String),
}

/// The algorithms a key verifies with, in the order tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    P256,
    P384,
    Ed25519,
    Rsa,
}

/// A public key signatures are verified with.
#[derive(Debug, Clone)]
pub struct PublicKey {
    kind: Kind,
    /// The key itself, as the algorithm takes it (an EC point, a PKCS#1 RSA key, 32 bytes).
    raw: Vec<u8>,
    /// Its DER SubjectPublicKeyInfo.
    spki: Vec<u8>,
    fingerprint: Digest,
}

impl PublicKey {
    /// The key a PEM text holds (the first `PUBLIC KEY` block).
    pub fn from_pem(text: &[u8]) -> Result<PublicKey, KeyError> {
        let der = x509_parser::pem::Pem::iter_from_buffer(text)
            .filter_map(Result::ok)
            .find(|pem| pem.label == "PUBLIC KEY")
            .ok_or(KeyError::NotPem)?
            .contents;
        PublicKey::from_spki_der(&der)
    }

    /// The key a DER SubjectPublicKeyInfo holds (a certificate's, a PEM's).
    pub fn from_spki_der(der: &[u8]) -> Result<PublicKey, KeyError> {
        let (_, spki) = SubjectPublicKeyInfo::from_der(der).map_err(|_| KeyError::NotKey)?;
        let algorithm = &spki.algorithm.algorithm;
        let kind = if *algorithm == OID_KEY_TYPE_EC_PUBLIC_KEY {
            let curve = (spki.algorithm.parameters.as_ref()).and_then(|p| p.as_oid().ok());
            match curve {
                Some(c) if c == OID_EC_P256 => Kind::P256,
                Some(c) if c == OID_NIST_EC_P384 => Kind::P384,
                other => {
                    let named = other.map_or("no named curve".to_string(), |c| c.to_id_string());
                    return Err(KeyError::Unsupported(format!("ECDSA on {named}")));
                }
            }
        } else if *algorithm == OID_SIG_ED25519 {
            Kind::Ed25519
        } else if *algorithm == OID_PKCS1_RSAENCRYPTION {
            Kind::Rsa
        } else {
            return Err(KeyError::Unsupported(algorithm.to_id_string()));
        };
        let fingerprint = Digest::parse(&format!("sha256:{:x}", Sha256::digest(der)))
            .map_err(|_| KeyError::NotKey)?;
        Ok(PublicKey {
            kind,
            raw: spki.subject_public_key.data.to_vec(),
            spki: der.to_vec(),
            fingerprint,
        })
    }

    /// `sha256:` of its SubjectPublicKeyInfo: what berth.lock records.
    pub fn fingerprint(&self) -> &Digest {
        &self.fingerprint
    }

    /// The 4-byte key hash that opens its signatures of a checkpoint by `origin`
    /// (C2SP signed note, as rekor-tiles writes it): SHA-256 of the
    /// SubjectPublicKeyInfo for ECDSA; of the origin, a newline, the signature
    /// type and the key for Ed25519 (type 1) and RSA (type 255 and its name).
    pub(crate) fn note_key_hash(&self, origin: &str) -> [u8; 4] {
        let mut hasher = Sha256::new();
        match self.kind {
            Kind::P256 | Kind::P384 => hasher.update(&self.spki),
            Kind::Ed25519 => {
                hasher.update(origin.as_bytes());
                hasher.update(b"\n\x01");
                hasher.update(&self.raw);
            }
            Kind::Rsa => {
                hasher.update(origin.as_bytes());
                hasher.update(b"\n\xffPKIX-RSA-PKCS#1v1.5");
                hasher.update(&self.spki);
            }
        }
        let hash = hasher.finalize();
        [hash[0], hash[1], hash[2], hash[3]]
    }

    /// Whether `signature` is this key's over `message` (ECDSA: ASN.1 DER, with
    /// SHA-256 on P-256 and SHA-384 on P-384, as cosign signs; RSA: PKCS#1 v1.5
    /// or PSS with SHA-256).
    pub fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        let algorithms: &[&'static dyn VerificationAlgorithm] = match self.kind {
            Kind::P256 => &[&signature::ECDSA_P256_SHA256_ASN1],
            Kind::P384 => &[&signature::ECDSA_P384_SHA384_ASN1],
            Kind::Ed25519 => &[&signature::ED25519],
            Kind::Rsa => &[
                &signature::RSA_PKCS1_2048_8192_SHA256,
                &signature::RSA_PSS_2048_8192_SHA256,
            ],
        };
        algorithms.iter().any(|algorithm| {
            UnparsedPublicKey::new(*algorithm, &self.raw)
                .verify(message, signature)
                .is_ok()
        })
    }

    /// Whether `signature` is this key's over `message` by the certificate
    /// signature algorithm `algorithm` (an X.509 `signatureAlgorithm` OID).
    pub(crate) fn verifies_as(
        &self,
        algorithm: &x509_parser::der_parser::oid::Oid<'_>,
        message: &[u8],
        signature: &[u8],
    ) -> bool {
        let id = algorithm.to_id_string();
        let chosen: Option<&'static dyn VerificationAlgorithm> = match (self.kind, id.as_str()) {
            (Kind::P256, "1.2.840.10045.4.3.2") => Some(&signature::ECDSA_P256_SHA256_ASN1),
            (Kind::P256, "1.2.840.10045.4.3.3") => Some(&signature::ECDSA_P256_SHA384_ASN1),
            (Kind::P384, "1.2.840.10045.4.3.3") => Some(&signature::ECDSA_P384_SHA384_ASN1),
            (Kind::P384, "1.2.840.10045.4.3.2") => Some(&signature::ECDSA_P384_SHA256_ASN1),
            (Kind::Rsa, "1.2.840.113549.1.1.11") => Some(&signature::RSA_PKCS1_2048_8192_SHA256),
            (Kind::Rsa, "1.2.840.113549.1.1.12") => Some(&signature::RSA_PKCS1_2048_8192_SHA384),
            (Kind::Ed25519, "1.3.101.112") => Some(&signature::ED25519),
            _ => None,
        };
        chosen.is_some_and(|algorithm| {
            UnparsedPublicKey::new(algorithm, &self.raw)
                .verify(message, signature)
                .is_ok()
        })
    }
}
