//! The status lines of `berth dev` on a terminal: one per workload, kept at
//! the bottom of the screen while logs scroll above them.
//!
//! `Deployment/web  rolled out · 2/2 ready · synced 12:03:04 (3 files) · 127.0.0.1:9002→9002`

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::event::Event;

struct Line {
    bar: ProgressBar,
    rollout: String,
    ready: Option<(usize, usize)>,
    synced: Option<String>,
    forwards: BTreeMap<u16, String>,
}

#[derive(Default)]
struct Inner {
    lines: BTreeMap<String, Line>,
    /// `namespace/pod` → the workload that owns it (from the last look at pods).
    owners: HashMap<String, String>,
}

/// Status lines on stderr.
pub struct Status {
    multi: MultiProgress,
    inner: Mutex<Inner>,
}

impl Status {
    pub fn new() -> Self {
        Status {
            multi: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
            inner: Mutex::new(Inner::default()),
        }
    }

    /// `workload` is `Kind/name`.
    fn with_line(&self, inner: &mut Inner, workload: &str, f: impl FnOnce(&mut Line)) {
        let line = inner.lines.entry(workload.to_string()).or_insert_with(|| {
            let bar = self.multi.add(ProgressBar::new_spinner());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(250));
            Line {
                bar,
                rollout: "applying".into(),
                ready: None,
                synced: None,
                forwards: BTreeMap::new(),
            }
        });
        f(line);
        let mut parts = vec![workload.to_string(), line.rollout.clone()];
        if let Some((ready, total)) = line.ready {
            parts.push(format!("{ready}/{total} ready"));
        }
        if let Some(synced) = &line.synced {
            parts.push(synced.clone());
        }
        parts.extend(line.forwards.values().cloned());
        line.bar.set_message(parts.join(" · "));
    }

    /// Follows `event` into the lines it concerns.
    pub fn update(&self, event: &Event) {
        let mut inner = berth_io::locked(&self.inner);
        match event {
            Event::Rollout { object, state } => {
                let key = format!("{}/{}", object.kind, object.name);
                self.with_line(&mut inner, &key, |l| {
                    l.rollout = format!("waiting: {state}")
                });
            }
            Event::Ready { object, .. } => {
                let key = format!("{}/{}", object.kind, object.name);
                self.with_line(&mut inner, &key, |l| l.rollout = "rolled out".into());
            }
            Event::Synced { containers, .. } => {
                let clock = clock();
                let mut owners: Vec<(String, usize)> = Vec::new();
                for c in containers {
                    let pod = c.id.rsplit_once('/').map_or(c.id.as_str(), |(p, _)| p);
                    if let Some(owner) = inner.owners.get(pod) {
                        match owners.iter_mut().find(|(o, _)| o == owner) {
                            Some((_, files)) => *files = (*files).max(c.written + c.deleted),
                            None => owners.push((owner.clone(), c.written + c.deleted)),
                        }
                    }
                }
                for (owner, files) in owners {
                    self.with_line(&mut inner, &owner, |l| {
                        l.synced = Some(format!(
                            "synced {clock} ({files} file{})",
                            if files == 1 { "" } else { "s" }
                        ));
                    });
                }
            }
            Event::Forward {
                local, port, pod, ..
            } => {
                let owner = pod
                    .as_ref()
                    .and_then(|(ns, pod)| inner.owners.get(&format!("{ns}/{pod}")).cloned());
                let lines: Vec<String> = inner.lines.keys().cloned().collect();
                for workload in lines {
                    let here = owner.as_ref() == Some(&workload);
                    self.with_line(&mut inner, &workload, |l| {
                        if here {
                            l.forwards
                                .insert(*local, format!("127.0.0.1:{local}→{port}"));
                        } else {
                            l.forwards.remove(local);
                        }
                    });
                }
            }
            _ => {}
        }
    }

    /// The pods a workload (`Kind/name`) has, by `namespace/pod`, and how many are ready.
    pub fn pods(&self, workload: &str, pods: &[String], ready: usize) {
        let mut inner = berth_io::locked(&self.inner);
        inner.owners.retain(|_, owner| owner != workload);
        let workload = workload.to_string();
        for pod in pods {
            inner.owners.insert(pod.clone(), workload.clone());
        }
        self.with_line(&mut inner, &workload, |l| {
            l.ready = Some((ready, pods.len()))
        });
    }

    /// Runs `write` with the status lines out of the way.
    pub fn suspend(&self, write: impl FnOnce()) {
        self.multi.suspend(write);
    }

    /// Removes the status lines.
    pub fn clear(&self) {
        for line in berth_io::locked(&self.inner).lines.values() {
            line.bar.finish_and_clear();
        }
        let _ = self.multi.clear();
    }
}

/// `HH:MM:SS` (UTC), for "synced at".
fn clock() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    berth_core::time::rfc3339(seconds)
        .get(11..19)
        .unwrap_or_default()
        .to_string()
}
