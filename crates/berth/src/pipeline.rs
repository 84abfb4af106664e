//! The CLI's one render pipeline: load berth.yaml → resolve its images → generate
//! its configs → render the manifests → what an apply sends. Every command that
//! renders goes through here and nowhere else, so `berth render`, `validate`,
//! `apply`, `diff`, `push`, `sync` and `dev` see the same objects and the same
//! warnings. Warnings come back as values: a command prints them, `berth dev`
//! emits them as events.

use std::path::Path;

use anyhow::{anyhow, bail, Result};
use berth_core::cluster::Desired;
use berth_core::configs::{self, ca, Generated};
use berth_core::gitops::Engine;
use berth_core::lock::Lock;
use berth_core::render::{self, path_warnings, Findings, RenderError, Spec, Workload};
use berth_core::resolve::{self, Overrides};
use berth_core::warning::{self, Code, Warning};
use berth_core::{Place, Project, Resolution};

use crate::cli::ResolveArgs;
use crate::fs_source::Fs;
use crate::settings::{self, Render};
use crate::{inputs, project_file};

/// Loads berth.yaml (`--project`, else the nearest) and resolves its images with
/// the flags' overrides (and berth.lock under `--locked`), then runs `command`.
/// `berth dev` calls it again whenever berth.yaml changes.
pub fn resolved<T>(
    project: Option<&Path>,
    args: &ResolveArgs,
    command: impl FnOnce(&Project, &Resolution<'_>) -> Result<T>,
) -> Result<T> {
    let project = project_file::load(project)?;
    let lock = lock(args, &project)?;
    let resolution = resolve(&project, settings::overrides(args, lock))?;
    command(&project, &resolution)
}

/// berth.lock, when `--locked` asks for it.
pub fn lock(args: &ResolveArgs, project: &Project) -> Result<Option<Lock>> {
    let lock = args
        .locked
        .then(|| project_file::load_lock(project))
        .transpose()?;
    if let Some(lock) = &lock {
        crate::signatures::check_locked(project, lock)?;
    }
    Ok(lock)
}

/// Resolves the project's images against `overrides` and the process environment;
/// what the resolution warns about (a misspelt variable) is said here, once, for
/// every command (`validate --strict` counts it too).
pub fn resolve<'p>(project: &'p Project, overrides: Overrides) -> Result<Resolution<'p>> {
    let resolution = resolve::resolve(project, &overrides, &env_var)?;
    print_warnings(project, resolution.warnings.clone());
    Ok(resolution)
}

/// The process environment, as the resolver reads it. A value that is not
/// valid Unicode is passed on lossily, so the resolver rejects it by name.
fn env_var(name: &str) -> Option<String> {
    std::env::var_os(name).map(|v| v.to_string_lossy().into_owned())
}

/// The generated configs and CA bundles, with the bundles' warnings.
pub struct Generation {
    /// Generated objects in file order: configs, then CA bundles.
    pub generated: Vec<Generated>,
    /// What the CA bundles warn about (errors under `strict`).
    pub warnings: Vec<Warning>,
}

/// Builds every generated object of the project. For a GitOps engine they carry
/// its never-prune annotations and berth's labels.
pub fn generate(
    project: &Project,
    strict: bool,
    gitops: Option<Engine>,
    cluster: Option<&[ca::ClusterPem]>,
) -> Result<Generation> {
    let files = Fs { root: &project.dir };
    let mut generated = configs::generate_all(project, &files)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        // A clock before 1970 is not a reason to refuse a render; expiry checks then see 0.
        .unwrap_or(0);
    let mut warnings = Vec::new();
    let system = project
        .ca_bundles
        .iter()
        .any(|b| b.defaults.is_some())
        .then(system_store)
        .transpose()?
        .flatten();
    for spec in &project.ca_bundles {
        if cluster.is_none() {
            for source in &spec.cluster_sources {
                warnings.push(Warning::at(Code::ClusterSource, Place::file(&project.file).at(source.pos), format_args!(
                    "CA bundle `{}` reads {} from the cluster, which `berth apply`, `berth diff` and `berth dev` do; this command reaches no cluster and renders the bundle without it",
                    spec.name, source.from.describe()
                )));
            }
        }
        let supplied = ca::Supplied {
            system: system.as_ref(),
            cluster: cluster.unwrap_or_default(),
            configs: &generated,
        };
        let bundle = ca::build(project, spec, &files, now, strict, &supplied)?;
        warnings.extend(bundle.warnings);
        generated.push(bundle.generated);
    }
    if let Some(engine) = gitops {
        berth_core::gitops::stamp(&mut generated, engine, &project.name);
    }
    Ok(Generation {
        generated,
        warnings,
    })
}

