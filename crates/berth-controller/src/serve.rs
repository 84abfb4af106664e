//! `/healthz`, `/readyz` and Prometheus `/metrics` over plain HTTP/1.1.
//!
//! `/readyz` says whether this replica does its part: a standby is Ready once
//! it reaches the API server (it watches the Lease), the leader once its caches
//! are synced; both answer 503 while starting and while stopping. So a
//! Deployment of two replicas is Available and rolls out, and a Service in front
//! of them stops sending to a replica that is shutting down.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::reason::Reason;

/// Where this replica stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Not yet in touch with the API server.
    Starting = 0,
    /// Another replica leads; this one watches the Lease.
    Standby = 1,
    /// Leading; the caches are still filling.
    Leading = 2,
    /// Leading, with every cache synced.
    Synced = 3,
    /// A signal came: finishing in-flight work and releasing the Lease.
    Stopping = 4,
}

impl Phase {
    fn from_u8(value: u8) -> Phase {
        match value {
            1 => Phase::Standby,
            2 => Phase::Leading,
            3 => Phase::Synced,
            4 => Phase::Stopping,
            _ => Phase::Starting,
        }
    }

    fn ready(self) -> Result<(), &'static str> {
        match self {
            Phase::Standby | Phase::Synced => Ok(()),
            Phase::Starting => Err("starting: the API server has not answered yet\n"),
            Phase::Leading => Err("leading: caches not synced yet\n"),
            Phase::Stopping => Err("stopping\n"),
        }
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: &'static str,
}

/// What the controller counts, and where it stands.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    reconciles: Family<ReasonLabel, Counter>,
    failures: Family<ReasonLabel, Counter>,
    duration: Histogram,
    leader: Gauge,
    deleted: Family<KindLabel, Counter>,
    applies: Family<OutcomeLabel, Counter>,
    in_flight: Gauge,
    berths: Family<ReasonLabel, Gauge>,
    /// Each Berth's last reason, so `berths` moves a Berth between reasons.
    last: std::sync::Mutex<std::collections::HashMap<String, &'static str>>,
    phase: AtomicU8,
}

/// Keeps `reconciles_in_flight` counted while a reconcile runs.
#[derive(Debug)]
pub struct InFlight<'a>(&'a Gauge);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.dec();
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: String,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("berth_controller");
        let reconciles = Family::<ReasonLabel, Counter>::default();
        let failures = Family::<ReasonLabel, Counter>::default();
        // 5 ms to ~20 s: an unchanged reconcile is a few requests, a pin a registry round trip.
        let duration = Histogram::new(exponential_buckets(0.005, 2.0, 13));
        let leader = Gauge::default();
        let deleted = Family::<KindLabel, Counter>::default();
        let applies = Family::<OutcomeLabel, Counter>::default();
        registry.register(
            "applies",
            "Applies by what they asked of the API server: untouched (nothing: the objects of the newest record, untouched since), checked (a dry run and a read each), repaired (checked, and what drifted applied again), recorded (new objects)",
            applies.clone(),
        );
        registry.register(
            "generations_deleted",
            "Config generations kept for a GitOps engine and deleted once nothing used them, by kind",
            deleted.clone(),
        );
        registry.register(
            "reconciles",
            "Reconciles run, by the reason they ended with",
            reconciles.clone(),
        );
        registry.register(
            "reconcile_errors",
            "Reconciles that left a Berth Degraded or failed and were retried, by reason",
            failures.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "Time one reconcile took",
            duration.clone(),
        );
        registry.register(
            "leader",
            "1 while this replica holds the leader Lease (or runs without election)",
            leader.clone(),
        );
        let in_flight = Gauge::default();
        registry.register(
            "reconciles_in_flight",
            "Reconciles running now (at most --concurrency)",
            in_flight.clone(),
        );
        let berths = Family::<ReasonLabel, Gauge>::default();
        registry.register(
            "berths",
            "Berths by the reason of their last reconcile (RolledOut and RollingOut are Ready or on the way; every other reason is Degraded)",
            berths.clone(),
        );
        // Every series exists from the start at zero, so `increase()` and
        // alerts see the first error, not only the second. (The guards
        // `get_or_create` returns are not needed: creating is the point.)
        for reason in Reason::ALL {
            let label = ReasonLabel {
                reason: reason.as_str(),
            };
            let _ = reconciles.get_or_create(&label);
            let _ = failures.get_or_create(&label);
            let _ = berths.get_or_create(&label);
        }
        for outcome in ["untouched", "checked", "repaired", "recorded"] {
            let _ = applies.get_or_create(&OutcomeLabel { outcome });
        }
        for kind in ["ConfigMap", "Secret"] {
            let _ = deleted.get_or_create(&KindLabel { kind: kind.into() });
        }
        Metrics {
            registry,
            reconciles,
            failures,
            duration,
            leader,
            deleted,
            applies,
            in_flight,
            berths,
            last: std::sync::Mutex::default(),
            phase: AtomicU8::new(Phase::Starting as u8),
        }
    }
}

