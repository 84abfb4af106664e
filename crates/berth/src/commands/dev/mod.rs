//! `berth dev`: the inner loop for images built elsewhere, in one command.
//!
//! The parts, each reused from the command that does it alone: the applier
//! renders and applies as `berth apply` ([`apply`]); the sync thread runs
//! `berth sync`'s session ([`sync`]); one look at the pods per `--poll` feeds
//! sync, log streams ([`logs`]), port-forwards ([`forward`]) and the status
//! lines; a file watcher sorts edits into sync and render ([`watch`]). All of
//! it reports through one [`events::Printer`]. This module wires them together
//! and stops them on SIGINT or SIGTERM.

mod apply;
mod event;
mod events;
mod forward;
mod logs;
mod pods;
mod status;
mod sync;
mod watch;

use std::collections::HashMap;
use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, Result};
use berth_core::render::Workload;
use berth_core::Project;
use berth_kube::Cluster;
use berth_ref::Repository;
use berth_sync::kube::KubeTarget;
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::{mpsc, watch as channel};

pub use apply::Source;
use apply::{ApplyTask, Outcome};
use events::{Event, Printer, Stage};
use forward::Forwards;
use logs::Logs;
use sync::Command;

use crate::settings;

/// A part of the loop (the sync thread, the applier) ended while the loop ran: a
/// bug it reported as an `error` event. The loop stops with status 1 instead of
/// going on without it.
#[derive(Debug)]
pub struct PartStopped(pub Stage);

/// What a panic said, for the error event of the part it stopped.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "it panicked".into())
}

use berth_io::locked;

/// SIGINT and SIGTERM, caught from the start: either stops the loop cleanly.
struct Signals {
    interrupt: Signal,
    terminate: Signal,
}

impl Signals {
    fn install() -> Result<Signals> {
        let install = |kind, name| signal(kind).map_err(|e| anyhow!("cannot handle {name}: {e}"));
        Ok(Signals {
            interrupt: install(SignalKind::interrupt(), "SIGINT")?,
            terminate: install(SignalKind::terminate(), "SIGTERM")?,
        })
    }

    async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.interrupt.recv() => "SIGINT",
            _ = self.terminate.recv() => "SIGTERM",
        }
    }
}

/// Runs `berth dev` with `project` (already loaded once, to check the flags).
pub fn run(settings: &settings::Dev, source: Source, project: Project) -> Result<u8> {
    let printer = Arc::new(Printer::new(
        settings.json,
        !settings.once && std::io::stderr().is_terminal(),
    ));
    let runtime = crate::runtime::get()?;
    runtime.block_on(session(settings, source, project, printer))
}

/// Each component's repositories: berth.yaml's and the resolved one (an
/// override may point elsewhere), for finding its pods.
fn repositories(
    project: &Project,
    resolved: &[(String, Repository)],
) -> HashMap<String, Vec<Repository>> {
    let mut out: HashMap<String, Vec<Repository>> = project
        .components
        .iter()
        .map(|c| (c.name.clone(), c.repositories.clone()))
        .collect();
    for (name, repository) in resolved {
        let repos = out.entry(name.clone()).or_default();
        if !repos.contains(repository) {
            repos.push(repository.clone());
        }
    }
    out
}

/// berth.yaml's own path (the render reads it, so its edits render again).
fn project_path(project: &Project) -> PathBuf {
    let name = Path::new(&project.file).file_name().map_or_else(
        || PathBuf::from(berth_core::project::PROJECT_FILE),
        PathBuf::from,
    );
    project.dir.join(name)
}

/// The file watcher of the current rules, replaced when berth.yaml changes them.
struct Watching {
    inputs: watch::Inputs,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Result<(), String>>>,
}

impl Watching {
    fn start(
        project: &Project,
        render: &settings::Render,
        sync_roots: &[(PathBuf, bool)],
        batches: &mpsc::Sender<berth_sync::watch::Batch>,
    ) -> Result<Watching> {
        let manifests = render.manifests(project)?;
        let inputs = watch::Inputs::new(
            project,
            &project_path(project),
            manifests,
            &render.paths,
            sync_roots,
        );
        let roots = inputs.roots(sync_roots);
        let stop = Arc::new(AtomicBool::new(false));
        let thread = watch::spawn(&roots, batches.clone(), Arc::clone(&stop))
            .map_err(|e| anyhow!("cannot watch the project's files: {e}"))?;
        Ok(Watching {
            inputs,
            stop,
            thread: Some(thread),
        })
    }

