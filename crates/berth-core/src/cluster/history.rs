//! Apply records as decisions: the next sequence number, whether an apply
//! repeats the last good one, which records (and so which config generations)
//! are kept, and which apply a rollback goes back to.

use std::collections::BTreeMap;

use super::Record;

/// Where an apply's rollout stands, as its record's `berth.dev/status` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordStatus {
    /// Applied; the rollout has not been seen to finish or fail yet.
    Pending,
    /// Every workload rolled out.
    Succeeded,
    /// A workload's rollout failed (or did not finish in time).
    Failed,
}

impl RecordStatus {
    /// As the annotation spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordStatus::Pending => "pending",
            RecordStatus::Succeeded => "succeeded",
            RecordStatus::Failed => "failed",
        }
    }

    /// From the annotation; anything else (or none) is still pending.
    pub fn parse(text: Option<&str>) -> RecordStatus {
        match text {
            Some("succeeded") => RecordStatus::Succeeded,
            Some("failed") => RecordStatus::Failed,
            _ => RecordStatus::Pending,
        }
    }
}

/// One apply record as read back from the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordInfo {
    /// Sequence and the config generations it used.
    pub record: Record,
    /// Where its rollout stands.
    pub status: RecordStatus,
    /// The deadline verdicts (`ObjectRef::path` → [`super::deadline_verdict`])
    /// the workloads carried before this apply: the previous rollout's, not
    /// this one's, so whoever observes this apply's rollout does not judge them.
    pub stale: BTreeMap<String, String>,
    /// For a rollback: the sequence it re-applied.
    pub rollback_of: Option<u64>,
    /// The applied objects as recorded (JSON text), when readable.
    pub manifest: Option<String>,
    /// How many Secrets hold the record: itself and its parts (at least 1).
    pub parts: usize,
}

/// A project's records, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Records(Vec<RecordInfo>);

impl Records {
    /// Sorts `records` by sequence.
    pub fn new(mut records: Vec<RecordInfo>) -> Self {
        records.sort_by_key(|r| r.record.sequence);
        Records(records)
    }

    /// The records, oldest first.
    pub fn all(&self) -> &[RecordInfo] {
        &self.0
    }

    /// The newest record, to fill in what a metadata-only listing left out.
    pub fn newest_mut(&mut self) -> Option<&mut RecordInfo> {
        self.0.last_mut()
    }

    /// Adds the record of a new apply: what a caller that keeps its records in
    /// memory (the controller) does instead of listing them again. Only the
    /// newest keeps its manifest (what [`Records::unchanged`] compares with).
    pub fn push(&mut self, info: RecordInfo) {
        for older in &mut self.0 {
            older.manifest = None;
        }
        self.0.push(info);
        self.0.sort_by_key(|r| r.record.sequence);
    }

    /// Sets the status of record `sequence`, as its annotation was just set.
    pub fn set_status(&mut self, sequence: u64, status: RecordStatus) {
        if let Some(r) = self.0.iter_mut().find(|r| r.record.sequence == sequence) {
            r.status = status;
        }
    }

    /// Forgets record `sequence`, as it was just deleted.
    pub fn remove(&mut self, sequence: u64) {
        self.0.retain(|r| r.record.sequence != sequence);
    }

    /// The sequence number of the next apply.
    pub fn next_sequence(&self) -> u64 {
        self.0.last().map_or(0, |r| r.record.sequence) + 1
    }

    /// The newest record, when it applied exactly `manifest`: an apply of the
    /// same objects changes nothing berth knows of and needs no new record, even
    /// when that rollout failed (its record's verdict is observed again and
    /// updated), so retries of a failed rollout do not pile up records.
    pub fn unchanged(&self, manifest: &str) -> Option<&RecordInfo> {
        self.0
            .last()
            .filter(|r| r.manifest.as_deref() == Some(manifest))
    }

    /// The oldest sequence kept: that of the `keep`-th newest successful apply
    /// (rollbacks do not count, they repeat an older apply), so rollback can walk
    /// back `keep` steps. Everything older may go; 0 when nothing succeeded.
    pub fn oldest_kept(&self, keep: usize) -> u64 {
        self.0
            .iter()
            .rev()
            .filter(|r| r.status == RecordStatus::Succeeded && r.rollback_of.is_none())
            .take(keep.max(1))
            .last()
            .map_or(0, |r| r.record.sequence)
    }

    /// The successful records from [`Records::oldest_kept`] on: whose config
    /// generations stay.
    pub fn kept(&self, keep: usize) -> Vec<Record> {
        let oldest = self.oldest_kept(keep);
        self.0
            .iter()
            .filter(|r| r.status == RecordStatus::Succeeded && r.record.sequence >= oldest)
            .map(|r| r.record.clone())
            .collect()
    }

