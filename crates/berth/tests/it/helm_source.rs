//! `manifests: [{helm: …}]` with the real helm (built by `scripts/testenv
//! build`): a chart written here shaped like llm-d's router chart (the EPP
//! image in `image.repository`/`image.tag`, copied by the chart into a
//! sidecar's args and a ConfigMap), rendered beside plain manifests; the same
//! output as `helm template` but for the image values berth sets; a values file
//! that pins another tag is a warning that `validate --strict` fails on; berth
//! as Helm 4's post-renderer plugin and as Helm 3's exec-form post-renderer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use crate::common;
use common::testenv::{plane, Plane};

/// The plane's helm 4, run in `dir` with its homes there.
fn helm_in(dir: &Path) -> Command {
    Plane::helm_in(&plane().helm(), dir)
}

const CHART: &str = "apiVersion: v2\nname: router\nversion: 0.1.0\n";
const VALUES: &str = "image:\n  repository: ghcr.io/llm-d/epp\n  tag: v0.3.0\nreplicaCount: 1\n";
const DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-epp
spec:
  replicas: {{ .Values.replicaCount }}
  selector: {matchLabels: {app: epp}}
  template:
    metadata: {labels: {app: epp}}
    spec:
      containers:
        - name: epp
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
        - name: sidecar
          image: busybox:1.36
          args: ["--upstream-image={{ .Values.image.repository }}:{{ .Values.image.tag }}"]
"#;
const CONFIGMAP: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-info
data:
  epp: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
"#;

