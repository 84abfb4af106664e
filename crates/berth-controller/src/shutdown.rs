//! The controller's stop signal: SIGTERM and SIGINT, caught once, seen by
//! every long-running part (the controller, the GitOps collector, the Lease).

use tokio::sync::watch;

/// SIGTERM and SIGINT, caught from the moment [`Shutdown::install`] runs (as
/// PID 1 in a container an uncaught SIGTERM is ignored, and the kubelet would
/// wait for its SIGKILL).
#[derive(Debug, Clone)]
pub struct Shutdown {
    requested: watch::Receiver<bool>,
}

impl Shutdown {
    /// Installs the handlers; call it first, inside the runtime.
    pub fn install() -> std::io::Result<Shutdown> {
        use tokio::signal::unix::{signal, SignalKind};
        let mut terminate = signal(SignalKind::terminate())?;
        let mut interrupt = signal(SignalKind::interrupt())?;
        let (tx, requested) = watch::channel(false);
        tokio::spawn(async move {
            let name = tokio::select! {
                _ = terminate.recv() => "SIGTERM",
                _ = interrupt.recv() => "SIGINT",
            };
            tracing::info!(signal = name, "stopping");
            let _ = tx.send(true);
        });
        Ok(Shutdown { requested })
    }

    /// Resolves once a signal came.
    pub async fn requested(&self) {
        let mut requested = self.requested.clone();
        let _ = requested.wait_for(|stop| *stop).await;
    }

    /// The same, as the `Send + Sync` future kube-runtime's graceful shutdown takes.
    pub(crate) fn trigger(&self) -> impl std::future::Future<Output = ()> + Send + Sync + 'static {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let this = self.clone();
        tokio::spawn(async move {
            this.requested().await;
            let _ = tx.send(());
        });
        async move {
            let _ = rx.await;
        }
    }
}
