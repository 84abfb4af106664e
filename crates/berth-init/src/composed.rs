//! An image as its chart renders it. A chart's values may hold only part of an
//! image: Kubeflow's katib chart writes `controller.image.repository:
//! katib-controller` and joins it to `global.imageRegistry:
//! ghcr.io/kubeflow/katib` in its templates, and defaults an empty tag to
//! `global.imageTag`, not to its appVersion. Read alone, the values name
//! `docker.io/library/katib-controller:<appVersion>`, and berth writing that
//! whole repository back into `repository` renders
//! `ghcr.io/kubeflow/katib/docker.io/library/katib-controller`. So init
//! compares each image its values hold with what the chart renders with its
//! own values: the rendered image is the component's, and `helmValues:` names
//! the value that holds the prefix (`registry:`) beside the one that holds the
//! name (`name:`).

use berth_ref::Reference;
use berth_yaml::{Limits, Node};

use crate::charts::ValuesImage;

/// Every image a chart's output names on an `image:` line: objects' fields
/// and the YAML a ConfigMap embeds (katib's suggestion images), in order.
pub(super) fn rendered_images(output: &str) -> Vec<Reference> {
    let mut out: Vec<Reference> = Vec::new();
    for line in output.lines() {
        let line = line.trim_start().trim_start_matches("- ");
        let Some(value) = line.strip_prefix("image:") else {
            continue;
        };
        let value = value.trim().trim_matches(['"', '\'']);
        if let Ok(reference) = Reference::parse(value) {
            if !out.contains(&reference) {
                out.push(reference);
            }
        }
    }
    out
}

