//! PEM trust bundles read and checked: only `CERTIFICATE` blocks that parse as
//! X.509 are kept. Any other block (a private key above all) is an error: a
//! trust bundle must never carry a key. Expired and not-yet-valid certificates
//! are warnings, or errors when strict. The current time is an argument, so
//! results are reproducible. Certificates are de-duplicated by fingerprint and
//! ordered by subject, so the same certificates give the same bytes.

use std::collections::BTreeMap;

use base64::Engine as _;
use sha2::{Digest as _, Sha256};
use x509_parser::pem::Pem;

/// Most bytes of PEM a bundle reads, over all its sources.
pub const MAX_BUNDLE_BYTES: usize = 10 * 1024 * 1024;
/// Most distinct certificates in one bundle.
pub const MAX_CERTIFICATES: usize = 1000;
/// One distinct certificate of a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Certificate {
    /// Its subject, as text (the bundle's order: subject, then fingerprint).
    pub subject: String,
    /// The SHA-256 of its DER, lower hex (duplicates are found by it).
    pub fingerprint: String,
    /// Its DER encoding.
    pub der: Vec<u8>,
}

/// Why a bundle cannot be made from its sources' bytes ([`parse`]); the
/// caller (berth.yaml's bundles, the controller's) says where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PemError {
    /// A source holds something that is not a usable certificate.
    #[error("{source_name}: {problem}")]
    Content {
        /// How the source is named (a file, `configMap/x key ca.crt`, `inline`).
        source_name: String,
        /// Which kind of fault it is (the controller's status reasons follow it).
        fault: PemFault,
        /// What is wrong, and how to fix it.
        problem: String,
    },
    /// A limit was exceeded.
    #[error("{0}")]
    Limit(String),
}

/// What is wrong with a PEM source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PemFault {
    /// A block that is not well-formed PEM.
    Malformed,
    /// A private key: never in a trust bundle.
    PrivateKey,
    /// A PEM block of another type (a CSR, a public key…).
    NotCertificate,
    /// A CERTIFICATE block whose content is not a DER X.509 certificate.
    NotX509,
    /// No certificate at all.
    Empty,
    /// A certificate past its `notAfter` (an error only when strict).
    Expired,
    /// A certificate before its `notBefore` (an error only when strict).
    NotYetValid,
}

/// A certificate past its `notAfter` or before its `notBefore`: a warning (an error
/// when strict), kept as a value so that the caller places it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lapsed {
    /// The source it is in, as named for messages.
    pub source: String,
    /// Its subject.
    pub subject: String,
    /// `expired on …`, `not valid until …`.
    pub problem: String,
}

impl std::fmt::Display for Lapsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "certificate `{}` is {}", self.subject, self.problem)
    }
}

/// A bundle's certificates and what the user should know about them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// The distinct certificates, ordered by subject, then fingerprint.
    pub certificates: Vec<Certificate>,
    /// Duplicates dropped.
    pub duplicates: usize,
    /// Expired or not-yet-valid certificates (errors instead when strict).
    pub warnings: Vec<Lapsed>,
    /// The earliest `notAfter` of the certificates (seconds since the Unix epoch).
    pub first_expiry: Option<i64>,
}

