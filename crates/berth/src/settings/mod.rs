//! Flags, berth.yaml and the environment resolved into one settings value per
//! command (as uv's `*Settings::resolve` and ripgrep's high-level arguments do).
//! `cli` describes the flags; commands see only these values, so no command
//! builds another command's flags to call it.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use berth_core::cluster::FIELD_MANAGER;
use berth_core::gitops::Engine as GitOps;
use berth_core::resolve::{Overrides, SourceNames};
use berth_core::Project;
use berth_kube::{ApplyOptions, Connection};
use berth_registry::Platform;

use crate::cli;

mod command_line;
mod copy;
#[cfg(test)]
use command_line::assignments;
pub use command_line::{command_line_variables, is_make, make_goals, make_words};
pub use copy::{Mirror, Promote};

/// How the CLI's flags are named in the core's messages.
fn source_names() -> SourceNames {
    SourceNames {
        image: "--image {component}=".into(),
        tag: "--tag {component}=".into(),
        variant: "--variant {component}=".into(),
        registry: "--registry ".into(),
        lock: "berth.lock (--locked)".into(),
    }
}

/// Overrides of the image resolution: the flags, with the lock when `--locked`,
/// and inside an Argo CD Config Management Plugin the Application's variables.
pub fn overrides(args: &cli::ResolveArgs, lock: Option<berth_core::lock::Lock>) -> Overrides {
    let (command_line, command_line_name) = argocd_variables(std::env::vars_os());
    // Names only (never values): what a misspelt variable is compared with.
    let present = std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .chain(command_line.iter().map(|(name, _)| name.clone()))
        .collect();
    Overrides {
        present,
        images: args.images.clone(),
        tags: args.tags.clone(),
        variants: args.variants.clone(),
        registry: args.registry.clone(),
        lock,
        command_line,
        command_line_name,
        names: source_names(),
    }
}

/// Argo CD hands a plugin the Application's `plugin.env` as `ARGOCD_ENV_<NAME>`
/// (and sets `ARGOCD_APP_NAME`): inside a plugin, `ARGOCD_ENV_EPP_TAG` is
/// `EPP_TAG`, ahead of the sidecar's own environment (the Application is the
/// more specific setting), and messages name the Application.
pub fn argocd_variables(
    vars: impl Iterator<Item = (OsString, OsString)>,
) -> (Vec<(String, String)>, String) {
    let vars: Vec<(String, String)> = vars
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let app = vars
        .iter()
        .find(|(k, v)| k == "ARGOCD_APP_NAME" && !v.is_empty())
        .map(|(_, v)| v.clone());
    let Some(app) = app else {
        return (Vec::new(), String::new());
    };
    let mut found: Vec<(String, String)> = vars
        .into_iter()
        .filter_map(|(k, v)| Some((k.strip_prefix("ARGOCD_ENV_")?.to_string(), v)))
        .filter(|(k, _)| !k.is_empty())
        .collect();
    found.sort();
    (
        found,
        format!("`ARGOCD_ENV_` of Argo CD Application `{app}`"),
    )
}

/// What to render and how (`render`, `validate`, `apply`, `diff`, and the
/// workloads `sync` looks for).
#[derive(Debug, Clone, Default)]
pub struct Render {
    /// Files or directories instead of the project's `manifests:`; `-` is stdin.
    pub paths: Vec<String>,
    /// Pull policies by component.
    pub pull_policies: Vec<(String, String)>,
    /// Expired or not-yet-valid certificates are errors.
    pub strict: bool,
    /// Only components an override touched are rewritten (`--only-overridden`).
    pub only_overridden: bool,
    /// `--profile NAME`: that profile's manifests instead of `manifests:`.
    pub profile: Option<String>,
    /// `--gitops ENGINE` as given (`Some(None)`: `none`); absent, berth.yaml's `gitops:`.
    pub gitops: Option<Option<GitOps>>,
}

