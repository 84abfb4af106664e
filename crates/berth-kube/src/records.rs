//! Apply records: a Secret per apply (`berth-<project>-r<N>`, type
//! `berth.dev/apply-record`) holding the applied objects and which config
//! generation each base name used; what rollback re-applies and what clean-up
//! keeps. Secrets rather than ConfigMaps, because the applied objects include
//! Secrets (Helm keeps its release records in Secrets for the same reason).

use std::collections::BTreeMap;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use berth_core::cluster::{
    project_selector, stale_generations, Desired, ObjectRef, Planned, Record, RecordInfo,
    RecordStatus, Records, CONFIG_LABEL, MANAGED_BY, PROJECT_LABEL, RECORD_LABEL,
};
use serde_json::{json, Value};

use crate::connect::Cluster;
use crate::deploy::Event;
use crate::error::ClusterError;
use crate::remember::Watches;

fn text<'v>(v: &'v Value, path: &[&str]) -> Option<&'v str> {
    path.iter()
        .try_fold(v, |v, k| v.get(k))
        .and_then(Value::as_str)
}

const STATUS_ANNOTATION: &str = "berth.dev/status";
const ROLLBACK_ANNOTATION: &str = "berth.dev/rollback-of";
/// The record's sequence and config generations (JSON), also in its data: listing
/// records needs their metadata only.
const SEQUENCE_ANNOTATION: &str = "berth.dev/sequence";
const CONFIGS_ANNOTATION: &str = "berth.dev/configs";
/// The workloads' deadline verdicts from before the apply (JSON: path → verdict).
const STALE_ANNOTATION: &str = "berth.dev/stale-verdicts";
/// The field manager of record bookkeeping (the status annotation), so the
/// record's content stays owned by the apply's manager.
const STATUS_MANAGER: &str = "berth-status";

impl Cluster {
    pub(crate) fn record_name(&self, project: &str, sequence: u64) -> String {
        format!("berth-{project}-r{sequence}")
    }

    pub(crate) fn record_ref(&self, name: &str) -> ObjectRef {
        ObjectRef {
            api_version: "v1".into(),
            kind: "Secret".into(),
            name: name.into(),
            namespace: Some(self.namespace.clone()),
        }
    }

    /// The project's apply records: listed metadata only (sequence, configs and
    /// status are annotations), with the objects of the newest read by one GET (what
    /// an unchanged apply compares with). Records written before the annotations
    /// existed are read whole.
    pub async fn records(&self, project: &str) -> Result<Records, ClusterError> {
        let mut records = self.listed_records(project).await?;
        if let Some(newest) = records.newest_mut() {
            let name = self.record_name(project, newest.record.sequence);
            if let Some(whole) = self.get(&self.record_ref(&name)).await? {
                newest.manifest = secret_text(&whole, "objects");
            }
        }
        Ok(records)
    }

    /// The project's apply records from a metadata-only listing: without the
    /// newest one's objects.
    async fn listed_records(&self, project: &str) -> Result<Records, ClusterError> {
        let selector = format!("{},{RECORD_LABEL}=true", project_selector(project));
        let items = self
            .list_metadata("v1", "Secret", &self.namespace, &selector)
            .await?;
        let mut out = Vec::new();
        for item in items {
            let info = match self.record_info(&item) {
                Some(info) => info,
                None => {
                    let whole = self.record_secret(&item).await?;
                    self.record_info(&whole)
                        .ok_or_else(|| self.unreadable(&whole, "sequence"))?
                }
            };
            out.push(info?);
        }
        Ok(Records::new(out))
    }

    /// The whole record Secret `item` names.
    async fn record_secret(&self, item: &Value) -> Result<Value, ClusterError> {
        let name = text(item, &["metadata", "name"])
            .unwrap_or_default()
            .to_string();
        self.get(&self.record_ref(&name))
            .await?
            .ok_or_else(|| self.unreadable(item, "sequence"))
    }

