//! `berth init [DIR]`: reads a repository (ripgrep's walker, `.gitignore`
//! respected) for its kustomizations, Helm charts (Chart.yaml and values.yaml;
//! a chart's templates are not plain manifests), Kubernetes YAML and Makefile variables,
//! lets the core decide a first berth.yaml (`berth_init`), writes it
//! without ever replacing one, and says what it decided and why.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};
use berth_init::{Chart, Facts, Kustomization};
use berth_yaml::{Limits, Node};

mod charts;
mod ignored;

/// `berth init --check [DIR]`: the existing berth.yaml against what init would
/// write now; each difference on stdout, exit 1 when there is one.
pub fn check(dir: Option<&Path>, project: Option<&Path>) -> Result<u8> {
    let (root, target) = place(dir, project)?;
    if !target.exists() {
        bail!(
            "berth init --check: there is no {} to check; run `berth init` to write one",
            target.display()
        );
    }
    let kept = crate::project_file::load(Some(&target))?;
    let mut skipped = Vec::new();
    let facts = facts(&root, &mut skipped)?;
    // Compared as decided: the proposal is not written and read back.
    let proposal = berth_init::propose(&facts);
    let differences = berth_init::check::differences(&kept, &proposal);
    let mut out = String::new();
    for line in &differences {
        out.push_str(line);
        out.push('\n');
    }
    crate::output::print(&out)?;
    say!(
        "berth init --check: {} difference(s) between {} and the repository",
        differences.len(),
        kept.file
    );
    Ok(u8::from(!differences.is_empty()))
}

/// The repository's directory and the berth.yaml of `DIR` and `--project`.
fn place(dir: Option<&Path>, project: Option<&Path>) -> Result<(PathBuf, PathBuf)> {
    let root = dir
        .map(Path::to_path_buf)
        .or_else(|| {
            project
                .and_then(Path::parent)
                .filter(|p| !p.as_os_str().is_empty())
                .map(Path::to_path_buf)
        })
        .unwrap_or_else(|| PathBuf::from("."));
    if !root.is_dir() {
        // I34 (#46): the directory came from --project (or BERTH_PROJECT): say so.
        if let (None, Some(file)) = (dir, project) {
            let what = if root.exists() {
                "is not a directory"
            } else {
                "does not exist"
            };
            bail!(
                "--project {} (or BERTH_PROJECT): directory `{}` {what}; create it first, or give the repository's directory as DIR",
                file.display(),
                root.display()
            );
        }
        bail!(
            "berth init {}: not a directory; give the repository's directory",
            root.display()
        );
    }
    let target = match project {
        Some(file) => file.to_path_buf(),
        None => root.join(berth_core::project::PROJECT_FILE),
    };
    Ok((root, target))
}

/// `berth init [DIR]`; with `--project FILE`, the file to write (its directory
/// is the repository's unless DIR says otherwise).
pub fn run(dir: Option<&Path>, project: Option<&Path>) -> Result<u8> {
    let (root, target) = place(dir, project)?;
    if target.exists() {
        bail!(
            "{} already exists; berth init never replaces it (remove it first to start over, or edit it)",
            target.display()
        );
    }
    let mut skipped = Vec::new();
    let facts = facts(&root, &mut skipped)?;
    let proposal = berth_init::propose(&facts);
    let mut notes = proposal.notes().to_vec();
    // What it writes must load: an entry that does not is left out with its
    // reason (#46 item 5); one the error names no entry of is a bug, never output.
    let load = |yaml: &str| {
        berth_core::project::parse(berth_core::project::PROJECT_FILE, root.clone(), yaml)
            .map(drop)
            .map_err(|e| e.to_string())
    };
    let yaml = match berth_init::salvage(&proposal.to_yaml(), &load) {
        Ok((yaml, left_out)) => {
            notes.extend(left_out);
            yaml
        }
        Err(e) => bail!("internal error: the berth.yaml berth init made does not load ({e}); nothing was written; please report it"),
    };
    // The one writer: a new temporary beside it (never a planted file or link),
    // then linked into place, which fails if berth.yaml appeared meanwhile.
    berth_io::write_atomic(&root, &target, yaml.as_bytes(), berth_io::WriteMode::CreateNew)
        .map_err(|e| match e {
            berth_io::WriteError::Exists(_) => anyhow!(
                "{} already exists; berth init never replaces it (remove it first to start over, or edit it)",
                target.display()
            ),
            other => anyhow!("berth init: {other}"),
        })?;
    for note in skipped.iter().chain(&notes) {
        say!("berth init: {note}");
    }
    say!(
        "berth init: wrote {}; check it with `berth validate`, and run `berth audit` for hard-coded copies of these images",
        target.display()
    );
    Ok(0)
}