/// The public roots `defaults: system` adds: `BERTH_SYSTEM_CA_BUNDLE`, else
/// Debian's store; `None` when there is none (the bundle's error says how to
/// get one). Read bounded, as every file berth reads.
fn system_store() -> Result<Option<ca::SystemStore>> {
    let path = berth_io::env::var_os("BERTH_SYSTEM_CA_BUNDLE")
        .filter(|p| !p.is_empty())
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from("/etc/ssl/certs/ca-certificates.crt"));
    if !path.is_file() {
        return Ok(None);
    }
    let bytes = crate::fs_source::read_bounded(&path)
        .map_err(|e| anyhow!("cannot read the system CA store {}: {e}", path.display()))?;
    Ok(Some(ca::SystemStore {
        shown: path.display().to_string(),
        bytes,
    }))
}

/// One render as text (for `render`, `validate`, `push`, `sync`).
pub struct Rendered {
    /// The manifests and what the render found.
    pub rendered: render::Rendered,
    /// Everything to warn about, CA bundles' first (`accept:` not yet applied).
    pub warnings: Vec<Warning>,
    /// Of `warnings`, those about the sources the render read (a Helm values
    /// file that sets an image berth sets otherwise): `validate` checks each
    /// profile's.
    pub source_warnings: Vec<Warning>,
}

/// Renders into memory: every check of `berth render`, nothing written.
pub fn render(
    settings: &Render,
    project: &Project,
    resolution: &Resolution<'_>,
) -> Result<Rendered> {
    let (rendered, warnings, source_warnings) = run(
        settings,
        project,
        resolution,
        render::render,
        |r| &mut r.findings,
        None,
    )?;
    Ok(Rendered {
        rendered,
        warnings,
        source_warnings,
    })
}

