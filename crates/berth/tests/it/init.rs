//! `berth init` on trees shaped like the repositories it is for: llm-d-router
//! (a Makefile of `*_IMAGE ?=` variables, kustomize overlays with `${VAR}`
//! placeholders), a kubebuilder operator (`IMAGE_TAG_BASE`, `IMG`, a
//! kustomization's `images:` rename) and a Kubeflow component (an overlay that
//! bumps `newTag`). Each time: the file it writes, that `berth validate` passes
//! with no warning, and that `IMAGE_REGISTRY` moves the project's images only.

use std::path::Path;

use crate::common::{berth, repo_root};

use crate::common::write;

/// Runs `berth init` in `dir`, then `berth validate` and `IMAGE_REGISTRY=quay.io/me
/// berth images`; returns (berth.yaml, init's stderr, the moved images).
fn init(dir: &Path) -> (String, String, String) {
    let out = berth(dir).arg("init").output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{said}");
    let yaml = std::fs::read_to_string(dir.join("berth.yaml")).unwrap();
    let out = berth(dir).arg("validate").output().unwrap();
    let warnings = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && warnings.is_empty(),
        "validate: {warnings}\n{yaml}"
    );
    let out = berth(dir)
        .arg("images")
        .env("IMAGE_REGISTRY", "quay.io/me")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        yaml,
        said,
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn an_llm_d_shaped_repository_gets_its_makefile_variables_and_overlays() {
    crate::common::require_program(crate::common::Group::Tools, "kubectl");
    let dir = tempfile::tempdir().unwrap();
    crate::common::copy_dir(
        &repo_root().join("examples/llm-d/deploy"),
        &dir.path().join("deploy"),
    );
    write(
        dir.path(),
        "Makefile",
        "IMAGE_REGISTRY ?= ghcr.io/llm-d\nEPP_NAME ?= llm-d-router-endpoint-picker\nEPP_TAG ?= dev\nEPP_IMAGE ?= $(IMAGE_REGISTRY)/$(EPP_NAME):$(EPP_TAG)\nSIDECAR_TAG ?= dev\nSIDECAR_IMAGE ?= $(IMAGE_REGISTRY)/llm-d-router-disagg-sidecar:$(SIDECAR_TAG)\nVLLM_SIMULATOR_TAG ?= v0.7.1\nVLLM_IMAGE ?= $(IMAGE_REGISTRY)/llm-d-inference-sim:$(VLLM_SIMULATOR_TAG)\nVLLM_RENDER_IMAGE ?= vllm/vllm-openai-cpu:v0.21.0\n\nimage-build:\n\tdocker build -t $(EPP_IMAGE) .\n",
    );
    let (yaml, said, moved) = init(dir.path());
    let name = dir
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_lowercase()
        .replace(['.', '_'], "-");
    let name = name.trim_matches('-');
    assert_eq!(
        yaml,
        format!("# Written by `berth init`; every key is in docs/berth-yaml.md.\nname: {name}\nmanifests:\n- kustomize: deploy/environments/dev/kgateway\nprofiles:\n  kgateway:\n  - kustomize: deploy/environments/dev/kgateway\n  kind:\n  - kustomize: deploy/environments/dev/kind\nimages:\n  epp:\n    image: ghcr.io/llm-d/llm-d-router-endpoint-picker:dev\n    env: EPP_IMAGE\n    tagEnv: EPP_TAG\n  vllm-render:\n    image: docker.io/vllm/vllm-openai-cpu:v0.21.0\n    env: VLLM_RENDER_IMAGE\n    registry: false\n  vllm:\n    image: ghcr.io/llm-d/llm-d-inference-sim:v0.7.1\n    env: VLLM_IMAGE\n    tagEnv: VLLM_SIMULATOR_TAG\n  sidecar:\n    image: ghcr.io/llm-d/llm-d-router-disagg-sidecar:dev\n    env: SIDECAR_IMAGE\n    tagEnv: SIDECAR_TAG\nregistry:\n  env: IMAGE_REGISTRY\n")
    );
    // What it decided and why is the contract: the whole of it.
    insta::assert_snapshot!(said, @r"
    berth init: manifests: kustomize deploy/environments/dev/kgateway (first of 2 overlays no other kustomization uses); the others are profiles: berth render --profile NAME
    berth init: left out 1 YAML file(s) that no kustomization's directory holds: components come from what the kustomizations build
    berth init: component `epp`: ghcr.io/llm-d/llm-d-router-endpoint-picker:dev (deploy/components/inference-gateway/deployment.yaml:21:16; EPP_IMAGE from Makefile:4; EPP_TAG from Makefile:3)
    berth init: component `vllm-render`: docker.io/vllm/vllm-openai-cpu:v0.21.0 (deploy/components/inference-gateway/deployment.yaml:48:16; VLLM_RENDER_IMAGE from Makefile:9; third-party: not under the project's registry, so IMAGE_REGISTRY leaves it)
    berth init: component `vllm`: ghcr.io/llm-d/llm-d-inference-sim:v0.7.1 (deploy/components/vllm-sim/deployment.yaml:32:16; VLLM_IMAGE from Makefile:8; VLLM_SIMULATOR_TAG from Makefile:7)
    berth init: component `sidecar`: ghcr.io/llm-d/llm-d-router-disagg-sidecar:dev (deploy/components/vllm-sim/deployment.yaml:22:16; SIDECAR_IMAGE from Makefile:6; SIDECAR_TAG from Makefile:5)
    berth init: registry: IMAGE_REGISTRY (from Makefile:1) moves the project's images
    berth init: wrote ./berth.yaml; check it with `berth validate`, and run `berth audit` for hard-coded copies of these images
    ");
    assert_eq!(
        moved,
        "EPP_IMAGE=quay.io/me/llm-d-router-endpoint-picker:dev\nVLLM_RENDER_IMAGE=docker.io/vllm/vllm-openai-cpu:v0.21.0\nVLLM_IMAGE=quay.io/me/llm-d-inference-sim:v0.7.1\nSIDECAR_IMAGE=quay.io/me/llm-d-router-disagg-sidecar:dev\n"
    );
    // Never replaces the file.
    let out = berth(dir.path()).arg("init").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("already exists; berth init never replaces it"));
}

#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn a_kubebuilder_operator_gets_image_tag_base_and_its_kustomize_rename() {
    crate::common::require_program(crate::common::Group::Tools, "kubectl");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "Makefile", "VERSION ?= 0.0.1\nIMAGE_TAG_BASE ?= example.com/memcached-operator\nIMG ?= $(IMAGE_TAG_BASE):v$(VERSION)\n\ndocker-build:\n\tdocker build -t ${IMG} .\n");
    write(d, "config/default/kustomization.yaml", "namespace: memcached-operator-system\nnamePrefix: memcached-operator-\nresources:\n- ../manager\n");
    write(d, "config/manager/kustomization.yaml", "resources:\n- manager.yaml\nimages:\n- name: controller\n  newName: example.com/memcached-operator\n  newTag: v0.0.1\n");
    write(d, "config/manager/manager.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: controller-manager, namespace: system}\nspec:\n  selector: {matchLabels: {control-plane: controller-manager}}\n  template:\n    metadata: {labels: {control-plane: controller-manager}}\n    spec:\n      containers:\n      - name: manager\n        image: controller:latest\n      - name: kube-rbac-proxy\n        image: gcr.io/kubebuilder/kube-rbac-proxy:v0.16.0\n");
    write(
        d,
        ".github/workflows/test.yml",
        "on: push\njobs: {test: {runs-on: ubuntu-latest, steps: [{run: make test}]}}\n",
    );
    let (yaml, _, moved) = init(d);
    assert!(
        yaml.contains("manifests:\n- kustomize: config/default\nimages:\n  memcached-operator:\n    image: example.com/memcached-operator:v0.0.1\n    env: IMG\n    repositoryEnv: IMAGE_TAG_BASE\n  kube-rbac-proxy:\n    image: gcr.io/kubebuilder/kube-rbac-proxy:v0.16.0\n    registry: false\nregistry:\n  env: IMAGE_REGISTRY\n"),
        "{yaml}"
    );
    assert_eq!(
        moved,
        "IMG=quay.io/me/memcached-operator:v0.0.1\nKUBE_RBAC_PROXY_IMAGE=gcr.io/kubebuilder/kube-rbac-proxy:v0.16.0\n"
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn a_kubeflow_component_takes_the_tag_its_overlay_bumps() {
    crate::common::require_program(crate::common::Group::Tools, "kubectl");
    let dir = tempfile::tempdir().unwrap();
    crate::common::copy_dir(&repo_root().join("examples/kustomize-tag-bump"), dir.path());
    std::fs::remove_file(dir.path().join("berth.yaml")).unwrap();
    let (yaml, said, moved) = init(dir.path());
    assert!(
        yaml.contains("manifests:\n- kustomize: overlays/release\n"),
        "{yaml}"
    );
    assert!(
        yaml.contains(":v0.20.0\n") && !yaml.contains(":v0.19.0"),
        "the overlay's newTag: {yaml}"
    );
    assert!(
        said.contains("the one kustomization no other uses"),
        "{said}"
    );
    assert!(moved.lines().all(|l| l.contains("=quay.io/me/")), "{moved}");
}

/// Sweep 4, I06 and I46: a `.berth.yaml.init-tmp` planted as a link to a file
/// outside the repository is never written through; I19–I23: a directory name
/// with a newline or YAML syntax stays one quoted string and adds no key.
#[test]
fn i06_i19_a_planted_link_is_never_written_and_names_cannot_inject_keys() {
    let top = tempfile::tempdir().unwrap();
    let repo = top.path().join("repo");
    let victim = top.path().join("bashrc");
    std::fs::write(&victim, "# mine\n").unwrap();
    let odd = "deploy\nnamespace: kube-system";
    write(&repo, &format!("{odd}/web.yaml"), "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - {name: web, image: ghcr.io/acme/web:v1}\n");
    std::os::unix::fs::symlink(&victim, repo.join(".berth.yaml.init-tmp")).unwrap();
    let out = berth(&repo).arg("init").output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "# mine\n");
    let yaml = std::fs::read_to_string(repo.join("berth.yaml")).unwrap();
    assert!(!yaml.contains("\nnamespace:"), "{yaml}");
    assert!(
        yaml.contains("manifests:\n- |-\n  deploy\n  namespace: kube-system/\n"),
        "{yaml}"
    );
    let out = berth(&repo).arg("images").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A berth.yaml that is a link (to anywhere) is never replaced either.
    std::fs::remove_file(repo.join("berth.yaml")).unwrap();
    std::os::unix::fs::symlink(&victim, repo.join("berth.yaml")).unwrap();
    let out = berth(&repo).arg("init").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "# mine\n");
}

