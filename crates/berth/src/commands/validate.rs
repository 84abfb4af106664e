//! `berth validate`: every check of `render`, nothing written, and warnings
//! about what is probably a mistake (errors with `--strict`).
//!
//! Without `--profile` it checks `manifests:` and each profile on its own: a
//! component (unless `deployed: false`), a config and a path entry must be used
//! by at least one of them.

use anyhow::{bail, Result};
use berth_core::render::{path_warnings, Findings};
use berth_core::warning::{self, Code, Warning};
use berth_core::{Place, Project, Resolution};

use crate::pipeline;
use crate::settings::Render;

pub fn run(settings: &Render, project: &Project, resolution: &Resolution<'_>) -> Result<()> {
    let mut warnings = Vec::new();
    for (first, second, repository) in project.shared_repositories() {
        warnings.push(Warning::at(Code::SharedRepository, Place::file(&project.file).at(second.image_pos), format_args!(
            "components `{}` and `{}` both claim repository `{repository}`; `{}` (the first) gets every image there: give one of them a different `image:` or `match:`",
            first.name, second.name, first.name
        )));
    }
    // What to check: the profile asked for; else `manifests:` and every profile.
    let mut sets: Vec<(Option<String>, Render)> = Vec::new();
    if settings.profile.is_some() || !settings.paths.is_empty() {
        sets.push((settings.profile.clone(), settings.clone()));
    } else {
        if !project.manifests.is_empty() {
            sets.push((None, settings.clone()));
        }
        for profile in &project.profiles {
            let render = Render {
                profile: Some(profile.name.clone()),
                ..settings.clone()
            };
            sets.push((Some(profile.name.clone()), render));
        }
    }
    warnings.extend(makefile_defaults(project));
    warnings.extend(stale_pins(project, resolution)?);
    warnings.extend(berth_core::project::lagging(project));
    warnings.extend(public_roots(project));
    // Over every set unless `--profile` (or paths) chose one.
    let whole = settings.profile.is_none() && settings.paths.is_empty();
    // The configs and CA bundles are checked (and warned about) once, whatever renders.
    let generation = pipeline::generate(project, settings.strict, settings.gitops(project), None)?;
    warnings.extend(generation.warnings);
    if !sets.is_empty() {
        let mut all: Vec<Findings> = Vec::new();
        let mut per_set: Vec<(Option<String>, Vec<Warning>)> = Vec::new();
        let renders = render_all(&sets, project, resolution);
        for ((profile, _), rendered) in sets.iter().zip(renders) {
            let pipeline::Rendered {
                rendered,
                source_warnings,
                ..
            } = rendered?;
            for warning in source_warnings {
                // Each values file once, whichever renders read it.
                if !warnings.contains(&warning) {
                    warnings.push(warning);
                }
            }
            let found = rendered.findings.warnings(project, resolution);
            per_set.push((profile.clone(), found));
            all.push(rendered.findings);
        }
        warnings.extend(said_once(per_set, sets.len()));
        // `--profile X` of a project with other sets judges what must be used "by
        // at least one set" no further than X: the other sets may use it.
        let other_sets = !project.manifests.is_empty() as usize + project.profiles.len() > 1;
        if settings.profile.is_none() || !other_sets {
            warnings.extend(aggregated(project, &all));
        } else {
            warnings.extend(wrongly_undeployed(project, &all));
        }
        let renders: Vec<&Findings> = all.iter().collect();
        // Over every set unless `--profile` (or paths) chose one.
        warnings.extend(berth_core::render::unreached_overrides(
            &renders, project, resolution, whole,
        ));
        if whole || !other_sets {
            warnings.extend(berth_core::render::operator_missing(&renders));
        }
    }
    let count = report(project, resolution, warnings, whole);
    if settings.strict && count > 0 {
        bail!(
            "{count} warning{} (errors under --strict)",
            if count == 1 { "" } else { "s" }
        );
    }
    Ok(())
}

