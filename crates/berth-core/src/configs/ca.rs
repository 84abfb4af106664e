//! CA bundles: a project's PEM sources read, checked by berth-trust
//! (validated, de-duplicated, ordered; see [`berth_trust::pem`]) and combined
//! into one content-addressed ConfigMap, with the forms its runtimes read.

use std::path::PathBuf;

use base64::Engine as _;
use berth_trust::pem::{encode as encode_pem, Certificate, Parsed};
use berth_yaml::Pos;

use super::{hash, under, ConfigKind, FileSource, Generated};
use crate::project::{CaBundleSpec, Defaults, Project, TrustSpec};

pub use crate::names::{default_mount_path, DEFAULT_ENV, DEFAULT_KEY};
pub use berth_trust::mozilla_roots;
pub use berth_trust::pem::{PemError, PemFault, MAX_BUNDLE_BYTES, MAX_CERTIFICATES};

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
    /// Expired or not-yet-valid certificates (errors instead when strict), at their source.
    pub warnings: Vec<crate::Warning>,
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

/// The data key of the PKCS#12 truststore.
pub const PKCS12_KEY: &str = "truststore.p12";
/// The data key of the JKS truststore.
pub const JKS_KEY: &str = "truststore.jks";

/// Why [`assemble`] refused a bundle.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// A source is not usable PEM, or a limit was passed.
    #[error(transparent)]
    Pem(#[from] PemError),
    /// `defaults: system`, and the caller found no system store.
    #[error("`defaults: system` needs this machine's public roots, and none was found at /etc/ssl/certs/ca-certificates.crt; install Debian's ca-certificates, or set BERTH_SYSTEM_CA_BUNDLE to the PEM file of the roots to add")]
    NoSystemStore,
}

/// The one door for a bundle's certificates, for berth.yaml's bundles and a `Berth`'s
/// alike: the `(name, PEM)` sources the caller read, in order, and the public roots
/// `spec.defaults` adds (`system`: the store the caller found), checked at time `now`
/// (seconds since the Unix epoch) and combined into the bundle's ConfigMap with the
/// forms `spec.formats` names, its labels and annotations. The Java stores' `password`
/// is the caller's to read (`None`: the default).
pub fn assemble(
    spec: &TrustSpec,
    mut sources: Vec<(String, Vec<u8>)>,
    system: Option<&SystemStore>,
    password: Option<super::truststore::Password>,
    now: i64,
    strict: bool,
) -> Result<CaBundle, Refused> {
    match spec.defaults {
        Some(Defaults::Mozilla) => sources.push(mozilla_roots()),
        Some(Defaults::System) => {
            let store = system.ok_or(Refused::NoSystemStore)?;
            sources.push((store.shown.clone(), store.bytes.clone()));
        }
        None => {}
    }
    let shape = BundleShape {
        name: spec.name.clone(),
        key: spec.key.clone(),
        hash: spec.hash,
        formats: spec.formats,
        password,
    };
    let mut bundle = from_pem(&shape, &sources, now, strict)?;
    bundle.generated.labels = spec.labels.clone();
    bundle.generated.annotations = spec.annotations.clone();
    Ok(bundle)
}

/// Builds a bundle from `(source name, PEM bytes)` pairs at time `now` (seconds
/// since the Unix epoch), as `shape` says; [`assemble`] is the door callers use.
pub(crate) fn from_pem(
    shape: &BundleShape,
    sources: &[(String, Vec<u8>)],
    now: i64,
    strict: bool,
) -> Result<CaBundle, PemError> {
    let Parsed {
        certificates,
        duplicates,
        warnings,
        first_expiry,
    } = berth_trust::pem::parse(sources, now, strict)?;
    let generated = generated_bundle(shape, &certificates);
    let size = stored_size(&generated);
    if size > super::MAX_OBJECT_DATA {
        return Err(PemError::Limit(format!(
            "its ConfigMap would hold {size} bytes (the PEM file{}), more than the 1 MiB the API server stores in one object; split the certificates into several bundles{}",
            stored_parts(shape.formats),
            if shape.formats == Formats::default() { "" } else { ", or leave out forms no container reads (`formats:`; `inject.runtimes` without `openssl` needs no hashed directory, without `java` no PKCS#12 store)" }
        )));
    }
    let warnings = (warnings.into_iter())
        .map(|lapsed| {
            let at = crate::Place::file(&lapsed.source);
            let message = format!("{lapsed} (in caBundles.{})", shape.name);
            crate::Warning::at(crate::Code::Certificate, at, message)
        })
        .collect();
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
    let input = hash::HashInput {
        kind: "ConfigMap",
        secret_type: None,
        data: &data,
        binary_data: &binary_data,
    };
    let (name, content_sha256) = hash::name_and_hash(&shape.name, shape.hash, &input);
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
    let password = super::ca_password::password(project, spec, supplied.configs).map_err(
        |(pos, problem)| CaError::Password {
            file: project.file.clone(),
            pos,
            bundle: spec.name.clone(),
            problem,
        },
    )?;
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
            sources.push((read.from.describe(), read.pem.clone().into_bytes()));
        }
    }
    assemble(spec, sources, system, password, now, strict).map_err(|e| match e {
        Refused::Pem(PemError::Content {
            source_name,
            problem,
            ..
        }) => CaError::Content {
            path: source_name,
            problem,
            bundle: spec.name.clone(),
        },
        Refused::Pem(PemError::Limit(problem)) => limit(problem),
        Refused::NoSystemStore => CaError::Read {
            file: project.file.clone(),
            pos: spec.pos,
            bundle: spec.name.clone(),
            path: "the system store".into(),
            reason: e.to_string(),
        },
    })
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

#[cfg(test)]
#[path = "ca_tests.rs"]
mod tests;