/// Sweep 4, I12/I13: an expansion bomb and 20,000 variables finish at once, and
/// a value past the limit is named, not used; I17/I18: what cannot be read is named.
#[test]
fn i12_i13_i18_make_expansion_is_bounded_and_unreadable_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut makefile =
        String::from("B0 = xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n");
    for i in 1..10 {
        let p = i - 1;
        makefile.push_str(&format!(
            "B{i} = $(B{p})$(B{p})$(B{p})$(B{p})$(B{p})$(B{p})$(B{p})$(B{p})\n"
        ));
    }
    makefile.push_str("BOMB_IMAGE ?= $(B9)\n");
    for i in 0..20_000 {
        makefile.push_str(&format!("V{i} ?= $(V{})x\n", i + 1));
    }
    write(d, "Makefile", &makefile);
    write(d, "deploy/web.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - {name: web, image: ghcr.io/acme/web:v1}\n");
    write(d, "deploy/bad.yaml", "");
    std::fs::write(d.join("deploy/bad.yaml"), b"apiVersion: v1\nkind: \xff\n").unwrap();
    let start = std::time::Instant::now();
    let out = berth(d).arg("init").output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        start.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    assert!(
        said.contains("Makefile:11: `BOMB_IMAGE` expands past 4096 characters; not used"),
        "{said}"
    );
    assert!(
        said.contains("deploy/bad.yaml: skipped: not UTF-8 text"),
        "{said}"
    );
}

