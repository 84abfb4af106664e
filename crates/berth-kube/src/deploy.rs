//! `berth apply`, `diff` and `rollback` against a cluster: server-side apply
//! (a dry run of everything first, so a conflict or refusal changes nothing),
//! a record of each apply, rollout waits, and clean-up of config generations
//! that only ever deletes berth's own objects, and only after success.
//! Records and clean-up live in `records.rs`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use berth_core::cluster::{apply_rank, has_rollout, label, rollout_status, Rollout};
use serde_json::{json, Value};

use crate::connect::Cluster;
use crate::error::ClusterError;
use crate::ops::ObjectRef;

/// Secrets hold at most 1 MiB; the record's manifest (base64) must fit.
const RECORD_LIMIT: usize = (1024 * 1024 - 16 * 1024) / 4 * 3;

/// What a project wants in the cluster.
#[derive(Debug, Clone)]
pub struct Desired {
    /// The project's `name:` (labels, record names).
    pub project: String,
    /// Rendered objects, in render order.
    pub objects: Vec<Value>,
    /// Generated object name → its base name (`configs:`/`caBundles:` key).
    pub generated: BTreeMap<String, String>,
}

/// Settings of an apply.
#[derive(Debug, Clone)]
pub struct ApplyOptions {
    /// Take over fields other managers own.
    pub force: bool,
    /// Generations of each generated config to keep.
    pub keep: usize,
    /// How long to wait for rollouts; `None` does not wait (and deletes nothing).
    pub wait: Option<Duration>,
}

/// What happened during an apply, for the CLI to show.
#[derive(Debug, Clone)]
pub enum Event {
    /// An object was applied.
    Applied(ObjectRef),
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

pub(crate) fn text<'v>(v: &'v Value, path: &[&str]) -> Option<&'v str> {
    path.iter()
        .try_fold(v, |v, k| v.get(k))
        .and_then(Value::as_str)
}

impl Cluster {
    /// Labels, namespaces and orders the objects; returns each with its reference.
    fn prepare(&self, desired: &Desired) -> Result<Vec<(ObjectRef, Value)>, ClusterError> {
        let crd_kinds: Vec<(String, String)> = desired
            .objects
            .iter()
            .filter(|o| text(o, &["kind"]) == Some("CustomResourceDefinition"))
            .filter_map(|o| {
                Some((
                    text(o, &["spec", "group"])?.to_string(),
                    text(o, &["spec", "names", "kind"])?.to_string(),
                ))
            })
            .collect();
        let mut out = Vec::new();
        for object in &desired.objects {
            let mut body = object.clone();
            let (Some(api_version), Some(kind), Some(name)) = (
                text(&body, &["apiVersion"]).map(str::to_string),
                text(&body, &["kind"]).map(str::to_string),
                text(&body, &["metadata", "name"]).map(str::to_string),
            ) else {
                continue; // render guarantees these; a List wrapper has no name
            };
            let config = desired
                .generated
                .get(&name)
                .filter(|_| matches!(kind.as_str(), "ConfigMap" | "Secret"));
            label(&mut body, &desired.project, config.map(String::as_str));
            let group = api_version.split_once('/').map_or("", |(g, _)| g);
            // Kinds defined by a CRD in this apply are namespaced unless it says otherwise.
            let namespaced = match crd_kinds.iter().find(|(g, k)| g == group && *k == kind) {
                Some(_) => {
                    desired
                        .objects
                        .iter()
                        .find(|o| text(o, &["spec", "names", "kind"]) == Some(kind.as_str()))
                        .and_then(|o| text(o, &["spec", "scope"]))
                        != Some("Cluster")
                }
                None => self.is_namespaced(&api_version, &kind)?,
            };
            let namespace = if namespaced {
                let ns = text(&body, &["metadata", "namespace"])
                    .map_or_else(|| self.namespace.clone(), str::to_string);
                body["metadata"]["namespace"] = json!(ns);
                Some(ns)
            } else {
                None
            };
            out.push((
                ObjectRef {
                    api_version,
                    kind,
                    name,
                    namespace,
                },
                body,
            ));
        }
        out.sort_by_key(|(r, _)| apply_rank(&r.kind));
        Ok(out)
    }

    /// What `berth apply` would change: a server-side dry-run apply of every object
    /// next to the live object.
    pub fn diff(&self, desired: &Desired, force: bool) -> Result<Vec<Change>, ClusterError> {
        let mut changes = Vec::new();
        let objects = self.prepare(desired)?;
        for (object, body) in objects.iter().cloned() {
            let live = self.get(&object).or_else(|e| match e {
                ClusterError::UnknownKind { .. } => Ok(None),
                e => Err(e),
            })?;
            let merged =
                match self.apply(&object, &body, force, true) {
                    Ok(merged) => merged,
                    // Its CRD or Namespace is part of this apply: it would be created as written.
                    Err(
                        ClusterError::UnknownKind { .. } | ClusterError::NamespaceMissing { .. },
                    ) if created_here(&objects, &object) => body.clone(),
                    Err(e) => return Err(e),
                };
            changes.push(Change {
                object,
                live: live.map(normalise),
                merged: normalise(merged),
            });
        }
        Ok(changes)
    }

