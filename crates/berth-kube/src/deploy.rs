//! `berth apply`, `diff` and `rollback` against a cluster: server-side apply
//! (a dry run of everything first, so a conflict or refusal changes nothing),
//! a record of each apply, rollout waits, and clean-up of config generations
//! that only ever deletes berth's own objects, and only after success. The
//! decisions (plan, records, rollout state) are berth-core's; this file carries
//! them out, many requests at a time. Records and clean-up live in `records.rs`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use berth_core::cluster::{
    created_by, deadline_verdict, has_rollout, kinds_to_discover, plan, rollout_status_after,
    Desired, ObjectRef, Planned, Rollout,
};
use futures_util::stream::{self, StreamExt, TryStreamExt};
use serde_json::Value;

use crate::connect::Cluster;
use crate::error::ClusterError;

/// Requests in flight at once: enough to hide the round trip, few enough that
/// a shared API server's priority and fairness never queues berth.
pub const CONCURRENCY: usize = 16;

/// Secrets hold at most 1 MiB; the record's manifest (base64) must fit.
const RECORD_LIMIT: usize = (1024 * 1024 - 16 * 1024) / 4 * 3;

/// Settings of an apply.
#[derive(Debug, Clone)]
pub struct ApplyOptions {
    /// The field manager (`berth`; the controller's is `berth-controller`).
    pub manager: String,
    /// Take over fields other managers own.
    pub force: bool,
    /// Generations of each generated config to keep.
    pub keep: usize,
    /// How long to wait for rollouts; `None` does not wait (and deletes nothing).
    pub wait: Option<Duration>,
    /// An owner reference put on the apply records too (the controller's `Berth`),
    /// so garbage collection removes them with what they recorded.
    pub owner: Option<Value>,
}

/// What happened during an apply, for the caller to show.
#[derive(Debug, Clone)]
pub enum Event {
    /// An object was applied.
    Applied(ObjectRef),
    /// The objects are exactly those of this successful apply record: they were
    /// re-applied (correcting any drift) without a new record.
    Unchanged(String),
    /// Rollout state of every workload still being waited for.
    Waiting(Vec<(ObjectRef, String)>),
    /// A workload finished its rollout.
    RolledOut(ObjectRef),
    /// The apply was recorded (the record's name).
    Recorded(String),
    /// An old generation (or record) was deleted.
    Deleted(ObjectRef),
}

/// One entry of `berth diff`: the live object and what apply would make of it.
#[derive(Debug, Clone)]
pub struct Change {
    /// The object.
    pub object: ObjectRef,
    /// As it is (`None`: it does not exist).
    pub live: Option<Value>,
    /// As the server would have it after apply.
    pub merged: Value,
}

/// Where the newest apply of a project stands, for callers that do not wait
/// (the controller looks again on the next reconcile).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    /// Every workload rolled out; the record is marked succeeded and old
    /// generations were cleaned up.
    RolledOut,
    /// Still going: each workload not yet done, and how far it is.
    Progressing(Vec<(ObjectRef, String)>),
    /// A workload's rollout failed; the record is marked failed, nothing deleted.
    Failed(ObjectRef, String),
}

/// Where one workload's rollout stands.
#[derive(Debug, Clone)]
pub struct RolloutState {
    /// The workload.
    pub object: ObjectRef,
    /// Its state, as `kubectl rollout status` would judge it.
    pub rollout: Rollout,
}

impl Cluster {
    /// The apply plan: discovery of every kind not defined here, then berth-core's plan.
    pub async fn plan(&self, desired: &Desired) -> Result<Vec<Planned>, ClusterError> {
        let kinds = kinds_to_discover(desired);
        // Futures are collected first: a closure inside the stream would make the
        // reconciler's future impossible to prove Send (rust-lang/rust#102211).
        let lookups: Vec<_> = kinds
            .iter()
            .map(|(api_version, kind)| async move {
                Ok::<_, ClusterError>(
                    self.resource(api_version, kind)
                        .await?
                        .map(|(_, namespaced)| namespaced),
                )
            })
            .collect();
        let found: Vec<Option<bool>> = stream::iter(lookups)
            .buffered(CONCURRENCY)
            .try_collect()
            .await?;
        let scopes: BTreeMap<(String, String), bool> = kinds
            .into_iter()
            .zip(found)
            .filter_map(|(k, namespaced)| Some((k, namespaced?)))
            .collect();
        Ok(plan(desired, &self.namespace, &scopes)?)
    }

