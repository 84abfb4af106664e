//! A local chart's own values as berth reads them (its `values.yaml`, `appVersion`, the
//! subcharts under `charts/` by the key the parent gives them) and the layers berth.yaml gives it
//! (`values:` files, `set:`), each read once: core's `render::ChartValues`, which decides which
//! image values reach the chart and where its defaults disagree with berth.yaml. What cannot be
//! read is left out: helm reports a broken chart with its own words.

use std::path::Path;

use berth_core::project::HelmChart;
use berth_core::render::{ChartValues, Layer};
use berth_core::{Manifest, ManifestSource, Project};
use berth_yaml::{Limits, Node};

/// Each `helm:` entry of `manifests`, with what berth could read of it (a remote chart or an
/// archive is not opened: only the layers berth.yaml gives it).
pub fn charts<'m>(
    project: &Project,
    manifests: &'m [Manifest],
) -> Vec<(&'m HelmChart, ChartValues)> {
    manifests
        .iter()
        .filter_map(|m| match &m.source {
            ManifestSource::Helm(chart) => Some((&**chart, read(project, chart, m))),
            _ => None,
        })
        .collect()
}

fn read(project: &Project, chart: &HelmChart, manifest: &Manifest) -> ChartValues {
    let mut values = ChartValues::default();
    for file in &chart.values {
        if let Some(tree) = document(&project.dir.join(&file.value)) {
            values.given.push((Layer::File(file.value.clone()), tree));
        }
    }
    if let Some(set) = &chart.set {
        if let Some(tree) = first(set) {
            let file = project.file.clone();
            let set = Layer::Set {
                file,
                pos: manifest.pos,
            };
            values.given.push((set, tree));
        }
    }
    let dir = project.dir.join(&chart.chart);
    if !chart.is_local() || !dir.is_dir() {
        return values;
    }
    values.opened = true;
    let shown = chart.chart.trim_end_matches('/');
    values.own = document(&dir.join("values.yaml"))
        .map(|t| (Layer::File(format!("{shown}/values.yaml")), t));
    let meta = document(&dir.join("Chart.yaml"));
    values.app_version = meta
        .as_ref()
        .and_then(|m| m.get("appVersion"))
        .and_then(Node::as_str)
        .map(str::to_string);
    values.dependencies = dependencies(project, &dir, shown, meta.as_ref());
    values.templates = templates(&dir.join("templates"));
    values
}

/// The chart's template files (under `templates/`, in name order), joined:
/// what core reads an empty tag's default from. A file that cannot be read is
/// passed over (helm reports a broken chart); links are not followed.
fn templates(dir: &Path) -> String {
    let mut out = String::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                if let Ok(bytes) = crate::fs_source::read_bounded(&entry.path()) {
                    out.push_str(&String::from_utf8_lossy(&bytes));
                    out.push('\n');
                }
            }
        }
    }
    out
}

/// Each dependency of the chart in `dir` (shown as `shown`) by the key its values sit under
/// in the parent's (its alias, else its name), with its own values.yaml when berth can read
/// it: a `file://` source inside the project, or a subchart directory under `charts/`.
fn dependencies(
    project: &Project,
    dir: &Path,
    shown: &str,
    meta: Option<&Node>,
) -> Vec<(String, Option<(Layer, Node)>)> {
    let mut dependencies = Vec::new();
    // The key a dependency's values sit under: its alias, else its name.
    let mut keys: Vec<(String, String)> = Vec::new(); // (name, key)
    for dependency in meta
        .and_then(|m| m.get("dependencies"))
        .and_then(Node::as_seq)
        .unwrap_or_default()
    {
        let text = |k: &str| dependency.get(k).and_then(Node::as_str).map(str::to_string);
        let Some(name) = text("name") else { continue };
        let key = text("alias").unwrap_or_else(|| name.clone());
        // A `file://` dependency's source: `helm dependency build` packs it into
        // `charts/NAME-VERSION.tgz`, which berth does not open; its source is the same chart.
        let source = text("repository")
            .and_then(|r| r.strip_prefix("file://").map(str::to_string))
            .map(|path| lexical(&dir.join(path)))
            .filter(|path| crate::fs_source::contained(&project.dir, path).is_ok());
        if let Some(source) = source {
            let shown = (source.strip_prefix(&project.dir).unwrap_or(&source)).display();
            let own = document(&source.join("values.yaml"))
                .map(|t| (Layer::File(format!("{shown}/values.yaml")), t));
            if own.is_some() {
                dependencies.push((key, own));
                continue;
            }
        }
        keys.push((name, key));
    }
    let mut subcharts: Vec<_> = std::fs::read_dir(dir.join("charts"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    subcharts.sort();
    for sub in subcharts {
        let Some(name) = document(&sub.join("Chart.yaml"))
            .and_then(|m| m.get("name").and_then(Node::as_str).map(str::to_string))
        else {
            continue;
        };
        let own = document(&sub.join("values.yaml")).map(|t| {
            let dir = sub
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (Layer::File(format!("{shown}/charts/{dir}/values.yaml")), t)
        });
        let aliases: Vec<&String> = keys
            .iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, k)| k)
            .collect();
        if aliases.is_empty() {
            dependencies.push((name, own));
        } else {
            for key in aliases {
                dependencies.push((key.clone(), own.clone()));
            }
        }
    }
    for (_, key) in keys {
        if !dependencies.iter().any(|(k, _)| *k == key) {
            dependencies.push((key, None));
        }
    }
    dependencies
}

/// `a/b/../c` as `a/c`: one spelling of a file two charts share (`file://../routerlib`), so
/// a warning about it is said once.
fn lexical(path: &Path) -> std::path::PathBuf {
    let mut out = std::path::PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The first YAML document of a file berth may read, if it is one.
fn document(path: &Path) -> Option<Node> {
    let bytes = crate::fs_source::read_bounded(path).ok()?;
    first(&String::from_utf8_lossy(&bytes))
}

fn first(text: &str) -> Option<Node> {
    berth_yaml::load_all(text, Limits::default())
        .ok()?
        .into_iter()
        .next()
}
