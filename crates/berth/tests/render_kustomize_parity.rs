//! berth render and `kubectl kustomize` with an equivalent `images:` entry
//! must produce the same objects wherever both tools rewrite images.
//! The README lists where berth differs on purpose (normalized matching,
//! ephemeral containers, image volumes, pull policies).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking

mod common;

use std::collections::BTreeMap;
use std::fs;

use berth_yaml::{Limits, Node, Style, Value};
use common::{berth, project, require_program};

const DIGEST: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

const MANIFESTS: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  template:
    metadata: {labels: {app: web}}
    spec:
      initContainers:
      - {name: init, image: "nginx:1.20", args: ["--check", "8080"]}
      containers:
      - {name: web, image: nginx, ports: [{containerPort: 80}]}
      - {name: api, image: "ghcr.io/acme/api:v1"}
      - {name: keep, image: "busybox:1.36", imagePullPolicy: Always}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  template:
    spec:
      containers: [{name: db, image: "ghcr.io/acme/api"}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  template:
    spec:
      containers: [{name: a, image: "ghcr.io/acme/agent:v3"}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          containers: [{name: j, image: "nginx:latest"}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec:
      containers: [{name: j, image: "ghcr.io/acme/agent"}]
---
apiVersion: v1
kind: Pod
metadata: {name: solo}
spec:
  containers: [{name: s, image: nginx}]
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs}
spec:
  template:
    spec:
      containers: [{name: r, image: "ghcr.io/acme/api:old"}]
---
apiVersion: acme.io/v1
kind: Stack
metadata: {name: custom}
spec:
  workers:
  - pod:
      containers: [{name: w, image: "ghcr.io/acme/agent:v1"}]
      initContainers: [{name: wi, image: nginx}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: untouched}
data: {image: nginx, count: "3", enabled: "true"}
"#;

const PROJECT: &str = "\
name: parity
manifests: [manifests.yaml]
images:
  web: {image: 'nginx:1.25'}
  api: {image: 'ghcr.io/acme/api:v1'}
  agent: {image: 'ghcr.io/acme/agent:v3'}
registry:
  env: IMAGE_REGISTRY
";

/// The same intent for kustomize: names as written in the manifests, new names
/// fully qualified (berth always prints normalized references). The registry
/// override moves every component that has no full override.
const KUSTOMIZATION: &str = "\
resources: [manifests.yaml]
images:
- name: nginx
  newName: quay.io/me/nginx
  newTag: \"1.27\"
- name: ghcr.io/acme/api
  newName: quay.io/me/api
  newTag: v2
  digest: DIGEST
- name: ghcr.io/acme/agent
  newName: quay.io/me/agent
  newTag: v3
";

/// A typed, order-free view of a YAML value.
#[derive(Debug, PartialEq)]
enum Canon {
    Str(String),
    Other(String),
    Seq(Vec<Canon>),
    Map(BTreeMap<String, Canon>),
}

fn canon(node: &Node) -> Canon {
    match &node.value {
        Value::Scalar(s) if s.style == Style::Plain && resolves_non_string(&s.text) => {
            Canon::Other(s.text.clone())
        }
        Value::Scalar(s) => Canon::Str(s.text.clone()),
        Value::Seq(items) => Canon::Seq(items.iter().map(canon).collect()),
        Value::Map(entries) => Canon::Map(
            entries
                .iter()
                .map(|(k, v)| (k.as_str().unwrap_or_default().to_string(), canon(v)))
                .collect(),
        ),
    }
}

fn resolves_non_string(text: &str) -> bool {
    matches!(text, "" | "~" | "null" | "true" | "false") || text.parse::<f64>().is_ok()
}

fn objects(yaml: &str) -> BTreeMap<(String, String, String), Canon> {
    berth_yaml::load_all(yaml, Limits::default())
        .unwrap()
        .into_iter()
        .filter(|d| !d.is_null())
        .map(|d| {
            let text = |n: Option<&Node>| n.and_then(Node::as_str).unwrap_or_default().to_string();
            let meta = d.get("metadata");
            let key = (
                text(d.get("kind")),
                text(meta.and_then(|m| m.get("namespace"))),
                text(meta.and_then(|m| m.get("name"))),
            );
            (key, canon(&d))
        })
        .collect()
}

#[test]
fn berth_and_kustomize_agree_on_image_rewrites() {
    if !require_program("kubectl", "the kustomize parity test") {
        return;
    }
    let dir = project(PROJECT);
    fs::write(dir.path().join("manifests.yaml"), MANIFESTS).unwrap();
    fs::write(
        dir.path().join("kustomization.yaml"),
        KUSTOMIZATION.replace("DIGEST", DIGEST),
    )
    .unwrap();

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
    let ours = berth(dir.path())
        .arg("render")
        .env("WEB_TAG", "1.27")
        .env("API_IMAGE", format!("quay.io/me/api:v2@{DIGEST}"))
        .env("IMAGE_REGISTRY", "quay.io/me")
        .output()
        .unwrap();
    assert!(
        ours.status.success(),
        "{}",
        String::from_utf8_lossy(&ours.stderr)
    );

    let theirs = objects(&String::from_utf8(kustomize.stdout).unwrap());
    let ours_text = String::from_utf8(ours.stdout).unwrap();
    let ours = objects(&ours_text);
    assert_eq!(ours.len(), 9);
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>()
    );
    for (key, object) in &ours {
        assert_eq!(
            Some(object),
            theirs.get(key),
            "{key:?} differs; berth wrote:\n{ours_text}"
        );
    }
    // The comparison is not vacuous: images really were rewritten.
    assert!(ours_text.contains(&format!("image: quay.io/me/api:v2@{DIGEST}")));
    assert!(ours_text.contains("image: quay.io/me/agent:v3"));
    assert_eq!(ours_text.matches("image: quay.io/me/nginx:1.27").count(), 5);
}
