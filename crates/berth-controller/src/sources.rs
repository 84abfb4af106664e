//! The sources a `Berth` names: read by name (data of ConfigMaps and Secrets),
//! labelled `berth.dev/source=true` while a `Berth` names them (the label is
//! what the source watches select by), and unlabelled when none does any more.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, Resource, ResourceExt};
use serde_json::{json, Value};

use crate::desired::{self, SourceKind, Sources};
use crate::reconcile::{Context, Error};
use crate::{SOURCE_LABEL, SOURCE_MANAGER};

/// The data of every named source (`None` for a missing one), and the existing
/// sources that do not carry the source label yet. A source whose
/// resourceVersion (as the source watch shows it) is the one last read is not
/// read again.
pub(crate) async fn read_sources(
    context: &Context,
    namespace: &str,
    named: &[(SourceKind, String)],
) -> Result<(Sources, Vec<(SourceKind, String)>), Error> {
    let mut out = Sources::new();
    let mut unlabelled = Vec::new();
    for (kind, name) in named {
        let known = context
            .watched
            .source_version(*kind, namespace, name)
            .and_then(|version| context.source_data.at(*kind, namespace, name, &version));
        let data = match known {
            Some(data) => data,
            None => {
                let read = read_source(&context.client, namespace, *kind, name).await?;
                match read {
                    Some((version, labelled, data)) => {
                        if labelled {
                            let kept = Some(data.clone());
                            context
                                .source_data
                                .keep(*kind, namespace, name, version, kept);
                        } else {
                            unlabelled.push((*kind, name.clone()));
                        }
                        Some(data)
                    }
                    None => None,
                }
            }
        };
        out.insert((*kind, name.clone()), data);
    }
    Ok((out, unlabelled))
}

/// One source read by name: its resourceVersion, whether it carries the source
/// label, and its data (a ConfigMap's `data` and `binaryData`, a Secret's
/// `data` and `stringData`); `None` when it does not exist.
async fn read_source(
    client: &Client,
    namespace: &str,
    kind: SourceKind,
    name: &str,
) -> Result<Option<(String, bool, BTreeMap<String, Vec<u8>>)>, Error> {
    let labelled = |labels: Option<&BTreeMap<String, String>>| {
        labels.and_then(|l| l.get(SOURCE_LABEL)).map(String::as_str) == Some("true")
    };
    Ok(match kind {
        SourceKind::ConfigMap => {
            let maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
            maps.get_opt(name).await?.map(|cm| {
                let mut data: BTreeMap<String, Vec<u8>> = cm
                    .data
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.into_bytes()))
                    .collect();
                for (k, v) in cm.binary_data.unwrap_or_default() {
                    data.insert(k, v.0);
                }
                let version = cm.metadata.resource_version.clone().unwrap_or_default();
                (version, labelled(cm.metadata.labels.as_ref()), data)
            })
        }
        SourceKind::Secret => {
            let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
            secrets.get_opt(name).await?.map(|s| {
                let mut data: BTreeMap<String, Vec<u8>> = s
                    .data
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.0))
                    .collect();
                for (k, v) in s.string_data.unwrap_or_default() {
                    data.insert(k, v.into_bytes());
                }
                let version = s.metadata.resource_version.clone().unwrap_or_default();
                (version, labelled(s.metadata.labels.as_ref()), data)
            })
        }
    })
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

/// Puts the source label on a source (or takes it off); returns the source's
/// resourceVersion after that.
pub(crate) async fn patch_source(
    client: &Client,
    namespace: &str,
    kind: SourceKind,
    name: &str,
    labelled: bool,
) -> Result<Option<String>, Error> {
    let params = PatchParams::apply(SOURCE_MANAGER).force();
    let body = source_body(kind, name, namespace, labelled);
    Ok(match kind {
        SourceKind::ConfigMap => {
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
            api.patch(name, &params, &Patch::Apply(&body))
                .await?
                .resource_version()
        }
        SourceKind::Secret => {
            let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
            api.patch(name, &params, &Patch::Apply(&body))
                .await?
                .resource_version()
        }
    })
}

/// Removes the source label from labelled objects of `namespace` (as the
/// source watches show them) that no `Berth` (but `leaving`, which is being
/// deleted) names any more, and forgets the data of sources no longer named.
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
    for (kind, name) in context.watched.labelled_sources(namespace) {
        if !named.contains(&(kind, name.clone())) {
            patch_source(&context.client, namespace, kind, &name, false).await?;
        }
    }
    context.source_data.retain(namespace, |kind, name| {
        named.contains(&(kind, name.to_string()))
    });
    Ok(())
}