impl Render {
    /// The GitOps engine the output is for: `--gitops`, else berth.yaml's
    /// `gitops:`, else Argo CD inside one of its Config Management Plugins (where
    /// `ARGOCD_APP_NAME` is set), else none.
    pub fn gitops(&self, project: &Project) -> Option<GitOps> {
        match self.gitops {
            Some(given) => given,
            None if project.gitops.is_some() => project.gitops.flatten(),
            None => berth_io::env::var_os("ARGOCD_APP_NAME")
                .filter(|v| !v.is_empty())
                .map(|_| GitOps::ArgoCd),
        }
    }

    /// The manifests to read: the profile's, else `manifests:`. Paths given on the
    /// command line replace both (the caller reads those).
    pub fn manifests<'p>(&self, project: &'p Project) -> Result<&'p [berth_core::Manifest]> {
        match &self.profile {
            Some(name) => match project.profiles.iter().find(|p| &p.name == name) {
                Some(profile) => Ok(&profile.manifests),
                None if project.profiles.is_empty() => bail!(
                    "--profile {name}: {} has no `profiles:`; add one (`profiles: {{{name}: [{{kustomize: DIR}}]}}`) or drop --profile",
                    project.file
                ),
                None => {
                    let names: Vec<&str> = project.profiles.iter().map(|p| p.name.as_str()).collect();
                    let hint = berth_core::suggest::hint(berth_core::suggest::closest(name, names.iter().copied()));
                    bail!(
                        "--profile {name}: no profile `{name}` in {}{hint}; its profiles are: {}",
                        project.file,
                        names.join(", ")
                    )
                }
            },
            None if project.manifests.is_empty() && !project.profiles.is_empty() && self.paths.is_empty() => {
                let names: Vec<&str> = project.profiles.iter().map(|p| p.name.as_str()).collect();
                bail!(
                    "{} has no `manifests:`, only profiles: choose one with --profile ({})",
                    project.file,
                    names.join(", ")
                )
            }
            None => Ok(&project.manifests),
        }
    }

    /// The core's render options.
    pub fn options(&self) -> berth_core::render::Options {
        berth_core::render::Options {
            pull_policies: self.pull_policies.clone(),
            pull_policy_source: "--pull-policy {component}=".into(),
            only_overridden: self.only_overridden,
            ..berth_core::render::Options::default()
        }
    }
}

impl From<&cli::RenderArgs> for Render {
    fn from(args: &cli::RenderArgs) -> Self {
        Render {
            paths: args.paths.clone(),
            pull_policies: args.pull_policies.clone(),
            strict: args.strict,
            only_overridden: args.only_overridden,
            profile: args.profile.clone(),
            gitops: args.gitops.map(cli::GitOpsChoice::engine),
        }
    }
}

impl From<&cli::ManifestArgs> for Render {
    fn from(args: &cli::ManifestArgs) -> Self {
        Render {
            paths: args.paths.clone(),
            pull_policies: args.pull_policies.clone(),
            strict: args.strict,
            only_overridden: false,
            profile: args.profile.clone(),
            // apply, diff and dev: berth.yaml's `gitops:` (an engine's annotations are
            // harmless when berth applies, and keep diff equal to what the engine gets).
            gitops: None,
        }
    }
}

/// How to reach registries.
#[derive(Debug, Clone)]
pub struct Registry {
    /// The client's options (plain-HTTP hosts, timeout).
    pub options: berth_registry::Options,
    /// Pin one platform's manifest instead of the index.
    pub platform: Option<Platform>,
    /// Requests in flight at once.
    pub concurrency: usize,
}

impl Registry {
    /// From the flags: the platform parsed, the limits checked.
    pub fn resolve(args: &cli::RegistryArgs) -> Result<Self> {
        let platform = args
            .platform
            .as_deref()
            .map(str::parse)
            .transpose()
            .map_err(|e: String| anyhow!("--platform: {e}"))?;
        Ok(Registry {
            options: berth_registry::Options {
                insecure: args.insecure.clone(),
                timeout: Duration::from_secs(args.timeout),
                ..berth_registry::Options::default()
            },
            platform,
            concurrency: args.concurrency,
        })
    }
}