    /// Records older than what is kept.
    pub fn stale(&self, keep: usize) -> impl Iterator<Item = &RecordInfo> {
        let oldest = self.oldest_kept(keep);
        self.0.iter().filter(move |r| r.record.sequence < oldest)
    }

    /// What `berth rollback` re-applies: the newest successful apply older than
    /// the one running now. The one running now is the newest record if it
    /// succeeded (for a rollback, the apply it repeated); after a failed apply,
    /// the newest successful one is the target.
    pub fn rollback_target(&self) -> Option<&RecordInfo> {
        let current = self
            .0
            .last()
            .filter(|r| r.status == RecordStatus::Succeeded)
            .map(|r| r.rollback_of.unwrap_or(r.record.sequence));
        self.0.iter().rev().find(|r| {
            r.status == RecordStatus::Succeeded && current.is_none_or(|c| r.record.sequence < c)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Records of `(sequence, succeeded, rollback_of)`.
    fn records(list: &[(u64, bool, Option<u64>)]) -> Records {
        Records::new(list.iter().map(|&(s, ok, of)| info(s, ok, of)).collect())
    }

    fn info(sequence: u64, succeeded: bool, rollback_of: Option<u64>) -> RecordInfo {
        RecordInfo {
            record: Record {
                sequence,
                configs: BTreeMap::from([("c".to_string(), format!("c-{sequence}"))]),
            },
            status: if succeeded {
                RecordStatus::Succeeded
            } else {
                RecordStatus::Failed
            },
            stale: BTreeMap::new(),
            rollback_of,
            manifest: Some(format!("objects of r{}", rollback_of.unwrap_or(sequence))),
            parts: 1,
        }
    }

    #[test]
    fn keep_counts_successful_applies_not_rollbacks() {
        let r = records(&[
            (4, false, None),
            (1, true, None),
            (2, true, None),
            (3, true, None),
            (5, true, Some(3)),
        ]);
        assert_eq!(r.next_sequence(), 6);
        assert_eq!(r.oldest_kept(2), 2);
        let kept: Vec<u64> = r.kept(2).iter().map(|r| r.sequence).collect();
        assert_eq!(kept, [2, 3, 5], "failed r4 is not kept");
        let stale: Vec<u64> = r.stale(2).map(|r| r.record.sequence).collect();
        assert_eq!(stale, [1]);
        assert_eq!(r.oldest_kept(0), 3, "keep 0 keeps the current one");
        assert_eq!(Records::default().oldest_kept(2), 0);
    }

    #[test]
    fn rollback_walks_back_past_what_is_running() {
        // r3 runs: back to r2.
        let r = records(&[(1, true, None), (2, true, None), (3, true, None)]);
        assert_eq!(r.rollback_target().map(|t| t.record.sequence), Some(2));
        // r4 failed: back to r3, the last good one.
        let r = records(&[(2, true, None), (3, true, None), (4, false, None)]);
        assert_eq!(r.rollback_target().map(|t| t.record.sequence), Some(3));
        // r5 repeated r3: the next rollback goes to r2.
        let r = records(&[
            (2, true, None),
            (3, true, None),
            (4, false, None),
            (5, true, Some(3)),
        ]);
        assert_eq!(r.rollback_target().map(|t| t.record.sequence), Some(2));
        // Only one good apply: nothing to go back to.
        let r = records(&[(1, true, None)]);
        assert_eq!(r.rollback_target(), None);
    }

    #[test]
    fn unchanged_means_the_newest_record_has_the_same_objects() {
        let r = records(&[(1, true, None), (2, true, None)]);
        assert_eq!(
            r.unchanged("objects of r2").map(|r| r.record.sequence),
            Some(2)
        );
        assert!(r.unchanged("objects of r1").is_none());
        let failed = records(&[(1, true, None), (2, false, None)]);
        assert_eq!(
            failed.unchanged("objects of r2").map(|r| r.record.sequence),
            Some(2),
            "a failed rollout is observed again, not recorded again"
        );
    }

    #[test]
    fn kept_in_memory_as_the_cluster_changes() {
        let mut r = records(&[(1, true, None)]);
        let mut new = info(2, false, None);
        new.status = RecordStatus::Pending;
        r.push(new);
        assert_eq!(r.next_sequence(), 3);
        assert_eq!(
            r.all()[0].manifest,
            None,
            "only the newest keeps its objects"
        );
        assert!(r.unchanged("objects of r2").is_some());
        r.set_status(2, RecordStatus::Succeeded);
        assert_eq!(r.oldest_kept(1), 2);
        r.remove(1);
        let left: Vec<u64> = r.all().iter().map(|r| r.record.sequence).collect();
        assert_eq!(left, [2]);
    }
}