/// A project with the chart under `charts/router`, a model server as a plain
/// manifest, and `extra` appended to berth.yaml.
fn project(extra: &str) -> tempfile::TempDir {
    let dir = common::project(&format!(
        "name: llm\nregistry: {{env: IMAGE_REGISTRY}}\nmanifests:\n  - helm:\n      chart: charts/router\n      release: router\n  - model.yaml\nimages:\n  epp:\n    image: ghcr.io/llm-d/epp:v0.3.0\n    helmValues: {{repository: image.repository, tag: image.tag}}\n  vllm: {{image: ghcr.io/llm-d/vllm:v0.2.0}}\n{extra}"
    ));
    let chart = dir.path().join("charts/router");
    std::fs::create_dir_all(chart.join("templates")).unwrap();
    std::fs::write(chart.join("Chart.yaml"), CHART).unwrap();
    std::fs::write(chart.join("values.yaml"), VALUES).unwrap();
    std::fs::write(chart.join("templates/deployment.yaml"), DEPLOYMENT).unwrap();
    std::fs::write(chart.join("templates/configmap.yaml"), CONFIGMAP).unwrap();
    std::fs::write(
        dir.path().join("model.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: vllm}\nspec:\n  selector: {matchLabels: {app: vllm}}\n  template:\n    metadata: {labels: {app: vllm}}\n    spec:\n      containers: [{name: vllm, image: ghcr.io/llm-d/vllm:v0.2.0}]\n",
    )
    .unwrap();
    dir
}

/// [`project`] whose chart also reads `prod.values.yaml`, holding `values`.
fn with_values(values: &str) -> tempfile::TempDir {
    let dir = project("");
    let yaml = std::fs::read_to_string(dir.path().join("berth.yaml")).unwrap();
    let yaml = yaml.replace(
        "release: router\n",
        "release: router\n      values: [prod.values.yaml]\n",
    );
    std::fs::write(dir.path().join("berth.yaml"), yaml).unwrap();
    std::fs::write(dir.path().join("prod.values.yaml"), values).unwrap();
    dir
}

/// `berth ARGS` in `dir` with the plane's helm and `env`.
pub(crate) fn berth(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let helm = plane().helm();
    let mut command = common::berth(dir);
    command
        .args(args)
        .env("BERTH_HELM", &helm)
        .env("HELM_CACHE_HOME", dir.join(".helm/cache"))
        .env("HELM_CONFIG_HOME", dir.join(".helm/config"))
        .env("HELM_DATA_HOME", dir.join(".helm/data"));
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().unwrap()
}

/// One YAML document as JSON, for comparing objects whatever their layout.
fn json(text: &str) -> serde_json::Value {
    let documents = berth_yaml::load_all(text, berth_yaml::Limits::default()).unwrap();
    berth_yaml::json::to_json(&documents[0])
}

fn text(out: &Output) -> String {
    assert!(out.status.success(), "{}", common::transcript(out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn a_fork_moves_the_chart_image_everywhere_the_chart_copies_it() {
    let dir = project("");
    let env = [("IMAGE_REGISTRY", "quay.io/me"), ("EPP_TAG", "fix-408")];
    let out = berth(dir.path(), &["render"], &env);
    let rendered = text(&out);
    // The ConfigMap's copy came from the values berth set: no warning cries wolf.
    assert!(out.stderr.is_empty(), "{}", common::transcript(&out));
    let moved = "quay.io/me/epp:fix-408";
    assert_eq!(
        rendered.matches(moved).count(),
        3,
        "image, sidecar args, ConfigMap:\n{rendered}"
    );
    assert!(!rendered.contains("ghcr.io/llm-d/epp"), "{rendered}");
    assert!(
        rendered.contains("quay.io/me/vllm:v0.2.0"),
        "the overlay's model server moves too:\n{rendered}"
    );
    assert!(
        rendered.contains("busybox:1.36"),
        "third-party images stay:\n{rendered}"
    );
    // Object by object, what `helm template` gives with berth's values set by hand.
    let helm = helm_in(dir.path())
        .args(["template", "router"])
        .arg(dir.path().join("charts/router"))
        .args([
            "--set",
            "image.repository=quay.io/me/epp",
            "--set",
            "image.tag=fix-408",
        ])
        .output()
        .unwrap();
    let by_hand = text(&helm);
    for document in by_hand.split("---").filter(|d| d.contains("kind:")) {
        let body: String = document
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| format!("{l}\n"))
            .collect();
        let object = json(&body);
        let name = object["metadata"]["name"].as_str().unwrap();
        let ours = rendered
            .split("---")
            .find(|d| d.contains(&format!("name: {name}\n")))
            .unwrap_or_else(|| panic!("{name} missing:\n{rendered}"));
        let ours = json(ours);
        assert_eq!(ours, object, "{name}");
    }
    // `berth images` says the same image.
    let images = text(&berth(dir.path(), &["images", "--output", "env"], &env));
    assert!(images.contains(&format!("EPP_IMAGE={moved}")), "{images}");
}

/// A modelservice-shaped chart: a proxy image as a whole reference, model
/// servers in a list (which berth rewrites after rendering: a values path
/// cannot name a list entry).
const MODELSERVICE_VALUES: &str = "routing:\n  proxy:\n    image: ghcr.io/llm-d/routing-sidecar:v0.2.0\ndecode:\n  containers:\n    - name: vllm\n      image: ghcr.io/llm-d/vllm:v0.2.0\n";
const MODELSERVICE_DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}-decode}
spec:
  selector: {matchLabels: {app: decode}}
  template:
    metadata: {labels: {app: decode}}
    spec:
      initContainers:
        - name: proxy
          image: {{ .Values.routing.proxy.image }}
      containers:
      {{- range .Values.decode.containers }}
        - name: {{ .name }}
          image: {{ .image }}
      {{- end }}
"#;

fn write_file(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The modelservice chart under `charts/modelservice` of `root`.
fn modelservice(root: &Path, values: &str, template: &str) {
    let chart = "apiVersion: v2\nname: modelservice\nversion: 0.2.0\n";
    write_file(root, "charts/modelservice/Chart.yaml", chart);
    write_file(root, "charts/modelservice/values.yaml", values);
    write_file(root, "charts/modelservice/templates/decode.yaml", template);
}

/// Every object of a YAML stream as JSON, by `Kind/name`.
fn objects(text: &str) -> std::collections::BTreeMap<String, serde_json::Value> {
    berth_yaml::load_all(text, berth_yaml::Limits::default())
        .unwrap()
        .iter()
        .map(berth_yaml::json::to_json)
        .filter(|o| !o.is_null())
        .map(|o| {
            let key = format!(
                "{}/{}",
                o["kind"].as_str().unwrap(),
                o["metadata"]["name"].as_str().unwrap()
            );
            (key, o)
        })
        .collect()
}

/// #35's "done when", on a Helm + kustomize project: two charts (router,
/// modelservice) and a kustomize model-server overlay in one berth.yaml. The
/// fork (`IMAGE_REGISTRY`, `EPP_TAG`) moves the EPP in the chart's Deployment,
/// the sidecar's args and the ConfigMap, the chart's proxy and list images and
/// the overlay's image; third-party images stay; berth render is, object by
/// object, what `helm template` and `kubectl kustomize` give with those images;
/// make, `berth env` and `berth images` agree.
#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn a_helm_and_kustomize_project_is_what_helm_and_kustomize_render_but_for_berths_images() {
    let dir = project("");
    let root = dir.path();
    let write = |path: &str, text: &str| write_file(root, path, text);
    modelservice(root, MODELSERVICE_VALUES, MODELSERVICE_DEPLOYMENT);
    write(
        "model/base/kustomization.yaml",
        "resources: [prefill.yaml]\n",
    );
    write(
        "model/base/prefill.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: prefill}\nspec:\n  selector: {matchLabels: {app: prefill}}\n  template:\n    metadata: {labels: {app: prefill}}\n    spec:\n      containers: [{name: vllm, image: ghcr.io/llm-d/vllm:v0.1.0}]\n",
    );
    write(
        "model/overlay/kustomization.yaml",
        "resources: [../base]\nimages:\n  - {name: ghcr.io/llm-d/vllm, newTag: v0.2.0}\n",
    );
    write(
        "berth.yaml",
        "name: llm\nregistry: {env: IMAGE_REGISTRY}\nmanifests:\n  - helm: {chart: charts/router, release: router}\n  - helm: {chart: charts/modelservice, release: ms}\n  - kustomize: model/overlay\nimages:\n  epp:\n    image: ghcr.io/llm-d/epp:v0.3.0\n    helmValues: {repository: image.repository, tag: image.tag}\n  sidecar:\n    image: ghcr.io/llm-d/routing-sidecar:v0.2.0\n    helmValues: {image: routing.proxy.image}\n  vllm: {image: ghcr.io/llm-d/vllm:v0.2.0}\n",
    );
    write(
        "Makefile",
        "IMAGE_REGISTRY ?= ghcr.io/llm-d\nEPP_TAG ?= v0.3.0\nEPP_IMAGE ?= $(IMAGE_REGISTRY)/epp:$(EPP_TAG)\nprint:\n\t@echo $(EPP_IMAGE)\n",
    );
    let kubectl = plane().kubectl.clone();
    let path = format!(
        "{}:{}",
        kubectl.parent().unwrap().display(),
        std::env::var("PATH").unwrap()
    );
    let env = [
        ("IMAGE_REGISTRY", "quay.io/me"),
        ("EPP_TAG", "fix-408"),
        ("PATH", path.as_str()),
    ];
    let out = berth(root, &["render"], &env);
    let rendered = text(&out);
    assert!(
        out.stderr.is_empty(),
        "no warning cries wolf: {}",
        common::transcript(&out)
    );
    assert_eq!(
        rendered.matches("quay.io/me/epp:fix-408").count(),
        3,
        "{rendered}"
    );
    assert!(
        rendered.contains("busybox:1.36"),
        "third-party images stay:\n{rendered}"
    );

    // What helm and kustomize give, with berth's images set by hand.
    let helm = |args: &[&str]| text(&helm_in(root).args(args).output().unwrap());
    let mut expected = helm(&[
        "template",
        "router",
        "charts/router",
        "--set",
        "image.repository=quay.io/me/epp",
        "--set",
        "image.tag=fix-408",
    ]);
    expected += &helm(&[
        "template",
        "ms",
        "charts/modelservice",
        "--set",
        "routing.proxy.image=quay.io/me/routing-sidecar:v0.2.0",
    ])
    .replace("ghcr.io/llm-d/vllm:", "quay.io/me/vllm:");
    let kustomized = Command::new(&kubectl)
        .args(["kustomize", "model/overlay"])
        .current_dir(root)
        .output()
        .unwrap();
    expected += "---\n";
    expected += &text(&kustomized).replace("ghcr.io/llm-d/vllm:", "quay.io/me/vllm:");
    let (ours, theirs) = (objects(&rendered), objects(&expected));
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>()
    );
    for (key, object) in &theirs {
        assert_eq!(&ours[key], object, "{key}");
    }

    // make, berth env and berth images: one answer.
    let make = Command::new("make")
        .args(["-s", "print"])
        .current_dir(root)
        .env("IMAGE_REGISTRY", "quay.io/me")
        .env("EPP_TAG", "fix-408")
        .output()
        .unwrap();
    assert_eq!(text(&make), "quay.io/me/epp:fix-408\n");
    let via_env = text(&berth(root, &["env", "--", "make", "-s", "print"], &env));
    assert_eq!(via_env, "quay.io/me/epp:fix-408\n");
    let images = text(&berth(root, &["images", "--output", "env"], &env));
    assert!(
        images.contains("EPP_IMAGE=quay.io/me/epp:fix-408"),
        "{images}"
    );
}

