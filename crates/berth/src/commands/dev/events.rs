//! What `berth dev` reports, and how: one [`Event`] type for every part of the
//! loop, written as text for people (logs on stdout, berth's own lines on
//! stderr, a status line per workload on a terminal) or as one JSON object per
//! line for tools (`--output json`, everything on stdout).

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use berth_core::cluster::ObjectRef;
use serde_json::{json, Value};

use super::status::Status;
use crate::output::for_terminal;

pub use super::event::{Event, Stage, SyncedContainer};

/// `2026-12-02T05:02:16.123Z`.
fn now() -> String {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let seconds = berth_core::time::rfc3339(since.as_secs() as i64);
    format!(
        "{}.{:03}Z",
        seconds.trim_end_matches('Z'),
        since.subsec_millis()
    )
}

fn object(o: &ObjectRef) -> Value {
    json!({"kind": o.kind, "namespace": o.namespace, "name": o.name})
}

/// `Deployment/web` with its namespace when it has one.
fn short(o: &ObjectRef) -> String {
    format!("{}/{}", o.kind, o.name)
}

impl Event {
    /// The event as JSON lines (a sync is one line per container).
    pub fn to_json(&self) -> Vec<Value> {
        let time = now();
        match self {
            Event::Rendered {
                objects,
                generated,
                warnings,
                changed,
            } => vec![
                json!({"event": "rendered", "time": time, "objects": objects, "generated": generated, "warnings": warnings, "changed": changed}),
            ],
            Event::Deleted { object: o } => {
                vec![json!({"event": "deleted", "time": time, "object": object(o)})]
            }
            Event::Applied {
                object: o,
                generation,
                unchanged,
            } => vec![
                json!({"event": "applied", "time": time, "object": object(o), "generation": generation, "unchanged": unchanged}),
            ],
            Event::Rollout { object: o, state } => {
                vec![json!({"event": "rollout", "time": time, "object": object(o), "state": state})]
            }
            Event::Ready {
                object: o,
                generation,
            } => vec![
                json!({"event": "ready", "time": time, "object": object(o), "generation": generation}),
            ],
            Event::Synced {
                rule,
                reason,
                ms,
                containers,
                ..
            } => containers
                .iter()
                .map(|c| {
                    let mut parts = c.id.splitn(3, '/');
                    let (namespace, pod, container) = (parts.next(), parts.next(), parts.next());
                    json!({"event": "synced", "time": time, "rule": rule, "reason": reason,
                           "namespace": namespace, "pod": pod, "container": container,
                           "files": c.written, "deleted": c.deleted, "bytes": c.bytes,
                           "steps": c.steps, "ms": ms})
                })
                .collect(),
            Event::Log {
                namespace,
                pod,
                container,
                text,
            } => vec![
                json!({"event": "log", "time": time, "namespace": namespace, "pod": pod, "container": container, "text": text}),
            ],
            Event::Forward {
                component,
                local,
                port,
                pod,
            } => vec![
                json!({"event": "forward", "time": time, "component": component, "local": local, "port": port,
                       "namespace": pod.as_ref().map(|p| &p.0), "pod": pod.as_ref().map(|p| &p.1)}),
            ],
            Event::Error { stage, message } => vec![
                json!({"event": "error", "time": time, "stage": stage.name(), "message": message}),
            ],
            Event::Stopped { signal } => {
                vec![json!({"event": "stopped", "time": time, "signal": signal})]
            }
        }
    }

