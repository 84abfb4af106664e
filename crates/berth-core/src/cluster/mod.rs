//! The pure part of `berth apply`, `diff` and `rollback`: which labels berth
//! owns objects by, the order objects are applied in, when a rollout is done
//! (the conditions `kubectl rollout status` uses), and which old config
//! generations may go. No client, no I/O: objects are JSON values.
//! `plan` turns rendered objects into what is applied, `history` decides what
//! the apply records keep and what rollback goes back to.

mod fingerprint;
mod history;
mod observe;
mod path;
mod plan;

pub use fingerprint::{fields_digest, fingerprint, Fingerprint};
pub use history::{RecordInfo, RecordStatus, Records};
pub use observe::{judge, Observation, Settled};
pub use path::{apply_path, untouched, ApplyPath, ReadFingerprint};
pub use plan::{
    created_by, kinds_to_discover, plan, unchecked, Desired, ObjectRef, PlanError, Planned, Rank,
};

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

/// `app.kubernetes.io/managed-by: berth` on everything berth applies.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "berth");
/// `berth.dev/project: <name>`: which project an object belongs to.
pub const PROJECT_LABEL: &str = "berth.dev/project";
/// `berth.dev/config: <base name>` on generated ConfigMaps/Secrets (and CA bundles).
pub const CONFIG_LABEL: &str = "berth.dev/config";
/// `berth.dev/record: "true"` on the ConfigMaps that record each apply.
pub const RECORD_LABEL: &str = "berth.dev/record";
/// The field manager of every apply.
pub const FIELD_MANAGER: &str = "berth";

/// The label selector for everything of `project` that berth owns.
pub fn project_selector(project: &str) -> String {
    format!(
        "{}={},{PROJECT_LABEL}={project}",
        MANAGED_BY.0, MANAGED_BY.1
    )
}

/// Adds berth's labels to an object; `config` names the generated config it is.
pub fn label(object: &mut Value, project: &str, config: Option<&str>) {
    let Some(map) = object.as_object_mut() else {
        return;
    };
    let metadata = map.entry("metadata").or_insert_with(|| json!({}));
    let Some(metadata) = metadata.as_object_mut() else {
        return;
    };
    let labels = metadata.entry("labels").or_insert_with(|| json!({}));
    if !labels.is_object() {
        *labels = json!({});
    }
    if let Some(labels) = labels.as_object_mut() {
        labels.insert(MANAGED_BY.0.into(), MANAGED_BY.1.into());
        labels.insert(PROJECT_LABEL.into(), project.into());
        if let Some(config) = config {
            labels.insert(CONFIG_LABEL.into(), config.into());
        }
    }
}

/// Where a workload's rollout stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rollout {
    /// The new generation is observed and available.
    Done,
    /// Still going; the message says how far (`2 of 3 updated replicas are available`).
    Progressing(String),
    /// It will not finish on its own: the reason and message of the failing condition.
    Failed(String),
}

/// Whether `kind` has a rollout berth waits for.
pub fn has_rollout(kind: &str) -> bool {
    crate::kinds::WorkloadKind::parse(kind).is_some_and(crate::kinds::WorkloadKind::has_rollout)
}

fn int(v: &Value, path: &[&str]) -> i64 {
    path.iter()
        .try_fold(v, |v, k| v.get(k))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

fn text<'v>(v: &'v Value, path: &[&str]) -> Option<&'v str> {
    path.iter()
        .try_fold(v, |v, k| v.get(k))
        .and_then(Value::as_str)
}

fn condition<'v>(v: &'v Value, kind: &str) -> Option<&'v Value> {
    v.get("status")?
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
}