    /// A server-side dry-run apply of every object, in plan order; a missing CRD or
    /// Namespace that the plan itself creates is expected (`None` for that object).
    async fn dry_run(
        &self,
        objects: &[Planned],
        options: &ApplyOptions,
    ) -> Result<Vec<Option<Value>>, ClusterError> {
        let runs: Vec<_> = objects
            .iter()
            .map(|p| async move {
                match self
                    .apply(&p.object, &p.body, &options.manager, options.force, true)
                    .await
                {
                    Ok(merged) => Ok(Some(merged)),
                    Err(ClusterError::Plan(_) | ClusterError::NamespaceMissing { .. })
                        if created_by(objects, &p.object) =>
                    {
                        Ok(None)
                    }
                    Err(e) => Err(e),
                }
            })
            .collect();
        stream::iter(runs).buffered(CONCURRENCY).try_collect().await
    }

    /// What `berth apply` would change: a server-side dry-run apply of every object
    /// next to the live object.
    pub async fn diff(
        &self,
        desired: &Desired,
        manager: &str,
        force: bool,
    ) -> Result<Vec<Change>, ClusterError> {
        let objects = self.plan(desired).await?;
        let changes: Vec<_> = objects
            .iter()
            .map(|p| async {
                let live = match self.get(&p.object).await {
                    Ok(live) => live,
                    Err(ClusterError::Plan(_)) => None,
                    Err(e) => return Err(e),
                };
                let merged = match self.apply(&p.object, &p.body, manager, force, true).await {
                    Ok(merged) => merged,
                    // Its CRD or Namespace is part of this apply: it would be created as written.
                    Err(ClusterError::Plan(_) | ClusterError::NamespaceMissing { .. })
                        if created_by(&objects, &p.object) =>
                    {
                        p.body.clone()
                    }
                    Err(e) => return Err(e),
                };
                Ok(Change {
                    object: p.object.clone(),
                    live: live.map(normalise),
                    merged: normalise(merged),
                })
            })
            .collect();
        stream::iter(changes)
            .buffered(CONCURRENCY)
            .try_collect()
            .await
    }

    /// Applies `objects` in plan order: Namespaces and CRDs one rank at a time (CRDs
    /// waited on until Established), everything in a rank concurrently.
    async fn apply_all(
        &self,
        objects: &[Planned],
        options: &ApplyOptions,
        events: &mut (dyn FnMut(Event) + Send),
    ) -> Result<(), ClusterError> {
        let mut rest = objects;
        while let Some(first) = rest.first() {
            let rank = berth_core::cluster::apply_rank(&first.object.kind);
            let split = rest
                .iter()
                .position(|p| berth_core::cluster::apply_rank(&p.object.kind) != rank)
                .unwrap_or(rest.len());
            let (batch, later) = rest.split_at(split);
            let applies: Vec<_> = batch
                .iter()
                .map(|p| async move {
                    self.apply(&p.object, &p.body, &options.manager, options.force, false)
                        .await
                        .map(|_| p)
                })
                .collect();
            let mut applied = stream::iter(applies).buffered(CONCURRENCY);
            while let Some(p) = applied.next().await {
                let p = p?;
                if p.object.kind == "CustomResourceDefinition" {
                    self.wait_established(&p.object, &p.body).await?;
                }
                events(Event::Applied(p.object.clone()));
            }
            if batch
                .iter()
                .any(|p| p.object.kind == "CustomResourceDefinition")
            {
                self.forget_kinds();
            }
            rest = later;
        }
        Ok(())
    }

