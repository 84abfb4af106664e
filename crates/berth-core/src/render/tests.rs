use std::collections::HashMap;
use std::path::PathBuf;

use super::*;
use crate::project;
use crate::resolve::{resolve, Overrides};

const PROJECT: &str = r#"
name: demo
images:
  web:
    image: nginx:1.25
    pullPolicy: auto
    match: [registry.local/legacy-web]
  api:
    image: ghcr.io/acme/api:v1
  tool:
    image: ghcr.io/acme/tool:latest
    pullPolicy: Always
imagePaths:
  - kind: Stack
    path: spec.server.image
  - kind: Stack
    apiVersion: acme.io/v1
    path: spec.extra[].ref
  - kind: Stack
    path: spec.list[]
"#;

fn run(src: &str, env: &[(&str, &str)], options: &Options) -> Result<Rendered, RenderError> {
    let project = project::parse("berth.yaml", PathBuf::from("/p"), PROJECT).unwrap();
    let env: HashMap<String, String> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let resolution = resolve(&project, &Overrides::default(), &|k| env.get(k).cloned()).unwrap();
    let inputs = [Input::text("in.yaml", src)];
    render(
        &Spec::from_project(&project, &resolution, &[], options)?,
        &inputs,
    )
}

fn yaml(src: &str, env: &[(&str, &str)]) -> String {
    run(src, env, &Options::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .yaml
}

#[test]
fn rewrites_every_container_list_and_sets_policy_only_where_asked() {
    let src = "\
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: web
    image: nginx
  - name: other
    image: busybox:1
    imagePullPolicy: Never
  initContainers:
  - name: init
    image: docker.io/library/nginx:1.20@sha256:0000000000000000000000000000000000000000000000000000000000000000
  ephemeralContainers:
  - name: debug
    image: ghcr.io/acme/api:old
    imagePullPolicy: Always
";
    let want = "\
apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
  - name: web
    image: docker.io/library/nginx:2
    imagePullPolicy: IfNotPresent
  - name: other
    image: busybox:1
    imagePullPolicy: Never
  initContainers:
  - name: init
    image: docker.io/library/nginx:2
    imagePullPolicy: IfNotPresent
  ephemeralContainers:
  - name: debug
    image: ghcr.io/acme/api:v1
    imagePullPolicy: Always
";
    assert_eq!(yaml(src, &[("WEB_TAG", "2")]), want);
}

#[test]
fn match_entries_image_volumes_and_workload_kinds() {
    let src = "\
apiVersion: batch/v1
kind: CronJob
metadata: {name: c}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - {name: a, image: 'registry.local/legacy-web:3'}
          volumes:
          - name: models
            image: {reference: 'ghcr.io/acme/tool:v9'}
          - name: cfg
            configMap: {name: x}
";
    let out = yaml(src, &[]);
    assert!(
        out.contains("image: docker.io/library/nginx:1.25\n"),
        "{out}"
    );
    assert!(out.contains("imagePullPolicy: IfNotPresent"), "{out}");
    assert!(
        out.contains("reference: ghcr.io/acme/tool:latest\n              pullPolicy: Always"),
        "{out}"
    );
}

#[test]
fn image_paths_of_custom_resources() {
    let src = "\
apiVersion: acme.io/v1
kind: Stack
metadata: {name: s}
spec:
  server: {image: 'ghcr.io/acme/api:v0'}
  extra: [{ref: nginx}, {ref: redis}]
  list: [ghcr.io/acme/tool, redis]
  workers:
  - pod: {containers: [{name: w, image: ghcr.io/acme/api}]}
---
apiVersion: other.io/v1
kind: Stack
metadata: {name: s2}
spec:
  extra: [{ref: nginx}]
";
    let out = yaml(src, &[]);
    let (first, second) = out.split_once("---\n").unwrap();
    assert!(
        first.contains("server:\n    image: ghcr.io/acme/api:v1\n"),
        "{first}"
    );
    assert!(
        first.contains("- ref: docker.io/library/nginx:1.25\n  - ref: redis\n"),
        "{first}"
    );
    assert!(
        first.contains("list:\n  - ghcr.io/acme/tool:latest\n  - redis\n"),
        "{first}"
    );
    assert!(
        first.contains("image: ghcr.io/acme/api:v1\n        imagePullPolicy")
            || first.contains("name: w\n        image: ghcr.io/acme/api:v1\n"),
        "{first}"
    );
    assert!(
        second.contains("- ref: nginx\n"),
        "apiVersion filter: {second}"
    );
}

#[test]
fn unresolved_containers_keep_their_policy_byte_for_byte() {
    let src = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  template:
    spec:
      containers:
      - name: mine
        image: nginx:1
      - name: theirs
        image: quay.io/other/x:dev
        imagePullPolicy: Never
      - name: theirs-no-policy
        image: quay.io/other/y:dev
";
    let out = yaml(src, &[]);
    let theirs = "      - name: theirs\n        image: quay.io/other/x:dev\n        imagePullPolicy: Never\n      - name: theirs-no-policy\n        image: quay.io/other/y:dev\n";
    assert!(out.ends_with(theirs), "{out}");
    assert!(out
        .contains("image: docker.io/library/nginx:1.25\n        imagePullPolicy: IfNotPresent\n"));
}

#[test]
fn untouched_objects_pass_through_and_output_is_deterministic() {
    let src = "\
# a comment
apiVersion: v1
kind: ConfigMap
metadata: {name: c, annotations: {a: 'yes', b: \"8080\"}}
data:
  z: last
  a: first
  script: |
    echo hi
";
    let first = yaml(src, &[]);
    assert_eq!(first, yaml(src, &[]));
    let want = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations:\n    a: 'yes'\n    b: \"8080\"\ndata:\n  z: last\n  a: first\n  script: |\n    echo hi\n";
    assert_eq!(first, want);
}

#[test]
fn lists_and_empty_documents() {
    let src = "---\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: [{name: c, image: nginx}]}}\n- {apiVersion: v1, kind: Service, metadata: {name: b, namespace: n}}\n---\n";
    let r = run(src, &[], &Options::default()).unwrap();
    let kinds: Vec<_> = r
        .objects
        .iter()
        .map(|o| (o.kind.as_str(), o.name.as_deref(), o.namespace.as_deref()))
        .collect();
    assert_eq!(
        kinds,
        vec![("Pod", Some("a"), None), ("Service", Some("b"), Some("n"))]
    );
    assert_eq!(r.images_matched, 1);
    assert!(r.yaml[r.objects[1].range.clone()].starts_with("apiVersion: v1\nkind: Service"));
}

#[test]
fn bad_documents_are_errors_with_positions() {
    let cases = [
        (
            "apiVersion: v1\nkind: Pod\n---\nfoo: bar\n",
            "in.yaml:4:1: not a Kubernetes object: it has no `apiVersion`",
        ),
        (
            "apiVersion: v1\n",
            "in.yaml:1:1: not a Kubernetes object: it has no `kind`",
        ),
        (
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [a.yaml]\n",
            "in.yaml:1:1: not a Kubernetes object: it is kustomize's input",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
            "in.yaml:4:10: a mapping key that is not text",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n{{- if .Values.x }}\n",
            "it looks like an unrendered template (it has `{{ … }}`): run `helm template`",
        ),
        (
            "apiVersion: v1\nkind: {a: 1}\n",
            "in.yaml:1:1: not a Kubernetes object: its `kind` is not text",
        ),
        (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n---\napiVersion: apps/v1beta1\nkind: Deployment\nmetadata: {name: web}\n",
            "in.yaml:5:1: Deployment/web is defined twice (first at in.yaml:1:1)",
        ),
        (
            "- a\n- b\n",
            "in.yaml:1:1: not a Kubernetes object: the document is not a mapping",
        ),
        (
            "apiVersion: v1\nkind: List\nitems: {a: 1}\n",
            "a `List` whose `items` is not a list",
        ),
        ("apiVersion: v1\nkind: Pod\nspec: [\n", "in.yaml:"),
    ];
    for (src, want) in cases {
        let err = run(src, &[], &Options::default()).unwrap_err().to_string();
        assert!(
            err.starts_with(want) || err.contains(want),
            "\n got: {err}\nwant: {want}"
        );
    }
    // In a chart's output a key written twice keeps its last value, as `helm install`
    // takes it (Kubeflow's katib chart writes a label twice; berth refused the render).
    let dup = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels:\n    x: one\n    x: two\n";
    let err = run(dup, &[], &Options::default()).unwrap_err().to_string();
    assert!(
        err.starts_with("in.yaml:7:5: duplicate key `x`"),
        "a user's file: {err}"
    );
    let project = project::parse("berth.yaml", PathBuf::from("/p"), PROJECT).unwrap();
    let resolution = resolve(&project, &Overrides::default(), &|_| None).unwrap();
    let mut input = Input::text("helm template c", dup);
    input.last_key_wins = true;
    let spec = Spec::from_project(&project, &resolution, &[], &Options::default()).unwrap();
    let out = render(&spec, &[input]).unwrap();
    assert!(out.yaml.contains("labels:\n    x: two\n"), "{}", out.yaml);
    // ...and is said, never silent: the first value is not deployed.
    let warnings = out.findings.warnings(&project, &resolution);
    let said: Vec<String> = warnings.iter().map(ToString::to_string).collect();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].starts_with(
            "helm template c:7:5: key `x` is written twice in one mapping (first at 6:5)"
        ) && said[0].ends_with("[duplicate-key]"),
        "{said:?}"
    );
}

#[test]
fn pull_policy_flag_overrides_and_is_checked() {
    let src = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a, image: 'ghcr.io/acme/api:v1'}]}\n";
    let options = |pairs: &[(&str, &str)]| Options {
        pull_policies: pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect(),
        ..Options::default()
    };
    let out = run(src, &[], &options(&[("api", "Never")])).unwrap().yaml;
    assert!(out.contains("imagePullPolicy: Never"), "{out}");
    let err = run(src, &[], &options(&[("apj", "Never")]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no component `apj`") && err.contains("did you mean `api`?"),
        "{err}"
    );
    let err = run(src, &[], &options(&[("api", "sometimes")]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("use one of auto, Always, IfNotPresent, Never"),
        "{err}"
    );
}

#[test]
fn cost_is_linear_in_the_number_of_objects() {
    let doc = |i: usize| {
        format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d{i}}}\nspec:\n  template:\n    spec:\n      containers: [{{name: a, image: nginx}}, {{name: b, image: ghcr.io/acme/api}}]\n---\n")
    };
    // The fastest of three runs: a machine busy with other work (CI's other test
    // binaries) slows one run, not all three.
    let time = |n: usize| {
        let src: String = (0..n).map(doc).collect();
        (0..3)
            .map(|_| {
                let start = std::time::Instant::now();
                let r = run(&src, &[], &Options::default()).unwrap();
                assert_eq!(r.objects.len(), n);
                start.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    };
    time(500); // warm up
    let small = time(2_000);
    let large = time(8_000);
    // Quadratic growth would make this ~16; allow generous noise around 4.
    assert!(
        large / small < 8.0,
        "2,000 objects: {small:.3}s, 8,000: {large:.3}s"
    );
}

#[test]
fn oversized_documents_are_refused_by_render() {
    let options = Options {
        limits: berth_yaml::Limits {
            max_document_chars: 200,
            ..berth_yaml::Limits::default()
        },
        ..Options::default()
    };
    let src = format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: a}}\n---\napiVersion: v1\nkind: ConfigMap\ndata: {{big: {}}}\n", "x".repeat(300));
    let err = run(&src, &[], &options).unwrap_err().to_string();
    assert!(
        err.starts_with("in.yaml:4:") && err.contains("larger than 200 characters"),
        "{err}"
    );
}