    /// Why the watcher thread ended, once it has (it ends only when told to,
    /// or by a failure): `None` while it runs.
    fn failure(&mut self) -> Option<String> {
        if !self.thread.as_ref()?.is_finished() {
            return None;
        }
        Some(match self.thread.take()?.join() {
            Ok(Ok(())) => "it ended".into(),
            Ok(Err(message)) => message,
            Err(panic) => panic_message(panic.as_ref()),
        })
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The roots the sync thread's new session watches (it scans first: quick); an
/// error when the thread ended before it answered.
async fn sync_roots(
    roots: std::sync::mpsc::Receiver<Vec<(PathBuf, bool)>>,
) -> Result<Vec<(PathBuf, bool)>, PartStopped> {
    tokio::task::spawn_blocking(move || roots.recv())
        .await
        .ok()
        .and_then(Result::ok)
        .ok_or(PartStopped(Stage::Sync))
}

async fn session(
    settings: &settings::Dev,
    source: Source,
    loaded: Project,
    printer: Arc<Printer>,
) -> Result<u8> {
    let mut signals = Signals::install()?;
    let cluster = Arc::new(Cluster::connect(&settings.connection).await?);
    let streams = Arc::new(Cluster::connect(&settings.streams).await?);
    let source = Arc::new(source);

    let first = first_render(&source, &cluster).await?;
    if let (true, Err(e)) = (settings.once, &first) {
        // An event like every other failure (`--output json` readers see it),
        // said once: the error's causes are in its message.
        printer.emit(Event::Error {
            stage: Stage::Render,
            message: format!("{e:#}"),
        });
        printer.emit(Event::Stopped { signal: None });
        return Ok(1);
    }
    let (project, resolved, workloads) = match &first {
        Ok(s) => (s.project.clone(), s.resolved.clone(), s.workloads.clone()),
        Err(_) => (loaded, Vec::new(), Vec::new()),
    };
    let workloads: Arc<Mutex<Vec<Workload>>> = Arc::new(Mutex::new(workloads));
    let (sync, sync_roots) = start_sync(&cluster, &project, &resolved, &printer, settings).await?;

    let (batches_tx, batches) = mpsc::channel(64);
    // Watching starts before the first apply, so no edit made during it is lost.
    let (mut watching, mut forwards) = if settings.once {
        (None, None)
    } else {
        let watching = Watching::start(&project, &settings.render, &sync_roots, &batches_tx)?;
        let forwards = Forwards::start(&project.dev.forward, &project.file, &streams, &printer);
        (Some(watching), Some(forwards.await?))
    };

    let (requests, requests_rx) = channel::channel(());
    // Bounded: the applier waits for the loop to take an outcome (there are at most
    // a few per render).
    let (outcomes_tx, mut outcomes) = mpsc::channel(16);
    let applier = ApplyTask {
        source: Arc::clone(&source),
        cluster: Arc::clone(&cluster),
        options: settings.apply.clone(),
        wait: settings.wait,
        printer: Arc::clone(&printer),
        workloads: Arc::clone(&workloads),
        current: (project.clone(), resolved.clone()),
    };
    let mut applier = tokio::spawn(applier.run(Some(first), requests_rx, outcomes_tx));

    let stopped = if settings.once {
        once(
            &mut signals,
            &mut outcomes,
            &cluster,
            &workloads,
            &sync,
            &printer,
        )
        .await
    } else {
        let mut state = Loop {
            settings,
            cluster: &cluster,
            streams: &streams,
            printer: &printer,
            sync: &sync,
            workloads: &workloads,
            repositories: repositories(&project, &resolved),
            logs: Logs::new(Arc::clone(&streams), Arc::clone(&printer)),
            last_pods_error: None,
        };
        let mut io = Wires {
            batches,
            batches_tx: &batches_tx,
            outcomes,
            requests: &requests,
            watching: &mut watching,
            forwards: &mut forwards,
        };
        let ended = watch_loop(&mut state, &mut signals, &mut io, &applier).await;
        ended_with(ended, &mut applier, &printer).await
    };
    applier.abort();
    drop(watching);
    if let Some(mut forwards) = forwards {
        forwards.stop();
    }
    drop(sync.commands); // the thread ends after what it is doing; exiting ends it anyway
    let (signal, code) = stopped?;
    printer.finish();
    printer.emit(Event::Stopped { signal });
    Ok(code)
}

/// The first render, before anything starts: its project and resolution seed
/// the rest. Rendering blocks (kustomize, files), so it runs off the runtime.
async fn first_render(
    source: &Arc<Source>,
    cluster: &Arc<Cluster>,
) -> Result<Result<apply::Snapshot>> {
    let (source, cluster) = (Arc::clone(source), Arc::clone(cluster));
    tokio::task::spawn_blocking(move || apply::snapshot(&source, &cluster))
        .await
        .map_err(|e| anyhow!("the render stopped: {e}"))
}

/// The sync thread with the session of `project`, and the roots its rules watch.
async fn start_sync(
    cluster: &Cluster,
    project: &Project,
    resolved: &[(String, Repository)],
    printer: &Arc<Printer>,
    settings: &settings::Dev,
) -> Result<(sync::SyncThread, Vec<(PathBuf, bool)>)> {
    // `--once` syncs each container once: nothing to keep a stream open for.
    let stream = settings.stream && !settings.once;
    let target = Arc::new(KubeTarget::new(
        tokio::runtime::Handle::current(),
        cluster.in_namespace(&cluster.namespace),
        Vec::new(),
    ));
    let (sync, roots) = sync::spawn(
        project.clone(),
        resolved.to_vec(),
        target,
        Arc::clone(printer),
        stream,
    );
    let roots = sync_roots(roots)
        .await
        .map_err(|_| anyhow!("the sync part stopped before it started"))?;
    Ok((sync, roots))
}

/// The channels and watchers the watching loop turns on.
struct Wires<'a> {
    batches: mpsc::Receiver<berth_sync::watch::Batch>,
    batches_tx: &'a mpsc::Sender<berth_sync::watch::Batch>,
    outcomes: mpsc::Receiver<Outcome>,
    requests: &'a channel::Sender<()>,
    watching: &'a mut Option<Watching>,
    forwards: &'a mut Option<Forwards>,
}

/// The watching loop: edits, the applier's outcomes and a look at the pods every
/// `--poll`, until a signal, a reader that went away, or a part that died.
async fn watch_loop(
    state: &mut Loop<'_>,
    signals: &mut Signals,
    io: &mut Wires<'_>,
    applier: &tokio::task::JoinHandle<()>,
) -> Result<Option<&'static str>, PartStopped> {
    // An interval, not a sleep per turn: a stream of edits must not starve the looks.
    let mut looks = tokio::time::interval(state.settings.poll);
    looks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let turn = tokio::select! {
            signal = signals.next() => {
                state.logs.stop();
                return Ok(Some(signal));
            }
            Some(batch) = io.batches.recv() => match io.watching.as_ref() {
                Some(watching) => {
                    let wanted = watching.inputs.sort(&batch);
                    let sent = state.sync.send(if batch.rescan {
                        Command::Rescan
                    } else {
                        Command::Changes(wanted.sync)
                    });
                    // The applier holds the receiver for as long as it runs.
                    let asked = || io.requests.send(()).map_err(|_| PartStopped(Stage::Apply));
                    sent.and_then(|()| if wanted.render { asked() } else { Ok(()) })
                }
                None => Ok(()),
            },
            Some(outcome) = io.outcomes.recv() => match outcome {
                Outcome::Reloaded(project, resolved) => {
                    state.reload(&project, &resolved, io.watching, io.forwards, io.batches_tx).await
                }
                Outcome::Settled(_) => Ok(()),
            },
            _ = looks.tick() => state.look(io.forwards.as_ref()).await,
        };
        if let Some(message) = io.watching.as_mut().and_then(Watching::failure) {
            state.printer.emit(Event::Error {
                stage: Stage::Watch,
                message: format!("the file watcher stopped: {message}; berth dev stops (the cluster is left as it is)"),
            });
            state.logs.stop();
            return Err(PartStopped(Stage::Watch));
        }
        if let Err(stopped) = turn.and_then(|()| parts_alive(state.sync, applier)) {
            state.logs.stop();
            return Err(stopped);
        }
        if state.printer.gone() {
            state.logs.stop();
            return Ok(None);
        }
    }
}