/// Sweep 4, I38: repositories that share a last component get distinct names (not
/// `web-2-2`); I33: `--project FILE` is the file init writes.
#[test]
fn i38_i33_names_are_numbered_and_project_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pod = |name: &str, image: &str| {
        format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  containers:\n  - {{name: c, image: {image}}}\n")
    };
    write(d, "deploy/a.yaml", pod("a", "ghcr.io/acme/web:v1"));
    write(d, "deploy/b.yaml", pod("b", "quay.io/other/web:v1"));
    write(d, "deploy/c.yaml", pod("c", "docker.io/third/web:v1"));
    std::fs::create_dir(d.join("conf")).unwrap();
    let out = berth(d)
        .args(["--project", "conf/berth.yaml", "init", "."])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let yaml = std::fs::read_to_string(d.join("conf/berth.yaml")).unwrap();
    assert!(!d.join("berth.yaml").exists());
    // The project's own image (its registry is the one most images share here) keeps `web`;
    // third-party ones take their owner's name (#46, R5).
    for name in ["  web:\n", "  acme-web:\n", "  other-web:\n"] {
        assert!(yaml.contains(name), "{name} in {yaml}");
    }
    assert!(!yaml.contains("web-2-2"), "{yaml}");
}

/// `berth validate` in `dir`, which must pass and say nothing, then `berth
/// render`, both under `IMAGE_REGISTRY=quay.io/me` with the test plane's helm:
/// the rendered YAML.
fn validated_render(dir: &Path) -> String {
    let run =
        |args: &[&str]| crate::helm_source::berth(dir, args, &[("IMAGE_REGISTRY", "quay.io/me")]);
    let validated = run(&["validate"]);
    assert!(
        validated.status.success() && validated.stderr.is_empty(),
        "{}",
        crate::common::transcript(&validated)
    );
    String::from_utf8_lossy(&run(&["render"]).stdout).into_owned()
}

/// #35 item 2: a repository with a Helm chart (shaped like llm-d's router: the
/// EPP in `image.repository` with an empty tag meaning the chart's appVersion,
/// copied into a sidecar's args; a sidecar as a whole reference; model servers
/// in a list) gets the chart as a `helm:` source and `helmValues:` for each
/// image its values hold — and the fork moves the chart's copies too.
#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn a_helm_chart_gets_a_helm_source_and_the_values_that_carry_its_images() {
    let temp = tempfile::tempdir().unwrap();
    let dir = &temp.path().join("router-repo");
    write(
        dir,
        "charts/router/Chart.yaml",
        "apiVersion: v2\nname: router\nversion: 0.1.0\nappVersion: v0.3.0\n",
    );
    write(
        dir,
        "charts/router/values.yaml",
        "image:\n  repository: ghcr.io/llm-d/epp\n  tag: \"\"\nproxy:\n  image: ghcr.io/llm-d/routing-sidecar:v0.2.0\ndecode:\n  containers:\n    - name: vllm\n      image: ghcr.io/llm-d/vllm:v0.2.0\n",
    );
    write(
        dir,
        "charts/router/templates/deployment.yaml",
        r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}-epp}
spec:
  selector: {matchLabels: {app: epp}}
  template:
    metadata: {labels: {app: epp}}
    spec:
      containers:
        - name: epp
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
        - name: proxy
          image: {{ .Values.proxy.image }}
          args: ["--epp={{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"]
      {{- range .Values.decode.containers }}
        - name: {{ .name }}
          image: {{ .image }}
      {{- end }}
