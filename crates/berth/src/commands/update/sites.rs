//! Every copy of a component's default tag that `validate` compares with
//! berth.yaml, as the edits that move it: berth.yaml's `image:`, the Makefile's
//! defaults, kustomizations' `newTag:` and the chart values files at the
//! component's `helmValues:` paths. Found from the same readings validate makes.

use berth_core::project::HelmPart;
use berth_core::render::{lookup, lookup_under, Layer};
use berth_core::{Component, Project};
use berth_update::Edit;

/// The edits that move component `c` from `old` to `new`, berth.yaml's first.
pub fn edits(project: &Project, c: &Component, old: &str, new: &str) -> Vec<Edit> {
    let edit = |file: String, line: usize, column: usize, what: String| Edit {
        file,
        line,
        column,
        old: old.to_string(),
        new: new.to_string(),
        what,
    };
    let mut out = vec![edit(
        project.file.clone(),
        c.image_pos.line as usize,
        c.image_pos.column as usize,
        format!("`images.{}.image`", c.name),
    )];
    let makefiles = crate::project_file::makefiles(project);
    for site in berth_make::tag_sites(&makefiles, c, old) {
        let what = format!("the Makefile default `{}`", site.variable);
        out.push(edit(site.file, site.line, 1, what));
    }
    // The component's own repository at the family tag, and each variant that follows
    // it at the family tag plus its suffix (`newTag: v0.7.0-arm64` moves too).
    let mut names = vec![(
        c.image.repository().last_component().to_string(),
        String::new(),
    )];
    for variant in c.variants.iter().filter(|v| !v.own_tag()) {
        let suffix = variant.tag_suffix.clone().unwrap_or_default();
        names.push((
            variant.image.repository().last_component().to_string(),
            suffix,
        ));
    }
    let entries = crate::kustomize_origin::entries(project);
    for (last, suffix) in &names {
        let (from, to) = (format!("{old}{suffix}"), format!("{new}{suffix}"));
        for entry in entries
            .iter()
            .filter(|e| e.new_tag.as_deref() == Some(from.as_str()) && e.names(last))
        {
            out.push(Edit {
                file: entry.file.clone(),
                line: entry.pos.line as usize,
                column: entry.pos.column as usize,
                old: from.clone(),
                new: to.clone(),
                what: format!("the kustomization's `newTag:` for `{}`", entry.name),
            });
        }
    }
    for (file, line, column, path) in chart_values(project, c, old) {
        out.push(edit(
            file,
            line,
            column,
            format!("the chart value `{path}`"),
        ));
    }
    // A file reached twice (two profiles, one kustomization) is edited once.
    let mut seen = std::collections::HashSet::new();
    out.retain(|e| seen.insert((e.file.clone(), e.line)));
    out
}

/// The places of the chart values files (a chart's own, a subchart's, a `values:`
/// file) that hold `old` as component `c`'s tag at one of its `helmValues:` paths:
/// `(file, line, column, path)`.
fn chart_values(
    project: &Project,
    c: &Component,
    old: &str,
) -> Vec<(String, usize, usize, String)> {
    let manifests: Vec<berth_core::Manifest> = (project.manifests.iter())
        .chain(project.profiles.iter().flat_map(|p| p.manifests.iter()))
        .cloned()
        .collect();
    let mut out = Vec::new();
    for (_, values) in crate::helm::local::charts(project, &manifests) {
        // The chart's defaults, then the values files given to it (`set:` is
        // berth.yaml's own, below).
        let mut trees = values.defaults();
        trees.extend(values.given.iter().map(|(layer, tree)| ("", layer, tree)));
        for (prefix, layer, tree) in trees {
            let Layer::File(file) = layer else { continue };
            for (part, path) in &c.helm_values {
                let Some(node) = lookup_under(tree, prefix, path) else {
                    continue;
                };
                if holds(c, part, node, old) {
                    let (line, column) = (node.pos.line as usize, node.pos.column as usize);
                    out.push((file.clone(), line, column, path.clone()));
                }
            }
        }
    }
    out.extend(set_values(project, c, old));
    out
}

/// Whether the values `node` at a `part` path of component `c` holds `old` as its tag.
fn holds(c: &Component, part: &HelmPart, node: &berth_yaml::Node, old: &str) -> bool {
    let Some(text) = node.as_str() else {
        return false;
    };
    match part {
        HelmPart::Tag => text == old,
        HelmPart::Image => berth_ref::Reference::parse(text).is_ok_and(|r| {
            r.repository() == c.image.repository() && r.tag().is_some_and(|t| t.as_str() == old)
        }),
        _ => false,
    }
}

/// The places in berth.yaml's own `helm:` entries' `set:` (under `manifests:` or a
/// profile) that hold `old` at one of `c`'s `helmValues:` paths. berth.yaml is read
/// again for its positions: the project keeps `set:` as the text helm is given.
fn set_values(project: &Project, c: &Component, old: &str) -> Vec<(String, usize, usize, String)> {
    let path = project.dir.join(&project.file);
    let Some(tree) = crate::fs_source::read_bounded(&path)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| berth_yaml::load_all(&text, berth_yaml::Limits::default()).ok())
        .and_then(|docs| docs.into_iter().next())
    else {
        // berth.yaml was loaded a moment ago; one that cannot be read now has no sites.
        return Vec::new();
    };
    let mut sets = Vec::new();
    helm_sets(&tree, &mut sets);
    let mut out = Vec::new();
    for set in sets {
        for (part, value_path) in &c.helm_values {
            if let Some(node) = lookup(set, value_path).filter(|n| holds(c, part, n, old)) {
                let (line, column) = (node.pos.line as usize, node.pos.column as usize);
                out.push((project.file.clone(), line, column, value_path.clone()));
            }
        }
    }
    out
}

/// Every `helm: {set: …}` mapping's `set:` below `node`.
fn helm_sets<'n>(node: &'n berth_yaml::Node, out: &mut Vec<&'n berth_yaml::Node>) {
    if let Some(entries) = node.as_map() {
        for (key, value) in entries {
            match value.get("set").filter(|_| key.as_str() == Some("helm")) {
                Some(set) => out.push(set),
                None => helm_sets(value, out),
            }
        }
    } else if let Some(items) = node.as_seq() {
        items.iter().for_each(|item| helm_sets(item, out));
    }
}
