//! What a caller that keeps running (the controller) may know without asking
//! the server: which way an apply went ([`Outcome`]), what its watches show
//! ([`Watches`]), and what it knows of its last apply ([`Known`]).
//! With these, an apply of the same objects that nobody touched since costs no
//! request; `berth apply` and `berth dev` pass none and read everything.

use std::collections::BTreeMap;

use berth_core::cluster::{fingerprint, Fingerprint, ObjectRef, Records, Rollout};
use serde_json::Value;

/// Which way an apply went: what it asked of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The objects of the newest record, which nobody touched since this
    /// process applied them ([`Known`]): nothing was asked.
    Untouched,
    /// The objects of the newest record: a dry run and a read of each, and the
    /// `reapplied` ones that drifted applied again.
    Checked {
        /// Objects applied again.
        reapplied: usize,
    },
    /// New objects: a dry run, the apply, a new record.
    Recorded,
}

impl Outcome {
    /// `untouched`, `checked`, `repaired` (checked, and something applied again)
    /// or `recorded`: a metric's label.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Untouched => "untouched",
            Outcome::Checked { reapplied: 0 } => "checked",
            Outcome::Checked { .. } => "repaired",
            Outcome::Recorded => "recorded",
        }
    }
}

/// What a caller's watches show, in place of requests: the controller's
/// label-selected metadata caches. Only the one writer of its projects (the
/// controller, its writes fenced by its Lease) may trust them this far.
pub trait Watches: Sync {
    /// An object's fingerprint as the watch shows it now (`None`: not known).
    fn fingerprint(&self, object: &ObjectRef) -> Option<Fingerprint>;
    /// An object's resourceVersion as the watch shows it now (`None`: not known).
    /// Any change, its status's included, gives a new one.
    fn version(&self, object: &ObjectRef) -> Option<String>;
    /// The object as the watch shows it now, when the watch keeps whole objects
    /// (trimmed to what a rollout is judged by): a look needs no read then.
    fn object(&self, _object: &ObjectRef) -> Option<serde_json::Value> {
        None
    }
    /// The generated configs of `kind` (`ConfigMap`, `Secret`) of `project` in
    /// `namespace` as the watch shows them, as (config, name); `None` when that
    /// is not watched.
    fn generations(
        &self,
        kind: &str,
        namespace: &str,
        project: &str,
    ) -> Option<Vec<(String, String)>>;
}

/// What an [`Applier`](crate::Applier) knows of its project after an apply
/// and its observations: the records, the newest with its objects; each
/// object's fingerprint; the last look at each workload. A caller that keeps
/// running (the controller) keeps it between applies and hands it, with its
/// watches, to the next session: an apply of the same objects that nobody
/// touched since then asks the server nothing (no listing of records, no dry
/// run, no read for drift). Anything else (another record, an object changed,
/// deleted or not seen yet) takes the full path. A caller forgets it after any
/// error. [`Known::default`] is a project never applied: no records to list.
#[derive(Debug, Clone, Default)]
pub struct Known {
    /// The project's records, the newest with its objects.
    pub records: Records,
    /// Each object's [`Fingerprint`] as the apply (or the drift check) left it.
    pub fingerprints: BTreeMap<ObjectRef, Fingerprint>,
    /// The last look at each workload's rollout: with watches that show a
    /// workload at the same resourceVersion, it is not read again.
    pub looks: BTreeMap<ObjectRef, Look>,
}

/// The last look at a workload's rollout: the resourceVersion it was judged
/// at, and the verdict. A rollout's state is a function of the object alone
/// (and of its record's stale deadline verdicts, which a record never
/// changes), so while the watch shows the same resourceVersion the verdict
/// stands and the workload is not read again: a resync, or a reconcile its
/// own status write started, costs no request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Look {
    /// The workload's resourceVersion when judged.
    pub version: String,
    /// The verdict.
    pub rollout: Rollout,
}

/// Each answer's fingerprint for `manager`.
pub(crate) fn fingerprints_of(
    answers: &BTreeMap<ObjectRef, Value>,
    manager: &str,
) -> BTreeMap<ObjectRef, Fingerprint> {
    answers
        .iter()
        .filter_map(|(object, answer)| Some((object.clone(), fingerprint(answer, manager)?)))
        .collect()
}
