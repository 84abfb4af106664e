//! Apply records: a Secret per apply (`berth-<project>-r<N>`, type
//! `berth.dev/apply-record`) holding the applied objects and which config
//! generation each base name used; what rollback re-applies and what clean-up
//! keeps. Secrets rather than ConfigMaps, because the applied objects include
//! Secrets (Helm keeps its release records in Secrets for the same reason).
//!
//! The objects are gzipped (`objects.gz`) and, past [`PART_BYTES`] compressed,
//! split over part Secrets `berth-<project>-r<N>-p1`, `-p2`, … (type
//! `berth.dev/apply-record-part`), so a project of any size is recorded while
//! each Secret stays under the API server's limit of about 1.5 MiB per object.
//! Records written before (plain `objects`) are still read.

use crate::ops::Shape;
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
/// How many parts a record has when it has more than one.
const PARTS_ANNOTATION: &str = "berth.dev/parts";
/// Compressed bytes per Secret: 768 KiB is 1 MiB in base64, well under the API
/// server's request limit (3 MiB) and etcd's object limit (1.5 MiB).
pub const PART_BYTES: usize = 768 << 10;
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
                newest.manifest = self.manifest_of(&whole).await?;
            }
        }
        Ok(records)
    }

    /// A record's objects: plain `objects` (older records), or `objects.gz`
    /// and its parts, read and unpacked. `None` when it holds neither.
    async fn manifest_of(&self, record: &Value) -> Result<Option<String>, ClusterError> {
        if let Some(plain) = secret_text(record, "objects") {
            return Ok(Some(plain));
        }
        let Some(first) = secret_bytes(record, "objects.gz") else {
            return Ok(None);
        };
        let name = text(record, &["metadata", "name"])
            .unwrap_or_default()
            .to_string();
        let parts = record
            .pointer(&format!(
                "/metadata/annotations/{}",
                PARTS_ANNOTATION.replace('/', "~1")
            ))
            .and_then(Value::as_str)
            .map(|n| {
                n.parse::<usize>()
                    .map_err(|_| self.unreadable(record, PARTS_ANNOTATION))
            })
            .transpose()?
            .unwrap_or(1);
        let mut packed = vec![first];
        for part in 1..parts {
            let part = self
                .get(&self.record_ref(&format!("{name}-p{part}")))
                .await?
                .and_then(|whole| secret_bytes(&whole, "objects.gz"))
                .ok_or_else(|| {
                    self.unreadable(
                        record,
                        &format!("part {part} of {parts} (Secret {name}-p{part})"),
                    )
                })?;
            packed.push(part);
        }
        unpack(&packed)
            .map(Some)
            .ok_or_else(|| self.unreadable(record, "objects.gz"))
    }

    /// The project's apply records from a metadata-only listing: without the
    /// newest one's objects.
    async fn listed_records(&self, project: &str) -> Result<Records, ClusterError> {
        let selector = format!("{},{RECORD_LABEL}=true", project_selector(project));
        let items = self
            .list("v1", "Secret", &self.namespace, &selector, Shape::Metadata)
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
            parts: annotation(PARTS_ANNOTATION)
                .and_then(|n| n.parse().ok())
                .unwrap_or(1),
        }))
    }

    /// Creates the record of a new apply (never overwrites one), and says how
    /// many Secrets hold it.
    pub(crate) async fn write_record(
        &self,
        project: &str,
        info: &RecordInfo,
        manifest: &str,
        options: &crate::ApplyOptions,
    ) -> Result<(ObjectRef, usize), ClusterError> {
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
        let packed = pack(manifest);
        if packed.len() > 1 {
            annotations[PARTS_ANNOTATION] = json!(packed.len().to_string());
        }
        // The parts first: a record never names a part that is not there.
        for (i, part) in packed.iter().enumerate().skip(1) {
            let part_ref = self.record_ref(&format!("{}-p{i}", object.name));
            let mut body = json!({
                "apiVersion": "v1", "kind": "Secret", "type": "berth.dev/apply-record-part",
                "metadata": {
                    "name": part_ref.name, "namespace": self.namespace,
                    "labels": { MANAGED_BY.0: MANAGED_BY.1, PROJECT_LABEL: project },
                },
                "data": { "objects.gz": BASE64.encode(part) }
            });
            if let Some(owner) = &options.owner {
                body["metadata"]["ownerReferences"] = json!([owner]);
            }
            self.create(&part_ref, &body, &options.manager).await?;
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
                "objects.gz": BASE64.encode(&packed[0]),
            }
        });
        if let Some(owner) = &options.owner {
            body["metadata"]["ownerReferences"] = json!([owner]);
        }
        self.create(&object, &body, &options.manager).await?;
        Ok((object, packed.len()))
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
                        .list("v1", kind, namespace, &selector, Shape::Metadata)
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
        let stale: Vec<(u64, usize)> = records
            .stale(keep)
            .map(|r| (r.record.sequence, r.parts))
            .collect();
        for (sequence, parts) in stale {
            let object = self.record_ref(&self.record_name(project, sequence));
            self.delete(&object).await?;
            for part in 1..parts {
                let part = self.record_ref(&format!("{}-p{part}", object.name));
                // Only a part berth wrote for this project: its type and labels,
                // never a Secret that merely has the name.
                let ours = self.get(&part).await?.is_some_and(|found| {
                    text(&found, &["type"]) == Some("berth.dev/apply-record-part")
                        && text(&found, &["metadata", "labels", PROJECT_LABEL]) == Some(project)
                        && text(&found, &["metadata", "labels", MANAGED_BY.0]) == Some(MANAGED_BY.1)
                });
                if ours {
                    self.delete(&part).await?;
                }
            }
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
            None => match self
                .get(&self.record_ref(&self.record_name(project, sequence)))
                .await?
            {
                Some(whole) => self.manifest_of(&whole).await?,
                None => None,
            },
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
    String::from_utf8(secret_bytes(secret, key)?).ok()
}

