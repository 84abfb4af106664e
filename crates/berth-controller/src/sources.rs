//! The sources a `Berth` names: read by name (data of ConfigMaps and Secrets),
//! labelled `berth.dev/source=true` while a `Berth` names them (the label is
//! what the source watches select by), and unlabelled when none does any more.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::ByteString;
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, Resource, ResourceExt};
use serde_json::{json, Value};

use crate::context::{Context, Error};
use crate::desired::{self, SourceKind, Sources};
use crate::{SOURCE_LABEL, SOURCE_MANAGER};

/// The data of every named source (`None` for a missing one). A source the
/// source watch shows is read only when its resourceVersion is not the one
/// last read; one the watch does not show (not labelled yet, or missing) is
/// labelled, and the label's patch answers with its data: one request, and a
/// missing source is answered 404, not created.
pub(crate) async fn read_sources(
    context: &Context,
    namespace: &str,
    named: &[(SourceKind, String)],
) -> Result<Sources, Error> {
    let mut out = Sources::new();
    for (kind, name) in named {
        let watched = context.watched.source_version(*kind, namespace, name);
        let known = watched
            .as_ref()
            .and_then(|version| context.source_data.at(*kind, namespace, name, version));
        let data = match known {
            Some(data) => data,
            None => {
                let how = if watched.is_some() {
                    Fetch::Read
                } else {
                    Fetch::Label
                };
                let found = fetch_source(&context.client, namespace, *kind, name, how)
                    .await
                    .map_err(|error| Error::Source {
                        verb: match how {
                            Fetch::Read => "get",
                            Fetch::Label => "patch",
                        },
                        kind: *kind,
                        name: name.clone(),
                        error,
                    })?;
                if let Some((version, data)) = &found {
                    let kept = Some(data.clone());
                    context
                        .source_data
                        .keep(*kind, namespace, name, version.clone(), kept);
                }
                found.map(|(_, data)| data)
            }
        };
        out.insert((*kind, name.clone()), data);
    }
    Ok(out)
}

/// How a source is fetched: read, or labelled (the patch answers with the object).
#[derive(Clone, Copy)]
enum Fetch {
    Read,
    Label,
}

/// A merge patch that puts the source label on (`true`) or takes it off:
/// a merge patch of a missing object is a 404, where an apply would create it.
fn label_patch(labelled: bool) -> Patch<Value> {
    let value = if labelled { json!("true") } else { Value::Null };
    Patch::Merge(json!({"metadata": {"labels": { SOURCE_LABEL: value }}}))
}

/// One source's resourceVersion and data (a ConfigMap's `data` and
/// `binaryData`, a Secret's `data` and `stringData`); `None` when it does not exist.
async fn fetch_source(
    client: &Client,
    namespace: &str,
    kind: SourceKind,
    name: &str,
    how: Fetch,
) -> Result<Option<(String, BTreeMap<String, Vec<u8>>)>, kube::Error> {
    let params = PatchParams {
        field_manager: Some(SOURCE_MANAGER.into()),
        ..PatchParams::default()
    };
    Ok(match kind {
        SourceKind::ConfigMap => {
            let maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
            fetch_one(&maps, name, how, &params).await?.map(|cm| {
                // `binaryData` and `data` never share a key (the API server refuses that).
                let data = merged(cm.data, cm.binary_data);
                (cm.metadata.resource_version.unwrap_or_default(), data)
            })
        }
        SourceKind::Secret => {
            let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
            fetch_one(&secrets, name, how, &params).await?.map(|s| {
                // `stringData` is write-only and wins over `data`, as the API server merges it.
                let data = merged(s.string_data, s.data);
                (s.metadata.resource_version.unwrap_or_default(), data)
            })
        }
    })
}

/// Text and binary entries as bytes; a text entry wins a key both have.
fn merged(
    text: Option<BTreeMap<String, String>>,
    binary: Option<BTreeMap<String, ByteString>>,
) -> BTreeMap<String, Vec<u8>> {
    let mut data: BTreeMap<String, Vec<u8>> = binary
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.0))
        .collect();
    data.extend(
        text.unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.into_bytes())),
    );
    data
}

/// One object read, or labelled as a source (the patch returns it), `None`
/// when it does not exist.
async fn fetch_one<K>(
    api: &Api<K>,
    name: &str,
    how: Fetch,
    params: &PatchParams,
) -> Result<Option<K>, kube::Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    Ok(match how {
        Fetch::Read => api.get_opt(name).await?,
        Fetch::Label => missing(api.patch(name, params, &label_patch(true)).await)?,
    })
}

/// A 404 as `None`.
fn missing<K>(answer: Result<K, kube::Error>) -> Result<Option<K>, kube::Error> {
    match answer {
        Ok(found) => Ok(Some(found)),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(None),
        Err(e) => Err(e),
    }
}

/// Takes the source label off a source (gone already is fine).
pub(crate) async fn unlabel(
    client: &Client,
    namespace: &str,
    kind: SourceKind,
    name: &str,
) -> Result<(), Error> {
    let params = PatchParams {
        field_manager: Some(SOURCE_MANAGER.into()),
        ..PatchParams::default()
    };
    let answer = match kind {
        SourceKind::ConfigMap => {
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
            missing(api.patch(name, &params, &label_patch(false)).await).map(drop)
        }
        SourceKind::Secret => {
            let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
            missing(api.patch(name, &params, &label_patch(false)).await).map(drop)
        }
    };
    answer.map_err(|error| Error::Source {
        verb: "patch",
        kind,
        name: name.to_string(),
        error,
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
            unlabel(&context.client, namespace, kind, &name).await?;
        }
    }
    context.source_data.retain(namespace, |kind, name| {
        named.contains(&(kind, name.to_string()))
    });
    Ok(())
}