    fn unreadable(&self, item: &Value, field: &str) -> ClusterError {
        let name = text(item, &["metadata", "name"]).unwrap_or("(no name)");
        // An unreadable record is an error, never skipped or read as empty: clean-up
        // would then delete a generation the record says is in use.
        ClusterError::Record {
            action: format!("read apply record Secret/{name} (namespace {})", self.namespace),
            message: format!(
                "its `{field}` is missing or unreadable; berth neither cleans up nor rolls back while a record is unreadable: restore it, or delete it (`kubectl delete secret {name} -n {}`) if that apply is no longer needed",
                self.namespace
            ),
        }
    }

    /// A record from its annotations (metadata only) or, for an older record read
    /// whole, from its data; `None` when `item` has neither (read it whole).
    fn record_info(&self, item: &Value) -> Option<Result<RecordInfo, ClusterError>> {
        let annotation = |key: &str| {
            item.pointer(&format!("/metadata/annotations/{}", key.replace('/', "~1")))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let (sequence, configs) = match annotation(SEQUENCE_ANNOTATION) {
            Some(sequence) => (Some(sequence), annotation(CONFIGS_ANNOTATION)),
            None if item.get("data").is_some() => {
                (secret_text(item, "sequence"), secret_text(item, "configs"))
            }
            None => return None,
        };
        let Some(sequence) = sequence.and_then(|s| s.parse::<u64>().ok()) else {
            return Some(Err(self.unreadable(item, "sequence")));
        };
        let configs: BTreeMap<String, String> = match configs {
            None if item.pointer("/data/configs").is_none() => BTreeMap::new(),
            None => return Some(Err(self.unreadable(item, "configs"))),
            Some(text) => match serde_json::from_str(&text) {
                Ok(configs) => configs,
                Err(_) => return Some(Err(self.unreadable(item, "configs"))),
            },
        };
        Some(Ok(RecordInfo {
            record: Record { sequence, configs },
            status: RecordStatus::parse(annotation(STATUS_ANNOTATION).as_deref()),
            // Unreadable verdicts are judged (a failure shown, never one hidden).
            stale: annotation(STALE_ANNOTATION)
                .and_then(|s| serde_json::from_str(&s).ok())
                .unwrap_or_default(),
            rollback_of: annotation(ROLLBACK_ANNOTATION).and_then(|s| s.parse().ok()),
            manifest: secret_text(item, "objects"),
        }))
    }

    /// Creates the record of a new apply (never overwrites one).
    pub(crate) async fn write_record(
        &self,
        project: &str,
        info: &RecordInfo,
        manifest: &str,
        options: &crate::ApplyOptions,
    ) -> Result<ObjectRef, ClusterError> {
        let sequence = info.record.sequence;
        let configs = &info.record.configs;
        let object = self.record_ref(&self.record_name(project, sequence));
        let mut annotations = json!({
            STATUS_ANNOTATION: info.status.as_str(),
            SEQUENCE_ANNOTATION: sequence.to_string(),
            CONFIGS_ANNOTATION: serde_json::to_string(configs).unwrap_or_default(),
        });
        if let Some(of) = info.rollback_of {
            annotations[ROLLBACK_ANNOTATION] = json!(of.to_string());
        }
        if !info.stale.is_empty() {
            annotations[STALE_ANNOTATION] =
                json!(serde_json::to_string(&info.stale).unwrap_or_default());
        }
        let mut body = json!({
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
        if let Some(owner) = &options.owner {
            body["metadata"]["ownerReferences"] = json!([owner]);
        }
        self.create(&object, &body, &options.manager).await?;
        Ok(object)
    }

    /// Marks a record `succeeded` or `failed`.
    pub(crate) async fn set_record_status(
        &self,
        record: &ObjectRef,
        status: RecordStatus,
    ) -> Result<(), ClusterError> {
        let body = json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": record.name, "namespace": record.namespace, "annotations": { STATUS_ANNOTATION: status.as_str() }}
        });
        self.apply(record, &body, STATUS_MANAGER, true, false)
            .await
            .map(|_| ())
    }

    /// Deletes generated objects no kept record uses, and records older than the
    /// kept ones. The records are listed again first (metadata only): another
    /// apply of the project may have recorded generations since; the one writer
    /// of its projects (the controller) passes its records and watches instead.
    /// Returns the records left.
    pub async fn clean_up(
        &self,
        project: &str,
        keep: usize,
        objects: &[Planned],
        known: Option<(&Records, &dyn Watches)>,
        events: &mut (dyn FnMut(Event) + Send),
    ) -> Result<Records, ClusterError> {
        let mut records = match known {
            Some((records, _)) => records.clone(),
            None => self.listed_records(project).await?,
        };
        let kept = records.kept(keep);
        let mut namespaces: Vec<String> = objects
            .iter()
            .filter_map(|p| p.object.namespace.clone())
            .collect();
        namespaces.push(self.namespace.clone());
        namespaces.sort();
        namespaces.dedup();
        let selector = format!("{},{CONFIG_LABEL}", project_selector(project));
        for namespace in &namespaces {
            for kind in ["ConfigMap", "Secret"] {
                let watched = known.and_then(|(_, w)| w.generations(kind, namespace, project));
                let existing: Vec<(String, String)> = match watched {
                    Some(existing) => existing,
                    None => self
                        .list_metadata("v1", kind, namespace, &selector)
                        .await?
                        .iter()
                        .filter_map(|o| {
                            Some((
                                text(o, &["metadata", "labels", CONFIG_LABEL])?.to_string(),
                                text(o, &["metadata", "name"])?.to_string(),
                            ))
                        })
                        .collect(),
                };
                for (_, name) in stale_generations(&kept, kept.len(), &existing) {
                    let object = ObjectRef {
                        api_version: "v1".into(),
                        kind: kind.into(),
                        name,
                        namespace: Some(namespace.clone()),
                    };
                    self.delete(&object).await?;
                    events(Event::Deleted(object));
                }
            }
        }
        // Older records are beyond what rollback may reach.
        let stale: Vec<u64> = records.stale(keep).map(|r| r.record.sequence).collect();
        for sequence in stale {
            let object = self.record_ref(&self.record_name(project, sequence));
            self.delete(&object).await?;
            records.remove(sequence);
            events(Event::Deleted(object));
        }
        Ok(records)
    }

    /// The objects of the apply before the current one, for `berth rollback`
    /// (berth-core's [`Records::rollback_target`] decides which).
    pub async fn previous(&self, project: &str) -> Result<(u64, Desired), ClusterError> {
        let records = self.records(project).await?;
        let Some(target) = records.rollback_target() else {
            return Err(ClusterError::Record {
                action: format!("rollback of project `{project}`"),
                message: format!(
                    "no earlier successful apply is recorded in namespace `{}` (berth keeps --keep generations; 1 keeps none to go back to)",
                    self.namespace
                ),
            });
        };
        let sequence = target.record.sequence;
        let manifest = match &target.manifest {
            Some(manifest) => Some(manifest.clone()),
            None => self
                .get(&self.record_ref(&self.record_name(project, sequence)))
                .await?
                .and_then(|whole| secret_text(&whole, "objects")),
        };
        let objects: Vec<Value> = manifest
            .as_deref()
            .and_then(|s| serde_json::from_str(s).ok())
            .ok_or_else(|| ClusterError::Record {
                action: format!("read record r{sequence}"),
                message: "its objects cannot be read; re-apply with `berth apply`".into(),
            })?;
        let generated = target
            .record
            .configs
            .iter()
            .map(|(b, n)| (n.clone(), b.clone()))
            .collect();
        Ok((
            sequence,
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
