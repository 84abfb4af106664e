//! Command-line surface. Doc comments here are the `--help` text.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// berth: one source of truth for which image, pull policy and configuration
/// every container of a Kubernetes project runs.
///
/// Image precedence, highest first: `--image NAME=REF`; the component's
/// full-reference variable (`<NAME>_IMAGE`); registry and tag overrides applied
/// to the default (`--registry`/`registry.env`, `--tag`/`<NAME>_TAG`); `image:`
/// in berth.yaml; with `--locked`, the digest pinned in berth.lock. A full
/// override that disagrees with a tag override is an error.
///
/// Exit status: 0 on success; 1 when the command failed (the reason is on stderr);
/// 2 for a usage error (an unknown flag, a bad value). `berth diff` exits 1 when
/// something would change and 2 on errors, as `kubectl diff` does; `berth env -- CMD`
/// passes CMD's status through (127: not found, 126: cannot be run).
#[derive(Debug, Parser)]
#[command(name = "berth", version, max_term_width = 100)]
pub struct Cli {
    /// The project file; by default `berth.yaml` in the current directory or
    /// the nearest parent that has one.
    #[arg(long, global = true, value_name = "FILE", env = "BERTH_PROJECT")]
    pub project: Option<PathBuf>,

    /// Which files berth.yaml may name (`files:`, `envs:`, `sources:`, `schema:` and its
    /// `$ref`s, `manifests:`, sync `from:`): `root` (default) only those under the
    /// directory of berth.yaml, after symlinks, as kustomize's load restrictor; `none`
    /// any file. Paths given on the command line are never restricted.
    #[arg(long, global = true, value_enum, default_value_t = crate::fs_source::LoadRestrictor::Root, value_name = "root|none")]
    pub load_restrictor: crate::fs_source::LoadRestrictor,

    /// Colour in output (`berth diff`): `auto` (default) on a terminal unless `NO_COLOR`
    /// is set, `always`, or `never`.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,

