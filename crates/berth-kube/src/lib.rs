//! berth's cluster edge. For now: the pods of a project's rendered workloads
//! as a [`berth_sync::Target`], with exec over kube-rs's websocket client.
//!
//! The connection follows kubectl: `--kubeconfig` or `KUBECONFIG` or
//! `~/.kube/config`, else the in-cluster service account; `--context` picks a
//! context; the namespace is `--namespace`, then berth.yaml's `namespace:`,
//! then the context's.

#![warn(missing_docs)]

mod exec;

use std::path::PathBuf;

use berth_core::render::{PodSelector, Workload};
use berth_sync::protocol::ExecOutput;
use berth_sync::target::Input;
use berth_sync::{Container, SyncError, Target};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

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

/// Pods of a project's workloads in a cluster.
pub struct KubeTarget {
    runtime: tokio::runtime::Runtime,
    client: kube::Client,
    describe: String,
    namespace: String,
    workloads: Vec<Workload>,
}

fn engine_error(message: impl Into<String>) -> SyncError {
    SyncError::Engine {
        engine: "kubernetes".into(),
        message: message.into(),
    }
}

impl KubeTarget {
    /// Connects (reads the configuration; no request is made yet).
    pub fn connect(connection: &Connection, workloads: Vec<Workload>) -> Result<Self, SyncError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| engine_error(format!("cannot start the async runtime: {e}")))?;
        let options = KubeConfigOptions {
            context: connection.context.clone(),
            ..KubeConfigOptions::default()
        };
        let config = runtime.block_on(async {
            match &connection.kubeconfig {
                Some(path) => {
                    let file = Kubeconfig::read_from(path).map_err(|e| {
                        engine_error(format!("cannot read kubeconfig {}: {e}", path.display()))
                    })?;
                    kube::Config::from_custom_kubeconfig(file, &options)
                        .await
                        .map_err(|e| engine_error(format!("{}: {e}", path.display())))
                }
                None if connection.context.is_some() => kube::Config::from_kubeconfig(&options)
                    .await
                    .map_err(|e| engine_error(format!("kubeconfig: {e}"))),
                None => kube::Config::infer().await.map_err(|e| {
                    engine_error(format!(
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
            .map_err(|e| engine_error(format!("cannot create a client: {e}")))?;
        Ok(KubeTarget {
            runtime,
            client,
            describe,
            namespace,
            workloads,
        })
    }

    fn pods(&self, workload: &Workload) -> Result<(String, Vec<Pod>), SyncError> {
        let namespace = workload
            .namespace
            .clone()
            .unwrap_or_else(|| self.namespace.clone());
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &namespace);
        let pods = self.runtime.block_on(async {
            match &workload.pods {
                PodSelector::Labels(_) => {
                    let query = workload.pods.label_query().unwrap_or_default();
                    api.list(&ListParams::default().labels(&query))
                        .await
                        .map(|list| list.items)
                }
                PodSelector::Name(name) => api.get_opt(name).await.map(|p| p.into_iter().collect()),
            }
        });
        let pods = pods.map_err(|e| explain(e, "list", "pods", &namespace))?;
        Ok((namespace, pods))
    }
}

/// Turns a client error into one line that says what to do.
pub(crate) fn explain(
    error: kube::Error,
    verb: &str,
    resource: &str,
    namespace: &str,
) -> SyncError {
    match &error {
        kube::Error::Api(status) if status.code == 403 => engine_error(format!(
            "forbidden: RBAC does not allow `{verb}` on `{resource}` in namespace `{namespace}` ({})",
            status.message
        )),
        kube::Error::Api(status) if status.code == 404 => engine_error(format!(
            "`{resource}` not found in namespace `{namespace}`: {}",
            status.message
        )),
        kube::Error::HyperError(_) | kube::Error::Service(_) => engine_error(format!(
            "cannot reach the API server ({error}); is the cluster up and the kubeconfig current?"
        )),
        _ => engine_error(format!("{verb} {resource} in namespace `{namespace}`: {error}")),
    }
}

/// Whether the pod runs, is Ready, and is not being deleted.
fn is_ready(pod: &Pod) -> bool {
    let status = pod.status.as_ref();
    pod.metadata.deletion_timestamp.is_none()
        && status.and_then(|s| s.phase.as_deref()) == Some("Running")
        && status
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

impl Target for KubeTarget {
    fn describe(&self) -> String {
        self.describe.clone()
    }

    fn list(&self) -> Result<Vec<Container>, SyncError> {
        let mut out: Vec<Container> = Vec::new();
        for workload in &self.workloads {
            let (namespace, pods) = self.pods(workload)?;
            for pod in pods.iter().filter(|p| is_ready(p)) {
                let Some(pod_name) = pod.metadata.name.as_deref() else {
                    continue;
                };
                let statuses = pod
                    .status
                    .as_ref()
                    .and_then(|s| s.container_statuses.clone())
                    .unwrap_or_default();
                for container in pod.spec.iter().flat_map(|s| &s.containers) {
                    let Some(status) = statuses.iter().find(|s| s.name == container.name) else {
                        continue;
                    };
                    if !status.ready {
                        continue;
                    }
                    let id = format!("{namespace}/{pod_name}/{}", container.name);
                    if out.iter().any(|c| c.id == id) {
                        continue; // two workloads selecting the same pod
                    }
                    out.push(Container {
                        id,
                        name: container.name.clone(),
                        image: container.image.clone().unwrap_or_default(),
                        instance: format!(
                            "{}/{}",
                            status.container_id.as_deref().unwrap_or_default(),
                            status.restart_count
                        ),
                        label: format!("pod/{pod_name}/{}", container.name),
                    });
                }
            }
        }
        out.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(out)
    }

    fn exec(
        &self,
        container: &Container,
        argv: &[String],
        input: Input<'_>,
    ) -> Result<ExecOutput, SyncError> {
        exec::exec(self, container, argv, input)
    }

    fn fallback_hint(&self) -> String {
        "add it to the image (busybox provides sh, tar, find and sha256sum), or run a sidecar that \
         has them, share the directory through an emptyDir volume, and sync into the sidecar"
            .into()
    }
}
