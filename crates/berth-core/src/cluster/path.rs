//! Which way an apply goes, decided before any request: the pure half of
//! `berth_kube`'s `deploy` (which carries it out).

use std::collections::BTreeMap;

use super::{Fingerprint, ObjectRef, RecordInfo, Records};

/// What an apply of the rendered objects does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyPath<'r> {
    /// The objects are the newest record's and nobody touched them since this
    /// process applied them: nothing is sent, that record's rollout is observed.
    Untouched(&'r RecordInfo),
    /// The objects are the newest record's: a dry run finds what drifted, only
    /// that is applied again, and no new record is written.
    CheckDrift(&'r RecordInfo),
    /// Anything else: a dry run of everything, the apply, a new record.
    NewRecord,
}

/// The path of an apply of `manifest` (the rendered objects as recorded).
/// A rollback always writes a new record (it repeats an older apply as the
/// newest). `untouched` says whether every object's fingerprint as this process
/// last applied it is still the cluster's (known only to a watching caller:
/// the CLI, which does not watch, always checks).
pub fn apply_path<'r>(
    records: &'r Records,
    manifest: &str,
    rollback: bool,
    untouched: bool,
) -> ApplyPath<'r> {
    match records.unchanged(manifest) {
        Some(_) if rollback => ApplyPath::NewRecord,
        Some(same) if untouched => ApplyPath::Untouched(same),
        Some(same) => ApplyPath::CheckDrift(same),
        None => ApplyPath::NewRecord,
    }
}

/// How a watching caller reads an object's fingerprint as the cluster has it now.
pub type ReadFingerprint<'a> = &'a dyn Fn(&ObjectRef) -> Option<Fingerprint>;

/// Whether every object of `objects` still has the fingerprint `known` remembers
/// for it, as `now` (the watches) reads it; false without watches.
pub fn untouched(
    objects: &[&ObjectRef],
    known: &BTreeMap<ObjectRef, Fingerprint>,
    now: Option<ReadFingerprint<'_>>,
) -> bool {
    now.is_some_and(|now| {
        objects
            .iter()
            .all(|o| known.get(*o).is_some_and(|f| now(o).as_ref() == Some(f)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{fingerprint, Record, RecordStatus};
    use serde_json::json;

    fn records(manifest: &str) -> Records {
        Records::new(vec![RecordInfo {
            record: Record {
                sequence: 3,
                configs: BTreeMap::new(),
            },
            status: RecordStatus::Succeeded,
            stale: BTreeMap::new(),
            rollback_of: None,
            manifest: Some(manifest.to_string()),
            parts: 1,
        }])
    }

    #[test]
    fn the_path_of_an_apply() {
        let newest = records("[a]");
        let empty = Records::default();
        // (records, manifest, rollback, untouched) -> path
        let table: [(&Records, &str, bool, bool, &str); 7] = [
            (&newest, "[a]", false, true, "untouched r3"),
            (&newest, "[a]", false, false, "check drift r3"),
            (&newest, "[a]", true, true, "new record"),
            (&newest, "[a]", true, false, "new record"),
            (&newest, "[b]", false, true, "new record"),
            (&empty, "[a]", false, true, "new record"),
            (&empty, "[a]", false, false, "new record"),
        ];
        for (records, manifest, rollback, untouched, want) in table {
            let got = match apply_path(records, manifest, rollback, untouched) {
                ApplyPath::Untouched(r) => format!("untouched r{}", r.record.sequence),
                ApplyPath::CheckDrift(r) => format!("check drift r{}", r.record.sequence),
                ApplyPath::NewRecord => "new record".to_string(),
            };
            assert_eq!(
                got, want,
                "{manifest} rollback={rollback} untouched={untouched}"
            );
        }
    }

    #[test]
    fn untouched_only_when_every_object_keeps_its_fingerprint_under_watches() {
        let object = |fields: &str| {
            json!({"metadata": {"uid": "u1", "managedFields": [
                {"manager": "berth", "operation": "Apply", "fieldsV1": fields}
            ]}})
        };
        let web = ObjectRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("n".into()),
            name: "web".into(),
        };
        let applied = fingerprint(&object("sha256:aa"), "berth").unwrap();
        let known = BTreeMap::from([(web.clone(), applied.clone())]);
        let same = |_: &ObjectRef| Some(applied.clone());
        let changed = |_: &ObjectRef| fingerprint(&object("sha256:bb"), "berth");
        let gone = |_: &ObjectRef| None;
        assert!(untouched(&[&web], &known, Some(&same)));
        assert!(!untouched(&[&web], &known, Some(&changed)));
        assert!(!untouched(&[&web], &known, Some(&gone)));
        assert!(!untouched(&[&web], &known, None), "no watches: not known");
        assert!(
            !untouched(&[&web], &BTreeMap::new(), Some(&same)),
            "never applied here"
        );
    }
}