/// The facts: kustomizations, Kubernetes YAML, Makefile variables. What cannot
/// be read (a directory or file without permission, a file over the size limit
/// or not UTF-8) is named in `skipped`, never dropped silently.
/// Files one file's text under what it is.
fn record(facts: &mut Facts, kind: Kind, relative: String, text: String) {
    match kind {
        Kind::Kustomization => {
            let dir = Path::new(&relative)
                .parent()
                .map(|p| p.to_string_lossy().into_owned())
                .filter(|d| !d.is_empty())
                .unwrap_or_else(|| ".".into());
            facts.kustomizations.push(kustomization(dir, &text));
        }
        Kind::Makefile => {
            facts
                .make_vars
                .extend(berth_init::make_vars(&relative, &text));
            facts.make_texts.push((relative, text));
        }
        Kind::Yaml if text.contains("apiVersion:") && text.contains("kind:") => {
            facts.manifests.push((relative, text))
        }
        Kind::Yaml => {}
        Kind::Chart(dir) => read_chart_yaml(chart(&mut facts.charts, &dir), &text),
        Kind::Values(dir) => chart(&mut facts.charts, &dir).values = Some(text),
        Kind::VariantValues(dir, file) => {
            (chart(&mut facts.charts, &dir).variant_values).push((file, text));
        }
        Kind::Template(dir) => {
            let templates = &mut chart(&mut facts.charts, &dir).templates;
            templates.push_str(&text);
            templates.push('\n');
        }
    }
}

/// What init decides from, for `init` and `init --check` alike: the files,
/// then what the kustomizations build and the charts render.
fn facts(root: &Path, skipped: &mut Vec<String>) -> Result<Facts> {
    let mut facts = gather(root, skipped)?;
    facts.unbuildable = unbuildable(root, &mut facts, skipped);
    (facts.unrenderable, facts.chart_outputs) = charts::render(root, &facts);
    Ok(facts)
}

fn gather(root: &Path, skipped: &mut Vec<String>) -> Result<Facts> {
    let name = root
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "project".into());
    let mut facts = Facts {
        name,
        ..Facts::default()
    };
    let mut paths = files(root, skipped);
    paths.sort();
    let charts = chart_dirs(root, &paths);
    let mut left_out = 0usize;
    let mut json: Vec<(PathBuf, String)> = Vec::new();
    let mut walked: BTreeSet<String> = BTreeSet::new();
    for path in paths {
        let relative = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .replace('\\', "/");
        walked.insert(relative.clone());
        let file = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if file.ends_with(".json") && !not_deployed(&relative) {
            json.push((path.clone(), relative.clone()));
        }
        let Some(kind) = kind_of(&relative, &file, &charts) else {
            continue;
        };
        let manifest = matches!(kind, Kind::Kustomization | Kind::Yaml);
        if manifest && not_deployed(&relative) {
            left_out += 1;
            continue;
        }
        let Some(text) = read_text(&path, &relative, skipped) else {
            continue;
        };
        record(&mut facts, kind, relative, text);
    }
    ignored::read_reached(root, &walked, &mut facts, skipped);
    included_makefiles(root, &mut facts, skipped);
    // Where an operator may keep the images its RELATED_IMAGE_* variables stand
    // for; read only then, and at most JSON_FILES of them.
    if (facts.manifests.iter()).any(|(_, t)| t.contains("RELATED_IMAGE_")) {
        for (path, relative) in json.iter().take(JSON_FILES) {
            if let Some(text) = read_text(path, relative, skipped) {
                facts.data.push((relative.clone(), text));
            }
        }
    }
    if left_out > 0 {
        skipped.push(format!(
            "left out {left_out} YAML file(s) under {} and hidden directories (`.tekton/`, `.github/`): documentation, tests, samples, released archives, vendored code and CI pipelines are not what the project deploys",
            NOT_DEPLOYED.iter().map(|d| format!("{d}/")).collect::<Vec<_>>().join(", ")
        ));
    }
    unbuilt_dependencies(root, &facts, skipped);
    facts.charts.retain(|c| {
        let named = !c.name.is_empty();
        if !named {
            skipped.push(format!(
                "{}/Chart.yaml: skipped: no `name:` (not a chart berth init can read)",
                berth_io::shown(&c.dir)
            ));
        }
        named
    });
    Ok(facts)
}