/// Each set's warnings, each said once, prefixed with the profiles that gave it: a
/// copy in a base several profiles render is one copy (#46 item 7). Two profiles'
/// outputs hold one source object's copy at different lines, so a warning in a
/// `kubectl kustomize` output whose object came from a file is known by that file,
/// its object, its message and its order among such warnings — not by the line.
fn said_once(per_set: Vec<(Option<String>, Vec<Warning>)>, sets: usize) -> Vec<Warning> {
    let mut merged: Vec<(String, Warning, Vec<String>)> = Vec::new();
    for (profile, mut found) in per_set {
        // One warning twice in one set is one.
        let mut seen = std::collections::HashSet::new();
        found.retain(|w| seen.insert((w.code, w.text.clone())));
        let mut keys: Vec<String> = Vec::new();
        for warning in found {
            let key = copy_key(&warning);
            let nth = keys.iter().filter(|k| **k == key).count();
            keys.push(key.clone());
            let key = format!("{key}#{nth}");
            match merged.iter_mut().find(|(k, _, _)| *k == key) {
                Some((_, _, names)) => names.extend(profile.clone()),
                None => merged.push((key, warning, profile.iter().cloned().collect())),
            }
        }
    }
    (merged.into_iter())
        .map(|(_, warning, names)| {
            let prefix = match names.as_slice() {
                [] => String::new(),
                _ if sets < 2 => String::new(),
                [one] => format!("profile `{one}`: "),
                many => format!("profiles `{}`: ", many.join("`, `")),
            };
            warning.prefixed(&prefix)
        })
        .collect()
}

/// What makes two sets' warnings one: its code and text, but for a place in a
/// kustomize output that names the file its object came from, the output's own
/// line left out.
fn copy_key(warning: &Warning) -> String {
    let at = &warning.at;
    let sourced = matches!(at.file, berth_core::place::File::Kustomize(_)) && !at.via.is_empty();
    let place = at.to_string();
    match warning.text.strip_prefix(&place).filter(|_| sourced) {
        Some(message) => format!("{}|{:?}|{:?}|{message}", warning.code, at.object, at.via),
        None => format!("{}|{}", warning.code, warning.text),
    }
}

/// Prints the warnings `accept:` does not acknowledge (and, when `whole`, the
/// acknowledgements that matched nothing) and a note of how many it did;
/// returns how many count against `--strict`. The resolution's warnings (a
/// misspelt variable) were said when it was made: they are matched against
/// `accept:` and counted here, not said again.
fn report(
    project: &Project,
    resolution: &Resolution<'_>,
    warnings: Vec<Warning>,
    whole: bool,
) -> usize {
    let earlier = warning::accept(&project.accepts, resolution.warnings.clone());
    let filtered = warning::accept(&project.accepts, warnings);
    let mut printed = filtered.shown;
    // An acknowledgement outlives its problem only where every warning was made.
    if whole {
        let used: Vec<bool> = (filtered.used.iter().zip(&earlier.used))
            .map(|(a, b)| *a || *b)
            .collect();
        printed.extend(warning::stale(&project.accepts, &used));
    }
    for warning in &printed {
        say!("warning: {warning}");
    }
    let accepted = filtered.accepted + earlier.accepted;
    if accepted > 0 {
        say!(
            "note: {accepted} warning{} acknowledged by `accept:` in {}",
            if accepted == 1 { "" } else { "s" },
            project.file
        );
    }
    printed.len() + earlier.shown.len()
}

/// CA bundles without public roots injected through a variable that replaces
/// a client's default store (`SSL_CERT_FILE`, `REQUESTS_CA_BUNDLE`,
/// `CURL_CA_BUNDLE`): those clients could then reach only the bundle's CAs.
fn public_roots(project: &Project) -> Vec<Warning> {
    let mut out = Vec::new();
    for bundle in &project.ca_bundles {
        let Some(inject) = &bundle.inject else {
            continue;
        };
        if bundle.defaults.is_some() {
            continue;
        }
        let replacing: Vec<String> = inject
            .env
            .iter()
            .filter(|v| berth_core::names::REPLACING_VARIABLES.contains(&v.as_str()))
            .map(|v| format!("`{v}`"))
            .collect();
        if replacing.is_empty() {
            continue;
        }
        out.push(Warning::at(Code::PublicRoots, Place::file(&project.file).at(bundle.pos), format_args!(
            "CA bundle `{}` holds only its own certificates, and {} replace the client's default store with it, so those clients can no longer reach public endpoints: add `defaults: system` (the public roots), or inject only Node's additive `NODE_EXTRA_CA_CERTS` (`runtimes: [node]`)",
            bundle.name,
            replacing.join(", ")
        )));
    }
    out
}

