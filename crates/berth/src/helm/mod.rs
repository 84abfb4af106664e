//! `helm template` for a `helm:` manifest source: the helm binary on PATH (or
//! `BERTH_HELM`), run with a deadline and a bound on what it prints, given the
//! chart's values files, then one values layer on its stdin: `set:` with the
//! images berth resolved (`helmValues:`) over it. Remote charts pinned in
//! berth.lock: [`charts`].

pub mod charts;
pub mod local;
mod origin;
pub use origin::attribute;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use berth_core::lock::ChartPin;
use berth_core::place::File;
use berth_core::project::HelmChart;
use berth_core::render::{ChartValues, Input};
use berth_core::{Code, Project, Warning};
use berth_yaml::{Limits, Node};

use crate::fs_source::MAX_FILE;

/// How long one `helm template` may take: a remote chart is pulled first.
const TIMEOUT: Duration = Duration::from_secs(120);

/// The helm binary berth runs.
fn binary() -> PathBuf {
    berth_io::env::var_os("BERTH_HELM")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("helm"), PathBuf::from)
}

/// What berth gives the charts it renders.
#[derive(Debug, Clone, Copy, Default)]
pub struct Given<'a> {
    /// Each chart's values layer of resolved images (`helmValues:`): only the paths it has a
    /// place for (`render::for_charts`); `None` for a chart that gets none.
    pub images: &'a [(&'a HelmChart, Option<Node>)],
    /// Under `--locked`, the remote charts berth.lock pins.
    pub locked: Option<&'a [ChartPin]>,
}

/// The chart's output, one input per template (`# Source:` in helm's output),
/// so a message about an object names the template it came from. Under
/// `--locked` a remote chart is the archive berth.lock pins.
pub fn template(
    project: &Project,
    chart: &HelmChart,
    origin: &str,
    given: Given<'_>,
) -> Result<Vec<Input>> {
    let images = (given.images.iter())
        .find(|(c, _)| *c == chart)
        .and_then(|(_, layer)| layer.as_ref());
    let archive = match given.locked {
        Some(pins) if !chart.is_local() => Some(charts::locked_archive(chart, pins, origin)?),
        _ => None,
    };
    let mut command = Command::new(binary());
    command.args(arguments(project, chart, origin, archive.as_deref())?);
    let layer = values_layer(chart, images).map_err(|e| anyhow!("{origin}: {e}"))?;
    let name = output(chart);
    let run = berth_io::run(&mut command, layer.as_bytes(), TIMEOUT, MAX_FILE);
    let output = run.map_err(|e| match e {
        berth_io::RunError::Spawn(e) if e.kind() == std::io::ErrorKind::NotFound => anyhow!(
            "{origin}: a `helm:` source needs helm (3.x or 4.x), which was not found as `{}`; install it (https://helm.sh/docs/intro/install/) or set BERTH_HELM to its path",
            binary().display()
        ),
        e => anyhow!("{origin}: `{name}`: {e}"),
    })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        if stderr.contains("missing in charts/ directory") {
            bail!(
                "{origin}: the `helm:` entry's chart `{}` lists dependencies that are not in its charts/ directory ({}); run `helm dependency build {}` first (berth renders the chart as it is on disk)",
                chart.chart,
                stderr.trim(),
                chart.chart
            );
        }
        bail!(
            "{origin}: `{name}` failed ({}): {}",
            describe_version(),
            stderr.trim()
        );
    }
    let text = String::from_utf8(output.stdout)
        .map_err(|_| anyhow!("{origin}: `{name}` printed something that is not UTF-8"))?;
    Ok(by_template(&chart.chart, &text)
        .into_iter()
        .map(|(file, text)| {
            let mut input = Input::text(file, text);
            input.values_set = images.is_some();
            input.last_key_wins = true;
            input
        })
        .collect())
}

/// What a chart's output is in places and messages (`helm template charts/router`).
fn output(chart: &HelmChart) -> File {
    File::Helm {
        chart: chart.chart.clone(),
        template: None,
    }
}

