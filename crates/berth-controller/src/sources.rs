//! The sources a `Berth` names: read by name (data of ConfigMaps and Secrets),
//! labelled `berth.dev/source=true` while a `Berth` names them (the label is
//! what the source watches select by), and unlabelled when none does any more.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::{Client, Resource, ResourceExt};
use serde_json::{json, Value};

use crate::desired::{self, SourceKind, Sources};
use crate::reconcile::{Context, Error};
use crate::{SOURCE_LABEL, SOURCE_MANAGER};

/// The data of every named source (`None` for a missing one), and the existing
/// sources that do not carry the source label yet.
pub(crate) async fn read_sources(
    client: &Client,
    namespace: &str,
    named: &[(SourceKind, String)],
) -> Result<(Sources, Vec<(SourceKind, String)>), Error> {
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let mut out = Sources::new();
    let mut unlabelled = Vec::new();
    let labelled = |labels: Option<&std::collections::BTreeMap<String, String>>| {
        labels.and_then(|l| l.get(SOURCE_LABEL)).map(String::as_str) == Some("true")
    };
    for (kind, name) in named {
        let data = match kind {
            SourceKind::ConfigMap => maps.get_opt(name).await?.map(|cm| {
                if !labelled(cm.metadata.labels.as_ref()) {
                    unlabelled.push((*kind, name.clone()));
                }
                let mut data: std::collections::BTreeMap<String, Vec<u8>> = cm
                    .data
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.into_bytes()))
                    .collect();
                for (k, v) in cm.binary_data.unwrap_or_default() {
                    data.insert(k, v.0);
                }
                data
            }),
            SourceKind::Secret => secrets.get_opt(name).await?.map(|s| {
                if !labelled(s.metadata.labels.as_ref()) {
                    unlabelled.push((*kind, name.clone()));
                }
                let mut data: std::collections::BTreeMap<String, Vec<u8>> = s
                    .data
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.0))
                    .collect();
                for (k, v) in s.string_data.unwrap_or_default() {
                    data.insert(k, v.into_bytes());
                }
                data
            }),
        };
        out.insert((*kind, name.clone()), data);
    }
    Ok((out, unlabelled))
}

fn source_body(kind: SourceKind, name: &str, namespace: &str, labelled: bool) -> Value {
    let mut body = json!({
        "apiVersion": "v1",
        "kind": match kind { SourceKind::ConfigMap => "ConfigMap", SourceKind::Secret => "Secret" },
        "metadata": {"name": name, "namespace": namespace},
    });
    if labelled {
        body["metadata"]["labels"] = json!({ SOURCE_LABEL: "true" });
    }
    body
}

pub(crate) async fn patch_source(
    client: &Client,
    namespace: &str,
    kind: SourceKind,
    name: &str,
    labelled: bool,
) -> Result<(), Error> {
    let params = PatchParams::apply(SOURCE_MANAGER).force();
    let body = source_body(kind, name, namespace, labelled);
    match kind {
        SourceKind::ConfigMap => {
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
            api.patch(name, &params, &Patch::Apply(&body)).await?;
        }
        SourceKind::Secret => {
            let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
            api.patch(name, &params, &Patch::Apply(&body)).await?;
        }
    }
    Ok(())
}

/// Removes the source label from labelled objects of `namespace` that no `Berth`
/// (but `leaving`, which is being deleted) names any more.
pub(crate) async fn unlabel_unused(
    context: &Context,
    namespace: &str,
    leaving: Option<&str>,
) -> Result<(), Error> {
    let named: BTreeSet<(SourceKind, String)> = context
        .berths
        .state()
        .iter()
        .filter(|b| b.namespace().as_deref() == Some(namespace))
        .filter(|b| Some(b.name_any().as_str()) != leaving && b.meta().deletion_timestamp.is_none())
        .flat_map(|b| desired::sources_named(b))
        .collect();
    let selector = ListParams::default().labels(&format!("{SOURCE_LABEL}=true"));
    let maps: Api<ConfigMap> = Api::namespaced(context.client.clone(), namespace);
    for cm in maps.list_metadata(&selector).await? {
        let name = cm.name_any();
        if !named.contains(&(SourceKind::ConfigMap, name.clone())) {
            patch_source(
                &context.client,
                namespace,
                SourceKind::ConfigMap,
                &name,
                false,
            )
            .await?;
        }
    }
    let secrets: Api<Secret> = Api::namespaced(context.client.clone(), namespace);
    for s in secrets.list_metadata(&selector).await? {
        let name = s.name_any();
        if !named.contains(&(SourceKind::Secret, name.clone())) {
            patch_source(&context.client, namespace, SourceKind::Secret, &name, false).await?;
        }
    }
    Ok(())
}
