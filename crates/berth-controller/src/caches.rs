//! What the controller keeps between reconciles, so a reconcile that changes
//! nothing asks the API server for nothing but the rollout's state.
//!
//! - [`Watched`]: the metadata of the objects it applied and of the sources it
//!   reads, from its label-selected metadata watches (reflector stores; memory
//!   grows with what it manages, not with the namespace). Each object's
//!   [`Fingerprint`] says whether anyone touched what the controller applied;
//!   the generated configs' labels what clean-up may delete; each source's
//!   resourceVersion whether its data changed.
//! - [`Memory`]: per `Berth`, what its last reconcile left: the apply records
//!   and fingerprints (`berth_kube::Remembered`), and the status written. The
//!   controller is the only writer of these while it holds the Lease (its writes
//!   are fenced); anything unexpected is an error, after which it is forgotten
//!   and the next reconcile reads everything from the server again.
//! - [`SourceData`]: the data of each source at a resourceVersion, read again
//!   only when the watch shows a new one.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use berth_core::cluster::{
    fingerprint, Fingerprint, ObjectRef, CONFIG_LABEL, MANAGED_BY, PROJECT_LABEL,
};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, Store};
use kube::{Resource, ResourceExt};
use serde_json::json;

use crate::desired::SourceKind;
use crate::types::{Berth, BerthStatus};

/// The stores of the controller's owned and source watches: metadata, and
/// the workloads whole but trimmed (`crate::workloads`).
#[derive(Clone)]
pub(crate) struct Watched {
    pub(crate) deployments: Store<Deployment>,
    pub(crate) stateful_sets: Store<StatefulSet>,
    pub(crate) daemon_sets: Store<DaemonSet>,
    pub(crate) jobs: Store<Job>,
    pub(crate) config_maps: Store<PartialObjectMeta<ConfigMap>>,
    pub(crate) secrets: Store<PartialObjectMeta<Secret>>,
    pub(crate) source_maps: Store<PartialObjectMeta<ConfigMap>>,
    pub(crate) source_secrets: Store<PartialObjectMeta<Secret>>,
}

/// The fingerprint of `object` for `manager`, as `berth_core` reads it.
fn of_meta<K: Resource>(object: &K, manager: &str) -> Option<Fingerprint> {
    let metadata = object.meta();
    fingerprint(
        &json!({"metadata": {"uid": metadata.uid, "managedFields": metadata.managed_fields}}),
        manager,
    )
}

fn lookup<K>(store: &Store<K>, name: &str, namespace: &str) -> Option<std::sync::Arc<K>>
where
    K: Resource<DynamicType = ()> + Clone,
{
    store.get(&reflector::ObjectRef::new(name).within(namespace))
}

impl berth_kube::Watches for Watched {
    fn fingerprint(&self, object: &ObjectRef) -> Option<Fingerprint> {
        self.fingerprint_for(object, crate::MANAGER)
    }

    fn version(&self, object: &ObjectRef) -> Option<String> {
        let namespace = object.namespace.as_deref()?;
        let name = object.name.as_str();
        match (object.api_version.as_str(), object.kind.as_str()) {
            ("apps/v1", "Deployment") => {
                lookup(&self.deployments, name, namespace)?.resource_version()
            }
            ("apps/v1", "StatefulSet") => {
                lookup(&self.stateful_sets, name, namespace)?.resource_version()
            }
            ("apps/v1", "DaemonSet") => {
                lookup(&self.daemon_sets, name, namespace)?.resource_version()
            }
            ("batch/v1", "Job") => lookup(&self.jobs, name, namespace)?.resource_version(),
            _ => None,
        }
    }

    fn object(&self, object: &ObjectRef) -> Option<serde_json::Value> {
        let namespace = object.namespace.as_deref()?;
        let name = object.name.as_str();
        // The typed objects serialise with their apiVersion and kind.
        match (object.api_version.as_str(), object.kind.as_str()) {
            ("apps/v1", "Deployment") => {
                serde_json::to_value(&*lookup(&self.deployments, name, namespace)?).ok()
            }
            ("apps/v1", "StatefulSet") => {
                serde_json::to_value(&*lookup(&self.stateful_sets, name, namespace)?).ok()
            }
            ("apps/v1", "DaemonSet") => {
                serde_json::to_value(&*lookup(&self.daemon_sets, name, namespace)?).ok()
            }
            ("batch/v1", "Job") => {
                serde_json::to_value(&*lookup(&self.jobs, name, namespace)?).ok()
            }
            _ => None,
        }
    }

