//! The apply side of `berth dev`: render (as `berth render`), apply and record
//! (as `berth apply`, the same plan and field manager), then wait for the
//! rollout — the wait given up as soon as a newer edit asks for another render,
//! so the loop always applies the newest files.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;
use berth_core::cluster::{Desired, ObjectRef};
use berth_core::render::Workload;
use berth_core::Project;
use berth_kube::{ApplyOptions, Cluster};
use berth_ref::Repository;
use tokio::sync::{mpsc, watch};

use super::events::{Event, Printer, Stage};
use crate::cli::ResolveArgs;
use crate::settings::Render;

/// What to render each time: the project file and the flags, for the whole session.
pub struct Source {
    /// `--project FILE`, else the nearest berth.yaml.
    pub project: Option<PathBuf>,
    /// The image overrides of the command line.
    pub resolve: ResolveArgs,
    /// What to render.
    pub render: Render,
}

/// One render of the project.
pub struct Snapshot {
    /// berth.yaml as it was read.
    pub project: Project,
    /// What to apply.
    pub desired: Desired,
    /// The workloads among the objects.
    pub workloads: Vec<Workload>,
    /// Each component's resolved repository.
    pub resolved: Vec<(String, Repository)>,
    /// Render warnings.
    pub warnings: Vec<String>,
}

/// Loads berth.yaml, resolves and renders (blocking: files, maybe `kubectl
/// kustomize`; on a blocking thread of the runtime, which reads the CA
/// bundles' cluster sources first, as `berth apply` does, on every render: a
/// rotated CA rolls the workloads on the next edit).
pub fn snapshot(source: &Source, cluster: &Cluster) -> Result<Snapshot> {
    crate::pipeline::resolved(
        source.project.as_deref(),
        &source.resolve,
        |project, resolution| {
            let read = if crate::trust_sources::any(project) {
                let reading = crate::trust_sources::read(cluster, project);
                Some(tokio::runtime::Handle::current().block_on(reading)?)
            } else {
                None
            };
            let prepared =
                crate::pipeline::desired(&source.render, project, resolution, read.as_deref())?;
            Ok(Snapshot {
                project: project.clone(),
                desired: prepared.desired,
                workloads: prepared.workloads,
                resolved: resolution
                    .images
                    .iter()
                    .map(|r| (r.component.name.clone(), r.reference.repository().clone()))
                    .collect(),
                warnings: crate::pipeline::shown(project, prepared.warnings),
            })
        },
    )
}

/// What the applier tells the loop.
pub enum Outcome {
    /// berth.yaml, or what it resolves to, changed: sync rules, forwards and
    /// repositories follow it.
    Reloaded(Box<Project>, Vec<(String, Repository)>),
    /// The first render, apply and rollout are over (`--once` waits for it): whether they worked.
    Settled(bool),
}

/// Renders, applies and waits, one request at a time.
pub struct ApplyTask {
    /// What to render.
    pub source: Arc<Source>,
    /// Where to apply.
    pub cluster: Arc<Cluster>,
    /// How.
    pub options: ApplyOptions,
    /// How long to wait for each rollout.
    pub wait: Duration,
    /// Where events go.
    pub printer: Arc<Printer>,
    /// The workloads of the last apply, which the loop lists pods of.
    pub workloads: Arc<Mutex<Vec<Workload>>>,
    /// The project and resolution the loop runs with now.
    pub current: (Project, Vec<(String, Repository)>),
}

