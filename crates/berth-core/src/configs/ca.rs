//! CA bundles: PEM certificates validated, de-duplicated, ordered and
//! combined into one content-addressed ConfigMap.
//!
//! Only `CERTIFICATE` blocks that parse as X.509 are kept. Any other block
//! (a private key above all) is an error: a trust bundle must never carry a
//! key. Expired and not-yet-valid certificates are warnings, or errors when
//! strict. The current time is an argument, so results are reproducible.

use std::collections::BTreeMap;
use std::path::PathBuf;

use base64::Engine as _;
use berth_yaml::Pos;
use sha2::{Digest as _, Sha256};
use x509_parser::pem::Pem;

use super::{hash, under, ConfigKind, FileSource, Generated};
use crate::project::{CaBundleSpec, Project};

pub use crate::names::{default_mount_path, DEFAULT_ENV, DEFAULT_KEY};

/// Most bytes of PEM a bundle reads, over all its sources.
pub const MAX_BUNDLE_BYTES: usize = 10 * 1024 * 1024;
/// Most distinct certificates in one bundle.
pub const MAX_CERTIFICATES: usize = 1000;
/// Files taken from a source directory (explicitly named files may have any name).
const PEM_EXTENSIONS: &[&str] = &["pem", "crt", "cer"];

/// A built bundle and what the user should know about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaBundle {
    /// The ConfigMap.
    pub generated: Generated,
    /// Distinct certificates in it.
    pub certificates: usize,
    /// Duplicates dropped.
    pub duplicates: usize,
    /// Expired or not-yet-valid certificates (errors instead when strict).
    pub warnings: Vec<String>,
    /// The earliest `notAfter` of its certificates (seconds since the Unix epoch).
    pub first_expiry: Option<i64>,
}

/// Why a bundle cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaError {
    /// A source cannot be read.
    #[error("{file}:{pos}: caBundles.{bundle}: cannot read `{path}`: {reason}")]
    Read {
        /// The project file.
        file: String,
        /// Where the source is named.
        pos: Pos,
        /// The bundle.
        bundle: String,
        /// The path.
        path: String,
        /// Why.
        reason: String,
    },
    /// A source holds something that is not a usable certificate.
    #[error("{path}: {problem} (in caBundles.{bundle})")]
    Content {
        /// The source file.
        path: String,
        /// What is wrong, and how to fix it.
        problem: String,
        /// The bundle.
        bundle: String,
    },
    /// `password:` names no usable Secret value (the value is never shown).
    #[error("{file}:{pos}: caBundles.{bundle}.password: {problem}")]
    Password {
        /// The project file.
        file: String,
        /// Where `password:` is.
        pos: Pos,
        /// The bundle.
        bundle: String,
        /// What is wrong, and how to fix it.
        problem: String,
    },
    /// A limit was exceeded.
    #[error("{file}:{pos}: caBundles.{bundle}: {problem}")]
    Limit {
        /// The project file.
        file: String,
        /// Where the bundle is.
        pos: Pos,
        /// The bundle.
        bundle: String,
        /// Which limit.
        problem: String,
    },
}

struct Certificate {
    subject: String,
    fingerprint: String,
    der: Vec<u8>,
}

/// Why a bundle cannot be made from its sources' bytes ([`from_pem`]); the
/// project-file path ([`build`]) and the controller each say where.
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

/// A bundle's shape: its name and the key the PEM goes under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleShape {
    /// The bundle's base name.
    pub name: String,
    /// The data key (`ca-bundle.crt` by default).
    pub key: String,
    /// Whether the name carries the content hash.
    pub hash: bool,
    /// The Java truststores written beside the PEM (`binaryData`).
    pub formats: Formats,
    /// Their password (`None`: [`super::truststore::DEFAULT_PASSWORD`]).
    pub password: Option<super::truststore::Password>,
}

/// `caBundles.X.formats` beyond PEM: Java truststores of the same certificates,
/// `truststore.p12` and `truststore.jks` in the ConfigMap's `binaryData`, with
/// the password [`super::truststore::DEFAULT_PASSWORD`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Formats {
    /// PKCS#12 (`truststore.p12`; the JDK's default type since 9).
    pub pkcs12: bool,
    /// JKS (`truststore.jks`), for older JDKs and tools that ask for it.
    pub jks: bool,
    /// OpenSSL's hashed directory (one PEM file per certificate named as
    /// `openssl rehash` names it, `HHHHHHHH.N`), for `SSL_CERT_DIR`: written
    /// when the `openssl` runtime is injected.
    pub dir: bool,
}

/// How the roots of `defaults: mozilla` are named in messages.
const MOZILLA: &str = "Mozilla's roots (webpki-root-certs)";

/// The data key of the PKCS#12 truststore.
pub const PKCS12_KEY: &str = "truststore.p12";
/// The data key of the JKS truststore.
pub const JKS_KEY: &str = "truststore.jks";

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