impl Metrics {
    /// Counts a kept generation (`ConfigMap`, `Secret`) deleted.
    pub fn generation_deleted(&self, kind: &str) {
        self.deleted
            .get_or_create(&KindLabel {
                kind: kind.to_string(),
            })
            .inc();
    }

    /// Counts an apply by its outcome (`berth_kube::Outcome::as_str`).
    pub fn applied(&self, outcome: &'static str) {
        self.applies.get_or_create(&OutcomeLabel { outcome }).inc();
    }

    /// Counts one reconcile that took `took` and ended with `reason`; `failed`
    /// when it returned an error (and will be retried).
    pub fn reconciled(&self, took: Duration, reason: Reason, failed: bool) {
        let label = ReasonLabel {
            reason: reason.as_str(),
        };
        self.reconciles.get_or_create(&label).inc();
        if failed || !reason.is_healthy() {
            self.failures.get_or_create(&label).inc();
        }
        self.duration.observe(took.as_secs_f64());
    }

    /// A reconcile starts; the gauge goes down when the returned guard drops.
    pub fn reconcile_started(&self) -> InFlight<'_> {
        self.in_flight.inc();
        InFlight(&self.in_flight)
    }

    /// Berth `key`'s last reconcile ended with `reason`; `None`: the Berth is gone.
    pub fn berth_is(&self, key: &str, reason: Option<Reason>) {
        // A poisoned lock means a panic while holding it, which nothing below
        // can cause: use the map as it is.
        let mut last = berth_io::locked(&self.last);
        let before = match reason {
            Some(reason) => last.insert(key.to_string(), reason.as_str()),
            None => last.remove(key),
        };
        if let Some(before) = before {
            self.berths
                .get_or_create(&ReasonLabel { reason: before })
                .dec();
        }
        if let Some(reason) = reason {
            self.berths
                .get_or_create(&ReasonLabel {
                    reason: reason.as_str(),
                })
                .inc();
        }
    }

    /// Moves to `phase`; the leader gauge follows.
    pub fn enter(&self, phase: Phase) {
        self.phase.store(phase as u8, Ordering::Relaxed);
        let leading = matches!(phase, Phase::Leading | Phase::Synced);
        self.leader.set(i64::from(leading));
    }

    /// Moves to `to` only from `from` (a standby that loses touch with the API
    /// server is not Ready, a leader's phase is not overwritten by it).
    pub fn enter_from(&self, from: Phase, to: Phase) {
        let _ =
            self.phase
                .compare_exchange(from as u8, to as u8, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Where this replica stands.
    pub fn phase(&self) -> Phase {
        Phase::from_u8(self.phase.load(Ordering::Relaxed))
    }

    /// The OpenMetrics text exposition.
    pub fn text(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

fn answer(metrics: &Metrics, path: &str) -> Response<Full<Bytes>> {
    let (status, body) = match path {
        "/healthz" => (StatusCode::OK, "ok\n".to_string()),
        "/readyz" => match metrics.phase().ready() {
            Ok(()) => (StatusCode::OK, "ok\n".to_string()),
            Err(why) => (StatusCode::SERVICE_UNAVAILABLE, why.to_string()),
        },
        "/metrics" => (StatusCode::OK, metrics.text()),
        _ => (StatusCode::NOT_FOUND, "not found\n".to_string()),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    if path == "/metrics" {
        if let Ok(value) = hyper::header::HeaderValue::from_str(
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        ) {
            response
                .headers_mut()
                .insert(hyper::header::CONTENT_TYPE, value);
        }
    }
    response
}

/// Serves on `listener` until the process ends.
pub async fn serve(
    listener: tokio::net::TcpListener,
    metrics: Arc<Metrics>,
) -> std::io::Result<()> {
    loop {
        let (stream, _) = listener.accept().await?;
        let metrics = Arc::clone(&metrics);
        tokio::spawn(async move {
            let service =
                hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
                    let response = answer(&metrics, request.uri().path());
                    async move { Ok::<_, std::convert::Infallible>(response) }
                });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(Duration::from_secs(10))
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_standby_and_a_synced_leader_are_ready_and_nothing_else_is() {
        let m = Metrics::default();
        assert_eq!(answer(&m, "/healthz").status(), StatusCode::OK);
        for (phase, ready) in [
            (Phase::Starting, false),
            (Phase::Standby, true),
            (Phase::Leading, false),
            (Phase::Synced, true),
            (Phase::Stopping, false),
        ] {
            m.enter(phase);
            assert_eq!(
                answer(&m, "/readyz").status() == StatusCode::OK,
                ready,
                "{phase:?}"
            );
        }
        m.enter(Phase::Starting);
        m.enter_from(Phase::Standby, Phase::Starting);
        assert_eq!(m.phase(), Phase::Starting);
        m.enter_from(Phase::Starting, Phase::Standby);
        assert_eq!(m.phase(), Phase::Standby);
    }

    #[test]
    fn metrics_count_by_reason_with_a_histogram_and_the_leader() {
        let m = Metrics::default();
        m.enter(Phase::Synced);
        m.reconciled(Duration::from_millis(30), Reason::RolledOut, false);
        m.reconciled(Duration::from_millis(3), Reason::SourceMissing, false);
        m.reconciled(Duration::from_secs(2), Reason::Unreachable, true);
        let text = m.text();
        for line in [
            "berth_controller_reconciles_total{reason=\"RolledOut\"} 1\n",
            "berth_controller_reconciles_total{reason=\"SourceMissing\"} 1\n",
            "berth_controller_reconcile_errors_total{reason=\"SourceMissing\"} 1\n",
            "berth_controller_reconcile_errors_total{reason=\"Unreachable\"} 1\n",
            "berth_controller_reconcile_duration_seconds_count 3\n",
            "berth_controller_reconcile_duration_seconds_bucket{le=\"0.005\"} 1\n",
            "berth_controller_leader 1\n",
            "# EOF\n",
        ] {
            assert!(text.contains(line), "{line} in\n{text}");
        }
        // Sweep 4, item 8: every series exists at zero before its first count.
        for line in [
            "berth_controller_reconcile_errors_total{reason=\"RolledOut\"} 0\n",
            "berth_controller_reconcile_errors_total{reason=\"Forbidden\"} 0\n",
            "berth_controller_applies_total{outcome=\"repaired\"} 0\n",
            "berth_controller_generations_deleted_total{kind=\"Secret\"} 0\n",
            "berth_controller_reconciles_in_flight 0\n",
        ] {
            assert!(text.contains(line), "{line} in\n{text}");
        }
        {
            let _running = m.reconcile_started();
            assert!(m
                .text()
                .contains("berth_controller_reconciles_in_flight 1\n"));
        }
        m.berth_is("team-a/llama", Some(Reason::RollingOut));
        m.berth_is("team-a/llama", Some(Reason::RolledOut));
        m.berth_is("team-a/other", Some(Reason::Forbidden));
        let text = m.text();
        for line in [
            "berth_controller_berths{reason=\"RolledOut\"} 1\n",
            "berth_controller_berths{reason=\"RollingOut\"} 0\n",
            "berth_controller_berths{reason=\"Forbidden\"} 1\n",
            "berth_controller_reconciles_in_flight 0\n",
        ] {
            assert!(text.contains(line), "{line} in\n{text}");
        }
        m.berth_is("team-a/other", None);
        assert!(m
            .text()
            .contains("berth_controller_berths{reason=\"Forbidden\"} 0\n"));
        m.enter(Phase::Standby);
        assert!(m.text().contains("berth_controller_leader 0\n"));
    }
}