/// Charts whose `charts/` directory lacks dependencies they list: named with
/// the command validate will need (berth renders a chart as it is on disk).
fn unbuilt_dependencies(root: &Path, facts: &Facts, skipped: &mut Vec<String>) {
    for chart in &facts.charts {
        let missing = missing_dependencies(root, chart);
        if !missing.is_empty() {
            skipped.push(format!(
                "chart {} lists dependencies its charts/ directory does not hold ({}): run `helm dependency build {}` before `berth validate` (berth renders the chart as it is on disk)",
                berth_io::shown(&chart.dir),
                missing.join(", "),
                berth_io::shown(&chart.dir)
            ));
        }
    }
}

/// The dependencies `chart` lists that its `charts/` directory does not hold.
fn missing_dependencies<'c>(root: &Path, chart: &'c Chart) -> Vec<&'c str> {
    let held: Vec<String> = std::fs::read_dir(root.join(&chart.dir).join("charts"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    (chart.dependencies.iter())
        .map(|(name, _)| name.as_str())
        .filter(|name| !held.iter().any(|h| h.starts_with(name)))
        .collect()
}

/// At most this many JSON files are read for related images (a repository's
/// own are few; a vendored tree's are not read at all).
const JSON_FILES: usize = 200;

/// The candidate overlays that do not build (`kubectl kustomize`, four at a
/// time, through berth's one runner and its cache): init leaves them out rather
/// than propose a profile that fails. Without kubectl nothing is built, and a
/// note says so.
fn unbuildable(root: &Path, facts: &mut Facts, notes: &mut Vec<String>) -> Vec<(String, String)> {
    let dirs: Vec<String> = berth_init::candidates(facts)
        .iter()
        .map(|k| k.dir.clone())
        .collect();
    let build = |dir: &String| -> Option<Result<String, String>> {
        use crate::kustomize::Failure;
        match crate::kustomize::build(&root.join(dir)) {
            Ok(stdout) => Some(Ok(String::from_utf8_lossy(&stdout).into_owned())),
            Err(Failure::Refused(why)) => {
                let offline = ["no such host", "Could not resolve host", "dial tcp"];
                Some(Err(if offline.iter().any(|o| why.contains(o)) {
                    "it fetches a remote base, and the network is not reachable".to_string()
                } else {
                    let short: String = why.chars().take(200).collect();
                    berth_io::shown(&short)
                }))
            }
            Err(Failure::NoKubectl) => None,
            Err(Failure::Run(e)) => Some(Err(e.to_string())),
        }
    };
    let mut results: Vec<(String, Option<Result<String, String>>)> = Vec::new();
    for chunk in dirs.chunks(4) {
        std::thread::scope(|scope| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|d| (d, scope.spawn(|| build(d))))
                .collect();
            for (dir, handle) in handles {
                let outcome = handle
                    .join()
                    .unwrap_or_else(|_| Some(Err("the build thread failed".into())));
                results.push((dir.clone(), outcome));
            }
        });
    }
    if results.iter().any(|(_, r)| r.is_none()) {
        notes.push(
            "kubectl not found: the overlays were not built; `berth validate` will say which fail"
                .into(),
        );
        return Vec::new();
    }
    let mut failed = Vec::new();
    let mut built = Vec::new();
    for (dir, result) in results {
        match result {
            Some(Ok(yaml)) => built.push((dir, yaml)),
            Some(Err(why)) => match generated(root, facts, &dir) {
                Some(inputs) => {
                    facts.generated_inputs.push(dir.clone());
                    failed.push((dir, inputs));
                }
                None => failed.push((dir, why)),
            },
            None => {}
        }
    }
    // An image only an overlay that failed holds is in no proposed set either.
    if !built.is_empty() {
        facts.built = Some(built);
    }
    failed
}

/// Why kustomization `dir` does not build when it is because its inputs are
/// generated: paths it (or a kustomization it uses) lists that are missing and
/// that `.gitignore` names, with the make targets whose recipes write them.
fn generated(root: &Path, facts: &Facts, dir: &str) -> Option<String> {
    let (ignored, _) = ignore::gitignore::Gitignore::new(root.join(".gitignore"));
    let mut missing: Vec<String> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let mut queue = vec![dir.to_string()];
    while let Some(dir) = queue.pop() {
        if seen.contains(&dir) || seen.len() > 1000 {
            continue;
        }
        seen.push(dir.clone());
        let Some(k) = facts.kustomizations.iter().find(|k| k.dir == dir) else {
            missing.push(format!("{dir}/kustomization.yaml"));
            continue;
        };
        for resource in k.resources.iter().filter(|r| !r.contains("://")) {
            let path = berth_init::normalize(&format!("{dir}/{resource}"));
            let full = root.join(&path);
            if full.is_dir() {
                queue.push(path);
            } else if !full.exists() {
                missing.push(path);
            }
        }
    }
    missing.retain(|path| {
        let full = root.join(path);
        ignored
            .matched_path_or_any_parents(&full, !path.ends_with(".yaml"))
            .is_ignore()
    });
    if missing.is_empty() {
        return None;
    }
    let mut targets: Vec<String> = Vec::new();
    for path in &missing {
        let target = berth_make::target_writing(&facts.make_vars, &facts.make_texts, path);
        targets.extend(target.filter(|t| !targets.contains(t)));
    }
    let shown: Vec<String> = missing.iter().map(|m| berth_io::shown(m)).collect();
    let make = if targets.is_empty() {
        "no make target names them; generate them".to_string()
    } else {
        format!("`make {}` writes them; run it", targets.join(" "))
    };
    Some(format!(
        "its inputs {} are generated (.gitignore lists them, so the repository does not hold them): {make}, then `berth init` again",
        shown.join(", ")
    ))
}

