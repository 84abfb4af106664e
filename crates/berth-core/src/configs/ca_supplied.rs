//! What the caller of [`super::build`] reads for a bundle beyond the project's
//! files: the core reads no others.

/// A cluster source's PEM as the caller read it (ConfigMaps and
/// ClusterTrustBundles; several of a signer's are concatenated by name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterPem {
    /// What was read.
    pub from: crate::project::ClusterObject,
    /// Its PEM.
    pub pem: String,
}

/// The public roots of the machine that renders, read by the caller (the core
/// reads no files outside the project): where they came from and the PEM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemStore {
    /// The file, for messages (`/etc/ssl/certs/ca-certificates.crt`).
    pub shown: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// What the caller read for the bundles, beyond the project's files (the core
/// reads no others): the machine's public roots, the cluster's sources, and
/// the generated configs (a Secret config holds the Java stores' password).
#[derive(Debug, Clone, Copy)]
pub struct Supplied<'a> {
    /// The machine's store, for `defaults: system` (`None`: none found).
    pub system: Option<&'a SystemStore>,
    /// The cluster sources read (none without a cluster).
    pub cluster: &'a [ClusterPem],
    /// The project's generated configs.
    pub configs: &'a [crate::configs::Generated],
}