/// The loop's exit: the signal and status 0, or status 1 after a part died (an
/// applier that panicked is reported here; the sync thread reports itself).
async fn ended_with(
    ended: Result<Option<&'static str>, PartStopped>,
    applier: &mut tokio::task::JoinHandle<()>,
    printer: &Printer,
) -> Result<(Option<&'static str>, u8)> {
    match ended {
        Ok(signal) => Ok((signal, 0)),
        Err(PartStopped(stage)) => {
            if stage == Stage::Apply && applier.is_finished() {
                let message = match applier.await {
                    Err(e) if e.is_panic() => panic_message(e.into_panic().as_ref()),
                    _ => "it ended".into(),
                };
                printer.emit(Event::Error {
                    stage,
                    message: format!("the apply part stopped: {message}; berth dev stops (the cluster is left as it is)"),
                });
            }
            Ok((None, 1))
        }
    }
}

/// Whether the sync thread and the applier still run: either ends only by a bug.
fn parts_alive(
    sync: &sync::SyncThread,
    applier: &tokio::task::JoinHandle<()>,
) -> Result<(), PartStopped> {
    if sync.ended() {
        return Err(PartStopped(Stage::Sync));
    }
    if applier.is_finished() {
        return Err(PartStopped(Stage::Apply));
    }
    Ok(())
}