    #[command(subcommand)]
    pub command: Command,
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set (no-color.org).
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

impl ColorChoice {
    /// Whether to colour what goes to stdout.
    pub fn stdout(self) -> bool {
        use std::io::IsTerminal as _;
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::io::stdout().is_terminal()
                    && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            }
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a first berth.yaml for an existing repository.
    ///
    /// Reads the repository (`.gitignore` respected): its kustomizations (the ones no other
    /// uses become `manifests:`, several become `profiles:`), the images its pods run (one
    /// component per repository, the tag the manifests carry), the image variables its Makefile
    /// defines (`*_IMAGE`, `*_TAG`, `IMAGE_REGISTRY`, `IMAGE_TAG_BASE`), and marks images under
    /// another registry or organisation `registry: false`. Says what it decided and why; never
    /// replaces an existing berth.yaml.
    ///
    /// Example: `cd my-operator && berth init && berth validate`.
    Init(InitArgs),
    /// Parse and normalize image references (no project needed).
    ///
    /// Example: `berth ref nginx:1.25 --output json`. Exit status 1 if any is invalid.
    Ref(RefArgs),
    /// Print every component's resolved image.
    ///
    /// Examples: `berth images --output env`; `eval "$(berth images --output shell)"`;
    /// `berth images --explain`.
    Images(ImagesArgs),
    /// Run a command with every component's image variable set to its resolved value.
    ///
    /// Example: `berth env -- make deploy`. The command's exit status is passed through;
    /// 127 if it is not found, 126 if it cannot be run.
    Env(EnvArgs),
    /// Render manifests with every component's image resolved.
    ///
    /// Reads the project's `manifests:` (or the PATHs given; `-` is stdin) and writes a YAML
    /// stream to stdout, or one file per object with `--out DIR`. Works as a Helm
    /// post-renderer and after `kubectl kustomize`.
    ///
    /// Examples: `berth render > rendered.yaml`; `berth render --out rendered/`;
    /// `kubectl kustomize overlays/dev | berth render - | kubectl apply -f -`;
    /// `helm template shop ./chart | berth render - --only-overridden`.
    Render(RenderArgs),
    /// Find hard-coded copies of component images outside berth.yaml and the manifests.
    ///
    /// Walks the repository (default: the directory of berth.yaml; `.gitignore` respected,
    /// `.git/` skipped) and prints one line per copy of a component's image — any tag, any
    /// spelling that normalizes to its repository, `repo:$(TAG)` too — as
    /// `file:line:column: component `NAME`: …` with how that kind of file reads it from berth
    /// instead. Skips berth.yaml, berth.lock, the manifests berth renders and third-party
    /// images (`registry: false`). A count goes to stderr.
    ///
    /// Examples: `berth audit`; `berth audit --strict` (CI: exit 1 when any copy exists).
    Audit(AuditArgs),
    /// Run every check of the project without writing anything.
    ///
    /// Loads berth.yaml, resolves every image, generates every config (validating typed
    /// configs against their schemas) and CA bundle, and renders the manifests in memory.
    /// Exit status 0 and no output when all is well; 1 with the problems on stderr otherwise.
    ///
    /// Examples: `berth validate`; `berth validate --strict` (CI: every warning fails).
    #[command(
        mut_arg("out", |a| a.hide(true)),
        mut_arg("strict", |a| a.help("Make every warning an error (exit 1): expired certificates, components that match nothing, configs nothing uses, path entries that reach no field"))
    )]
    Validate(RenderArgs),
    /// Resolve every component's image to a digest and write berth.lock.
    ///
    /// One manifest HEAD per image, concurrently. The lock records each resolved
    /// `repo:tag` and its digest; `--locked` makes `images`, `env` and `render` use them.
    /// berth.lock is written atomically, left untouched when nothing changed or on failure.
    ///
    /// Examples: `berth pin && git add berth.lock`, then `berth render --locked`;
    /// `berth pin --platform linux/arm64`.
    #[command(mut_arg("locked", |a| a.hide(true)))]
    Pin(PinArgs),
    /// Copy every component image to another registry or prefix, digests preserved.
    ///
    /// `berth promote --to quay.io/team/prod` copies each resolved image (index, manifests,
    /// config and layers) to `quay.io/team/prod/<last path component>:<tag>`. Blobs already at
    /// the destination are not sent again; on the same registry they are mounted. With
    /// `--locked` the sources are the digests of berth.lock.
    ///
    /// Example: `berth promote --locked --to quay.io/team/prod`.
    #[command(mut_arg("platform", |a| a.hide(true)))]
    Promote(PromoteArgs),
    /// Push the rendered manifests as a Flux OCI artifact: `berth push oci://HOST/REPO:TAG`.
    ///
    /// Renders as `berth render` does (generated configs carry Flux's never-prune annotation
    /// unless `--gitops` or berth.yaml's `gitops:` says otherwise) and pushes the stream as one
    /// file, `manifests.yaml`, in a gzipped tarball layer (`application/vnd.cncf.flux.content.v1.tar+gzip`,
    /// config `application/vnd.cncf.flux.config.v1+json`), with the `org.opencontainers.image.*`
    /// annotations `flux push artifact` writes (`created` from `SOURCE_DATE_EPOCH` when set). The
    /// same manifests give the same layer. Prints `oci://HOST/REPO:TAG@sha256:…` on stdout.
    /// Credentials as for `berth pin`. HOST is always the registry, as Flux and Helm read
    /// `oci://` URLs (`oci://reghost/team/shop:main` goes to `reghost`, never Docker Hub). Rendered
    /// Secrets are refused unless `--allow-secrets` says to publish them.
    ///
    /// Example: `berth push oci://ghcr.io/acme/shop-manifests:main --source "$REPO_URL" --revision "main@sha1:$SHA"`,
    /// then an `OCIRepository` and a `Kustomization` in the cluster.
    #[command(
        mut_arg("out", |a| a.hide(true)),
        mut_arg("pin", |a| a.hide(true)),
        mut_arg("platform", |a| a.hide(true))
    )]
    Push(PushArgs),
    /// Put local files into running containers: live update without building images.
    ///
    /// Follows the `sync:` rules of berth.yaml (all of them, or the RULEs named). Each
    /// update is one stream per container: deletes, a tar stream of the changed files and the
    /// triggered `run:` steps, over one exec (or, while watching podman/docker containers, a
    /// shell kept open per container). Images and pull policies are never touched. Without
    /// `--once` it syncs every matching container (sending only files whose content differs),
    /// then watches the local files until interrupted, printing one status line per update;
    /// containers that start or restart are brought up to date before their steps run.
    ///
    /// Examples: `berth sync`; `berth sync --once` (CI, scripts); `berth sync epp-dev --dry-run`.
    Sync(SyncArgs),
    /// The inner loop for images built elsewhere: render, apply, wait, sync, logs, port-forwards.
    ///
    /// Renders and applies as `berth apply` does (same plan, field manager, records and
    /// clean-up), waits for the rollout, brings every `sync:` rule's containers up to date,
    /// then watches: an edit of a sync source is synced into the running containers; an edit
    /// of berth.yaml, a manifest, a config or a CA source renders again and, when the output
    /// changed, applies again (a config change rolls its workloads; sync, logs and forwards
    /// follow the new pods). The logs of every container of the project's pods are streamed,
    /// each line prefixed `pod/container |`; `dev.forward` entries of berth.yaml listen on
    /// 127.0.0.1 and forward to a ready pod of their component. Images and pull policies are
    /// never injected or forced: what runs is what berth.yaml resolves, as `render` writes it.
    /// A failed render, apply or rollout is reported and the loop keeps watching: fix the file
    /// and it applies again. Ctrl-C (SIGINT) or SIGTERM stops it with status 0 and leaves the
    /// cluster as it is.
    ///
    /// Examples: `berth dev`; `berth dev --profile kind --output json` (one JSON object per
    /// line for tools); `berth dev --once` (CI: apply, wait, sync once, exit).
    #[command(
        mut_arg("no_wait", |a| a.hide(true)),
        mut_arg("paths", |a| a.help("Files or directories to use instead of the project's `manifests:` (read again on every change)"))
    )]
    Dev(DevArgs),
    /// Render, then server-side apply every object to the cluster and wait for the rollout.
    ///
    /// Field manager `berth`; objects are labelled `app.kubernetes.io/managed-by: berth` and
    /// `berth.dev/project: <name>`; Namespaces and CRDs go first. Everything is dry-run first,
    /// so a conflict or refusal changes nothing. Each apply is recorded in a Secret
    /// (`berth-<project>-r<N>`, type `berth.dev/apply-record`: the objects it holds may be
    /// Secrets) for `berth rollback`. After the rollout succeeds, generated
    /// configs and CA bundles older than the last `--keep` generations are deleted (only
    /// objects with this project's berth labels); a failed rollout deletes nothing.
    ///
    /// Example: `berth apply --context kind-dev --rollout-timeout 120`.
    Apply(ApplyArgs),
    /// Show what `berth apply` would change, as a unified diff (coloured on a terminal).
    ///
    /// Each object is applied with a server-side dry run and compared with the live object.
    /// Exit status 0 when nothing would change, 1 when something would (like `kubectl diff`),
    /// 2 or more on errors.
    ///
    /// Example: `berth diff --context kind-dev` (before `berth apply`; in CI, `berth diff
    /// --locked; test $? -ne 2`).
    Diff(DiffArgs),
    /// Re-apply the previous successful generation (images and configs) and wait for it.
    ///
    /// Uses the records `berth apply` keeps in the cluster; the rollback is recorded as a new
    /// apply, so a second rollback goes back further only if `--keep` allows.
    ///
    /// Example: `berth rollback --context kind-dev --rollout-timeout 120`.
    Rollback(RollbackArgs),
    /// Remove config generations a GitOps engine keeps, once nothing uses them.
    ///
    /// berth renders generated configs and CA bundles for Flux or Argo CD (`gitops:` in
    /// berth.yaml, or `render --gitops`) with the engine's never-prune annotation, so the engine
    /// never deletes a generation that pods of an old ReplicaSet still use. `berth gc` (once; the
    /// controller does the same continuously) lists those generations in the namespace
    /// (labelled `berth.dev/gitops`) and deletes each that is older than the `--keep` newest of
    /// its config and that no running pod, workload template or ReplicaSet with replicas names.
    /// One line per generation on stdout: `deleted`, or `kept` with why. Only objects
    /// provably rendered by berth are deleted (its labels, the engine's annotation, its
    /// content-hash name, and one field manager that wrote them together); anything else
    /// labelled `berth.dev/gitops` is left, with a line on stderr saying why.
    ///
    /// Examples: `berth gc --namespace shop`; `berth gc --dry-run`.
    Gc(GcArgs),
    /// Run the in-cluster controller for `Berth` resources (`berth controller crd` prints
    /// the CRD).
    ///
    /// Reconciles `berth.dev/v1alpha1` `Berth`s with the same core as `render` and `apply`:
    /// configs and CA bundles from ConfigMaps and Secrets in each Berth's own namespace
    /// become immutable, content-addressed objects, references in its workloads are
    /// rewritten, images and pull policies resolved, everything server-side applied (field
    /// manager `berth-controller`) with owner references to the Berth. Watches only
    /// Berths, berth's own objects and sources labelled `berth.dev/source=true` (which it
    /// sets): never every ConfigMap. No berth.yaml is read.
    ///
    /// Examples: `berth controller --namespace team-a` (a Role is enough);
    /// `berth controller` (every namespace, a ClusterRole); `berth controller crd | kubectl apply -f -`.
    Controller(ControllerArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish).
    ///
    /// Examples: `source <(berth completions bash)`;
    /// `berth completions zsh > "${fpath[1]}/_berth"`;
    /// `berth completions fish > ~/.config/fish/completions/berth.fish`.
    Completions(CompletionsArgs),
    /// Print the JSON Schema (draft 2020-12) of berth.yaml, for editors and CI.
    ///
    /// Example: `berth schema > berth.schema.json`, then put
    /// `# yaml-language-server: $schema=./berth.schema.json` at the top of berth.yaml.
    Schema,
    /// Print the manual page (roff, every subcommand in one page).
    ///
    /// Example: `berth man > berth.1 && man ./berth.1`.
    Man,
    /// Print berth's version, the commit it was built from, its Rust and target.
    ///
    /// Example: `berth version --output json`.
    Version(VersionArgs),
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The repository's directory (default: the current one).
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct VersionArgs {
    /// `text` (one line) or `json` (version, commit, rust and target).
    #[arg(long, short = 'o', value_enum, default_value_t = RefFormat::Text, value_name = "FORMAT", hide_possible_values = true)]
    pub output: RefFormat,
}