/// Every file below `root` (`.gitignore` respected, `.git/` skipped); what
/// cannot be walked is named in `skipped`.
fn files(root: &Path, skipped: &mut Vec<String>) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = Vec::new();
    for entry in ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build()
    {
        match entry {
            Ok(entry) if entry.file_type().is_some_and(|t| t.is_file()) => {
                paths.push(entry.into_path())
            }
            Ok(_) => {}
            Err(e) => skipped.push(format!("skipped: {}", berth_io::shown(&e.to_string()))),
        }
    }
    paths
}

/// The files Makefiles include by a literal path whatever their name (KServe's
/// `include kserve-images.env`), read as Makefiles too: make reads them, so
/// their `?=` defaults are the project's. Paths are relative to the including
/// Makefile's directory (where make runs); only files inside the repository.
fn included_makefiles(root: &Path, facts: &mut Facts, skipped: &mut Vec<String>) {
    let mut queue: Vec<String> = Vec::new();
    let includes_of = |file: &str, text: &str| -> Vec<String> {
        let dir = Path::new(file).parent().unwrap_or(Path::new(""));
        berth_make::includes(text)
            .into_iter()
            .map(|i| dir.join(i).to_string_lossy().into_owned())
            .flat_map(|i| crate::project_file::matching(root, &i))
            .collect()
    };
    for (file, text) in &facts.make_texts {
        queue.extend(includes_of(file, text));
    }
    let mut read = 0;
    while let Some(relative) = queue.pop() {
        if facts.make_texts.iter().any(|(f, _)| *f == relative) || read >= 64 {
            continue;
        }
        let path = root.join(&relative);
        if !path.is_file() || crate::fs_source::contained(root, &path).is_err() {
            continue;
        }
        read += 1;
        let Some(text) = read_text(&path, &relative, skipped) else {
            continue;
        };
        queue.extend(includes_of(&relative, &text));
        facts
            .make_vars
            .extend(berth_init::make_vars(&relative, &text));
        facts.make_texts.push((relative, text));
    }
}

/// What a file is to init, by its place and name; `None`: not read.
fn kind_of(relative: &str, file: &str, charts: &[String]) -> Option<Kind> {
    let in_chart = charts.iter().find(|dir| {
        relative.starts_with(&format!("{dir}/")) || (dir.as_str() == "." && !relative.is_empty())
    });
    if let Some(dir) = in_chart {
        let local = relative
            .strip_prefix(&format!("{dir}/"))
            .unwrap_or(relative);
        return match local {
            "Chart.yaml" => Some(Kind::Chart(dir.clone())),
            "values.yaml" => Some(Kind::Values(dir.clone())),
            // An accelerator's values file (`values_xpu.yaml`): its images are variants.
            f if !f.contains('/') && berth_init::variant_of_file(f).is_some() => {
                Some(Kind::VariantValues(dir.clone(), f.to_string()))
            }
            // How its templates default a value (an empty tag), read as text.
            t if t.starts_with("templates/") => Some(Kind::Template(dir.clone())),
            _ => None, // subcharts, helpers: helm renders them
        };
    }
    if crate::kustomize::is_file_name(file) {
        Some(Kind::Kustomization)
    } else if file == "Makefile" || file == "GNUmakefile" || file.ends_with(".mk") {
        Some(Kind::Makefile)
    } else if (file.ends_with(".yaml") || file.ends_with(".yml")) && relative != "berth.yaml" {
        Some(Kind::Yaml)
    } else {
        None
    }
}