/// A `data` entry of a Secret, decoded, as bytes.
fn secret_bytes(secret: &Value, key: &str) -> Option<Vec<u8>> {
    let encoded = secret.get("data")?.get(key)?.as_str()?;
    BASE64.decode(encoded).ok()
}

/// `manifest` gzipped and cut into parts of at most [`PART_BYTES`]; at least
/// one part. The same manifest gives the same bytes.
fn pack(manifest: &str) -> Vec<Vec<u8>> {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing to a Vec cannot fail.
    let packed = encoder
        .write_all(manifest.as_bytes())
        .and_then(|()| encoder.finish())
        .unwrap_or_default();
    let mut parts: Vec<Vec<u8>> = packed.chunks(PART_BYTES).map(<[u8]>::to_vec).collect();
    if parts.is_empty() {
        parts.push(Vec::new());
    }
    parts
}

/// The manifest [`pack`] made, from its parts in order; `None` when they are
/// not one gzip stream of UTF-8 text (a part lost or changed). Bounded: a
/// record never unpacks past [`berth_io::limits::FILE`] × 4, the most
/// berth records.
fn unpack(parts: &[Vec<u8>]) -> Option<String> {
    let joined: Vec<u8> = parts.concat();
    let decoder = flate2::read::GzDecoder::new(joined.as_slice());
    let text = berth_io::read_limited(decoder, berth_io::limits::FILE * 4).ok()?;
    String::from_utf8(text).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn records_are_gzipped_split_under_an_objects_limit_and_read_back() {
        let small = r#"[{"kind":"ConfigMap"}]"#;
        let parts = pack(small);
        assert_eq!(parts.len(), 1);
        assert_eq!(unpack(&parts).unwrap(), small);
        assert_eq!(pack(small), parts, "deterministic");
        // 20 MiB of text that compresses badly (hex of a counter's hash-like mix).
        let mut big = String::with_capacity(20 << 20);
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        while big.len() < 20 << 20 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            big.push_str(&format!("{x:016x}"));
        }
        let parts = pack(&big);
        assert!(parts.len() > 10, "{}", parts.len());
        assert!(parts.iter().all(|p| p.len() <= PART_BYTES));
        assert_eq!(unpack(&parts).unwrap(), big);
        // A lost part is an error, never a shorter manifest.
        assert!(unpack(&parts[..parts.len() - 1]).is_none());
    }
}