/// `--once`: the first apply and rollout, then one sync of every rule.
async fn once(
    signals: &mut Signals,
    outcomes: &mut mpsc::Receiver<Outcome>,
    cluster: &Cluster,
    workloads: &Mutex<Vec<Workload>>,
    sync: &sync::SyncThread,
    printer: &Printer,
) -> Result<(Option<&'static str>, u8)> {
    let settled = loop {
        tokio::select! {
            signal = signals.next() => return Ok((Some(signal), 0)),
            outcome = outcomes.recv() => match outcome {
                Some(Outcome::Settled(worked)) => break worked,
                Some(Outcome::Reloaded(..)) => {}
                None => break false,
            },
        }
    };
    if !settled {
        return Ok((None, 1));
    }
    let current = locked(workloads).clone();
    let look = match pods::look(cluster, &current).await {
        Ok(look) => look,
        Err(e) => {
            printer.emit(Event::Error {
                stage: Stage::Pods,
                message: e.to_string(),
            });
            return Ok((None, 1));
        }
    };
    let (done, result) = std::sync::mpsc::channel();
    if sync.send(Command::Once(look.containers, done)).is_err() {
        return Ok((None, 1)); // the thread said why, as an event
    }
    let synced = tokio::task::spawn_blocking(move || result.recv().unwrap_or(false))
        .await
        .unwrap_or(false);
    Ok((None, if synced { 0 } else { 1 }))
}

/// What the watching loop keeps between events.
struct Loop<'a> {
    settings: &'a settings::Dev,
    cluster: &'a Arc<Cluster>,
    streams: &'a Arc<Cluster>,
    printer: &'a Arc<Printer>,
    sync: &'a sync::SyncThread,
    workloads: &'a Mutex<Vec<Workload>>,
    repositories: HashMap<String, Vec<Repository>>,
    logs: Logs,
    /// The last failure to list pods, reported once until it changes.
    last_pods_error: Option<String>,
}

impl<'a> Loop<'a> {
    /// One look at the pods, handed to sync, logs, forwards and the status lines.
    async fn look(&mut self, forwards: Option<&Forwards>) -> Result<(), PartStopped> {
        let current = locked(self.workloads).clone();
        let look = match pods::look(self.cluster, &current).await {
            Ok(look) => look,
            Err(e) => {
                let message = e.to_string();
                if self.last_pods_error.as_ref() != Some(&message) {
                    self.printer.emit(Event::Error {
                        stage: Stage::Pods,
                        message: message.clone(),
                    });
                    self.last_pods_error = Some(message);
                }
                return Ok(());
            }
        };
        self.last_pods_error = None;
        for (workload, pods, ready) in &look.workloads {
            self.printer.pods(workload, pods, *ready);
        }
        self.logs.follow(&look.pods);
        if let Some(forwards) = forwards {
            forwards.retarget(&look.pods, &self.repositories, self.printer);
        }
        self.sync.send(Command::Containers(look.containers))
    }

    /// berth.yaml changed: a new sync session, watch roots and forwards.
    async fn reload(
        &mut self,
        project: &Project,
        resolved: &[(String, Repository)],
        watching: &mut Option<Watching>,
        forwards: &mut Option<Forwards>,
        batches: &mpsc::Sender<berth_sync::watch::Batch>,
    ) -> Result<(), PartStopped> {
        self.repositories = repositories(project, resolved);
        let (roots_tx, roots) = std::sync::mpsc::channel();
        self.sync.send(Command::Reload(
            Box::new(project.clone()),
            resolved.to_vec(),
            roots_tx,
        ))?;
        let sync_roots = sync_roots(roots).await?;
        match Watching::start(project, &self.settings.render, &sync_roots, batches) {
            // The old watcher stops when dropped; an edit between the two is seen by
            // both, and the second look finds nothing new.
            Ok(new) => *watching = Some(new),
            Err(e) => self.printer.emit(Event::Error {
                stage: Stage::Render,
                message: format!("{e:#}"),
            }),
        }
        let unchanged = match forwards.as_ref() {
            Some(current) => current.serves(&project.dev.forward),
            None => project.dev.forward.is_empty(),
        };
        if !unchanged {
            if let Some(mut old) = forwards.take() {
                old.stop_and_release().await;
            }
            match Forwards::start(
                &project.dev.forward,
                &project.file,
                self.streams,
                self.printer,
            )
            .await
            {
                Ok(new) => *forwards = Some(new),
                Err(e) => self.printer.emit(Event::Error {
                    stage: Stage::Forward,
                    message: format!("{e:#}"),
                }),
            }
        }
        Ok(())
    }
}