/// Helm's output of `chart` cut at each `# Source: TEMPLATE` document, each in
/// that template (line numbers then count from its `# Source:` line); output
/// without those comments stays whole.
fn by_template(chart: &str, text: &str) -> Vec<(File, String)> {
    let mut out: Vec<(Option<String>, String)> = Vec::new();
    let mut lines = text.split_inclusive('\n').peekable();
    let mut current: Option<(Option<String>, String)> = None;
    while let Some(line) = lines.next() {
        let next_is_source = lines.peek().is_some_and(|l| l.starts_with("# Source: "));
        if line.trim_end() == "---" && next_is_source {
            out.extend(current.take());
            continue;
        }
        if let Some(template) = line.strip_prefix("# Source: ") {
            if current.as_ref().is_none_or(|(_, t)| !t.is_empty()) {
                out.extend(current.take());
                current = Some((Some(template.trim_end().to_string()), String::new()));
            }
        }
        match &mut current {
            Some((_, body)) => body.push_str(line),
            None => current = Some((None, line.to_string())),
        }
    }
    out.extend(current);
    out.retain(|(_, body)| !body.trim().is_empty());
    if out.is_empty() {
        out.push((None, text.to_string()));
    }
    let chart = chart.to_string();
    (out.into_iter())
        .map(|(template, body)| {
            let chart = chart.clone();
            (File::Helm { chart, template }, body)
        })
        .collect()
}

/// The helm berth ran, for a failure's message (asked only then: a render
/// must not pay a second process): `helm v4.3.2`, or what is wrong with it.
fn describe_version() -> String {
    let mut command = Command::new(binary());
    command.args(["version", "--template", "{{.Version}}"]);
    let version = berth_io::run(&mut command, b"", Duration::from_secs(10), 4096)
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string());
    match version {
        Some(v) if v.starts_with("v3.") || v.starts_with("v4.") => format!("helm {v}"),
        Some(v) => format!(
            "helm {}, which berth does not support: install Helm 3 or 4",
            berth_io::shown(&v)
        ),
        None => format!(
            "`{} version` did not answer: is it Helm 3 or 4?",
            binary().display()
        ),
    }
}

/// `template RELEASE CHART` and its flags; local files checked first. A
/// pinned `archive` stands for a remote chart: nothing is fetched.
fn arguments(
    project: &Project,
    chart: &HelmChart,
    origin: &str,
    archive: Option<&Path>,
) -> Result<Vec<String>> {
    let release = chart
        .release
        .clone()
        .unwrap_or_else(|| project.name.clone());
    let source = match archive {
        Some(archive) => archive.display().to_string(),
        None if chart.is_local() => local(&project.dir, &chart.chart, origin, "chart")?,
        None => chart.chart.clone(),
    };
    let remote = archive.is_none() && !chart.is_local();
    let mut args = vec!["template".to_string(), release, source];
    let mut flag = |name: &str, value: &str| {
        args.push(name.to_string());
        args.push(value.to_string());
    };
    if let (Some(version), true) = (&chart.version, remote) {
        flag("--version", version);
    }
    if let (Some(repository), true) = (&chart.repository, remote) {
        flag("--repo", repository);
    }
    if let Some(namespace) = chart.namespace.as_ref().or(project.namespace.as_ref()) {
        flag("--namespace", namespace);
    }
    if let Some(version) = &chart.kube_version {
        flag("--kube-version", version);
    }
    for api in &chart.api_versions {
        flag("--api-versions", api);
    }
    for values in &chart.values {
        let at = format!("{}:{} (`values:`)", project.file, values.pos);
        flag(
            "--values",
            &local(&project.dir, &values.value, &at, "values file")?,
        );
    }
    // The layer berth writes, on stdin, last.
    flag("--values", "-");
    if chart.include_crds {
        args.push("--include-crds".into());
    }
    if chart.plain_http && remote {
        args.push("--plain-http".into());
    }
    Ok(args)
}

/// `written` relative to the project's directory, which must exist there.
fn local(dir: &Path, written: &str, origin: &str, what: &str) -> Result<String> {
    let path = dir.join(written);
    if !path.exists() {
        bail!("{origin}: the {what} `{written}` does not exist (relative to the directory of berth.yaml)");
    }
    crate::fs_source::contained(dir, &path)
        .map_err(|e| anyhow!("cannot use the {what} `{written}` (from {origin}): {e}"))?;
    Ok(path.display().to_string())
}

