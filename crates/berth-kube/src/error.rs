//! Cluster failures, each one line that says what to do.

/// A failure talking to the cluster.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// No usable kubeconfig or in-cluster configuration.
    #[error("{0}")]
    Config(String),
    /// The API server did not answer.
    #[error("cannot reach the API server ({0}); is the cluster up and the kubeconfig current?")]
    Unreachable(String),
    /// RBAC refused a request.
    #[error("forbidden: RBAC does not allow `{verb}` on `{resource}` in namespace `{namespace}` ({message})")]
    Forbidden {
        /// `list`, `patch`, `create`...
        verb: String,
        /// `pods`, `deployments.apps`...
        resource: String,
        /// The namespace (`<cluster>` for cluster-scoped objects).
        namespace: String,
        /// The server's message.
        message: String,
    },
    /// The cluster does not serve a kind.
    #[error("unknown kind `{kind}` (apiVersion `{api_version}`): the cluster does not serve it; install its CRD first, or check the apiVersion")]
    UnknownKind {
        /// `apiVersion` as written.
        api_version: String,
        /// `kind`.
        kind: String,
    },
    /// Server-side apply found fields another manager owns.
    #[error("{object}: apply conflicts with other field managers:\n{}\n  help: these fields were set by someone else; re-run with --force-conflicts to take them over, or remove them from the manifests", conflicts.iter().map(|(field, manager)| format!("  {field} (owned by {manager})")).collect::<Vec<_>>().join("\n"))]
    Conflict {
        /// `Kind/namespace/name`.
        object: String,
        /// `(field path, manager)`.
        conflicts: Vec<(String, String)>,
    },
    /// The object's namespace does not exist (yet).
    #[error("{action}: {message}; create the namespace first, or add it to the manifests")]
    NamespaceMissing {
        /// What berth was doing.
        action: String,
        /// The server's message.
        message: String,
    },
    /// Any other API error.
    #[error("{action}: {message}")]
    Api {
        /// What berth was doing (`patch deployments.apps/web in namespace dev`).
        action: String,
        /// The server's message.
        message: String,
    },
}

impl From<ClusterError> for berth_sync::SyncError {
    fn from(e: ClusterError) -> Self {
        berth_sync::SyncError::Engine {
            engine: "kubernetes".into(),
            message: e.to_string(),
        }
    }
}

/// Turns a client error into a [`ClusterError`].
pub(crate) fn explain(
    error: kube::Error,
    verb: &str,
    resource: &str,
    namespace: &str,
) -> ClusterError {
    match &error {
        kube::Error::Api(status) if status.code == 403 => ClusterError::Forbidden {
            verb: verb.into(),
            resource: resource.into(),
            namespace: namespace.into(),
            message: status.message.clone(),
        },
        kube::Error::HyperError(_) | kube::Error::Service(_) => {
            ClusterError::Unreachable(error.to_string())
        }
        kube::Error::Api(status) => ClusterError::Api {
            action: format!("{verb} {resource} in namespace `{namespace}`"),
            message: status.message.clone(),
        },
        _ => ClusterError::Api {
            action: format!("{verb} {resource} in namespace `{namespace}`"),
            message: error.to_string(),
        },
    }
}
