//! The reasons a `Berth`'s conditions, Events and metrics carry: one enum, so a
//! reason is spelled once and a metric's `reason` label has a closed set of values.

/// Why a `Berth` is where it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reason {
    /// Every workload rolled out.
    RolledOut,
    /// Applied; workloads are still rolling out.
    RollingOut,
    /// A workload's rollout failed (its progress deadline passed, a Job failed).
    RolloutFailed,
    /// A named ConfigMap, Secret or key does not exist.
    SourceMissing,
    /// The spec cannot be carried out as written.
    InvalidSpec,
    /// An image reference cannot be parsed.
    InvalidImage,
    /// A config's schema is not a valid JSON Schema.
    InvalidSchema,
    /// A config does not satisfy its schema.
    SchemaViolation,
    /// A CA bundle source holds a private key.
    PrivateKeyInSource,
    /// A CA bundle's certificate is expired or not yet valid.
    ExpiredCertificate,
    /// A CA bundle's content is not a certificate.
    InvalidCertificate,
    /// `pin: true` and the registry did not answer with a digest.
    PinFailed,
    /// Another field manager owns a field berth sets.
    Conflict,
    /// The service account may not do what the reconcile needs.
    Forbidden,
    /// The API server refused an object as invalid.
    Invalid,
    /// The API server did not answer in time or could not be reached.
    Unreachable,
    /// A workload's kind is not served by the cluster.
    UnknownKind,
    /// Any other failure of an apply.
    ApplyFailed,
}

impl Reason {
    /// Every reason, for tests and for metrics that start at zero.
    pub const ALL: [Reason; 18] = [
        Reason::RolledOut,
        Reason::RollingOut,
        Reason::RolloutFailed,
        Reason::SourceMissing,
        Reason::InvalidSpec,
        Reason::InvalidImage,
        Reason::InvalidSchema,
        Reason::SchemaViolation,
        Reason::PrivateKeyInSource,
        Reason::ExpiredCertificate,
        Reason::InvalidCertificate,
        Reason::PinFailed,
        Reason::Conflict,
        Reason::Forbidden,
        Reason::Invalid,
        Reason::Unreachable,
        Reason::UnknownKind,
        Reason::ApplyFailed,
    ];

    /// As conditions, Events and metrics spell it (PascalCase).
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::RolledOut => "RolledOut",
            Reason::RollingOut => "RollingOut",
            Reason::RolloutFailed => "RolloutFailed",
            Reason::SourceMissing => "SourceMissing",
            Reason::InvalidSpec => "InvalidSpec",
            Reason::InvalidImage => "InvalidImage",
            Reason::InvalidSchema => "InvalidSchema",
            Reason::SchemaViolation => "SchemaViolation",
            Reason::PrivateKeyInSource => "PrivateKeyInSource",
            Reason::ExpiredCertificate => "ExpiredCertificate",
            Reason::InvalidCertificate => "InvalidCertificate",
            Reason::PinFailed => "PinFailed",
            Reason::Conflict => "Conflict",
            Reason::Forbidden => "Forbidden",
            Reason::Invalid => "Invalid",
            Reason::Unreachable => "Unreachable",
            Reason::UnknownKind => "UnknownKind",
            Reason::ApplyFailed => "ApplyFailed",
        }
    }

    /// Whether the `Berth` is healthy in this state (an Event of type Normal).
    pub fn is_healthy(self) -> bool {
        matches!(self, Reason::RolledOut | Reason::RollingOut)
    }

    /// Whether the cause may pass without anyone changing anything (a retry soon
    /// makes sense), rather than needing a person to fix a spec, a source or RBAC.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            Reason::Unreachable | Reason::PinFailed | Reason::Conflict
        )
    }
}

/// The reason a cluster failure gives a status, from the one classification
/// (`berth_kube::Kind`): a 401 and a missing kubeconfig are someone's to fix, as
/// RBAC is.
impl From<berth_kube::Kind> for Reason {
    fn from(kind: berth_kube::Kind) -> Reason {
        use berth_kube::Kind;
        match kind {
            Kind::Config | Kind::Forbidden => Reason::Forbidden,
            Kind::Unreachable => Reason::Unreachable,
            Kind::Invalid => Reason::Invalid,
            Kind::Conflict => Reason::Conflict,
            Kind::Plan => Reason::UnknownKind,
            Kind::Rollout => Reason::RolloutFailed,
            Kind::NotFound | Kind::Other => Reason::ApplyFailed,
        }
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_is_listed_once_and_spelled_as_its_name() {
        let mut names: Vec<&str> = Reason::ALL.iter().map(|r| r.as_str()).collect();
        for (reason, name) in Reason::ALL.iter().zip(&names) {
            assert_eq!(format!("{reason:?}"), *name);
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Reason::ALL.len());
    }
}