/// `berth render`.
pub struct RenderCommand {
    /// What to render.
    pub render: Render,
    /// `--out DIR`, else stdout.
    pub out: Option<PathBuf>,
}

/// `berth render`.
pub fn render(args: &cli::RenderArgs) -> Result<RenderCommand> {
    registry_flags_need_pin(args, "render")?;
    Ok(RenderCommand {
        render: args.into(),
        out: args.out.clone(),
    })
}

/// `berth validate`: a render that writes nothing.
pub fn validate(args: &cli::RenderArgs) -> Result<Render> {
    if args.out.is_some() {
        bail!("--out does not apply to `berth validate`, which writes nothing; use `berth render --out DIR`");
    }
    registry_flags_need_pin(args, "validate")?;
    Ok(args.into())
}

/// `render` and `validate` reach a registry only to pin (`--pin`): a registry flag
/// without it would be ignored, so it is refused instead.
fn registry_flags_need_pin(args: &cli::RenderArgs, command: &str) -> Result<()> {
    if args.pin {
        return Ok(());
    }
    if args.registry.platform.is_some() {
        bail!("--platform applies to `berth {command}` only with --pin (it picks the platform to pin); add --pin, or drop --platform");
    }
    if !args.registry.insecure.is_empty() {
        bail!("--insecure-registry applies to `berth {command}` only with --pin (which asks the registry); add --pin, or drop --insecure-registry");
    }
    Ok(())
}

/// The cluster connection: the flags, then berth.yaml's namespace.
pub fn connection(args: &cli::ClusterArgs, project: &Project) -> Connection {
    connection_for(args, Some(project))
}

/// [`connection`] where berth.yaml is optional (`berth gc`).
pub fn connection_for(args: &cli::ClusterArgs, project: Option<&Project>) -> Connection {
    Connection {
        kubeconfig: args.kubeconfig.clone(),
        context: args.context.clone(),
        namespace: args
            .namespace
            .clone()
            .or_else(|| project.and_then(|p| p.namespace.clone())),
        request_timeout: Some(Duration::from_secs(args.request_timeout)),
        exec_once: true,
        response_limit: Some(berth_io::limits::API_BODY),
        write_fence: None,
    }
}

/// How an apply or rollback runs: its session's options, and how long to wait
/// for the rollouts.
pub struct Rollout {
    /// The apply session's options.
    pub options: ApplyOptions,
    /// How long to wait for the rollouts; `None` does not wait (and deletes nothing).
    pub wait: Option<Duration>,
}

/// How an apply or rollback runs.
pub fn rollout(args: &cli::RolloutArgs) -> Rollout {
    Rollout {
        options: ApplyOptions {
            manager: FIELD_MANAGER.into(),
            force: args.force_conflicts,
            keep: args.keep as usize,
            owner: None,
        },
        wait: (!args.no_wait).then(|| Duration::from_secs(args.timeout)),
    }
}

/// `berth apply` and `berth diff`.
pub struct Cluster {
    /// What to render.
    pub render: Render,
    /// Where to apply it.
    pub connection: Connection,
    /// How (diff uses only `force`, and never waits).
    pub apply: Rollout,
}

impl Cluster {
    /// `berth apply`.
    pub fn apply(args: &cli::ApplyArgs, project: &Project) -> Self {
        Cluster::new(&args.target, project, rollout(&args.rollout))
    }

    /// `berth diff`.
    pub fn diff(args: &cli::DiffArgs, project: &Project) -> Self {
        let apply = Rollout {
            options: ApplyOptions {
                manager: FIELD_MANAGER.into(),
                force: args.force_conflicts,
                keep: 0,
                owner: None,
            },
            wait: None,
        };
        Cluster::new(&args.target, project, apply)
    }