    /// Applies `desired`, records it, waits for rollouts and cleans up old generations.
    /// When the objects are exactly those of the last successful apply, the record
    /// and the clean-up are skipped (they were done for that apply); the dry run
    /// never is: another field manager may have taken a field since, and a
    /// conflict must change nothing.
    pub async fn deploy(
        &self,
        desired: &Desired,
        options: &ApplyOptions,
        rollback_of: Option<u64>,
        events: &mut (dyn FnMut(Event) + Send),
    ) -> Result<(), ClusterError> {
        let objects = self.plan(desired).await?;
        let manifest = serde_json::to_string(&objects.iter().map(|p| &p.body).collect::<Vec<_>>())
            .unwrap_or_default();
        let records = self.records(&desired.project).await?;
        if rollback_of.is_none() {
            if let Some(same) = records.unchanged(&manifest) {
                self.dry_run(&objects, options).await?;
                events(Event::Unchanged(
                    self.record_name(&desired.project, same.record.sequence),
                ));
                self.apply_all(&objects, options, events).await?;
                if let Some(timeout) = options.wait {
                    self.wait_rollouts(&objects, timeout, &BTreeMap::new(), events)
                        .await?;
                }
                return Ok(());
            }
        }
        // A dry run of everything first: conflicts, refusals and invalid objects change nothing.
        let before = self.dry_run(&objects, options).await?;
        // The dry run answers with the status as it is: a deadline verdict there is
        // the previous rollout's.
        let stale: BTreeMap<ObjectRef, String> = objects
            .iter()
            .zip(&before)
            .filter_map(|(p, live)| Some((p.object.clone(), deadline_verdict(live.as_ref()?)?)))
            .collect();
        if manifest.len() > RECORD_LIMIT {
            return Err(ClusterError::Record {
                action: "record the apply".into(),
                message: format!(
                    "the rendered objects take {} bytes, more than a Secret holds (1 MiB); split the project",
                    manifest.len()
                ),
            });
        }
        self.apply_all(&objects, options, events).await?;
        let sequence = records.next_sequence();
        let configs: BTreeMap<String, String> = objects
            .iter()
            .filter_map(|p| {
                desired
                    .generated
                    .get(&p.object.name)
                    .map(|b| (b.clone(), p.object.name.clone()))
            })
            .collect();
        let record = self
            .write_record(
                &desired.project,
                sequence,
                &configs,
                &manifest,
                rollback_of,
                options,
            )
            .await?;
        events(Event::Recorded(record.name.clone()));
        let Some(timeout) = options.wait else {
            return Ok(());
        };
        let outcome = self.wait_rollouts(&objects, timeout, &stale, events).await;
        self.set_record_status(
            &record,
            if outcome.is_ok() {
                "succeeded"
            } else {
                "failed"
            },
        )
        .await?;
        outcome?;
        self.clean_up(&desired.project, options.keep, &objects, events)
            .await
    }

