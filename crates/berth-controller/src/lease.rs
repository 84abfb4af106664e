//! Leader election through a `coordination.k8s.io/v1` Lease, with client-go's
//! leaderelection semantics:
//!
//! - the holder renews every retry period and gives up once it has not renewed
//!   for the *renew deadline*, which is shorter than the lease duration: it stops
//!   before any standby may take over;
//! - another holder's Lease expires a whole lease duration after *this* replica
//!   saw the record change (its `resourceVersion`), timed on this replica's
//!   monotonic clock, never by comparing its wall clock with the holder's;
//! - every request is bounded by a timeout, and every renewal by the renew
//!   deadline, so a hung request cannot stretch leadership;
//! - writes are replaces carrying the read `resourceVersion` (compare-and-swap),
//!   so two replicas cannot both win;
//! - on shutdown the holder releases the Lease (no holder, duration 1 s), so a
//!   standby leads within a retry period instead of a lease duration.
//!
//! While it leads, the replica's [`Fence`] is open until the renew deadline of
//! its last renewal; every other write of the client is refused once it closes.

use std::time::{Duration, Instant};

use berth_kube::fence::Fence;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};
use kube::Client;

/// Who competes for which Lease, and how long it holds.
#[derive(Debug, Clone)]
pub struct Election {
    /// The Lease's namespace.
    pub namespace: String,
    /// The Lease's name.
    pub name: String,
    /// This replica (the pod name, or host and pid).
    pub identity: String,
    /// How long a Lease holds without renewal (client-go's default: 15 s).
    pub duration: Duration,
}

/// Why one attempt at the Lease did not answer.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    /// The API server refused or failed the request.
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// The API server did not answer within the request timeout.
    #[error("the API server did not answer a Lease request within {0:?}")]
    Timeout(Duration),
}

impl Election {
    /// How long the holder keeps trying to renew before it stops leading: two
    /// thirds of the duration (client-go: 10 s of 15 s).
    pub fn renew_deadline(&self) -> Duration {
        self.duration * 2 / 3
    }

    /// How often the holder renews and a standby looks: a fifth of the duration,
    /// at most 1.5 s (client-go's default is 2 s), so a released Lease is taken
    /// within 2 s of the leader's SIGTERM.
    pub fn retry_period(&self) -> Duration {
        (self.duration / 5).min(Duration::from_millis(1500))
    }

    /// How long one Lease request may take.
    fn request_timeout(&self) -> Duration {
        self.renew_deadline() / 2
    }

    /// The API path of the namespace's Leases (created by a POST to it, renewed
    /// by a PUT below it), which the write fence lets through.
    pub fn path(&self) -> String {
        format!(
            "/apis/coordination.k8s.io/v1/namespaces/{}/leases",
            self.namespace
        )
    }

    fn spec(&self, transitions: i32, acquired: Option<MicroTime>) -> LeaseSpec {
        let now = MicroTime(k8s_openapi::jiff::Timestamp::now());
        LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(seconds(self.duration)),
            acquire_time: Some(acquired.unwrap_or_else(|| now.clone())),
            renew_time: Some(now),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }
    }
}

fn seconds(duration: Duration) -> i32 {
    i32::try_from(duration.as_secs().max(1)).unwrap_or(i32::MAX)
}

/// What a replica knows of the Lease: the record it last saw and when it saw it
/// change, on its own clock.
#[derive(Debug, Default)]
pub struct Candidate {
    observed: Option<(String, Instant)>,
}

/// What one look at another holder's record allows.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// This replica holds it (renew), or nobody does (take it).
    Take,
    /// Another replica holds it and its duration has not passed since this
    /// replica saw it renewed.
    Wait,
}

/// The decision, pure: `holder` as the record names it, `duration` as it gives
/// it, `unchanged_for` how long this replica has seen the same record.
pub fn judge(
    holder: Option<&str>,
    me: &str,
    duration: Duration,
    unchanged_for: Duration,
) -> Verdict {
    match holder.filter(|h| !h.is_empty()) {
        None => Verdict::Take,
        Some(h) if h == me => Verdict::Take,
        Some(_) if unchanged_for >= duration => Verdict::Take,
        Some(_) => Verdict::Wait,
    }
}