/// Every set rendered, in order, a few at a time: each render waits mostly on `kubectl
/// kustomize` and `helm template`, so KServe's 29 profiles took a minute one after another
/// (#46 item 6). As many at once as there are cores (at least 2, at most 8); the results, and
/// so the warnings, keep the sets' order.
fn render_all(
    sets: &[(Option<String>, Render)],
    project: &Project,
    resolution: &berth_core::Resolution<'_>,
) -> Vec<anyhow::Result<pipeline::Rendered>> {
    let workers = std::thread::available_parallelism()
        .map_or(2, std::num::NonZeroUsize::get)
        .clamp(2, 8)
        .min(sets.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<anyhow::Result<pipeline::Rendered>>>> =
        sets.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((_, render)) = sets.get(i) else {
                    break;
                };
                let rendered = pipeline::render(render, project, resolution);
                *berth_io::locked(&results[i]) = Some(rendered);
            });
        }
    });
    results
        .into_iter()
        .map(|slot| {
            // Every slot was filled: each index below `sets.len()` was taken by one worker.
            let taken = slot
                .into_inner()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            taken.unwrap_or_else(|| Err(anyhow::anyhow!("internal error: a render did not run")))
        })
        .collect()
}

/// The Makefile's image defaults compared with berth.yaml's: a default that
/// disagrees is a warning naming both lines; so is a deploy recipe that sets a
/// component's image in a kustomization from a variable berth does not set.
fn makefile_defaults(project: &Project) -> Vec<Warning> {
    let makefiles = crate::project_file::makefiles(project);
    let mut out = berth_make::disagreements(project, &makefiles);
    // A recipe's `cd` stays inside the project: a directory above it or absolute is not read.
    let kustomization = |dir: &str| {
        let inside =
            !std::path::Path::new(dir).is_absolute() && !dir.split('/').any(|part| part == "..");
        inside
            .then(|| crate::kustomize::read_kustomization(&project.dir.join(dir)))
            .flatten()
            .map(|(_, k)| k)
    };
    out.extend(berth_make::deploy_disagreements(
        project,
        &makefiles,
        &kustomization,
    ));
    out
}

/// `[lock-stale]`: the pins of berth.lock (when there is one) for tags berth.yaml
/// no longer names.
fn stale_pins(project: &Project, resolution: &Resolution<'_>) -> Result<Vec<Warning>> {
    if !project.dir.join(berth_core::lock::LOCK_FILE).exists() {
        return Ok(Vec::new());
    }
    let lock = crate::project_file::load_lock(project)?;
    Ok(berth_update::stale_pins(&lock, resolution))
}

/// Components that say `deployed: false` although a render runs their image:
/// the setting is wrong and hides them from validate's checks.
fn wrongly_undeployed(project: &Project, all: &[Findings]) -> Vec<Warning> {
    let mut out = undeployed_targets(project);
    let in_none = |missing: &dyn Fn(&Findings) -> bool| all.iter().all(missing);
    project
        .components
        .iter()
        .filter(|c| {
            !c.deployed
                && c.same_as.is_none()
                && !all.is_empty()
                && !in_none(&|f| f.unmatched_components.contains(&c.name))
        })
        .map(|c| Warning::at(Code::WronglyUndeployed, Place::file(&project.file).at(c.image_pos), format_args!(
            "component `{}` says `deployed: false`, but the manifests run its image (`{}`); remove `deployed: false`, so that validate checks it like the others",
            c.name, c.image.repository()
        )))
        .for_each(|w| out.push(w));
    out
}

/// A sync rule or `dev.forward` entry naming a `deployed: false` component reaches no
/// container: no pod runs that image (Q84, Q85 of #46).
fn undeployed_targets(project: &Project) -> Vec<Warning> {
    let undeployed = |name: &str| project.component(name).is_some_and(|c| !c.deployed);
    let mut out = Vec::new();
    for rule in &project.sync {
        if let berth_core::project::SyncTarget::Component(name) = &rule.target {
            if undeployed(name) {
                out.push(Warning::at(Code::WronglyUndeployed, Place::file(&project.file).at(rule.pos), format_args!(
                    "sync rule `{}` targets component `{name}`, which says `deployed: false`: no pod runs its image, so the rule reaches no container; target a deployed component, or remove `deployed: false` if the manifests do run it",
                    rule.name
                )));
            }
        }
    }
    for forward in &project.dev.forward {
        if undeployed(&forward.component) {
            out.push(Warning::at(Code::WronglyUndeployed, Place::file(&project.file).at(forward.pos), format_args!(
                "`dev.forward` to port {} of component `{}`, which says `deployed: false`: no pod runs its image, so `berth dev` has nothing to forward to; name a deployed component",
                forward.port, forward.component
            )));
        }
    }
    out
}