#[derive(Debug, Args)]
pub struct ControllerArgs {
    #[command(subcommand)]
    pub command: Option<ControllerCommand>,
    /// The kubeconfig file (default: the in-cluster service account, then `KUBECONFIG`,
    /// then `~/.kube/config`).
    #[arg(long, value_name = "FILE", global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (default: the current one).
    #[arg(long, value_name = "NAME", global = true)]
    pub context: Option<String>,
    /// Reconcile the Berths of this namespace only (default: every namespace).
    #[arg(long, short = 'n', value_name = "NAMESPACE", value_parser = namespace_name, global = true)]
    pub namespace: Option<String>,
    /// Serve `/healthz`, `/readyz` (200 for a standby that reaches the API server and for a
    /// leader whose caches are synced; 503 while starting or stopping) and Prometheus
    /// `/metrics` here.
    #[arg(long, value_name = "ADDRESS", default_value = "127.0.0.1:8080")]
    pub listen: std::net::SocketAddr,
    /// Elect one leader among replicas through a Lease (run two replicas safely).
    #[arg(long)]
    pub leader_elect: bool,
    /// The Lease's namespace (default: `POD_NAMESPACE`, then `--namespace`, then `default`).
    #[arg(long, value_name = "NAMESPACE")]
    pub lease_namespace: Option<String>,
    /// The Lease's name.
    #[arg(long, value_name = "NAME", default_value = "berth-controller")]
    pub lease_name: String,
    /// Seconds a Lease holds without renewal. The leader gives up after two thirds of it
    /// without a renewal; a standby takes an abandoned Lease after all of it, a released
    /// one (SIGTERM) within 2 s.
    #[arg(long, value_name = "SECONDS", default_value_t = 15, value_parser = clap::value_parser!(u64).range(3..))]
    pub lease_duration: u64,
    /// Reach HOST (with port) over plain HTTP for `pin: true` images. Repeatable.
    /// Registry credentials come from `DOCKER_CONFIG` (mount a `kubernetes.io/dockerconfigjson`
    /// Secret there), as for `berth pin`.
    #[arg(long = "insecure-registry", value_name = "HOST", value_parser = registry_host)]
    pub insecure: Vec<String>,
    /// Berths reconciled at once (each makes its own requests many at a time). Unbounded,
    /// thousands of Berths at start overload the API server and the controller's memory.
    #[arg(long, value_name = "N", default_value_t = 24, value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrency: u16,
    /// Config generations rendered for a GitOps engine (labelled `berth.dev/gitops`): how
    /// many of each config to keep. Older ones are deleted once no running pod, workload
    /// template or ReplicaSet with replicas in their namespace uses them (as `berth gc`).
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    pub gitops_keep: u32,
    /// How log lines are written (stderr, one per line, with a timestamp; `RUST_LOG`
    /// sets the level, default `info`).
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// `berth controller --log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Text: time, level, where, message and fields.
    Text,
    /// One JSON object per line.
    Json,
}

