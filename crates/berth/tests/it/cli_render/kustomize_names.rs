//! A `configMapGenerator`'s ConfigMap whose text berth rewrites (an `imagePaths`
//! entry at a data key) gets the name kustomize would give the rewritten text,
//! and every reference follows, so its pods roll (Kubeflow's profile controller
//! reads its frontend image from `sync.py`). Checked against the real
//! `kubectl kustomize`: the same generator over the text berth writes gives the
//! same name.

use std::path::Path;

use crate::common::{self, berth};

use crate::common::write;

const BERTH_YAML: &str = "\
name: pipelines
manifests: [{kustomize: deploy}]
images:
  frontend: {image: 'ghcr.io/kubeflow/kfp-frontend:2.5.0'}
  controller: {image: 'python:3.12'}
registry: {env: IMAGE_REGISTRY}
imagePaths:
  - {kind: ConfigMap, path: 'data[\"sync.py\"]'}
configPaths:
  - {kind: Hook, path: spec.codeConfigMap}
";

/// The generator, with `sync.py` as given; the workload mounts it, reads a key of
/// it and takes all of it as variables; a custom resource names it too (kustomize
/// learns that field from `configurations:`, berth from `configPaths:`).
fn tree(root: &Path, sync_py: &str) {
    write(
        root,
        "deploy/kustomization.yaml",
        "\
namespace: kubeflow
resources: [deployment.yaml, hook.yaml]
configurations: [names.yaml]
configMapGenerator:
- name: profile-controller-code
  files: [sync.py]
- name: profile-controller-env
  literals: [KFP_VERSION=2.5.0]
",
    );
    write(
        root,
        "deploy/names.yaml",
        "nameReference:\n- kind: ConfigMap\n  fieldSpecs: [{kind: Hook, path: spec/codeConfigMap}]\n",
    );
    write(root, "deploy/sync.py", sync_py);
    write(
        root,
        "deploy/deployment.yaml",
        "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: profile-controller}
spec:
  selector: {matchLabels: {app: pc}}
  template:
    metadata: {labels: {app: pc}}
    spec:
      containers:
      - name: controller
        image: python:3.12
        envFrom: [{configMapRef: {name: profile-controller-code}}]
        env:
        - name: VERSION
          valueFrom: {configMapKeyRef: {name: profile-controller-env, key: KFP_VERSION}}
        volumeMounts: [{name: hooks, mountPath: /hooks}]
      volumes:
      - name: hooks
        configMap: {name: profile-controller-code}
",
    );
    write(
        root,
        "deploy/hook.yaml",
        "apiVersion: acme.io/v1\nkind: Hook\nmetadata: {name: sync}\nspec: {codeConfigMap: profile-controller-code}\n",
    );
}

const SYNC_PY: &str =
    "FRONTEND = os.environ.get(\"FRONTEND_IMAGE\", \"ghcr.io/kubeflow/kfp-frontend:2.5.0\")\n";

/// `kubectl kustomize deploy` in `root`.
fn kustomize(root: &Path) -> String {
    let out = std::process::Command::new("kubectl")
        .args(["kustomize", "deploy"])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::transcript(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// `name: profile-controller-code-…` of the first ConfigMap in `out`.
fn code_name(out: &str) -> String {
    out.lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix("name: profile-controller-code-"))
        .map(|suffix| format!("profile-controller-code-{suffix}"))
        .unwrap_or_else(|| panic!("no generated name in {out}"))
}

#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn a_generated_configmap_whose_text_berth_rewrites_gets_kustomizes_name_for_it() {
    common::require_program(common::Group::Tools, "kubectl");
    let dir = common::project(BERTH_YAML);
    tree(dir.path(), SYNC_PY);
    let render = |registry: Option<&str>| {
        let mut command = berth(dir.path());
        command.arg("render");
        if let Some(registry) = registry {
            command.env("IMAGE_REGISTRY", registry);
        }
        let out = command.output().unwrap();
        assert!(out.status.success(), "{}", common::transcript(&out));
        String::from_utf8(out.stdout).unwrap()
    };

    // Nothing to change: kustomize's names stand.
    let plain = render(None);
    assert_eq!(
        code_name(&plain),
        code_name(&kustomize(dir.path())),
        "{plain}"
    );

    // The registry moves the image in sync.py: the name is kustomize's for the new text.
    let moved = render(Some("quay.io/me"));
    let renamed = code_name(&moved);
    assert_ne!(renamed, code_name(&plain), "{moved}");
    let expected = tempfile::tempdir().unwrap();
    tree(
        expected.path(),
        &SYNC_PY.replace("ghcr.io/kubeflow/", "quay.io/me/"),
    );
    assert_eq!(renamed, code_name(&kustomize(expected.path())), "{moved}");
    // Every reference follows: the volume, envFrom and the configPaths field.
    assert_eq!(moved.matches(renamed.as_str()).count(), 4, "{moved}");
    assert!(!moved.contains(&code_name(&plain)), "{moved}");
    // The other generated ConfigMap's text is unchanged, and so is its name.
    assert_eq!(
        moved.matches("profile-controller-env-").count(),
        2,
        "{moved}"
    );
    assert!(moved.contains("quay.io/me/kfp-frontend:2.5.0"), "{moved}");
}