"#,
    );
    let out = berth(dir).arg("init").output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{said}");
    let yaml = std::fs::read_to_string(dir.join("berth.yaml")).unwrap();
    assert_eq!(
        yaml,
        "# Written by `berth init`; every key is in docs/berth-yaml.md.\nname: router-repo\nmanifests:\n- helm:\n    chart: charts/router\n    release: router\nimages:\n  epp:\n    image: ghcr.io/llm-d/epp:v0.3.0\n    helmValues:\n      repository: image.repository\n      tag: image.tag\n  routing-sidecar:\n    image: ghcr.io/llm-d/routing-sidecar:v0.2.0\n    helmValues:\n      image: proxy.image\n  vllm:\n    image: ghcr.io/llm-d/vllm:v0.2.0\nregistry:\n  env: IMAGE_REGISTRY\n"
    );
    assert!(
        said.contains("no tag: the chart's appVersion `v0.3.0`")
            && said.contains("images in the list `decode.containers`"),
        "{said}"
    );
    let rendered = validated_render(dir);
    assert_eq!(
        rendered.matches("quay.io/me/epp:v0.3.0").count(),
        2,
        "{rendered}"
    );
    assert!(
        rendered.contains("image: quay.io/me/routing-sidecar:v0.2.0")
            && rendered.contains("image: quay.io/me/vllm:v0.2.0")
            && !rendered.contains("ghcr.io"),
        "{rendered}"
    );
}

/// A chart shaped like Kubeflow's katib: each image's values hold only its
/// name, which the templates join to `global.imageRegistry`, and an empty tag
/// defaults to `global.imageTag` (not the appVersion); the UI is off by
/// default, its image made in a helper. Before, init proposed
/// `docker.io/library/katib-controller:0.16.0`, and render deployed
/// `ghcr.io/kubeflow/katib/docker.io/library/katib-controller:0.16.0`.
#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn a_chart_that_joins_a_registry_value_to_each_name_gets_both_values() {
    let temp = tempfile::tempdir().unwrap();
    let dir = &temp.path().join("katib-repo");
    write(
        dir,
        "charts/katib/Chart.yaml",
        "apiVersion: v2\nname: katib\nversion: 0.16.0\nappVersion: 0.16.0\n",
    );
    write(
        dir,
        "charts/katib/values.yaml",
        "global:\n  imageRegistry: ghcr.io/kubeflow/katib\n  imageTag: v0.19.0\ncontroller:\n  image:\n    repository: katib-controller\n    tag: \"\"\nui:\n  enabled: false\n  image:\n    repository: katib-ui\n    tag: \"\"\n",
    );
    write(
        dir,
        "charts/katib/templates/_helpers.tpl",
        "{{- define \"katib.ui.image\" -}}\n{{- $registry := .Values.global.imageRegistry -}}\n{{- $repository := .Values.ui.image.repository -}}\n{{- $tag := .Values.ui.image.tag | default .Values.global.imageTag -}}\n{{- printf \"%s/%s:%s\" $registry $repository $tag }}\n{{- end }}\n",
    );
    write(
        dir,
        "charts/katib/templates/deployment.yaml",
        r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: katib-controller}
spec:
  selector: {matchLabels: {app: katib}}
  template:
    metadata: {labels: {app: katib}}
    spec:
      containers:
        - name: controller
          image: "{{ .Values.global.imageRegistry }}/{{ .Values.controller.image.repository }}:{{ .Values.controller.image.tag | default .Values.global.imageTag }}"
{{- if .Values.ui.enabled }}
        - name: ui
          image: {{ include "katib.ui.image" . }}
{{- end }}
"#,
    );
    let out = crate::helm_source::berth(dir, &["init"], &[]);
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{said}");
    let yaml = std::fs::read_to_string(dir.join("berth.yaml")).unwrap();
    assert!(
        yaml.contains("  katib-controller:\n    image: ghcr.io/kubeflow/katib/katib-controller:v0.19.0\n    helmValues:\n      registry: global.imageRegistry\n      name: controller.image.repository\n      tag: controller.image.tag\n")
            && yaml.contains("  katib-ui:\n    image: ghcr.io/kubeflow/katib/katib-ui:v0.19.0\n    helmValues:\n      registry: global.imageRegistry\n      name: ui.image.repository\n      tag: ui.image.tag\n")
            && !yaml.contains("docker.io"),
        "{yaml}\n{said}"
    );
    let rendered = validated_render(dir);
    assert!(
        rendered.contains("image: \"quay.io/me/katib-controller:v0.19.0\""),
        "{rendered}"
    );
    let ui = crate::helm_source::berth(dir, &["render", "--tag", "katib-ui=v0.20.0"], &[]);
    assert!(ui.status.success(), "{}", crate::common::transcript(&ui));
}

/// #36 item 1: YAML under docs/, test/, install/ (a released archive) and the
/// like is not what the project deploys: no component and no manifests come
/// from it, and a line says what was left out.
#[test]
fn documentation_tests_and_archives_are_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let pod = |image: &str| {
        format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  containers: [{{name: c, image: '{image}'}}]\n")
    };
    write(dir.path(), "deploy/app.yaml", pod("ghcr.io/acme/app:v2"));
    write(
        dir.path(),
        "docs/samples/old.yaml",
        pod("ghcr.io/acme/old:v0"),
    );
    write(
        dir.path(),
        "install/v0.9/all.yaml",
        pod("ghcr.io/acme/app:v0.9.0-rc0"),
    );
    write(
        dir.path(),
        "test/e2e/kind.yaml",
        pod("ghcr.io/acme/fixture:v1"),
    );
    let out = berth(dir.path()).arg("init").output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{said}");
    let yaml = std::fs::read_to_string(dir.path().join("berth.yaml")).unwrap();
    assert!(
        yaml.contains("manifests:\n- deploy/\nimages:\n  app:\n    image: ghcr.io/acme/app:v2\n")
            && !yaml.contains("old")
            && !yaml.contains("fixture"),
        "{yaml}"
    );
    assert!(
        said.contains("berth init: left out 3 YAML file(s) under docs/"),
        "{said}"
    );
}

