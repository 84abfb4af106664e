//! One source of truth on trees shaped like the projects that broke it: a
//! Katib-like overlay bumping `newTag`, an OGX-like custom resource, a
//! Kubeflow-like ConfigMap of images, kustomize's own generator output.

use std::fs;

use super::common::{berth, project, transcript};

pub(super) use crate::common::write;

pub(super) fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const KATIB: &str = "\
name: katib
manifests: [{kustomize: overlay}]
images:
  controller: {image: 'ghcr.io/kubeflow/katib/katib-controller:v0.19.0'}
";

#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn a_kustomize_tag_bump_berth_yaml_does_not_know_is_reported_and_strict_refuses() {
    let _filters = crate::common::snapshot_filters();
    crate::common::require_program(crate::common::Group::Tools, "kubectl");
    let dir = project(KATIB);
    let d = dir.path();
    write(d, "base/kustomization.yaml", "resources: [deploy.yaml]\n");
    write(d, "base/deploy.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: katib-controller}\nspec:\n  template:\n    spec:\n      containers:\n      - {name: c, image: ghcr.io/kubeflow/katib/katib-controller}\n");
    write(d, "overlay/kustomization.yaml", "resources: [../base]\nimages:\n- {name: ghcr.io/kubeflow/katib/katib-controller, newTag: v0.20.0}\n");
    let out = berth(d).arg("render").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    insta::assert_snapshot!(stderr(&out), @"warning: kustomize overlay:9:16 (Deployment/katib-controller; from base/deploy.yaml; set by overlay/kustomization.yaml:3:59 `newTag: v0.20.0`): image `ghcr.io/kubeflow/katib/katib-controller:v0.20.0` differs from berth.yaml's default for component `controller` (`ghcr.io/kubeflow/katib/katib-controller:v0.19.0`, berth.yaml:4:23), and berth writes `ghcr.io/kubeflow/katib/katib-controller:v0.19.0`: put the tag you want in `images.controller.image` of berth.yaml (a kustomize `newTag` or a chart value berth.yaml does not know), or drop the tag from the manifest [drift]");
    let strict = berth(d).args(["validate", "--strict"]).output().unwrap();
    assert_eq!(strict.status.code(), Some(1), "{}", stderr(&strict));
    insta::assert_snapshot!(stderr(&strict), @"
    warning: kustomize overlay:9:16 (Deployment/katib-controller; from base/deploy.yaml; set by overlay/kustomization.yaml:3:59 `newTag: v0.20.0`): image `ghcr.io/kubeflow/katib/katib-controller:v0.20.0` differs from berth.yaml's default for component `controller` (`ghcr.io/kubeflow/katib/katib-controller:v0.19.0`, berth.yaml:4:23), and berth writes `ghcr.io/kubeflow/katib/katib-controller:v0.19.0`: put the tag you want in `images.controller.image` of berth.yaml (a kustomize `newTag` or a chart value berth.yaml does not know), or drop the tag from the manifest [drift]
    error: 1 warning (errors under --strict)
    ");
    // An override is the user asking: then the manifest's tag is not drift.
    let asked = berth(d)
        .arg("render")
        .env("CONTROLLER_TAG", "v0.21.0")
        .output()
        .unwrap();
    assert_eq!(stderr(&asked), "");
    assert!(String::from_utf8_lossy(&asked.stdout).contains("katib-controller:v0.21.0"));
}

#[test]
fn overrides_and_paths_that_reach_nothing_and_images_berth_cannot_rewrite_are_named() {
    let dir = project(
        "\
name: ogx
manifests: [deploy.yaml]
images:
  starter: {image: 'docker.io/llamastack/distribution-starter:0.2.0'}
  suggestion: {image: 'ghcr.io/kubeflow/katib/suggestion-hyperopt:v0.19.0', deployed: false}
imagePaths:
  - {kind: OGXServer, path: spec.server.image}
  - {kind: Nothing, path: spec.image}
configPaths:
  - {kind: OGXServer, path: spec.overrideConfig.nam}
configs:
  run: {literals: ['run.yaml=x: 1']}
",
    );
    write(dir.path(), "deploy.yaml", "\
apiVersion: ogx.io/v1beta1
kind: OGXServer
metadata: {name: s}
spec:
  distribution: {name: starter}
  overrideConfig: {name: run, key: run.yaml}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: katib-config}
data:
  config.yaml: |
    suggestion:
      image: ghcr.io/kubeflow/katib/suggestion-hyperopt:v0.19.0
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: op}
spec:
  template:
    spec:
      containers:
      - name: manager
        image: docker.io/llamastack/distribution-starter:0.2.0
        env:
        - {name: RELATED_IMAGE_SUGGESTION, value: 'ghcr.io/kubeflow/katib/suggestion-hyperopt:v0.19.0'}