    /// The event as text for people: `(stdout?, line)`; `None` prints nothing.
    fn to_text(&self, colour: bool) -> Option<(bool, String)> {
        Some(match self {
            Event::Rendered {
                objects,
                generated,
                warnings,
                changed,
            } => {
                let mut text = format!("rendered {objects} object{}", plural(*objects));
                if !generated.is_empty() {
                    text.push_str(&format!(" ({})", generated.join(", ")));
                }
                if !changed {
                    text.push_str(": no change since the last apply");
                }
                for warning in warnings {
                    text.push_str(&format!("\nwarning: {warning}"));
                }
                (false, text)
            }
            Event::Applied {
                object: o,
                unchanged: false,
                ..
            } => (false, format!("applied {o}")),
            Event::Applied {
                object: o,
                generation,
                ..
            } => (false, format!("up to date: {o} (apply r{generation})")),
            Event::Deleted { object: o } => (false, format!("deleted old generation {o}")),
            Event::Rollout { object: o, state } => (false, format!("waiting: {}: {state}", short(o))),
            Event::Ready {
                object: o,
                generation,
            } => (false, format!("rolled out {o} (apply r{generation})")),
            Event::Synced { line, .. } => (false, line.clone()),
            Event::Log {
                pod,
                container,
                text,
                ..
            } => {
                let prefix = format!("{pod}/{container} |");
                let prefix = if colour {
                    format!("\x1b[{}m{prefix}\x1b[0m", colour_of(pod))
                } else {
                    prefix
                };
                (true, format!("{prefix} {}", for_terminal(text)))
            }
            Event::Forward {
                component,
                local,
                port,
                pod: Some((_, pod)),
            } => (
                false,
                format!("forwarding 127.0.0.1:{local} -> pod/{pod}:{port} (component {component})"),
            ),
            Event::Forward {
                component,
                local,
                ..
            } => (
                false,
                format!("127.0.0.1:{local}: no ready pod of component {component} yet; connections are refused until there is one"),
            ),
            Event::Error { message, .. } => (false, format!("error: {message}")),
            Event::Stopped { signal } => (
                false,
                match signal {
                    Some(signal) => format!("berth dev: stopped ({signal}); the cluster is left as it is"),
                    None => "berth dev: done".into(),
                },
            ),
        })
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// One of six terminal colours, the same for a pod every time.
fn colour_of(pod: &str) -> u8 {
    const COLOURS: [u8; 6] = [32, 33, 34, 35, 36, 92];
    let hash = pod
        .bytes()
        .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
    COLOURS[hash as usize % COLOURS.len()]
}

/// Writes events; safe to share between the loop's threads and tasks.
pub struct Printer {
    json: bool,
    colour: bool,
    status: Option<Status>,
    lock: Mutex<()>,
    /// stdout's reader went away (`| head`): nothing reads the loop any more.
    gone: AtomicBool,
}

impl Printer {
    /// `json`: one object per line on stdout. `status`: a status line per
    /// workload (text on a terminal).
    pub fn new(json: bool, status: bool) -> Self {
        Printer {
            json,
            colour: !json && crate::output::colour(),
            status: (status && !json).then(Status::new),
            lock: Mutex::new(()),
            gone: AtomicBool::new(false),
        }
    }

    /// Whether stdout's reader went away, so the loop should stop.
    pub fn gone(&self) -> bool {
        self.gone.load(Ordering::Relaxed)
    }

    fn written(&self, result: std::io::Result<()>) {
        if result.is_err_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) {
            self.gone.store(true, Ordering::Relaxed);
        }
    }

    /// Reports `event`. A stdout whose reader went away is noted ([`Printer::gone`]);
    /// a stderr that cannot be written loses the line, as `say!` does.
    pub fn emit(&self, event: Event) {
        if let Some(status) = &self.status {
            status.update(&event);
        }
        // One event's lines at a time, a poisoned lock included.
        let _guard = berth_io::locked(&self.lock);
        if self.json {
            let mut out = std::io::stdout().lock();
            let mut result = Ok(());
            for line in event.to_json() {
                result = result.and_then(|()| writeln!(out, "{line}"));
            }
            self.written(result.and_then(|()| out.flush()));
            return;
        }
        let Some((stdout, text)) = event.to_text(self.colour) else {
            return;
        };
        let write = || {
            if stdout {
                let mut out = std::io::stdout().lock();
                self.written(writeln!(out, "{text}").and_then(|()| out.flush()));
            } else {
                let _ = writeln!(std::io::stderr().lock(), "{}", for_terminal(&text));
            }
        };
        match &self.status {
            Some(status) => status.suspend(write),
            None => write(),
        }
    }

    /// The pods of a workload (`Kind/name`), by `namespace/pod`, and how many
    /// are ready (status lines only).
    pub fn pods(&self, workload: &str, pods: &[String], ready: usize) {
        if let Some(status) = &self.status {
            status.pods(workload, pods, ready);
        }
    }

    /// Removes the status lines before the last words.
    pub fn finish(&self) {
        if let Some(status) = &self.status {
            status.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment() -> ObjectRef {
        ObjectRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "web".into(),
            namespace: Some("dev".into()),
        }
    }

    #[test]
    fn every_json_event_names_itself_and_its_time() {
        let events = [
            Event::Rendered {
                objects: 2,
                generated: vec!["c-1".into()],
                warnings: vec![],
                changed: true,
            },
            Event::Deleted {
                object: deployment(),
            },
            Event::Applied {
                object: deployment(),
                generation: 3,
                unchanged: false,
            },
            Event::Rollout {
                object: deployment(),
                state: "1 of 2".into(),
            },
            Event::Ready {
                object: deployment(),
                generation: 3,
            },
            Event::Synced {
                rule: "app".into(),
                reason: "change",
                ms: 5,
                line: String::new(),
                containers: vec![SyncedContainer {
                    id: "dev/web-1/app".into(),
                    written: 1,
                    deleted: 0,
                    bytes: 4,
                    steps: vec![],
                }],
            },
            Event::Log {
                namespace: "dev".into(),
                pod: "web-1".into(),
                container: "app".into(),
                text: "hi\u{1b}".into(),
            },
            Event::Forward {
                component: "web".into(),
                local: 8080,
                port: 80,
                pod: None,
            },
            Event::Error {
                stage: Stage::Apply,
                message: "no".into(),
            },
            Event::Stopped {
                signal: Some("SIGTERM"),
            },
        ];
        let names: Vec<String> = events
            .iter()
            .flat_map(Event::to_json)
            .map(|v| {
                assert!(
                    v["time"]
                        .as_str()
                        .is_some_and(|t| t.ends_with('Z') && t.len() == 24),
                    "{v}"
                );
                v["event"].as_str().unwrap().to_string()
            })
            .collect();
        assert_eq!(
            names,
            [
                "rendered", "deleted", "applied", "rollout", "ready", "synced", "log", "forward",
                "error", "stopped"
            ]
        );
        let synced = &events[5].to_json()[0];
        assert_eq!(
            (
                synced["pod"].as_str(),
                synced["container"].as_str(),
                synced["files"].as_u64()
            ),
            (Some("web-1"), Some("app"), Some(1))
        );
    }

    #[test]
    fn log_lines_are_prefixed_and_cannot_drive_the_terminal() {
        let log = Event::Log {
            namespace: "dev".into(),
            pod: "web-1".into(),
            container: "app".into(),
            text: "a\u{1b}]0;x\u{7}".into(),
        };
        assert_eq!(
            log.to_text(false),
            Some((true, "web-1/app | a\\u{1b}]0;x\\u{7}".to_string()))
        );
        let (_, coloured) = log.to_text(true).unwrap();
        assert!(
            coloured.starts_with("\x1b[") && coloured.contains("web-1/app |\x1b[0m a\\u{1b}"),
            "{coloured:?}"
        );
    }
}