/// `image`, from the values `values` (the chart's values.yaml text), as the
/// chart renders it (`rendered`): the rendered tag when the chart renders its
/// repository; when it renders its repository value only as the end of
/// another repository, that image, with `helmValues:` that can set it.
/// Whether the chart renders it at all.
pub(super) fn as_rendered(
    image: &mut ValuesImage,
    values: &str,
    rendered: &[Reference],
    notes: &mut Vec<String>,
) -> bool {
    if rendered.is_empty() {
        return false;
    }
    if let Some(same) = rendered
        .iter()
        .find(|r| r.repository() == image.reference.repository())
    {
        if same.tag() != image.reference.tag() && image.reference.digest().is_none() {
            let guessed = format!("{}: no tag:", image.at);
            notes.retain(|note| !note.starts_with(&guessed));
            notes.push(format!(
                "{}: the chart renders `{same}` with its own values: that tag is the default",
                image.at
            ));
            image.reference = same.clone();
        }
        return true;
    }
    let Some(root) = berth_yaml::load_all(values, Limits::default())
        .ok()
        .and_then(|docs| docs.into_iter().next())
    else {
        return false;
    };
    let Some((_, name_path)) = (image.helm_values.iter()).find(|(part, _)| *part == "repository")
    else {
        return false;
    };
    let Some(name) = lookup(&root, name_path).map(|n| n.trim_matches('/').to_string()) else {
        return false;
    };
    let suffix = format!("/{name}");
    let mut joined = rendered
        .iter()
        .filter(|r| r.repository().to_string().ends_with(&suffix));
    let (Some(found), None) = (joined.next(), joined.next()) else {
        return false; // none, or several: nothing says which
    };
    let repository = found.repository().to_string();
    let prefix = &repository[..repository.len() - suffix.len()];
    let registry = holding(&root, "", prefix);
    let name_path = name_path.clone();
    let mut parts: Vec<(&'static str, String)> = (image.helm_values.iter())
        .filter(|(part, _)| matches!(*part, "tag" | "digest"))
        .cloned()
        .collect();
    let split = match (&registry, name.contains('/'), prefix.contains('/')) {
        (Some(path), false, _) => Some(vec![("registry", path.clone()), ("name", name_path)]),
        (Some(path), true, false) => {
            Some(vec![("registry", path.clone()), ("repository", name_path)])
        }
        (None, false, _) => Some(vec![("name", name_path)]),
        _ => None,
    };
    let at = &image.at;
    // What the values alone suggested of its tag (the appVersion) is not so.
    let guessed = format!("{at}: no tag:");
    notes.retain(|note| !note.starts_with(&guessed));
    match split {
        Some(mut split) => {
            split.append(&mut parts);
            image.helm_values = split;
            let from = registry.map_or("its templates".to_string(), |p| format!("`{p}`"));
            notes.push(format!("{at}: the chart joins `{name}` to `{prefix}` (from {from}) and renders `{found}`: that is the image, and berth sets both values"));
        }
        None => {
            image.helm_values.clear();
            notes.push(format!("{at}: the chart joins `{name}` to `{prefix}` and renders `{found}`; no `helmValues:` split writes both, so berth rewrites the rendered `image:` fields instead"));
        }
    }
    image.reference = found.clone();
    true
}

/// `image`, which the chart does not render with its own values (a part its
/// values leave disabled), when a template line joins its one-component
/// repository value to another value that holds a registry prefix (the line
/// that renders model-registry's controller: `"registry" .Values.global.imageRegistry
/// "repository" .Values.controller.image.repository`): that prefix and the
/// name, with `helmValues:` that set both.
pub(super) fn joined_in_templates(
    image: &mut ValuesImage,
    values: &str,
    templates: &str,
    notes: &mut Vec<String>,
) {
    let Some(root) = berth_yaml::load_all(values, Limits::default())
        .ok()
        .and_then(|docs| docs.into_iter().next())
    else {
        return;
    };
    let Some((_, name_path)) = (image.helm_values.iter()).find(|(part, _)| *part == "repository")
    else {
        return;
    };
    let Some(name) = lookup(&root, name_path).filter(|n| !n.is_empty() && !n.contains('/')) else {
        return;
    };
    let needle = format!(".Values.{name_path}");
    // A value used just before the name: on its line (`"registry" .Values.global.imageRegistry
    // "repository" .Values.x.repository`) or the lines of a helper just above it
    // (`$registry := …` then `$repository := …`); a tag or version after it is no prefix.
    let lines: Vec<&str> = templates.lines().collect();
    let before: Vec<String> = (0..lines.len())
        .filter_map(|i| {
            let line = lines[i];
            let (at, _) =
                (line.match_indices(&needle)).find(|(at, _)| mentions(&line[*at..], &needle))?;
            let above = lines[i.saturating_sub(3)..i].join("\n");
            Some(format!("{above}\n{}", &line[..at]))
        })
        .collect();
    let prefix = (before.iter())
        .flat_map(|before| before.split(".Values.").skip(1))
        .map(|rest| {
            let end = rest.find(|c: char| !(c.is_alphanumeric() || matches!(c, '.' | '_')));
            rest[..end.unwrap_or(rest.len())].trim_end_matches('.')
        })
        .filter(|other| {
            let key = other
                .rsplit('.')
                .next()
                .unwrap_or(other)
                .to_ascii_lowercase();
            !key.ends_with("tag") && !key.ends_with("version")
        })
        .find_map(|other| {
            let value = lookup(&root, other)?;
            let value = value.trim_end_matches('/');
            let joined = Reference::parse(&format!("{value}/{name}")).ok()?;
            (value.contains(['.', '/']) && joined.domain() != "docker.io")
                .then(|| (other.to_string(), value.to_string()))
        });
    let Some((registry, prefix)) = prefix else {
        return;
    };
    let tail = image.reference.to_string();
    let tail = tail.rsplit('/').next().unwrap_or(&tail); // `controller:0.1.0`
    let Ok(reference) = Reference::parse(&format!("{prefix}/{tail}")) else {
        return;
    };
    let mut parts = vec![("registry", registry.clone()), ("name", name_path.clone())];
    parts.extend(
        (image.helm_values.iter())
            .filter(|(part, _)| matches!(*part, "tag" | "digest"))
            .cloned(),
    );
    notes.push(format!("{}: the chart does not render `{name}` with its own values, and its templates join it to `{registry}` (`{prefix}`): berth takes it as `{reference}` and sets both values", image.at));
    image.helm_values = parts;
    image.reference = reference;
}

/// Whether `line` uses the value `needle` (`.Values.a.b`) itself, not a longer path.
fn mentions(line: &str, needle: &str) -> bool {
    line.match_indices(needle).any(|(at, _)| {
        !line[at + needle.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || matches!(c, '.' | '_'))
    })
}

/// The string at the dotted `path` of `root`.
fn lookup(root: &Node, path: &str) -> Option<String> {
    berth_core::render::lookup(root, path)?
        .as_str()
        .map(str::to_string)
}

/// The dotted path of the first string value under `node` equal to `text`
/// (mappings only: a values path cannot name a list entry).
fn holding(node: &Node, path: &str, text: &str) -> Option<String> {
    if node
        .as_str()
        .is_some_and(|s| s.trim_end_matches('/') == text)
    {
        return Some(path.to_string());
    }
    for (key, value) in node.as_map()? {
        let Some(key) = key.as_str().filter(|k| !k.contains(['.', '[', ']'])) else {
            continue;
        };
        let child = if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        };
        if let Some(found) = holding(value, &child, text) {
            return Some(found);
        }
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn image(reference: &str, parts: &[(&'static str, &str)]) -> ValuesImage {
        ValuesImage {
            reference: Reference::parse(reference).unwrap(),
            at: "charts/katib/values.yaml:9:17".into(),
            helm_values: parts.iter().map(|(p, v)| (*p, v.to_string())).collect(),
        }
    }

    const VALUES: &str = "global:\n  imageRegistry: ghcr.io/kubeflow/katib\n  imageTag: v0.19.0\ncontroller:\n  image:\n    repository: katib-controller\n    tag: ''\nui:\n  image:\n    repository: kubeflow/katib-ui\n    tag: ''\nweb:\n  image:\n    repository: ghcr.io/acme/web\n    tag: ''\n";

    #[test]
    fn a_name_joined_to_a_registry_value_is_the_rendered_image_with_both_values() {
        let rendered = rendered_images(
            "kind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n      - image: ghcr.io/kubeflow/katib/katib-controller:v0.19.0\n        name: c\n---\nkind: ConfigMap\ndata:\n  config: |\n    image: \"docker.io/kubeflow/katib-ui:v0.19.0\"\n    - image: ghcr.io/acme/web:v2\n",
        );
        assert_eq!(rendered.len(), 3);
        let mut notes = Vec::new();
        // (values image, its helmValues, the image, its helmValues after)
        type Parts<'a> = &'a [(&'a str, &'a str)];
        let cases: &[(&str, Parts, &str, Parts)] = &[
            (
                "docker.io/library/katib-controller:0.16.0",
                &[
                    ("repository", "controller.image.repository"),
                    ("tag", "controller.image.tag"),
                ],
                "ghcr.io/kubeflow/katib/katib-controller:v0.19.0",
                &[
                    ("registry", "global.imageRegistry"),
                    ("name", "controller.image.repository"),
                    ("tag", "controller.image.tag"),
                ],
            ),
            (
                // a path after a registry host: the split berth already has
                "docker.io/kubeflow/katib-ui:0.16.0",
                &[("repository", "ui.image.repository")],
                "docker.io/kubeflow/katib-ui:v0.19.0",
                &[("repository", "ui.image.repository")],
            ),
            (
                // the chart renders its repository: only the tag is its default
                "ghcr.io/acme/web:0.16.0",
                &[
                    ("repository", "web.image.repository"),
                    ("tag", "web.image.tag"),
                ],
                "ghcr.io/acme/web:v2",
                &[
                    ("repository", "web.image.repository"),
                    ("tag", "web.image.tag"),
                ],
            ),
        ];
        for (values_image, parts, want, want_parts) in cases {
            let mut found = image(values_image, parts);
            as_rendered(&mut found, VALUES, &rendered, &mut notes);
            assert_eq!(found.reference.to_string(), *want);
            let got: Vec<(&str, &str)> = (found.helm_values.iter())
                .map(|(p, v)| (*p, v.as_str()))
                .collect();
            assert_eq!(got, *want_parts, "{values_image}");
        }
        assert!(
            notes[0].contains("joins `katib-controller` to `ghcr.io/kubeflow/katib` (from `global.imageRegistry`)"),
            "{notes:?}"
        );
    }

    #[test]
    fn a_prefix_no_value_holds_leaves_the_name_alone_and_two_candidates_nothing() {
        let mut notes = Vec::new();
        let rendered = rendered_images("image: quay.io/fixed/katib-controller:v1\n");
        let mut found = image(
            "docker.io/library/katib-controller:0.16.0",
            &[("repository", "controller.image.repository")],
        );
        as_rendered(&mut found, VALUES, &rendered, &mut notes);
        assert_eq!(
            found.reference.to_string(),
            "quay.io/fixed/katib-controller:v1"
        );
        assert_eq!(
            found.helm_values,
            [("name", "controller.image.repository".to_string())]
        );
        let two =
            rendered_images("image: a.io/x/katib-controller:1\nimage: b.io/y/katib-controller:1\n");
        let mut found = image(
            "docker.io/library/katib-controller:0.16.0",
            &[("repository", "controller.image.repository")],
        );
        as_rendered(&mut found, VALUES, &two, &mut notes);
        assert_eq!(
            found.reference.to_string(),
            "docker.io/library/katib-controller:0.16.0"
        );
    }

    #[test]
    fn a_disabled_image_joined_in_a_template_line_takes_the_prefix() {
        let templates = "{{- if .Values.controller.enabled }}\n          image: {{ include \"x.image\" (dict \"registry\" .Values.global.imageRegistry \"repository\" .Values.controller.image.repository \"tag\" (.Values.controller.image.tag | default .Values.global.imageTag)) }}\n          image: {{ .Values.web.image.repository }}:1\n";
        let mut notes = Vec::new();
        let mut found = image(
            "docker.io/library/katib-controller:v0.19.0",
            &[
                ("repository", "controller.image.repository"),
                ("tag", "controller.image.tag"),
            ],
        );
        joined_in_templates(&mut found, VALUES, templates, &mut notes);
        assert_eq!(
            found.reference.to_string(),
            "ghcr.io/kubeflow/katib/katib-controller:v0.19.0"
        );
        let parts: Vec<&str> = found.helm_values.iter().map(|(p, _)| *p).collect();
        assert_eq!(parts, ["registry", "name", "tag"]);
        // A repository written whole is left alone.
        let mut web = image(
            "ghcr.io/acme/web:1",
            &[("repository", "web.image.repository")],
        );
        joined_in_templates(&mut web, VALUES, templates, &mut notes);
        assert_eq!(web.reference.to_string(), "ghcr.io/acme/web:1");
        assert_eq!(notes.len(), 1, "{notes:?}");
        // A tag after the name on its line is no prefix (`postgres:14.5-alpine`).
        let values = "db:\n  image:\n    repository: postgres\n    tag: 14.5-alpine\n";
        let line = "image: {{ .Values.db.image.repository }}:{{ .Values.db.image.tag }}\n";
        let mut db = image(
            "docker.io/library/postgres:14.5-alpine",
            &[
                ("repository", "db.image.repository"),
                ("tag", "db.image.tag"),
            ],
        );
        joined_in_templates(&mut db, values, line, &mut notes);
        assert_eq!(
            db.reference.to_string(),
            "docker.io/library/postgres:14.5-alpine"
        );
    }
}
