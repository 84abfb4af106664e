//! The pods of a project's rendered workloads, for `berth sync`.

use berth_core::render::{PodSelector, Workload};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};

use crate::connect::Cluster;
use crate::error::{explain, ClusterError};

impl Cluster {
    /// The pods `workload` selects (by its pod template's labels, or a Pod by
    /// name), and the namespace they are in.
    pub async fn pods(&self, workload: &Workload) -> Result<(String, Vec<Pod>), ClusterError> {
        let namespace = workload
            .namespace
            .clone()
            .unwrap_or_else(|| self.namespace.clone());
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &namespace);
        let pods = self
            .timed(|| format!("list pods in namespace `{namespace}`"), async {
                Ok(match &workload.pods {
                    PodSelector::Labels(_) => {
                        let query = workload.pods.label_query().unwrap_or_default();
                        api.list(&ListParams::default().labels(&query))
                            .await
                            .map(|list| list.items)
                    }
                    PodSelector::Name(name) => {
                        api.get_opt(name).await.map(|p| p.into_iter().collect())
                    }
                })
            })
            .await?
            .map_err(|e| explain(e, &self.server, "list", "pods", &namespace))?;
        Ok((namespace, pods))
    }
}

/// Whether the pod runs, is Ready, and is not being deleted.
pub fn is_ready(pod: &Pod) -> bool {
    let status = pod.status.as_ref();
    pod.metadata.deletion_timestamp.is_none()
        && status.and_then(|s| s.phase.as_deref()) == Some("Running")
        && status
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}
