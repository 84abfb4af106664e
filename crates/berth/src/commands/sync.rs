//! `berth sync`: live update of running containers from local files.

use std::io::Write;
use std::sync::mpsc;
use std::sync::Arc;

use anyhow::{bail, Result};
use berth_core::{Project, Resolution};
use berth_kube::Cluster;
use berth_ref::Repository;
use berth_sync::engine::Engine;
use berth_sync::kube::KubeTarget;
use berth_sync::watch::Watcher;
use berth_sync::{Report, Session, Target};

use crate::pipeline;
use crate::settings::{Engine as SyncEngine, Render, Sync};

pub fn run(settings: &Sync, project: &Project, resolution: &Resolution<'_>) -> Result<u8> {
    for rule in &project.sync {
        for path in &rule.paths {
            let local = project.dir.join(&path.from);
            // A missing `from:` is reported by the session, with its own message.
            if local.exists() {
                crate::fs_source::contained(&project.dir, &local).map_err(|e| {
                    anyhow::anyhow!(
                        "{}:{}: sync `{}`: `from: {}`: {e}",
                        project.file,
                        path.pos,
                        rule.name,
                        path.from
                    )
                })?;
            }
        }
    }
    let target = target(settings, project, resolution)?;
    let resolved: Vec<(String, Repository)> = resolution
        .images
        .iter()
        .map(|r| (r.component.name.clone(), r.reference.repository().clone()))
        .collect();
    let mut session = Session::new(
        project,
        &resolved,
        &settings.rules,
        target,
        settings.dry_run,
    )?;
    session.scan()?;
    warn_skipped(&mut session);
    if settings.once {
        let containers = session.containers(true)?;
        let reports = session.sync_containers(&containers, true, "once");
        return Ok(if print_reports(&reports, settings.dry_run) {
            0
        } else {
            1
        });
    }
    watch(settings, &mut session)
}

fn target(
    settings: &Sync,
    project: &Project,
    resolution: &Resolution<'_>,
) -> Result<Arc<dyn Target>> {
    Ok(match settings.engine {
        SyncEngine::Podman => Arc::new(Engine::new("podman")),
        SyncEngine::Docker => Arc::new(Engine::new("docker")),
        SyncEngine::Kubernetes => kubernetes(settings, project, resolution)?,
        SyncEngine::Auto => match Engine::detect() {
            Some(engine) => Arc::new(engine),
            None if settings.cluster_configured => kubernetes(settings, project, resolution)?,
            None => bail!(
                "no engine found: neither podman nor docker answered (`podman ps`, `docker ps`) and there is \
                 no kubeconfig; start one, or name it with --engine to see its error"
            ),
        },
    })
}

/// The pods of the project's rendered workloads.
fn kubernetes(
    settings: &Sync,
    project: &Project,
    resolution: &Resolution<'_>,
) -> Result<Arc<dyn Target>> {
    let render = Render {
        profile: settings.profile.clone(),
        ..Render::default()
    };
    // Only the workloads matter here: the render's warnings are `berth validate`'s to give.
    let rendered = pipeline::render(&render, project, resolution)?.rendered;
    let workloads = berth_core::render::workloads(&rendered.yaml)?;
    if workloads.is_empty() {
        bail!(
            "--engine kubernetes syncs into the pods of the project's workloads, and {} renders none; \
             list the Deployments (or other workloads) under `manifests:`",
            project.file
        );
    }
    let runtime = crate::runtime::get()?;
    let cluster = runtime
        .block_on(Cluster::connect(&settings.connection))
        .map_err(|e| berth_sync::SyncError::Cluster {
            source: Box::new(e),
        })?;
    Ok(Arc::new(KubeTarget::new(
        runtime.handle().clone(),
        cluster,
        workloads,
    )))
}

fn watch(settings: &Sync, session: &mut Session) -> Result<u8> {
    // A warm shell per container (an exec stream on Kubernetes): no exec per update.
    session.keep_shells(settings.stream);
    // Watch before the initial sync, so no edit made during it is lost.
    let watcher = Watcher::new(&session.watch_roots())?;
    let poll = settings.poll;
    let mut containers = session.containers(false)?;
    announce_waiting(session, &containers);
    print_reports(
        &session.sync_containers(&containers, false, "initial"),
        settings.dry_run,
    );
    // Listing containers takes an engine round trip; a thread does it so edits never wait.
    let (listed, lists) = mpsc::channel();
    let target = session.target();
    std::thread::spawn(move || loop {
        std::thread::sleep(poll);
        if listed.send(target.list()).is_err() {
            return;
        }
    });
    say!("berth sync: watching for changes (Ctrl-C to stop)");
    loop {
        let batch = watcher.next_batch(poll)?;
        if let Some(list) = lists.try_iter().last() {
            match list.and_then(|all| session.select(&all, false)) {
                Ok(now) => {
                    containers = now;
                    // New and restarted containers catch up before any change is sent.
                    let reports = session.sync_containers(&containers, false, "restart");
                    print_reports(&reports, settings.dry_run);
                }
                Err(e) => say!("berth sync: {e} (retrying)"),
            }
        }
        let reports = if batch.rescan {
            session.rescan_all(&containers)?
        } else if batch.paths.is_empty() {
            continue;
        } else {
            session.on_changes(&batch.paths, &containers)?
        };
        warn_skipped(session);
        print_reports(&reports, settings.dry_run);
    }
}

fn announce_waiting(session: &Session, containers: &[Vec<berth_sync::Container>]) {
    for ((name, target), found) in session.targets().iter().zip(containers) {
        if found.is_empty() {
            say!("berth sync: rule `{name}`: no running container matches {target} yet; waiting");
        }
    }
}

fn warn_skipped(session: &mut Session) {
    for problem in session.skipped.drain(..) {
        say!("warning: {problem}");
    }
}

/// Prints one status line per report (stderr) and, in a dry run, the plan
/// (stdout). Returns whether every container succeeded.
fn print_reports(reports: &[Report], dry_run: bool) -> bool {
    let mut ok = true;
    let mut plan = String::new();
    for report in reports {
        let failed = report.outcomes.iter().filter(|o| o.result.is_err()).count();
        ok &= failed == 0;
        if dry_run {
            for o in &report.outcomes {
                plan.push_str(&format!("{} -> {}\n", report.rule, o.container.label));
                for d in &o.update.deletes {
                    plan.push_str(&format!("  delete {d}\n"));
                }
                for (path, entry) in &o.update.writes {
                    let what = match &entry.kind {
                        berth_sync::tree::Kind::File { size, .. } => {
                            format!("({})", crate::output::bytes(*size))
                        }
                        berth_sync::tree::Kind::Dir { .. } => "(directory)".into(),
                        berth_sync::tree::Kind::Symlink(t) => format!("-> {t}"),
                    };
                    plan.push_str(&format!("  write {path} {what}\n"));
                }
                for step in &o.steps {
                    plan.push_str(&format!("  run {step}\n"));
                }
            }
        }
        say!("{}", crate::output::sync_status_line(report, dry_run));
        for o in &report.outcomes {
            if let Err(e) = &o.result {
                say!("  error: {e}");
            }
        }
    }
    if !plan.is_empty() {
        let mut out = std::io::stdout().lock();
        if let Err(e) = out.write_all(plan.as_bytes()).and_then(|()| out.flush()) {
            // A reader that went away (`| head`) wanted no more; anything else lost the plan.
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                say!("error: cannot write the dry run's plan to stdout: {e}");
                return false;
            }
        }
    }
    ok
}
