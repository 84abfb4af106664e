//! `berth apply`, `berth diff`, `berth rollback`: the CLI side (rendering,
//! progress, diff text); berth-kube does the cluster work.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::Duration;

use anyhow::{bail, Result};
use berth_core::cluster::FIELD_MANAGER;
use berth_core::configs::schema::yaml_to_json;
use berth_core::{Project, Resolution};
use berth_kube::{ApplyOptions, Cluster, Connection, Desired, Event};
use berth_yaml::Limits;

use crate::cli::{
    ApplyArgs, ClusterArgs, DiffArgs, ManifestArgs, RegistryArgs, RenderArgs, ResolveArgs,
    RollbackArgs, RolloutArgs,
};
use crate::commands::render::render_generated;
use crate::output::{json_to_yaml, print};

/// The connection settings: flags, then berth.yaml's namespace.
pub fn connection(args: &ClusterArgs, project: &Project) -> Connection {
    Connection {
        kubeconfig: args.kubeconfig.clone(),
        context: args.context.clone(),
        namespace: args.namespace.clone().or_else(|| project.namespace.clone()),
    }
}

fn desired(args: &ManifestArgs, project: &Project, resolution: &Resolution<'_>) -> Result<Desired> {
    let render_args = RenderArgs {
        resolve: ResolveArgs::default(),
        paths: args.paths.clone(),
        out: None,
        pull_policies: args.pull_policies.clone(),
        strict: args.strict,
        pin: false,
        registry: RegistryArgs::default(),
    };
    let (rendered, generated) = render_generated(&render_args, project, resolution)?;
    if rendered.objects.is_empty() {
        bail!(
            "nothing to apply: {} renders no objects; list them under `manifests:` or pass PATHs",
            project.file
        );
    }
    let objects = berth_yaml::load_all(&rendered.yaml, Limits::default())?
        .iter()
        .filter(|doc| !doc.is_null())
        .map(yaml_to_json)
        .collect();
    Ok(Desired {
        project: project.name.clone(),
        objects,
        generated: generated
            .into_iter()
            .map(|g| (g.name, g.base_name))
            .collect::<BTreeMap<_, _>>(),
    })
}

fn options(args: &RolloutArgs) -> ApplyOptions {
    ApplyOptions {
        manager: FIELD_MANAGER.into(),
        force: args.force_conflicts,
        keep: args.keep as usize,
        wait: (!args.no_wait).then(|| Duration::from_secs(args.timeout)),
    }
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
            None => eprintln!("{text}"),
        }
    }

    fn event(&mut self, event: Event) {
        match event {
            Event::Applied(object) => self.line(format!("applied {object}")),
            Event::Recorded(name) => self.line(format!("recorded as Secret {name}")),
            Event::Unchanged(name) => self.line(format!(
                "unchanged since the last successful apply (Secret {name}): re-applied, no new record"
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
                    None if message != self.last => eprintln!("{message}"),
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

async fn deploy(
    cluster: &Cluster,
    desired: &Desired,
    args: &RolloutArgs,
    rollback_of: Option<u64>,
) -> Result<u8> {
    let mut progress = Progress::new();
    let result = cluster
        .deploy(desired, &options(args), rollback_of, &mut |e| {
            progress.event(e)
        })
        .await;
    progress.finish();
    result?;
    Ok(0)
}

pub fn apply(args: &ApplyArgs, project: &Project, resolution: &Resolution<'_>) -> Result<u8> {
    let desired = desired(&args.manifests, project, resolution)?;
    let connection = connection(&args.cluster, project);
    crate::runtime::get()?.block_on(async {
        let cluster = Cluster::connect(&connection).await?;
        deploy(&cluster, &desired, &args.rollout, None).await
    })
}

pub fn rollback(args: &RollbackArgs, project: &Project) -> Result<u8> {
    let connection = connection(&args.cluster, project);
    crate::runtime::get()?.block_on(async {
        let cluster = Cluster::connect(&connection).await?;
        let (sequence, desired) = cluster.previous(&project.name).await?;
        eprintln!(
            "rolling back to apply r{sequence} of project `{}`",
            project.name
        );
        deploy(&cluster, &desired, &args.rollout, Some(sequence)).await
    })
}

/// Exit 0 without differences, 1 with (errors exit 2; see `main`).
pub fn diff(args: &DiffArgs, project: &Project, resolution: &Resolution<'_>) -> Result<u8> {
    let desired = desired(&args.manifests, project, resolution)?;
    let connection = connection(&args.cluster, project);
    let changes = crate::runtime::get()?.block_on(async {
        let cluster = Cluster::connect(&connection).await?;
        cluster
            .diff(&desired, FIELD_MANAGER, args.force_conflicts)
            .await
    })?;
    let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let mut out = String::new();
    for mut change in changes {
        if change.object.kind == "Secret" {
            berth_core::redact::mask_secret_pair(change.live.as_mut(), &mut change.merged);
        }
        let before = change.live.as_ref().map(to_yaml).unwrap_or_default();
        let after = to_yaml(&change.merged);
        if before == after {
            continue;
        }
        let path = change.object.path();
        let text = similar::TextDiff::from_lines(&before, &after)
            .unified_diff()
            .context_radius(3)
            .header(&format!("live/{path}"), &format!("merged/{path}"))
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
    berth_yaml::write_document(&mut text, &json_to_yaml(value));
    text
}
