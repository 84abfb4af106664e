//! `berth controller uninstall`: what the controller leaves behind that blocks
//! a clean removal once it is gone. Each `Berth` carries the controller's
//! finalizer (it unlabels the Berth's sources when the Berth goes); with no
//! controller running, deleting a Berth, its namespace or the CRD would hang in
//! Terminating. This removes the finalizer from every Berth in scope and the
//! `berth.dev/source` label from the sources the controller labelled — exactly
//! what the finalizer would have done — and nothing else: the workloads and
//! generated objects stay, owned by their Berth, and go with it.
//!
//! Run it after the controller has stopped (the chart's pre-delete hook does,
//! after scaling the controller to zero), or a running controller adds its
//! finalizer back on its next reconcile.

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube::api::{ListParams, Patch, PatchParams};
use kube::core::PartialObjectMeta;
use kube::{Api, Client, ResourceExt as _};

use crate::context::Error;
use crate::desired::SourceKind;
use crate::types::Berth;
use crate::{FINALIZER, SOURCE_LABEL};

/// What one run changed, as `Kind namespace/name`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Uninstalled {
    /// Berths whose finalizer was removed.
    pub finalizers: Vec<String>,
    /// Sources whose label was removed.
    pub sources: Vec<String>,
}

/// Removes the controller's finalizer from every Berth and its label from every
/// source, in `namespace` or in all namespaces.
pub async fn uninstall(client: &Client, namespace: &Option<String>) -> Result<Uninstalled, Error> {
    let mut done = Uninstalled::default();
    let berths: Api<Berth> = crate::scope::api(client, namespace);
    for berth in berths.list(&ListParams::default()).await? {
        if !berth.finalizers().iter().any(|f| f == FINALIZER) {
            continue;
        }
        let (ns, name) = (berth.namespace().unwrap_or_default(), berth.name_any());
        let rest: Vec<&String> = berth
            .finalizers()
            .iter()
            .filter(|f| *f != FINALIZER)
            .collect();
        // With the resourceVersion read: a finalizer list that changed meanwhile
        // is a conflict, never overwritten.
        let patch = serde_json::json!({"metadata": {
            "resourceVersion": berth.resource_version(),
            "finalizers": rest,
        }});
        let api: Api<Berth> = Api::namespaced(client.clone(), &ns);
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        done.finalizers.push(format!("Berth {ns}/{name}"));
    }
    let selector = ListParams::default().labels(SOURCE_LABEL);
    let maps: Api<PartialObjectMeta<ConfigMap>> = crate::scope::api(client, namespace);
    for map in maps.list_metadata(&selector).await? {
        let (ns, name) = (map.namespace().unwrap_or_default(), map.name_any());
        crate::sources::unlabel(client, &ns, SourceKind::ConfigMap, &name).await?;
        done.sources.push(format!("ConfigMap {ns}/{name}"));
    }
    let secrets: Api<PartialObjectMeta<Secret>> = crate::scope::api(client, namespace);
    for secret in secrets.list_metadata(&selector).await? {
        let (ns, name) = (secret.namespace().unwrap_or_default(), secret.name_any());
        crate::sources::unlabel(client, &ns, SourceKind::Secret, &name).await?;
        done.sources.push(format!("Secret {ns}/{name}"));
    }
    Ok(done)
}

/// Scales the controller's Deployment `name` in `namespace` to zero and waits,
/// at most `timeout`, until none of its pods is left (terminating ones
/// included): a controller still running would put its finalizer back on the
/// next reconcile. What the chart's pre-delete hook runs before [`uninstall`].
pub async fn stop(
    client: &Client,
    namespace: &str,
    name: &str,
    timeout: Duration,
) -> Result<(), Error> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let deployment = match deployments.get_opt(name).await? {
        Some(d) => d,
        None => return Ok(()),
    };
    let selector = deployment
        .spec
        .selector
        .match_labels
        .as_ref()
        .map(|labels| {
            labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    deployments
        .patch_scale(
            name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"replicas": 0}})),
        )
        .await?;
    if selector.is_empty() {
        return Ok(());
    }
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let started = Instant::now();
    loop {
        let left = pods
            .list_metadata(&ListParams::default().labels(&selector))
            .await?;
        if left.items.is_empty() {
            return Ok(());
        }
        if started.elapsed() > timeout {
            return Err(Error::Stopping {
                deployment: format!("{namespace}/{name}"),
                pods: left.items.len(),
                waited: timeout,
            });
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