/// Builds a bundle from `(source name, PEM bytes)` pairs at time `now` (seconds
/// since the Unix epoch): the entry point for callers that do not read files
/// (the controller reads ConfigMaps).
pub fn from_pem(
    shape: &BundleShape,
    sources: &[(String, Vec<u8>)],
    now: i64,
    strict: bool,
) -> Result<CaBundle, PemError> {
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
    let generated = generated_bundle(shape, &certificates);
    let size = stored_size(&generated);
    if size > super::MAX_OBJECT_DATA {
        return Err(PemError::Limit(format!(
            "its ConfigMap would hold {size} bytes (the PEM file{}), more than the 1 MiB the API server stores in one object; split the certificates into several bundles{}",
            stored_parts(shape.formats),
            if shape.formats == Formats::default() { "" } else { ", or leave out forms no container reads (`formats:`; `inject.runtimes` without `openssl` needs no hashed directory, without `java` no PKCS#12 store)" }
        )));
    }
    Ok(CaBundle {
        generated,
        certificates: certificates.len(),
        duplicates,
        warnings,
        first_expiry,
    })
}

/// The bundle's ConfigMap: the certificates as PEM under `shape.key`, named with
/// kustomize's content hash when `shape.hash` says so.
fn generated_bundle(shape: &BundleShape, certificates: &[Certificate]) -> Generated {
    let pem = encode_pem(certificates);
    let mut data = vec![(shape.key.clone(), pem)];
    if shape.formats.dir {
        let ders: Vec<&[u8]> = certificates.iter().map(|c| c.der.as_slice()).collect();
        let mut hashed: Vec<(String, String)> = super::rehash::file_names(&ders)
            .into_iter()
            .zip(certificates)
            // Every certificate here was parsed when it was read: each has a name.
            .filter_map(|(name, c)| Some((name?, encode_pem(std::slice::from_ref(c)))))
            .collect();
        // A key that is already the bundle's own stays the bundle's.
        hashed.retain(|(name, _)| *name != shape.key);
        data.extend(hashed);
        data.sort();
    }
    let ders: Vec<Vec<u8>> = certificates.iter().map(|c| c.der.clone()).collect();
    let b64 = base64::engine::general_purpose::STANDARD;
    let password = (shape.password.as_ref()).map_or(
        super::truststore::DEFAULT_PASSWORD,
        super::truststore::Password::expose,
    );
    let mut binary_data = Vec::new();
    if shape.formats.jks {
        let store = super::truststore::jks(&ders, password);
        binary_data.push((JKS_KEY.to_string(), b64.encode(store)));
    }
    if shape.formats.pkcs12 {
        let store = super::truststore::pkcs12(&ders, password);
        binary_data.push((PKCS12_KEY.to_string(), b64.encode(store)));
    }
    let content_sha256 = hash::content_sha256(&hash::HashInput {
        kind: "ConfigMap",
        secret_type: None,
        data: &data,
        binary_data: &binary_data,
    });
    let name = if shape.hash {
        format!("{}-{}", shape.name, hash::suffix(&content_sha256))
    } else {
        shape.name.clone()
    };
    Generated {
        base_name: shape.name.clone(),
        name,
        kind: ConfigKind::ConfigMap,
        secret_type: None,
        data,
        binary_data,
        immutable: shape.hash,
        hashed: shape.hash,
        content_sha256,
        labels: Vec::new(),
        annotations: Vec::new(),
    }
}

/// The bytes of a ConfigMap's data as the API server counts them: keys, text
/// values, and binary values decoded.
fn stored_size(generated: &Generated) -> usize {
    let text: usize = generated.data.iter().map(|(k, v)| k.len() + v.len()).sum();
    let binary: usize = (generated.binary_data.iter())
        .map(|(k, v)| k.len() + v.len() / 4 * 3)
        .sum();
    text + binary
}

/// What a bundle's ConfigMap holds besides the PEM file, for messages.
fn stored_parts(formats: Formats) -> String {
    let parts = [
        (formats.dir, ", the hashed directory"),
        (formats.pkcs12, ", the PKCS#12 store"),
        (formats.jks, ", the JKS store"),
    ];
    parts
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, s)| *s)
        .collect()
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
    warnings: &mut Vec<String>,
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
        warnings.push(format!("{shown}: certificate `{subject}` is {problem}"));
    }
    Ok((subject, validity.not_after.timestamp()))
}

#[path = "ca_supplied.rs"]
mod supplied;
pub use supplied::{ClusterPem, Supplied, SystemStore};

