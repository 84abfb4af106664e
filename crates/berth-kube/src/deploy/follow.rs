//! The workloads of an apply followed while `berth apply` waits for their
//! rollouts: one watch per kind and namespace keeps the newest of each
//! workload and wakes the wait when one changes. The wait then judges what
//! the watch delivered instead of reading every pending workload again after
//! a pause that doubles up to a second — which, with 100 Deployments, was up
//! to a second late and a read of each per look.
//!
//! A watch that cannot start or breaks (RBAC without `watch`, a proxy that cuts
//! long answers) is retried after a pause doubling to 30 s; meanwhile the wait reads, as before,
//! whatever the watch has not shown it.

use std::sync::{Arc, Mutex};

use kube::api::{Api, DynamicObject, WatchEvent, WatchParams};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::*;

/// How long one watch request lasts on the server before it is made again.
const WATCH_SECONDS: u32 = 60;
/// The pause before a watch that failed is made again, doubling with each
/// failure in a row up to [`LAST_RETRY`].
const RETRY: Duration = Duration::from_secs(1);
/// The longest pause between failed watches.
const LAST_RETRY: Duration = Duration::from_secs(30);

/// The newest state of followed workloads, as the watches show it.
#[derive(Default)]
struct Seen {
    /// Each workload's newest object (`Null`: deleted), not yet judged.
    fresh: BTreeMap<ObjectRef, Value>,
    /// Each workload's newest resourceVersion.
    versions: BTreeMap<ObjectRef, String>,
}

/// Watches of an apply's workloads, stopped on drop.
pub(crate) struct Followed {
    seen: Arc<Mutex<Seen>>,
    changed: Arc<Notify>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Followed {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Followed {
    /// The workloads that changed since the last call, as the watches delivered them.
    pub(crate) fn take(&self) -> BTreeMap<ObjectRef, Value> {
        std::mem::take(&mut berth_io::locked(&self.seen).fresh)
    }

    /// Waits until a followed workload changes, or `at_most` passes.
    pub(crate) async fn changed(&self, at_most: Duration) {
        // A timeout is the wait's own deadline, not a failure.
        let _ = tokio::time::timeout(at_most, self.changed.notified()).await;
    }
}

impl Watches for Followed {
    fn fingerprint(&self, _: &ObjectRef) -> Option<Fingerprint> {
        None
    }

    fn version(&self, object: &ObjectRef) -> Option<String> {
        berth_io::locked(&self.seen).versions.get(object).cloned()
    }

    fn generations(&self, _: &str, _: &str, _: &str) -> Option<Vec<(String, String)>> {
        None
    }
}

impl Cluster {
    /// Starts a watch per kind and namespace of `workloads`.
    pub(crate) async fn follow(&self, workloads: &[&ObjectRef]) -> Followed {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let changed = Arc::new(Notify::new());
        let mut groups: BTreeMap<(String, String, Option<String>), Vec<ObjectRef>> =
            BTreeMap::new();
        for object in workloads {
            let key = (
                object.api_version.clone(),
                object.kind.clone(),
                object.namespace.clone(),
            );
            groups.entry(key).or_default().push((*object).clone());
        }
        let mut tasks = Vec::new();
        for (_, objects) in groups {
            // A kind the server does not serve: the wait's reads say so.
            let Ok((api, _)) = self.api(&objects[0]).await else {
                continue;
            };
            tasks.push(tokio::spawn(watch(
                api,
                objects,
                Arc::clone(&seen),
                Arc::clone(&changed),
            )));
        }
        Followed {
            seen,
            changed,
            tasks,
        }
    }
}

/// Watches `api` for `objects` (all of one kind and namespace) until aborted.
async fn watch(
    api: Api<DynamicObject>,
    objects: Vec<ObjectRef>,
    seen: Arc<Mutex<Seen>>,
    changed: Arc<Notify>,
) {
    let params = WatchParams::default().timeout(WATCH_SECONDS);
    // "0": the server's cache first (every object as ADDED), then each change.
    let mut version = "0".to_string();
    let mut pause = RETRY;
    loop {
        let Ok(stream) = api.watch(&params, &version).await else {
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(LAST_RETRY);
            continue;
        };
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            let (object, deleted) = match event {
                Ok(WatchEvent::Added(o) | WatchEvent::Modified(o)) => (o, false),
                Ok(WatchEvent::Deleted(o)) => (o, true),
                Ok(WatchEvent::Bookmark(mark)) => {
                    version = mark.metadata.resource_version;
                    continue;
                }
                // 410 Gone (too old a version) or a broken stream: start again.
                Ok(WatchEvent::Error(_)) | Err(_) => {
                    version = "0".into();
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(LAST_RETRY);
                    break;
                }
            };
            pause = RETRY; // the watch works again
            if let Some(v) = &object.metadata.resource_version {
                version.clone_from(v);
            }
            let name = object.metadata.name.as_deref().unwrap_or_default();
            let Some(followed) = objects.iter().find(|o| o.name == name) else {
                continue;
            };
            let value = match deleted {
                true => Value::Null,
                false => serde_json::to_value(&object).unwrap_or(Value::Null),
            };
            {
                let mut seen = berth_io::locked(&seen);
                seen.versions.insert(followed.clone(), version.clone());
                seen.fresh.insert(followed.clone(), value);
            }
            changed.notify_one();
        }
    }
}