/// #35 items 1 and 3: a warning about a chart's output names the template line
/// and the values file (and key) that set the image; a copy in a container's
/// args is named too, with the fix that fits a chart (`helmValues:`).
#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn a_warning_about_chart_output_names_the_values_file_that_set_the_image() {
    let dir = project("");
    let root = dir.path();
    let write = |path: &str, text: &str| write_file(root, path, text);
    modelservice(
        root,
        &format!("{MODELSERVICE_VALUES}epp: ghcr.io/llm-d/epp:v0.1.0\n"),
        &MODELSERVICE_DEPLOYMENT.replace(
            "          image: {{ .image }}\n",
            "          image: {{ .image }}\n          args: [\"--epp={{ $.Values.epp }}\"]\n",
        ),
    );
    write(
        "prod.values.yaml",
        "decode:\n  containers:\n    - name: vllm\n      image: ghcr.io/llm-d/vllm:v0.1.9\n",
    );
    write(
        "berth.yaml",
        "name: llm\nmanifests:\n  - helm: {chart: charts/modelservice, release: ms, values: [prod.values.yaml]}\nimages:\n  vllm: {image: ghcr.io/llm-d/vllm:v0.2.0}\n  epp: {image: ghcr.io/llm-d/epp:v0.3.0, deployed: false}\n  sidecar: {image: ghcr.io/llm-d/routing-sidecar:v0.2.0}\n",
    );
    let out = berth(root, &["validate", "--strict"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", common::transcript(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: helm template charts/modelservice: modelservice/templates/decode.yaml:15:18 (Deployment/ms-decode; from prod.values.yaml:4:14 `decode.containers[0].image`): image `ghcr.io/llm-d/vllm:v0.1.9` differs from berth.yaml's default"),
        "{stderr}"
    );
    assert!(
        stderr.contains("(Deployment/ms-decode; from charts/modelservice/values.yaml:8:6 `epp`): args[0] of container `vllm` holds `ghcr.io/llm-d/epp:v0.1.0`, an image of component `epp`")
            && stderr.contains("give component `epp` `helmValues: {image: epp}` in berth.yaml"),
        "{stderr}"
    );
}