/// Builds one of the project's bundles at time `now` (seconds since the Unix
/// epoch), reading its sources through `files`; a bundle with `defaults:
/// system` adds `system`'s certificates (an error when the caller found none).
pub fn build(
    project: &Project,
    spec: &CaBundleSpec,
    files: &dyn FileSource,
    now: i64,
    strict: bool,
    supplied: &Supplied<'_>,
) -> Result<CaBundle, CaError> {
    let (system, cluster) = (supplied.system, supplied.cluster);
    let password = super::truststore::password(project, spec, supplied.configs)?;
    let limit = |problem: String| CaError::Limit {
        file: project.file.clone(),
        pos: spec.pos,
        bundle: spec.name.clone(),
        problem,
    };
    let mut total = 0usize;
    let mut sources = Vec::new();
    for (path, pos, shown) in source_files(project, spec, files)? {
        let bytes = files.read(&path).map_err(|e| CaError::Read {
            file: project.file.clone(),
            pos,
            bundle: spec.name.clone(),
            path: shown.clone(),
            reason: e.to_string(),
        })?;
        // Checked as the sources are read, so a huge source stops the reading.
        total += bytes.len();
        if total > MAX_BUNDLE_BYTES {
            return Err(limit(format!(
                "the sources hold more than {} MB of PEM; split the bundle",
                MAX_BUNDLE_BYTES >> 20
            )));
        }
        sources.push((shown, bytes));
    }
    // Cluster sources the caller read (apply, diff); a render without a cluster
    // has none and says so itself.
    for source in &spec.cluster_sources {
        if let Some(read) = cluster.iter().find(|c| c.from == source.from) {
            total += read.pem.len();
            sources.push((read.from.describe(), read.pem.clone().into_bytes()));
        }
    }
    if spec.defaults == Some(crate::project::Defaults::Mozilla) {
        sources.push(mozilla_roots());
    }
    if spec.defaults == Some(crate::project::Defaults::System) {
        let store = system.ok_or_else(|| CaError::Read {
            file: project.file.clone(),
            pos: spec.pos,
            bundle: spec.name.clone(),
            path: "the system store".into(),
            reason: "`defaults: system` needs this machine's public roots, and none was found at /etc/ssl/certs/ca-certificates.crt; install Debian's ca-certificates, or set BERTH_SYSTEM_CA_BUNDLE to the PEM file of the roots to add".into(),
        })?;
        total += store.bytes.len();
        if total > MAX_BUNDLE_BYTES {
            return Err(limit(format!(
                "the sources and the system store hold more than {} MB of PEM",
                MAX_BUNDLE_BYTES >> 20
            )));
        }
        sources.push((store.shown.clone(), store.bytes.clone()));
    }
    let shape = BundleShape {
        name: spec.name.clone(),
        key: spec.key.clone(),
        hash: spec.hash,
        formats: spec.formats,
        password,
    };
    let mut bundle = from_pem(&shape, &sources, now, strict).map_err(|e| match e {
        PemError::Content {
            source_name,
            problem,
            ..
        } => CaError::Content {
            path: source_name,
            problem,
            bundle: spec.name.clone(),
        },
        PemError::Limit(problem) => limit(problem),
    })?;
    for warning in &mut bundle.warnings {
        warning.push_str(&format!(" (in caBundles.{})", spec.name));
    }
    bundle.generated.labels = spec.labels.clone();
    bundle.generated.annotations = spec.annotations.clone();
    Ok(bundle)
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
    let pem = encode_pem(&ders.collect::<Vec<_>>());
    (MOZILLA.to_string(), pem.into_bytes())
}

/// The files of a bundle's sources, in order: named files as given, directory entries sorted.
fn source_files(
    project: &Project,
    spec: &CaBundleSpec,
    files: &dyn FileSource,
) -> Result<Vec<(PathBuf, Pos, String)>, CaError> {
    let mut out = Vec::new();
    for source in &spec.sources {
        let path = under(&project.dir, &source.value);
        let read_error = |e: std::io::Error| CaError::Read {
            file: project.file.clone(),
            pos: source.pos,
            bundle: spec.name.clone(),
            path: source.value.clone(),
            reason: e.to_string(),
        };
        match files.list_dir(&path).map_err(read_error)? {
            Some(entries) => {
                let before = out.len();
                let mut entries: Vec<PathBuf> = entries
                    .into_iter()
                    .filter(|p| {
                        p.extension()
                            .and_then(|e| e.to_str())
                            .is_some_and(|e| PEM_EXTENSIONS.contains(&e))
                    })
                    .collect();
                entries.sort();
                for entry in entries {
                    let shown = format!(
                        "{}/{}",
                        source.value.trim_end_matches('/'),
                        entry
                            .file_name()
                            .map(|n| n.to_string_lossy())
                            .unwrap_or_default()
                    );
                    out.push((entry, source.pos, shown));
                }
                if out.len() == before {
                    return Err(CaError::Content {
                        path: source.value.clone(),
                        problem: "the directory has no *.pem, *.crt or *.cer files".into(),
                        bundle: spec.name.clone(),
                    });
                }
            }
            None => out.push((path, source.pos, source.value.clone())),
        }
    }
    Ok(out)
}

fn encode_pem(certificates: &[Certificate]) -> String {
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

#[cfg(test)]
#[path = "ca_tests.rs"]
mod tests;