#[test]
fn objects_are_what_the_text_says() {
    let project = project::parse("berth.yaml", PathBuf::from("/p"), PROJECT).unwrap();
    let resolution = resolve(&project, &Overrides::default(), &|_| None).unwrap();
    let shape = crate::configs::ConfigShape {
        name: "app-config".into(),
        kind: crate::configs::ConfigKind::ConfigMap,
        secret_type: None,
        hash: true,
        immutable: true,
    };
    let generated =
        vec![crate::configs::from_entries(&shape, [("A".to_string(), b"1".to_vec())]).unwrap()];
    let inputs = [Input::text(
        "in.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: a}\nspec:\n  containers: [{name: c, image: nginx, envFrom: [{configMapRef: {name: app-config}}]}]\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Service, metadata: {name: s}}\n",
    )];
    let spec = Spec::from_project(&project, &resolution, &generated, &Options::default()).unwrap();
    let text = render(&spec, &inputs).unwrap();
    let objects = render_objects(&spec, &inputs).unwrap();
    let parsed = berth_yaml::load_all(&text.yaml, Limits::default()).unwrap();
    assert_eq!(
        objects.objects.len(),
        3,
        "the config (in namespace a), the Pod, the Service"
    );
    let as_json = |nodes: &[Node]| -> Vec<serde_json::Value> {
        nodes.iter().map(berth_yaml::json::to_json).collect()
    };
    assert_eq!(as_json(&objects.objects), as_json(&parsed));
    assert_eq!(objects.images_matched, text.images_matched);
}

