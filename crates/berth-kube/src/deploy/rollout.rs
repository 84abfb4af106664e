//! Watching what an apply started: CRDs until Established, workloads until their
//! rollouts finish (judged by berth-core), the record's status, and the clean-up
//! of old generations that follows a success.

use super::*;
use crate::remember::Look;

/// How long a look waits after the change that woke it, so the changes of
/// many workloads at once are judged in one look (and said in one line).
const LOOK_GAP: Duration = Duration::from_millis(50);

impl Cluster {
    /// Waits until the CRD is Established and discovery serves its kind: the API
    /// server publishes the new resource a moment after the condition, and an
    /// object of that kind applied in between fails as an unknown kind.
    pub(super) async fn wait_established(
        &self,
        crd: &ObjectRef,
        body: &Value,
    ) -> Result<(), ClusterError> {
        let after = Duration::from_secs(60);
        let deadline = Instant::now() + after;
        let timed_out = || ClusterError::NotEstablished {
            object: Box::new(crd.clone()),
            after,
        };
        if !self.wait_condition(crd, deadline).await? {
            return Err(timed_out());
        }
        let group = body.pointer("/spec/group").and_then(Value::as_str);
        let kind = body.pointer("/spec/names/kind").and_then(Value::as_str);
        let versions: Vec<&str> = body
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .map(|vs| {
                vs.iter()
                    .filter(|v| v["served"] != false)
                    .filter_map(|v| v["name"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        let (Some(group), Some(kind)) = (group, kind) else {
            return Ok(());
        };
        for version in versions {
            let api_version = format!("{group}/{version}");
            loop {
                self.forget_kinds();
                if self.resource(&api_version, kind).await?.is_some() {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(timed_out());
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Ok(())
    }

    /// Whether the CRD became Established before `deadline`.
    pub(super) async fn wait_condition(
        &self,
        crd: &ObjectRef,
        deadline: Instant,
    ) -> Result<bool, ClusterError> {
        loop {
            let established = self.get(crd).await?.is_some_and(|live| {
                live.pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .is_some_and(|cs| {
                        cs.iter()
                            .any(|c| c["type"] == "Established" && c["status"] == "True")
                    })
            });
            if established {
                return Ok(true);
            }
            if Instant::now() > deadline {
                return Ok(false);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// One look at the rollout of every workload in `objects` (concurrently). A
    /// deadline verdict in `stale` (by [`ObjectRef::path`]) was there before the
    /// apply and is not judged.
    pub async fn rollout_states(
        &self,
        objects: &[&ObjectRef],
        stale: &BTreeMap<String, String>,
    ) -> Result<Vec<RolloutState>, ClusterError> {
        self.rollout_states_from(objects, stale, BTreeMap::new(), &mut BTreeMap::new(), None)
            .await
    }

    /// [`Cluster::rollout_states`], with less read. The rollout state of each of `objects`: from `known` (the apply's
    /// answers), else from `looks` when `watches` show the workload at the
    /// resourceVersion it was last judged at, else read. `looks` is left with
    /// each workload's verdict and the resourceVersion it was judged at.
    pub(super) async fn rollout_states_from(
        &self,
        objects: &[&ObjectRef],
        stale: &BTreeMap<String, String>,
        mut known: BTreeMap<ObjectRef, Value>,
        looks: &mut BTreeMap<ObjectRef, Look>,
        watches: Option<&dyn Watches>,
    ) -> Result<Vec<RolloutState>, ClusterError> {
        let reads: Vec<_> = objects
            .iter()
            .map(|object| {
                let known = known.remove(*object);
                let seen = looks.get(*object).cloned().filter(|look| {
                    watches.and_then(|w| w.version(object)).as_ref() == Some(&look.version)
                });
                async move {
                    if let Some(look) = seen {
                        return Ok(((*object).clone(), look));
                    }
                    let watched = || watches.and_then(|w| w.object(object));
                    let live = match known.or_else(watched) {
                        Some(live) => live,
                        None => self.get(object).await?.unwrap_or(Value::Null),
                    };
                    let look = Look {
                        version: live
                            .pointer("/metadata/resourceVersion")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        rollout: rollout_status_after(
                            &object.kind,
                            &live,
                            stale.get(&object.path()).map(String::as_str),
                        ),
                    };
                    Ok::<_, ClusterError>(((*object).clone(), look))
                }
            })
            .collect();
        let judged: Vec<(ObjectRef, Look)> = stream::iter(reads)
            .buffered(CONCURRENCY)
            .try_collect()
            .await?;
        Ok(judged
            .into_iter()
            .map(|(object, look)| {
                let rollout = look.rollout.clone();
                if !look.version.is_empty() {
                    looks.insert(object.clone(), look);
                }
                RolloutState { object, rollout }
            })
            .collect())
    }

    /// One look at the rollouts of `deployed`, judged by berth-core's [`judge`]
    /// and carried out: the record's status updated when it changes, and old
    /// generations deleted (keeping `keep`) once it succeeds. The CLI's wait and
    /// the controller's reconcile both observe through here. With `watches`
    /// (the controller), clean-up trusts `deployed`'s records and the watches'
    /// generations instead of listing them. With `followed` (the CLI's wait), a
    /// workload it shows unchanged since the last look is not read again.
    pub(crate) async fn observe(
        &self,
        deployed: &mut Deployed,
        keep: usize,
        watches: Option<&dyn Watches>,
        followed: Option<&dyn Watches>,
        events: &mut (dyn FnMut(Event) + Send),
    ) -> Result<Settled, ClusterError> {
        let workloads: Vec<&ObjectRef> = deployed
            .objects
            .iter()
            .map(|p| &p.object)
            .filter(|o| has_rollout(&o.kind))
            .collect();
        // What the apply answered is as fresh as a read: judged once, then read.
        let answered = std::mem::take(&mut deployed.answered);
        let states = self
            .rollout_states_from(
                &workloads,
                &deployed.record.stale,
                answered,
                &mut deployed.known.looks,
                watches.or(followed),
            )
            .await?;
        let Observation {
            settled,
            mark,
            clean_up,
        } = judge(
            deployed.record.status,
            states.into_iter().map(|s| (s.object, s.rollout)).collect(),
        );
        if let Some(status) = mark {
            let record = self
                .record_ref(&self.record_name(&deployed.project, deployed.record.record.sequence));
            self.set_record_status(&record, status).await?;
            deployed.record.status = status;
            deployed
                .known
                .records
                .set_status(deployed.record.record.sequence, status);
        }
        if clean_up {
            let known = watches.map(|w| (&deployed.known.records, w));
            let mut left = self
                .clean_up(&deployed.project, keep, &deployed.objects, known, events)
                .await?;
            // Listed metadata only: the newest's objects are still those applied.
            if let (Some(newest), Some(known)) =
                (left.newest_mut(), deployed.known.records.all().last())
            {
                if newest.record.sequence == known.record.sequence {
                    newest.manifest.clone_from(&known.manifest);
                }
            }
            deployed.known.records = left;
        }
        Ok(settled)
    }

    /// Observes `deployed` until every workload has rolled out, one fails, or
    /// `timeout` passes (the record is then marked failed). Looks quickly at first
    /// (most rollouts of unchanged or small workloads are done at once) and backs
    /// off to once a second.
    pub(crate) async fn wait_rollouts(
        &self,
        deployed: &mut Deployed,
        timeout: Duration,
        keep: usize,
        events: &mut (dyn FnMut(Event) + Send),
    ) -> Result<(), ClusterError> {
        let deadline = Instant::now() + timeout;
        let mut interval = Duration::from_millis(50);
        let mut done = std::collections::BTreeSet::new();
        let workloads: Vec<ObjectRef> = (deployed.objects.iter())
            .map(|p| p.object.clone())
            .filter(|o| has_rollout(&o.kind))
            .collect();
        // Started after the first look, and only when something is still rolling out.
        let mut followed: Option<follow::Followed> = None;
        loop {
            // What the watches delivered is as fresh as a read.
            if let Some(followed) = &followed {
                deployed.answered.extend(followed.take());
            }
            // The clean-up that follows a rollout is told after the rollout it follows.
            let mut deleted = Vec::new();
            let mut hold = |event: Event| match event {
                Event::Deleted(_) => deleted.push(event),
                other => events(other),
            };
            let settled = self
                .observe(
                    deployed,
                    keep,
                    None,
                    followed.as_ref().map(|f| f as &dyn Watches),
                    &mut hold,
                )
                .await?;
            let waiting = match settled {
                Settled::RolledOut => {
                    for p in &deployed.objects {
                        if has_rollout(&p.object.kind) && done.insert(p.object.clone()) {
                            events(Event::RolledOut(p.object.clone()));
                        }
                    }
                    deleted.into_iter().for_each(&mut *events);
                    return Ok(());
                }
                Settled::Failed(object, reason) => {
                    return Err(ClusterError::RolloutFailed {
                        object: Box::new(object),
                        reason,
                    })
                }
                Settled::Progressing(waiting) => waiting,
            };
            for p in &deployed.objects {
                let pending = waiting.iter().any(|(o, _)| *o == p.object);
                if has_rollout(&p.object.kind) && !pending && done.insert(p.object.clone()) {
                    events(Event::RolledOut(p.object.clone()));
                }
            }
            events(Event::Waiting(waiting.clone()));
            let now = Instant::now();
            if now >= deadline {
                let record = self.record_ref(
                    &self.record_name(&deployed.project, deployed.record.record.sequence),
                );
                if deployed.record.status != RecordStatus::Failed {
                    self.set_record_status(&record, RecordStatus::Failed)
                        .await?;
                }
                let Some((object, state)) = waiting.into_iter().next() else {
                    return Ok(());
                };
                return Err(ClusterError::RolloutTimeout {
                    object: Box::new(object),
                    after: timeout,
                    state,
                });
            }
            // The next look when a workload changes (and what else changes within
            // LOOK_GAP with it), else after a pause that doubles up to a second.
            let followed = match &mut followed {
                Some(followed) => followed,
                None => followed.insert(self.follow(&workloads.iter().collect::<Vec<_>>()).await),
            };
            followed.changed(interval.min(deadline - now)).await;
            tokio::time::sleep(LOOK_GAP.min(deadline.saturating_duration_since(Instant::now())))
                .await;
            interval = (interval * 2).min(Duration::from_secs(1));
        }
    }
}