impl Candidate {
    /// How long the record with `version` has been seen unchanged.
    fn seen(&mut self, version: &str, now: Instant) -> Duration {
        match &self.observed {
            Some((seen, at)) if seen == version => now.duration_since(*at),
            _ => {
                self.observed = Some((version.to_string(), now));
                Duration::ZERO
            }
        }
    }

    /// One attempt to hold the Lease, each request bounded: true when this
    /// replica holds it afterwards.
    pub async fn try_hold(
        &mut self,
        election: &Election,
        client: &Client,
    ) -> Result<bool, LeaseError> {
        let api: Api<Lease> = Api::namespaced(client.clone(), &election.namespace);
        let timeout = election.request_timeout();
        let Some(mut lease) = within(timeout, api.get_opt(&election.name)).await?? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(election.name.clone()),
                    namespace: Some(election.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(election.spec(0, None)),
            };
            let created = within(timeout, api.create(&PostParams::default(), &lease)).await?;
            return settle(self, created);
        };
        let version = lease.metadata.resource_version.clone().unwrap_or_default();
        let unchanged_for = self.seen(&version, Instant::now());
        let spec = lease.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.as_deref();
        let duration = spec
            .lease_duration_seconds
            .and_then(|s| u64::try_from(s).ok())
            .map_or(election.duration, Duration::from_secs);
        if judge(holder, &election.identity, duration, unchanged_for) == Verdict::Wait {
            return Ok(false);
        }
        let mine = holder == Some(election.identity.as_str());
        let transitions = spec.lease_transitions.unwrap_or(0) + i32::from(!mine);
        let acquired = if mine {
            spec.acquire_time.clone()
        } else {
            None
        };
        lease.spec = Some(election.spec(transitions, acquired));
        // The resourceVersion read above makes this a compare-and-swap.
        let replaced = within(
            timeout,
            api.replace(&election.name, &PostParams::default(), &lease),
        )
        .await?;
        settle(self, replaced)
    }

    /// Gives the Lease up when this replica holds it: no holder and a duration
    /// of one second, as client-go's `ReleaseOnCancel` leaves it.
    pub async fn release(
        &mut self,
        election: &Election,
        client: &Client,
    ) -> Result<(), LeaseError> {
        let api: Api<Lease> = Api::namespaced(client.clone(), &election.namespace);
        let timeout = election.request_timeout();
        let Some(mut lease) = within(timeout, api.get_opt(&election.name)).await?? else {
            return Ok(());
        };
        let mut spec = lease.spec.clone().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(election.identity.as_str()) {
            return Ok(());
        }
        let now = MicroTime(k8s_openapi::jiff::Timestamp::now());
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(now.clone());
        spec.acquire_time = Some(now);
        lease.spec = Some(spec);
        within(
            timeout,
            api.replace(&election.name, &PostParams::default(), &lease),
        )
        .await??;
        self.observed = None;
        Ok(())
    }
}

/// `request`, or a [`LeaseError::Timeout`] when it takes longer than `timeout`.
async fn within<T>(
    timeout: Duration,
    request: impl std::future::Future<Output = Result<T, kube::Error>>,
) -> Result<Result<T, kube::Error>, LeaseError> {
    tokio::time::timeout(timeout, request)
        .await
        .map_err(|_| LeaseError::Timeout(timeout))
}

/// A create or replace answered: held, lost to another writer (409), or failed.
fn settle(
    candidate: &mut Candidate,
    answer: Result<Lease, kube::Error>,
) -> Result<bool, LeaseError> {
    match answer {
        Ok(lease) => {
            let version = lease.metadata.resource_version.unwrap_or_default();
            candidate.observed = Some((version, Instant::now()));
            Ok(true)
        }
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
        Err(e) => Err(LeaseError::Kube(e)),
    }
}

/// Waits until this replica holds the Lease; each attempt's answer goes to
/// `looked` (the standby's readiness: it can reach the API server).
pub async fn acquire(
    election: &Election,
    candidate: &mut Candidate,
    client: &Client,
    fence: &Fence,
    looked: &(dyn Fn(bool) + Send + Sync),
) {
    let mut waited = false;
    let throttle = crate::logged::Throttle::default();
    loop {
        let sent = Instant::now();
        match candidate.try_hold(election, client).await {
            Ok(true) => {
                fence.open_until(sent + election.renew_deadline());
                looked(true);
                return;
            }
            Ok(false) => {
                looked(true);
                if !waited {
                    tracing::info!(lease = %format!("{}/{}", election.namespace, election.name), "waiting for leadership");
                    waited = true;
                }
            }
            Err(e) => {
                looked(false);
                let error = crate::logged::error(&e);
                if let Some(suppressed) = throttle.admit(&error) {
                    tracing::warn!(%error, suppressed, "could not take the Lease; retrying");
                }
            }
        }
        tokio::time::sleep(election.retry_period()).await;
    }
}