#[test]
fn a_config_no_object_uses_goes_to_the_manifests_one_namespace() {
    let project = project::parse("berth.yaml", PathBuf::from("/p"), PROJECT).unwrap();
    let resolution = resolve(&project, &Overrides::default(), &|_| None).unwrap();
    let shape = crate::configs::ConfigShape {
        name: "unused".into(),
        kind: crate::configs::ConfigKind::ConfigMap,
        secret_type: None,
        hash: false,
        immutable: false,
    };
    let generated =
        vec![crate::configs::from_entries(&shape, [("A".to_string(), b"1".to_vec())]).unwrap()];
    let namespace_of = |src: &str| {
        let inputs = [Input::text("in.yaml", src)];
        let spec =
            Spec::from_project(&project, &resolution, &generated, &Options::default()).unwrap();
        let out = render_objects(&spec, &inputs).unwrap();
        assert_eq!(out.findings.unused_configs, ["unused"]);
        out.objects[0]
            .get("metadata")
            .and_then(|m| m.get("namespace"))
            .and_then(Node::as_str)
            .map(str::to_string)
    };
    let one = "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: kubeflow}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: kubeflow}\n";
    assert_eq!(namespace_of(one).as_deref(), Some("kubeflow"));
    let two = "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: a}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: b}\n";
    assert_eq!(
        namespace_of(two),
        None,
        "two namespaces: the one it is applied to"
    );
    assert_eq!(
        namespace_of("apiVersion: v1\nkind: Service\nmetadata: {name: s}\n"),
        None
    );
}

