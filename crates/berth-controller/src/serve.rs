//! `/healthz`, `/readyz` and Prometheus `/metrics` over plain HTTP/1.1.
//! `/readyz` answers 200 only while this replica leads and its watches run, so
//! a standby replica is alive but not ready.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

/// What the controller counts.
#[derive(Debug, Default)]
pub struct Metrics {
    reconciles: AtomicU64,
    errors: AtomicU64,
    duration_micros: AtomicU64,
    /// This replica holds the Lease (or runs without election).
    pub leading: AtomicBool,
    /// The controller's watches are running.
    pub running: AtomicBool,
}

impl Metrics {
    /// Counts one reconcile that took `took`, failed or not.
    pub fn reconciled(&self, took: Duration, failed: bool) {
        self.reconciles.fetch_add(1, Ordering::Relaxed);
        if failed {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.duration_micros.fetch_add(micros, Ordering::Relaxed);
    }

    /// The Prometheus text exposition.
    pub fn text(&self) -> String {
        let reconciles = self.reconciles.load(Ordering::Relaxed);
        let seconds = self.duration_micros.load(Ordering::Relaxed) as f64 / 1e6;
        format!(
            "# HELP berth_controller_reconciles_total Reconciles run.\n\
             # TYPE berth_controller_reconciles_total counter\n\
             berth_controller_reconciles_total {reconciles}\n\
             # HELP berth_controller_reconcile_errors_total Reconciles that failed and were retried.\n\
             # TYPE berth_controller_reconcile_errors_total counter\n\
             berth_controller_reconcile_errors_total {}\n\
             # HELP berth_controller_reconcile_duration_seconds Time spent reconciling.\n\
             # TYPE berth_controller_reconcile_duration_seconds summary\n\
             berth_controller_reconcile_duration_seconds_sum {seconds}\n\
             berth_controller_reconcile_duration_seconds_count {reconciles}\n\
             # HELP berth_controller_leader Whether this replica leads.\n\
             # TYPE berth_controller_leader gauge\n\
             berth_controller_leader {}\n",
            self.errors.load(Ordering::Relaxed),
            u8::from(self.leading.load(Ordering::Relaxed)),
        )
    }
}

fn answer(metrics: &Metrics, path: &str) -> Response<Full<Bytes>> {
    let (status, body) = match path {
        "/healthz" => (StatusCode::OK, "ok\n".to_string()),
        "/readyz"
            if metrics.leading.load(Ordering::Relaxed)
                && metrics.running.load(Ordering::Relaxed) =>
        {
            (StatusCode::OK, "ok\n".to_string())
        }
        "/readyz" => (StatusCode::SERVICE_UNAVAILABLE, "not leading\n".to_string()),
        "/metrics" => (StatusCode::OK, metrics.text()),
        _ => (StatusCode::NOT_FOUND, "not found\n".to_string()),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
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
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_follows_leadership_and_metrics_count() {
        let m = Metrics::default();
        assert_eq!(answer(&m, "/healthz").status(), StatusCode::OK);
        assert_eq!(
            answer(&m, "/readyz").status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
        m.leading.store(true, Ordering::Relaxed);
        m.running.store(true, Ordering::Relaxed);
        assert_eq!(answer(&m, "/readyz").status(), StatusCode::OK);
        m.reconciled(Duration::from_millis(1500), false);
        m.reconciled(Duration::from_millis(500), true);
        let text = m.text();
        assert!(
            text.contains("berth_controller_reconciles_total 2\n"),
            "{text}"
        );
        assert!(
            text.contains("berth_controller_reconcile_errors_total 1\n"),
            "{text}"
        );
        assert!(
            text.contains("berth_controller_reconcile_duration_seconds_sum 2\n"),
            "{text}"
        );
        assert!(text.contains("berth_controller_leader 1\n"), "{text}");
    }
}