/// A count that must be positive (`--concurrency 0` would wait forever).
fn at_least_one(value: &str) -> Result<usize, String> {
    match value.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{value}` is not a whole number")),
    }
}

/// A namespace's name: a DNS label (lowercase letters, digits, `-`, at most 63).
fn namespace_name(value: &str) -> Result<String, String> {
    let ok = !value.is_empty()
        && value.len() <= 63
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !value.starts_with('-')
        && !value.ends_with('-');
    if ok {
        Ok(value.to_string())
    } else {
        Err("a namespace is at most 63 lowercase letters, digits and `-`, starting and ending with a letter or digit".into())
    }
}

/// A timeout in whole seconds, at least 1 (`0` would fail every request at once).
fn positive_seconds(value: &str) -> Result<u64, String> {
    match value.parse::<u64>() {
        Ok(0) => Err("must be at least 1 second".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{value}` is not a whole number of seconds")),
    }
}

/// `--poll`: seconds between looks, fractions allowed (`0.2`), more than 0 and
/// at most an hour (0 would spin, a day would never look). A usage error (exit 2).
fn poll_seconds(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s <= 3600.0 => Ok(s),
        Ok(_) => Err("must be more than 0 and at most 3600 seconds".into()),
        Err(_) => Err(format!("`{value}` is not a number of seconds")),
    }
}