/// `spec.replicas`, which defaults to 1.
fn spec_replicas(live: &Value) -> i64 {
    live.get("spec")
        .and_then(|s| s.get("replicas"))
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

fn describe(c: &Value) -> String {
    format!(
        "{}: {}",
        c.get("reason")
            .and_then(Value::as_str)
            .unwrap_or("no reason"),
        c.get("message").and_then(Value::as_str).unwrap_or("")
    )
}

/// When a Deployment's `Progressing` condition says its progress deadline was
/// exceeded: the condition's last update time, which identifies that verdict.
pub fn deadline_verdict(live: &Value) -> Option<String> {
    let c = condition(live, "Progressing")?;
    if c.get("reason").and_then(Value::as_str) != Some("ProgressDeadlineExceeded") {
        return None;
    }
    c.get("lastUpdateTime")
        .or_else(|| c.get("lastTransitionTime"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// [`rollout_status`] of an object that, before this apply, carried the deadline
/// verdict `stale` (from [`deadline_verdict`]): that verdict is about the previous
/// rollout. The controller keeps it until the new ReplicaSet makes progress (a
/// rollback after a failed rollout), so it is not this rollout's failure.
pub fn rollout_status_after(kind: &str, live: &Value, stale: Option<&str>) -> Rollout {
    if kind == "Deployment" && stale.is_some() && deadline_verdict(live).as_deref() == stale {
        return Rollout::Progressing(
            "the previous rollout's progress deadline passed; waiting for this one to progress"
                .into(),
        );
    }
    rollout_status(kind, live)
}

/// The rollout status of a live object, as `kubectl rollout status` judges it.
pub fn rollout_status(kind: &str, live: &Value) -> Rollout {
    let generation = int(live, &["metadata", "generation"]);
    let observed = int(live, &["status", "observedGeneration"]);
    if kind != "Job" && observed < generation {
        return Rollout::Progressing("waiting for the new generation to be observed".into());
    }
    match kind {
        "Deployment" => {
            if let Some(c) = condition(live, "Progressing") {
                if c.get("reason").and_then(Value::as_str) == Some("ProgressDeadlineExceeded") {
                    return Rollout::Failed(describe(c));
                }
            }
            let replicas = spec_replicas(live);
            let updated = int(live, &["status", "updatedReplicas"]);
            let total = int(live, &["status", "replicas"]);
            let available = int(live, &["status", "availableReplicas"]);
            if updated < replicas {
                Rollout::Progressing(format!("{updated} of {replicas} new replicas updated"))
            } else if total > updated {
                Rollout::Progressing(format!(
                    "{} old replicas pending termination",
                    total - updated
                ))
            } else if available < updated {
                Rollout::Progressing(format!(
                    "{available} of {updated} updated replicas available"
                ))
            } else {
                Rollout::Done
            }
        }
        "StatefulSet" => {
            let replicas = spec_replicas(live);
            let ready = int(live, &["status", "readyReplicas"]);
            let updated = int(live, &["status", "updatedReplicas"]);
            let current = text(live, &["status", "currentRevision"]);
            let update = text(live, &["status", "updateRevision"]);
            if ready < replicas {
                Rollout::Progressing(format!("{ready} of {replicas} replicas ready"))
            } else if updated < replicas || current != update {
                Rollout::Progressing(format!("{updated} of {replicas} replicas updated"))
            } else {
                Rollout::Done
            }
        }
        "DaemonSet" => {
            let desired = int(live, &["status", "desiredNumberScheduled"]);
            let updated = int(live, &["status", "updatedNumberScheduled"]);
            let available = int(live, &["status", "numberAvailable"]);
            if updated < desired {
                Rollout::Progressing(format!("{updated} of {desired} pods updated"))
            } else if available < desired {
                Rollout::Progressing(format!("{available} of {desired} updated pods available"))
            } else {
                Rollout::Done
            }
        }
        "Job" => {
            if let Some(c) = condition(live, "Failed") {
                if c.get("status").and_then(Value::as_str) == Some("True") {
                    return Rollout::Failed(describe(c));
                }
            }
            match condition(live, "Complete") {
                Some(c) if c.get("status").and_then(Value::as_str) == Some("True") => Rollout::Done,
                _ => Rollout::Progressing(format!(
                    "{} succeeded, {} active",
                    int(live, &["status", "succeeded"]),
                    int(live, &["status", "active"])
                )),
            }
        }
        _ => Rollout::Done,
    }
}

/// One apply, as berth records it in the cluster (a ConfigMap per apply).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Increasing per project: the order of applies.
    pub sequence: u64,
    /// Generated config base name → the generated object name this apply used.
    pub configs: BTreeMap<String, String>,
}

/// Generated objects that may be deleted: those of the project that none of
/// the `keep` most recent records uses. `records` must include the apply that
/// just succeeded; `existing` are `(base name, object name)` of the live
/// generated objects carrying the project's labels.
pub fn stale_generations(
    records: &[Record],
    keep: usize,
    existing: &[(String, String)],
) -> Vec<(String, String)> {
    let mut ordered: Vec<&Record> = records.iter().collect();
    ordered.sort_by_key(|r| std::cmp::Reverse(r.sequence));
    let used: BTreeSet<(&str, &str)> = ordered
        .iter()
        .take(keep.max(1))
        .flat_map(|r| r.configs.iter().map(|(b, n)| (b.as_str(), n.as_str())))
        .collect();
    existing
        .iter()
        .filter(|(base, name)| !used.contains(&(base.as_str(), name.as_str())))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_added_without_losing_others() {
        let mut obj =
            json!({"kind": "ConfigMap", "metadata": {"name": "c-1", "labels": {"a": "b"}}});
        label(&mut obj, "shop", Some("c"));
        assert_eq!(
            obj["metadata"]["labels"],
            json!({"a": "b", "app.kubernetes.io/managed-by": "berth", "berth.dev/project": "shop", "berth.dev/config": "c"})
        );
        let mut bare = json!({"kind": "Service"});
        label(&mut bare, "shop", None);
        assert_eq!(bare["metadata"]["labels"]["berth.dev/project"], "shop");
        assert_eq!(
            project_selector("shop"),
            "app.kubernetes.io/managed-by=berth,berth.dev/project=shop"
        );
    }

    #[test]
    fn a_deadline_verdict_from_before_the_apply_is_not_this_rollouts_failure() {
        let timed_out = |at: &str| {
            json!({"metadata": {"generation": 5}, "spec": {"replicas": 1},
                   "status": {"observedGeneration": 5, "updatedReplicas": 0, "replicas": 1,
                              "conditions": [{"type": "Progressing", "status": "False",
                                              "reason": "ProgressDeadlineExceeded",
                                              "lastUpdateTime": at, "message": "ReplicaSet \"web-1\" has timed out progressing."}]}})
        };
        let old = timed_out("2026-12-01T10:00:00Z");
        let stale = deadline_verdict(&old);
        assert_eq!(stale.as_deref(), Some("2026-12-01T10:00:00Z"));
        assert!(matches!(
            rollout_status_after("Deployment", &old, stale.as_deref()),
            Rollout::Progressing(m) if m.contains("previous rollout")
        ));
        // A new verdict (a later update) is this rollout's failure.
        let new = timed_out("2026-12-01T10:05:00Z");
        assert!(matches!(
            rollout_status_after("Deployment", &new, stale.as_deref()),
            Rollout::Failed(_)
        ));
        assert!(matches!(
            rollout_status_after("Deployment", &old, None),
            Rollout::Failed(_)
        ));
    }

    #[test]
    fn deployment_rollout_like_kubectl() {
        let d = |generation, observed, updated, total, available| {
            json!({"metadata": {"generation": generation}, "spec": {"replicas": 3},
                   "status": {"observedGeneration": observed, "updatedReplicas": updated,
                              "replicas": total, "availableReplicas": available}})
        };
        assert!(
            matches!(rollout_status("Deployment", &d(2, 1, 3, 3, 3)), Rollout::Progressing(m) if m.contains("observed"))
        );
        assert_eq!(
            rollout_status("Deployment", &d(2, 2, 1, 3, 3)),
            Rollout::Progressing("1 of 3 new replicas updated".into())
        );
        assert_eq!(
            rollout_status("Deployment", &d(2, 2, 3, 4, 3)),
            Rollout::Progressing("1 old replicas pending termination".into())
        );
        assert_eq!(
            rollout_status("Deployment", &d(2, 2, 3, 3, 2)),
            Rollout::Progressing("2 of 3 updated replicas available".into())
        );
        assert_eq!(
            rollout_status("Deployment", &d(2, 2, 3, 3, 3)),
            Rollout::Done
        );
        let mut stuck = d(2, 2, 1, 3, 2);
        stuck["status"]["conditions"] = json!([{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "ReplicaSet \"web-5d\" has timed out progressing."}]);
        assert_eq!(
            rollout_status("Deployment", &stuck),
            Rollout::Failed(
                "ProgressDeadlineExceeded: ReplicaSet \"web-5d\" has timed out progressing.".into()
            )
        );
    }

    #[test]
    fn other_workloads() {
        let sts = json!({"metadata": {"generation": 1}, "spec": {"replicas": 2},
            "status": {"observedGeneration": 1, "readyReplicas": 2, "updatedReplicas": 2, "currentRevision": "a", "updateRevision": "b"}});
        assert!(matches!(
            rollout_status("StatefulSet", &sts),
            Rollout::Progressing(_)
        ));
        let ds = json!({"metadata": {"generation": 1}, "status": {"observedGeneration": 1, "desiredNumberScheduled": 2, "updatedNumberScheduled": 2, "numberAvailable": 2}});
        assert_eq!(rollout_status("DaemonSet", &ds), Rollout::Done);
        let job = json!({"status": {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit"}]}});
        assert_eq!(
            rollout_status("Job", &job),
            Rollout::Failed(
                "BackoffLimitExceeded: Job has reached the specified backoff limit".into()
            )
        );
        assert!(has_rollout("Job") && !has_rollout("Service"));
    }

    #[test]
    fn only_generations_outside_the_kept_records_go() {
        let rec = |sequence, name: &str| Record {
            sequence,
            configs: BTreeMap::from([("app".to_string(), name.to_string())]),
        };
        let records = [rec(1, "app-a"), rec(3, "app-c"), rec(2, "app-b")];
        let existing: Vec<(String, String)> = ["app-a", "app-b", "app-c", "app-x"]
            .iter()
            .map(|n| ("app".to_string(), n.to_string()))
            .collect();
        let stale = stale_generations(&records, 2, &existing);
        assert_eq!(
            stale,
            [
                ("app".to_string(), "app-a".to_string()),
                ("app".to_string(), "app-x".to_string())
            ]
        );
        assert_eq!(stale_generations(&records, 3, &existing).len(), 1);
    }
}