#[test]
fn an_untagged_resolution_keeps_each_fields_own_tag_and_digest() {
    // `api` resolved to a reference without tag or digest (a full override
    // `API_IMAGE=quay.io/me/api`): each container keeps what it had.
    let digest = format!("sha256:{}", "4".repeat(64));
    let src = format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  containers:\n  - {{name: a, image: 'ghcr.io/acme/api:v7'}}\n  - {{name: b, image: 'ghcr.io/acme/api@{digest}'}}\n  - {{name: c, image: ghcr.io/acme/api}}\n");
    let out = yaml(&src, &[("API_IMAGE", "quay.io/me/api")]);
    assert!(out.contains("image: quay.io/me/api:v7\n"), "{out}");
    assert!(
        out.contains(&format!("image: quay.io/me/api@{digest}\n")),
        "{out}"
    );
    assert!(out.contains("image: quay.io/me/api\n"), "{out}");
    // With a tag, every match gets exactly the resolved reference.
    let out = yaml(&src, &[("API_IMAGE", "quay.io/me/api:v9")]);
    assert_eq!(
        out.matches("image: quay.io/me/api:v9\n").count(),
        3,
        "{out}"
    );
}

#[test]
fn a_placeholder_tag_matches_by_repository() {
    let src = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: a, image: 'ghcr.io/acme/api:{GENERATED_TAG}'}\n  - {name: b, image: 'ghcr.io/other/x:{TAG}'}\n";
    let out = yaml(src, &[]);
    assert!(out.contains("image: ghcr.io/acme/api:v1\n"), "{out}");
    assert!(
        out.contains("image: 'ghcr.io/other/x:{TAG}'"),
        "not a component: {out}"
    );
}