/// `--insecure-registry`: a host with an optional port, as images name it
/// (`localhost:5000`), never a URL: the flag chooses the scheme.
fn registry_host(value: &str) -> Result<String, String> {
    if value.contains("://") {
        let host = value.split_once("://").map_or(value, |(_, h)| h);
        return Err(format!(
            "give the host without a scheme (`{}`): the flag is what makes it plain HTTP",
            host.trim_end_matches('/')
        ));
    }
    let valid = !value.is_empty()
        && value.len() <= 255
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
    if valid {
        Ok(value.to_string())
    } else {
        Err(format!(
            "`{value}` is not a registry host; write HOST or HOST:PORT, e.g. localhost:5000"
        ))
    }
}

#[derive(Debug, Subcommand)]
pub enum ControllerCommand {
    /// Print the `Berth` CustomResourceDefinition (YAML), generated from the controller's types.
    Crd,
    /// Release what a removed controller would leave blocking: its finalizer on every Berth
    /// and its `berth.dev/source` label on the sources it read (in `--namespace`, or all).
    ///
    /// Without a controller running, a Berth keeps the controller's finalizer, so deleting
    /// it, its namespace or the CRD hangs in Terminating. Run this once the controller has
    /// stopped (the Helm chart's pre-delete hook does it for `helm uninstall`); workloads and
    /// generated objects stay, owned by their Berth. One line per object changed on stdout.
    ///
    /// Example: `berth controller uninstall --stop berth-system/berth-controller`
    Uninstall(UninstallArgs),
}

#[derive(Debug, Args)]
pub struct UninstallArgs {
    /// First scale the controller's Deployment (`NAMESPACE/NAME`) to zero and wait up to 60 s
    /// for its pods to stop: a running controller would put its finalizer back.
    #[arg(long, value_name = "NAMESPACE/NAME")]
    pub stop: Option<String>,
}

#[derive(Debug, Args)]
pub struct SyncArgs {
    #[command(flatten)]
    pub resolve: ResolveArgs,
    /// Rules to run (their `name:`); all when none are given.
    #[arg(value_name = "RULE")]
    pub rules: Vec<String>,
    /// Sync every matching container once (by content hash) and exit; non-zero if any failed
    /// or no container matched a rule.
    #[arg(long)]
    pub once: bool,
    /// Show what would be written, deleted and run, per container, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Where the containers run.
    #[arg(long, value_enum, default_value_t = EngineChoice::Auto)]
    pub engine: EngineChoice,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Find the workloads in profile NAME's manifests (berth.yaml's `profiles:`).
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Seconds between checks for new or restarted containers while watching.
    #[arg(long, default_value_t = 1.0, value_name = "SECONDS", value_parser = poll_seconds)]
    pub poll: f64,
}