    /// Waits until the CRD is Established and discovery serves its kind: the API
    /// server publishes the new resource a moment after the condition, and an
    /// object of that kind applied in between fails as an unknown kind.
    async fn wait_established(&self, crd: &ObjectRef, body: &Value) -> Result<(), ClusterError> {
        let after = Duration::from_secs(60);
        let deadline = Instant::now() + after;
        let timed_out = || ClusterError::NotEstablished {
            object: Box::new(crd.clone()),
            after,
        };
        if !self.wait_condition(crd, deadline).await? {
            return Err(timed_out());
        }
        let group = body.pointer("/spec/group").and_then(Value::as_str);
        let kind = body.pointer("/spec/names/kind").and_then(Value::as_str);
        let versions: Vec<&str> = body
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .map(|vs| {
                vs.iter()
                    .filter(|v| v["served"] != false)
                    .filter_map(|v| v["name"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        let (Some(group), Some(kind)) = (group, kind) else {
            return Ok(());
        };
        for version in versions {
            let api_version = format!("{group}/{version}");
            loop {
                self.forget_kinds();
                if self.resource(&api_version, kind).await?.is_some() {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(timed_out());
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Ok(())
    }

    /// Whether the CRD became Established before `deadline`.
    async fn wait_condition(
        &self,
        crd: &ObjectRef,
        deadline: Instant,
    ) -> Result<bool, ClusterError> {
        loop {
            let established = self.get(crd).await?.is_some_and(|live| {
                live.pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .is_some_and(|cs| {
                        cs.iter()
                            .any(|c| c["type"] == "Established" && c["status"] == "True")
                    })
            });
            if established {
                return Ok(true);
            }
            if Instant::now() > deadline {
                return Ok(false);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// One look at the rollout of every workload in `objects` (concurrently). A
    /// deadline verdict in `stale` was there before this apply and is not judged.
    pub async fn rollout_states(
        &self,
        objects: &[&ObjectRef],
        stale: &BTreeMap<ObjectRef, String>,
    ) -> Result<Vec<RolloutState>, ClusterError> {
        let looks: Vec<_> = objects
            .iter()
            .map(|object| async move {
                let live = self.get(object).await?.unwrap_or(Value::Null);
                Ok(RolloutState {
                    object: (*object).clone(),
                    rollout: rollout_status_after(
                        &object.kind,
                        &live,
                        stale.get(*object).map(String::as_str),
                    ),
                })
            })
            .collect();
        stream::iter(looks)
            .buffered(CONCURRENCY)
            .try_collect()
            .await
    }

    /// One look at the rollouts of `desired`'s newest apply: when all are done the
    /// record is marked succeeded and old generations go (keeping `keep`); when one
    /// failed the record is marked failed. Nothing else is changed.
    pub async fn settle(&self, desired: &Desired, keep: usize) -> Result<Settled, ClusterError> {
        let objects = self.plan(desired).await?;
        let records = self.records(&desired.project).await?;
        let Some(newest) = records.all().last() else {
            return Ok(Settled::Progressing(Vec::new()));
        };
        let record = self.record_ref(&self.record_name(&desired.project, newest.record.sequence));
        let workloads: Vec<&ObjectRef> = objects
            .iter()
            .map(|p| &p.object)
            .filter(|o| has_rollout(&o.kind))
            .collect();
        let mut progressing = Vec::new();
        for state in self.rollout_states(&workloads, &BTreeMap::new()).await? {
            match state.rollout {
                Rollout::Done => {}
                Rollout::Failed(reason) => {
                    if !newest.failed {
                        self.set_record_status(&record, "failed").await?;
                    }
                    return Ok(Settled::Failed(state.object, reason));
                }
                Rollout::Progressing(how) => progressing.push((state.object, how)),
            }
        }
        if !progressing.is_empty() {
            return Ok(Settled::Progressing(progressing));
        }
        if !newest.succeeded {
            self.set_record_status(&record, "succeeded").await?;
            self.clean_up(&desired.project, keep, &objects, &mut |_| {})
                .await?;
        }
        Ok(Settled::RolledOut)
    }

    /// Waits until every workload of `objects` has rolled out, one fails, or `timeout`
    /// passes. Polls quickly at first (most rollouts of unchanged or small workloads
    /// are done at once) and backs off to once a second.
    pub async fn wait_rollouts(
        &self,
        objects: &[Planned],
        timeout: Duration,
        stale: &BTreeMap<ObjectRef, String>,
        events: &mut (dyn FnMut(Event) + Send),
    ) -> Result<(), ClusterError> {
        let deadline = Instant::now() + timeout;
        let mut pending: Vec<&ObjectRef> = objects
            .iter()
            .map(|p| &p.object)
            .filter(|o| has_rollout(&o.kind))
            .collect();
        let mut interval = Duration::from_millis(50);
        while !pending.is_empty() {
            let mut still = Vec::new();
            let mut waiting = Vec::new();
            for state in self.rollout_states(&pending, stale).await? {
                match state.rollout {
                    Rollout::Done => events(Event::RolledOut(state.object)),
                    Rollout::Failed(reason) => {
                        return Err(ClusterError::RolloutFailed {
                            object: Box::new(state.object),
                            reason,
                        })
                    }
                    Rollout::Progressing(how) => waiting.push((state.object, how)),
                }
            }
            for (object, _) in &waiting {
                still.extend(pending.iter().find(|p| **p == object));
            }
            pending = still;
            if pending.is_empty() {
                break;
            }
            events(Event::Waiting(waiting.clone()));
            let now = Instant::now();
            if now >= deadline {
                let (object, state) = waiting.swap_remove(0);
                return Err(ClusterError::RolloutTimeout {
                    object: Box::new(object),
                    after: timeout,
                    state,
                });
            }
            tokio::time::sleep(interval.min(deadline - now)).await;
            interval = (interval * 2).min(Duration::from_secs(1));
        }
        Ok(())
    }
}

/// Drops what changes on every write and says nothing about the desired state.
fn normalise(mut object: Value) -> Value {
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for key in [
            "managedFields",
            "resourceVersion",
            "generation",
            "uid",
            "creationTimestamp",
        ] {
            metadata.remove(key);
        }
    }
    object
}