impl ApplyTask {
    /// Serves render requests (`requests` changes) until the loop ends; the first
    /// render is `first` when the loop has one already.
    pub async fn run(
        mut self,
        mut first: Option<Result<Snapshot>>,
        mut requests: watch::Receiver<()>,
        outcomes: mpsc::Sender<Outcome>,
    ) {
        let mut applied: Option<Desired> = None;
        let mut settled = false;
        let mut asked = false;
        loop {
            let result = match first.take() {
                Some(result) => result,
                None => {
                    if !asked && requests.changed().await.is_err() {
                        return;
                    }
                    asked = false;
                    requests.borrow_and_update();
                    let source = Arc::clone(&self.source);
                    let cluster = Arc::clone(&self.cluster);
                    match tokio::task::spawn_blocking(move || snapshot(&source, &cluster)).await {
                        Ok(result) => result,
                        Err(e) => Err(anyhow::anyhow!("the render stopped: {e}")),
                    }
                }
            };
            let worked = match result {
                Ok(snapshot) => {
                    let (worked, newer) = self
                        .cycle(snapshot, &mut applied, &outcomes, &mut requests)
                        .await;
                    asked = newer;
                    worked
                }
                Err(e) => {
                    self.printer.emit(Event::Error {
                        stage: Stage::Render,
                        message: format!("{e:#}"),
                    });
                    Some(false)
                }
            };
            if let (false, Some(worked)) = (settled, worked) {
                settled = true;
                if outcomes.send(Outcome::Settled(worked)).await.is_err() {
                    return; // the loop ended: nobody waits for the outcome
                }
            }
        }
    }

    /// Applies `snapshot` when it differs from what was applied last, and waits
    /// for its rollout. Returns whether it worked (`None`: given up for a newer
    /// request, which is the second value).
    async fn cycle(
        &mut self,
        snapshot: Snapshot,
        applied_desired: &mut Option<Desired>,
        outcomes: &mpsc::Sender<Outcome>,
        requests: &mut watch::Receiver<()>,
    ) -> (Option<bool>, bool) {
        let changed = applied_desired.as_ref() != Some(&snapshot.desired);
        self.printer.emit(Event::Rendered {
            objects: snapshot.desired.objects.len(),
            generated: snapshot.desired.generated.keys().cloned().collect(),
            warnings: snapshot.warnings,
            changed,
        });
        let now = (snapshot.project, snapshot.resolved);
        if now != self.current {
            self.current = now.clone();
            if outcomes
                .send(Outcome::Reloaded(Box::new(now.0), now.1))
                .await
                .is_err()
            {
                return (None, false); // the loop ended
            }
        }
        if !changed {
            return (Some(true), false);
        }
        let printer = Arc::clone(&self.printer);
        let mut unchanged = false;
        let mut session = berth_kube::Applier::new(&self.cluster, self.options.clone());
        let applied = session
            .apply(&snapshot.desired, &mut |e| {
                if let berth_kube::Event::Unchanged(_) = e {
                    unchanged = true;
                }
            })
            .await;
        let applied = match applied {
            Ok(applied) => applied,
            Err(e) => {
                printer.emit(Event::Error {
                    stage: Stage::Apply,
                    message: e.to_string(),
                });
                return (Some(false), false);
            }
        };
        *applied_desired = Some(snapshot.desired);
        let generation = applied.sequence;
        for object in applied.objects {
            printer.emit(Event::Applied {
                object,
                generation,
                unchanged,
            });
        }
        *super::locked(&self.workloads) = snapshot.workloads;
        let mut events = rollout_events(&printer, generation);
        let waited = tokio::select! {
            waited = session.wait(self.wait, &mut events) => waited,
            newer = requests.changed() => {
                // A newer edit: apply it instead of waiting for this one.
                return (None, newer.is_ok());
            }
        };
        match waited {
            Ok(()) => (Some(true), false),
            Err(e) => {
                printer.emit(Event::Error {
                    stage: Stage::Rollout,
                    message: e.to_string(),
                });
                (Some(false), false)
            }
        }
    }
}

/// The rollout's progress as `berth dev` events: a workload's state each time it
/// changes, `ready` when it rolled out, `deleted` for each old generation removed.
fn rollout_events(printer: &Printer, generation: u64) -> impl FnMut(berth_kube::Event) + Send + '_ {
    let mut states: HashMap<ObjectRef, String> = HashMap::new();
    move |e| match e {
        berth_kube::Event::Waiting(waiting) => {
            for (object, state) in waiting {
                if states.get(&object) != Some(&state) {
                    states.insert(object.clone(), state.clone());
                    printer.emit(Event::Rollout { object, state });
                }
            }
        }
        berth_kube::Event::RolledOut(object) => {
            printer.emit(Event::Ready { object, generation });
        }
        berth_kube::Event::Deleted(object) => printer.emit(Event::Deleted { object }),
        _ => {}
    }
}