/// A file's text (bounded); a file that is not UTF-8 or cannot be read is named
/// in `skipped`, never dropped silently.
fn read_text(path: &Path, relative: &str, skipped: &mut Vec<String>) -> Option<String> {
    match crate::fs_source::read_bounded(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => Some(text),
            Err(_) => {
                skipped.push(format!(
                    "{}: skipped: not UTF-8 text",
                    berth_io::shown(relative)
                ));
                None
            }
        },
        Err(e) => {
            skipped.push(format!("{}: skipped: {e}", berth_io::shown(relative)));
            None
        }
    }
}

/// Directories whose YAML no project deploys as it is: documentation, tests
/// and their data, samples, released archives (KServe's `install/`), build
/// output and vendored code.
const NOT_DEPLOYED: &[&str] = &[
    "docs",
    "doc",
    "test",
    "tests",
    "e2e",
    "testdata",
    "fixtures",
    "samples",
    "install",
    "dist",
    "vendor",
    "third_party",
];

/// Whether a relative path lies in a [`NOT_DEPLOYED`] directory or a hidden one.
fn not_deployed(relative: &str) -> bool {
    let mut parts: Vec<&str> = relative.split('/').collect();
    parts.pop(); // the file itself
                 // A hidden directory is a tool's: CI pipelines (`.tekton/`, `.github/`),
                 // editors, caches — never what the project deploys.
    parts.iter().any(|part| {
        NOT_DEPLOYED.contains(part) || part.starts_with('.') && part.len() > 1 && *part != ".."
    })
}

/// The files init reads.
enum Kind {
    Kustomization,
    Makefile,
    Yaml,
    /// A chart's Chart.yaml (the chart's directory).
    Chart(String),
    /// A chart's values.yaml.
    Values(String),
    /// A chart's values file for one accelerator or platform: (chart, file name).
    VariantValues(String, String),
    /// A file under a chart's `templates/`.
    Template(String),
}

/// The directories (relative, `.` for the root) that hold a Chart.yaml and are
/// not inside another chart: a subchart is its parent's to render.
fn chart_dirs(root: &Path, paths: &[PathBuf]) -> Vec<String> {
    let mut dirs: Vec<String> = paths
        .iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "Chart.yaml"))
        .filter_map(|p| p.parent()?.strip_prefix(root).ok())
        .map(|d| match d.to_string_lossy().replace('\\', "/") {
            d if d.is_empty() => ".".to_string(),
            d => d,
        })
        // A chart under `testdata/`, `docs/`… is a fixture, as the YAML there is (#46 item 5).
        .filter(|d| !not_deployed(&format!("{d}/Chart.yaml")))
        .collect();
    dirs.sort();
    let top: Vec<String> = dirs
        .iter()
        .filter(|d| {
            !dirs
                .iter()
                .any(|o| o != *d && (o == "." || d.starts_with(&format!("{o}/"))))
        })
        .cloned()
        .collect();
    top
}

/// The chart of `dir` in `charts`, added when new.
fn chart<'c>(charts: &'c mut Vec<Chart>, dir: &str) -> &'c mut Chart {
    if let Some(i) = charts.iter().position(|c| c.dir == dir) {
        return &mut charts[i];
    }
    charts.push(Chart {
        dir: dir.to_string(),
        ..Chart::default()
    });
    let last = charts.len() - 1;
    &mut charts[last]
}

/// `name:` and `appVersion:` of a Chart.yaml (left empty when it is not YAML:
/// the chart is then skipped, with a note).
fn read_chart_yaml(chart: &mut Chart, text: &str) {
    let Ok(docs) = berth_yaml::load_all(text, Limits::default()) else {
        return;
    };
    let field = |k: &str| docs.first()?.get(k)?.as_str().map(str::to_string);
    chart.name = field("name").unwrap_or_default();
    chart.app_version = field("appVersion");
    chart.library = field("type").as_deref() == Some("library");
    let dependencies = docs
        .first()
        .and_then(|d| d.get("dependencies")?.as_seq().map(<[Node]>::to_vec));
    for dependency in dependencies.unwrap_or_default() {
        let text = |k: &str| dependency.get(k).and_then(Node::as_str).map(str::to_string);
        if let (Some(name), Some(repository)) =
            (text("alias").or_else(|| text("name")), text("repository"))
        {
            chart.dependencies.push((name, repository));
        }
    }
}

fn kustomization(dir: String, text: &str) -> Kustomization {
    let mut out = Kustomization {
        dir,
        resources: Vec::new(),
        images: Vec::new(),
    };
    let Ok(read) = crate::kustomize::Kustomization::parse(text) else {
        return out;
    };
    out.resources = read.bases;
    out.images = (read.images.into_iter())
        .map(|edit| (edit.name, edit.new_name, edit.new_tag))
        .collect();
    out
}