#[derive(Debug, Args)]
pub struct DevArgs {
    /// Everything `berth apply` takes: `berth dev` applies as it does.
    #[command(flatten)]
    pub apply: ApplyArgs,
    /// `text` (logs on stdout, berth's own lines on stderr, a status line per workload on a
    /// terminal) or `json` (one JSON object per line on stdout, each with an `event`:
    /// rendered, applied, rollout, ready, synced, log, forward, error, stopped).
    #[arg(long, short, value_enum, default_value_t = DevFormat::Text, value_name = "FORMAT")]
    pub output: DevFormat,
    /// Apply, wait for the rollout, sync every rule once and exit: 0 when all of it worked,
    /// 1 otherwise (no watching, logs or forwards). The form for CI.
    #[arg(long)]
    pub once: bool,
    /// Seconds between looks at the project's pods (new, restarted and replaced pods are
    /// synced, their logs followed and forwards re-targeted).
    #[arg(long, default_value_t = 1.0, value_name = "SECONDS", value_parser = poll_seconds)]
    pub poll: f64,
}

/// `--gitops`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GitOpsChoice {
    /// Flux (`kustomize.toolkit.fluxcd.io/prune: Disabled`).
    Flux,
    /// Argo CD (`argocd.argoproj.io/sync-options: Prune=false`, `compare-options: IgnoreExtraneous`).
    Argocd,
    /// No engine: no annotations (overrides berth.yaml and `ARGOCD_APP_NAME`).
    None,
}

impl GitOpsChoice {
    /// The engine it names.
    pub fn engine(self) -> Option<berth_core::gitops::Engine> {
        match self {
            GitOpsChoice::Flux => Some(berth_core::gitops::Engine::Flux),
            GitOpsChoice::Argocd => Some(berth_core::gitops::Engine::ArgoCd),
            GitOpsChoice::None => None,
        }
    }
}

/// `berth dev --output`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DevFormat {
    /// For people.
    Text,
    /// One JSON object per line, for tools.
    Json,
}

/// How to reach a Kubernetes cluster, as kubectl does.
#[derive(Debug, Args, Default)]
pub struct ClusterArgs {
    /// The kubeconfig file (default: `KUBECONFIG`, then `~/.kube/config`, then the in-cluster
    /// service account).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<std::path::PathBuf>,
    /// The kubeconfig context (default: the current one).
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// The namespace of objects that do not set one (default: berth.yaml's `namespace:`, then
    /// the context's).
    #[arg(long, short = 'n', value_name = "NAMESPACE", value_parser = namespace_name)]
    pub namespace: Option<String>,
    /// Give up on an API request that has not answered after this many seconds (a server
    /// that accepts connections and never answers would otherwise hold berth forever).
    #[arg(long, value_name = "SECONDS", default_value_t = 30, value_parser = positive_seconds)]
    pub request_timeout: u64,
}

/// What `apply` and `diff` render (as `berth render` would).
#[derive(Debug, Args)]
pub struct ManifestArgs {
    /// Files or directories to apply instead of the project's `manifests:`; `-` reads stdin.
    #[arg(value_name = "PATH")]
    pub paths: Vec<String>,
    /// Render the manifests of profile NAME (berth.yaml's `profiles:`) instead of `manifests:`.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Set the pull policy of component NAME's containers (see `berth render`). Repeatable.
    #[arg(long = "pull-policy", value_name = "NAME=POLICY", value_parser = name_value)]
    pub pull_policies: Vec<(String, String)>,
    /// Treat expired or not-yet-valid certificates in CA bundles as errors.
    #[arg(long)]
    pub strict: bool,
}

#[derive(Debug, Args)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub resolve: ResolveArgs,
    #[command(flatten)]
    pub manifests: ManifestArgs,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub rollout: RolloutArgs,
}

