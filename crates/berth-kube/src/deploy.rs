//! `berth apply`, `diff` and `rollback` against a cluster: server-side apply
//! (a dry run first, so a conflict or refusal changes nothing; berth's own
//! configs, applied first, need none — see [`berth_core::cluster::unchecked`]),
//! a record of each apply, rollout waits, and clean-up of config generations
//! that only ever deletes berth's own objects, and only after success. The
//! decisions (plan, records, rollout state) are berth-core's; this file carries
//! them out, many requests at a time. Records and clean-up live in `records.rs`.

use crate::ops::Shape;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use berth_core::cluster::{
    apply_path, created_by, deadline_verdict, fingerprint, has_rollout, judge, kinds_to_discover,
    plan, rollout_status_after, untouched, ApplyPath, Desired, Fingerprint, ObjectRef, Observation,
    Planned, ReadFingerprint, Record, RecordInfo, RecordStatus, Records, Rollout, Settled,
};
use futures_util::stream::{self, StreamExt, TryStreamExt};
use serde_json::Value;

mod follow;
mod rollout;

use crate::connect::Cluster;
use crate::error::ClusterError;
use crate::remember::{fingerprints_of, Known, Outcome, Watches};

/// Requests in flight at once: enough to hide the round trip, few enough that
/// a shared API server's priority and fairness never queues berth.
pub const CONCURRENCY: usize = 16;

/// The largest rendered project berth records: what it reads back
/// ([`crate::records`] unpacks at most this much). Records are gzipped and split
/// over as many Secrets as they need, so one Secret's size is no limit.
const RECORD_LIMIT: usize = (berth_io::limits::FILE * 4) as usize;

/// Settings of an apply.
#[derive(Debug, Clone)]
pub struct ApplyOptions {
    /// The field manager (`berth`; the controller's is `berth-controller`).
    pub manager: String,
    /// Take over fields other managers own.
    pub force: bool,
    /// Generations of each generated config to keep.
    pub keep: usize,
    /// An owner reference put on the apply records too (the controller's `Berth`),
    /// so garbage collection removes them with what they recorded.
    pub owner: Option<Value>,
}

/// What happened during an apply, for the caller to show.
#[derive(Debug, Clone)]
pub enum Event {
    /// An object was applied.
    Applied(ObjectRef),
    /// The objects are exactly those of this apply record (the newest): what
    /// drifted was applied again, nothing else, and no new record written.
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
    /// For a new generation of a generated config: the name of the live
    /// generation it replaces, which `live` then holds, so the change reads as
    /// the keys that changed rather than a whole new object.
    pub replaces: Option<String>,
}

/// What an apply left for its observers: the planned objects and the record of
/// the apply (new, or the unchanged one it repeated), so observing it needs no
/// second plan and no second read of the records.
#[derive(Debug, Clone)]
pub(crate) struct Deployed {
    /// The objects as applied, in plan order.
    pub(crate) objects: Vec<Planned>,
    /// The record: its sequence, status and stale deadline verdicts.
    pub(crate) record: RecordInfo,
    /// The project the record belongs to.
    pub(crate) project: String,
    /// What the session knows after the apply (and its observations).
    pub(crate) known: Known,
    /// Which way the apply went.
    pub(crate) outcome: Outcome,
    /// The workloads this apply applied, as the server answered: the first
    /// observation judges these instead of reading them again.
    pub(crate) answered: BTreeMap<ObjectRef, Value>,
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

