//! `berth outdated` and `berth update` (#50) against a real registry: tags
//! ordered as versions, a tag pushed again after `berth pin`, a family whose
//! XPU build lacks the newest release; and every copy of a default moved with
//! berth.yaml, so that `validate --strict` stays green.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking

use crate::common;

use std::fs;
use std::path::Path;

use common::registry::{Layout, TestRegistry};
use common::{berth, project};

/// The registry of the "done when": web's releases among tags that are
/// no versions, api's tag pushed again later, and the model server's family.
fn registry() -> TestRegistry {
    let registry = TestRegistry::start(None);
    let image = Layout::image("updates", 1, 64);
    for tag in [
        "v1.2.0",
        "v1.3.0",
        "v1.10.0",
        "v2.0.0-rc1",
        "latest",
        "sha-3f2a9c1",
    ] {
        registry.push(&image, "acme/web", tag);
    }
    registry.push(&image, "acme/api", "v3.1.0");
    for tag in ["v0.7.0", "v0.7.1", "v0.8.0"] {
        registry.push(&image, "llm-d/cuda", tag);
    }
    for tag in ["v0.7.0", "v0.7.1"] {
        registry.push(&image, "llm-d/xpu", tag);
    }
    registry
}

fn tree(registry: &TestRegistry) -> tempfile::TempDir {
    let host = &registry.host;
    let dir = project(&format!(
        "name: shop\nmanifests:\n  - kustomize: deploy\nimages:\n  web:\n    image: {host}/acme/web:v1.3.0 # the storefront\n  api:\n    image: \"{host}/acme/api:v3.1.0\"\n  modelserver:\n    image: {host}/llm-d/cuda:v0.7.0\n    deployed: false\n    variants:\n      xpu: {{image: {host}/llm-d/xpu}}\n"
    ));
    let root = dir.path();
    fs::write(root.join("Makefile"), format!("REG ?= {host}/acme\nWEB_TAG ?= v1.3.0\nWEB_IMAGE ?= $(REG)/web:$(WEB_TAG)\n\nall:\n\t@echo $(WEB_IMAGE)\n")).unwrap();
    fs::create_dir(root.join("deploy")).unwrap();
    fs::write(
        root.join("deploy/kustomization.yaml"),
        format!("resources: [web.yaml]\nimages:\n  - name: {host}/acme/web\n    newTag: v1.3.0   # bumped by hand until now\n  - name: {host}/llm-d/xpu\n    newTag: v0.7.0\n"),
    )
    .unwrap();
    fs::write(
        root.join("deploy/web.yaml"),
        format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web}}\nspec:\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n      containers:\n        - {{name: web, image: {host}/acme/web:dev}}\n        - {{name: api, image: {host}/acme/api:v3.1.0}}\n"),
    )
    .unwrap();
    dir
}

