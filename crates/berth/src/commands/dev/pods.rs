//! One look at the project's pods, and what each part of the loop takes from
//! it: ready containers (sync), started containers (logs), ready pods by image
//! (forwards), pods per workload (status lines).

use std::collections::BTreeMap;

use berth_core::render::Workload;
use berth_kube::{Cluster, ClusterError};
use berth_ref::{Reference, Repository};
use berth_sync::Container;
use k8s_openapi::api::core::v1::Pod;

/// A pod as the loop sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodInfo {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Running, Ready and not being deleted.
    pub ready: bool,
    /// The images of its containers.
    pub images: Vec<String>,
    /// Containers that have started (their log can be read), each with what
    /// changes when it restarts, and whether it runs now (else it terminated).
    pub started: Vec<(String, String, bool)>,
}

/// What one look found.
#[derive(Debug, Default)]
pub struct Look {
    /// Ready containers, for sync.
    pub containers: Vec<Container>,
    /// Every pod of the workloads, once each, by namespace and name.
    pub pods: Vec<PodInfo>,
    /// Per workload (`Kind/name`): its pods (`namespace/pod`) and how many are ready.
    pub workloads: Vec<(String, Vec<String>, usize)>,
}

fn info(namespace: &str, pod: &Pod) -> Option<PodInfo> {
    let name = pod.metadata.name.clone()?;
    let statuses = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_deref())
        .unwrap_or_default();
    let containers = pod.spec.iter().flat_map(|s| &s.containers);
    Some(PodInfo {
        namespace: namespace.to_string(),
        ready: berth_kube::is_ready(pod),
        images: containers.clone().filter_map(|c| c.image.clone()).collect(),
        started: containers
            .filter_map(|c| {
                let status = statuses.iter().find(|s| s.name == c.name)?;
                let state = status.state.as_ref()?;
                (state.running.is_some() || state.terminated.is_some()).then(|| {
                    (
                        c.name.clone(),
                        format!(
                            "{}/{}",
                            status.container_id.as_deref().unwrap_or_default(),
                            status.restart_count
                        ),
                        state.running.is_some(),
                    )
                })
            })
            .collect(),
        name,
    })
}

/// Lists the pods of `workloads`.
pub async fn look(cluster: &Cluster, workloads: &[Workload]) -> Result<Look, ClusterError> {
    let mut look = Look::default();
    let mut seen = BTreeMap::new();
    for workload in workloads {
        let (namespace, pods) = cluster.pods(workload).await?;
        look.containers
            .extend(berth_sync::kube::ready_containers(&namespace, &pods));
        let mut names = Vec::new();
        let mut ready = 0;
        for pod in &pods {
            let Some(found) = info(&namespace, pod) else {
                continue;
            };
            ready += usize::from(found.ready);
            names.push(format!("{}/{}", found.namespace, found.name));
            seen.entry((found.namespace.clone(), found.name.clone()))
                .or_insert(found);
        }
        names.sort();
        look.workloads
            .push((format!("{}/{}", workload.kind, workload.name), names, ready));
    }
    look.containers.sort_by(|a, b| a.id.cmp(&b.id));
    look.containers.dedup_by(|a, b| a.id == b.id);
    look.pods = seen.into_values().collect();
    Ok(look)
}

/// The pod a forward reaches: the one it reached while that stays ready, else
/// the first ready pod (by namespace and name) with a container of one of
/// `repositories`.
pub fn forward_target(
    current: Option<&(String, String)>,
    pods: &[PodInfo],
    repositories: &[Repository],
) -> Option<(String, String)> {
    let runs = |pod: &PodInfo| {
        pod.ready
            && pod.images.iter().any(|image| {
                Reference::parse(image).is_ok_and(|r| repositories.contains(r.repository()))
            })
    };
    if let Some((namespace, name)) = current {
        if pods
            .iter()
            .any(|p| &p.namespace == namespace && &p.name == name && runs(p))
        {
            return current.cloned();
        }
    }
    pods.iter()
        .filter(|p| runs(p))
        .map(|p| (p.namespace.clone(), p.name.clone()))
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, ready: bool, image: &str) -> PodInfo {
        PodInfo {
            namespace: "dev".into(),
            name: name.into(),
            ready,
            images: vec![image.into()],
            started: vec![],
        }
    }

    #[test]
    fn a_forward_keeps_its_pod_while_it_is_ready_and_moves_when_it_goes() {
        let repos = [Reference::parse("ghcr.io/acme/web")
            .unwrap()
            .repository()
            .clone()];
        let pods = [
            pod("web-b", true, "ghcr.io/acme/web:v1"),
            pod("web-a", false, "ghcr.io/acme/web:v1"),
            pod("db-0", true, "docker.io/library/postgres:16"),
            pod("web-c", true, "ghcr.io/acme/web:v2"),
        ];
        let key = |n: &str| ("dev".to_string(), n.to_string());
        assert_eq!(
            forward_target(None, &pods, &repos),
            Some(key("web-b")),
            "the first ready one"
        );
        assert_eq!(
            forward_target(Some(&key("web-c")), &pods, &repos),
            Some(key("web-c")),
            "sticky"
        );
        assert_eq!(
            forward_target(Some(&key("web-a")), &pods, &repos),
            Some(key("web-b")),
            "not ready: moves"
        );
        assert_eq!(
            forward_target(Some(&key("gone")), &pods[1..3], &repos),
            None,
            "none ready"
        );
    }
}
