//! Generated configs: kustomize-identical names, reference rewriting,
//! rollouts of exactly the pods that use a changed config.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking

use crate::common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use common::{berth, project};

use crate::common::write;

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
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn names_match_kubectl_kustomize_on_tricky_data() {
    common::require_program(common::Group::Tools, "kubectl");
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
        [0x00, 0xff, 0xfe, 0x80, b'<', b'&'],
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

/// `kind/name` → key → decoded bytes (Secret `data` and `binaryData` base64-decoded,
/// line breaks in the encoding ignored), for every generated object.
fn decoded(yaml: &str) -> BTreeMap<String, BTreeMap<String, Vec<u8>>> {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut out = BTreeMap::new();
    for doc in berth_yaml::load_all(yaml, berth_yaml::Limits::default()).unwrap() {
        let text = |n: Option<&berth_yaml::Node>| {
            n.and_then(berth_yaml::Node::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let kind = text(doc.get("kind"));
        let name = text(doc.get("metadata").and_then(|m| m.get("name")));
        let mut data = BTreeMap::new();
        for (field, encoded) in [("data", kind == "Secret"), ("binaryData", true)] {
            let Some(entries) = doc.get(field).and_then(berth_yaml::Node::as_map) else {
                continue;
            };
            for (k, v) in entries {
                let value = v.as_str().unwrap_or_default();
                let bytes = if encoded {
                    let joined: String = value.split_whitespace().collect();
                    b64.decode(joined).unwrap()
                } else {
                    value.as_bytes().to_vec()
                };
                data.insert(k.as_str().unwrap().to_string(), bytes);
            }
        }
        out.insert(format!("{kind}/{name}"), data);
    }
    out
}

/// Cases from kustomize v5's own tests (api/krusty/configmaps_test.go, the
/// secret generator's tests in api/internal/generators, api/hasher/hasher_test.go),
/// each as a berth config and the equivalent generator. A case that merges an
/// overlay's generator into a base's is written as the data the merge produces
/// (the suffix depends on the data alone); a `namePrefix` as part of the name.
/// Every case is checked three ways: berth's name equals `kubectl kustomize`'s,
/// the decoded data is equal, and where kustomize's test states the name, both
/// give that name.
#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn generator_cases_from_kustomizes_suite_get_kustomizes_names() {
    common::require_program(common::Group::Tools, "kubectl");
    struct Case {
        name: &'static str,
        secret: bool,
        berth: &'static str,
        kustomize: &'static str,
        expected: Option<&'static str>,
    }
    let cases = [
        // TestGeneratorIntVsStringNoMerge
        Case { name: "bob", secret: false, berth: "literals: ['fruit=Indian Gooseberry', year=2020, crisis=true]", kustomize: "literals: ['fruit=Indian Gooseberry', year=2020, crisis=true]", expected: Some("bob-79t79mt227") },
        // TestGeneratorFromProperties (base VAR1, overlay VAR2, merged)
        Case { name: "test-configmap", secret: false, berth: "envs: [props.env]", kustomize: "envs: [props.env]", expected: Some("test-configmap-hdghb5ddkg") },
        // TestGeneratorBasics, the ConfigMap and the Secret from the same sources
        Case { name: "blah-bob", secret: false, berth: "literals: [fruit=apple, vegetable=broccoli]\n    envs: [foo.env, bar.env]\n    files: [passphrase=phrase.dat, forces.txt]", kustomize: "literals: [fruit=apple, vegetable=broccoli]\n  envs: [foo.env, bar.env]\n  files: [passphrase=phrase.dat, forces.txt]", expected: Some("blah-bob-g9df72cd5b") },
        Case { name: "blah-json", secret: false, berth: r#"literals: ['v2=[{"path": "var/druid/segment-cache"}]', 'druid_segmentCache_locations=[{"path":  "var/druid/segment-cache",  "maxSize": 32000000000,  "freeSpacePercent": 1.0}]']"#, kustomize: r#"literals: ['v2=[{"path": "var/druid/segment-cache"}]', 'druid_segmentCache_locations=[{"path":  "var/druid/segment-cache",  "maxSize": 32000000000,  "freeSpacePercent": 1.0}]']"#, expected: Some("blah-json-5298bc8g99") },
        Case { name: "blah-bob-s", secret: true, berth: "literals: [fruit=apple, vegetable=broccoli]\n    envs: [foo.env, bar.env]\n    files: [passphrase=phrase.dat, forces.txt]", kustomize: "literals: [fruit=apple, vegetable=broccoli]\n  envs: [foo.env, bar.env]\n  files: [passphrase=phrase.dat, forces.txt]", expected: Some("blah-bob-s-58g62h555c") },
        // TestGeneratorSimpleOverlay (merged)
        Case { name: "p-cm", secret: false, berth: "literals: [fruit=apple, veggie=broccoli]", kustomize: "literals: [fruit=apple, veggie=broccoli]", expected: Some("p-cm-877mt5hc89") },
        // TestGeneratorOverlaysBinaryData: 180 bytes of non-UTF-8 data
        Case { name: "p1-com1", secret: false, berth: "files: [data.bin]", kustomize: "files: [data.bin]", expected: Some("p1-com1-96gmmt6gt5") },
        // TestGeneratorOverlays (merged)
        Case { name: "p1-com1-o", secret: false, berth: "literals: [baz=qux, foo=bar, from=overlay]", kustomize: "literals: [baz=qux, foo=bar, from=overlay]", expected: Some("p1-com1-o-8tc62428t2") },
        Case { name: "p2-com2", secret: false, berth: "literals: [from=overlay]", kustomize: "literals: [from=overlay]", expected: Some("p2-com2-87mcggf7d7") },
        // TestConfigMapGeneratorMergeNamePrefix (merged)
        Case { name: "o1-cm", secret: false, berth: "literals: [big=bang, foo=bar]", kustomize: "literals: [big=bang, foo=bar]", expected: Some("o1-cm-ft9mmdc8c6") },
        Case { name: "cm-o2", secret: false, berth: "literals: [big=crunch, foo=bar]", kustomize: "literals: [big=crunch, foo=bar]", expected: Some("cm-o2-5k95kd76ft") },
        // TestConfigMapGeneratorLiteralNewline
        Case { name: "testing", secret: false, berth: "literals: [\"initial.txt=greetings\\neveryone\\n\", \"final.txt=different\\nbehavior\\n\"]", kustomize: "literals: [\"initial.txt=greetings\\neveryone\\n\", \"final.txt=different\\nbehavior\\n\"]", expected: Some("testing-tt4769fb52") },
        // api/hasher: the empty ConfigMap, one empty key; a Secret of type my-type with one empty key
        Case { name: "empty-cm", secret: false, berth: "{}", kustomize: "", expected: Some("empty-cm-6ct58987ht") },
        Case { name: "one-key", secret: false, berth: "literals: ['one=']", kustomize: "literals: ['one=']", expected: Some("one-key-9g67k2htb6") },
        Case { name: "typed-one-key", secret: true, berth: "type: my-type\n    literals: ['one=']", kustomize: "type: my-type\n  literals: ['one=']", expected: Some("typed-one-key-74bd68bm66") },
        // The secret generator's cases (api/internal/generators/secret_test.go)
        Case { name: "env-secret", secret: true, berth: "envs: [secret/app.env]", kustomize: "envs: [secret/app.env]", expected: None },
        Case { name: "file-secret1", secret: true, berth: "files: [secret/app-init.ini]", kustomize: "files: [secret/app-init.ini]", expected: None },
        Case { name: "file-secret2", secret: true, berth: "files: [secret/app-init.ini, secret/app.bin]", kustomize: "files: [secret/app-init.ini, secret/app.bin]", expected: None },
        Case { name: "literal-secret1", secret: true, berth: "literals: [a=x, b=y, 'c=\"Hello World\"', \"d='true'\"]", kustomize: "literals: [a=x, b=y, 'c=\"Hello World\"', \"d='true'\"]", expected: None },
        Case { name: "literal-secret-typed", secret: true, berth: "type: foobar\n    literals: [a=x]", kustomize: "type: foobar\n  literals: [a=x]", expected: None },
        // Sizes around kyaml's 70-character base64 lines, and every Secret type
        Case { name: "token51", secret: true, berth: "files: [token=sizes/51]", kustomize: "files: [token=sizes/51]", expected: Some("token51-258t4kk74g") },
        Case { name: "token52", secret: true, berth: "files: [token=sizes/52]", kustomize: "files: [token=sizes/52]", expected: Some("token52-74d2bh9748") },
        Case { name: "token105", secret: true, berth: "files: [token=sizes/105]", kustomize: "files: [token=sizes/105]", expected: None },
        Case { name: "token1000", secret: true, berth: "files: [token=sizes/1000]", kustomize: "files: [token=sizes/1000]", expected: None },
        Case { name: "binary52", secret: false, berth: "files: [sizes/bin52]", kustomize: "files: [sizes/bin52]", expected: None },
        Case { name: "tls", secret: true, berth: "type: kubernetes.io/tls\n    files: [tls.crt=sizes/1000, tls.key=sizes/105]", kustomize: "type: kubernetes.io/tls\n  files: [tls.crt=sizes/1000, tls.key=sizes/105]", expected: None },
        Case { name: "pull", secret: true, berth: "type: kubernetes.io/dockerconfigjson\n    files: [.dockerconfigjson=docker.json]", kustomize: "type: kubernetes.io/dockerconfigjson\n  files: [.dockerconfigjson=docker.json]", expected: None },
        Case { name: "empty-secret", secret: true, berth: "{}", kustomize: "", expected: Some("empty-secret-46f8b28mk5") },
    ];
    let mut project_text = String::from("name: parity\nconfigs:\n");
    let mut kustomization = (
        String::from("configMapGenerator:\n"),
        String::from("secretGenerator:\n"),
    );
    for case in &cases {
        let body = if case.berth == "{}" {
            String::new()
        } else {
            format!("\n    {}", case.berth)
        };
        project_text.push_str(&format!(
            "  {}:{}{}\n",
            case.name,
            if case.secret {
                "\n    secret: true"
            } else {
                ""
            },
            if body.is_empty() && !case.secret {
                " {}".into()
            } else {
                body
            }
        ));
        let entry = if case.kustomize.is_empty() {
            format!("- name: {}\n", case.name)
        } else {
            format!("- name: {}\n  {}\n", case.name, case.kustomize)
        };
        if case.secret {
            kustomization.1.push_str(&entry)
        } else {
            kustomization.0.push_str(&entry)
        }
    }
    let dir = project(&project_text);
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("props.env", b"\nVAR1=100\nVAR2=200\n".to_vec()),
        ("foo.env", b"\nMOUNTAIN=everest\nOCEAN=pacific\n".to_vec()),
        ("bar.env", b"\nBIRD=falcon\n".to_vec()),
        ("phrase.dat", b"\nLife is short.\nBut the years are long.\nNot while the evil days come not.\n".to_vec()),
        ("forces.txt", b"\ngravitational\nelectromagnetic\nstrong nuclear\nweak nuclear\n".to_vec()),
        ("data.bin", [0xffu8, b'h', b'e', b'l', b'l', b'o'].repeat(30)),
        ("secret/app.env", b"DB_USERNAME=admin\nDB_PASSWORD=qwerty\n".to_vec()),
        ("secret/app-init.ini", b"FOO=bar\nBAR=baz\n".to_vec()),
        ("secret/app.bin", vec![0xff, 0xfd]),
        ("sizes/51", vec![b'a'; 51]),
        ("sizes/52", vec![b'a'; 52]),
        ("sizes/105", (0..105u8).map(|i| b'a' + i % 26).collect()),
        ("sizes/1000", (0..1000u32).map(|i| b'A' + (i % 26) as u8).collect()),
        ("sizes/bin52", std::iter::once(0xffu8).chain(std::iter::repeat_n(b'x', 51)).collect()),
        ("docker.json", br#"{"auths":{"registry.example.com":{"auth":"dXNlcjpwYXNzd29yZC10aGF0LWlzLWxvbmctZW5vdWdoLXRvLXNwbGl0"}}}"#.to_vec()),
    ];
    for (path, content) in &files {
        write(dir.path(), path, content);
    }
    write(
        dir.path(),
        "kustomization.yaml",
        format!("{}{}", kustomization.0, kustomization.1).as_bytes(),
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
    let theirs_text = String::from_utf8(kustomize.stdout).unwrap();
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
    let ours_text = String::from_utf8(out.stdout).unwrap();
    let (theirs, ours) = (generated_names(&theirs_text), generated_names(&ours_text));
    assert_eq!(ours.len(), cases.len());
    let (theirs_data, ours_data) = (decoded(&theirs_text), decoded(&ours_text));
    for case in &cases {
        let key = format!(
            "{}/{}",
            if case.secret { "Secret" } else { "ConfigMap" },
            case.name
        );
        assert_eq!(
            ours.get(&key),
            theirs.get(&key),
            "case {}: the names differ",
            case.name
        );
        if let Some(expected) = case.expected {
            assert_eq!(
                ours.get(&key).map(String::as_str),
                Some(expected),
                "case {}: kustomize's test says",
                case.name
            );
        }
        let name = &ours[&key];
        let kind = key.split('/').next().unwrap();
        assert_eq!(
            ours_data.get(&format!("{kind}/{name}")),
            theirs_data.get(&format!("{kind}/{name}")),
            "case {}: the decoded data differs",
            case.name
        );
    }
}