");
    let out = berth(dir.path())
        .arg("render")
        .env("SUGGESTION_IMAGE", "quay.io/me/x:y")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    insta::assert_snapshot!(stderr(&out), @r#"
    warning: deploy.yaml:14:14 (ConfigMap/katib-config): data key `config.yaml` holds `ghcr.io/kubeflow/katib/suggestion-hyperopt:v0.19.0`, an image of component `suggestion`, where berth does not rewrite it: overrides (`SUGGESTION_IMAGE`, the registry) and pins never reach it; add `{kind: ConfigMap, path: 'data["config.yaml"]'}` under `imagePaths:` and berth rewrites the images in it [copy]
    warning: deploy.yaml:26:52 (Deployment/op): env `RELATED_IMAGE_SUGGESTION` of container `manager` holds `ghcr.io/kubeflow/katib/suggestion-hyperopt:v0.19.0`, an image of component `suggestion`, where berth does not rewrite it: overrides (`SUGGESTION_IMAGE`, the registry) and pins never reach it; for an env value or a custom resource's field add it under `imagePaths:`, otherwise have the program take `SUGGESTION_IMAGE` from its environment [copy]
    warning: berth.yaml:7:5: `imagePaths` entry `{kind: OGXServer, path: spec.server.image}` matches no field: no `OGXServer` object has `spec.server.image`; check the field path against the objects [unused-path]
    warning: berth.yaml:8:5: `imagePaths` entry `{kind: Nothing, path: spec.image}` matches nothing: no object of kind `Nothing` is in the manifests; check the kind's spelling, or remove the entry [unused-path]
    warning: berth.yaml:10:5: `configPaths` entry `{kind: OGXServer, path: spec.overrideConfig.nam}` matches no field: no `OGXServer` object has `spec.overrideConfig.nam`; check the field path against the objects [unused-path]
    "#);
    // An override of a component no field is: it changes nothing, so it is said.
    let idle = berth(dir.path())
        .arg("render")
        .env("STARTER_IMAGE", "quay.io/me/starter:fix")
        .env("STARTER_TAG", "fix")
        .output()
        .unwrap();
    let text = stderr(&idle);
    assert!(
        !text.contains("STARTER_IMAGE (environment) is set"),
        "the Deployment's container is `starter`: {text}"
    );
    let nothing = project("name: x\nmanifests: [d.yaml]\nimages:\n  starter: {image: 'docker.io/llamastack/distribution-starter:0.2.0'}\n");
    write(nothing.path(), "d.yaml", "apiVersion: ogx.io/v1beta1\nkind: OGXServer\nmetadata: {name: s}\nspec:\n  distribution: {name: starter}\n");
    let idle = berth(nothing.path())
        .arg("render")
        .env("STARTER_IMAGE", "quay.io/me/x:y")
        .output()
        .unwrap();
    insta::assert_snapshot!(stderr(&idle), @"warning: STARTER_IMAGE (environment) is set for component `starter`, but no image field of the manifests is `docker.io/llamastack/distribution-starter`, so the override changes nothing: check `images.starter.image` and `match:` in berth.yaml, add the field under `imagePaths:` (custom resources, env values), or unset it [unreached-override]");
}

#[test]
fn image_paths_reach_env_values_of_built_in_kinds() {
    let dir = project(
        "\
name: op
manifests: [deploy.yaml]
images:
  suggestion: {image: 'ghcr.io/kubeflow/katib/suggestion-hyperopt:v0.19.0'}
imagePaths:
  - {kind: Deployment, path: 'spec.template.spec.containers[].env[].value'}
",
    );
    write(dir.path(), "deploy.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: op}\nspec:\n  template:\n    spec:\n      containers:\n      - name: manager\n        image: quay.io/op/manager:v1\n        env:\n        - {name: LOG_LEVEL, value: info}\n        - {name: RELATED_IMAGE_SUGGESTION, value: 'ghcr.io/kubeflow/katib/suggestion-hyperopt:v0.19.0'}\n");
    let out = berth(dir.path())
        .arg("render")
        .env("IMAGE_REGISTRY", "x")
        .env("SUGGESTION_TAG", "v2")
        .output()
        .unwrap();
    let text = transcript(&out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("value: ghcr.io/kubeflow/katib/suggestion-hyperopt:v2"),
        "{text}"
    );
    assert!(text.contains("value: info"), "{text}");
    assert_eq!(stderr(&out), "");
}