#[test]
fn custom_kinds_are_searched_at_every_depth_and_crds_never() {
    let src = "apiVersion: example.com/v1\nkind: Foo\nmetadata: {name: f}\nspec:\n  containers: [{image: 'ghcr.io/acme/api:old'}]\n  template:\n    spec:\n      initContainers: [{image: 'ghcr.io/acme/api:old'}]\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: foos.example.com}\nspec:\n  containers: [{image: 'ghcr.io/acme/api:old'}]\n";
    let out = yaml(src, &[]);
    assert_eq!(
        out.matches("image: ghcr.io/acme/api:v1\n").count(),
        2,
        "{out}"
    );
    assert_eq!(
        out.matches("ghcr.io/acme/api:old").count(),
        1,
        "the CRD is untouched: {out}"
    );
}

#[test]
fn envsubst_placeholders_are_the_component_whose_variable_they_name() {
    let src = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: a, image: '${API_IMAGE}'}\n  - {name: b, image: $WEB_IMAGE, imagePullPolicy: Never}\n  - {name: c, image: '${NOPE_IMAGE}'}\n  - {name: d, image: '${API_IMAGE'}\n";
    let r = run(
        src,
        &[("API_IMAGE", "quay.io/me/api:dev")],
        &Options::default(),
    )
    .unwrap();
    assert!(r.yaml.contains("image: quay.io/me/api:dev"), "{}", r.yaml);
    assert!(
        r.yaml
            .contains("image: docker.io/library/nginx:1.25\n    imagePullPolicy: IfNotPresent"),
        "web's pullPolicy applies too: {}",
        r.yaml
    );
    assert!(
        r.yaml.contains("${NOPE_IMAGE}"),
        "no such variable: left alone"
    );
    assert!(
        r.yaml.contains("${API_IMAGE\n") || r.yaml.contains("${API_IMAGE'"),
        "not a placeholder: left alone: {}",
        r.yaml
    );
    assert_eq!(r.images_matched, 2);
}

#[test]
fn auto_never_turns_an_explicit_always_into_if_not_present_without_a_digest() {
    let src = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: a, image: 'nginx:dev', imagePullPolicy: Always}\n  - {name: b, image: 'nginx:dev', imagePullPolicy: Never}\n  - {name: c, image: 'nginx:dev'}\n";
    let r = run(src, &[], &Options::default()).unwrap();
    let policies: Vec<&str> = r
        .yaml
        .lines()
        .filter_map(|l| l.trim().strip_prefix("imagePullPolicy: "))
        .collect();
    assert_eq!(
        policies,
        ["Always", "IfNotPresent", "IfNotPresent"],
        "{}",
        r.yaml
    );
    // With a digest the image cannot move: IfNotPresent is safe and wins.
    let pinned = format!("nginx:1.25@sha256:{}", "a".repeat(64));
    let r = run(src, &[("WEB_IMAGE", &pinned)], &Options::default()).unwrap();
    assert!(!r.yaml.contains("Always"), "{}", r.yaml);
}

#[test]
fn objects_given_as_trees_render_as_their_text_does() {
    let project = project::parse("berth.yaml", PathBuf::from("/p"), PROJECT).unwrap();
    let resolution = resolve(&project, &Overrides::default(), &|_| None).unwrap();
    let spec = Spec::from_project(&project, &resolution, &[], &Options::default()).unwrap();
    let text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n    spec:\n      containers: [{name: c, image: 'ghcr.io/acme/api:old'}]\n";
    let from_text = render_objects(&spec, &[Input::text("in.yaml", text)]).unwrap();
    let trees = berth_yaml::load_all(text, Limits::default()).unwrap();
    let from_trees =
        render_objects(&spec, &[Input::objects("Berth ns/x spec.workloads", trees)]).unwrap();
    let as_json = |nodes: &[Node]| -> Vec<serde_json::Value> {
        nodes.iter().map(berth_yaml::json::to_json).collect()
    };
    assert_eq!(as_json(&from_trees.objects), as_json(&from_text.objects));
    assert_eq!(
        (from_trees.images_matched, from_text.images_matched),
        (1, 1)
    );
}