/// `set:`, then the image values over it, as one YAML mapping.
fn values_layer(chart: &HelmChart, images: Option<&Node>) -> Result<String> {
    let mut layer = match &chart.set {
        Some(text) => berth_yaml::load_all(text, Limits::default())?
            .into_iter()
            .next()
            .unwrap_or_else(|| Node::map(Default::default())),
        None => Node::map(Default::default()),
    };
    if let Some(images) = images {
        berth_core::render::merge_values(&mut layer, images);
    }
    let mut out = String::new();
    if layer.as_map().is_some_and(|m| !m.is_empty()) {
        berth_yaml::write_document(&mut out, &layer);
    } else {
        out.push_str("{}\n");
    }
    Ok(out)
}

/// Where a values file (or `set:`) gives a chart value that berth sets to
/// something else: the same silent override as a kustomize `newTag`, said
/// once per place (berth's value is the one rendered); and where a chart's own
/// values give a default other than berth.yaml's (`render::default_drift`).
pub fn disagreements(
    project: &Project,
    resolution: &berth_core::Resolution<'_>,
    charts: &[(&HelmChart, ChartValues)],
    images: &[(&HelmChart, Option<Node>)],
) -> Vec<Warning> {
    let mut out = Vec::new();
    for ((_, values), (_, layer)) in charts.iter().zip(images) {
        out.extend(berth_core::render::default_drift(
            values,
            resolution,
            &project.file,
        ));
        for (name, document) in values.given.iter().filter(|(n, _)| n.is_set()) {
            for key in berth_core::render::dotted_keys(document) {
                out.push(Warning::at(Code::DottedKey, name.place(document.pos), format_args!(
                    "`set:` key `{}` holds dots: a values layer reads it as one key of that name, not as the path helm's `--set` reads, so the chart does not see it; write it nested (`{}`)",
                    berth_io::shown(&key), nested_example(&key)
                )));
            }
        }
        let Some(layer) = layer else { continue };
        let wanted = berth_core::render::leaves(layer);
        for (name, document) in &values.given {
            for (key, value) in &wanted {
                let Some(found) = berth_core::render::lookup(document, key) else {
                    continue;
                };
                let Some(text) = found.as_str().filter(|t| t != value) else {
                    continue;
                };
                let layer = if name.is_set() {
                    "the `helm:` entry's `set:`"
                } else {
                    "the values file"
                };
                out.push(Warning::at(Code::ValuesOverride, name.place(found.pos), format_args!(
                    "`{key}` is `{}`, but berth sets it to `{value}` (the image berth.yaml resolves): {layer} is overridden; remove the value there, or change berth.yaml",
                    berth_io::shown(text)
                )));
            }
        }
    }
    out
}

/// `a.b.c` written nested as flow YAML: `a: {b: {c: …}}`.
fn nested_example(path: &str) -> String {
    let keys: Vec<&str> = path.split('.').collect();
    let mut out = format!("{}: …", keys[keys.len() - 1]);
    for key in keys[..keys.len() - 1].iter().rev() {
        out = format!("{key}: {{{out}}}");
    }
    berth_io::shown(&out).to_string()
}

#[cfg(test)]
mod tests {
    use super::by_template;

    #[test]
    fn helm_output_is_cut_at_each_source_comment() {
        let text = "---\n# Source: web/templates/a.yaml\nkind: A\n---\n# Source: web/templates/b.yaml\nkind: B\n---\n# Source: web/templates/b.yaml\nkind: C\n";
        let parts = by_template("web", text);
        let names: Vec<String> = parts.iter().map(|(n, _)| n.to_string()).collect();
        assert_eq!(
            names,
            [
                "helm template web: web/templates/a.yaml",
                "helm template web: web/templates/b.yaml",
                "helm template web: web/templates/b.yaml"
            ]
        );
        assert_eq!(parts[1].1, "# Source: web/templates/b.yaml\nkind: B\n");
        let whole = by_template("x", "kind: A\n");
        let whole: Vec<(String, &str)> = whole
            .iter()
            .map(|(f, t)| (f.to_string(), t.as_str()))
            .collect();
        assert_eq!(whole, [("helm template x".to_string(), "kind: A\n")]);
    }
}