/// #36 item 1: `berth init --check` compares the kept berth.yaml with what init
/// would write now: nothing after init; the default image that drifted since,
/// and an image no component claims, named with where the repository says so.
#[test]
fn init_check_names_drift_between_the_repository_and_berth_yaml() {
    let dir = tempfile::tempdir().unwrap();
    let pod = |name: &str, image: &str| {
        format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  containers: [{{name: c, image: '{image}'}}]\n")
    };
    write(
        dir.path(),
        "deploy/app.yaml",
        pod("app", "ghcr.io/acme/app:v2"),
    );
    let check = || {
        berth(dir.path())
            .args(["init", "--check"])
            .output()
            .unwrap()
    };
    let out = check();
    assert_eq!(out.status.code(), Some(1), "no berth.yaml yet");
    assert!(String::from_utf8_lossy(&out.stderr).contains("run `berth init` to write one"));
    assert!(berth(dir.path())
        .arg("init")
        .output()
        .unwrap()
        .status
        .success());
    let out = check();
    assert!(
        out.status.success() && out.stdout.is_empty(),
        "{}",
        crate::common::transcript(&out)
    );
    write(
        dir.path(),
        "deploy/app.yaml",
        pod("app", "ghcr.io/acme/app:v3"),
    );
    write(
        dir.path(),
        "deploy/worker.yaml",
        pod("worker", "ghcr.io/acme/worker:v3"),
    );
    let out = check();
    assert_eq!(out.status.code(), Some(1));
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        listed.contains("component `app` defaults to `ghcr.io/acme/app:v2`, but the repository now says `ghcr.io/acme/app:v3` (deploy/app.yaml:5:")
            && listed.contains("the repository runs `ghcr.io/acme/worker:v3` (deploy/worker.yaml:5:"),
        "{listed}"
    );
}

/// #36 item 1: every candidate overlay is built (`kubectl kustomize`); one that
/// does not build is left out with its reason, never proposed as a profile.
#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn an_overlay_that_does_not_build_is_left_out() {
    crate::common::require_program(crate::common::Group::Tools, "kubectl");
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "deploy/base/kustomization.yaml",
        "resources: [app.yaml]\n",
    );
    write(
        dir.path(),
        "deploy/base/app.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: 'ghcr.io/acme/app:v1'}]\n",
    );
    write(
        dir.path(),
        "deploy/overlays/dev/kustomization.yaml",
        "resources: [../../base]\n",
    );
    write(
        dir.path(),
        "deploy/overlays/broken/kustomization.yaml",
        "resources: [../../base, missing.yaml]\n",
    );
    let out = berth(dir.path()).arg("init").output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{said}");
    let yaml = std::fs::read_to_string(dir.path().join("berth.yaml")).unwrap();
    assert!(
        yaml.contains("manifests:\n- kustomize: deploy/overlays/dev\nimages:"),
        "{yaml}"
    );
    assert!(!yaml.contains("broken"), "{yaml}");
    assert!(
        said.contains(
            "berth init: left out kustomization deploy/overlays/broken: it does not build here ("
        ) && said.contains("missing.yaml"),
        "{said}"
    );
}

/// KServe's shape (#36 items 1 and 6): the image variables live in a file the
/// Makefile includes by name (`include kserve-images.env`, not a `.mk`); they
/// are name-only (`CONTROLLER_IMG ?= kserve-controller`), composed with
/// `${KO_DOCKER_REPO}` and `${TAG}`; the Makefile applies `config/default`,
/// which an overlay also builds on; a runtime ships `:latest` and `:latest-gpu`.
#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn a_kserve_shaped_repository_gets_its_included_name_only_variables() {
    crate::common::require_program(crate::common::Group::Tools, "kubectl");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "Makefile", "include kserve-images.env\ndeploy:\n\tkubectl apply --server-side=true -k config/default\ndocker-build:\n\tdocker build . -t ${KO_DOCKER_REPO}/${CONTROLLER_IMG}\n\tdocker build . -t ${KO_DOCKER_REPO}/${HF_IMG}:${TAG}\n");
    write(
        d,
        "kserve-images.env",
        "TAG ?= latest\nCONTROLLER_IMG ?= kserve-controller\nHF_IMG ?= huggingfaceserver\n",
    );
    write(
        d,
        "config/default/kustomization.yaml",
        "resources: [manager.yaml, runtimes.yaml]\n",
    );
    write(
        d,
        "config/overlays/dev/kustomization.yaml",
        "resources: [../../default]\nnamePrefix: dev-\n",
    );
    let pod = |name: &str, image: &str| {
        format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  containers: [{{name: c, image: '{image}'}}]\n")
    };
    write(
        d,
        "config/default/manager.yaml",
        pod("manager", "kserve/kserve-controller:latest"),
    );
    write(
        d,
        "config/default/runtimes.yaml",
        format!(
            "{}---\n{}",
            pod("hf", "kserve/huggingfaceserver:latest"),
            pod("hf-gpu", "kserve/huggingfaceserver:latest-gpu")
        ),
    );
    let out = berth(d).arg("init").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let yaml = std::fs::read_to_string(d.join("berth.yaml")).unwrap();
    assert!(
        yaml.contains("manifests:\n- kustomize: config/default\n"),
        "{yaml}"
    );
    assert!(
        yaml.contains("images:\n  controller:\n    image: docker.io/kserve/kserve-controller:latest\n  hf:\n    image: docker.io/kserve/huggingfaceserver:latest\n    tagSuffix: true\nregistry:\n  env: KO_DOCKER_REPO\ntag:\n  env: TAG\n"),
        "{yaml}"
    );
    // The one thing left to say is KServe's own (#46 item 9): make builds the
    // controller with no tag, berth deploys it at `$TAG`.
    let strict = berth(d).args(["validate", "--strict"]).output().unwrap();
    let said = String::from_utf8_lossy(&strict.stderr);
    assert_eq!(
        said.lines().filter(|l| l.starts_with("warning:")).collect::<Vec<_>>(),
        ["warning: Makefile:5: this line builds `CONTROLLER_IMG` with no tag, so make makes `…/kserve-controller:latest`, but berth deploys component `controller` at the shared tag `TAG` (berth.yaml: `tag.env`) once it is set: append `:$(TAG)` to the image here, so `berth env -- make …` builds what berth deploys [makefile-default]"],
        "{said}"
    );
    // The developer's fork: the registry and the tag move every project image,
    // the GPU variant keeps its suffix.
    let out = berth(d)
        .arg("render")
        .env("KO_DOCKER_REPO", "quay.io/me")
        .env("TAG", "fix-1")
        .output()
        .unwrap();
    let rendered = String::from_utf8_lossy(&out.stdout);
    for image in [
        "quay.io/me/kserve-controller:fix-1",
        "quay.io/me/huggingfaceserver:fix-1",
        "quay.io/me/huggingfaceserver:fix-1-gpu",
    ] {
        assert!(rendered.contains(image), "{image}\n{rendered}");
    }
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

