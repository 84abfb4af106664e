//! The leader's clean-up after GitOps engines: config generations rendered for
//! Flux or Argo CD (labelled `berth.dev/gitops`, never pruned by the engine)
//! are deleted once nothing in their namespace uses them, keeping the `keep`
//! newest of each config — what `berth gc` does once, continuously.
//!
//! Watched: those generations only, metadata only and label-selected, so
//! memory does not grow with the cluster's other ConfigMaps and Secrets. A
//! namespace is looked at when one of its generations changes, and again every
//! [`RECHECK`] while an old generation is still in use (its ReplicaSet still
//! runs pods): the generation goes once that rollout has finished. Each look
//! lists the namespace's pods and workloads as metadata and reads whole only
//! those whose resourceVersion changed since the last ([`References`]).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use berth_core::gitops::{Verdict, GITOPS_LABEL};
use berth_kube::{Cluster, References};
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::core::PartialObjectMeta;
use kube::runtime::events::{Event, EventType, Recorder};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Client, ResourceExt};

use crate::scope::api;
use crate::serve::Metrics;
use crate::shutdown::Shutdown;

/// How often a namespace with an old generation still in use is looked at again.
pub const RECHECK: Duration = Duration::from_secs(10);
/// Changes are gathered this long before a namespace is looked at.
const SETTLE: Duration = Duration::from_millis(500);

/// What the collector keeps between looks: the namespaces where an old
/// generation is still in use, and what their pods and workloads named (read
/// again only where it changed).
#[derive(Default)]
struct Looks {
    waiting: BTreeSet<String>,
    references: References,
}

/// What the collector needs.
pub struct Collector {
    /// The controller's client.
    pub client: Client,
    /// One namespace, or all.
    pub namespace: Option<String>,
    /// The API server's URL, for messages.
    pub server: String,
    /// Generations of each config to keep.
    pub keep: usize,
    /// Where deletions are counted.
    pub metrics: Arc<Metrics>,
    /// Where Events go.
    pub recorder: Recorder,
}

impl Collector {
    /// Runs until `shutdown`.
    pub async fn run(self, shutdown: Shutdown) {
        let mut changes =
            futures_util::stream::select(self.touched::<ConfigMap>(), self.touched::<Secret>())
                .boxed();
        let throttle = crate::logged::Throttle::default();
        let mut pending: BTreeSet<String> = BTreeSet::new();
        let mut looks = Looks::default();
        let mut settle = tokio::time::interval(SETTLE);
        let mut recheck = tokio::time::interval(RECHECK);
        loop {
            tokio::select! {
                () = shutdown.requested() => return,
                change = changes.next() => match change {
                    Some(Ok(Some(namespace))) => { pending.insert(namespace); }
                    Some(Ok(None)) => {}
                    Some(Err(e)) => {
                        let error = crate::logged::error(&e);
                        if let Some(suppressed) = throttle.admit(&error) {
                            tracing::warn!(%error, suppressed, "watch of kept config generations (retrying with back-off)");
                        }
                    }
                    None => return,
                },
                _ = settle.tick() => {
                    for namespace in std::mem::take(&mut pending) {
                        self.collect(&namespace, &mut looks).await;
                    }
                }
                _ = recheck.tick() => {
                    for namespace in looks.waiting.clone() {
                        self.collect(&namespace, &mut looks).await;
                    }
                }
            }
        }
    }

    /// The namespaces of kept generations of kind `K` as they change: a
    /// label-selected metadata watch, backing off on errors.
    fn touched<K>(
        &self,
    ) -> impl futures_util::Stream<Item = Result<Option<String>, watcher::Error>> + Send
    where
        K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>,
        K: Clone + std::fmt::Debug + Send + Sync + 'static,
        K: serde::de::DeserializeOwned,
    {
        watcher(
            api::<PartialObjectMeta<K>>(&self.client, &self.namespace),
            watcher::Config::default().labels(GITOPS_LABEL),
        )
        .backoff(crate::backoff::WatchBackoff::collector())
        .touched_objects()
        .map(|r| r.map(|o| o.namespace()))
    }

    /// Looks at `namespace` once; remembers it in `looks` while an old
    /// generation there is still in use.
    async fn collect(&self, namespace: &str, looks: &mut Looks) {
        let cluster = Cluster::new(self.client.clone(), namespace, self.server.as_str());
        let mut deleted = Vec::new();
        let judged = cluster
            .collect_generations(
                namespace,
                self.keep,
                false,
                &mut looks.references,
                &mut |kept| deleted.push(kept.clone()),
            )
            .await;
        let judged = match judged {
            Ok(collected) => {
                for foreign in &collected.foreign {
                    tracing::debug!(namespace, object = %format!("{}/{}", foreign.kind, foreign.name), why = %foreign.why, "left a labelled object that is not provably berth's");
                }
                collected.judged
            }
            Err(e) => {
                tracing::warn!(namespace, error = %crate::logged::error(&e), "could not clean up kept config generations; trying again");
                looks.waiting.insert(namespace.to_string());
                return;
            }
        };
        for kept in deleted {
            self.metrics.generation_deleted(&kept.kind);
            tracing::info!(namespace, object = %format!("{}/{}", kept.kind, kept.name), config = %kept.config, "deleted an old config generation nothing uses");
            let event = Event {
                type_: EventType::Normal,
                reason: "GenerationDeleted".into(),
                note: Some(format!(
                    "{} {} (config `{}` of project `{}`): no pod, workload or ReplicaSet with replicas uses it, and {} newer generation(s) are kept",
                    kept.kind, kept.name, kept.config, kept.project, self.keep
                )),
                action: "Delete".into(),
                secondary: None,
            };
            let reference = k8s_openapi::api::core::v1::ObjectReference {
                api_version: Some("v1".into()),
                kind: Some(kept.kind.clone()),
                name: Some(kept.name.clone()),
                namespace: Some(kept.namespace.clone()),
                ..Default::default()
            };
            if let Err(e) = self.recorder.publish(&event, &reference).await {
                tracing::warn!(error = %crate::logged::error(&e), "could not publish an Event");
            }
        }
        if judged.iter().any(|j| j.verdict == Verdict::InUse) {
            looks.waiting.insert(namespace.to_string());
        } else {
            looks.waiting.remove(namespace);
            looks.references.forget(namespace);
        }
    }
}
