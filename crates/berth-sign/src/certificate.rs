//! Certificate-based signatures (keyless-style): the signing key is a
//! certificate's, which must chain to the policy's roots, be valid, name the
//! policy's identity among its subject alternative names and its OIDC issuer in
//! Fulcio's extension. Without a transparency-log entry there is no signing
//! time, so validity is judged now (a test CA's or a long-lived certificate's).

use std::time::{SystemTime, UNIX_EPOCH};

use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::FromDer;
use x509_parser::time::ASN1Time;

use crate::PublicKey;

/// Fulcio's OIDC issuer extension (a DER UTF8String).
const ISSUER_V2: &str = "1.3.6.1.4.1.57264.1.8";
/// Its first form (the raw text).
const ISSUER_V1: &str = "1.3.6.1.4.1.57264.1.1";
/// Certificates followed from the leaf to a root at most.
const MAX_DEPTH: usize = 5;

/// Why a certificate does not vouch for a signature.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CertificateError {
    /// Not a PEM or DER certificate.
    #[error("its certificate does not parse")]
    Malformed,
    /// No path to the roots.
    #[error("its certificate does not chain to the policy's roots")]
    Untrusted,
    /// Outside its validity.
    #[error("its certificate (or one above it) is not valid now")]
    Expired,
    /// Another identity.
    #[error("its certificate is for {found}, not {wanted}")]
    OtherIdentity {
        /// The identity asked for.
        wanted: String,
        /// What the certificate names.
        found: String,
    },
    /// Another issuer.
    #[error("its certificate records OIDC issuer {found}, not {wanted}")]
    OtherIssuer {
        /// The issuer asked for.
        wanted: String,
        /// What the certificate records (`none` without the extension).
        found: String,
    },
}

/// The DER certificates of a PEM text (roots, or a chain).
pub fn certificates_from_pem(text: &[u8]) -> Vec<Vec<u8>> {
    x509_parser::pem::Pem::iter_from_buffer(text)
        .filter_map(Result::ok)
        .filter(|pem| pem.label == "CERTIFICATE")
        .map(|pem| pem.contents)
        .collect()
}

/// The signing key of `leaf` (DER) once it is trusted: chained through `chain`
/// (DER, any order) to one of `roots` (DER), valid now, for `identity` from `issuer`.
pub fn trusted_key(
    leaf: &[u8],
    chain: &[Vec<u8>],
    roots: &[Vec<u8>],
    identity: &str,
    issuer: &str,
) -> Result<PublicKey, CertificateError> {
    let now = ASN1Time::from_timestamp(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX)),
    )
    .map_err(|_| CertificateError::Expired)?;
    let certificate = parse(leaf)?;
    check_identity(&certificate, identity, issuer)?;
    let key = PublicKey::from_spki_der(certificate.public_key().raw)
        .map_err(|_| CertificateError::Malformed)?;
    let mut current = certificate;
    for _ in 0..MAX_DEPTH {
        if !current.validity().is_valid_at(now) {
            return Err(CertificateError::Expired);
        }
        let signed_by = |candidate: &X509Certificate<'_>| {
            candidate.subject().as_raw() == current.issuer().as_raw()
                && PublicKey::from_spki_der(candidate.public_key().raw).is_ok_and(|k| {
                    k.verifies_as(
                        &current.signature_algorithm.algorithm,
                        current.tbs_certificate.as_ref(),
                        &current.signature_value.data,
                    )
                })
        };
        for root in roots {
            let root = parse(root)?;
            if signed_by(&root) {
                return if root.validity().is_valid_at(now) {
                    Ok(key)
                } else {
                    Err(CertificateError::Expired)
                };
            }
        }
        let mut next = None;
        for intermediate in chain {
            let candidate = parse(intermediate)?;
            if candidate.is_ca() && signed_by(&candidate) {
                next = Some(candidate);
                break;
            }
        }
        current = next.ok_or(CertificateError::Untrusted)?;
    }
    Err(CertificateError::Untrusted)
}

fn parse(der: &[u8]) -> Result<X509Certificate<'_>, CertificateError> {
    X509Certificate::from_der(der)
        .map(|(_, c)| c)
        .map_err(|_| CertificateError::Malformed)
}

/// Whether the leaf names `identity` (a URI or an e-mail subject alternative name) and records `issuer`.
fn check_identity(
    certificate: &X509Certificate<'_>,
    identity: &str,
    issuer: &str,
) -> Result<(), CertificateError> {
    let names: Vec<String> = (certificate
        .subject_alternative_name()
        .ok()
        .flatten()
        .into_iter())
    .flat_map(|san| san.value.general_names.iter())
    .filter_map(|name| match name {
        GeneralName::URI(uri) => Some(uri.to_string()),
        GeneralName::RFC822Name(mail) => Some(mail.to_string()),
        _ => None,
    })
    .collect();
    if !names.iter().any(|n| n == identity) {
        return Err(CertificateError::OtherIdentity {
            wanted: identity.to_string(),
            found: if names.is_empty() {
                "no identity".into()
            } else {
                names.join(", ")
            },
        });
    }
    let recorded = certificate.iter_extensions().find_map(|extension| {
        match extension.oid.to_id_string().as_str() {
            ISSUER_V2 => utf8_string(extension.value),
            ISSUER_V1 => std::str::from_utf8(extension.value)
                .ok()
                .map(str::to_string),
            _ => None,
        }
    });
    if recorded.as_deref() != Some(issuer) {
        return Err(CertificateError::OtherIssuer {
            wanted: issuer.to_string(),
            found: recorded.unwrap_or_else(|| "none".into()),
        });
    }
    Ok(())
}

/// The text of a DER UTF8String (tag 12, a short or one-byte long length).
fn utf8_string(der: &[u8]) -> Option<String> {
    let (&tag, rest) = der.split_first()?;
    if tag != 0x0c {
        return None;
    }
    let (&first, rest) = rest.split_first()?;
    let (length, body) = match first {
        n if n < 0x80 => (usize::from(n), rest),
        0x81 => (usize::from(*rest.first()?), &rest[1..]),
        _ => return None,
    };
    std::str::from_utf8(body.get(..length)?)
        .ok()
        .map(str::to_string)
}
