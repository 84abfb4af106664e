//! One look at an apply's rollouts, decided: where the apply stands, whether its
//! record's status changes, and whether old generations may go now. The same
//! judgement for `berth apply --wait` (the CLI's wait loop looks until it is not
//! progressing) and for the controller (one look per reconcile), so the two can
//! never disagree about a rollout.

use super::{ObjectRef, RecordStatus, Rollout};

/// Where the newest apply of a project stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    /// Every workload rolled out.
    RolledOut,
    /// Still going: each workload not yet done, and how far it is.
    Progressing(Vec<(ObjectRef, String)>),
    /// A workload's rollout failed: it, and the reason and message of the failing condition.
    Failed(ObjectRef, String),
}

/// What one look decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// Where the apply stands.
    pub settled: Settled,
    /// The record's new status, when it changes.
    pub mark: Option<RecordStatus>,
    /// Whether generations no kept record uses may be deleted now (once, when the
    /// record turns succeeded).
    pub clean_up: bool,
}

/// Judges the rollouts of the apply whose record stands at `status`; `rollouts`
/// are its workloads' states, its record's stale deadline verdicts already set
/// aside ([`super::rollout_status_after`]). A failure wins over progress: a
/// workload that will not finish fails the apply whatever the others do.
pub fn judge(status: RecordStatus, rollouts: Vec<(ObjectRef, Rollout)>) -> Observation {
    let mut progressing = Vec::new();
    for (object, rollout) in rollouts {
        match rollout {
            Rollout::Done => {}
            Rollout::Failed(reason) => {
                return Observation {
                    settled: Settled::Failed(object, reason),
                    mark: (status != RecordStatus::Failed).then_some(RecordStatus::Failed),
                    clean_up: false,
                }
            }
            Rollout::Progressing(how) => progressing.push((object, how)),
        }
    }
    if !progressing.is_empty() {
        return Observation {
            settled: Settled::Progressing(progressing),
            mark: None,
            clean_up: false,
        };
    }
    let changes = status != RecordStatus::Succeeded;
    Observation {
        settled: Settled::RolledOut,
        mark: changes.then_some(RecordStatus::Succeeded),
        clean_up: changes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(name: &str) -> ObjectRef {
        ObjectRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: name.into(),
            namespace: Some("ns".into()),
        }
    }

    #[test]
    fn a_pending_apply_rolled_out_is_marked_and_cleaned_up_once() {
        let done = vec![(deployment("a"), Rollout::Done)];
        let first = judge(RecordStatus::Pending, done.clone());
        assert_eq!(first.settled, Settled::RolledOut);
        assert_eq!(first.mark, Some(RecordStatus::Succeeded));
        assert!(first.clean_up);
        let again = judge(RecordStatus::Succeeded, done);
        assert_eq!((again.mark, again.clean_up), (None, false));
    }

    #[test]
    fn a_failure_wins_over_progress_and_is_marked_once() {
        let rollouts = vec![
            (deployment("a"), Rollout::Progressing("1 of 2".into())),
            (
                deployment("b"),
                Rollout::Failed("ProgressDeadlineExceeded: x".into()),
            ),
        ];
        let seen = judge(RecordStatus::Pending, rollouts.clone());
        assert_eq!(
            seen.settled,
            Settled::Failed(deployment("b"), "ProgressDeadlineExceeded: x".into())
        );
        assert_eq!(seen.mark, Some(RecordStatus::Failed));
        assert_eq!(
            judge(RecordStatus::Failed, rollouts).mark,
            None,
            "no rewrite"
        );
    }

    #[test]
    fn progress_changes_nothing_and_a_failed_apply_that_finishes_succeeds() {
        let going = judge(
            RecordStatus::Failed,
            vec![(deployment("a"), Rollout::Progressing("1 of 2".into()))],
        );
        assert_eq!((going.mark, going.clean_up), (None, false));
        let late = judge(RecordStatus::Failed, vec![(deployment("a"), Rollout::Done)]);
        assert_eq!(late.mark, Some(RecordStatus::Succeeded));
    }
}