/// The certificates of `(source name, PEM bytes)` pairs at time `now` (seconds
/// since the Unix epoch).
pub fn parse(sources: &[(String, Vec<u8>)], now: i64, strict: bool) -> Result<Parsed, PemError> {
    let total: usize = sources.iter().map(|(_, b)| b.len()).sum();
    if total > MAX_BUNDLE_BYTES {
        return Err(PemError::Limit(format!(
            "the sources hold more than {} MB of PEM; split the bundle",
            MAX_BUNDLE_BYTES >> 20
        )));
    }
    let content = |shown: &str, fault: PemFault, problem: String| PemError::Content {
        source_name: shown.to_string(),
        fault,
        problem,
    };
    let mut by_fingerprint: BTreeMap<String, Certificate> = BTreeMap::new();
    let mut duplicates = 0;
    let mut warnings = Vec::new();
    let mut first_expiry: Option<i64> = None;
    for (shown, bytes) in sources {
        // A BOM (Windows editors write one) is not part of the PEM text.
        let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
        if let Some(problem) = mismatched_block(bytes) {
            return Err(content(shown, PemFault::Malformed, problem));
        }
        let mut found = 0;
        for (index, block) in Pem::iter_from_buffer(bytes).enumerate() {
            let block = block.map_err(|e| {
                content(
                    shown,
                    PemFault::Malformed,
                    format!(
                        "PEM block {} is malformed ({e}); re-export the certificate",
                        index + 1
                    ),
                )
            })?;
            let (subject, expiry) = check_block(shown, index, &block, now, strict, &mut warnings)?;
            found += 1;
            let fingerprint = berth_ref::lower_hex(&Sha256::digest(&block.contents));
            if by_fingerprint.contains_key(&fingerprint) {
                duplicates += 1;
                continue;
            }
            first_expiry = Some(first_expiry.map_or(expiry, |e| e.min(expiry)));
            by_fingerprint.insert(
                fingerprint.clone(),
                Certificate {
                    subject,
                    fingerprint,
                    der: block.contents,
                },
            );
            if by_fingerprint.len() > MAX_CERTIFICATES {
                return Err(PemError::Limit(format!(
                    "more than {MAX_CERTIFICATES} distinct certificates; split the bundle"
                )));
            }
        }
        if found == 0 {
            return Err(content(
                shown,
                PemFault::Empty,
                "no PEM certificate found; expected `-----BEGIN CERTIFICATE-----` blocks".into(),
            ));
        }
    }
    let mut certificates: Vec<Certificate> = by_fingerprint.into_values().collect();
    certificates.sort_by(|a, b| (&a.subject, &a.fingerprint).cmp(&(&b.subject, &b.fingerprint)));
    Ok(Parsed {
        certificates,
        duplicates,
        warnings,
        first_expiry,
    })
}

/// How the roots of `defaults: mozilla` are named in messages.
const MOZILLA: &str = "Mozilla's roots (webpki-root-certs)";

/// Says in words what is wrong with a certificate's DER content, instead of the
/// parser's internal error (`NomError(Eof)`).
/// A block whose `-----END X-----` names another label than its `BEGIN` (the
/// PEM reader only looks at the first): a certificate glued to a key's end.
fn mismatched_block(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let mut open: Option<&str> = None;
    let mut index = 0;
    for line in text.lines() {
        let line = line.trim();
        let label = |prefix: &str| {
            line.strip_prefix(prefix)
                .and_then(|rest| rest.strip_suffix("-----"))
        };
        if let Some(begin) = label("-----BEGIN ") {
            index += 1;
            if let Some(previous) = open {
                return Some(format!("PEM block {} (`{previous}`) has no END line before the next BEGIN; re-export the certificate", index - 1));
            }
            open = Some(begin);
        } else if let Some(end) = label("-----END ") {
            match open.take() {
                Some(begin) if begin == end => {}
                Some(begin) => {
                    return Some(format!(
                        "PEM block {index} begins as `{begin}` but ends as `{end}`; the file is two blocks glued together: re-export the certificate"
                    ))
                }
                None => return Some(format!("an `END {end}` line has no BEGIN line; re-export the certificate")),
            }
        }
    }
    None
}

fn x509_problem(e: &x509_parser::nom::Err<x509_parser::error::X509Error>) -> &'static str {
    use x509_parser::der_parser::error::BerError;
    use x509_parser::error::X509Error;
    use x509_parser::nom::{error::ErrorKind, Err};
    let truncated = match e {
        Err::Incomplete(_) => true,
        Err::Error(X509Error::NomError(ErrorKind::Eof))
        | Err::Failure(X509Error::NomError(ErrorKind::Eof)) => true,
        Err::Error(X509Error::Der(d)) | Err::Failure(X509Error::Der(d)) => {
            matches!(
                d,
                BerError::Incomplete(_) | BerError::NomError(ErrorKind::Eof)
            )
        }
        _ => false,
    };
    if truncated {
        "its content ends early (a truncated copy, or not a certificate at all)"
    } else {
        "its content is not a DER-encoded X.509 certificate"
    }
}

