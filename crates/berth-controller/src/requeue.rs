//! When the controller looks at a `Berth` again: the one table of its delays.
//! A reconcile that ends (with the Berth rolled out, rolling, or degraded and
//! its status saying why) requeues after [`Again::after`]; one that fails is
//! retried after [`retry_after`], backing off by the kind of failure.

use std::time::Duration;

use crate::reason::Reason;

/// Why a reconcile that ended asks to look again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Again {
    /// A rollout is in progress: watched, but its end is looked at soon.
    RollingOut,
    /// Rolled out. Every change that matters arrives by watch; this is the safety net for
    /// what no watch shows (a kind it does not watch edited by hand). An hour, so thousands of
    /// settled Berths make no steady stream of requests (controller-runtime resyncs every ten).
    RolledOut,
    /// A rollout failed: someone has to act; looked at every few minutes.
    RolloutFailed,
    /// The API server refused an object or a source (RBAC, invalid): fixed by a person, but
    /// often soon after (a Role granted), so half a minute.
    Refused,
    /// The spec cannot be read: a new generation arrives by watch anyway.
    InvalidSpec,
    /// A registry did not answer a pin: it may be back in a minute.
    PinFailed,
    /// The ClusterTrustBundle watch has not listed yet.
    TrustBundlesUnlisted,
    /// A named source does not exist: it has no label to be watched by, so looked for soon.
    SourceMissing,
    /// The plan cannot be made from the sources (a key missing, a bad certificate).
    PlanFailed,
}

impl Again {
    /// The delay before the next look.
    pub fn after(self) -> Duration {
        Duration::from_secs(match self {
            Again::RollingOut => 5,
            Again::SourceMissing => 10,
            Again::Refused | Again::TrustBundlesUnlisted => 30,
            Again::PinFailed => 60,
            Again::RolloutFailed | Again::InvalidSpec | Again::PlanFailed => 300,
            Again::RolledOut => 3600,
        })
    }

    /// After a plan that could not be made for `reason`.
    pub fn after_plan(reason: Reason) -> Again {
        match reason {
            Reason::SourceMissing => Again::SourceMissing,
            _ => Again::PlanFailed,
        }
    }
}

/// The retry delay after the `attempt`-th failure in a row for `reason`:
/// doubling from 1 s to 1 min when the cause may pass by itself (a timeout, an
/// unreachable server, a conflict), from 30 s to 15 min when someone has to fix
/// something (RBAC, an invalid object).
pub fn retry_after(reason: Reason, attempt: u32) -> Duration {
    let (first, most) = if reason.is_transient() {
        (Duration::from_secs(1), Duration::from_secs(60))
    } else {
        (Duration::from_secs(30), Duration::from_secs(15 * 60))
    };
    first
        .saturating_mul(1u32 << attempt.saturating_sub(1).min(16))
        .min(most)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_are_retried_soon_and_refusals_rarely() {
        let s = Duration::from_secs;
        assert_eq!(retry_after(Reason::Unreachable, 1), s(1));
        assert_eq!(retry_after(Reason::Unreachable, 3), s(4));
        assert_eq!(retry_after(Reason::Unreachable, 30), s(60));
        assert_eq!(retry_after(Reason::Forbidden, 1), s(30));
        assert_eq!(retry_after(Reason::Forbidden, 2), s(60));
        assert_eq!(retry_after(Reason::Invalid, 40), s(15 * 60));
    }

    #[test]
    fn each_way_a_reconcile_ends_has_its_delay() {
        let s = Duration::from_secs;
        let table = [
            (Again::RollingOut, s(5)),
            (Again::SourceMissing, s(10)),
            (Again::Refused, s(30)),
            (Again::TrustBundlesUnlisted, s(30)),
            (Again::PinFailed, s(60)),
            (Again::RolloutFailed, s(300)),
            (Again::InvalidSpec, s(300)),
            (Again::PlanFailed, s(300)),
            (Again::RolledOut, s(3600)),
        ];
        for (again, after) in table {
            assert_eq!(again.after(), after, "{again:?}");
        }
        assert_eq!(
            Again::after_plan(Reason::SourceMissing),
            Again::SourceMissing
        );
        assert_eq!(
            Again::after_plan(Reason::InvalidCertificate),
            Again::PlanFailed
        );
    }
}
