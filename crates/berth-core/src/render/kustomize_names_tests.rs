//! Table tests of [`super::kustomize_names`]: suffixes `kubectl kustomize` (v5)
//! printed for a `configMapGenerator` of `run.py` holding `IMAGE = "ghcr.io/acme/api:v1"`
//! (`code-dgg547g892`) and the same with `:v2` (`code-d49g7f5mt6`).

use std::collections::HashMap;
use std::path::PathBuf;

use super::*;
use crate::project;
use crate::resolve::{resolve, Overrides};

const PROJECT: &str = r#"
name: demo
images:
  api: {image: 'ghcr.io/acme/api:v1', env: API_IMAGE}
imagePaths:
  - {kind: ConfigMap, path: 'data["run.py"]'}
configPaths:
  - {kind: Hook, path: spec.code}
"#;

const CODE: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: NAME}\ndata:\n  run.py: |\n    IMAGE = \"ghcr.io/acme/api:v1\"\n";

const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: ghcr.io/acme/api:v1, envFrom: [{configMapRef: {name: NAME}}]}]\n  volumes: [{name: v, configMap: {name: NAME}}]\n";

const HOOK: &str = "apiVersion: acme.io/v1\nkind: Hook\nmetadata: {name: h}\nspec: {code: NAME}\n";

fn render_with(src: &str, api_image: Option<&str>) -> String {
    rendered(src, api_image).0
}

/// The output and the render's warnings, as text.
fn rendered(src: &str, api_image: Option<&str>) -> (String, Vec<String>) {
    let project = project::parse("berth.yaml", PathBuf::from("/p"), PROJECT).unwrap();
    let env: HashMap<String, String> = api_image
        .map(|image| ("API_IMAGE".to_string(), image.to_string()))
        .into_iter()
        .collect();
    let resolution = resolve(&project, &Overrides::default(), &|k| env.get(k).cloned()).unwrap();
    let spec = Spec::from_project(&project, &resolution, &[], &Options::default()).unwrap();
    let out = render(&spec, &[Input::text("in.yaml", src)]).unwrap_or_else(|e| panic!("{e}"));
    let warnings = out.findings.warnings(&project, &resolution);
    (out.yaml, warnings.iter().map(ToString::to_string).collect())
}

fn docs(parts: &[&str], name: &str) -> String {
    parts
        .iter()
        .map(|p| p.replace("NAME", name))
        .collect::<Vec<_>>()
        .join("---\n")
}

#[test]
fn a_rewritten_generated_configmap_is_renamed_and_its_references_follow() {
    // (objects in input order, override, names expected in output order)
    let moved = Some("ghcr.io/acme/api:v2");
    let cases: &[(&[&str], Option<&str>, &[&str])] = &[
        // No override: the text is unchanged, and so is the name.
        (&[CODE, POD, HOOK], None, &["code-dgg547g892"; 4]),
        // kustomize's order: the ConfigMap first.
        (&[CODE, POD, HOOK], moved, &["code-d49g7f5mt6"; 4]),
        // A workload and a custom resource before it: held back, in their order.
        (&[POD, HOOK, CODE], moved, &["code-d49g7f5mt6"; 4]),
    ];
    for (parts, image, names) in cases {
        let out = render_with(&docs(parts, "code-dgg547g892"), *image);
        let found: Vec<&str> = out
            .lines()
            .filter_map(|l| l.split_once("code-").map(|(_, s)| &s[..10]))
            .collect();
        let expected: Vec<String> = names.iter().map(|n| n[5..].to_string()).collect();
        assert_eq!(found, expected, "{out}");
        let kinds: Vec<&str> = out
            .lines()
            .filter_map(|l| l.strip_prefix("kind: "))
            .collect();
        let order: Vec<&str> = parts
            .iter()
            .map(|p| p.lines().nth(1).unwrap().strip_prefix("kind: ").unwrap())
            .collect();
        assert_eq!(kinds, order, "the input's order is kept: {out}");
    }
}

#[test]
fn names_berth_cannot_prove_are_kustomizes_are_left_alone() {
    let moved = Some("ghcr.io/acme/api:v2");
    // A suffix of the right shape that is not this content's hash (edited after
    // kustomize named it), and a name with no suffix.
    for name in ["code-dgg547g893", "code-settings", "code"] {
        let out = render_with(&docs(&[CODE, POD, HOOK], name), moved);
        assert_eq!(out.matches(&format!("{name}\n")).count(), 4, "{out}");
        assert!(out.contains("ghcr.io/acme/api:v2\"\n"), "rewritten: {out}");
    }
    // Another namespace's reference to the same name is another ConfigMap.
    let elsewhere = POD.replace("name: p}", "name: p, namespace: other}");
    let out = render_with(&docs(&[CODE, &elsewhere], "code-dgg547g892"), moved);
    assert!(out.contains("name: code-d49g7f5mt6\n"), "{out}");
    assert_eq!(out.matches("name: code-dgg547g892").count(), 2, "{out}");
}

/// A repository spelt alone in text is moved, and the program appends its own
/// tag: berth says so when it writes another tag than the default, or a digest,
/// and only then.
#[test]
fn a_repository_spelt_alone_is_named_when_berths_tag_cannot_reach_it() {
    let bare = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: code}\ndata:\n  run.py: |\n    IMAGE = \"ghcr.io/acme/api\" + \":\" + VERSION\n";
    let digest = format!("ghcr.io/acme/api:v1@sha256:{}", "a".repeat(64));
    let cases: &[(Option<&str>, usize)] = &[
        (None, 0),
        (Some("ghcr.io/acme/api:v1"), 0),
        (Some("quay.io/me/api:v1"), 0),
        (Some("ghcr.io/acme/api:v2"), 1),
        (Some(digest.as_str()), 1),
    ];
    for (image, expected) in cases {
        let (out, warnings) = rendered(bare, *image);
        let untagged: Vec<&String> = warnings
            .iter()
            .filter(|w| w.contains("without a tag"))
            .collect();
        assert_eq!(untagged.len(), *expected, "{image:?}: {warnings:?}\n{out}");
        if let Some(w) = untagged.first() {
            assert!(w.starts_with("in.yaml:6:14 (ConfigMap/code): "), "{w}");
        }
    }
}