    fn generations(
        &self,
        kind: &str,
        namespace: &str,
        project: &str,
    ) -> Option<Vec<(String, String)>> {
        fn of<K>(
            store: &Store<PartialObjectMeta<K>>,
            namespace: &str,
            project: &str,
        ) -> Vec<(String, String)>
        where
            PartialObjectMeta<K>: Resource<DynamicType = ()> + Clone,
        {
            in_namespace(store, namespace)
                .iter()
                .filter_map(|o| {
                    let labels = o.labels();
                    let ours = labels.get(MANAGED_BY.0).map(String::as_str) == Some(MANAGED_BY.1)
                        && labels.get(PROJECT_LABEL).map(String::as_str) == Some(project);
                    let config = labels.get(CONFIG_LABEL).filter(|_| ours)?;
                    Some((config.clone(), o.name_any()))
                })
                .collect()
        }
        match kind {
            "ConfigMap" => Some(of(&self.config_maps, namespace, project)),
            "Secret" => Some(of(&self.secrets, namespace, project)),
            _ => None,
        }
    }
}

impl Watched {
    /// `object`'s fingerprint for `manager` as the watch shows it now; `None`
    /// for a kind not watched or an object not seen.
    fn fingerprint_for(&self, object: &ObjectRef, manager: &str) -> Option<Fingerprint> {
        let namespace = object.namespace.as_deref()?;
        let name = object.name.as_str();
        match (object.api_version.as_str(), object.kind.as_str()) {
            ("apps/v1", "Deployment") => {
                of_meta(&*lookup(&self.deployments, name, namespace)?, manager)
            }
            ("apps/v1", "StatefulSet") => {
                of_meta(&*lookup(&self.stateful_sets, name, namespace)?, manager)
            }
            ("apps/v1", "DaemonSet") => {
                of_meta(&*lookup(&self.daemon_sets, name, namespace)?, manager)
            }
            ("batch/v1", "Job") => of_meta(&*lookup(&self.jobs, name, namespace)?, manager),
            ("v1", "ConfigMap") => of_meta(&*lookup(&self.config_maps, name, namespace)?, manager),
            ("v1", "Secret") => of_meta(&*lookup(&self.secrets, name, namespace)?, manager),
            _ => None,
        }
    }

    /// The resourceVersion of a labelled source as the watch shows it now.
    pub(crate) fn source_version(
        &self,
        kind: SourceKind,
        namespace: &str,
        name: &str,
    ) -> Option<String> {
        match kind {
            SourceKind::ConfigMap => lookup(&self.source_maps, name, namespace)?.resource_version(),
            SourceKind::Secret => lookup(&self.source_secrets, name, namespace)?.resource_version(),
        }
    }

    /// The sources of `namespace` that carry the source label, as the watch shows them.
    pub(crate) fn labelled_sources(&self, namespace: &str) -> Vec<(SourceKind, String)> {
        let maps = names_in(&self.source_maps, namespace)
            .into_iter()
            .map(|n| (SourceKind::ConfigMap, n));
        let secrets = names_in(&self.source_secrets, namespace)
            .into_iter()
            .map(|n| (SourceKind::Secret, n));
        maps.chain(secrets).collect()
    }
}

/// The objects of `store` in `namespace`.
fn in_namespace<K>(
    store: &Store<PartialObjectMeta<K>>,
    namespace: &str,
) -> Vec<std::sync::Arc<PartialObjectMeta<K>>>
where
    PartialObjectMeta<K>: Resource<DynamicType = ()> + Clone,
{
    let mut found = store.state();
    found.retain(|o| o.namespace().as_deref() == Some(namespace));
    found
}

/// The names of the objects of `store` in `namespace`.
fn names_in<K>(store: &Store<PartialObjectMeta<K>>, namespace: &str) -> Vec<String>
where
    PartialObjectMeta<K>: Resource<DynamicType = ()> + Clone,
{
    in_namespace(store, namespace)
        .iter()
        .map(|o| o.name_any())
        .collect()
}