/// Renews the Lease every retry period and keeps the fence open until the renew
/// deadline of the last renewal; returns (with the fence closed) when it could
/// not renew within the renew deadline, or another replica took the Lease.
pub async fn keep(election: &Election, candidate: &mut Candidate, client: &Client, fence: &Fence) {
    let mut renewed = Instant::now();
    loop {
        tokio::time::sleep(election.retry_period()).await;
        let deadline = renewed + election.renew_deadline();
        let sent = Instant::now();
        let attempt = tokio::time::timeout_at(
            tokio::time::Instant::from_std(deadline),
            candidate.try_hold(election, client),
        )
        .await;
        match attempt {
            Ok(Ok(true)) => {
                renewed = sent;
                fence.open_until(sent + election.renew_deadline());
            }
            Ok(Ok(false)) => {
                fence.close();
                tracing::warn!("another replica holds the Lease");
                return;
            }
            Ok(Err(e)) => tracing::warn!(error = %crate::logged::error(&e), "lease renewal"),
            Err(_) => tracing::warn!("lease renewal did not answer before the renew deadline"),
        }
        if Instant::now() >= renewed + election.renew_deadline() {
            fence.close();
            tracing::warn!(
                renew_deadline = ?election.renew_deadline(),
                "could not renew the Lease within the renew deadline"
            );
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn election(secs: u64) -> Election {
        Election {
            namespace: "ns".into(),
            name: "berth-controller".into(),
            identity: "a".into(),
            duration: Duration::from_secs(secs),
        }
    }

    #[test]
    fn the_holder_gives_up_before_a_standby_may_take_over() {
        for secs in [1, 3, 15, 60] {
            let e = election(secs);
            assert!(e.renew_deadline() < e.duration, "{secs}");
            assert!(e.retry_period() < e.renew_deadline(), "{secs}");
            assert!(e.request_timeout() < e.renew_deadline(), "{secs}");
            assert!(e.retry_period() <= Duration::from_millis(1500), "{secs}");
        }
        let e = election(15);
        assert_eq!(e.renew_deadline(), Duration::from_secs(10));
        assert_eq!(e.retry_period(), Duration::from_millis(1500));
    }

    #[test]
    fn another_holder_is_waited_for_a_whole_duration_of_an_unchanged_record() {
        let d = Duration::from_secs(15);
        assert_eq!(judge(Some("b"), "a", d, Duration::ZERO), Verdict::Wait);
        assert_eq!(
            judge(Some("b"), "a", d, Duration::from_secs(14)),
            Verdict::Wait
        );
        assert_eq!(judge(Some("b"), "a", d, d), Verdict::Take);
        assert_eq!(judge(Some("a"), "a", d, Duration::ZERO), Verdict::Take);
        assert_eq!(
            judge(None, "a", d, Duration::ZERO),
            Verdict::Take,
            "released"
        );
        assert_eq!(
            judge(Some(""), "a", d, Duration::ZERO),
            Verdict::Take,
            "released"
        );
    }

    #[test]
    fn expiry_is_timed_from_when_this_replica_saw_the_record_change() {
        let mut c = Candidate::default();
        let t0 = Instant::now();
        assert_eq!(c.seen("7", t0), Duration::ZERO);
        assert_eq!(
            c.seen("7", t0 + Duration::from_secs(5)),
            Duration::from_secs(5)
        );
        // A renewal (new resourceVersion) restarts the clock, whatever renewTime says.
        assert_eq!(c.seen("8", t0 + Duration::from_secs(6)), Duration::ZERO);
        assert_eq!(
            c.seen("8", t0 + Duration::from_secs(7)),
            Duration::from_secs(1)
        );
    }

    #[test]
    fn the_lease_path_is_what_the_fence_lets_through() {
        assert_eq!(
            election(15).path(),
            "/apis/coordination.k8s.io/v1/namespaces/ns/leases"
        );
    }
}