/// Configs and CA bundles no render used: one that is injected names the
/// containers it could have chosen (A36 of #46).
fn unused_configs(project: &Project, all: &[Findings]) -> Vec<Warning> {
    let in_none = |missing: &dyn Fn(&Findings) -> bool| all.iter().all(missing);
    let mut out = Vec::new();
    let names = project
        .configs
        .iter()
        .map(|c| (&c.name, c.pos, None))
        .chain(
            project
                .ca_bundles
                .iter()
                .map(|b| (&b.name, b.pos, b.spec.inject.as_ref())),
        );
    for (name, pos, inject) in names {
        if !in_none(&|f| f.unused_configs.contains(name)) {
            continue;
        }
        if let Some(inject) = inject {
            // A36 (#46): the injection chose no container; name the ones there are.
            let seen: std::collections::BTreeSet<&str> = all
                .iter()
                .flat_map(|f| f.containers.iter().map(String::as_str))
                .collect();
            let seen = if seen.is_empty() {
                "the manifests have no containers".to_string()
            } else {
                let names: Vec<&str> = seen.into_iter().collect();
                format!("the manifests' containers are {}", names.join(", "))
            };
            let chose = inject
                .containers
                .iter()
                .map(|c| format!("named `{c}`"))
                .chain(
                    inject
                        .components
                        .iter()
                        .map(|c| format!("running component `{c}`")),
                )
                .collect::<Vec<_>>()
                .join(" or ");
            out.push(Warning::at(Code::UnusedConfig, Place::file(&project.file).at(pos), format_args!(
                "`{name}` is injected into no container: none is {chose} ({seen}); name a container in `inject.containers` or its component in `inject.components`"
            )));
            continue;
        }
        out.push(Warning::at(Code::UnusedConfig, Place::file(&project.file).at(pos), format_args!(
            "`{name}` is referenced by no object in the manifests, so its generated name reaches nothing; refer to `{name}` from a pod spec (or inject it), list a custom resource's field that names it under `configPaths:`, or remove it"
        )));
    }
    out
}

/// What must hold in at least one render: every deployed component matched,
/// every config used, every path entry reaching a field.
fn aggregated(project: &Project, all: &[Findings]) -> Vec<Warning> {
    let mut warnings = wrongly_undeployed(project, all);
    let in_none = |missing: &dyn Fn(&Findings) -> bool| all.iter().all(missing);
    // A chart reaches a component through its values (`helmValues:`) whether or
    // not its defaults render the image (an optional proxy, a feature off by
    // default): that is no mistake of berth.yaml's.
    let charted = |c: &berth_core::Component| {
        !c.helm_values.is_empty()
            && project
                .manifests
                .iter()
                .chain(project.profiles.iter().flat_map(|p| &p.manifests))
                .any(|m| matches!(m.source, berth_core::ManifestSource::Helm(_)))
    };
    for c in &project.components {
        // A related image reaches the cluster through the operator's environment.
        let related = c.related_image.is_some();
        if !c.deployed || c.same_as.is_some() && c.repositories.is_empty() || charted(c) || related
        {
            continue;
        }
        if in_none(&|f| f.unmatched_components.contains(&c.name)) {
            let sets = if all.len() > 1 {
                " (in no profile)"
            } else {
                ""
            };
            warnings.push(Warning::at(Code::UnmatchedComponent, Place::file(&project.file).at(c.image_pos), format_args!(
                "component `{}` (`{}`) matches no image in the manifests{sets}; check its `image:` and `match:`, or the manifests' image fields (`imagePaths:` for custom resources); a component that is built but never deployed takes `deployed: false`",
                c.name, c.image
            )));
        }
    }
    warnings.extend(unused_configs(project, all));
    let merge = |pick: &dyn Fn(&Findings) -> &Vec<(bool, bool)>, len: usize| -> Vec<(bool, bool)> {
        (0..len)
            .map(|i| {
                all.iter().fold((false, false), |acc, f| {
                    let (k, v) = pick(f).get(i).copied().unwrap_or_default();
                    (acc.0 || k, acc.1 || v)
                })
            })
            .collect()
    };
    let image = merge(&|f| &f.image_paths_seen, project.image_paths.len());
    let config = merge(&|f| &f.config_paths_seen, project.config_paths.len());
    warnings.extend(path_warnings(
        project,
        "imagePaths",
        &project.image_paths,
        &image,
    ));
    warnings.extend(path_warnings(
        project,
        "configPaths",
        &project.config_paths,
        &config,
    ));
    warnings
}