    fn new(target: &cli::TargetArgs, project: &Project, apply: Rollout) -> Self {
        Cluster {
            render: (&target.manifests).into(),
            connection: connection(&target.cluster, project),
            apply,
        }
    }
}

/// `berth images`.
pub struct Images {
    /// The format: given, else a table on a terminal and env lines elsewhere.
    pub output: cli::ImagesFormat,
    /// Say where each part came from.
    pub explain: bool,
}

impl From<&cli::ImagesArgs> for Images {
    fn from(args: &cli::ImagesArgs) -> Self {
        let output = match args.output {
            Some(format) => format,
            None if std::io::stdout().is_terminal() => cli::ImagesFormat::Table,
            None => cli::ImagesFormat::Env,
        };
        Images {
            output,
            explain: args.explain,
        }
    }
}

/// `berth env -- CMD`: the command and its arguments.
pub fn env_command(args: &cli::EnvArgs) -> &[OsString] {
    &args.command
}

/// `berth ref`.
pub struct Ref<'a> {
    /// The references to parse.
    pub references: &'a [String],
    /// A JSON array instead of text lines.
    pub json: bool,
}

impl<'a> From<&'a cli::RefArgs> for Ref<'a> {
    fn from(args: &'a cli::RefArgs) -> Self {
        Ref {
            references: &args.references,
            json: args.output == cli::RefFormat::Json,
        }
    }
}

/// Where `berth sync` finds containers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// podman, else docker, else Kubernetes when configured.
    Auto,
    /// podman.
    Podman,
    /// docker.
    Docker,
    /// Pods of the rendered workloads.
    Kubernetes,
}

/// `berth sync`.
pub struct Sync {
    /// Rules to run; all when empty.
    pub rules: Vec<String>,
    /// Sync once and exit.
    pub once: bool,
    /// Change nothing.
    pub dry_run: bool,
    /// Where the containers run.
    pub engine: Engine,
    /// The cluster, for the Kubernetes engine.
    pub connection: Connection,
    /// Whether a cluster configuration was named or found.
    pub cluster_configured: bool,
    /// Between container checks while watching.
    pub poll: Duration,
    /// `--profile NAME`: find the workloads in that profile's manifests.
    pub profile: Option<String>,
    /// While watching, one shell or exec stream per container (not `--no-stream`).
    pub stream: bool,
}

impl Sync {
    /// From the flags and berth.yaml: rule names checked, `--poll` positive.
    pub fn resolve(args: &cli::SyncArgs, project: &Project) -> Result<Self> {
        if project.sync.is_empty() {
            bail!(
                "{} has no `sync:` rules; add one, e.g.\n  sync:\n    - name: app\n      target: {{container: app}}\n      paths: [{{from: src/, to: /app/src/}}]",
                project.file
            );
        }
        for name in &args.rules {
            if !project.sync.iter().any(|r| &r.name == name) {
                let names: Vec<&str> = project.sync.iter().map(|r| r.name.as_str()).collect();
                bail!(
                    "no sync rule named `{name}` in {}; its rules are: {}",
                    project.file,
                    names.join(", ")
                );
            }
        }
        let engine = match args.engine {
            cli::EngineChoice::Auto => Engine::Auto,
            cli::EngineChoice::Podman => Engine::Podman,
            cli::EngineChoice::Docker => Engine::Docker,
            cli::EngineChoice::Kubernetes => Engine::Kubernetes,
        };
        let cluster_configured = args.cluster.kubeconfig.is_some()
            || berth_io::env::var_os("KUBECONFIG").is_some()
            || berth_io::env::var_os("KUBERNETES_SERVICE_HOST").is_some()
            || berth_io::env::var_os("HOME")
                .is_some_and(|home| std::path::Path::new(&home).join(".kube/config").is_file());
        Ok(Sync {
            rules: args.rules.clone(),
            once: args.once,
            dry_run: args.dry_run,
            engine,
            connection: connection(&args.cluster, project),
            cluster_configured,
            poll: Duration::from_secs_f64(args.poll),
            profile: args.profile.clone(),
            stream: !args.no_stream,
        })
    }
}