/// Settings shared by `apply` and `rollback`.
#[derive(Debug, Args)]
pub struct RolloutArgs {
    /// Take over fields that another field manager owns (server-side apply's force).
    #[arg(long)]
    pub force_conflicts: bool,
    /// Generations of each generated config and CA bundle to keep (at least 1). Older ones
    /// are deleted only after the rollout that stopped using them succeeded.
    #[arg(long, default_value_t = 2, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub keep: u32,
    /// Seconds to wait for Deployments, StatefulSets, DaemonSets and Jobs to roll out
    /// (`--timeout` is for registry requests only, `--request-timeout` for API requests).
    #[arg(long = "rollout-timeout", default_value_t = 300, value_name = "SECONDS", value_parser = positive_seconds)]
    pub timeout: u64,
    /// Apply and record, but neither wait for rollouts nor delete old generations.
    #[arg(long)]
    pub no_wait: bool,
}

#[derive(Debug, Args)]
pub struct PushArgs {
    /// Where to push: `oci://HOST/REPO:TAG`.
    #[arg(value_name = "oci://HOST/REPO:TAG")]
    pub target: String,
    /// `org.opencontainers.image.source`: where the manifests come from (a git URL).
    #[arg(long, value_name = "URL")]
    pub source: Option<String>,
    /// `org.opencontainers.image.revision`: which revision (`main@sha1:…`).
    #[arg(long, value_name = "REV")]
    pub revision: Option<String>,
    /// Push even though the rendered manifests hold Secrets (their names are listed
    /// on stderr): anyone who can pull the artifact can read them.
    #[arg(long)]
    pub allow_secrets: bool,
    #[command(flatten)]
    pub render: RenderArgs,
}

#[derive(Debug, Args)]
pub struct GcArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Generations of each config to keep, in use or not (at least 1).
    #[arg(long, default_value_t = 2, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub keep: u32,
    /// Say what would be deleted, and delete nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    #[command(flatten)]
    pub resolve: ResolveArgs,
    #[command(flatten)]
    pub manifests: ManifestArgs,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Show the result as if conflicts with other field managers were forced.
    #[arg(long)]
    pub force_conflicts: bool,
}

#[derive(Debug, Args)]
pub struct RollbackArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub rollout: RolloutArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EngineChoice {
    /// podman if it answers, else docker if it answers, else Kubernetes if a kubeconfig
    /// (or an in-cluster service account) is found.
    Auto,
    /// The podman CLI.
    Podman,
    /// The docker CLI.
    Docker,
    /// Pods of the project's rendered workloads (all ready replicas), through the exec API.
    Kubernetes,
}

#[derive(Debug, Args)]
pub struct PromoteArgs {
    #[command(flatten)]
    pub resolve: ResolveArgs,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// The destination prefix: everything before each image's last path component.
    #[arg(long, value_name = "PREFIX")]
    pub to: String,
    /// Print the copy plan (source -> destination, one line per image) and copy nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct PinArgs {
    #[command(flatten)]
    pub resolve: ResolveArgs,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(Debug, Args)]
pub struct RefArgs {
    /// Image references to parse.
    #[arg(required = true, value_name = "REF")]
    pub references: Vec<String>,
    /// Output format.
    #[arg(long, short, value_enum, default_value_t = RefFormat::Text)]
    pub output: RefFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RefFormat {
    /// One line per input.
    Text,
    /// A JSON array, one object per input, in order.
    Json,
}

/// Overrides of the image resolution, shared by every command that resolves.
#[derive(Debug, Clone, Args, Default)]
pub struct ResolveArgs {
    /// Use REF as the full image of component NAME (highest precedence). Repeatable.
    #[arg(long = "image", value_name = "NAME=REF", value_parser = name_value)]
    pub images: Vec<(String, String)>,
    /// Use TAG for component NAME (replaces the default's tag and drops its digest). Repeatable.
    #[arg(long = "tag", value_name = "NAME=TAG", value_parser = name_value)]
    pub tags: Vec<(String, String)>,
    /// Replace everything before the last path component of every default image,
    /// e.g. `quay.io/me` (overrides the `registry.env` variable).
    #[arg(long, value_name = "PREFIX")]
    pub registry: Option<String>,
    /// Use the digests pinned in berth.lock (`repo:tag@digest`); fail if the lock has no
    /// pin for a resolved image. Run `berth pin` to write or refresh the lock.
    #[arg(long)]
    pub locked: bool,
}

/// How to reach registries, for commands that do.
#[derive(Debug, Args, Default)]
pub struct RegistryArgs {
    /// Reach HOST (with port, e.g. `localhost:5000`) over plain HTTP instead of TLS. Repeatable.
    #[arg(long = "insecure-registry", value_name = "HOST", value_parser = registry_host)]
    pub insecure: Vec<String>,
    /// Pin this platform's manifest (`os/arch[/variant]`) instead of the multi-platform
    /// index; a single-platform image of another platform is an error (`berth pin`, and
    /// `render`/`validate` with `--pin`).
    #[arg(long, value_name = "OS/ARCH")]
    pub platform: Option<String>,
    /// Registry requests in flight at once.
    #[arg(long, default_value_t = 16, value_name = "N", value_parser = at_least_one)]
    pub concurrency: usize,
    /// Seconds to wait for a registry to connect or answer.
    #[arg(long, default_value_t = 30, value_name = "SECONDS", value_parser = positive_seconds)]
    pub timeout: u64,
}

fn name_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_string(), value.to_string())),
        _ => Err(format!("expected NAME=VALUE, got `{s}`")),
    }
}