/// KFP's shape (#36 item 1): the release overlay and the base's `newTag:
/// 2.16.0` give the default, not a dev overlay's `newTag: master` (a release
/// overlay ranks before one named for development, and tags come from what the
/// first overlay builds); a patch no kustomization lists holds an image that is
/// no component.
#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn a_kfp_shaped_repository_takes_the_release_tag_and_ignores_unused_patches() {
    crate::common::require_program(crate::common::Group::Tools, "kubectl");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let deployment = |image: &str| {
        format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: ml-pipeline}}\nspec:\n  selector: {{matchLabels: {{app: p}}}}\n  template:\n    metadata: {{labels: {{app: p}}}}\n    spec:\n      containers:\n      - {{name: api, image: '{image}'}}\n")
    };
    write(d, "base/kustomization.yaml", "resources: [api.yaml]\nimages:\n- {name: ghcr.io/kubeflow/kfp-api-server, newTag: 2.16.0}\n");
    write(
        d,
        "base/api.yaml",
        deployment("ghcr.io/kubeflow/kfp-api-server"),
    );
    write(
        d,
        "base/proxy-patch.yaml",
        deployment("gcr.io/kubebuilder/kube-rbac-proxy:v0.15.0"),
    );
    write(d, "env/dev/kustomization.yaml", "resources: [../../base]\nimages:\n- {name: ghcr.io/kubeflow/kfp-api-server, newTag: master}\n");
    write(
        d,
        "env/plain/kustomization.yaml",
        "resources: [../../base]\n",
    );
    let out = berth(d).arg("init").output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    let yaml = std::fs::read_to_string(d.join("berth.yaml")).unwrap();
    assert!(
        yaml.contains("manifests:\n- kustomize: env/plain\nprofiles:\n  plain:\n  - kustomize: env/plain\n  dev:\n  - kustomize: env/dev\nimages:\n  kfp-api-server:\n    image: ghcr.io/kubeflow/kfp-api-server:2.16.0\nregistry:\n"),
        "{yaml}"
    );
    assert!(
        said.contains("left out 1 image(s) no kustomization builds (an unused patch, a loose file): base/proxy-patch.yaml:10:"),
        "{said}"
    );
    let strict = berth(d)
        .args(["validate", "--strict", "--profile", "plain"])
        .env("IMAGE_REGISTRY", "quay.io/me")
        .output()
        .unwrap();
    assert!(
        strict.status.success(),
        "{}",
        String::from_utf8_lossy(&strict.stderr)
    );
}

/// R5 (#46): colliding image names. The Makefile's `WEB_IMAGE` keeps `web` for
/// `ghcr.io/acme/web` although another repository named `web` is found first; a third-party
/// `ghcr.io/other/web` takes its owner's name (`other-web`, `registry: false`); the rest are
/// `web-2`, `web-x`; every variable is one component's, so init writes, validate and images pass.
#[test]
fn r5_colliding_image_names_get_distinct_components_and_variables() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "Makefile", "IMAGE_REGISTRY ?= ghcr.io/acme\nWEB_IMAGE ?= ghcr.io/acme/web:v1\nAPI_TAG ?= v2\nAPI_IMAGE ?= $(IMAGE_REGISTRY)/api:$(API_TAG)\n");
    write(d, "deploy/web.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n      - {name: web, image: ghcr.io/acme/web:v1}\n      - {name: api, image: ghcr.io/acme/api:v2}\n");
    write(d, "deploy/more.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: more}\nspec:\n  template:\n    spec:\n      containers:\n      - {name: a, image: ghcr.io/acme/web-2:v1}\n      - {name: b, image: ghcr.io/other/web:v1}\n      - {name: c, image: ghcr.io/acme/web.x:v1}\n");
    let (yaml, _, images) = init(d);
    for entry in [
        "  web:\n    image: ghcr.io/acme/web:v1\n    env: WEB_IMAGE\n",
        "  other-web:\n    image: ghcr.io/other/web:v1\n    registry: false\n",
        "  web-2:\n    image: ghcr.io/acme/web-2:v1\n",
        "  web-x:\n    image: ghcr.io/acme/web.x:v1\n",
    ] {
        assert!(yaml.contains(entry), "{entry} in {yaml}");
    }
    assert!(images.contains("WEB_IMAGE=quay.io/me/web:v1\n"), "{images}");
    assert!(
        images.contains("OTHER_WEB_IMAGE=ghcr.io/other/web:v1\n"),
        "{images}"
    );
}

