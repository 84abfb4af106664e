//! The controller's log: `tracing` events (kube-runtime's own included) on
//! stderr, one line each with a timestamp, as text or JSON (`--log-format`).
//! `RUST_LOG` narrows or widens what is written (default `info`). Values that
//! come from peers go through the controller's one redaction point first: no credentials, no
//! control characters.

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `2026-12-01T12:00:00.000000Z  INFO berth_controller::runtime: leading identity=a`.
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// Installs the global subscriber; a second call changes nothing.
pub fn init(format: Format) {
    // kube-client logs every failed connection at ERROR, a line per request
    // while the API server is down; each such failure is also the error of the
    // watch or reconcile that made the request, which the controller logs
    // itself (redacted, identical ones rate-limited), so the builder is quiet.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new("info,kube_client::client::builder=off")
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false);
    let _ = match format {
        Format::Text => builder.try_init(),
        Format::Json => builder.json().flatten_event(true).try_init(),
    };
}
