//! One reconcile of a `Berth`: level-triggered. It reads the resource's
//! sources, asks berth-core for the desired objects (`desired::Parsed::plan`), applies
//! them with berth-kube's one apply path (field manager `berth-controller`,
//! owner references to the `Berth`), observes the rollouts through the same
//! `observe` as `berth apply --wait`, and writes the status, with an Event when
//! the reason changes. A problem with a source never touches what runs: the
//! status says why. Failures are typed, so the error policy retries a timeout
//! soon and a refusal (RBAC, an invalid object) rarely.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use berth_kube::{Applier, ApplyOptions, ClusterError, Kind, Known, Settled};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event as KubeEvent, EventType};
use kube::runtime::finalizer::{finalizer, Event as Finalize};
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use serde_json::json;

use crate::context::{Context, Error};
use crate::desired::{self, Problem};
use crate::owner;
use crate::reason::Reason;
use crate::requeue::{retry_after, Again};
use crate::sources::{read_sources, unlabel_unused};
use crate::status;
use crate::types::{Berth, BerthStatus};
use crate::{FINALIZER, MANAGER};

/// What a Berth's status says of a failed apply: the CLI's message, except
/// where its advice is the CLI's (`--force-conflicts` is no controller flag).
fn status_message(error: &ClusterError) -> String {
    match error {
        ClusterError::Conflict { object, conflicts } => format!(
            "{object}: apply conflicts with other field managers: {}; the controller never takes fields over: remove them from the Berth's workloads, or have that manager give them up (e.g. apply without them)",
            conflicts
                .iter()
                .map(|(field, manager)| format!("{field} (owned by {manager})"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

pub(crate) fn error_policy(berth: Arc<Berth>, error: &Error, context: Arc<Context>) -> Action {
    let reason = error.reason();
    let attempt = {
        let mut failures = berth_io::locked(&context.failures);
        let n = failures
            .entry(ObjectRef::from_obj(berth.as_ref()))
            .or_insert(0);
        *n = n.saturating_add(1);
        *n
    };
    let after = retry_after(reason, attempt);
    tracing::warn!(
        berth = %ObjectRef::from_obj(berth.as_ref()),
        reason = reason.as_str(),
        attempt,
        retry_in = ?after,
        error = %crate::logged::error(error),
        "reconcile failed"
    );
    Action::requeue(after)
}

pub(crate) async fn reconcile(berth: Arc<Berth>, context: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    let _counted = context.metrics.reconcile_started();
    let key = ObjectRef::from_obj(berth.as_ref());
    let leaving = berth.meta().deletion_timestamp.is_some();
    let reason = OnceLock::new();
    let outcome = reconcile_timed(berth, &context, &reason).await;
    let took = started.elapsed();
    match &outcome {
        Ok(_) => {
            {
                let mut failures = berth_io::locked(&context.failures);
                failures.remove(&key);
            }
            match reason.get().copied() {
                Some(reason) => {
                    context.metrics.reconciled(took, reason, false);
                    context
                        .metrics
                        .berth_is(&key.to_string(), (!leaving).then_some(reason));
                    tracing::info!(berth = %key, reason = reason.as_str(), took = ?took, "reconciled");
                }
                None if leaving => context.metrics.berth_is(&key.to_string(), None),
                // Only the finalizer was added; its own write brings the next reconcile.
                None => tracing::debug!(berth = %key, "finalizer added"),
            }
        }
        // What was remembered may be what went wrong: read everything next time.
        Err(e) => {
            context.memories.forget(&key);
            context.metrics.reconciled(took, e.reason(), true);
            context.metrics.berth_is(&key.to_string(), Some(e.reason()));
        }
    }
    outcome
}

async fn reconcile_timed(
    berth: Arc<Berth>,
    context: &Context,
    reason: &OnceLock<Reason>,
) -> Result<Action, Error> {
    let namespace = berth.namespace().unwrap_or_default();
    let api: Api<Berth> = Api::namespaced(context.client.clone(), &namespace);
    finalizer(&api, FINALIZER, berth, |event| async {
        match event {
            Finalize::Apply(berth) => {
                let (action, why) = apply(&berth, context).await?;
                let _ = reason.set(why);
                Ok(action)
            }
            Finalize::Cleanup(berth) => {
                context
                    .memories
                    .forget(&ObjectRef::from_obj(berth.as_ref()));
                context.sources.remove(&berth);
                unlabel_unused(context, &namespace, Some(&berth.name_any())).await?;
                let _ = reason.set(Reason::RolledOut);
                Ok(Action::await_change())
            }
        }
    })
    .await
    .map_err(|e| Error::Finalizer(Box::new(e)))
}

async fn apply(berth: &Berth, context: &Context) -> Result<(Action, Reason), Error> {
    let namespace = berth.namespace().unwrap_or_default();
    let named = desired::sources_named(berth);
    // Before reading them: a source that does not exist yet finds this Berth when it appears.
    context.sources.set(berth, &named);
    let sources = match read_sources(context, &namespace, &named).await {
        Ok(sources) => sources,
        Err(e) => return refused(context, berth, &namespace, e).await,
    };
    // Sources only stop being named when a spec changes (or a Berth goes).
    let spec_changed =
        berth.status.as_ref().and_then(|s| s.observed_generation) != berth.metadata.generation;
    if spec_changed {
        if let Err(e) = unlabel_unused(context, &namespace, None).await {
            return refused(context, berth, &namespace, e).await;
        }
    }
    let mut plan = match plan_for(berth, &namespace, &sources, context).await {
        Ok(plan) => plan,
        Err((problem, after)) => return degraded(context, berth, &problem, None, after).await,
    };
    let owner = owner::reference(berth);
    owner::own(&mut plan.desired.objects, &owner);
    let cluster = context.cluster.in_namespace(&namespace);
    let keep = berth.spec.keep.max(1) as usize;
    let options = ApplyOptions {
        manager: MANAGER.into(),
        force: false,
        keep,
        owner: Some(owner),
    };
    // A Berth no reconcile has written a status for was never applied: it has
    // no records to list. (A controller stopped between recording an apply and
    // writing the status left one: creating it again fails, and the records
    // are listed then.)
    let known = context.memories.take_applied(berth);
    let first = known.is_none() && berth.status.is_none();
    let known = known.or_else(|| first.then(Known::default));
    let session = |known: Option<Known>| match known {
        Some(known) => Applier::resume(&cluster, options.clone(), known, &context.watched),
        None => Applier::new(&cluster, options.clone()),
    };
    let mut applier = session(known);
    let applied = match applier.apply(&plan.desired, &mut |_| {}).await {
        Err(ClusterError::RecordExists { .. }) if first => {
            applier = session(None);
            applier.apply(&plan.desired, &mut |_| {}).await
        }
        applied => applied,
    };
    let applied = match applied {
        Ok(applied) => applied,
        // Cluster-wide trouble is retried by the error policy, not written as the Berth's fault.
        Err(e) if e.kind() == Kind::Unreachable => return Err(e.into()),
        Err(e) => {
            // A record that exists already, an object refused: read everything next time.
            context.memories.forget(&ObjectRef::from_obj(berth));
            let problem = Problem {
                reason: e.kind().into(),
                message: status_message(&e),
            };
            return degraded(context, berth, &problem, Some(&plan), Again::Refused).await;
        }
    };
    context.metrics.applied(applied.outcome.as_str());
    let settled = applier.observe(&mut |_| {}).await?;
    let known = applier.into_known();
    context.memories.update(berth, |m| m.applied = known);
    let (again, reason) = match &settled {
        Settled::Progressing(_) => (Again::RollingOut, Reason::RollingOut),
        Settled::RolledOut => (Again::RolledOut, Reason::RolledOut),
        Settled::Failed(..) => (Again::RolloutFailed, Reason::RolloutFailed),
    };
    write_status(
        context,
        berth,
        status::applied(berth, &plan, &settled),
        reason,
    )
    .await?;
    Ok((Action::requeue(again.after()), reason))
}

/// A source request RBAC refused is the Berth's to show (R1 of #46: it was only logged, and
/// the Berth had no condition): `Degraded`, reason `Forbidden`, naming the verb, the resource
/// and the source. Anything else goes to the error policy.
async fn refused(
    context: &Context,
    berth: &Berth,
    namespace: &str,
    error: Error,
) -> Result<(Action, Reason), Error> {
    let Error::Source {
        verb, kind, name, ..
    } = &error
    else {
        return Err(error);
    };
    if error.reason() != Reason::Forbidden {
        return Err(error);
    }
    let problem = Problem {
        reason: Reason::Forbidden,
        message: format!(
            "the controller may not {verb} {} in {namespace} (source `{name}`); grant it the Role the chart gives it (get, list, watch and patch on configmaps and secrets), or deploy/controller's",
            kind.resource()
        ),
    };
    tracing::warn!(berth = %ObjectRef::from_obj(berth), reason = "Forbidden", "{}", problem.message);
    degraded(context, berth, &problem, None, Again::Refused).await
}

/// Writes `Degraded` for `problem` (the running generation untouched) and looks
/// again as `again` says.
async fn degraded(
    context: &Context,
    berth: &Berth,
    problem: &Problem,
    plan: Option<&desired::Plan>,
    again: Again,
) -> Result<(Action, Reason), Error> {
    write_status(
        context,
        berth,
        status::degraded(berth, problem, plan),
        problem.reason,
    )
    .await?;
    Ok((Action::requeue(again.after()), problem.reason))
}

/// What `berth` wants now, or the problem that stops it and when to look again.
async fn plan_for(
    berth: &Berth,
    namespace: &str,
    sources: &desired::Sources,
    context: &Context,
) -> Result<desired::Plan, (Problem, Again)> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    // The spec is parsed once; pinning and planning both read it.
    let parsed = desired::parse(berth, namespace).map_err(|p| (p, Again::InvalidSpec))?;
    let pins = pin(berth, &parsed, context)
        .await
        .map_err(|p| (p, Again::PinFailed))?;
    // Rendering is CPU work (schemas, certificates, large workloads): off the
    // async workers, which also renew the Lease and serve /readyz. The runtime is
    // multi-threaded (`berth controller` builds it), as block_in_place needs.
    let reads_trust_bundles = (berth.spec.ca_bundles.values())
        .flat_map(|b| &b.sources)
        .any(|s| s.cluster_trust_bundle.is_some());
    let trust = match reads_trust_bundles {
        false => None,
        true => Some(context.trust_bundles.objects().map_err(|why| {
            let problem = Problem {
                reason: Reason::SourceMissing,
                message: format!(
                    "spec.caBundles: a clusterTrustBundle source cannot be read: {why}"
                ),
            };
            // Soon again: the watch's first list may just not be done.
            (problem, Again::TrustBundlesUnlisted)
        })?),
    };
    let trust = trust.as_deref();
    tokio::task::block_in_place(|| parsed.plan(berth, sources, trust, &pins, now)).map_err(
        // A source that exists carries the label, so its edits arrive by watch; one
        // that does not exist yet has no label to be watched by: look again soon.
        |problem| {
            let again = Again::after_plan(problem.reason);
            (problem, again)
        },
    )
}

/// The digests of the components with `pin: true`: recorded in status for the same
/// reference, or one manifest HEAD each (concurrently) for those not pinned yet.
async fn pin(
    berth: &Berth,
    parsed: &desired::Parsed,
    context: &Context,
) -> Result<desired::Pins, Problem> {
    let requests = parsed.pin_requests(berth);
    let answers = futures_util::future::join_all(requests.iter().map(|r| async {
        match &r.known {
            Some(digest) => Ok(digest.clone()),
            None => context.registry.manifest_digest(&r.image).await,
        }
    }))
    .await;
    let mut pins = desired::Pins::new();
    for (request, answer) in requests.into_iter().zip(answers) {
        let digest = answer.map_err(|e| Problem {
            reason: Reason::PinFailed,
            message: format!(
                "spec.images.{}: cannot pin `{}`: {e}",
                request.component, request.image
            ),
        })?;
        pins.insert(request.component, digest);
    }
    Ok(pins)
}

/// `text` cut to the 1 kB an Event's note may have, on a character boundary.
fn note(text: &str) -> String {
    const MAX: usize = 1000;
    if text.len() <= MAX {
        return text.to_string();
    }
    let mut end = MAX - 3;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

/// The condition that says most about `status`: `Degraded` when true, else `Ready`.
fn headline(status: &BerthStatus) -> Option<&crate::types::Condition> {
    let find = |t: &str| status.conditions.iter().find(|c| c.type_ == t);
    find("Degraded")
        .filter(|c| c.status == "True")
        .or_else(|| find("Ready"))
}

/// Writes `status` unless the live one says the same, and publishes an Event on
/// the `Berth` when its headline (reason and status) changes: Normal for a
/// rollout, Warning for a problem. An Event that cannot be published is logged,
/// never a reason to fail the reconcile.
async fn write_status(
    context: &Context,
    berth: &Berth,
    mut status: BerthStatus,
    reason: Reason,
) -> Result<(), Error> {
    let namespace = berth.namespace().unwrap_or_default();
    let api: Api<Berth> = Api::namespaced(context.client.clone(), &namespace);
    // The object a reconcile is handed may lag behind the last status written
    // (the watch is behind under load): compare with the status this replica
    // last wrote (else the newest the watch has), keep its transition times, and
    // write nothing when nothing changed.
    let live = (context.memories.status(berth))
        .or_else(|| {
            context
                .berths
                .get(&ObjectRef::from_obj(berth))
                .and_then(|b| b.status.clone())
        })
        .unwrap_or_default();
    for condition in &mut status.conditions {
        if let Some(previous) = live.conditions.iter().find(|c| c.type_ == condition.type_) {
            if previous.status == condition.status {
                condition.last_transition_time = previous.last_transition_time.clone();
            }
        }
    }
    if status == live {
        context
            .memories
            .update(berth, |m| m.status = Some(status.clone()));
        return Ok(());
    }
    let body = json!({"apiVersion": "berth.dev/v1alpha1", "kind": "Berth", "status": status});
    api.patch_status(
        &berth.name_any(),
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&body),
    )
    .await?;
    context
        .memories
        .update(berth, |m| m.status = Some(status.clone()));
    let before = headline(&live).map(|c| (c.reason.as_str(), c.status.as_str()));
    let Some(now) = headline(&status) else {
        return Ok(());
    };
    if before == Some((now.reason.as_str(), now.status.as_str())) {
        return Ok(());
    }
    let key = ObjectRef::from_obj(berth);
    if !reason.is_healthy() {
        tracing::warn!(berth = %key, reason = reason.as_str(), error = %crate::logged::text(&now.message), "degraded");
    }
    let event = KubeEvent {
        type_: if reason.is_healthy() {
            EventType::Normal
        } else {
            EventType::Warning
        },
        reason: reason.as_str().into(),
        // The Events API takes at most 1 kB of note.
        note: Some(note(&now.message)),
        action: "Reconcile".into(),
        secondary: None,
    };
    if let Err(e) = context
        .recorder
        .publish(&event, &berth.object_ref(&()))
        .await
    {
        tracing::warn!(berth = %key, error = %crate::logged::error(&e), "could not publish an Event");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::finalizer;
    use std::time::Duration;

    fn api_error(code: u16) -> Error {
        Error::Kube(kube::Error::Api(
            kube::core::Status::failure("refused", "Refused")
                .with_code(code)
                .boxed(),
        ))
    }

    #[test]
    fn a_conflict_in_a_status_gives_the_controllers_advice_not_the_clis() {
        let e = ClusterError::Conflict {
            object: Box::new(berth_kube::ObjectRef {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                name: "web".into(),
                namespace: Some("team-a".into()),
            }),
            conflicts: vec![(".spec.replicas".into(), "kubectl-scale".into())],
        };
        let message = super::status_message(&e);
        assert!(!message.contains("--force-conflicts"), "{message}");
        assert!(
            message.contains(".spec.replicas (owned by kubectl-scale)"),
            "{message}"
        );
    }

    #[test]
    fn errors_have_the_reason_of_what_refused_them_through_the_finalizer() {
        assert_eq!(api_error(403).reason(), Reason::Forbidden);
        assert_eq!(api_error(422).reason(), Reason::Invalid);
        assert_eq!(api_error(409).reason(), Reason::Conflict);
        assert_eq!(api_error(503).reason(), Reason::Unreachable);
        let wrapped = Error::Finalizer(Box::new(finalizer::Error::ApplyFailed(api_error(403))));
        assert_eq!(wrapped.reason(), Reason::Forbidden);
        let timeout = Error::Cluster(ClusterError::Timeout {
            action: "apply".into(),
            after: Duration::from_secs(30),
        });
        assert_eq!(timeout.reason(), Reason::Unreachable);
        assert!(
            std::error::Error::source(&wrapped).is_some(),
            "the cause is kept"
        );
    }

    #[test]
    fn notes_fit_an_event() {
        assert_eq!(note("short"), "short");
        let long = "é".repeat(800);
        let cut = note(&long);
        assert!(cut.len() <= 1000 && cut.ends_with("..."), "{}", cut.len());
    }
}

#[cfg(test)]
#[path = "reconcile_tests.rs"]
mod request_tests;
