//! What the pods and workloads of a namespace name, kept between the GitOps
//! collector's looks by each object's resourceVersion.
//!
//! The collector looks at a namespace again every few seconds while an old
//! config generation there is still in use. Reading every Pod and workload
//! whole each time cost as much as the namespace is large; now each look lists
//! metadata only and reads whole just the objects whose resourceVersion
//! changed since the last look (or lists the kind whole when many did).
//!
//! Not label-selected: a pod that names a generation need not carry any label
//! of berth's (a Deployment of the user's own that names a generated config),
//! and a config such a pod uses must never be judged unused.

use std::collections::{BTreeSet, HashMap};

use berth_core::configs::ConfigKind;
use berth_core::kinds::WorkloadKind;
use berth_core::render::referenced;
use futures_util::stream::{self, StreamExt, TryStreamExt};
use serde_json::Value;

use crate::connect::Cluster;
use crate::deploy::CONCURRENCY;
use crate::error::ClusterError;
use crate::ops::Shape;

/// More changed objects of one kind than this: one list of them all instead of
/// a read of each.
const READ_ONE_BY_ONE: usize = 32;

/// `(kind, namespace, name)`.
type Key = (WorkloadKind, String, String);

/// What each pod and workload named when last read, by resourceVersion.
#[derive(Debug, Default)]
pub struct References {
    entries: HashMap<Key, Entry>,
}

#[derive(Debug)]
struct Entry {
    version: String,
    /// The configs it names; none once it no longer runs anything.
    uses: Vec<(ConfigKind, String)>,
}

impl References {
    /// Forgets `namespace` (nothing there is waited for any more): the cache
    /// holds only namespaces being looked at.
    pub fn forget(&mut self, namespace: &str) {
        self.entries.retain(|(_, ns, _), _| ns != namespace);
    }

    /// Objects remembered.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn keep(&mut self, kind: WorkloadKind, namespace: &str, object: &Value) {
        let (Some(name), Some(version)) = (
            object.pointer("/metadata/name").and_then(Value::as_str),
            object
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str),
        ) else {
            return;
        };
        let entry = Entry {
            version: version.to_string(),
            uses: uses(kind, object),
        };
        self.entries
            .insert((kind, namespace.to_string(), name.to_string()), entry);
    }
}

/// The configs `object` (of `kind`) names, when it still runs anything.
fn uses(kind: WorkloadKind, object: &Value) -> Vec<(ConfigKind, String)> {
    if !live(kind, object) {
        return Vec::new();
    }
    let mut node = berth_yaml::json::from_json(object);
    referenced(&mut node, kind.as_str()).into_iter().collect()
}

/// Whether an object of `kind` still uses what its pods name.
pub(crate) fn live(kind: WorkloadKind, object: &Value) -> bool {
    let number = |p: &str| object.pointer(p).and_then(Value::as_i64).unwrap_or(0);
    match kind {
        WorkloadKind::Pod => !matches!(
            object.pointer("/status/phase").and_then(Value::as_str),
            Some("Succeeded" | "Failed")
        ),
        WorkloadKind::ReplicaSet => number("/spec/replicas") > 0 || number("/status/replicas") > 0,
        _ => true,
    }
}

/// The kinds whose pods may name a config.
fn users() -> impl Iterator<Item = WorkloadKind> {
    WorkloadKind::ALL.into_iter().filter(|k| {
        !matches!(
            k,
            WorkloadKind::PodTemplate | WorkloadKind::ReplicationController
        )
    })
}

impl Cluster {
    /// `(kind, namespace, name)` of every ConfigMap and Secret that a running
    /// pod, a workload's template or a ReplicaSet with replicas in `namespace`
    /// names; reads only what changed since `references` last saw it.
    pub async fn referenced_in(
        &self,
        namespace: &str,
        references: &mut References,
    ) -> Result<BTreeSet<(String, String, String)>, ClusterError> {
        for kind in users() {
            self.refresh(kind, namespace, references).await?;
        }
        Ok(references
            .entries
            .iter()
            .filter(|((_, ns, _), _)| ns == namespace)
            .flat_map(|(_, entry)| &entry.uses)
            .map(|(config, name)| {
                let kind = config.as_str().to_string();
                (kind, namespace.to_string(), name.clone())
            })
            .collect())
    }

    /// Brings what `references` holds of `kind` in `namespace` up to date.
    async fn refresh(
        &self,
        kind: WorkloadKind,
        namespace: &str,
        references: &mut References,
    ) -> Result<(), ClusterError> {
        let (api_version, name) = (kind.api_version(), kind.as_str());
        let listed = self
            .list(api_version, name, namespace, "", Shape::Metadata)
            .await?;
        let now: HashMap<String, String> = listed
            .iter()
            .filter_map(|item| {
                let name = item.pointer("/metadata/name")?.as_str()?;
                let version = item.pointer("/metadata/resourceVersion")?.as_str()?;
                Some((name.to_string(), version.to_string()))
            })
            .collect();
        references
            .entries
            .retain(|(k, ns, object), _| *k != kind || ns != namespace || now.contains_key(object));
        let changed: Vec<&String> = now
            .iter()
            .filter(|(object, version)| {
                let key = (kind, namespace.to_string(), (*object).clone());
                references.entries.get(&key).map(|e| &e.version) != Some(*version)
            })
            .map(|(object, _)| object)
            .collect();
        if changed.len() > READ_ONE_BY_ONE {
            for object in self
                .list(api_version, name, namespace, "", Shape::Objects)
                .await?
            {
                references.keep(kind, namespace, &object);
            }
            return Ok(());
        }
        let reads = changed.into_iter().map(|object| {
            let object = berth_core::cluster::ObjectRef {
                api_version: api_version.into(),
                kind: name.into(),
                name: object.clone(),
                namespace: Some(namespace.into()),
            };
            async move { self.get(&object).await }
        });
        let read: Vec<Option<Value>> = stream::iter(reads)
            .buffer_unordered(CONCURRENCY)
            .try_collect()
            .await?;
        // One gone between the list and its read: the next look drops it.
        for object in read.into_iter().flatten() {
            references.keep(kind, namespace, &object);
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "references_tests.rs"]
mod tests;
