//! The logs of every started container of the project's pods, followed for as
//! long as the container instance lives: new pods and restarted containers are
//! picked up at the next look, streams of pods that are gone are dropped, and a
//! stream that broke while its container still runs (an API server restart, a
//! dropped connection) is opened again at the next look, from the second of the
//! last line it showed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use berth_kube::Cluster;
use tokio::task::JoinHandle;

use super::events::{Event, Printer, Stage};
use super::pods::PodInfo;

/// Opening a log is tried this many times (a container that just started may
/// not have one yet) before it is reported.
const ATTEMPTS: u32 = 5;

/// One followed stream: its pod (`namespace/name`), its task, and when it last
/// showed a line (Unix seconds), where a resumed stream starts.
struct Stream {
    pod: String,
    task: JoinHandle<()>,
    last_line: Arc<AtomicI64>,
}

/// The streams being followed, by `namespace/pod/container/instance`.
pub struct Logs {
    cluster: Arc<Cluster>,
    printer: Arc<Printer>,
    started: Instant,
    first_look: bool,
    streams: HashMap<String, Stream>,
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
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
        self.streams.retain(|_, stream| {
            let keep = live.contains(&stream.pod);
            if !keep {
                stream.task.abort();
            }
            keep
        });
        for pod in pods {
            for (container, instance, running) in &pod.started {
                let key = format!("{}/{}/{container}/{instance}", pod.namespace, pod.name);
                // A stream that ended while its container instance still runs broke:
                // follow it again from the second of its last line.
                let resume = match self.streams.get(&key) {
                    Some(stream) if stream.task.is_finished() && *running => {
                        Some((unix_now() - stream.last_line.load(Ordering::Relaxed)).max(0) + 1)
                    }
                    Some(_) => continue,
                    None => None,
                };
                let last_line = Arc::new(AtomicI64::new(unix_now()));
                let task = tokio::spawn(follow(
                    Arc::clone(&self.cluster),
                    Arc::clone(&self.printer),
                    Target {
                        namespace: pod.namespace.clone(),
                        pod: pod.name.clone(),
                        container: container.clone(),
                    },
                    resume.or(since),
                    Arc::clone(&last_line),
                ));
                self.streams.insert(
                    key,
                    Stream {
                        pod: format!("{}/{}", pod.namespace, pod.name),
                        task,
                        last_line,
                    },
                );
            }
        }
    }

    /// Stops every stream.
    pub fn stop(&mut self) {
        for (_, stream) in self.streams.drain() {
            stream.task.abort();
        }
    }
}

/// Which container's log.
struct Target {
    namespace: String,
    pod: String,
    container: String,
}

async fn follow(
    cluster: Arc<Cluster>,
    printer: Arc<Printer>,
    target: Target,
    since: Option<i64>,
    last_line: Arc<AtomicI64>,
) {
    let Target {
        namespace,
        pod,
        container,
    } = target;
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
            Ok(Some(text)) => {
                last_line.store(unix_now(), Ordering::Relaxed);
                printer.emit(Event::Log {
                    namespace: namespace.clone(),
                    pod: pod.clone(),
                    container: container.clone(),
                    text,
                })
            }
            // The container stopped (a restart is a new instance, followed anew), or
            // the stream broke: then the next look opens it again.
            Ok(None) => return,
            // Broken (the API server restarted, the connection dropped): the next
            // look follows it again from its last line's second; only opening it
            // again can fail for good, and that is reported.
            Err(_) => return,
        }
    }
}
