//! The flags of each command (`berth <command> --help`), shared flag groups and
//! their value parsers. `cli.rs` holds the command list and the global flags.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The repository's directory (default: the current one).
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Write nothing: compare the existing berth.yaml with what init would write
    /// now and name the differences (default images, variables, images no
    /// component claims); exit 1 when there are any. A CI guard against drift.
    #[arg(long)]
    pub check: bool,
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
    /// Read and watch Kubernetes ClusterTrustBundles (cluster-scoped) for CA bundle sources
    /// `clusterTrustBundle:`; needs get, list and watch on `clustertrustbundles`
    /// (certificates.k8s.io). Without it, a Berth naming one is Degraded and says how to enable it.
    #[arg(long)]
    pub cluster_trust_bundles: bool,
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
    positive(value, "", "")
}

/// A whole number of at least 1: `unit` names it in the messages (` second`).
fn positive<T: std::str::FromStr + PartialEq + From<u8>>(
    value: &str,
    unit: &str,
    units: &str,
) -> Result<T, String> {
    match value.parse::<T>() {
        Ok(n) if n == T::from(0) => Err(format!("must be at least 1{unit}")),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{value}` is not a whole number{units}")),
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
    positive(value, " second", " of seconds")
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
    /// Send each update through its own exec instead of one kept open per container (a
    /// shell on podman and docker, an exec stream on Kubernetes), e.g. when something
    /// between berth and the kubelet cuts streams that stay open.
    #[arg(long)]
    pub no_stream: bool,
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
    /// Send each update through its own exec instead of one kept open per container (a
    /// shell on podman and docker, an exec stream on Kubernetes), e.g. when something
    /// between berth and the kubelet cuts streams that stay open.
    #[arg(long)]
    pub no_stream: bool,
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

/// What is rendered and the cluster it goes to (`apply`, `diff`, `dev`).
#[derive(Debug, Args)]
pub struct TargetArgs {
    #[command(flatten)]
    pub resolve: ResolveArgs,
    #[command(flatten)]
    pub manifests: ManifestArgs,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

#[derive(Debug, Args)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub target: TargetArgs,
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
    /// Sign the pushed artifact with this cosign private key (`cosign.key`; its password
    /// from `COSIGN_PASSWORD`), cosign's tag scheme, so Flux's `verify.provider: cosign`
    /// accepts it.
    #[arg(long, value_name = "FILE")]
    pub sign_key: Option<std::path::PathBuf>,
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
    pub target: TargetArgs,
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

/// What `promote` and `mirror` share: they copy the resolved images whole
/// between registries, with what is attached to each.
#[derive(Debug, Args)]
pub struct CopyArgs {
    #[command(flatten)]
    pub resolve: ResolveArgs,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Copy the images alone, without the signatures, attestations and SBOMs attached to
    /// them (cosign's `sha256-<hex>.sig`/`.att`/`.sbom` tags, OCI 1.1 referrers).
    #[arg(long)]
    pub no_signatures: bool,
}

#[derive(Debug, Args)]
pub struct PromoteArgs {
    #[command(flatten)]
    pub copy: CopyArgs,
    /// The destination prefix: everything before each image's last path component.
    #[arg(long, value_name = "PREFIX")]
    pub to: String,
    /// Print the copy plan (source -> destination, one line per image) and copy nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct MirrorArgs {
    #[command(flatten)]
    pub copy: CopyArgs,
    /// The mirror's prefix: each image keeps its path below it.
    #[arg(long, value_name = "PREFIX")]
    pub to: String,
    /// The directory the configurations are written to (replaced whole; berth's own
    /// earlier output only).
    #[arg(long, value_name = "DIR")]
    pub out: std::path::PathBuf,
    /// Write the configurations only: the images were copied another way.
    #[arg(long)]
    pub no_copy: bool,
    /// Leave out third-party images (`registry: false` components).
    #[arg(long)]
    pub project_only: bool,
    /// OpenShift's `mirrorSourcePolicy` on every entry (default: OpenShift's,
    /// AllowContactingSource).
    #[arg(long, value_enum, value_name = "POLICY")]
    pub mirror_source_policy: Option<SourcePolicyChoice>,
    /// containerd: do not verify the mirror's TLS certificate (`skip_verify = true`).
    #[arg(long)]
    pub containerd_skip_verify: bool,
    /// containerd: the CA file (a path on the node) that signs the mirror's certificate.
    #[arg(long, value_name = "PATH")]
    pub containerd_ca: Option<String>,
}

/// OpenShift's `mirrorSourcePolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SourcePolicyChoice {
    /// Fall back to the source when the mirror does not answer.
    #[value(name = "AllowContactingSource")]
    AllowContactingSource,
    /// Never contact the source (a disconnected cluster).
    #[value(name = "NeverContactSource")]
    NeverContactSource,
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
    /// Run VARIANT of component NAME's image family (`images.NAME.variants`; `default` is its
    /// own `image:`), over `<NAME>_VARIANT` and a profile's `variants:`. Repeatable.
    #[arg(long = "variant", value_name = "NAME=VARIANT", value_parser = name_value)]
    pub variants: Vec<(String, String)>,
    /// Replace everything before the last path component of every default image,
    /// e.g. `quay.io/me` (overrides the `registry.env` variable).
    #[arg(long, value_name = "PREFIX")]
    pub registry: Option<String>,
    /// Use the digests pinned in berth.lock (`repo:tag@digest`, and each remote chart's
    /// archive); fail if the lock has no pin for a resolved image or a remote chart. Run
    /// `berth pin` to write or refresh the lock.
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
    /// `export EPP_IMAGE='ref'` lines and `BERTH_HANDED`, for `eval`.
    Shell,
    /// `EPP_IMAGE := ref` lines, for `include` in a Makefile.
    Make,
    /// A JSON array with every part and its source.
    Json,
    /// The same as YAML.
    Yaml,
    /// An aligned table for people.
    Table,
    /// One reference per line, each image once: for skopeo sync, hauler, zarf.
    List,
    /// oc-mirror's `ImageSetConfiguration` (v2alpha1) with every image under
    /// `mirror.additionalImages`.
    Imageset,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The directory to search (default: the directory of berth.yaml).
    #[arg(value_name = "PATH")]
    pub path: Option<PathBuf>,
    /// Exit with status 1 when any hard-coded copy is found.
    #[arg(long)]
    pub strict: bool,
    /// Do not search files matching GLOB (gitignore syntax, relative to PATH;
    /// repeatable; added to berth.yaml's `audit.exclude`).
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Also search released archives, vendored code and test data (directories
    /// named install, dist, vendor, third_party, testdata), skipped by default.
    #[arg(long)]
    pub all: bool,
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