/// `berth dev`.
pub struct Dev {
    /// What to render, each time.
    pub render: Render,
    /// Where to apply it (requests bounded in time and size).
    pub connection: Connection,
    /// The same cluster for what stays open (logs, port-forwards): no bound on an
    /// answer's size, since a followed log is endless.
    pub streams: Connection,
    /// How to apply.
    pub apply: ApplyOptions,
    /// How long to wait for each rollout (`berth dev` always waits).
    pub wait: Duration,
    /// `--output json`.
    pub json: bool,
    /// `--once`.
    pub once: bool,
    /// Between looks at the pods.
    pub poll: Duration,
    /// While watching, one exec stream per container (not `--no-stream`).
    pub stream: bool,
}

impl Dev {
    /// From the flags and berth.yaml.
    pub fn resolve(dev: &cli::DevArgs, project: &Project) -> Result<Self> {
        let (args, rollout_args) = (&dev.apply.target, &dev.apply.rollout);
        if rollout_args.no_wait {
            bail!("--no-wait does not apply to `berth dev`, which waits for every rollout to sync into the new pods; use `berth apply --no-wait`");
        }
        if args.manifests.paths.iter().any(|p| p == "-") {
            bail!("`berth dev` renders again on every change, and standard input can be read once; give the manifests as files or directories");
        }
        let render: Render = (&args.manifests).into();
        if render
            .manifests(project)?
            .iter()
            .any(|m| m.source == berth_core::ManifestSource::Stdin)
            && args.manifests.paths.is_empty()
        {
            bail!(
                "{}: `manifests:` lists `-` (standard input), which `berth dev` cannot read again on every change; list files or directories, or pass PATHs",
                project.file
            );
        }
        let connection = connection(&args.cluster, project);
        let streams = Connection {
            response_limit: None,
            ..connection.clone()
        };
        let apply = rollout(rollout_args).options;
        Ok(Dev {
            render,
            connection,
            streams,
            apply,
            wait: Duration::from_secs(rollout_args.timeout),
            json: dev.output == cli::DevFormat::Json,
            once: dev.once,
            poll: Duration::from_secs_f64(dev.poll),
            stream: !dev.no_stream,
        })
    }
}

/// `berth push`: what it sends where.
pub struct Push {
    /// `oci://HOST/REPO:TAG`, as given.
    pub target: String,
    /// `--source URL`.
    pub source: Option<String>,
    /// `--revision REV`.
    pub revision: Option<String>,
    /// `--allow-secrets`.
    pub allow_secrets: bool,
    /// `--sign-key FILE`.
    pub sign_key: Option<PathBuf>,
    /// What to render.
    pub render: Render,
    /// How to reach the registry.
    pub registry: Registry,
}

impl Push {
    /// From the flags, before berth.yaml is read.
    pub fn resolve(args: &cli::PushArgs) -> Result<Self> {
        if args.render.registry.platform.is_some() {
            bail!("--platform does not apply to `berth push`");
        }
        Ok(Push {
            target: args.target.clone(),
            source: args.source.clone(),
            revision: args.revision.clone(),
            allow_secrets: args.allow_secrets,
            sign_key: args.sign_key.clone(),
            render: (&args.render).into(),
            registry: Registry::resolve(&args.render.registry)?,
        })
    }

    /// Flux is the engine of a pushed artifact unless `--gitops` or berth.yaml says another.
    pub fn for_project(mut self, project: &Project) -> Self {
        if self.render.gitops.is_none() && project.gitops.is_none() {
            self.render.gitops = Some(Some(GitOps::Flux));
        }
        self
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
