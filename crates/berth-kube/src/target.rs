//! The pods of a project's rendered workloads as a [`berth_sync::Target`].

use berth_core::render::{PodSelector, Workload};
use berth_sync::protocol::ExecOutput;
use berth_sync::target::Input;
use berth_sync::{Container, SyncError, Target};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};

use crate::connect::{Cluster, Connection};
use crate::error::explain;

/// Pods of a project's workloads in a cluster.
pub struct KubeTarget {
    pub(crate) cluster: Cluster,
    workloads: Vec<Workload>,
}

impl KubeTarget {
    /// Connects (reads the configuration; no request is made yet).
    pub fn connect(connection: &Connection, workloads: Vec<Workload>) -> Result<Self, SyncError> {
        Ok(KubeTarget {
            cluster: Cluster::connect(connection)?,
            workloads,
        })
    }

    fn pods(&self, workload: &Workload) -> Result<(String, Vec<Pod>), SyncError> {
        let namespace = workload
            .namespace
            .clone()
            .unwrap_or_else(|| self.cluster.namespace.clone());
        let api: Api<Pod> = Api::namespaced(self.cluster.client.clone(), &namespace);
        let pods = self.cluster.runtime.block_on(async {
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
        let pods = pods.map_err(|e| SyncError::from(explain(e, "list", "pods", &namespace)))?;
        Ok((namespace, pods))
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
        self.cluster.describe.clone()
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
        crate::exec::exec(self, container, argv, input)
    }

    fn fallback_hint(&self) -> String {
        "add it to the image (busybox provides sh, tar, find and sha256sum), or run a sidecar that \
         has them, share the directory through an emptyDir volume, and sync into the sidecar"
            .into()
    }
}
