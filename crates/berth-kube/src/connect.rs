//! Reaching the cluster the way kubectl does.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::config::KubeConfigOptions;
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
    /// Run a kubeconfig `exec:` credential plugin once, bounded in time and
    /// output, and use its credential for the whole run (the CLI); `false`
    /// leaves it to kube-rs, which runs it again when the credential expires (a
    /// long-running controller outside the cluster).
    pub exec_once: bool,
    /// The most bytes one API answer may have (the CLI's commands make no
    /// watches, so none is endless); `None` for the controller, whose watches are.
    pub response_limit: Option<usize>,
    /// A leader-elected controller's fence: writes are refused while it is closed.
    pub write_fence: Option<crate::fence::Fence>,
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

impl Cluster {
    /// Reads the configuration and builds a client (no request is made yet).
    pub async fn connect(connection: &Connection) -> Result<Self, ClusterError> {
        let options = KubeConfigOptions {
            context: connection.context.clone(),
            ..KubeConfigOptions::default()
        };
        // kubectl's order: --kubeconfig, KUBECONFIG, ~/.kube/config, else in-cluster.
        let file = match &connection.kubeconfig {
            Some(path) => Some((
                crate::kubeconfig::read(path)?,
                format!("kubeconfig {}", path.display()),
            )),
            None => match berth_io::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
                Some(list) => Some(crate::kubeconfig::read_list(&list)?),
                None => match crate::kubeconfig::default_path() {
                    Some(path) => Some((
                        crate::kubeconfig::read(&path)?,
                        format!("kubeconfig {}", path.display()),
                    )),
                    None => None,
                },
            },
        };
        let config = match file {
            Some((mut file, shown)) => {
                crate::kubeconfig::prepare(
                    &mut file,
                    connection.context.as_deref(),
                    connection.request_timeout.unwrap_or(REQUEST_TIMEOUT),
                    connection.exec_once,
                )?;
                kube::Config::from_custom_kubeconfig(file, &options)
                    .await
                    .map_err(|e| config_error(format!("{shown}: {e}"), e))?
            }
            None if connection.context.is_some() => {
                return Err(ClusterError::Config {
                    message: "--context is given but there is no kubeconfig (no --kubeconfig, KUBECONFIG or ~/.kube/config)".into(),
                    source: None,
                })
            }
            None => kube::Config::incluster().map_err(|e| {
                config_error(
                    format!(
                        "no cluster configuration (no --kubeconfig, KUBECONFIG or ~/.kube/config, and not inside a pod: {e}); set KUBECONFIG, pass --kubeconfig, or run inside a pod"
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
        let builder = crate::client::builder(config).map_err(|e| {
            let why = match &e {
                kube::Error::Auth(auth) => crate::error::auth_message(auth),
                other => crate::error::root_cause(other),
            };
            config_error(format!("cannot create a client for {server}: {why}"), e)
        })?;
        let fence = connection
            .write_fence
            .clone()
            .map(|fence| tower::filter::FilterLayer::new(move |request| fence.check(request)));
        let builder = builder.with_layer(&tower::util::option_layer(fence));
        let client = match connection.response_limit {
            // Each answer read with a bound: an endless body is an error, not memory.
            Some(limit) => builder
                .with_layer(&tower::util::MapResponseLayer::new(
                    move |response: http::Response<Box<kube::client::DynBody>>| {
                        response.map(|body| http_body_util::Limited::new(body, limit))
                    },
                ))
                .build(),
            None => builder.build(),
        };
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