/// Item 5 (#46): init never aborts on one candidate. Two leaf overlays whose paths are far
/// over 63 characters and end in one directory name get short, distinct profile names; two
/// charts of one name get two profiles; a chart under `testdata/` is a fixture, not a source;
/// `.tekton/` is CI (item 6).
#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn long_and_colliding_candidates_get_distinct_profile_names() {
    crate::common::require_program(crate::common::Group::Tools, "kubectl");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: c, image: 'ghcr.io/acme/web:v1'}]\n";
    write(
        d,
        "deploy/base/kustomization.yaml",
        "resources: [pod.yaml]\n",
    );
    write(d, "deploy/base/pod.yaml", pod);
    let deep = "overlays/a-rather-long-team-name/another-long-environment-name-here";
    for side in ["east", "west"] {
        write(
            d,
            &format!("deploy/{deep}/{side}/tls/kustomization.yaml"),
            "resources: [../../../../../base]\n",
        );
    }
    for dir in ["charts/web", "other/charts/web", "testdata/charts/fixture"] {
        let name = dir.rsplit('/').next().unwrap();
        write(
            d,
            &format!("{dir}/Chart.yaml"),
            format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n"),
        );
        write(
            d,
            &format!("{dir}/values.yaml"),
            "image: {repository: ghcr.io/acme/web, tag: v1}\n",
        );
        write(d, &format!("{dir}/templates/pod.yaml"), "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: c, image: '{{ .Values.image.repository }}:{{ .Values.image.tag }}'}]\n");
    }
    // A CI pipeline (llm-d's `.tekton/`) is no manifest (#46 item 6).
    write(d, ".tekton/pipelinerun.yaml", "apiVersion: tekton.dev/v1\nkind: PipelineRun\nmetadata: {name: build}\nspec:\n  taskRunTemplate: {podTemplate: {containers: [{name: c, image: 'quay.io/ci/tool:v1'}]}}\n");
    let out = berth(d).arg("init").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let yaml = std::fs::read_to_string(d.join("berth.yaml")).unwrap();
    assert!(
        !yaml.contains("tekton") && !yaml.contains("quay.io/ci"),
        "{yaml}"
    );
    let project = berth_core::project::parse("berth.yaml", d.to_path_buf(), &yaml)
        .unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    let names: Vec<&str> = project.profiles.iter().map(|p| p.name.as_str()).collect();
    assert!(names.iter().all(|n| n.len() <= 63), "{names:?}");
    assert!(
        names.contains(&"web") && names.contains(&"web-2"),
        "{names:?}"
    );
    assert_eq!(
        names.iter().filter(|n| n.ends_with("tls")).count(),
        2,
        "{names:?}"
    );
    assert!(!yaml.contains("testdata"), "{yaml}");
}

/// opendatahub-operator's shape (#46 item 6): the Makefile deploys
/// `$(KUSTOMIZE) build $(CONFIG_DIR)/default`, with `CONFIG_DIR` set inside an
/// `ifeq`; the overlay's inputs are generated by `make manifests` and
/// gitignored, so it does not build in a fresh clone — init names the target
/// instead of kustomize's "must resolve to a file".
#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn an_overlay_whose_inputs_make_generates_names_the_target() {
    crate::common::require_program(crate::common::Group::Tools, "kubectl");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, ".gitignore", "config/crd/bases\n");
    write(d, "Makefile", "PLATFORM ?= odh\nifeq ($(PLATFORM), odh)\n\tCONFIG_DIR=config\nelse\n\tCONFIG_DIR=config/rhoai\nendif\nmanifests: controller-gen\n\t$(CONTROLLER_GEN) crd output:crd:artifacts:config=$(CONFIG_DIR)/crd/bases\ndeploy: manifests\n\t$(KUSTOMIZE) build $(CONFIG_DIR)/default | kubectl apply -f -\n");
    write(
        d,
        "config/default/kustomization.yaml",
        "resources: [../crd, ../manager]\n",
    );
    write(d, "config/crd/kustomization.yaml", "resources: [bases/]\n");
    write(
        d,
        "config/manager/kustomization.yaml",
        "resources: [manager.yaml]\n",
    );
    write(d, "config/manager/manager.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: m}\nspec:\n  containers: [{name: c, image: 'quay.io/acme/op:v1'}]\n");
    let out = berth(d).arg("init").output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("kustomization config/default does not build here (its inputs config/crd/bases are generated (.gitignore lists them, so the repository does not hold them): `make manifests` writes them; run it, then `berth init` again); kept all the same"),
        "{said}"
    );
    // It is still what the project deploys: berth.yaml is right once make has run.
    let written = std::fs::read_to_string(d.join("berth.yaml")).unwrap();
    assert!(
        written.contains("manifests:\n- kustomize: config/default\n"),
        "{written}"
    );
}

