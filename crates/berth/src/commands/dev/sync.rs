//! The sync side of `berth dev`: `berth sync`'s session (blocking, one thread
//! per container per update) on a thread of its own, fed with the pods the loop
//! finds and the files the loop sees change.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use berth_core::Project;
use berth_ref::Repository;
use berth_sync::{Container, Report, Session, Target};

use super::events::{Event, Printer, Stage, SyncedContainer};

/// What the sync thread is asked to do.
pub enum Command {
    /// The ready containers now: new and restarted ones are brought up to date.
    Containers(Vec<Container>),
    /// Local paths changed.
    Changes(BTreeSet<PathBuf>),
    /// The file watcher lost events: compare everything again.
    Rescan,
    /// berth.yaml changed: a new session for its rules; the watch roots are sent back.
    Reload(
        Box<Project>,
        Vec<(String, Repository)>,
        Sender<Vec<(PathBuf, bool)>>,
    ),
    /// `--once`: sync every rule into `containers` (each rule must find one); whether all worked.
    Once(Vec<Container>, Sender<bool>),
}

/// How to reach the thread; it ends when this is dropped (after what it is doing).
pub struct SyncThread {
    pub commands: Sender<Command>,
    thread: std::thread::JoinHandle<()>,
}

impl SyncThread {
    /// Hands the thread `command`; `Err` when it has ended (it said why, as an event).
    pub fn send(&self, command: Command) -> Result<(), super::PartStopped> {
        self.commands
            .send(command)
            .map_err(|_| super::PartStopped(Stage::Sync))
    }

    /// Whether the thread has ended, which it does only when it panicked while the
    /// loop runs.
    pub fn ended(&self) -> bool {
        self.thread.is_finished()
    }
}

/// Starts the thread with the session of `project`; the roots to watch for its
/// rules come back on the returned receiver (none when it cannot start: the
/// error is reported and a later berth.yaml may fix it).
pub fn spawn(
    project: Project,
    resolved: Vec<(String, Repository)>,
    target: Arc<dyn Target>,
    printer: Arc<Printer>,
    stream: bool,
) -> (SyncThread, Receiver<Vec<(PathBuf, bool)>>) {
    let (commands, receive) = channel();
    let (roots_tx, roots) = channel();
    // The receiver is alive until the thread below starts: this send cannot fail.
    let _ = commands.send(Command::Reload(Box::new(project), resolved, roots_tx));
    let thread = std::thread::spawn(move || {
        let served = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let part = Part {
                target,
                printer: Arc::clone(&printer),
                stream,
            };
            serve(&receive, &part);
        }));
        // A panic is a bug; it ends this part, and the loop, told by the closed
        // channel, stops with an error instead of going on without sync.
        if let Err(payload) = served {
            printer.emit(Event::Error {
                stage: Stage::Sync,
                message: format!(
                    "the sync part stopped: {}; berth dev stops (the cluster is left as it is)",
                    super::panic_message(payload.as_ref())
                ),
            });
        }
    });
    (SyncThread { commands, thread }, roots)
}

/// The first wait before a failed sync is tried again, and the longest.
const RETRY_FIRST: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(30);

/// What the sync thread works with.
struct Part {
    target: Arc<dyn Target>,
    printer: Arc<Printer>,
    /// Keep an exec stream per container for updates (see [`Session::keep_shells`]).
    stream: bool,
}