/// What the last reconcile of one `Berth` (by uid) left.
#[derive(Debug, Default)]
pub(crate) struct Memory {
    uid: String,
    /// What its last apply session knew: its records, fingerprints and the
    /// last look at its rollouts.
    pub(crate) applied: Option<berth_kube::Known>,
    /// The status it last wrote (or found unchanged).
    pub(crate) status: Option<BerthStatus>,
}

/// [`Memory`] of every `Berth` this replica reconciled.
#[derive(Default)]
pub(crate) struct Memories(Mutex<HashMap<kube::runtime::reflector::ObjectRef<Berth>, Memory>>);

impl Memories {
    /// What the last apply session of `berth` knew, taken out: the session
    /// resumes from it and [`Memories::update`] puts back what it knows after.
    /// Moved, never copied — the records may be hundreds of MiB — and safe to
    /// take, as kube-runtime never reconciles one object twice at a time and a
    /// failed reconcile forgets the memory anyway.
    pub(crate) fn take_applied(&self, berth: &Berth) -> Option<berth_kube::Known> {
        let uid = berth.uid().unwrap_or_default();
        let mut memories = berth_io::locked(&self.0);
        (memories.get_mut(&reflector::ObjectRef::from_obj(berth)))
            .filter(|m| m.uid == uid)
            .and_then(|m| m.applied.take())
    }

    /// The status the last reconcile of `berth` wrote (or found unchanged).
    pub(crate) fn status(&self, berth: &Berth) -> Option<BerthStatus> {
        let uid = berth.uid().unwrap_or_default();
        berth_io::locked(&self.0)
            .get(&reflector::ObjectRef::from_obj(berth))
            .filter(|m| m.uid == uid)
            .and_then(|m| m.status.clone())
    }

    /// Keeps what a reconcile of `berth` left, with `change`.
    pub(crate) fn update(&self, berth: &Berth, change: impl FnOnce(&mut Memory)) {
        let uid = berth.uid().unwrap_or_default();
        {
            let mut memories = berth_io::locked(&self.0);
            let memory = memories
                .entry(reflector::ObjectRef::from_obj(berth))
                .or_default();
            if memory.uid != uid {
                *memory = Memory {
                    uid,
                    ..Memory::default()
                };
            }
            change(memory);
        }
    }

    /// Forgets `berth`: after an error, or when it goes.
    pub(crate) fn forget(&self, berth: &kube::runtime::reflector::ObjectRef<Berth>) {
        {
            let mut memories = berth_io::locked(&self.0);
            memories.remove(berth);
        }
    }
}

/// A source's data as read at a resourceVersion.
type Read = (String, Option<BTreeMap<String, Vec<u8>>>);

/// The data of the sources read, by kind, namespace and name.
#[derive(Default)]
pub(crate) struct SourceData(Mutex<HashMap<(SourceKind, String, String), Read>>);

impl SourceData {
    /// The data read of a source at `version`, when that is what was read.
    pub(crate) fn at(
        &self,
        kind: SourceKind,
        namespace: &str,
        name: &str,
        version: &str,
    ) -> Option<Option<BTreeMap<String, Vec<u8>>>> {
        let data = berth_io::locked(&self.0);
        let (read, data) = data.get(&(kind, namespace.to_string(), name.to_string()))?;
        (read == version).then(|| data.clone())
    }

    /// Keeps the data of a source read at `version`.
    pub(crate) fn keep(
        &self,
        kind: SourceKind,
        namespace: &str,
        name: &str,
        version: String,
        data: Option<BTreeMap<String, Vec<u8>>>,
    ) {
        {
            let mut cache = berth_io::locked(&self.0);
            cache.insert(
                (kind, namespace.to_string(), name.to_string()),
                (version, data),
            );
        }
    }

    /// Forgets every source of `namespace` that `used` says no `Berth` names,
    /// so memory follows the sources in use.
    pub(crate) fn retain(&self, namespace: &str, mut used: impl FnMut(SourceKind, &str) -> bool) {
        {
            let mut cache = berth_io::locked(&self.0);
            cache.retain(|(kind, ns, name), _| ns != namespace || used(*kind, name));
        }
    }
}
