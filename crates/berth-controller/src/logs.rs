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
    // itself (redacted, identical ones rate-limited), so the builder is quiet. So is
    // kube-runtime's watcher, which warns of every failed list with a `Debug` dump of the
    // answer (R1 of #46: 59 of 73 lines against a 403): each failure reaches the controller
    // through its watch streams and is logged once, deduplicated, without the dump.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(
            "info,kube_client::client::builder=off,kube_runtime::watcher=off",
        )
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(Redacting)
        .with_ansi(false);
    let _ = match format {
        Format::Text => builder.try_init(),
        Format::Json => builder.json().flatten_event(true).try_init(),
    };
}

/// The line a failed run ends with, through the same formatter and redaction
/// as every other (`--log-format json` stays one JSON object per line).
pub fn exiting(error: &str) {
    tracing::error!(error = %berth_io::redact::peer_text(error), "exiting");
}

/// stderr, every line masked by [`berth_io::redact::mask_credentials`] on
/// its way: berth's own values are redacted where they are logged, and this
/// catches what kube-runtime and kube-client log themselves. The formatter
/// writes one event per writer, so each line is masked whole.
struct Redacting;

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Redacting {
    type Writer = RedactingLine;

    fn make_writer(&'a self) -> Self::Writer {
        RedactingLine(Vec::new())
    }
}

/// One event's text, written to stderr masked when dropped.
struct RedactingLine(Vec<u8>);

impl std::io::Write for RedactingLine {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for RedactingLine {
    fn drop(&mut self) {
        use std::io::Write as _;
        let masked = berth_io::redact::mask_credentials(&String::from_utf8_lossy(&self.0));
        // Nowhere to report a failed write of the log itself: it is lost, as
        // std's eprintln would panic instead.
        let _ = std::io::stderr().lock().write_all(masked.as_bytes());
    }
}