/// One PEM block of source `shown` (the `index`th): a current X.509 certificate, or
/// the error that says what it is instead. An expired or not-yet-valid one is a
/// warning (an error under `strict`). Its subject and expiry.
fn check_block(
    shown: &str,
    index: usize,
    block: &Pem,
    now: i64,
    strict: bool,
    warnings: &mut Vec<Lapsed>,
) -> Result<(String, i64), PemError> {
    let content = |shown: &str, fault: PemFault, problem: String| PemError::Content {
        source_name: shown.to_string(),
        fault,
        problem,
    };
    if block.label != "CERTIFICATE" {
        let (fault, hint) = if block.label.contains("PRIVATE KEY") {
            (
                PemFault::PrivateKey,
                "a trust bundle must never contain a key; remove the key from this file",
            )
        } else {
            (
                PemFault::NotCertificate,
                "only CERTIFICATE blocks belong in a trust bundle",
            )
        };
        return Err(content(
            shown,
            fault,
            format!("PEM block {} is a `{}`: {hint}", index + 1, block.label),
        ));
    }
    let (_, cert) = x509_parser::parse_x509_certificate(&block.contents).map_err(|e| {
        content(
            shown,
            PemFault::NotX509,
            format!(
                "PEM block {} is labelled CERTIFICATE but {}; re-export it, and check it with `openssl x509 -noout -text` (which reads the first block of a file)",
                index + 1,
                x509_problem(&e)
            ),
        )
    })?;
    let subject = cert.subject().to_string();
    let validity = cert.validity();
    let problem = if validity.not_after.timestamp() < now {
        Some((
            PemFault::Expired,
            format!(
                "expired on {}",
                crate::time::rfc3339(validity.not_after.timestamp())
            ),
        ))
    } else if validity.not_before.timestamp() > now {
        Some((
            PemFault::NotYetValid,
            format!(
                "not valid until {}",
                crate::time::rfc3339(validity.not_before.timestamp())
            ),
        ))
    } else {
        None
    };
    if let Some((fault, problem)) = problem {
        if strict {
            return Err(content(
                shown,
                fault,
                format!("certificate `{subject}` is {problem}; remove it from the source or replace it with a current one"),
            ));
        }
        warnings.push(Lapsed {
            source: shown.to_string(),
            subject: subject.clone(),
            problem,
        });
    }
    Ok((subject, validity.not_after.timestamp()))
}

/// `defaults: mozilla`: Mozilla's root program as berth is built with it, as
/// a source named for messages.
pub fn mozilla_roots() -> (String, Vec<u8>) {
    let ders = webpki_root_certs::TLS_SERVER_ROOT_CERTS
        .iter()
        .map(|c| Certificate {
            subject: String::new(),
            fingerprint: String::new(),
            der: c.to_vec(),
        });
    let pem = encode(&ders.collect::<Vec<_>>());
    (MOZILLA.to_string(), pem.into_bytes())
}

/// The DER contents of each well-formed PEM block of `bytes`, in order (the
/// reverse of [`encode`]; for callers that check what a bundle holds).
pub fn decode(bytes: &[u8]) -> Vec<Vec<u8>> {
    Pem::iter_from_buffer(bytes)
        .filter_map(Result::ok)
        .map(|block| block.contents)
        .collect()
}

/// Certificates as PEM text, 64 base64 characters a line, in the order given.
pub fn encode(certificates: &[Certificate]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut out = String::new();
    for cert in certificates {
        out.push_str("-----BEGIN CERTIFICATE-----\n");
        let text = b64.encode(&cert.der);
        for chunk in text.as_bytes().chunks(64) {
            // base64 output is ASCII, so every chunk is valid UTF-8.
            out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
            out.push('\n');
        }
        out.push_str("-----END CERTIFICATE-----\n");
    }
    out
}
