//! Which `Berth`s name which source: a source's change is mapped to the
//! Berths to reconcile by one lookup instead of a scan of every Berth (with
//! 2,000 Berths and a busy namespace of ConfigMaps, the scan ran the spec walk
//! of every Berth for every change of any labelled source).
//!
//! A reconcile records what its Berth names before it reads a source (so a
//! Berth waiting for a source that does not exist yet is found when it
//! appears); the finalizer's clean-up removes it. A lookup's answers are
//! checked against the Berth as the store has it now, so an entry left stale
//! can cost a lookup, never a wrong reconcile.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use kube::runtime::reflector::{ObjectRef, Store};

use crate::desired::{sources_named, SourceKind};
use crate::types::Berth;

/// A source: its kind, namespace and name.
type Source = (SourceKind, String, String);

/// Sources → the Berths that name them, and back.
#[derive(Default)]
pub(crate) struct SourceIndex(Mutex<Index>);

#[derive(Default)]
struct Index {
    users: HashMap<Source, HashSet<ObjectRef<Berth>>>,
    named: HashMap<ObjectRef<Berth>, Vec<Source>>,
}

impl SourceIndex {
    /// Records that `berth` names `sources` now (and nothing it named before).
    pub(crate) fn set(&self, berth: &Berth, sources: &[(SourceKind, String)]) {
        let key = ObjectRef::from_obj(berth);
        let namespace = key.namespace.clone().unwrap_or_default();
        let sources: Vec<Source> = sources
            .iter()
            .map(|(kind, name)| (*kind, namespace.clone(), name.clone()))
            .collect();
        let mut index = self.lock();
        index.remove(&key);
        for source in &sources {
            index
                .users
                .entry(source.clone())
                .or_default()
                .insert(key.clone());
        }
        index.named.insert(key, sources);
    }

    /// Forgets `berth` (it is going).
    pub(crate) fn remove(&self, berth: &Berth) {
        self.lock().remove(&ObjectRef::from_obj(berth));
    }

    /// The Berths of `store` that name the source, as the store has them now.
    pub(crate) fn users(
        &self,
        store: &Store<Berth>,
        kind: SourceKind,
        namespace: Option<String>,
        name: String,
    ) -> Vec<ObjectRef<Berth>> {
        let source = (kind, namespace.unwrap_or_default(), name);
        let candidates: Vec<ObjectRef<Berth>> = self
            .lock()
            .users
            .get(&source)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default();
        candidates
            .into_iter()
            .filter(|key| {
                store.get(key).is_some_and(|berth| {
                    sources_named(&berth).contains(&(source.0, source.2.clone()))
                })
            })
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Index> {
        berth_io::locked(&self.0)
    }
}

impl Index {
    fn remove(&mut self, key: &ObjectRef<Berth>) {
        for source in self.named.remove(key).unwrap_or_default() {
            if let Some(users) = self.users.get_mut(&source) {
                users.remove(key);
                if users.is_empty() {
                    self.users.remove(&source);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::reflector::store::Writer;
    use kube::runtime::watcher;

    fn berth(name: &str, map: &str) -> Berth {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "Berth",
            "metadata": {"name": name, "namespace": "team"},
            "spec": {"workloads": [], "configs": {"app": {"fromConfigMap": {"name": map, "key": "k"}}}}
        }))
        .unwrap()
    }

    #[test]
    fn a_source_finds_the_berths_that_name_it_and_only_while_they_do() {
        let index = SourceIndex::default();
        let mut writer: Writer<Berth> = Writer::default();
        let store = writer.as_reader();
        let (a, b) = (berth("a", "shared"), berth("b", "own"));
        for berth in [&a, &b] {
            writer.apply_watcher_event(&watcher::Event::Apply(berth.clone()));
            index.set(berth, &sources_named(berth));
        }
        let users = |name: &str| {
            index.users(
                &store,
                SourceKind::ConfigMap,
                Some("team".into()),
                name.into(),
            )
        };
        assert_eq!(users("shared"), vec![ObjectRef::from_obj(&a)]);
        assert_eq!(users("own"), vec![ObjectRef::from_obj(&b)]);
        assert!(users("other").is_empty());
        // Another namespace's source of that name is another source.
        assert!(index
            .users(
                &store,
                SourceKind::ConfigMap,
                Some("x".into()),
                "shared".into()
            )
            .is_empty());
        // b now names `shared` too; its old source no longer finds it.
        let b2 = berth("b", "shared");
        writer.apply_watcher_event(&watcher::Event::Apply(b2.clone()));
        index.set(&b2, &sources_named(&b2));
        assert_eq!(users("shared").len(), 2);
        assert!(users("own").is_empty());
        // A Berth that went is found no more, even before the index forgets it.
        writer.apply_watcher_event(&watcher::Event::Delete(a.clone()));
        assert_eq!(users("shared"), vec![ObjectRef::from_obj(&b2)]);
        index.remove(&a);
        assert_eq!(index.lock().named.len(), 1);
    }
}