/// A component the chart reaches through its values (`helmValues:`) but leaves
/// out by default (an optional proxy) is no "matches no image" mistake: with
/// the option on, the chart renders berth's image.
#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn a_component_the_chart_leaves_off_by_default_is_not_unmatched() {
    let dir = project("  proxy:\n    image: docker.io/envoyproxy/envoy:v1.33\n    helmValues: {image: proxy.image}\n    registry: false\n");
    let template = "{{- if .Values.proxy.enabled }}\napiVersion: v1\nkind: Pod\nmetadata: {name: proxy}\nspec:\n  containers: [{name: envoy, image: '{{ .Values.proxy.image }}'}]\n{{- end }}\n";
    let chart = dir.path().join("charts/router");
    std::fs::write(chart.join("templates/proxy.yaml"), template).unwrap();
    let values = std::fs::read_to_string(chart.join("values.yaml")).unwrap();
    std::fs::write(
        chart.join("values.yaml"),
        // The chart's own default agrees with berth.yaml's (another one is `[drift]`, #46).
        format!("{values}proxy:\n  enabled: false\n  image: docker.io/envoyproxy/envoy:v1.33\n"),
    )
    .unwrap();
    let out = berth(dir.path(), &["validate", "--strict"], &[]);
    assert!(out.status.success(), "{}", common::transcript(&out));
    let yaml = std::fs::read_to_string(dir.path().join("berth.yaml")).unwrap();
    std::fs::write(
        dir.path().join("berth.yaml"),
        yaml.replace(
            "release: router\n",
            "release: router\n      set: {proxy: {enabled: true}}\n",
        ),
    )
    .unwrap();
    let rendered = text(&berth(dir.path(), &["render"], &[]));
    assert!(
        rendered.contains("docker.io/envoyproxy/envoy:v1.33"),
        "{rendered}"
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn a_values_file_pinning_another_tag_is_named_and_fails_strict_validation() {
    let dir = with_values("replicaCount: 2\nimage:\n  tag: v0.2.9\n");
    let out = berth(dir.path(), &["validate", "--strict"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", common::transcript(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "prod.values.yaml:3:8: `image.tag` is `v0.2.9`, but berth sets it to `v0.3.0`"
        ),
        "{stderr}"
    );
    // Rendered, berth's value wins and the rest of the file applies.
    let rendered = text(&berth(dir.path(), &["render"], &[]));
    assert!(rendered.contains("replicas: 2"), "{rendered}");
    assert!(!rendered.contains("v0.2.9"), "{rendered}");
}

/// A `set:` value berth overrides is placed at the `helm:` entry in berth.yaml and says it
/// is the entry's `set:` (#47 item 4: a layer is typed, not a name with a suffix).
#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn a_set_value_berth_overrides_is_placed_at_its_helm_entry() {
    let dir = project("");
    let yaml = std::fs::read_to_string(dir.path().join("berth.yaml")).unwrap();
    let yaml = yaml.replace(
        "release: router\n",
        "release: router\n      set: {image: {tag: v0.2.8}}\n",
    );
    std::fs::write(dir.path().join("berth.yaml"), yaml).unwrap();
    let out = berth(dir.path(), &["validate", "--strict"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", common::transcript(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("berth.yaml:5:7: `image.tag` is `v0.2.8`, but berth sets it to `v0.3.0` (the image berth.yaml resolves): the `helm:` entry's `set:` is overridden"),
        "{stderr}"
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn a_packaged_chart_renders_like_its_directory() {
    let dir = project("");
    let package = helm_in(dir.path())
        .args(["package", "charts/router", "--destination", "."])
        .output()
        .unwrap();
    text(&package);
    let from_dir = text(&berth(dir.path(), &["render"], &[]));
    let yaml = std::fs::read_to_string(dir.path().join("berth.yaml")).unwrap();
    std::fs::write(
        dir.path().join("berth.yaml"),
        yaml.replace("chart: charts/router", "chart: router-0.1.0.tgz"),
    )
    .unwrap();
    assert_eq!(text(&berth(dir.path(), &["render"], &[])), from_dir);
}

#[test]
fn without_helm_the_error_says_how_to_get_it() {
    let dir = project("");
    let out = common::berth(dir.path())
        .arg("render")
        .env("BERTH_HELM", dir.path().join("no-helm-here"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", common::transcript(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("berth.yaml:5:7 (`manifests:`): a `helm:` source needs helm")
            && stderr.contains("BERTH_HELM"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "no partial output");
}

/// #35 item 5: Helm 4 keeps a post-renderer plugin's stderr to itself; berth's
/// message reaches the user all the same (written to Helm's own stderr).
#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn the_helm_4_plugin_shows_berths_error() {
    let dir = tempfile::tempdir().unwrap();
    common::copy_dir(
        &common::repo_root().join("examples/helm-post-renderer"),
        dir.path(),
    );
    std::fs::write(
        dir.path().join("berth.yaml"),
        "name: shop\nimages:\n  web: {image: ghcr.io/acme/web:v1, env: SHARED}\n  api: {image: ghcr.io/acme/api:v1, env: SHARED}\n",
    )
    .unwrap();
    let helm = plane().helm();
    let path = berth_first_on_path();
    let run = |args: &[&str]| {
        Plane::helm_in(&helm, dir.path())
            .args(args)
            .env("PATH", &path)
            .output()
            .unwrap()
    };
    let plugin = common::repo_root().join("deploy/helm-plugin");
    text(&run(&["plugin", "install", plugin.to_str().unwrap()]));
    let out = run(&["template", "shop", "./chart", "--post-renderer", "berth"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("variable `SHARED` is used by both"),
        "{stderr}"
    );
}

/// #35 item 5: Helm 3's exec form (`--post-renderer berth --post-renderer-args …`)
/// still works, and its error output carries berth's message.
#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn helm_3_runs_berth_as_an_executable_and_shows_its_error() {
    let dir = tempfile::tempdir().unwrap();
    common::copy_dir(
        &common::repo_root().join("examples/helm-post-renderer"),
        dir.path(),
    );
    let helm = plane().helm3();
    let version = Command::new(&helm).arg("version").output().unwrap();
    assert!(text(&version).contains("v3."), "{}", text(&version));
    let run = |env: &[(&str, &str)]| {
        Plane::helm_in(&helm, dir.path())
            .args(["template", "shop", "./chart", "--post-renderer", "berth"])
            .args([
                "--post-renderer-args",
                "render",
                "--post-renderer-args",
                "-",
            ])
            .env("PATH", berth_first_on_path())
            .envs(env.iter().copied())
            .output()
            .unwrap()
    };
    let rendered = text(&run(&[("WEB_TAG", "v2")]));
    assert!(
        rendered.contains("image: ghcr.io/acme/web:v2"),
        "{rendered}"
    );
    std::fs::write(
        dir.path().join("berth.yaml"),
        "name: shop\nimages:\n  web: {image: ghcr.io/acme/web:v1, env: SHARED}\n  api: {image: ghcr.io/acme/api:v1, env: SHARED}\n",
    )
    .unwrap();
    let out = run(&[]);
    assert!(!out.status.success(), "{}", common::transcript(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("variable `SHARED` is used by both"),
        "{stderr}"
    );
}

/// PATH with the built berth first, as a user who installed it has.
fn berth_first_on_path() -> String {
    format!(
        "{}:{}",
        common::berth_path().parent().unwrap().display(),
        std::env::var("PATH").unwrap()
    )
}

/// A chart pushed to an OCI registry (the tests' docker-registry, over HTTP)
/// renders as the directory it was packaged from.
#[test]
#[cfg_attr(
    not(all(feature = "test-plane", feature = "test-registry")),
    ignore = "needs test-plane, test-registry (run scripts/test)"
)]
fn a_chart_from_an_oci_registry_renders_like_its_directory() {
    let registry = common::registry::TestRegistry::start(None);
    let dir = project("");
    let helm = |args: &[&str]| text(&helm_in(dir.path()).args(args).output().unwrap());
    helm(&["package", "charts/router", "--destination", "."]);
    let target = format!("oci://{}/charts", registry.host);
    helm(&["push", "router-0.1.0.tgz", &target, "--plain-http"]);
    let from_dir = text(&berth(dir.path(), &["render"], &[]));
    let yaml = std::fs::read_to_string(dir.path().join("berth.yaml")).unwrap();
    std::fs::write(
        dir.path().join("berth.yaml"),
        yaml.replace(
            "chart: charts/router",
            &format!("chart: {target}/router\n      version: 0.1.0\n      plainHttp: true"),
        ),
    )
    .unwrap();
    std::fs::remove_dir_all(dir.path().join("charts")).unwrap();
    assert_eq!(text(&berth(dir.path(), &["render"], &[])), from_dir);
    // `berth push` takes the chart like any source: its objects are in the artifact.
    let artifact = format!("oci://{}/llm/manifests:v1", registry.host);
    let push = ["push", &artifact, "--insecure-registry", &registry.host];
    let pushed = berth(dir.path(), &push, &[]);
    let said = String::from_utf8_lossy(&pushed.stderr).into_owned();
    assert!(text(&pushed).contains("@sha256:"));
    assert!(said.starts_with("pushed 3 object(s)"), "{said}");
}

/// #35 item 4: `berth pin` records the OCI chart's digest; `render --locked`
/// renders that archive whatever the registry now serves under the version —
/// from berth's cache with the registry stopped (the same bytes), and a chart
/// published again under the same version is refused when it must be pulled.
#[test]
#[cfg_attr(
    not(all(feature = "test-plane", feature = "test-registry")),
    ignore = "needs test-plane, test-registry (run scripts/test)"
)]
fn a_pinned_chart_renders_offline_and_a_republished_one_is_refused() {
    use common::registry::{Layout, TestRegistry};
    let registry = TestRegistry::start(None);
    let host = registry.host.clone();
    let dir = project("");
    let yaml = std::fs::read_to_string(dir.path().join("berth.yaml")).unwrap();
    let target = format!("oci://{host}/charts");
    std::fs::write(
        dir.path().join("berth.yaml"),
        yaml.replace("ghcr.io/llm-d/", &format!("{host}/llm-d/"))
            .replace(
                "chart: charts/router",
                &format!("chart: {target}/router\n      version: 0.1.0\n      plainHttp: true"),
            ),
    )
    .unwrap();
    registry.push(&Layout::image("epp", 1, 64), "llm-d/epp", "v0.3.0");
    registry.push(&Layout::image("vllm", 1, 64), "llm-d/vllm", "v0.2.0");
    let helm = |args: &[&str]| text(&helm_in(dir.path()).args(args).output().unwrap());
    let publish = || {
        helm(&["package", "charts/router", "--destination", "."]);
        helm(&["push", "router-0.1.0.tgz", &target, "--plain-http"]);
    };
    publish();
    let cache = dir.path().join(".cache");
    let env = [("XDG_CACHE_HOME", cache.to_str().unwrap())];
    let pinned = berth(dir.path(), &["pin", "--insecure-registry", &host], &env);
    let said = String::from_utf8_lossy(&pinned.stderr).into_owned();
    text(&pinned);
    assert!(said.contains("pinned 2 image(s) and 1 chart(s)"), "{said}");
    let lock = std::fs::read_to_string(dir.path().join("berth.lock")).unwrap();
    assert!(
        lock.contains(&format!(
            "charts:\n- chart: {target}/router\n  version: \"0.1.0\"\n  digest: sha256:"
        )),
        "{lock}"
    );
    let locked = text(&berth(dir.path(), &["render", "--locked"], &env));
    assert!(locked.contains("@sha256:"), "images pinned too:\n{locked}");

    // The same version published again, changed: the lock still renders the pinned one.
    let deployment = dir.path().join("charts/router/templates/deployment.yaml");
    let changed = std::fs::read_to_string(&deployment)
        .unwrap()
        .replace("replicas:", "minReadySeconds: 5\n  replicas:");
    std::fs::write(&deployment, changed).unwrap();
    publish();
    assert_eq!(
        text(&berth(dir.path(), &["render", "--locked"], &env)),
        locked
    );
    let unlocked = text(&berth(dir.path(), &["render"], &env));
    assert!(unlocked.contains("minReadySeconds"), "{unlocked}");

    // Without the cache the chart is pulled again, and its new digest refused.
    let kept = dir.path().join(".cache-kept");
    std::fs::rename(&cache, &kept).unwrap();
    let refused = berth(dir.path(), &["render", "--locked"], &env);
    assert_eq!(
        refused.status.code(),
        Some(1),
        "{}",
        common::transcript(&refused)
    );
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("was published again under the same version")
            && stderr.contains("berth.yaml:5:7 (`manifests:`)"),
        "{stderr}"
    );
    assert!(refused.stdout.is_empty(), "no partial output");

    // The registry stopped: the pinned archive renders from the cache, byte for byte.
    std::fs::remove_dir_all(&cache).unwrap();
    std::fs::rename(&kept, &cache).unwrap();
    drop(registry);
    assert_eq!(
        text(&berth(dir.path(), &["render", "--locked"], &env)),
        locked
    );

    // A version the lock does not hold is named, with the fix.
    let yaml = std::fs::read_to_string(dir.path().join("berth.yaml")).unwrap();
    std::fs::write(
        dir.path().join("berth.yaml"),
        yaml.replace("version: 0.1.0", "version: 0.2.0"),
    )
    .unwrap();
    let out = berth(dir.path(), &["render", "--locked"], &env);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && stderr.contains("version `0.2.0` is not in berth.lock")
            && stderr.contains("run `berth pin`"),
        "{stderr}"
    );
}

/// `berth audit` reports an image copy in a chart's values file with the fix
/// that fits it (berth sets that value), and leaves the chart's own templates
/// and values (what berth renders) alone. Needs no helm: audit reads files.
#[test]
fn audit_names_a_values_file_copy_and_the_helm_values_that_replace_it() {
    let dir = with_values("image:\n  repository: ghcr.io/llm-d/epp\n  tag: v0.2.9\n");
    let out = common::berth(dir.path()).arg("audit").output().unwrap();
    let stdout = text(&out);
    assert_eq!(
        stdout,
        "prod.values.yaml:2:15: component `epp`: `ghcr.io/llm-d/epp` is a hard-coded copy of its image; remove it: berth sets `image.repository`, `image.tag` from `images.epp.helmValues`\n"
    );
}
