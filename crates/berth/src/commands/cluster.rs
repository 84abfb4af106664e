//! `berth apply`, `berth diff`, `berth rollback`: the CLI side (rendering,
//! progress, diff text); berth-kube does the cluster work.

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::Result;
use berth_core::{Project, Resolution};
use berth_kube::{Applier, Cluster, Connection, Desired, Event};

use crate::output::print;
use crate::pipeline;
use crate::settings::{self, Rollout};

/// Renders what an apply sends, prints the render's warnings, connects, and
/// runs `then` with the cluster and the objects.
fn connected<T>(
    settings: &settings::Cluster,
    project: &Project,
    resolution: &Resolution<'_>,
    then: impl AsyncFnOnce(&Cluster, &Desired) -> Result<T>,
) -> Result<T> {
    if !crate::trust_sources::any(project) {
        let prepared = pipeline::desired(&settings.render, project, resolution, None)?;
        pipeline::print_warnings(project, prepared.warnings);
        return crate::runtime::get()?.block_on(async {
            let cluster = Cluster::connect(&settings.connection).await?;
            then(&cluster, &prepared.desired).await
        });
    }
    // A CA bundle reads the cluster: connect first, read them,
    // then render with what was read (its hash covers it: a rotation rolls).
    crate::runtime::get()?.block_on(async {
        let cluster = Cluster::connect(&settings.connection).await?;
        let read = crate::trust_sources::read(&cluster, project).await?;
        let prepared = pipeline::desired(&settings.render, project, resolution, Some(&read))?;
        pipeline::print_warnings(project, prepared.warnings);
        then(&cluster, &prepared.desired).await
    })
}

/// Shows progress: a live line on a terminal, plain lines otherwise.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    last: String,
}

impl Progress {
    fn new() -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        Progress {
            bar,
            last: String::new(),
        }
    }

    fn line(&self, text: String) {
        match &self.bar {
            Some(bar) => bar.println(text),
            None => say!("{text}"),
        }
    }

    fn event(&mut self, event: Event) {
        match event {
            Event::Applied(object) => self.line(format!("applied {object}")),
            Event::Recorded(name) => self.line(format!("recorded as Secret {name}")),
            Event::Unchanged(name) => self.line(format!(
                "unchanged since the last apply (Secret {name}): only what drifted is applied again, no new record"
            )),
            Event::RolledOut(object) => self.line(format!("rolled out {object}")),
            Event::Deleted(object) => self.line(format!("deleted old generation {object}")),
            Event::Waiting(states) => {
                let summary: Vec<String> = states
                    .iter()
                    .map(|(o, how)| format!("{}/{}: {how}", o.kind, o.name))
                    .collect();
                let message = format!("waiting: {}", summary.join("; "));
                match &self.bar {
                    Some(bar) => bar.set_message(message.clone()),
                    // Off a terminal, a line only when the state changes (CI logs stay short).
                    None if message != self.last => say!("{message}"),
                    None => {}
                }
                self.last = message;
            }
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Applies (or rolls back to the record `rollback_of`), then waits as `rollout` says.
async fn deploy(
    cluster: &Cluster,
    desired: &Desired,
    rollout: &Rollout,
    rollback_of: Option<u64>,
) -> Result<u8> {
    let mut progress = Progress::new();
    let mut events = |e| progress.event(e);
    let mut applier = Applier::new(cluster, rollout.options.clone());
    let result = async {
        match rollback_of {
            Some(sequence) => applier.roll_back(desired, sequence, &mut events).await?,
            None => applier.apply(desired, &mut events).await?,
        };
        if let Some(timeout) = rollout.wait {
            applier.wait(timeout, &mut events).await?;
        }
        Ok::<_, berth_kube::ClusterError>(())
    }
    .await;
    progress.finish();
    result?;
    Ok(0)
}

pub fn apply(
    settings: &settings::Cluster,
    project: &Project,
    resolution: &Resolution<'_>,
) -> Result<u8> {
    connected(settings, project, resolution, async |cluster, desired| {
        deploy(cluster, desired, &settings.apply, None).await
    })
}

pub fn rollback(connection: &Connection, rollout: &Rollout, project: &Project) -> Result<u8> {
    crate::runtime::get()?.block_on(async {
        let cluster = Cluster::connect(connection).await?;
        let (sequence, desired) = cluster.previous(&project.name).await?;
        say!(
            "rolling back to apply r{sequence} of project `{}`",
            project.name
        );
        deploy(&cluster, &desired, rollout, Some(sequence)).await
    })
}

/// Exit 0 without differences, 1 with (errors exit 2; see `main`).
pub fn diff(
    settings: &settings::Cluster,
    project: &Project,
    resolution: &Resolution<'_>,
) -> Result<u8> {
    let changes = connected(settings, project, resolution, async |cluster, desired| {
        let changes = cluster
            .diff(
                desired,
                &settings.apply.options.manager,
                settings.apply.options.force,
            )
            .await?;
        Ok(changes)
    })?;
    let colour = crate::output::colour();
    let mut out = String::new();
    for mut change in changes {
        if change.object.kind == "Secret" {
            berth_kube::secret::mask_secret_pair(change.live.as_mut(), &mut change.merged);
        }
        let before = change.live.as_ref().map(to_yaml).unwrap_or_default();
        let after = to_yaml(&change.merged);
        if before == after {
            continue;
        }
        let path = change.object.path();
        // A new generation of a generated config is shown against the one it replaces.
        let live_path = match &change.replaces {
            Some(previous) => {
                let mut object = change.object.clone();
                object.name = previous.clone();
                object.path()
            }
            None => path.clone(),
        };
        let text = similar::TextDiff::from_lines(&before, &after)
            .unified_diff()
            .context_radius(3)
            .header(&format!("live/{live_path}"), &format!("merged/{path}"))
            .to_string();
        for line in text.lines() {
            let painted = match (colour, line.as_bytes().first()) {
                (true, Some(b'+')) if !line.starts_with("+++") => format!("\x1b[32m{line}\x1b[0m"),
                (true, Some(b'-')) if !line.starts_with("---") => format!("\x1b[31m{line}\x1b[0m"),
                (true, Some(b'@')) => format!("\x1b[36m{line}\x1b[0m"),
                _ => line.to_string(),
            };
            out.push_str(&painted);
            out.push('\n');
        }
    }
    print(&out)?;
    Ok(if out.is_empty() { 0 } else { 1 })
}

fn to_yaml(value: &serde_json::Value) -> String {
    let mut text = String::new();
    berth_yaml::write_document(&mut text, &berth_yaml::json::from_json(value));
    text
}