#[test]
fn keys_a_pod_or_custom_resource_asks_of_a_generated_config_are_checked() {
    let dir = project("\
name: app
manifests: [deploy.yaml]
configs:
  app: {literals: ['config.yaml=a: 1']}
configPaths:
  - {kind: OGXServer, path: spec.overrideConfig.name, key: spec.overrideConfig.key}
  - {kind: OGXServer, path: 'spec.tls.trust.caCertificates[].name', key: 'spec.tls.trust.caCertificates[].key'}
");
    write(
        dir.path(),
        "deploy.yaml",
        "\
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: c
    image: busybox
    env:
    - name: A
      valueFrom: {configMapKeyRef: {name: app, key: conf.yaml}}
    - name: B
      valueFrom: {configMapKeyRef: {name: app, key: gone, optional: true}}
  volumes:
  - name: v
    configMap: {name: app, items: [{key: config.yaml, path: c}, {key: other.yaml, path: o}]}
---
apiVersion: ogx.io/v1beta1
kind: OGXServer
metadata: {name: s}
spec:
  overrideConfig: {name: app, key: run.yaml}
  tls:
    trust:
      caCertificates:
      - {name: app, key: config.yaml}
      - {name: app, key: ca.crt}
",
    );
    let out = berth(dir.path()).arg("validate").output().unwrap();
    insta::assert_snapshot!(stderr(&out), @r"
    warning: deploy.yaml:15:71 (Pod/p): volumes[].configMap.items[] asks `app` for key `other.yaml`, which it does not have (its keys: config.yaml); the pod would fail with CreateContainerConfigError: fix the key, or add it to `app` in berth.yaml [missing-key]
    warning: deploy.yaml:10:53 (Pod/p): configMapKeyRef asks `app` for key `conf.yaml`, which it does not have (its keys: config.yaml); the pod would fail with CreateContainerConfigError: fix the key, or add it to `app` in berth.yaml [missing-key]
    warning: deploy.yaml:21:36 (OGXServer/s): configPaths `key:` asks `app` for key `run.yaml`, which it does not have (its keys: config.yaml); the pod would fail with CreateContainerConfigError: fix the key, or add it to `app` in berth.yaml [missing-key]
    warning: deploy.yaml:26:26 (OGXServer/s): configPaths `key:` asks `app` for key `ca.crt`, which it does not have (its keys: config.yaml); the pod would fail with CreateContainerConfigError: fix the key, or add it to `app` in berth.yaml [missing-key]
    ");
}

#[test]
fn a_generated_config_named_like_an_object_of_the_manifests_is_an_error() {
    for hash in ["false", "true"] {
        let dir = project(&format!("name: katib\nmanifests: [deploy.yaml]\nconfigs:\n  katib-config: {{literals: ['a=b'], hash: {hash}}}\n"));
        write(dir.path(), "deploy.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: katib-config, namespace: kubeflow}\ndata: {a: b}\n");
        let out = berth(dir.path()).arg("render").output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        assert!(out.stdout.is_empty());
        insta::allow_duplicates! {
        insta::assert_snapshot!(stderr(&out), @"error: deploy.yaml:1:1: ConfigMap/katib-config (namespace kubeflow) is also what berth generates from berth.yaml:4:3 (`configs.katib-config`): two objects would claim one name (or the manifests' copy would be left unused beside berth's); remove it from the manifests (a kustomize `configMapGenerator`/`secretGenerator` or an inline copy), or rename the berth entry");
        }
    }
}

const PROFILES: &str = "\
name: llm-d
images:
  epp: {image: 'ghcr.io/llm-d/epp:dev'}
  sim: {image: 'ghcr.io/llm-d/sim:dev'}
  builder: {image: 'ghcr.io/llm-d/builder:dev', deployed: false}
profiles:
  epd: [epd.yaml]
  p-d: [pd.yaml]
";

fn pod(name: &str, image: &str) -> String {
    format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  containers: [{{name: c, image: '{image}'}}]\n")
}

#[test]
fn profiles_are_alternative_manifest_sets_validated_each_on_its_own() {
    let dir = project(PROFILES);
    // Both define Pod/router: together they would collide; each alone is fine.
    write(
        dir.path(),
        "epd.yaml",
        pod("router", "ghcr.io/llm-d/epp:dev"),
    );
    write(
        dir.path(),
        "pd.yaml",
        format!(
            "{}---\n{}",
            pod("router", "ghcr.io/llm-d/epp:dev"),
            pod("sim", "ghcr.io/llm-d/sim:dev")
        ),
    );
    let strict = berth(dir.path())
        .args(["validate", "--strict"])
        .output()
        .unwrap();
    assert!(strict.status.success(), "{}", stderr(&strict));
    let out = berth(dir.path())
        .args(["render", "--profile", "p-d"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("name: sim"));
    let none = berth(dir.path()).arg("render").output().unwrap();
    insta::assert_snapshot!(stderr(&none), @"error: berth.yaml has no `manifests:`, only profiles: choose one with --profile (epd, p-d)");
    let typo = berth(dir.path())
        .args(["render", "--profile", "p_d"])
        .output()
        .unwrap();
    insta::assert_snapshot!(stderr(&typo), @"error: --profile p_d: no profile `p_d` in berth.yaml; did you mean `p-d`?; its profiles are: epd, p-d");
    // A component in no profile is named once, not per profile.
    write(
        dir.path(),
        "pd.yaml",
        pod("router", "ghcr.io/llm-d/epp:dev"),
    );
    let missing = berth(dir.path()).args(["validate"]).output().unwrap();
    insta::assert_snapshot!(stderr(&missing), @"warning: berth.yaml:4:16: component `sim` (`ghcr.io/llm-d/sim:dev`) matches no image in the manifests (in no profile); check its `image:` and `match:`, or the manifests' image fields (`imagePaths:` for custom resources); a component that is built but never deployed takes `deployed: false` [unmatched-component]");
}

#[test]
fn only_overridden_fills_placeholders_and_keeps_a_charts_own_tag() {
    let dir = project("name: chart\nimages:\n  api: {image: 'ghcr.io/acme/api:0.9.0'}\n  web: {image: 'ghcr.io/acme/web:0.9.0'}\nregistry: {env: IMAGE_REGISTRY}\n");
    let chart = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: a, image: '${API_IMAGE}'}\n  - {name: w, image: 'ghcr.io/acme/web:1.0.0'}\n";
    let out = berth(dir.path())
        .args(["render", "--only-overridden", "-"])
        .env("IMAGE_REGISTRY", "quay.io/me")
        .write_stdin(chart)
        .output()
        .unwrap();
    let text = transcript(&out);
    assert!(text.contains("image: quay.io/me/api:0.9.0"), "{text}");
    assert!(
        text.contains("image: quay.io/me/web:1.0.0"),
        "the chart's tag stays: {text}"
    );
    assert!(!text.contains("warning"), "{text}");
    let tag = berth(dir.path())
        .args(["render", "--only-overridden", "-"])
        .env("WEB_TAG", "1.1.0")
        .write_stdin(chart)
        .output()
        .unwrap();
    let text = transcript(&tag);
    assert!(
        text.contains("image: ghcr.io/acme/web:1.1.0")
            && text.contains("image: ghcr.io/acme/api:0.9.0"),
        "{text}"
    );
}

#[test]
fn a_manifests_directory_holding_a_kustomization_is_an_error_naming_kustomize() {
    let dir = project("name: x\nmanifests: [deploy/]\n");
    write(
        dir.path(),
        "deploy/kustomization.yaml",
        "resources: [a.yaml]\n",
    );
    write(dir.path(), "deploy/a.yaml", pod("a", "nginx"));
    write(dir.path(), "deploy/b.yaml", pod("b", "nginx"));
    let out = berth(dir.path()).arg("render").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = stderr(&out);
    assert!(
        text.starts_with("error: berth.yaml:2:13 (`manifests:`): `"),
        "{text}"
    );
    assert!(
        text.contains("holds a kustomization.yaml") && text.contains("write `- kustomize: "),
        "{text}"
    );
}

#[test]
fn audit_finds_hard_coded_copies_outside_what_berth_renders() {
    let dir = project(
        "\
name: llm-d
manifests: [deploy/]
images:
  epp: {image: 'ghcr.io/llm-d/llm-d-inference-scheduler:dev', env: EPP_IMAGE}
  web: {image: 'nginx:1.25'}
  vllm: {image: 'docker.io/vllm/vllm-openai-cpu:v0.9', registry: false}
",
    );
    let d = dir.path();
    write(
        d,
        "deploy/app.yaml",
        pod("app", "ghcr.io/llm-d/llm-d-inference-scheduler:dev"),
    );
    write(d, "Makefile", "EPP_IMAGE ?= ghcr.io/llm-d/llm-d-inference-scheduler:dev\nIMG ?= $(IMAGE_REGISTRY)/llm-d-inference-scheduler\n");
    write(d, "scripts/pull.sh", "docker pull \"ghcr.io/llm-d/llm-d-inference-scheduler:${EPP_TAG}\"\ndocker pull docker.io/vllm/vllm-openai-cpu:v0.9\n");
    write(
        d,
        "test/e2e/suite_test.go",
        "const img = \"ghcr.io/llm-d/llm-d-inference-scheduler:\" + tag\n",
    );
    write(
        d,
        ".github/workflows/ci.yaml",
        "steps:\n- run: docker run docker.io/library/nginx:1.27\n",
    );
    // A CI job's kustomization is a kustomization, not a workflow.
    write(
        d,
        ".github/resources/ci/kustomization.yaml",
        "images:\n- name: ghcr.io/llm-d/llm-d-inference-scheduler\n  newName: kind-registry:5000/epp\n  newTag: latest\n",
    );
    write(d, "Dockerfile", "FROM nginx:1.25\n");
    write(d, ".gitignore", "vendor/\n");
    write(
        d,
        "vendor/dep.sh",
        "docker pull ghcr.io/llm-d/llm-d-inference-scheduler:old\n",
    );
    fs::write(
        d.join("blob.bin"),
        b"\0ghcr.io/llm-d/llm-d-inference-scheduler:x",
    )
    .unwrap();
    let out = berth(d).arg("audit").output().unwrap();
    insta::assert_snapshot!(transcript(&out), @r#"
    exit: 0
    --- stdout
    .github/resources/ci/kustomization.yaml:2:9: component `epp`: `ghcr.io/llm-d/llm-d-inference-scheduler` is a hard-coded copy of its image; a kustomization berth.yaml does not render: list its directory under `manifests:` (`- kustomize: DIR`) so berth resolves the image there, or drop its `newTag`/`newName` for `EPP_IMAGE`
    .github/workflows/ci.yaml:2:19: component `web`: `docker.io/library/nginx:1.27` is a hard-coded copy of its image; use `${{ env.WEB_IMAGE }}` after a step running `berth images --output env >> "$GITHUB_ENV"`
    Dockerfile:1:6: component `web`: `nginx:1.25` is a hard-coded copy of its image; declare `ARG WEB_IMAGE` and use `${WEB_IMAGE}`, built with `--build-arg WEB_IMAGE="$(WEB_IMAGE)"` under `berth env --`
    Makefile:2:8: component `epp`: `$(IMAGE_REGISTRY)/llm-d-inference-scheduler` is a hard-coded copy of its image; use `$(EPP_IMAGE)` (include `berth images --output make`, or run make under `berth env --`)
    scripts/pull.sh:1:14: component `epp`: `ghcr.io/llm-d/llm-d-inference-scheduler` is a hard-coded copy of its image; use `"$EPP_IMAGE"`, run under `berth env --`
    test/e2e/suite_test.go:1:14: component `epp`: `ghcr.io/llm-d/llm-d-inference-scheduler` is a hard-coded copy of its image; a test: if it pins this image on purpose, add `'**/*_test.go'` to berth.yaml's `audit.exclude`; otherwise read `os.Getenv("EPP_IMAGE")`, run under `berth env -- go test`
    --- stderr
    berth audit: 6 hard-coded copies in 6 file(s); 7 file(s) searched
    "#);
    let strict = berth(d)
        .args(["audit", "--strict", "--output", "json"])
        .output()
        .unwrap();
    assert_eq!(strict.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&strict.stdout).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 6);
    assert_eq!(json[3]["variable"], "EPP_IMAGE");
    let clean = project("name: x\nimages:\n  web: {image: 'nginx:1.25'}\n");
    // A file with no copy: a search of nothing fails --strict (#46, R2).
    write(clean.path(), "README.md", "nothing hard-coded here\n");
    let quiet = berth(clean.path())
        .args(["audit", "--strict"])
        .output()
        .unwrap();
    assert_eq!(quiet.status.code(), Some(0), "{}", stderr(&quiet));
}

#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn the_kustomize_tag_bump_example_is_reported_until_berth_yaml_agrees() {
    let _filters = crate::common::snapshot_filters();
    crate::common::require_program(crate::common::Group::Tools, "kubectl");
    let dir = super::common::copy_example("kustomize-tag-bump");
    let strict = berth(dir.path())
        .args(["validate", "--strict"])
        .output()
        .unwrap();
    assert_eq!(strict.status.code(), Some(1));
    insta::assert_snapshot!(stderr(&strict), @"
    warning: kustomize overlays/release:16:16 (Deployment/katib-controller; from base/controller.yaml; set by overlays/release/kustomization.yaml:5:11 `newTag: v0.20.0`): image `ghcr.io/kubeflow/katib/katib-controller:v0.20.0` differs from berth.yaml's default for component `katib-controller` (`ghcr.io/kubeflow/katib/katib-controller:v0.19.0`, berth.yaml:10:12), and berth writes `ghcr.io/kubeflow/katib/katib-controller:v0.19.0`: put the tag you want in `images.katib-controller.image` of berth.yaml (a kustomize `newTag` or a chart value berth.yaml does not know), or drop the tag from the manifest [drift]
    error: 1 warning (errors under --strict)
    ");
    let asked = berth(dir.path())
        .args(["validate", "--strict"])
        .env("KATIB_CONTROLLER_TAG", "v0.20.0")
        .output()
        .unwrap();
    assert!(asked.status.success(), "{}", stderr(&asked));
    let file = dir.path().join("berth.yaml");
    let text = fs::read_to_string(&file)
        .unwrap()
        .replace("v0.19.0", "v0.20.0");
    fs::write(&file, text).unwrap();
    let agreed = berth(dir.path())
        .args(["validate", "--strict"])
        .output()
        .unwrap();
    assert!(agreed.status.success(), "{}", stderr(&agreed));
}

/// Sweep 4, U09/U10: a file name with an escape sequence or a newline is
/// shown escaped, so it can neither drive the terminal nor forge a line.
#[test]
fn u09_u10_audit_escapes_control_characters_of_file_names() {
    let dir = project("name: x\nimages:\n  web: {image: 'ghcr.io/acme/web:v1'}\n");
    let d = dir.path();
    write(d, "evil\u{1b}[31m.sh", "docker pull ghcr.io/acme/web:v1\n");
    write(d, "two\nlines.sh", "docker pull ghcr.io/acme/web:v1\n");
    let out = berth(d).arg("audit").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains('\u{1b}'), "{stdout:?}");
    assert_eq!(stdout.lines().count(), 2, "{stdout:?}");
    assert!(stdout.contains("evil\\u{1b}[31m.sh:1:13:"), "{stdout:?}");
    assert!(stdout.contains("two\\nlines.sh:1:13:"), "{stdout:?}");
}

/// Sweep 4, U13/U14: a `.ignore` file and a `.gitignore` above the project do
/// not hide a script that holds a copy.
#[test]
fn u13_u14_ignore_files_outside_git_semantics_hide_nothing() {
    let top = tempfile::tempdir().unwrap();
    fs::write(top.path().join(".gitignore"), "scripts/\n").unwrap();
    let d = top.path().join("project");
    write(
        &d,
        "berth.yaml",
        "name: x\nimages:\n  web: {image: 'ghcr.io/acme/web:v1'}\n",
    );
    write(&d, ".ignore", "hack/\n");
    write(&d, "scripts/pull.sh", "docker pull ghcr.io/acme/web:v1\n");
    write(&d, "hack/pull.sh", "docker pull ghcr.io/acme/web:v1\n");
    let out = berth(&d).arg("audit").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("scripts/pull.sh:1:13:") && stdout.contains("hack/pull.sh:1:13:"),
        "{stdout}"
    );
}

