//! The logs of every started container of the project's pods, followed for as
//! long as the container instance lives: new pods and restarted containers are
//! picked up at the next look, streams of pods that are gone are dropped.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use berth_kube::Cluster;
use tokio::task::JoinHandle;

use super::events::{Event, Printer, Stage};
use super::pods::PodInfo;

/// Opening a log is tried this many times (a container that just started may
/// not have one yet) before it is reported.
const ATTEMPTS: u32 = 5;

/// The streams being followed, by `namespace/pod/container/instance`.
pub struct Logs {
    cluster: Arc<Cluster>,
    printer: Arc<Printer>,
    started: Instant,
    first_look: bool,
    streams: HashMap<String, (String, JoinHandle<()>)>,
}

impl Logs {
    pub fn new(cluster: Arc<Cluster>, printer: Arc<Printer>) -> Self {
        Logs {
            cluster,
            printer,
            started: Instant::now(),
            first_look: true,
            streams: HashMap::new(),
        }
    }

    /// Follows what `pods` has started that is not followed yet, and drops the
    /// streams of pods that are gone. Containers running before `berth dev`
    /// started show what they logged since; those that start later, everything.
    pub fn follow(&mut self, pods: &[PodInfo]) {
        let since = self
            .first_look
            .then(|| self.started.elapsed().as_secs() as i64 + 1);
        self.first_look = false;
        let live: Vec<String> = pods
            .iter()
            .map(|p| format!("{}/{}", p.namespace, p.name))
            .collect();
        self.streams.retain(|_, (pod, handle)| {
            let keep = live.contains(pod);
            if !keep {
                handle.abort();
            }
            keep
        });
        for pod in pods {
            for (container, instance) in &pod.started {
                let key = format!("{}/{}/{container}/{instance}", pod.namespace, pod.name);
                if self.streams.contains_key(&key) {
                    continue;
                }
                let handle = tokio::spawn(follow(
                    Arc::clone(&self.cluster),
                    Arc::clone(&self.printer),
                    pod.namespace.clone(),
                    pod.name.clone(),
                    container.clone(),
                    since,
                ));
                self.streams
                    .insert(key, (format!("{}/{}", pod.namespace, pod.name), handle));
            }
        }
    }

    /// Stops every stream.
    pub fn stop(&mut self) {
        for (_, (_, handle)) in self.streams.drain() {
            handle.abort();
        }
    }
}

async fn follow(
    cluster: Arc<Cluster>,
    printer: Arc<Printer>,
    namespace: String,
    pod: String,
    container: String,
    since: Option<i64>,
) {
    let mut delay = Duration::from_millis(500);
    let mut attempt = 1;
    let mut lines = loop {
        match cluster
            .follow_log(&namespace, &pod, &container, since)
            .await
        {
            Ok(lines) => break lines,
            Err(e) if attempt >= ATTEMPTS => {
                printer.emit(Event::Error {
                    stage: Stage::Logs,
                    message: format!("{e} (gave up after {ATTEMPTS} tries)"),
                });
                return;
            }
            Err(_) => {
                tokio::time::sleep(delay).await;
                delay *= 2;
                attempt += 1;
            }
        }
    };
    loop {
        match lines.next().await {
            Ok(Some(text)) => printer.emit(Event::Log {
                namespace: namespace.clone(),
                pod: pod.clone(),
                container: container.clone(),
                text,
            }),
            // The container stopped: a restart is a new instance, followed anew.
            Ok(None) => return,
            Err(e) => {
                printer.emit(Event::Error {
                    stage: Stage::Logs,
                    message: e.to_string(),
                });
                return;
            }
        }
    }
}
