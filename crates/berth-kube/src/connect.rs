//! Reaching the cluster the way kubectl does.

use std::path::PathBuf;

use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::error::ClusterError;

/// How to reach the cluster.
#[derive(Debug, Clone, Default)]
pub struct Connection {
    /// `--kubeconfig FILE` (else `KUBECONFIG`, `~/.kube/config`, in-cluster).
    pub kubeconfig: Option<PathBuf>,
    /// `--context NAME` (else the current context).
    pub context: Option<String>,
    /// `--namespace`, else berth.yaml's `namespace:` (else the context's).
    pub namespace: Option<String>,
}

/// A connected client with its own runtime, for blocking callers.
pub struct Cluster {
    pub(crate) runtime: tokio::runtime::Runtime,
    pub(crate) client: kube::Client,
    /// The namespace for objects that do not name one.
    pub namespace: String,
    /// `kubernetes (context X, https://..., namespace N)`, for messages.
    pub describe: String,
    pub(crate) kinds: std::sync::Mutex<crate::ops::KindCache>,
}

impl Cluster {
    /// Reads the configuration and builds a client (no request is made yet).
    pub fn connect(connection: &Connection) -> Result<Self, ClusterError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| ClusterError::Config(format!("cannot start the async runtime: {e}")))?;
        let options = KubeConfigOptions {
            context: connection.context.clone(),
            ..KubeConfigOptions::default()
        };
        let config = runtime.block_on(async {
            match &connection.kubeconfig {
                Some(path) => {
                    let file = Kubeconfig::read_from(path).map_err(|e| {
                        ClusterError::Config(format!("cannot read kubeconfig {}: {e}", path.display()))
                    })?;
                    kube::Config::from_custom_kubeconfig(file, &options)
                        .await
                        .map_err(|e| ClusterError::Config(format!("{}: {e}", path.display())))
                }
                None if connection.context.is_some() => kube::Config::from_kubeconfig(&options)
                    .await
                    .map_err(|e| ClusterError::Config(format!("kubeconfig: {e}"))),
                None => kube::Config::infer().await.map_err(|e| {
                    ClusterError::Config(format!(
                        "no cluster configuration ({e}); set KUBECONFIG, pass --kubeconfig, or run inside a pod"
                    ))
                }),
            }
        })?;
        let namespace = connection
            .namespace
            .clone()
            .unwrap_or_else(|| config.default_namespace.clone());
        let describe = format!(
            "kubernetes ({}{}, namespace {namespace})",
            connection
                .context
                .as_deref()
                .map(|c| format!("context {c}, "))
                .unwrap_or_default(),
            config.cluster_url
        );
        let client = runtime
            .block_on(async { kube::Client::try_from(config) })
            .map_err(|e| ClusterError::Config(format!("cannot create a client: {e}")))?;
        Ok(Cluster {
            runtime,
            client,
            namespace,
            describe,
            kinds: std::sync::Mutex::new(crate::ops::KindCache::default()),
        })
    }
}