/// Sweep 4, item 13: `deployed: false` on a component the manifests run is a
/// warning (an error under `--strict`); on one they do not, nothing.
#[test]
fn deployed_false_on_a_component_the_manifests_run_is_named() {
    let dir = project("name: x\nmanifests: [deploy/]\nimages:\n  web: {image: 'ghcr.io/acme/web:v1', deployed: false}\n  builder: {image: 'ghcr.io/acme/builder:v1', deployed: false}\n");
    write(dir.path(), "deploy/p.yaml", pod("p", "ghcr.io/acme/web:v1"));
    let out = berth(dir.path()).arg("validate").output().unwrap();
    assert_eq!(
        stderr(&out),
        "warning: berth.yaml:4:16: component `web` says `deployed: false`, but the manifests run its image (`ghcr.io/acme/web`); remove `deployed: false`, so that validate checks it like the others [wrongly-undeployed]\n"
    );
    let strict = berth(dir.path())
        .args(["validate", "--strict"])
        .output()
        .unwrap();
    assert_eq!(strict.status.code(), Some(1), "{}", stderr(&strict));
}

/// #36 item 3: the registry prefix (or the shared tag) exported for the whole
/// project moves every component; a profile that leaves some out does not cry
/// wolf about each, and `validate --strict` with the developer's variables set
/// passes when every image moved. A registry that moves nothing anywhere is one
/// warning.
#[test]
fn a_registry_for_the_whole_project_warns_only_when_it_moves_nothing() {
    let dir = project("name: llm\nregistry: {env: IMAGE_REGISTRY}\ntag: {env: LLMD_TAG}\nprofiles:\n  epd: [epd.yaml]\n  sim: [sim.yaml]\nimages:\n  epp: {image: 'ghcr.io/llm-d/epp:v0.3.0'}\n  vllm: {image: 'ghcr.io/llm-d/vllm:v0.2.0'}\n");
    let pod = |name: &str, image: &str| {
        format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  containers: [{{name: c, image: '{image}'}}]\n")
    };
    write(
        dir.path(),
        "epd.yaml",
        pod("epp", "ghcr.io/llm-d/epp:v0.3.0"),
    );
    write(
        dir.path(),
        "sim.yaml",
        pod("vllm", "ghcr.io/llm-d/vllm:v0.2.0"),
    );
    let run = |args: &[&str], env: &[(&str, &str)]| {
        berth(dir.path())
            .args(args)
            .envs(env.iter().copied())
            .output()
            .unwrap()
    };
    let developer = [
        ("IMAGE_REGISTRY", "quay.io/me"),
        ("LLMD_TAG", "fix"),
        ("EPP_TAG", "fix-408"),
    ];
    let out = run(&["render", "--profile", "epd"], &developer);
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{}",
        transcript(&out)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("image: quay.io/me/epp:fix-408"));
    let out = run(&["validate", "--strict"], &developer);
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{}",
        transcript(&out)
    );
    // One profile does not judge a component another profile uses.
    let out = run(&["validate", "--strict", "--profile", "epd"], &developer);
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{}",
        transcript(&out)
    );

    // A component's own override is still named when no render has its image.
    let out = run(&["render", "--profile", "sim"], &developer);
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{}",
        transcript(&out)
    );
    write(
        dir.path(),
        "sim.yaml",
        pod("other", "docker.io/library/busybox:1.36"),
    );
    let out = run(&["validate", "--strict"], &[("VLLM_TAG", "x")]);
    let text = stderr(&out);
    assert!(
        text.contains("warning: VLLM_TAG (environment) is set for component `vllm`, but no image field of the manifests is `ghcr.io/llm-d/vllm`, so the override changes nothing")
            && text.ends_with("error: 2 warnings (errors under --strict)\n"),
        "{text}"
    );
    // The registry, when no component it moves is anywhere: one warning, not one each.
    let out = run(&["validate"], &[("IMAGE_REGISTRY", "quay.io/me")]);
    let text = stderr(&out);
    assert!(!text.contains("IMAGE_REGISTRY"), "epp is in epd: {text}");
    write(
        dir.path(),
        "epd.yaml",
        pod("other", "docker.io/library/busybox:1.36"),
    );
    let out = run(&["validate"], &[("IMAGE_REGISTRY", "quay.io/me")]);
    let text = stderr(&out);
    assert_eq!(text.matches("IMAGE_REGISTRY").count(), 1, "{text}");
    assert!(text.contains("warning: IMAGE_REGISTRY (environment) is set, but none of the 2 component(s) it moves has an image field in the manifests, so it changes nothing"), "{text}");
}