    /// Applies `desired`, records it, waits for rollouts and cleans up old generations.
    pub fn deploy(
        &self,
        desired: &Desired,
        options: &ApplyOptions,
        rollback_of: Option<u64>,
        events: &mut dyn FnMut(Event),
    ) -> Result<(), ClusterError> {
        let objects = self.prepare(desired)?;
        // A dry run of everything first: conflicts, refusals and invalid objects change nothing.
        for (object, body) in &objects {
            match self.apply(object, body, options.force, true) {
                Ok(_) => {}
                // Its CRD or Namespace comes first in this apply.
                Err(ClusterError::UnknownKind { .. } | ClusterError::NamespaceMissing { .. })
                    if created_here(&objects, object) => {}
                Err(e) => return Err(e),
            }
        }
        let manifest =
            serde_json::to_string(&objects.iter().map(|(_, body)| body).collect::<Vec<_>>())
                .map_err(|e| ClusterError::Api {
                    action: "record the apply".into(),
                    message: e.to_string(),
                })?;
        if manifest.len() > RECORD_LIMIT {
            return Err(ClusterError::Api {
                action: "record the apply".into(),
                message: format!(
                    "the rendered objects take {} bytes, more than a Secret holds (1 MiB); split the project",
                    manifest.len()
                ),
            });
        }
        for (object, body) in &objects {
            self.apply(object, body, options.force, false)?;
            if object.kind == "CustomResourceDefinition" {
                self.wait_established(object)?;
                self.forget_kinds();
            }
            events(Event::Applied(object.clone()));
        }
        let records = self.records(&desired.project)?;
        let sequence = records.iter().map(|r| r.record.sequence).max().unwrap_or(0) + 1;
        let configs: BTreeMap<String, String> = objects
            .iter()
            .filter_map(|(o, _)| {
                desired
                    .generated
                    .get(&o.name)
                    .map(|b| (b.clone(), o.name.clone()))
            })
            .collect();
        let record =
            self.write_record(&desired.project, sequence, &configs, &manifest, rollback_of)?;
        events(Event::Recorded(record.name.clone()));
        let Some(timeout) = options.wait else {
            return Ok(());
        };
        let outcome = self.wait_rollouts(&objects, timeout, events);
        self.set_record_status(
            &record,
            if outcome.is_ok() {
                "succeeded"
            } else {
                "failed"
            },
        )?;
        outcome?;
        self.clean_up(&desired.project, options.keep, &objects, events)
    }

    fn wait_established(&self, crd: &ObjectRef) -> Result<(), ClusterError> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let established = self.get(crd)?.is_some_and(|live| {
                live.pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .is_some_and(|cs| {
                        cs.iter()
                            .any(|c| c["type"] == "Established" && c["status"] == "True")
                    })
            });
            if established {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(ClusterError::Api {
                    action: format!("wait for {crd}"),
                    message: "not Established after 60 s".into(),
                });
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    fn wait_rollouts(
        &self,
        objects: &[(ObjectRef, Value)],
        timeout: Duration,
        events: &mut dyn FnMut(Event),
    ) -> Result<(), ClusterError> {
        let deadline = Instant::now() + timeout;
        let mut pending: Vec<&ObjectRef> = objects
            .iter()
            .map(|(o, _)| o)
            .filter(|o| has_rollout(&o.kind))
            .collect();
        let mut last: Vec<(ObjectRef, String)> = Vec::new();
        while !pending.is_empty() {
            let mut still = Vec::new();
            last.clear();
            for object in pending {
                let live = self.get(object)?.unwrap_or(Value::Null);
                match rollout_status(&object.kind, &live) {
                    Rollout::Done => events(Event::RolledOut(object.clone())),
                    Rollout::Failed(why) => {
                        return Err(ClusterError::Api {
                            action: format!("rollout of {object}"),
                            message: format!("failed: {why}; nothing was deleted, `berth rollback` re-applies the previous generation"),
                        })
                    }
                    Rollout::Progressing(how) => {
                        last.push((object.clone(), how));
                        still.push(object);
                    }
                }
            }
            pending = still;
            if pending.is_empty() {
                break;
            }
            events(Event::Waiting(last.clone()));
            if Instant::now() >= deadline {
                let (object, how) = &last[0];
                return Err(ClusterError::Api {
                    action: format!("rollout of {object}"),
                    message: format!(
                        "timed out after {} s: {how}; nothing was deleted",
                        timeout.as_secs()
                    ),
                });
            }
            std::thread::sleep(Duration::from_millis(500).min(deadline - Instant::now()));
        }
        Ok(())
    }
}

/// Whether what `object` needs — its kind's CRD, its Namespace — is itself in this apply.
fn created_here(objects: &[(ObjectRef, Value)], object: &ObjectRef) -> bool {
    let group = object.api_version.split_once('/').map_or("", |(g, _)| g);
    objects.iter().any(|(o, body)| {
        (o.kind == "CustomResourceDefinition"
            && text(body, &["spec", "group"]) == Some(group)
            && text(body, &["spec", "names", "kind"]) == Some(object.kind.as_str()))
            || (o.kind == "Namespace" && object.namespace.as_deref() == Some(o.name.as_str()))
    })
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