fn serve(commands: &Receiver<Command>, part: &Part) {
    let printer = &*part.printer;
    let mut session: Option<Session> = None;
    let mut containers: Vec<Vec<Container>> = Vec::new();
    let mut reason = "initial";
    // A sync that failed (the API server away, a container busy) is pending, not
    // forgotten: everything is compared again after a back-off until it lands.
    let mut retry: Option<(Instant, Duration)> = None;
    loop {
        let first = match retry {
            Some((at, _)) => {
                match commands.recv_timeout(at.saturating_duration_since(Instant::now())) {
                    Ok(command) => command,
                    Err(RecvTimeoutError::Timeout) => Command::Rescan,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
            None => match commands.recv() {
                Ok(command) => command,
                Err(_) => return,
            },
        };
        let mut batch = vec![first];
        batch.extend(commands.try_iter());
        // Of the lists of containers waiting, only the newest matters.
        let newest = batch
            .iter()
            .rposition(|c| matches!(c, Command::Containers(_)));
        for (i, command) in batch.into_iter().enumerate() {
            if matches!(command, Command::Containers(_)) && Some(i) != newest {
                continue;
            }
            let synced = handle(command, &mut session, &mut containers, &mut reason, part);
            let behind = session.as_ref().is_some_and(Session::behind);
            retry = match synced {
                // Nothing failed this time, but a container an update missed is still
                // behind (its pod not listed while the API server was away): keep trying.
                Some(false) | None if behind => {
                    retry.or_else(|| Some((Instant::now() + RETRY_FIRST, RETRY_FIRST)))
                }
                Some(false) => None,
                Some(true) => {
                    let wait = retry.map_or(RETRY_FIRST, |(_, last)| (last * 2).min(RETRY_MAX));
                    printer.emit(Event::Error {
                        stage: Stage::Sync,
                        message: format!(
                            "the failed sync is pending: berth compares every file again in {} s",
                            wait.as_secs()
                        ),
                    });
                    Some((Instant::now() + wait, wait))
                }
                None => retry,
            };
        }
    }
}

/// A new session for berth.yaml's rules, scanned; `None` (and an error event) when
/// they cannot be used, until a later berth.yaml fixes them.
fn reload(project: &Project, resolved: &[(String, Repository)], part: &Part) -> Option<Session> {
    let (target, printer) = (&part.target, &*part.printer);
    let built = Session::new(project, resolved, &[], Arc::clone(target), false)
        .and_then(|mut s| s.scan().map(|()| s));
    match built {
        Ok(mut new) => {
            new.keep_shells(part.stream);
            warn_skipped(&mut new, printer);
            Some(new)
        }
        Err(e) => {
            printer.emit(Event::Error {
                stage: Stage::Sync,
                message: format!(
                    "{e}; the sync rules of {} are not used until it is fixed",
                    project.file
                ),
            });
            None
        }
    }
}

/// Carries out `command`; whether a sync it ran failed in a way that trying
/// again may mend (`None`: it ran none, or its error was a rule's).
fn handle(
    command: Command,
    session: &mut Option<Session>,
    containers: &mut Vec<Vec<Container>>,
    reason: &mut &'static str,
    part: &Part,
) -> Option<bool> {
    let printer = &*part.printer;
    let error = |message: String| {
        printer.emit(Event::Error {
            stage: Stage::Sync,
            message,
        })
    };
    match command {
        Command::Reload(project, resolved, roots) => {
            let new = reload(&project, &resolved, part);
            // A loop that stopped waiting has ended: nothing to tell.
            let _ = roots.send(new.as_ref().map(Session::watch_roots).unwrap_or_default());
            if let Some(new) = new {
                *session = Some(new);
                containers.clear();
                *reason = "initial";
            }
            None
        }
        Command::Containers(all) => {
            // Debug builds only: the test of a part that dies (tests/it/dev.rs).
            #[cfg(debug_assertions)]
            if berth_io::env::var_os("BERTH_DEV_FAULT").is_some_and(|v| v == "sync") {
                panic!("BERTH_DEV_FAULT=sync asked the sync part to fail");
            }
            let session = session.as_mut()?;
            match session.select(&all, false) {
                Ok(selected) => {
                    *containers = selected;
                    let reports = session.sync_containers(containers, false, reason);
                    let synced = report(&reports, printer);
                    if !reports.is_empty() {
                        *reason = "restart";
                    }
                    Some(synced.retry)
                }
                Err(e) => {
                    error(e.to_string());
                    None
                }
            }
        }
        Command::Changes(paths) => {
            let session = session.as_mut()?;
            let synced = match session.on_changes(&paths, containers) {
                Ok(reports) => Some(report(&reports, printer).retry),
                Err(e) => {
                    error(e.to_string());
                    None
                }
            };
            warn_skipped(session, printer);
            synced
        }
        Command::Rescan => {
            let session = session.as_mut()?;
            match session.rescan_all(containers) {
                Ok(reports) => Some(report(&reports, printer).retry),
                Err(e) => {
                    error(e.to_string());
                    None
                }
            }
        }
        Command::Once(all, done) => {
            let Some(session) = session.as_mut() else {
                let _ = done.send(false);
                return None;
            };
            let ok = match session.select(&all, true) {
                Ok(selected) => {
                    let reports = session.sync_containers(&selected, true, "initial");
                    report(&reports, printer).ok
                }
                Err(e) => {
                    error(e.to_string());
                    false
                }
            };
            let _ = done.send(ok);
            None
        }
    }
}

fn warn_skipped(session: &mut Session, printer: &Printer) {
    for problem in session.skipped.drain(..) {
        printer.emit(Event::Error {
            stage: Stage::Sync,
            message: problem.to_string(),
        });
    }
}

/// Whether `error` says the container's pod no longer exists.
fn pod_gone(error: &berth_sync::SyncError) -> bool {
    match error {
        berth_sync::SyncError::Cluster { source } => matches!(
            source.downcast_ref::<berth_kube::ClusterError>(),
            Some(berth_kube::ClusterError::NotFound { .. })
        ),
        _ => false,
    }
}

/// Whether trying `error` again may mend it: the cluster or the engine was
/// away or refused for a while. A missing program, a permission, a read-only
/// filesystem or a failing run step stays as it is until someone changes it:
/// retried, it would only repeat its error.
fn transient(error: &berth_sync::SyncError) -> bool {
    matches!(
        error,
        berth_sync::SyncError::Cluster { .. } | berth_sync::SyncError::Engine { .. }
    )
}

/// What the updates of one command came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Synced {
    /// Every container succeeded.
    ok: bool,
    /// A failure that trying again may mend (see [`transient`]).
    retry: bool,
}

/// Reports each update, and what they came to.
fn report(reports: &[Report], printer: &Printer) -> Synced {
    let mut ok = true;
    let mut retry = false;
    for report in reports.iter().filter(|r| !r.outcomes.is_empty()) {
        let mut updated = Vec::new();
        for outcome in &report.outcomes {
            match &outcome.result {
                Ok(()) => updated.push(SyncedContainer {
                    id: outcome.container.id.clone(),
                    written: outcome.update.writes.len(),
                    deleted: outcome.update.deletes.len(),
                    bytes: outcome.update.bytes(),
                    steps: outcome.steps.clone(),
                }),
                // The pod was deleted while the update went to it (a rollout replacing
                // it): its replacement gets the initial sync; nothing failed.
                Err(e) if pod_gone(e) => {}
                Err(e) => {
                    ok = false;
                    retry |= transient(e);
                    printer.emit(Event::Error {
                        stage: Stage::Sync,
                        message: format!(
                            "sync {} -> {}: {e}",
                            report.rule, outcome.container.label
                        ),
                    });
                }
            }
        }
        printer.emit(Event::Synced {
            rule: report.rule.clone(),
            reason: report.reason,
            ms: report.elapsed.as_millis(),
            containers: updated,
            line: crate::output::sync_status_line(report, false),
        });
    }
    Synced { ok, retry }
}