/// The steps every render shares: generate, gather the inputs, build the spec, then
/// `render` (as text or as trees); the warnings of the generation and of the render.
fn run<T>(
    settings: &Render,
    project: &Project,
    resolution: &Resolution<'_>,
    render: impl FnOnce(&Spec<'_>, &[render::Input]) -> Result<T, RenderError>,
    findings: impl FnOnce(&mut T) -> &mut Findings,
    cluster: Option<&[ca::ClusterPem]>,
) -> Result<(T, Vec<Warning>, Vec<Warning>)> {
    let generation = generate(project, settings.strict, settings.gitops(project), cluster)?;
    let manifests = settings.manifests(project)?;
    // A profile's `variants:` select the family members its manifests run.
    let profile = (settings.profile.as_deref())
        .and_then(|name| project.profiles.iter().find(|p| p.name == name));
    let resolution = &*resolution.for_profile(profile, &project.file)?;
    let charts = crate::helm::local::charts(project, manifests);
    let values: Vec<_> = charts.iter().map(|(_, v)| v).collect();
    let scoped = render::values_for_charts(resolution, &values)
        .map_err(|e| anyhow!("{}: {e}", project.file))?;
    let scoped: Vec<_> = charts.iter().map(|(c, _)| *c).zip(scoped).collect();
    let helm = crate::helm::Given {
        images: &scoped,
        locked: resolution.locked_charts.as_deref(),
    };
    let inputs = inputs::gather(project, manifests, &settings.paths, helm)?;
    let options = settings.options();
    let spec = Spec::from_project(project, resolution, &generation.generated, &options)?;
    let mut rendered = render(&spec, &inputs).map_err(explain)?;
    let findings = findings(&mut rendered);
    if settings.paths.is_empty() {
        crate::helm::attribute(project, &charts, resolution, findings);
        crate::kustomize_origin::attribute(project, manifests, findings);
    }
    let mut warnings = generation.warnings;
    let sources = match settings.paths.is_empty() {
        true => crate::helm::disagreements(project, resolution, &charts, &scoped),
        false => Vec::new(),
    };
    warnings.extend(sources.iter().cloned());
    warnings.extend(warnings_of(findings, project, resolution));
    Ok((rendered, warnings, sources))
}

/// What an apply sends, with everything to warn about and the workloads among
/// the objects (whose pods `berth dev` follows).
pub struct Prepared {
    /// The objects and generated configs.
    pub desired: Desired,
    /// Render warnings (`accept:` not yet applied).
    pub warnings: Vec<Warning>,
    /// The workloads among the objects.
    pub workloads: Vec<Workload>,
}

/// Renders for an apply (`apply`, `diff`, `dev`): the objects as trees, then as JSON.
pub fn desired(
    settings: &Render,
    project: &Project,
    resolution: &Resolution<'_>,
    cluster: Option<&[ca::ClusterPem]>,
) -> Result<Prepared> {
    let to_desired = |spec: &Spec<'_>, inputs: &[render::Input]| {
        let rendered = render::render_objects(spec, inputs)?;
        let desired = Desired::from_rendered(&project.name, &rendered.objects, spec.generated);
        Ok((rendered, desired))
    };
    let ((rendered, desired), mut warnings, _) = run(
        settings,
        project,
        resolution,
        to_desired,
        |(r, _)| &mut r.findings,
        cluster,
    )?;
    // Applied directly, a placeholder berth does not fill reaches the cluster as
    // written (`berth render` leaves them for envsubst, and says nothing).
    for unfilled in render::unfilled_placeholders(&rendered.objects) {
        warnings.push(Warning::at(Code::UnfilledPlaceholder, unfilled.object.clone(), format_args!(
            "`{}` is `{}`, a placeholder berth does not fill (it fills only its components' image variables), so it is applied as written; set the value in the manifests, or render and fill it first (`berth render | envsubst | kubectl apply -f -`)",
            unfilled.field, unfilled.placeholder
        )));
    }
    if rendered.objects.is_empty() {
        bail!(
            "nothing to apply: {} renders no objects; list them under `manifests:` or pass PATHs",
            project.file
        );
    }
    Ok(Prepared {
        desired,
        warnings,
        workloads: render::workloads_of(rendered.objects),
    })
}

/// Every warning of one render: the shared ones, then its path entries'.
pub fn warnings_of(
    findings: &Findings,
    project: &Project,
    resolution: &Resolution<'_>,
) -> Vec<Warning> {
    let mut out = findings.warnings(project, resolution);
    // Overrides are judged here only when this render is the whole project.
    let whole = project.profiles.is_empty();
    let unreached = render::unreached_overrides(&[findings], project, resolution, whole);
    out.extend(unreached);
    if whole {
        out.extend(render::operator_missing(&[findings]));
    }
    out.extend(path_warnings(
        project,
        "imagePaths",
        &project.image_paths,
        &findings.image_paths_seen,
    ));
    out.extend(path_warnings(
        project,
        "configPaths",
        &project.config_paths,
        &findings.config_paths_seen,
    ));
    out
}

/// The warnings berth.yaml's `accept:` does not acknowledge, as lines.
pub fn shown(project: &Project, warnings: Vec<Warning>) -> Vec<String> {
    let filtered = warning::accept(&project.accepts, warnings);
    filtered.shown.iter().map(Warning::to_string).collect()
}

/// Prints the warnings berth.yaml's `accept:` does not acknowledge to stderr,
/// one `warning:` line each.
pub fn print_warnings(project: &Project, warnings: Vec<Warning>) {
    for line in shown(project, warnings) {
        say!("warning: {line}");
    }
}

/// Adds a hint where a common mistake is likely.
fn explain(error: RenderError) -> anyhow::Error {
    match &error {
        RenderError::NotAnObject { file, .. }
            if crate::kustomize::is_file_name(file)
                && !error.to_string().contains("- kustomize: DIR") =>
        {
            anyhow!("{error}\n  help: to render a kustomization, list it as `- kustomize: DIR` under `manifests:`")
        }
        _ => anyhow!(error),
    }
}
