//! berth render and `kubectl kustomize` with an equivalent `images:` entry
//! must produce the same objects wherever both tools rewrite images.
//! docs/render.md lists where berth differs on purpose (normalized matching,
//! ephemeral containers, image volumes, pull policies).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking

use crate::common;

use std::collections::BTreeMap;
use std::fs;

use berth_yaml::{Limits, Node, Style, Value};
use common::{berth, project};

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
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn berth_and_kustomize_agree_on_image_rewrites() {
    common::require_program(common::Group::Tools, "kubectl");
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

/// Every `image` string normalized (kustomize keeps the short forms berth
/// expands; the reference is the same).
fn normalize_images(node: &mut Node) {
    match &mut node.value {
        Value::Map(entries) => {
            for (k, v) in entries.iter_mut() {
                if k.as_str() == Some("image") {
                    if let Some(parsed) =
                        v.as_str().and_then(|s| berth_ref::Reference::parse(s).ok())
                    {
                        v.set_string(parsed.to_string());
                        continue;
                    }
                }
                normalize_images(v);
            }
        }
        Value::Seq(items) => items.iter_mut().for_each(normalize_images),
        Value::Scalar(_) => {}
    }
}

fn normalized_objects(yaml: &str) -> Vec<Canon> {
    berth_yaml::load_all(yaml, Limits::default())
        .unwrap()
        .into_iter()
        .filter(|d| !d.is_null())
        .map(|mut d| {
            normalize_images(&mut d);
            canon(&d)
        })
        .collect()
}

/// The cases of kustomize v5's image filter tests (api/filters/imagetag), each as
/// a kustomization `images:` entry and the berth component that means the same,
/// run through both tools. kustomize's `{name: nginx, newName: apache}` is a
/// component whose `image:` is `nginx` with a full override `apache`: berth
/// matches the declared repository only, as kustomize matches `name` only.
/// Invalid digests in kustomize's tests (`12345`) are replaced by valid ones.
#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn image_cases_from_kustomizes_filter_tests_agree() {
    common::require_program(common::Group::Tools, "kubectl");
    let d1 = format!("sha256:{}", "1".repeat(64));
    let d2 = format!("sha256:{}", "2".repeat(64));
    let deployment = format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: deploy1}}\nspec:\n  template:\n    spec:\n      containers:\n      - {{image: 'nginx:1.7.9', name: nginx-tagged}}\n      - {{image: 'nginx:latest', name: nginx-latest}}\n      - {{image: 'foobar:1', name: replaced-with-digest}}\n      - {{image: 'postgres:1.8.0', name: postgresdb}}\n      initContainers:\n      - {{image: nginx, name: nginx-notag}}\n      - {{image: 'nginx@{d1}', name: nginx-sha256}}\n      - {{image: 'alpine:1.8.0', name: init-alpine}}\n");
    let foo = |spec: &str| {
        format!(
            "apiVersion: example.com/v1\nkind: Foo\nmetadata: {{name: instance}}\nspec:\n{spec}"
        )
    };
    // (case, manifest, kustomize images entry, berth component image, NGINX_IMAGE / NGINX_TAG)
    type Case<'a> = (
        &'a str,
        String,
        String,
        &'a str,
        Option<String>,
        Option<&'a str>,
    );
    let cases: Vec<Case> = vec![
        ("ignore CustomResourceDefinition", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: whatever}\nspec:\n  containers: [{image: nginx}]\n".into(), "{name: nginx, newName: theImageShouldNotChangeInACrd}".into(), "nginx", Some("theimageshouldnotchangeinacrd".into()), None),
        ("legacy multiple images in containers", foo("  containers: [{image: 'nginx:1.2.1'}, {image: 'nginx:2.1.2'}]\n"), format!("{{name: nginx, newName: apache, digest: '{d2}'}}"), "nginx", Some(format!("apache@{d2}")), None),
        ("legacy both containers and initContainers", foo("  containers: [{image: 'nginx:1.2.1'}, {image: 'tomcat:1.2.3'}]\n  initContainers: [{image: 'nginx:1.2.1'}, {image: 'apache:1.2.3'}]\n"), "{name: nginx, newName: apache, newTag: 3.2.1}".into(), "nginx", Some("apache:3.2.1".into()), None),
        ("legacy updates at multiple depths", foo("  containers: [{image: 'nginx:1.2.1'}, {image: 'tomcat:1.2.3'}]\n  template:\n    spec:\n      initContainers: [{image: 'nginx:1.2.1'}, {image: 'apache:1.2.3'}]\n"), "{name: nginx, newName: apache, newTag: 3.2.1}".into(), "nginx", Some("apache:3.2.1".into()), None),
        ("multiple matches in sequence", foo(&format!("  containers: [{{image: 'nginx:1.2.1'}}, {{image: 'not_nginx@{d1}'}}, {{image: 'nginx:1.2.1'}}]\n")), "{name: nginx, newName: apache, newTag: 3.2.1}".into(), "nginx", Some("apache:3.2.1".into()), None),
        ("new Tag", deployment.clone(), "{name: nginx, newTag: v2}".into(), "nginx", None, Some("v2")),
        ("newImage", deployment.clone(), "{name: nginx, newName: busybox}".into(), "nginx", Some("busybox".into()), None),
        ("newImageAndTag", deployment.clone(), "{name: nginx, newName: busybox, newTag: v3}".into(), "nginx", Some("busybox:v3".into()), None),
        ("newDigest", deployment.clone(), format!("{{name: nginx, digest: '{d2}'}}"), "nginx", Some(format!("nginx@{d2}")), None),
        ("newImageAndDigest", deployment.clone(), format!("{{name: nginx, newName: busybox, digest: '{d2}'}}"), "nginx", Some(format!("busybox@{d2}")), None),
        ("tagWithBraces", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: deploy1}\nspec:\n  template:\n    spec:\n      containers: [{image: 'some.registry.io/my-image:{GENERATED_TAG}', name: my-image}]\n".into(), "{name: some.registry.io/my-image, newTag: my-fixed-tag}".into(), "some.registry.io/my-image", None, Some("my-fixed-tag")),
        ("image with tag and digest new name", foo(&format!("  containers: [{{image: 'nginx:1.2.1@{d1}'}}]\n")), "{name: nginx, newName: apache}".into(), "nginx", Some("apache".into()), None),
        ("image with tag and digest new name new tag", foo(&format!("  containers: [{{image: 'nginx:1.2.1@{d1}'}}]\n")), "{name: nginx, newName: apache, newTag: 1.3.0}".into(), "nginx", Some("apache:1.3.0".into()), None),
        ("image with tag and digest new name new tag and digest", foo(&format!("  containers: [{{image: 'nginx:1.2.1@{d1}'}}]\n")), format!("{{name: nginx, newName: apache, newTag: 1.3.0, digest: '{d2}'}}"), "nginx", Some(format!("apache:1.3.0@{d2}")), None),
    ];
    for (case, manifest, images, component, full, tag) in &cases {
        let dir = project(&format!(
            "name: parity\nmanifests: [m.yaml]\nimages:\n  nginx: {{image: '{component}'}}\n"
        ));
        fs::write(dir.path().join("m.yaml"), manifest).unwrap();
        fs::write(
            dir.path().join("kustomization.yaml"),
            format!("resources: [m.yaml]\nimages:\n- {images}\n"),
        )
        .unwrap();
        let kustomize = std::process::Command::new("kubectl")
            .arg("kustomize")
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(
            kustomize.status.success(),
            "{case}: {}",
            String::from_utf8_lossy(&kustomize.stderr)
        );
        let mut cmd = berth(dir.path());
        cmd.arg("render");
        if let Some(full) = full {
            cmd.env("NGINX_IMAGE", full);
        }
        if let Some(tag) = tag {
            cmd.env("NGINX_TAG", tag);
        }
        let ours = cmd.output().unwrap();
        assert!(
            ours.status.success(),
            "{case}: {}",
            String::from_utf8_lossy(&ours.stderr)
        );
        let theirs_text = String::from_utf8(kustomize.stdout).unwrap();
        let ours_text = String::from_utf8(ours.stdout).unwrap();
        assert_eq!(
            normalized_objects(&ours_text),
            normalized_objects(&theirs_text),
            "{case}: berth wrote\n{ours_text}\nkustomize wrote\n{theirs_text}"
        );
        if !case.starts_with("ignore") {
            assert_ne!(
                ours_text.trim(),
                manifest.trim(),
                "{case}: something was rewritten"
            );
        }
    }
}