/// #36 item 3: a comment in a ConfigMap's file that names an image, and a
/// documentation `_example` key, are prose: only the line a program reads is
/// reported.
#[test]
fn comments_and_example_keys_in_a_configmap_are_not_copies() {
    let dir = project("name: x\nmanifests: [cm.yaml]\nimages:\n  tool: {image: 'ghcr.io/acme/tool:v1', deployed: false}\n");
    write(
        dir.path(),
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  run.py: |\n    # built on the ghcr.io/acme/tool:v1 image\n    TOOL = 'ghcr.io/acme/tool:v1'  # the copy\n  _example: |\n    image: ghcr.io/acme/tool:v1\n  storage_example: 'ghcr.io/acme/tool:v1'\n",
    );
    let out = berth(dir.path()).arg("render").output().unwrap();
    let text = stderr(&out);
    assert_eq!(text.matches("warning:").count(), 1, "{text}");
    assert!(
        text.starts_with(
            "warning: cm.yaml:7:13 (ConfigMap/c): data key `run.py` holds `ghcr.io/acme/tool:v1`"
        ),
        "{text}"
    );
}

/// #36 item 2: behind `${SIDECAR_IMAGE}` no manifest carries a tag; the
/// Makefile's `SIDECAR_TAG ?= dev` and berth.yaml's `:0.0.5` disagree, and
/// `validate` names both lines (an error under `--strict`) until they agree.
/// A Makefile an include brings in counts too.
#[test]
fn a_makefile_default_that_disagrees_with_berth_yaml_is_named() {
    let dir = project("name: router\nmanifests: [d.yaml]\nimages:\n  sidecar: {image: 'ghcr.io/llm-d/disagg-sidecar:0.0.5'}\n  epp: {image: 'ghcr.io/llm-d/epp:dev'}\n");
    write(dir.path(), "d.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: s, image: '${SIDECAR_IMAGE}'}\n  - {name: e, image: '${EPP_IMAGE}'}\n");
    write(
        dir.path(),
        "Makefile",
        "include hack/images.mk\nSIDECAR_TAG ?= dev\n",
    );
    write(
        dir.path(),
        "hack/images.mk",
        "EPP_IMAGE ?= ghcr.io/llm-d/epp:dev\n",
    );
    let out = berth(dir.path())
        .args(["validate", "--strict"])
        .output()
        .unwrap();
    assert_eq!(
        stderr(&out),
        "warning: Makefile:2: `SIDECAR_TAG ?= dev` gives component `sidecar` the tag `dev` by default, but berth.yaml:4:20 gives it `ghcr.io/llm-d/disagg-sidecar:0.0.5`: with no variable set, make and berth build and deploy different images; make the two defaults agree [makefile-default]\nerror: 1 warning (errors under --strict)\n"
    );
    write(
        dir.path(),
        "hack/images.mk",
        "EPP_IMAGE ?= ghcr.io/llm-d/epp:v1\n",
    );
    let yaml = std::fs::read_to_string(dir.path().join("berth.yaml")).unwrap();
    std::fs::write(
        dir.path().join("berth.yaml"),
        yaml.replace(":0.0.5", ":dev"),
    )
    .unwrap();
    let out = berth(dir.path())
        .args(["validate", "--strict"])
        .output()
        .unwrap();
    let text = stderr(&out);
    assert!(
        text.starts_with("warning: hack/images.mk:1: `EPP_IMAGE ?= ghcr.io/llm-d/epp:v1` gives component `epp` the image `ghcr.io/llm-d/epp:v1` by default"),
        "{text}"
    );
    // berth's own answer, included as the docs show, is no default of the Makefile's.
    write(
        dir.path(),
        "hack/images.mk",
        "EPP_IMAGE ?= ghcr.io/llm-d/epp:dev\n",
    );
    write(
        dir.path(),
        "Makefile",
        "_b := $(shell berth images --output make > .cache/images.mk)\ninclude .cache/images.mk\ninclude .berth-images.mk\ninclude hack/images.mk\n",
    );
    write(
        dir.path(),
        ".cache/images.mk",
        "EPP_IMAGE := quay.io/me/epp:fix\n",
    );
    write(
        dir.path(),
        ".berth-images.mk",
        "SIDECAR_IMAGE := quay.io/me/s:fix\n",
    );
    let out = berth(dir.path())
        .args(["validate", "--strict"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", transcript(&out));
}

/// #36 item 7: KServe's `huggingfaceserver:latest` and `:latest-gpu`, released
/// as `:v0.17.0` and `:v0.17.0-gpu`: with `tagSuffix: true` one component owns
/// both, and the variant keeps its suffix under a tag override.
#[test]
fn a_variant_tag_keeps_its_suffix() {
    let dir = project("name: kserve\nmanifests: [d.yaml]\nimages:\n  hf: {image: 'docker.io/kserve/huggingfaceserver:latest', tagSuffix: true}\n");
    write(
        dir.path(),
        "d.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: cpu, image: 'docker.io/kserve/huggingfaceserver:latest'}\n  - {name: gpu, image: 'docker.io/kserve/huggingfaceserver:latest-gpu'}\n",
    );
    let out = berth(dir.path())
        .arg("render")
        .env("HF_TAG", "v0.17.0")
        .output()
        .unwrap();
    let rendered = String::from_utf8_lossy(&out.stdout);
    assert!(out.stderr.is_empty(), "{}", transcript(&out));
    assert!(
        rendered.contains("image: docker.io/kserve/huggingfaceserver:v0.17.0\n")
            && rendered.contains("image: docker.io/kserve/huggingfaceserver:v0.17.0-gpu\n"),
        "{rendered}"
    );
    // Without an override both stay, and neither is drift.
    let out = berth(dir.path())
        .args(["validate", "--strict"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", transcript(&out));
}

/// #36 item 5, on llm-d-router's shapes: a reference composed from the
/// registry variable in a script and a Makefile is a copy; the Makefile's own
/// definition of a variable berth reads is not (validate compares it); a
/// released archive under `install/` is not searched unless `--all`; Markdown
/// gets documentation's advice; `audit.exclude` and `--exclude` leave files out.
#[test]
fn audit_finds_composed_copies_and_leaves_archives_and_definitions_alone() {
    let dir = project("name: r\nimages:\n  epp: {image: 'ghcr.io/llm-d/llm-d-router-endpoint-picker:dev'}\n  coord: {image: 'ghcr.io/llm-d/llm-d-coordinator:dev', env: COORD_IMAGE}\naudit:\n  exclude: ['hack/generated/**']\n");
    let d = dir.path();
    write(
        d,
        "scripts/pull.sh",
        "docker pull ${IMAGE_REGISTRY}/llm-d-router-endpoint-picker:${EPP_TAG}\n",
    );
    write(d, "Makefile", "COORD_IMAGE ?= ghcr.io/llm-d/llm-d-coordinator:dev\nload:\n\tkind load docker-image $(IMAGE_REGISTRY)/llm-d-coordinator:$(COORDINATOR_TAG)\n");
    write(
        d,
        "install/v0.1/all.yaml",
        "image: ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.1\n",
    );
    write(
        d,
        "hack/generated/x.sh",
        "ghcr.io/llm-d/llm-d-coordinator:v0\n",
    );
    write(
        d,
        "docs/run.md",
        "Run `ghcr.io/llm-d/llm-d-router-endpoint-picker:dev`.\n",
    );
    // A generated script (KServe's quick-install scripts): fixed where it is generated from.
    write(
        d,
        "hack/quick-install.sh",
        "#!/bin/bash\n# AUTO-GENERATED from: install.definition\n# DO NOT EDIT MANUALLY\ndocker pull ghcr.io/llm-d/llm-d-coordinator:v0\n",
    );
    let out = berth(d).arg("audit").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Makefile:3:25: component `coord`: `$(IMAGE_REGISTRY)/llm-d-coordinator` is a hard-coded copy of its image; use `$(COORD_IMAGE)` (include `berth images --output make`, or run make under `berth env --`)\n\
         docs/run.md:1:6: component `epp`: `ghcr.io/llm-d/llm-d-router-endpoint-picker:dev` is a hard-coded copy of its image; documentation: write the variable (`$EPP_IMAGE`, which `berth images` prints) or name the component, so the page does not go stale\n\
         scripts/pull.sh:1:13: component `epp`: `${IMAGE_REGISTRY}/llm-d-router-endpoint-picker` is a hard-coded copy of its image; use `\"$EPP_IMAGE\"`, run under `berth env --`\n"
    );
    assert!(
        stderr(&out).ends_with("; 1 more in 1 generated file(s) left out (a `DO NOT EDIT` header: fix what generates them; --all lists them); not searched (released archives, vendored code, test data; --all searches them): install/\n"),
        "{}",
        stderr(&out)
    );
    let all = berth(d)
        .args(["audit", "--all", "--exclude", "docs/**"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&all.stdout);
    assert!(
        listed.contains("install/v0.1/all.yaml:1:8:")
            && listed.contains("hack/quick-install.sh:4:13:")
            && !listed.contains("docs/run.md"),
        "{listed}"
    );
    assert!(!listed.contains("hack/generated"), "{listed}");
}

/// KServe's `inferenceservice-config`: JSON in ConfigMap data names the images
/// the controller injects. An `imagePaths` entry at a data key rewrites every
/// component image spelt in its text (a comment line is prose, kept), as a
/// container's image would be; keys with dots are quoted.
#[test]
fn an_image_path_into_a_configmaps_text_rewrites_the_images_in_it() {
    let dir = project(
        "\
name: kserve
manifests: [deploy.yaml]
images:
  agent: {image: 'docker.io/kserve/agent:v0.20.0'}
  storage: {image: 'docker.io/kserve/storage-initializer:v0.20.0'}
registry: {env: IMAGE_REGISTRY}
imagePaths:
  - {kind: ConfigMap, path: data.agent}
  - {kind: ConfigMap, path: 'data[\"storage.json\"]'}
  - {kind: ConfigMap, path: 'data[\"frontend.py\"]'}
",
    );
    write(
        dir.path(),
        "deploy.yaml",
        "\
apiVersion: v1
kind: ConfigMap
metadata: {name: inferenceservice-config}
data:
  agent: |-
    {
        \"image\" : \"kserve/agent:latest\",
        \"memoryRequest\": \"100Mi\"
    }
  storage.json: |-
    {
        # image is the default storage initializer (kserve/storage-initializer:latest)
        \"image\" : \"kserve/storage-initializer:latest\", \"sidecar\": \"kserve/agent:v0.20.0\"
    }
  frontend.py: |
    image = os.environ.get(\"AGENT_IMAGE\", \"docker.io/kserve/agent\") + \":\" + tag
",
    );
    let out = berth(dir.path())
        .arg("render")
        .env("IMAGE_REGISTRY", "quay.io/me")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "no copy is left where berth rewrites");
    insta::assert_snapshot!(String::from_utf8_lossy(&out.stdout), @r#"
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: inferenceservice-config
    data:
      agent: |-
        {
            "image" : "quay.io/me/agent:v0.20.0",
            "memoryRequest": "100Mi"
        }
      storage.json: |-
        {
            # image is the default storage initializer (kserve/storage-initializer:latest)
            "image" : "quay.io/me/storage-initializer:v0.20.0", "sidecar": "quay.io/me/agent:v0.20.0"
        }
      frontend.py: |
        image = os.environ.get("AGENT_IMAGE", "quay.io/me/agent") + ":" + tag
    "#);
    // Another tag (or a pin's digest): the repository moves, the program's own tag
    // stays, and berth says so where the text spells the repository alone.
    let out = berth(dir.path())
        .arg("render")
        .env("AGENT_IMAGE", "quay.io/me/agent:v0.21.0")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // (storage's `:latest` is drift: no override touches that component here.)
    insta::assert_snapshot!(stderr(&out), @r"
    warning: deploy.yaml:13:20 (ConfigMap/inferenceservice-config): image `kserve/storage-initializer:latest` differs from berth.yaml's default for component `storage` (`docker.io/kserve/storage-initializer:v0.20.0`, berth.yaml:5:20), and berth writes `docker.io/kserve/storage-initializer:v0.20.0`: put the tag you want in `images.storage.image` of berth.yaml (a kustomize `newTag` or a chart value berth.yaml does not know), or drop the tag from the manifest [drift]
    warning: deploy.yaml:16:44 (ConfigMap/inferenceservice-config): the text spells component `agent`'s repository without a tag, so berth writes `quay.io/me/agent` there and the program appends a tag of its own: berth's `quay.io/me/agent:v0.21.0` does not reach it; spell the image with its tag in the text (`docker.io/kserve/agent:v0.20.0`), or give the program berth's tag as well [copy]
    ");
}