fn run(root: &Path, registry: &TestRegistry, args: &[&str]) -> (Option<i32>, String, String) {
    let out = berth(root)
        .args(args)
        .args(["--insecure-registry", &registry.host])
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
#[cfg_attr(
    not(all(feature = "test-registry", feature = "test-tools")),
    ignore = "needs test-registry and test-tools (run scripts/test)"
)]
fn outdated_names_the_newest_the_republished_and_the_lagging_and_update_moves_every_copy() {
    common::require_program(common::Group::Tools, "kubectl");
    let registry = registry();
    let dir = tree(&registry);
    let root = dir.path();
    let (code, _, stderr) = run(root, &registry, &["pin"]);
    assert_eq!(code, Some(0), "{stderr}");
    // api:v3.1.0 pushed again after the pin, with other content.
    registry.push(&Layout::image("rebuilt", 1, 64), "acme/api", "v3.1.0");

    let (code, table, stderr) = run(root, &registry, &["outdated", "--exit-code"]);
    assert_eq!(code, Some(1), "{stderr}");
    let line = |start: &str| {
        table
            .lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("{start}: {table}"))
            .to_string()
    };
    let words = |start: &str| {
        line(start)
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        words("web ")[..],
        ["web", "-", "v1.3.0", "v1.10.0", "outdated"],
        "{table}"
    );
    assert!(
        line("api ").contains("up to date; republished: berth.lock has sha256:"),
        "{table}"
    );
    assert!(
        line("modelserver  -").contains("moves the family to v0.7.1"),
        "{table}"
    );
    assert!(line("modelserver  xpu").contains("lacks v0.8.0"), "{table}");
    let (_, json, _) = run(root, &registry, &["outdated", "--output", "json", "--pre"]);
    let rows: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(rows[0]["newest"], "v2.0.0-rc1", "{json}");
    assert!(rows[1]["republished"]["registry"]
        .as_str()
        .unwrap()
        .starts_with("sha256:"));

    // Refused: the XPU build has no v0.8.0.
    let (code, _, stderr) = run(
        root,
        &registry,
        &["update", "modelserver", "--to", "v0.8.0"],
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("variant(s) `xpu` (v0.8.0)"), "{stderr}");

    let before = fs::read_to_string(root.join("berth.yaml")).unwrap();
    let (code, diff, stderr) = run(root, &registry, &["update", "web", "--dry-run"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        diff.contains("-    image: 127.0.0.1")
            && diff.contains("acme/web:v1.10.0 # the storefront"),
        "{diff}"
    );
    assert!(
        diff.contains("+WEB_TAG ?= v1.10.0")
            && diff.contains("+    newTag: v1.10.0   # bumped by hand until now"),
        "{diff}"
    );
    assert_eq!(
        fs::read_to_string(root.join("berth.yaml")).unwrap(),
        before,
        "a dry run writes nothing"
    );

    let lock_before = fs::read_to_string(root.join("berth.lock")).unwrap();
    let (code, _, stderr) = run(root, &registry, &["update", "web"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "moved `web` v1.3.0 → v1.10.0 (berth.yaml:6, Makefile:2, deploy/kustomization.yaml:4)"
        ),
        "{stderr}"
    );
    let after = fs::read_to_string(root.join("berth.yaml")).unwrap();
    let changed: Vec<(&str, &str)> = before
        .lines()
        .zip(after.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(changed.len(), 1, "{after}");
    assert!(
        changed[0].1.ends_with("acme/web:v1.10.0 # the storefront"),
        "{after}"
    );
    let lock = fs::read_to_string(root.join("berth.lock")).unwrap();
    assert!(
        lock.contains("acme/web:v1.10.0") && !lock.contains("acme/web:v1.3.0"),
        "{lock}"
    );
    // Only the moved component is pinned again: api keeps its (now republished) digest.
    let api = |text: &str| {
        text.lines()
            .skip_while(|l| !l.contains("acme/api"))
            .nth(1)
            .map(str::to_string)
    };
    assert_eq!(api(&lock), api(&lock_before), "{lock}");
    let (code, _, stderr) = run_plain(root, &["validate", "--strict"]);
    assert_eq!(code, Some(0), "{stderr}");

    // Without --to the family moves to the newest every variant has.
    let (code, _, stderr) = run(root, &registry, &["update", "modelserver"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(fs::read_to_string(root.join("berth.yaml"))
        .unwrap()
        .contains("llm-d/cuda:v0.7.1"));
    // The XPU build follows the family: its kustomization `newTag:` moved with it.
    let kustomization = fs::read_to_string(root.join("deploy/kustomization.yaml")).unwrap();
    assert!(
        kustomization.ends_with("llm-d/xpu\n    newTag: v0.7.1\n"),
        "{kustomization}"
    );
}

fn run_plain(root: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = berth(root).args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A chart's own values and a `values:` file that hold the default at the
/// component's `helmValues:` paths move with berth.yaml; a values line that
/// holds the old tag twice is named, not guessed at, and the rest still moves.
#[test]
#[cfg_attr(
    not(feature = "test-registry"),
    ignore = "needs test-registry (run scripts/test)"
)]
fn update_moves_the_chart_values_and_names_a_copy_it_cannot_move() {
    let registry = registry();
    let host = &registry.host;
    let dir = project(&format!(
        "name: shop\nmanifests:\n  - helm: {{chart: chart, release: shop, values: [prod.values.yaml], set: {{image: {{tag: v1.3.0}}}}}}\nimages:\n  web:\n    image: {host}/acme/web:v1.3.0\n    helmValues: {{repository: image.repository, tag: image.tag}}\n"
    ));
    let root = dir.path();
    fs::create_dir(root.join("chart")).unwrap();
    fs::write(
        root.join("chart/Chart.yaml"),
        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
    )
    .unwrap();
    fs::write(
        root.join("chart/values.yaml"),
        format!("image:\n  repository: {host}/acme/web\n  tag: \"v1.3.0\"\n"),
    )
    .unwrap();
    fs::write(
        root.join("prod.values.yaml"),
        "image: {tag: v1.3.0}  # was v1.3.0 in March\n",
    )
    .unwrap();
    let (code, diff, stderr) = run(root, &registry, &["update", "--dry-run"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(diff.contains("+  tag: \"v1.10.0\""), "{diff}");
    assert!(
        diff.contains("+    image: 127.0.0.1") && diff.contains("acme/web:v1.10.0"),
        "{diff}"
    );
    assert!(
        stderr.contains(
            "prod.values.yaml:1:14: the chart value `image.tag`: `v1.3.0` is written 2 times there"
        ),
        "{stderr}"
    );
    assert!(!diff.contains("--- a/prod.values.yaml"), "{diff}");
    // berth.yaml's own `set:` holds the tag too: it moves with `image:`.
    assert!(
        diff.contains("+  - helm: {chart: chart, release: shop, values: [prod.values.yaml], set: {image: {tag: v1.10.0}}}"),
        "{diff}"
    );
}

/// `update --to` moves one component: with none or two it is a usage error (exit 2).
#[test]
fn update_to_with_other_than_one_component_is_a_usage_error() {
    let dir = project("name: shop\nimages:\n  web: {image: ghcr.io/acme/web:v1}\n  api: {image: ghcr.io/acme/api:v1}\n");
    for args in [
        &["update", "--to", "v2"][..],
        &["update", "web", "api", "--to", "v2"],
    ] {
        let (code, stdout, stderr) = run_plain(dir.path(), args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        assert!(
            stderr.contains("--to names one version of one component: give exactly one COMPONENT (`berth update web --to v1.10.0`)"),
            "{stderr}"
        );
    }
}

/// `[lock-stale]`: a tag bumped in berth.yaml (by hand or by a bot) without
/// `berth pin` leaves berth.lock pinning the old one; validate says so, and only then.
#[test]
fn validate_warns_when_the_lock_pins_a_tag_berth_yaml_no_longer_names() {
    let digest = format!("sha256:{}", "b".repeat(64));
    let dir = project(
        "name: shop\nimages:\n  web: {image: 'quay.io/acme/web:v1.10.0', deployed: false}\n",
    );
    let root = dir.path();
    let lock = |tag: &str| {
        format!("version: 1\nimages:\n- component: web\n  image: quay.io/acme/web:{tag}\n  digest: {digest}\n")
    };
    fs::write(root.join("berth.lock"), lock("v1.10.0")).unwrap();
    let (code, _, stderr) = run_plain(root, &["validate", "--strict"]);
    assert_eq!(code, Some(0), "{stderr}");
    fs::write(root.join("berth.lock"), lock("v1.3.0")).unwrap();
    let (code, _, stderr) = run_plain(root, &["validate", "--strict"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("berth.lock pins `quay.io/acme/web:v1.3.0` for component `web`, but berth.yaml now gives it `quay.io/acme/web:v1.10.0`")
            && stderr.contains("[lock-stale]"),
        "{stderr}"
    );
}

/// A component's own version scheme (`versions.pattern`) orders its line of
/// builds and ignores the rest; a registry that is down is one error naming
/// the repository, with nothing printed.
#[test]
#[cfg_attr(
    not(feature = "test-registry"),
    ignore = "needs test-registry (run scripts/test)"
)]
fn a_pattern_orders_a_line_of_builds_and_a_registry_that_is_down_is_named() {
    let registry = TestRegistry::start(None);
    let image = Layout::image("pattern", 1, 64);
    for tag in [
        "v0.9.0-ubuntu2404",
        "v0.10.0-ubuntu2404",
        "v0.11.0",
        "v0.12.0-ubuntu2204",
    ] {
        registry.push(&image, "acme/ms", tag);
    }
    let host = &registry.host;
    let dir = project(&format!(
        "name: p\nimages:\n  ms:\n    image: {host}/acme/ms:v0.9.0-ubuntu2404\n    versions: {{pattern: 'v(\\d+)\\.(\\d+)\\.(\\d+)-ubuntu2404'}}\n"
    ));
    let (code, json, stderr) = run(dir.path(), &registry, &["outdated", "--output", "json"]);
    assert_eq!(code, Some(0), "{stderr}");
    let rows: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(rows[0]["newest"], "v0.10.0-ubuntu2404", "{json}");
    assert_eq!(rows[0]["update"], "v0.10.0-ubuntu2404", "{json}");

    let down = common::registry::free_port();
    let dir = project(&format!(
        "name: p\nimages:\n  ms: {{image: '127.0.0.1:{down}/acme/ms:v1.0.0'}}\n"
    ));
    let out = berth(dir.path())
        .args([
            "outdated",
            "--insecure-registry",
            &format!("127.0.0.1:{down}"),
            "--timeout",
            "5",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot read the tags of 127.0.0.1:{down}/acme/ms")),
        "{stderr}"
    );
    assert!(
        out.stdout.is_empty(),
        "nothing is printed when a registry is down"
    );
}
