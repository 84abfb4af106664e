//! Command-line surface. Doc comments here are the `--help` text.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

mod args;
pub use args::*;
mod update_args;
pub use update_args::*;

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

/// The commands that read no project: the global `--project`, `--load-restrictor`
/// and `--color` are accepted there (clap propagates them) but not listed in
/// their `--help`, where they would only mislead.
const PROJECTLESS: &[&str] = &["ref", "completions", "schema", "man", "version"];

/// berth's command line: [`Cli`]'s, with the global flags hidden where they do
/// nothing ([`PROJECTLESS`]). Parse, completions and the manual page all use it.
pub fn command() -> clap::Command {
    let command = <Cli as clap::CommandFactory>::command();
    let globals: Vec<clap::Arg> = command
        .get_arguments()
        .filter(|arg| arg.is_global_set())
        .map(|arg| arg.clone().global(false).hide(true))
        .collect();
    PROJECTLESS.iter().fold(command, |command, name| {
        // An argument a subcommand already has is not propagated to it again.
        command.mut_subcommand(name, |sub| sub.args(globals.iter().cloned()))
    })
}

impl Cli {
    /// A combination of arguments clap's attributes cannot state, as a usage
    /// error's message (exit 2, as clap's own): `update --to` moves one component.
    pub fn usage_problem(&self) -> Option<&'static str> {
        match &self.command {
            Command::Update(args) if args.to.is_some() && args.components.len() != 1 => Some(
                "--to names one version of one component: give exactly one COMPONENT (`berth update web --to v1.10.0`)",
            ),
            _ => None,
        }
    }
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
                    && berth_io::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            }
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a first berth.yaml for an existing repository.
    ///
    /// Reads the repository (`.gitignore` respected): its kustomizations (the ones no other
    /// uses become `manifests:`, several become `profiles:`), its Helm charts (a `helm:` source
    /// each, with `helmValues:` for the images their values hold), the images its pods run (one
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
    /// Also set, to what berth resolved: each component's `tagEnv`, `repositoryEnv` and
    /// `variantEnv`, and `tag.env` and `registry.env` when their components share one tag
    /// and prefix (`--registry` always), so a Makefile that builds `$(IMG):$(IMG_VERSION)`
    /// builds what berth deploys.
    ///
    /// Example: `berth env --tag server=v2 -- make deploy`. The command's exit status is
    /// passed through; 127 if it is not found, 126 if it cannot be run.
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
    /// Each remote `helm:` chart is pulled at its version (`helm pull`) and its archive's
    /// digest recorded; `--locked` renders that archive, offline from berth's cache
    /// (`$XDG_CACHE_HOME/berth/charts`). berth.lock is written atomically, left untouched
    /// when nothing changed or on failure.
    ///
    /// Examples: `berth pin && git add berth.lock`, then `berth render --locked`;
    /// `berth pin --platform linux/arm64`.
    #[command(mut_arg("locked", |a| a.hide(true)))]
    Pin(PinArgs),
    /// List the components and variants with a newer release, and tags republished since `berth pin`.
    ///
    /// Reads each repository's tags once (all pages, concurrently) and orders them as
    /// versions: `v1.10.0` after `v1.3.0`, an optional `v`, pre-releases only with `--pre` or
    /// when the current tag is one; `latest`, `main`, `sha-…` and other tags that are no
    /// version are left out (`images.NAME.versions.pattern` reads a scheme of your own). For a
    /// family (`variants:`) the newest is the default image's, each variant lacking it is named,
    /// and the version `berth update` would move the family to is the newest every variant has.
    /// When berth.lock exists (required with `--locked`) each pinned tag's digest is compared with
    /// the registry's: a tag pushed again since `berth pin` is "republished".
    ///
    /// Examples: `berth outdated`; `berth outdated --output json`; `berth outdated --exit-code` (CI).
    #[command(mut_arg("locked", |a| a.help("Require berth.lock and compare every pinned tag's digest with the registry's")))]
    Outdated(OutdatedArgs),
    /// Move components to a newer release: berth.yaml, berth.lock and every copy of the default.
    ///
    /// Moves each COMPONENT (default: every outdated one) to the newest release that every
    /// variant following its family tag has (or `--to VERSION`, refused naming the variants
    /// that lack it), and rewrites in place, changing only the tag's text: berth.yaml's
    /// `image:`; the Makefile's `NAME_TAG ?=` / `NAME_IMAGE ?=` defaults; kustomizations'
    /// `newTag:`; the chart values files that hold the default at a `helmValues:` path; and
    /// berth.lock (the moved components re-pinned) when it exists. A copy that cannot be
    /// moved safely (its line holds the old tag twice) is named, and the exit status is 1.
    /// Afterwards `berth validate --strict` finds nothing to disagree.
    ///
    /// Examples: `berth update --dry-run`; `berth update web`; `berth update modelserver --to v0.8.0`.
    Update(UpdateArgs),
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
    /// Copy every image to a mirror registry and write the configuration that makes
    /// clusters pull from it: OpenShift, containerd, CRI-O and podman.
    ///
    /// `berth mirror --to mirror.corp:5000/mirror --out mirror/` copies each resolved
    /// image as `promote` does, keeping its path below the prefix
    /// (`ghcr.io/llm-d/epp` → `mirror.corp:5000/mirror/llm-d/epp`, digests unchanged), then
    /// writes into DIR: `openshift/imagedigestmirrorset.yaml` (one object per component,
    /// named from its content), `openshift/imagetagmirrorset.yaml` (components without a
    /// digest), `containerd/certs.d/<host>/hosts.toml` and
    /// `registries.conf.d/50-<project>.conf`. The same lock gives the same bytes.
    ///
    /// Example: `berth pin && berth mirror --locked --to mirror.corp:5000/mirror --out mirror/`.
    #[command(mut_arg("platform", |a| a.hide(true)))]
    Mirror(MirrorArgs),
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
