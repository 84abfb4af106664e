//! Apply records: a Secret per apply (`berth-<project>-r<N>`, type
//! `berth.dev/apply-record`) holding the applied objects and which config
//! generation each base name used; what rollback re-applies and what clean-up
//! keeps. Secrets rather than ConfigMaps, because the applied objects include
//! Secrets (Helm keeps its release records in Secrets for the same reason).

use std::collections::BTreeMap;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use berth_core::cluster::{
    project_selector, stale_generations, Record, CONFIG_LABEL, MANAGED_BY, PROJECT_LABEL,
    RECORD_LABEL,
};
use serde_json::{json, Value};

use crate::connect::Cluster;
use crate::deploy::{text, Desired, Event};
use crate::error::ClusterError;
use crate::ops::ObjectRef;

const STATUS_ANNOTATION: &str = "berth.dev/status";
const ROLLBACK_ANNOTATION: &str = "berth.dev/rollback-of";

impl Cluster {
    pub(crate) fn record_ref(&self, name: &str) -> ObjectRef {
        ObjectRef {
            api_version: "v1".into(),
            kind: "Secret".into(),
            name: name.into(),
            namespace: Some(self.namespace.clone()),
        }
    }

    /// The project's apply records, oldest first.
    pub(crate) fn records(&self, project: &str) -> Result<Vec<Stored>, ClusterError> {
        let selector = format!("{},{RECORD_LABEL}=true", project_selector(project));
        let items = self.list("v1", "Secret", &self.namespace, &selector)?;
        let mut out = Vec::new();
        for item in items {
            let Some(sequence) = secret_text(&item, "sequence").and_then(|s| s.parse().ok()) else {
                continue;
            };
            let configs: BTreeMap<String, String> = secret_text(&item, "configs")
                .and_then(|s| serde_json::from_str(&s).ok())
                .unwrap_or_default();
            let annotation = |key: &str| {
                item.pointer(&format!("/metadata/annotations/{}", key.replace('/', "~1")))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            };
            out.push(Stored {
                record: Record { sequence, configs },
                succeeded: annotation(STATUS_ANNOTATION).as_deref() == Some("succeeded"),
                rollback_of: annotation(ROLLBACK_ANNOTATION).and_then(|s| s.parse().ok()),
                item,
            });
        }
        out.sort_by_key(|r| r.record.sequence);
        Ok(out)
    }

    pub(crate) fn write_record(
        &self,
        project: &str,
        sequence: u64,
        configs: &BTreeMap<String, String>,
        manifest: &str,
        rollback_of: Option<u64>,
    ) -> Result<ObjectRef, ClusterError> {
        let object = self.record_ref(&format!("berth-{project}-r{sequence}"));
        let mut annotations = json!({ STATUS_ANNOTATION: "pending" });
        if let Some(of) = rollback_of {
            annotations[ROLLBACK_ANNOTATION] = json!(of.to_string());
        }
        let body = json!({
            "apiVersion": "v1", "kind": "Secret", "type": "berth.dev/apply-record",
            "metadata": {
                "name": object.name, "namespace": self.namespace,
                "labels": { MANAGED_BY.0: MANAGED_BY.1, PROJECT_LABEL: project, RECORD_LABEL: "true" },
                "annotations": annotations,
            },
            "data": {
                "sequence": BASE64.encode(sequence.to_string()),
                "configs": BASE64.encode(serde_json::to_string(configs).unwrap_or_default()),
                "objects": BASE64.encode(manifest),
            }
        });
        self.apply(&object, &body, true, false)?;
        Ok(object)
    }