/// opendatahub-operator's shape once `make manifests manager-kustomization` has
/// run, as init asked: the generated kustomization (`cp kustomization.yaml.in
/// kustomization.yaml && kustomize edit set image REPLACE_IMAGE=$(IMG)`) and the
/// CRD bases are gitignored, yet kustomize reads them, so init does too: the
/// operator's image (a placeholder that is no valid reference,
/// `REPLACE_IMAGE:v0.0.0-placeholder`) is found as the rename makes it, with
/// the Makefile's variables. It was "images: none found".
#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn generated_inputs_on_disk_are_read_though_gitignored() {
    crate::common::require_program(crate::common::Group::Tools, "kubectl");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        d,
        ".gitignore",
        "config/crd/bases\nconfig/manager/kustomization.yaml\n",
    );
    write(d, "Makefile", "IMAGE_TAG_BASE ?= quay.io/acme/op\nIMG_TAG ?= latest\nIMG ?= $(IMAGE_TAG_BASE):$(IMG_TAG)\nmanager-kustomization:\n\tcd config/manager && cp -f kustomization.yaml.in kustomization.yaml && $(KUSTOMIZE) edit set image REPLACE_IMAGE=$(IMG)\ndeploy: manager-kustomization\n\t$(KUSTOMIZE) build config/default | kubectl apply -f -\n");
    write(
        d,
        "config/default/kustomization.yaml",
        "resources: [../crd, ../manager]\n",
    );
    write(d, "config/crd/kustomization.yaml", "resources: [bases/]\n");
    write(
        d,
        "config/manager/kustomization.yaml.in",
        "resources: [manager.yaml]\n",
    );
    write(d, "config/manager/manager.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: m}\nspec:\n  selector: {matchLabels: {a: m}}\n  template:\n    metadata: {labels: {a: m}}\n    spec:\n      containers: [{name: c, image: 'REPLACE_IMAGE:v0.0.0-placeholder'}]\n");
    // What the make targets write.
    write(d, "config/manager/kustomization.yaml", "resources: [manager.yaml]\nimages:\n- name: REPLACE_IMAGE\n  newName: quay.io/acme/op\n  newTag: latest\n");
    write(
        d,
        "config/crd/bases/kustomization.yaml",
        "resources: [widgets.yaml]\n",
    );
    write(d, "config/crd/bases/widgets.yaml", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.acme.io}\nspec:\n  group: acme.io\n  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema: {openAPIV3Schema: {type: object}}\n");
    let (yaml, said, moved) = init(d);
    assert!(
        yaml.contains("images:\n  op:\n    image: quay.io/acme/op:latest\n    env: IMG\n    tagEnv: IMG_TAG\n    repositoryEnv: IMAGE_TAG_BASE\n"),
        "{yaml}\n{said}"
    );
    assert!(!said.contains("none found"), "{said}");
    assert_eq!(moved, "IMG=quay.io/me/op:latest\n");
}

/// llm-d-router's gateway chart: a chart whose templates `required` a value
/// only its user can give does not render with its own values, so init leaves
/// it out of the profiles (with the reason and what to add) rather than write
/// a berth.yaml `validate` fails on; its images are no components. The chart
/// beside it that renders is proposed as before.
#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn a_chart_that_requires_a_value_is_left_out_with_the_reason() {
    let temp = tempfile::tempdir().unwrap();
    let dir = &temp.path().join("gw-repo");
    let chart = |name: &str, template: &str| {
        write(
            dir,
            &format!("charts/{name}/Chart.yaml"),
            format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n"),
        );
        write(
            dir,
            &format!("charts/{name}/values.yaml"),
            format!("image:\n  repository: ghcr.io/acme/{name}\n  tag: v1\n"),
        );
        write(dir, &format!("charts/{name}/templates/pod.yaml"), template);
    };
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: \"{{ .Values.image.repository }}:{{ .Values.image.tag }}\"}]\n";
    chart(
        "gw",
        &format!("{{{{- $_ := required \".Values.match is required\" .Values.match }}}}\n{pod}"),
    );
    chart("ok", pod);
    let out = crate::helm_source::berth(dir, &["init"], &[]);
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("left out chart charts/gw: `helm template` refuses its own values (`.Values.match is required`, at gw/templates/pod.yaml:1:"),
        "{said}"
    );
    let yaml = std::fs::read_to_string(dir.join("berth.yaml")).unwrap();
    assert!(
        !yaml.contains("charts/gw") && !yaml.contains("acme/gw"),
        "{yaml}"
    );
    assert!(
        yaml.contains("chart: charts/ok") && yaml.contains("image: ghcr.io/acme/ok:v1"),
        "{yaml}"
    );
    let validated = crate::helm_source::berth(dir, &["validate"], &[]);
    assert!(
        validated.status.success() && validated.stderr.is_empty(),
        "{}",
        crate::common::transcript(&validated)
    );
}

/// Kueue's and llm-d-router's shape (#46): a chart whose `file://` dependency is
/// not built yet is proposed, and init says what `berth validate` will need.
#[test]
fn a_chart_with_unbuilt_dependencies_is_named_with_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        d,
        "charts/lib/Chart.yaml",
        "apiVersion: v2\nname: lib\nversion: 0.1.0\n",
    );
    write(d, "charts/app/Chart.yaml", "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- {name: lib, version: 0.1.0, repository: 'file://../lib'}\n");
    write(
        d,
        "charts/app/values.yaml",
        "image: {repository: ghcr.io/acme/app, tag: v1}\n",
    );
    let out = berth(d).arg("init").output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("berth init: chart charts/app lists dependencies its charts/ directory does not hold (lib): run `helm dependency build charts/app` before `berth validate`"),
        "{said}"
    );
}
