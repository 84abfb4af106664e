//! Reaching the cluster the way kubectl does.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::discovery::ApiResource;

use crate::error::ClusterError;

/// How long one API request may take before berth reports a [`ClusterError::Timeout`].
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// `(apiVersion, kind)` → the resource serving it and whether it is namespaced;
/// `None`: the cluster does not serve it.
pub(crate) type KindCache = HashMap<(String, String), Option<(ApiResource, bool)>>;

/// How to reach the cluster.
#[derive(Debug, Clone, Default)]
pub struct Connection {
    /// `--kubeconfig FILE` (else `KUBECONFIG`, `~/.kube/config`, in-cluster).
    pub kubeconfig: Option<PathBuf>,
    /// `--context NAME` (else the current context).
    pub context: Option<String>,
    /// `--namespace`, else berth.yaml's `namespace:` (else the context's).
    pub namespace: Option<String>,
    /// `--request-timeout`: how long one API request may take (else [`REQUEST_TIMEOUT`]).
    pub request_timeout: Option<Duration>,
}

/// A client for one cluster and a default namespace. It holds no runtime: its
/// methods are async and run on the caller's (the CLI starts one; the
/// controller runs inside its own).
pub struct Cluster {
    pub(crate) client: kube::Client,
    /// The namespace for objects that do not name one.
    pub namespace: String,
    /// The API server's URL, for messages.
    pub server: String,
    /// `kubernetes (context X, https://..., namespace N)`, for messages.
    pub describe: String,
    /// `(apiVersion, kind)` → resource and whether it is namespaced; `None`: not served.
    pub(crate) kinds: Arc<Mutex<KindCache>>,
    /// How long one request may take.
    pub request_timeout: Duration,
}

fn config_error(
    message: String,
    source: impl std::error::Error + Send + Sync + 'static,
) -> ClusterError {
    ClusterError::Config {
        message,
        source: Some(Box::new(source)),
    }
}

/// The files `KUBECONFIG` lists that exist, merged (the first to set a value wins),
/// with how to name them; `None` when it lists none. kubectl skips files of the
/// list that do not exist, so `KUBECONFIG=/missing:/good` works as it does there.
fn kubeconfig_from_env() -> Result<Option<(Kubeconfig, String)>, ClusterError> {
    let Some(list) = std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let paths: Vec<PathBuf> = std::env::split_paths(&list)
        .filter(|p| !p.as_os_str().is_empty() && p.exists())
        .collect();
    let mut merged: Option<Kubeconfig> = None;
    for path in &paths {
        let file = Kubeconfig::read_from(path).map_err(|e| {
            config_error(format!("cannot read kubeconfig {}: {e}", path.display()), e)
        })?;
        merged = Some(match merged {
            None => file,
            Some(m) => m.merge(file).map_err(|e| {
                config_error(
                    format!("cannot merge kubeconfig {}: {e}", path.display()),
                    e,
                )
            })?,
        });
    }
    let shown = paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(":");
    Ok(merged.map(|m| (m, format!("kubeconfig {shown}"))))
}

impl Cluster {
    /// Reads the configuration and builds a client (no request is made yet).
    pub async fn connect(connection: &Connection) -> Result<Self, ClusterError> {
        let options = KubeConfigOptions {
            context: connection.context.clone(),
            ..KubeConfigOptions::default()
        };
        let from_env = match &connection.kubeconfig {
            Some(_) => None,
            None => kubeconfig_from_env()?,
        };
        let config = match &connection.kubeconfig {
            None if from_env.is_some() => {
                let (file, shown) = from_env.unwrap_or_default();
                kube::Config::from_custom_kubeconfig(file, &options)
                    .await
                    .map_err(|e| config_error(format!("{shown}: {e}"), e))?
            }
            Some(path) => {
                let file = Kubeconfig::read_from(path).map_err(|e| {
                    config_error(format!("cannot read kubeconfig {}: {e}", path.display()), e)
                })?;
                kube::Config::from_custom_kubeconfig(file, &options)
                    .await
                    .map_err(|e| config_error(format!("{}: {e}", path.display()), e))?
            }
            None if connection.context.is_some() => kube::Config::from_kubeconfig(&options)
                .await
                .map_err(|e| config_error(format!("kubeconfig: {e}"), e))?,
            None => kube::Config::infer().await.map_err(|e| {
                config_error(
                    format!(
                        "no cluster configuration ({e}); set KUBECONFIG, pass --kubeconfig, or run inside a pod"
                    ),
                    e,
                )
            })?,
        };
        let namespace = connection
            .namespace
            .clone()
            .unwrap_or_else(|| config.default_namespace.clone());
        let server = config.cluster_url.to_string();
        let context = connection
            .context
            .as_deref()
            .map(|c| format!("context {c}, "))
            .unwrap_or_default();
        let describe = format!("kubernetes ({context}{server}, namespace {namespace})");
        let client = kube::Client::try_from(config).map_err(|e| {
            let why = match &e {
                kube::Error::Auth(auth) => crate::error::auth_message(auth),
                other => crate::error::root_cause(other),
            };
            config_error(format!("cannot create a client for {server}: {why}"), e)
        })?;
        let mut cluster = Cluster::new(client, namespace, server);
        cluster.describe = describe;
        cluster.request_timeout = connection.request_timeout.unwrap_or(REQUEST_TIMEOUT);
        Ok(cluster)
    }

    /// A cluster over an existing client (the controller's, or a test's mock
    /// transport); `server` names it in messages.
    pub fn new(
        client: kube::Client,
        namespace: impl Into<String>,
        server: impl Into<String>,
    ) -> Self {
        let namespace = namespace.into();
        let server = server.into();
        Cluster {
            client,
            describe: format!("kubernetes ({server}, namespace {namespace})"),
            namespace,
            server,
            kinds: Arc::new(Mutex::new(HashMap::new())),
            request_timeout: REQUEST_TIMEOUT,
        }
    }

    /// The same cluster with another default namespace; what discovery found is
    /// shared (the controller asks once, not on every reconcile).
    pub fn in_namespace(&self, namespace: &str) -> Self {
        let mut other = Cluster::new(self.client.clone(), namespace, self.server.clone());
        other.request_timeout = self.request_timeout;
        other.kinds = Arc::clone(&self.kinds);
        other
    }

    /// The underlying client.
    pub fn client(&self) -> &kube::Client {
        &self.client
    }
}