    pub(crate) fn set_record_status(
        &self,
        record: &ObjectRef,
        status: &str,
    ) -> Result<(), ClusterError> {
        let body = json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": record.name, "namespace": record.namespace, "annotations": { STATUS_ANNOTATION: status }}
        });
        // A separate field manager: the record's content stays owned by `berth`.
        self.apply_as(record, &body, "berth-status")
    }

    /// Deletes generated objects no kept record uses, and records older than the kept ones.
    pub(crate) fn clean_up(
        &self,
        project: &str,
        keep: usize,
        objects: &[(ObjectRef, Value)],
        events: &mut dyn FnMut(Event),
    ) -> Result<(), ClusterError> {
        let records = self.records(project)?;
        // Kept: the last `keep` successful applies (rollbacks do not count: they repeat
        // an older apply) and every record since, so rollback can walk back `keep` steps.
        let oldest_kept = records
            .iter()
            .rev()
            .filter(|r| r.succeeded && r.rollback_of.is_none())
            .take(keep.max(1))
            .last()
            .map_or(0, |r| r.record.sequence);
        let kept: Vec<Record> = records
            .iter()
            .filter(|r| r.succeeded && r.record.sequence >= oldest_kept)
            .map(|r| r.record.clone())
            .collect();
        let mut namespaces: Vec<String> = objects
            .iter()
            .filter_map(|(o, _)| o.namespace.clone())
            .collect();
        namespaces.push(self.namespace.clone());
        namespaces.sort();
        namespaces.dedup();
        let selector = format!("{},{CONFIG_LABEL}", project_selector(project));
        for namespace in &namespaces {
            for kind in ["ConfigMap", "Secret"] {
                let live = self.list("v1", kind, namespace, &selector)?;
                let existing: Vec<(String, String)> = live
                    .iter()
                    .filter_map(|o| {
                        Some((
                            text(o, &["metadata", "labels", CONFIG_LABEL])?.to_string(),
                            text(o, &["metadata", "name"])?.to_string(),
                        ))
                    })
                    .collect();
                for (_, name) in stale_generations(&kept, kept.len(), &existing) {
                    let object = ObjectRef {
                        api_version: "v1".into(),
                        kind: kind.into(),
                        name,
                        namespace: Some(namespace.clone()),
                    };
                    self.delete(&object)?;
                    events(Event::Deleted(object));
                }
            }
        }
        // Older records are beyond what rollback may reach.
        for stale in records.iter().filter(|r| r.record.sequence < oldest_kept) {
            let object =
                self.record_ref(text(&stale.item, &["metadata", "name"]).unwrap_or_default());
            self.delete(&object)?;
            events(Event::Deleted(object));
        }
        Ok(())
    }

    /// The objects of the apply before the current one, for `berth rollback`: the
    /// newest successful apply older than the one running now. The one running now
    /// is the newest record if it succeeded (for a rollback, the apply it repeated);
    /// after a failed apply, the newest successful one is rolled back to.
    pub fn previous(&self, project: &str) -> Result<(u64, Desired), ClusterError> {
        let records = self.records(project)?;
        let current = records
            .last()
            .filter(|r| r.succeeded)
            .map(|r| r.rollback_of.unwrap_or(r.record.sequence));
        let target = records
            .iter()
            .rev()
            .find(|r| r.succeeded && current.is_none_or(|c| r.record.sequence < c));
        let Some(Stored { record, item, .. }) = target else {
            return Err(ClusterError::Api {
                action: format!("rollback of project `{project}`"),
                message: format!(
                    "no earlier successful apply is recorded in namespace `{}` (berth keeps --keep generations; 1 keeps none to go back to)",
                    self.namespace
                ),
            });
        };
        let objects: Vec<Value> = secret_text(item, "objects")
            .and_then(|s| serde_json::from_str(&s).ok())
            .ok_or_else(|| ClusterError::Api {
                action: format!("read record r{}", record.sequence),
                message: "its objects cannot be read; re-apply with `berth apply`".into(),
            })?;
        let generated = record
            .configs
            .iter()
            .map(|(b, n)| (n.clone(), b.clone()))
            .collect();
        Ok((
            record.sequence,
            Desired {
                project: project.to_string(),
                objects,
                generated,
            },
        ))
    }
}

/// A `data` entry of a Secret, decoded.
fn secret_text(secret: &Value, key: &str) -> Option<String> {
    let encoded = secret.get("data")?.get(key)?.as_str()?;
    String::from_utf8(BASE64.decode(encoded).ok()?).ok()
}

/// An apply record as read back from the cluster.
pub(crate) struct Stored {
    pub(crate) record: Record,
    succeeded: bool,
    /// The sequence this apply re-applied, for rollbacks.
    rollback_of: Option<u64>,
    item: Value,
}
