//! The status a reconcile writes: conditions `Ready`, `Progressing` and
//! `Degraded` with reasons, and what each component, config and bundle became.
//! A condition keeps its `lastTransitionTime` while its status stays the same.

use berth_kube::Settled;
use kube::ResourceExt;

use crate::desired::{Plan, Problem};
use crate::reason::Reason;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::types::{Berth, BerthStatus, Condition};

/// Now, as a condition's transition time (whole seconds, as the API server keeps it).
fn now() -> Time {
    let now = k8s_openapi::jiff::Timestamp::now();
    // Within jiff's range by construction: a second of a valid timestamp.
    Time(k8s_openapi::jiff::Timestamp::from_second(now.as_second()).unwrap_or(now))
}

/// A condition, keeping the transition time of `previous` when the status is unchanged.
fn condition(
    berth: &Berth,
    type_: &str,
    status: bool,
    reason: Reason,
    message: String,
) -> Condition {
    let status = if status { "True" } else { "False" }.to_string();
    let previous = berth
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == type_));
    let last_transition_time = match previous {
        Some(p) if p.status == status => p.last_transition_time.clone(),
        _ => now(),
    };
    Condition {
        type_: type_.into(),
        status,
        reason: reason.as_str().into(),
        message,
        last_transition_time,
        observed_generation: berth.metadata.generation,
    }
}

fn base(berth: &Berth, plan: Option<&Plan>) -> BerthStatus {
    let previous = berth.status.clone().unwrap_or_default();
    BerthStatus {
        observed_generation: berth.metadata.generation,
        conditions: Vec::new(),
        images: plan.map_or(previous.images, |p| p.images.clone()),
        configs: plan.map_or(previous.configs, |p| p.configs.clone()),
        ca_bundles: plan.map_or(previous.ca_bundles, |p| p.ca_bundles.clone()),
    }
}

/// The resource cannot be carried out now: `Degraded`, with the previous
/// `Ready` kept (the last good generation keeps running).
pub fn degraded(berth: &Berth, problem: &Problem, plan: Option<&Plan>) -> BerthStatus {
    let mut status = base(berth, plan);
    let ready = berth
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"))
        .cloned()
        .unwrap_or_else(|| {
            condition(
                berth,
                "Ready",
                false,
                problem.reason,
                format!("not applied: {}", problem.message),
            )
        });
    status.conditions = vec![
        ready,
        condition(
            berth,
            "Progressing",
            false,
            problem.reason,
            "waiting for the problem to be fixed".into(),
        ),
        condition(
            berth,
            "Degraded",
            true,
            problem.reason,
            problem.message.clone(),
        ),
    ];
    status
}

/// Applied; the rollout as `settled` reports it.
pub fn applied(berth: &Berth, plan: &Plan, settled: &Settled) -> BerthStatus {
    let mut status = base(berth, Some(plan));
    let name = berth.name_any();
    status.conditions = match settled {
        Settled::RolledOut => vec![
            condition(
                berth,
                "Ready",
                true,
                Reason::RolledOut,
                format!("every workload of {name} rolled out"),
            ),
            condition(
                berth,
                "Progressing",
                false,
                Reason::RolledOut,
                "nothing in progress".into(),
            ),
            condition(
                berth,
                "Degraded",
                false,
                Reason::RolledOut,
                "no problem".into(),
            ),
        ],
        Settled::Progressing(waiting) => {
            let how: Vec<String> = waiting
                .iter()
                .map(|(o, how)| format!("{}/{}: {how}", o.kind, o.name))
                .collect();
            vec![
                condition(berth, "Ready", false, Reason::RollingOut, how.join("; ")),
                condition(
                    berth,
                    "Progressing",
                    true,
                    Reason::RollingOut,
                    how.join("; "),
                ),
                condition(
                    berth,
                    "Degraded",
                    false,
                    Reason::RollingOut,
                    "no problem".into(),
                ),
            ]
        }
        Settled::Failed(object, reason) => vec![
            condition(
                berth,
                "Ready",
                false,
                Reason::RolloutFailed,
                format!("{object}: {reason}"),
            ),
            condition(
                berth,
                "Progressing",
                false,
                Reason::RolloutFailed,
                "the rollout stopped".into(),
            ),
            condition(
                berth,
                "Degraded",
                true,
                Reason::RolloutFailed,
                format!("{object}: {reason}; the previous generations are kept"),
            ),
        ],
    };
    status
}
