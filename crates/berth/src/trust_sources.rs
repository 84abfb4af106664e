//! The CA bundle sources berth reads from a cluster (`{configMap, key}` and
//! `{clusterTrustBundle: …}`): read by the commands that connect (apply, diff,
//! dev) before they render, so a bundle's name covers what was read and a
//! rotated CA rolls exactly the workloads that trust it.

use anyhow::{anyhow, Result};
use berth_core::configs::ca::ClusterPem;
use berth_core::configs::trust_bundles::{self, TrustBundle};
use berth_core::project::ClusterObject;
use berth_core::Project;
use berth_kube::{Cluster, ObjectRef, Shape};
use serde_json::Value;

/// Whether any CA bundle of the project reads the cluster.
pub fn any(project: &Project) -> bool {
    project
        .ca_bundles
        .iter()
        .any(|b| !b.cluster_sources.is_empty())
}

/// The PEM of every cluster source of the project's CA bundles, read once
/// each; a missing object or key is an error naming it and where it is written.
pub async fn read(cluster: &Cluster, project: &Project) -> Result<Vec<ClusterPem>> {
    let mut out: Vec<ClusterPem> = Vec::new();
    for bundle in &project.ca_bundles {
        for source in &bundle.cluster_sources {
            if out.iter().any(|read| read.from == source.from) {
                continue;
            }
            let at = |problem: String| {
                anyhow!(
                    "{}:{}: caBundles.{}: {problem}",
                    project.file,
                    source.pos,
                    bundle.name
                )
            };
            let pem = match &source.from {
                ClusterObject::ConfigMap { name, key } => {
                    config_map(cluster, name, key).await?.map_err(at)?
                }
                from => trust_bundles(cluster, from).await?.map_err(at)?,
            };
            out.push(ClusterPem {
                from: source.from.clone(),
                pem,
            });
        }
    }
    Ok(out)
}

/// A ConfigMap's key in the cluster's namespace; `Err` says what is missing.
async fn config_map(
    cluster: &Cluster,
    name: &str,
    key: &str,
) -> Result<std::result::Result<String, String>> {
    let object = ObjectRef {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: name.to_string(),
        namespace: Some(cluster.namespace.clone()),
    };
    let namespace = &cluster.namespace;
    let Some(found) = cluster.get(&object).await? else {
        return Ok(Err(format!("configMap `{name}` is not in namespace `{namespace}`; create it, or name the namespace with --namespace")));
    };
    let pem = found
        .get("data")
        .and_then(|d| d.get(key))
        .and_then(Value::as_str);
    Ok(pem
        .map(str::to_string)
        .ok_or_else(|| format!("configMap `{name}` in namespace `{namespace}` has no key `{key}`")))
}

/// One ClusterTrustBundle's PEM (read by name: `get` is all it needs), or a
/// signer's (listed by labels; which ones, the core decides).
async fn trust_bundles(
    cluster: &Cluster,
    from: &ClusterObject,
) -> Result<std::result::Result<String, String>> {
    let Some(api) = cluster.trust_bundle_api().await? else {
        return Ok(Err(format!(
            "{} needs the ClusterTrustBundle API, but {}",
            from.describe(),
            trust_bundles::NOT_SERVED
        )));
    };
    let found: Vec<TrustBundle> = match from {
        ClusterObject::TrustBundle { name } => {
            let object = ObjectRef {
                api_version: api.api_version.clone(),
                kind: trust_bundles::KIND.into(),
                name: name.clone(),
                namespace: None,
            };
            let found = cluster.get(&object).await?;
            found.iter().map(TrustBundle::from_json).collect()
        }
        ClusterObject::Signer { labels, .. } => {
            let selector = ClusterObject::selector(labels);
            let listed = cluster.list(
                &api.api_version,
                trust_bundles::KIND,
                "",
                &selector,
                Shape::Objects,
            );
            listed.await?.iter().map(TrustBundle::from_json).collect()
        }
        ClusterObject::ConfigMap { .. } => Vec::new(),
    };
    Ok(trust_bundles::pem(from, &found).ok_or_else(|| {
        let check = match from {
            ClusterObject::Signer { signer_name, .. } => format!("kubectl get clustertrustbundles --field-selector spec.signerName={signer_name} --show-labels"),
            _ => "kubectl get clustertrustbundles".to_string(),
        };
        format!("{}; check with `{check}`", from.missing())
    }))
}
