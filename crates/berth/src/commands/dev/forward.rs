//! `dev.forward`: a listener on 127.0.0.1 per entry, each connection forwarded
//! through the API server to the entry's port of a ready pod of its component.
//! The pod is chosen at each look at the pods (kept while it stays ready), so a
//! rollout re-targets the forward without closing the listener.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, Result};
use berth_core::project::Forward;
use berth_kube::Cluster;
use berth_ref::Repository;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use super::events::{Event, Printer, Stage};
use super::pods::{forward_target, PodInfo};

type Target = Arc<Mutex<Option<(String, String)>>>;

struct Listener {
    spec: Forward,
    target: Target,
    task: JoinHandle<()>,
}

/// The forwards of the current berth.yaml.
pub struct Forwards {
    listeners: Vec<Listener>,
}

impl Forwards {
    /// Listens on every entry's local port; a port that is taken is an error
    /// naming the entry.
    pub async fn start(
        specs: &[Forward],
        file: &str,
        cluster: &Arc<Cluster>,
        printer: &Arc<Printer>,
    ) -> Result<Forwards> {
        let mut listeners = Vec::new();
        for spec in specs {
            let address = SocketAddr::from((Ipv4Addr::LOCALHOST, spec.local));
            let socket = TcpListener::bind(address).await.map_err(|e| {
                anyhow!(
                    "{file}:{}: dev.forward to component `{}`: cannot listen on {address}: {e}; stop what uses it or give the entry another `local:`",
                    spec.pos,
                    spec.component
                )
            })?;
            let target: Target = Arc::new(Mutex::new(None));
            let task = tokio::spawn(accept(
                socket,
                spec.clone(),
                Arc::clone(&target),
                Arc::clone(cluster),
                Arc::clone(printer),
            ));
            listeners.push(Listener {
                spec: spec.clone(),
                target,
                task,
            });
        }
        Ok(Forwards { listeners })
    }

    /// Whether these forwards serve exactly `specs`, by meaning (component, pod
    /// port, local port): a comment added above `dev:` moves the entries' lines,
    /// and that is no reason to close and reopen every listener.
    pub fn serves(&self, specs: &[Forward]) -> bool {
        let meaning = |f: &Forward| (f.component.clone(), f.port, f.local);
        self.listeners.len() == specs.len()
            && self
                .listeners
                .iter()
                .zip(specs)
                .all(|(l, s)| meaning(&l.spec) == meaning(s))
    }

    /// Points each forward at a ready pod of its component (reported when it
    /// changes). `repositories`: each component's repositories.
    pub fn retarget(
        &self,
        pods: &[PodInfo],
        repositories: &HashMap<String, Vec<Repository>>,
        printer: &Printer,
    ) {
        for listener in &self.listeners {
            let mut target = berth_io::locked(&listener.target);
            let repos = repositories
                .get(&listener.spec.component)
                .map_or(&[][..], Vec::as_slice);
            let next = forward_target(target.as_ref(), pods, repos);
            if next != *target {
                printer.emit(Event::Forward {
                    component: listener.spec.component.clone(),
                    local: listener.spec.local,
                    port: listener.spec.port,
                    pod: next.clone(),
                });
                *target = next;
            }
        }
    }

    /// Closes every listener (connections in flight end with it).
    pub fn stop(&mut self) {
        for listener in self.listeners.drain(..) {
            listener.task.abort();
        }
    }

    /// Closes every listener and waits until each has let go of its port: an
    /// aborted task drops its socket only when it is next polled, and binding
    /// the same port before that fails with "Address already in use".
    pub async fn stop_and_release(&mut self) {
        for listener in self.listeners.drain(..) {
            listener.task.abort();
            // Cancelled is the expected outcome; a panic in the accept loop was
            // already lost with the connection it served.
            let _ = listener.task.await;
        }
    }
}

impl Drop for Forwards {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn accept(
    socket: TcpListener,
    spec: Forward,
    target: Target,
    cluster: Arc<Cluster>,
    printer: Arc<Printer>,
) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let (mut stream, _) = match socket.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                printer.emit(Event::Error {
                    stage: Stage::Forward,
                    message: format!("127.0.0.1:{}: cannot accept a connection: {e}", spec.local),
                });
                continue;
            }
        };
        let Some((namespace, pod)) = berth_io::locked(&target).clone() else {
            printer.emit(Event::Error {
                stage: Stage::Forward,
                message: format!(
                    "127.0.0.1:{}: no ready pod of component `{}` yet; the connection was closed",
                    spec.local, spec.component
                ),
            });
            continue;
        };
        let cluster = Arc::clone(&cluster);
        let printer = Arc::clone(&printer);
        let port = spec.port;
        // Finished connections are reaped as new ones arrive; all end with the listener.
        while connections.try_join_next().is_some() {}
        connections.spawn(async move {
            if let Err(e) = cluster.forward(&namespace, &pod, port, &mut stream).await {
                printer.emit(Event::Error {
                    stage: Stage::Forward,
                    message: e.to_string(),
                });
            }
        });
    }
}