#[derive(Debug, Args)]
pub struct ImagesArgs {
    #[command(flatten)]
    pub resolve: ResolveArgs,
    /// Output format; `table` on a terminal, `env` otherwise.
    #[arg(long, short, value_enum)]
    pub output: Option<ImagesFormat>,
    /// Say where the registry, name, tag and digest of each image came from
    /// (on stderr when the output format is env, shell or make).
    #[arg(long)]
    pub explain: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImagesFormat {
    /// `EPP_IMAGE=ref` lines, one per component in file order.
    Env,
    /// `export EPP_IMAGE='ref'` lines, for `eval`.
    Shell,
    /// `EPP_IMAGE := ref` lines, for `include` in a Makefile.
    Make,
    /// A JSON array with every part and its source.
    Json,
    /// The same as YAML.
    Yaml,
    /// An aligned table for people.
    Table,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The directory to search (default: the directory of berth.yaml).
    #[arg(value_name = "PATH")]
    pub path: Option<PathBuf>,
    /// Exit with status 1 when any hard-coded copy is found.
    #[arg(long)]
    pub strict: bool,
    /// `text` (one `file:line:column:` line per copy) or `json` (an array of the copies).
    #[arg(long, short, value_enum, default_value_t = RefFormat::Text, value_name = "FORMAT", hide_possible_values = true)]
    pub output: RefFormat,
}

#[derive(Debug, Args)]
pub struct EnvArgs {
    #[command(flatten)]
    pub resolve: ResolveArgs,
    /// The command to run and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

#[derive(Debug, Args)]
pub struct RenderArgs {
    #[command(flatten)]
    pub resolve: ResolveArgs,
    /// Files or directories to render instead of the project's `manifests:`; `-` reads stdin.
    #[arg(value_name = "PATH")]
    pub paths: Vec<String>,
    /// Use the manifests of profile NAME (berth.yaml's `profiles:`) instead of `manifests:`.
    /// `berth validate` without it checks `manifests:` and every profile, each on its own.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Write one file per object into DIR (replaced atomically) instead of stdout.
    #[arg(long, value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
    /// Set the pull policy of component NAME's containers: auto, Always, IfNotPresent or Never
    /// (overrides `pullPolicy:`). Repeatable.
    #[arg(long = "pull-policy", value_name = "NAME=POLICY", value_parser = name_value)]
    pub pull_policies: Vec<(String, String)>,
    /// Treat expired or not-yet-valid certificates in CA bundles as errors, not warnings.
    #[arg(long)]
    pub strict: bool,
    /// Rewrite only the images of components an override touched (a variable, `--image`,
    /// `--tag`, the registry prefix, the lock); others keep what the manifests say. For Helm
    /// post-renderers: the chart's own tags (`--set image.tag=…`) stay unless berth is asked.
    #[arg(long)]
    pub only_overridden: bool,
    /// Pin every image to its current digest on the fly (without writing berth.lock).
    #[arg(long, conflicts_with = "locked")]
    pub pin: bool,
    /// The GitOps engine that applies this output (default: berth.yaml's `gitops:`, else
    /// `argocd` inside an Argo CD plugin, where `ARGOCD_APP_NAME` is set): generated configs
    /// and CA bundles carry its never-prune annotation and berth's labels, so the engine
    /// keeps an old generation for the pods that still use it and `berth gc` (or the
    /// controller) removes it after the rollout.
    #[arg(long, value_enum, value_name = "ENGINE")]
    pub gitops: Option<GitOpsChoice>,
    #[command(flatten)]
    pub registry: RegistryArgs,
}