    /// A server-side dry-run apply of every object but those `skipped` says, in
    /// plan order; a missing CRD or Namespace that the plan itself creates is
    /// expected (`None` for that object, as for one skipped).
    async fn dry_run(
        &self,
        objects: &[Planned],
        skipped: &[bool],
        options: &ApplyOptions,
    ) -> Result<Vec<Option<Value>>, ClusterError> {
        let runs: Vec<_> = objects
            .iter()
            .zip(skipped.iter().chain(std::iter::repeat(&false)))
            .map(|(p, &skip)| async move {
                if skip {
                    return Ok(None);
                }
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
        let mut listed = self.live_objects(&desired.project, &objects).await;
        let objects = &objects;
        let changes: Vec<_> = objects
            .iter()
            .map(|p| (p, listed.remove(&p.object)))
            .map(|(p, listed)| async move {
                let live = match listed {
                    Some(live) => Some(live),
                    None => match self.get(&p.object).await {
                        Ok(live) => live,
                        Err(ClusterError::Plan(_)) => None,
                        Err(e) => return Err(e),
                    },
                };
                let (live, replaces) = match (live, desired.generated.get(&p.object.name)) {
                    (None, Some(config)) => {
                        match self
                            .previous_generation(&p.object, &desired.project, config)
                            .await?
                        {
                            Some((name, previous)) => (Some(previous), Some(name)),
                            None => (None, None),
                        }
                    }
                    (live, _) => (live, None),
                };
                let merged = match self.apply(&p.object, &p.body, manager, force, true).await {
                    Ok(merged) => merged,
                    // Its CRD or Namespace is part of this apply: it would be created as written.
                    Err(ClusterError::Plan(_) | ClusterError::NamespaceMissing { .. })
                        if created_by(objects, &p.object) =>
                    {
                        p.body.clone()
                    }
                    Err(e) => return Err(e),
                };
                Ok(Change {
                    object: p.object.clone(),
                    live: live.map(normalise),
                    merged: normalise(merged),
                    replaces,
                })
            })
            .collect();
        stream::iter(changes)
            .buffered(CONCURRENCY)
            .try_collect()
            .await
    }

    /// The newest live generation of generated config `config` of `project`
    /// beside `object` (same kind and namespace, found by berth's labels), whole:
    /// what a new generation replaces.
    async fn previous_generation(
        &self,
        object: &ObjectRef,
        project: &str,
        config: &str,
    ) -> Result<Option<(String, Value)>, ClusterError> {
        let namespace = object
            .namespace
            .clone()
            .unwrap_or_else(|| self.namespace.clone());
        let selector = format!(
            "{},{}={config}",
            berth_core::cluster::project_selector(project),
            berth_core::cluster::CONFIG_LABEL
        );
        let found = self
            .list(
                &object.api_version,
                &object.kind,
                &namespace,
                &selector,
                Shape::Metadata,
            )
            .await?;
        let newest = found
            .iter()
            .filter_map(|o| {
                let name = o.pointer("/metadata/name")?.as_str()?;
                let created = o.pointer("/metadata/creationTimestamp")?.as_str()?;
                Some((created.to_string(), name.to_string()))
            })
            .filter(|(_, name)| *name != object.name)
            .max();
        let Some((_, name)) = newest else {
            return Ok(None);
        };
        let previous = ObjectRef {
            name: name.clone(),
            namespace: Some(namespace),
            ..object.clone()
        };
        Ok(self.get(&previous).await?.map(|live| (name, live)))
    }

    /// Applies `objects` in plan order: Namespaces and CRDs one rank at a time (CRDs
    /// waited on until Established), everything in a rank concurrently.
    /// Returns each object as the server answered the apply.
    async fn apply_all(
        &self,
        objects: &[Planned],
        options: &ApplyOptions,
        events: &mut (dyn FnMut(Event) + Send),
    ) -> Result<BTreeMap<ObjectRef, Value>, ClusterError> {
        let mut answers = BTreeMap::new();
        let mut rest = objects;
        while let Some(first) = rest.first() {
            let split = rest
                .iter()
                .position(|p| p.rank != first.rank)
                .unwrap_or(rest.len());
            let (batch, later) = rest.split_at(split);
            let applies: Vec<_> = batch
                .iter()
                .map(|p| async move {
                    self.apply(&p.object, &p.body, &options.manager, options.force, false)
                        .await
                        .map(|applied| (p, applied))
                })
                .collect();
            let mut applied = stream::iter(applies).buffered(CONCURRENCY);
            while let Some(answer) = applied.next().await {
                let (p, applied) = answer?;
                answers.insert(p.object.clone(), applied);
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
        Ok(answers)
    }

    /// Applies `desired` and records it; never waits ([`crate::Applier`] does).
    /// When the objects are exactly those of the newest record, no new record
    /// is written: that record's rollout is observed again (a retried failed
    /// rollout does not pile up records), and only what drifted is applied
    /// again. The dry run is skipped only when `known` (what the session knew,
    /// with the caller's watches) shows that nobody touched an object since this
    /// process applied it: another field manager may have taken a field, and a
    /// conflict must change nothing.
    pub(crate) async fn apply_objects(
        &self,
        desired: &Desired,
        options: &ApplyOptions,
        rollback_of: Option<u64>,
        known: Option<(Known, &dyn Watches)>,
        events: &mut (dyn FnMut(Event) + Send),
    ) -> Result<Deployed, ClusterError> {
        let objects = self.plan(desired).await?;
        let manifest = serde_json::to_string(&objects.iter().map(|p| &p.body).collect::<Vec<_>>())
            .unwrap_or_default();
        let (mut records, known, mut looks, now) = match known {
            Some((k, watches)) => (k.records, k.fingerprints, k.looks, Some(watches)),
            None => {
                let listed = self.records(&desired.project).await?;
                (listed, BTreeMap::new(), BTreeMap::new(), None)
            }
        };
        let refs: Vec<&ObjectRef> = objects.iter().map(|p| &p.object).collect();
        let read_now = now.map(|w| move |o: &ObjectRef| w.fingerprint(o));
        let read_now = read_now.as_ref().map(|f| f as ReadFingerprint<'_>);
        let path = apply_path(
            &records,
            &manifest,
            rollback_of.is_some(),
            untouched(&refs, &known, read_now),
        );
        let path = match path {
            ApplyPath::Untouched(same) => Some((same.clone(), true)),
            ApplyPath::CheckDrift(same) => Some((same.clone(), false)),
            ApplyPath::NewRecord => None,
        };
        let mut answered = BTreeMap::new();
        let (record, fingerprints, outcome) = match path {
            Some((same, true)) => {
                events(Event::Unchanged(
                    self.record_name(&desired.project, same.record.sequence),
                ));
                (same, known, Outcome::Untouched)
            }
            Some((same, false)) => {
                // A dry run of everything first: conflicts and refusals change nothing.
                let before = self.dry_run(&objects, &[], options).await?;
                events(Event::Unchanged(
                    self.record_name(&desired.project, same.record.sequence),
                ));
                // Only what drifted is applied again: an unchanged reconcile writes nothing.
                let (drifted, mut fingerprints, live) = self
                    .drifted(&desired.project, &objects, &before, &options.manager)
                    .await?;
                let answers = self.apply_all(&drifted, options, events).await?;
                fingerprints.extend(fingerprints_of(&answers, &options.manager));
                // The live workloads just read are as fresh as the apply's answers.
                answered = workloads_of(live);
                answered.extend(workloads_of(answers));
                let reapplied = drifted.len();
                (same, fingerprints, Outcome::Checked { reapplied })
            }
            None => {
                let (record, fingerprints, answers) = self
                    .record_new(
                        NewRecord {
                            desired,
                            objects: &objects,
                            manifest,
                            rollback_of,
                        },
                        &mut records,
                        options,
                        events,
                    )
                    .await?;
                answered = answers;
                // Another record: its stale verdicts may judge differently.
                looks.clear();
                (record, fingerprints, Outcome::Recorded)
            }
        };
        looks.retain(|object, _| objects.iter().any(|p| &p.object == object));
        Ok(Deployed {
            objects,
            record,
            project: desired.project.clone(),
            known: Known {
                records,
                fingerprints,
                looks,
            },
            outcome,
            answered,
        })
    }

    /// An apply of objects no record holds yet: a dry run of everything (but
    /// berth's configs when they go first), the apply, and a new record (refused when the objects are more than berth
    /// records). The record, the fingerprints and the workloads as answered.
    async fn record_new(
        &self,
        new: NewRecord<'_>,
        records: &mut Records,
        options: &ApplyOptions,
        events: &mut (dyn FnMut(Event) + Send),
    ) -> Result<
        (
            RecordInfo,
            BTreeMap<ObjectRef, Fingerprint>,
            BTreeMap<ObjectRef, Value>,
        ),
        ClusterError,
    > {
        let NewRecord {
            desired,
            objects,
            manifest,
            rollback_of,
        } = new;
        // Berth's own configs, when first, need none (see `unchecked`).
        let skipped = berth_core::cluster::unchecked(objects);
        let before = self.dry_run(objects, &skipped, options).await?;
        if manifest.len() > RECORD_LIMIT {
            return Err(ClusterError::Record {
                action: "record the apply".into(),
                message: format!(
                    "the rendered objects take {} bytes, more than berth records ({}); split the project",
                    manifest.len(),
                    berth_io::limits::size(RECORD_LIMIT as u64)
                ),
            });
        }
        // The dry run answers with the status as it is: a deadline verdict
        // there is the previous rollout's, and the record says so.
        let stale = objects
            .iter()
            .zip(&before)
            .filter_map(|(p, live)| Some((p.object.path(), deadline_verdict(live.as_ref()?)?)))
            .collect();
        let answers = self.apply_all(objects, options, events).await?;
        let fingerprints = fingerprints_of(&answers, &options.manager);
        let answered = workloads_of(answers);
        let configs: BTreeMap<String, String> = objects
            .iter()
            .filter_map(|p| {
                desired
                    .generated
                    .get(&p.object.name)
                    .map(|b| (b.clone(), p.object.name.clone()))
            })
            .collect();
        let record = RecordInfo {
            record: Record {
                sequence: records.next_sequence(),
                configs,
            },
            status: RecordStatus::Pending,
            stale,
            rollback_of,
            manifest: None,
            parts: 1,
        };
        let (written, parts) = self
            .write_record(&desired.project, &record, &manifest, options)
            .await?;
        events(Event::Recorded(written.name));
        records.push(RecordInfo {
            manifest: Some(manifest.to_string()),
            parts,
            ..record.clone()
        });
        Ok((record, fingerprints, answered))
    }

    /// The objects whose dry-run result (`dry`, in the order of `objects`) is not
    /// the live object: those an apply would change (someone edited a field
    /// berth sets, or deleted the object). One GET each, many at a time; no
    /// write. Also the fingerprint (for `manager`) of each object that did not drift.
    #[allow(clippy::type_complexity)]
    async fn drifted(
        &self,
        project: &str,
        objects: &[Planned],
        dry: &[Option<Value>],
        manager: &str,
    ) -> Result<
        (
            Vec<Planned>,
            BTreeMap<ObjectRef, Fingerprint>,
            BTreeMap<ObjectRef, Value>,
        ),
        ClusterError,
    > {
        let mut listed = self.live_objects(project, objects).await;
        let looks: Vec<_> = objects
            .iter()
            .zip(dry)
            .map(|(planned, dry)| {
                let listed = listed.remove(&planned.object);
                async move {
                    let Some(dry) = dry else {
                        return Ok((None, Err(planned.clone())));
                    };
                    let live = match listed {
                        Some(live) => Some(live),
                        None => self.get(&planned.object).await?,
                    };
                    let Some(live) = live else {
                        return Ok((None, Err(planned.clone())));
                    };
                    let now = fingerprint(&live, manager).map(|f| (planned.object.clone(), f));
                    let same = normalise(live.clone()) == normalise(dry.clone());
                    let live = Some((planned.object.clone(), live));
                    Ok::<_, ClusterError>(match same {
                        true => (live, Ok(now)),
                        false => (live, Err(planned.clone())),
                    })
                }
            })
            .collect();
        type Look = (
            Option<(ObjectRef, Value)>,
            Result<Option<(ObjectRef, Fingerprint)>, Planned>,
        );
        let found: Vec<Look> = stream::iter(looks)
            .buffered(CONCURRENCY)
            .try_collect()
            .await?;
        let mut drifted = Vec::new();
        let mut fingerprints = BTreeMap::new();
        let mut live = BTreeMap::new();
        for (read, look) in found {
            live.extend(read);
            match look {
                Ok(same) => fingerprints.extend(same),
                Err(planned) => drifted.push(planned),
            }
        }
        Ok((drifted, fingerprints, live))
    }

    /// The live objects of `project` among `objects`, read with one list per kind
    /// and namespace (by the project's label) instead of a read each. What a list
    /// cannot give (a cluster-scoped kind, a list refused, an object whose label
    /// was taken off) is left out, for the caller to read on its own.
    async fn live_objects(&self, project: &str, objects: &[Planned]) -> BTreeMap<ObjectRef, Value> {
        let selector = berth_core::cluster::project_selector(project);
        // Owned keys: the futures below must be Send for every lifetime.
        let mut groups: BTreeMap<(String, String, String), Vec<ObjectRef>> = BTreeMap::new();
        for p in objects {
            if let Some(namespace) = &p.object.namespace {
                let key = (
                    p.object.api_version.clone(),
                    p.object.kind.clone(),
                    namespace.clone(),
                );
                groups.entry(key).or_default().push(p.object.clone());
            }
        }
        let mut live = BTreeMap::new();
        for ((api_version, kind, namespace), wanted) in groups {
            // Refused or failed: each object is read on its own instead.
            let items = (self.list(&api_version, &kind, &namespace, &selector, Shape::Objects))
                .await
                .unwrap_or_default();
            for item in items {
                let name = item.pointer("/metadata/name").and_then(Value::as_str);
                if let Some(object) = wanted.iter().find(|o| Some(o.name.as_str()) == name) {
                    // A list's items come without these; a read's object has them, first.
                    let mut whole = serde_json::Map::new();
                    whole.insert("apiVersion".into(), Value::from(api_version.as_str()));
                    whole.insert("kind".into(), Value::from(kind.as_str()));
                    if let Value::Object(fields) = item {
                        whole.extend(fields);
                    }
                    live.insert(object.clone(), Value::Object(whole));
                }
            }
        }
        live
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

/// The answers of the objects that have a rollout.
fn workloads_of(answers: BTreeMap<ObjectRef, Value>) -> BTreeMap<ObjectRef, Value> {
    answers
        .into_iter()
        .filter(|(object, _)| has_rollout(&object.kind))
        .collect()
}

/// What a new record is made of: the desired state, its planned objects and
/// their manifest text, and the record it rolls back to, if any.
struct NewRecord<'a> {
    desired: &'a Desired,
    objects: &'a [Planned],
    manifest: String,
    rollback_of: Option<u64>,
}
