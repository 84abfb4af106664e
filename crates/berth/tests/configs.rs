//! Generated configs: kustomize-identical names, reference rewriting,
//! rollouts of exactly the pods that use a changed config.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use common::{berth, project, require_program};

fn write(dir: &Path, path: &str, content: &[u8]) {
    let path = dir.join(path);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

/// `kind/name` of every generated object in a YAML stream, by base name.
fn generated_names(yaml: &str) -> BTreeMap<String, String> {
    berth_yaml::load_all(yaml, berth_yaml::Limits::default())
        .unwrap()
        .iter()
        .filter(|d| {
            matches!(
                d.get("kind").and_then(berth_yaml::Node::as_str),
                Some("ConfigMap" | "Secret")
            )
        })
        .map(|d| {
            let kind = d.get("kind").and_then(berth_yaml::Node::as_str).unwrap();
            let name = d
                .get("metadata")
                .and_then(|m| m.get("name"))
                .and_then(berth_yaml::Node::as_str)
                .unwrap()
                .to_string();
            let base = name.rsplit_once('-').map(|(b, _)| b.to_string()).unwrap();
            (format!("{kind}/{base}"), name)
        })
        .collect()
}

#[test]
fn names_match_kubectl_kustomize_on_tricky_data() {
    if !require_program("kubectl", "the kustomize name parity test") {
        return;
    }
    let dir = project(
        "name: parity
configs:
  html:
    literals: [\"a=<b>&c\", 'q=\"x\"', \"num=8080\", \"bool=true\", \"float=1.5e3\"]
  text:
    files: [data/unicode.txt, \"custom-key=data/lines.txt\"]
    envs: [data/app.env]
  binary:
    files: [data/blob.bin, data/unicode.txt]
  empty: {}
  creds:
    secret: true
    literals: [\"password=p<a>&ss\", \"token=  spaced  \"]
    files: [data/blob.bin]
  tls:
    secret: true
    type: kubernetes.io/tls
    files: [\"tls.crt=data/lines.txt\", \"tls.key=data/unicode.txt\"]
",
    );
    write(
        dir.path(),
        "data/unicode.txt",
        "héllo wörld — 世界 \u{1F600}\ttab\n".as_bytes(),
    );
    write(
        dir.path(),
        "data/lines.txt",
        b"line 1\n  indented\n\ntrailing spaces  \n",
    );
    write(
        dir.path(),
        "data/app.env",
        b"# settings\nLEVEL=debug\nURL=http://x/?a=1&b=<2>\nNUM=007\n",
    );
    write(
        dir.path(),
        "data/blob.bin",
        &[0x00, 0xff, 0xfe, 0x80, b'<', b'&'],
    );
    write(
        dir.path(),
        "kustomization.yaml",
        b"configMapGenerator:
- name: html
  literals: [\"a=<b>&c\", 'q=\"x\"', \"num=8080\", \"bool=true\", \"float=1.5e3\"]
- name: text
  files: [data/unicode.txt, \"custom-key=data/lines.txt\"]
  envs: [data/app.env]
- name: binary
  files: [data/blob.bin, data/unicode.txt]
- name: empty
secretGenerator:
- name: creds
  literals: [\"password=p<a>&ss\", \"token=  spaced  \"]
  files: [data/blob.bin]
- name: tls
  type: kubernetes.io/tls
  files: [\"tls.crt=data/lines.txt\", \"tls.key=data/unicode.txt\"]
",
    );
    let kustomize = std::process::Command::new("kubectl")
        .arg("kustomize")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        kustomize.status.success(),
        "{}",
        String::from_utf8_lossy(&kustomize.stderr)
    );
    let theirs = generated_names(&String::from_utf8(kustomize.stdout).unwrap());

    let out = berth(dir.path())
        .args(["render", "-"])
        .write_stdin("")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ours = generated_names(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(ours.len(), 6);
    assert_eq!(ours, theirs);
}

const WORKLOADS: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  template:
    metadata: {labels: {app: web}}
    spec:
      imagePullSecrets: [{name: pull}, {name: not-ours}]
      containers:
      - name: web
        image: nginx
        envFrom: [{configMapRef: {name: app}}, {secretRef: {name: creds}}]
        env:
        - {name: A, valueFrom: {configMapKeyRef: {name: app, key: level}}}
        - {name: B, valueFrom: {secretKeyRef: {name: creds, key: password}}}
        - {name: C, valueFrom: {configMapKeyRef: {name: unrelated, key: x}}}
      initContainers:
      - {name: init, image: busybox, envFrom: [{configMapRef: {name: app}}]}
      volumes:
      - {name: a, configMap: {name: app}}
      - {name: b, secret: {secretName: creds}}
      - name: c
        projected:
          sources: [{configMap: {name: app}}, {secret: {name: creds}}, {configMap: {name: unrelated}}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: report, namespace: ops}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers: [{name: r, image: busybox, envFrom: [{configMapRef: {name: app}}]}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop}
spec:
  template:
    spec:
      containers: [{name: db, image: postgres, envFrom: [{configMapRef: {name: db-settings}}]}]
---
apiVersion: v1
kind: Pod
metadata: {name: loose}
spec:
  containers: [{name: x, image: busybox, envFrom: [{secretRef: {name: app}}]}]
";

fn configs_project(level: &str) -> String {
    format!(
        "name: refs
manifests: [workloads.yaml]
configs:
  app: {{literals: [\"level={level}\"]}}
  creds: {{secret: true, literals: [password=x]}}
  pull: {{secret: true, type: kubernetes.io/dockerconfigjson, literals: ['.dockerconfigjson={{}}']}}
  db-settings: {{literals: [max=10], hash: false}}
"
    )
}

fn render(dir: &Path) -> String {
    let out = berth(dir).arg("render").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn references_are_rewritten_in_every_place_and_namespace() {
    let dir = project(&configs_project("info"));
    write(dir.path(), "workloads.yaml", WORKLOADS.as_bytes());
    let out = render(dir.path());
    let names = generated_names(&out);
    let app = &names["ConfigMap/app"];
    let creds = &names["Secret/creds"];
    let pull = &names["Secret/pull"];
    // Generated objects come first: one per namespace that uses them.
    let docs: Vec<&str> = out.split("---\n").collect();
    let kind_ns = |d: &str| {
        let kind = d
            .lines()
            .find_map(|l| l.strip_prefix("kind: "))
            .unwrap_or_default()
            .to_string();
        let ns = d
            .lines()
            .find_map(|l| l.strip_prefix("  namespace: "))
            .unwrap_or("-")
            .to_string();
        format!("{kind}@{ns}")
    };
    let order: Vec<String> = docs.iter().take(6).map(|d| kind_ns(d)).collect();
    assert_eq!(
        order,
        [
            "ConfigMap@ops",
            "ConfigMap@shop",
            "Secret@shop",
            "Secret@shop",
            "ConfigMap@shop",
            "Deployment@shop"
        ]
    );
    let deployment = out
        .split("---\n")
        .find(|d| d.contains("kind: Deployment"))
        .unwrap();
    assert_eq!(
        deployment.matches(&format!("name: {app}")).count(),
        5,
        "{deployment}"
    );
    assert_eq!(
        deployment.matches(&format!("name: {creds}")).count(),
        3,
        "{deployment}"
    );
    assert!(
        deployment.contains(&format!("secretName: {creds}")),
        "{deployment}"
    );
    assert!(
        deployment.contains(&format!("- name: {pull}\n      - name: not-ours")),
        "{deployment}"
    );
    assert_eq!(
        deployment.matches("name: unrelated").count(),
        2,
        "others untouched"
    );
    // The Pod's `secretRef: app` names a Secret, and `app` is a ConfigMap: untouched.
    let pod = out
        .split("---\n")
        .find(|d| d.contains("kind: Pod"))
        .unwrap();
    assert!(pod.contains("name: app\n"), "{pod}");
    // `app` is used from `shop` and `ops`, so it is generated in both.
    let app_copies: Vec<&str> = out
        .split("---\n")
        .filter(|d| d.contains(&format!("name: {app}\n  namespace:")))
        .collect();
    assert_eq!(app_copies.len(), 2);
}

#[test]
fn a_changed_config_rolls_exactly_its_users() {
    let dir = project(&configs_project("info"));
    write(dir.path(), "workloads.yaml", WORKLOADS.as_bytes());
    let before = render(dir.path());
    // A rendered object by kind and name, for comparison.
    let object = |yaml: &str, kind: &str| {
        yaml.split("---\n")
            .find(|d| d.contains(&format!("kind: {kind}\n")))
            .unwrap()
            .to_string()
    };

    fs::write(dir.path().join("berth.yaml"), configs_project("debug")).unwrap();
    let after = render(dir.path());
    assert_ne!(
        object(&before, "Deployment"),
        object(&after, "Deployment"),
        "web uses `app`"
    );
    assert_ne!(
        object(&before, "CronJob"),
        object(&after, "CronJob"),
        "report uses `app`"
    );
    assert_eq!(
        object(&before, "StatefulSet"),
        object(&after, "StatefulSet"),
        "db does not use `app`"
    );
    assert_eq!(object(&before, "Pod"), object(&after, "Pod"));

    // hash: false — the name stays, the pod template annotation changes.
    let statefulset = object(&after, "StatefulSet");
    assert!(
        statefulset.contains("envFrom:\n        - configMapRef:\n            name: db-settings\n"),
        "{statefulset}"
    );
    let annotation = |yaml: &str| {
        yaml.lines()
            .find(|l| l.contains("berth.dev/config-hash:"))
            .map(str::to_string)
            .unwrap()
    };
    let first = annotation(&statefulset);
    let changed = configs_project("debug").replace("max=10", "max=20");
    fs::write(dir.path().join("berth.yaml"), changed).unwrap();
    let later = render(dir.path());
    assert_ne!(annotation(&object(&later, "StatefulSet")), first);
    assert_eq!(
        object(&later, "Deployment"),
        object(&after, "Deployment"),
        "web does not use db-settings"
    );
    assert!(!object(&later, "Deployment").contains("config-hash"));
}
