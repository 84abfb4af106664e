//! `berth apply`, `diff` and `rollback` against the in-memory API server of
//! `common/fake_api.rs` (the real berth binary and kube-rs client over HTTP).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;

use common::fake_api::{Behaviour, FakeApi};
use common::{berth, project};
use serde_json::{json, Value};

const DEPLOY: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: app
          image: ghcr.io/acme/web:v1
          envFrom: [{configMapRef: {name: web-config}}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
";

struct Setup {
    api: FakeApi,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

fn setup(namespace_line: &str) -> Setup {
    let api = FakeApi::start();
    let dir = project(&format!(
        "name: shop\n{namespace_line}manifests: [deploy.yaml]\nimages:\n  web: {{image: ghcr.io/acme/web:v1}}\nconfigs:\n  web-config:\n    literals: [\"LEVEL=one\"]\n"
    ));
    std::fs::write(dir.path().join("deploy.yaml"), DEPLOY).unwrap();
    let kubeconfig = api.kubeconfig(dir.path());
    Setup {
        api,
        dir,
        kubeconfig,
    }
}

impl Setup {
    fn run(&self, args: &[&str]) -> std::process::Output {
        berth(self.dir.path())
            .args(args)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .output()
            .unwrap()
    }

    fn level(&self, level: &str) {
        let path = self.dir.path().join("berth.yaml");
        let text = std::fs::read_to_string(&path).unwrap();
        let start = text.find("LEVEL=").unwrap();
        let end = start + text[start..].find('"').unwrap();
        std::fs::write(
            &path,
            format!("{}LEVEL={level}{}", &text[..start], &text[end..]),
        )
        .unwrap();
    }

    fn config_names(&self, namespace: &str) -> Vec<String> {
        let mut names: Vec<String> = self
            .api
            .objects("configmaps", namespace)
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
            .filter(|n| n.starts_with("web-config"))
            .collect();
        names.sort();
        names
    }

    fn deployment_config(&self) -> String {
        let d = self.api.object("deployments", "dev", "web").unwrap();
        d["spec"]["template"]["spec"]["containers"][0]["envFrom"][0]["configMapRef"]["name"]
            .as_str()
            .unwrap()
            .to_string()
    }
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn record(api: &FakeApi, sequence: u32) -> Value {
    api.object("secrets", "dev", &format!("berth-shop-r{sequence}"))
        .unwrap()
}

#[test]
fn apply_labels_records_waits_and_is_idempotent() {
    let s = setup("");
    let out = s.run(&["apply"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = stderr(&out);
    assert!(
        log.contains("applied Deployment/web (namespace dev)"),
        "{log}"
    );
    assert!(
        log.contains("rolled out Deployment/web (namespace dev)"),
        "{log}"
    );
    assert!(log.contains("recorded as Secret berth-shop-r1"), "{log}");
    // Namespace from the kubeconfig context; labels on everything; the generated name in use.
    for (plural, name) in [("deployments", "web"), ("services", "web")] {
        let object = s.api.object(plural, "dev", name).unwrap();
        assert_eq!(
            object["metadata"]["labels"]["app.kubernetes.io/managed-by"],
            "berth"
        );
        assert_eq!(object["metadata"]["labels"]["berth.dev/project"], "shop");
    }
    let config = s.deployment_config();
    assert!(
        config.starts_with("web-config-") && config.len() == "web-config-".len() + 10,
        "{config}"
    );
    let cm = s.api.object("configmaps", "dev", &config).unwrap();
    assert_eq!(cm["metadata"]["labels"]["berth.dev/config"], "web-config");
    assert_eq!(
        record(&s.api, 1)["metadata"]["annotations"]["berth.dev/status"],
        "succeeded"
    );
    assert_eq!(
        s.api.log()[..3],
        [
            "ConfigMap/".to_string() + &config,
            "Deployment/web".into(),
            "Service/web".into()
        ]
    );

    // Again: nothing changes (same resourceVersions), and diff agrees.
    let version = |api: &FakeApi| {
        api.object("deployments", "dev", "web").unwrap()["metadata"]["resourceVersion"].clone()
    };
    let before = version(&s.api);
    let again = s.run(&["apply"]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(version(&s.api), before);
    let diff = s.run(&["diff"]);
    assert_eq!(
        diff.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&diff.stdout),
        stderr(&diff)
    );
    assert!(diff.stdout.is_empty());
}

#[test]
fn diff_shows_what_apply_would_change_and_changes_nothing() {
    let s = setup("");
    assert!(s.run(&["apply"]).status.success());
    let old = s.deployment_config();
    s.level("two");
    let out = s.run(&["diff"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("--- live/Deployment/dev/web\n+++ merged/Deployment/dev/web\n"),
        "{text}"
    );
    assert!(
        text.contains(&format!("-            name: {old}")),
        "{text}"
    );
    assert!(text.contains("+            name: web-config-"), "{text}");
    assert!(
        text.contains("+++ merged/ConfigMap/dev/web-config-"),
        "a new generation appears whole: {text}"
    );
    assert!(text.contains("+  LEVEL: two"), "{text}");
    assert!(!text.contains("\x1b["), "no colour when not on a terminal");
    assert_eq!(s.deployment_config(), old, "diff applied nothing");
    assert_eq!(s.config_names("dev").len(), 1);
}

#[test]
fn old_generations_go_only_after_success_and_only_berths_own() {
    let s = setup("");
    // Look-alikes that are not this project's: no labels, and another project's.
    s.api.apply_as("kubectl", "configmaps", "dev", json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-config-handmade"}}));
    s.api.apply_as("kubectl", "configmaps", "dev", json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "web-config-other", "labels": {"app.kubernetes.io/managed-by": "berth", "berth.dev/project": "other", "berth.dev/config": "web-config"}}}));
    let mut generations = Vec::new();
    for level in ["one", "two", "three"] {
        s.level(level);
        let out = s.run(&["apply"]);
        assert!(out.status.success(), "{}", stderr(&out));
        generations.push(s.deployment_config());
    }
    // --keep 2: the first generation is gone, the last two stay, look-alikes untouched.
    let mut expected = vec![
        generations[1].clone(),
        generations[2].clone(),
        "web-config-handmade".into(),
        "web-config-other".into(),
    ];
    expected.sort();
    assert_eq!(s.config_names("dev"), expected);

    // A failed rollout deletes nothing and is recorded as failed.
    s.api.behave("web", Behaviour::Stuck);
    s.level("four");
    let out = s.run(&["apply"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("error: rollout of Deployment/web (namespace dev): failed: ProgressDeadlineExceeded: ReplicaSet \"web-7c9f\" has timed out progressing.; nothing was deleted"), "{}", stderr(&out));
    let names = s.config_names("dev");
    assert_eq!(names.len(), 5, "every generation kept: {names:?}");
    assert_eq!(
        record(&s.api, 4)["metadata"]["annotations"]["berth.dev/status"],
        "failed"
    );

    // Rollback goes to the last good apply (r3), waits, and records itself.
    s.api.behave("web", Behaviour::Healthy);
    let out = s.run(&["rollback"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("rolling back to apply r3 of project `shop`"),
        "{}",
        stderr(&out)
    );
    assert_eq!(s.deployment_config(), generations[2]);
    let r5 = record(&s.api, 5);
    assert_eq!(r5["metadata"]["annotations"]["berth.dev/rollback-of"], "3");
    assert_eq!(
        r5["metadata"]["annotations"]["berth.dev/status"],
        "succeeded"
    );
    // Again: back to r2.
    let out = s.run(&["rollback"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(s.deployment_config(), generations[1]);
}

#[test]
fn conflicts_are_reported_and_nothing_is_applied() {
    let s = setup("");
    s.api.apply_as("kubectl-edit", "deployments", "dev", json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 5}}));
    let out = s.run(&["apply"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "error: Deployment/web (namespace dev): apply conflicts with other field managers:\n  .spec.replicas (owned by kubectl-edit)\n  help: these fields were set by someone else; re-run with --force-conflicts to take them over, or remove them from the manifests\n"
    );
    assert!(
        s.api.object("services", "dev", "web").is_none(),
        "the dry run stopped everything"
    );
    let out = s.run(&["apply", "--force-conflicts"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        s.api.object("deployments", "dev", "web").unwrap()["spec"]["replicas"],
        1
    );
}

#[test]
fn crds_and_namespaces_first_and_namespace_precedence() {
    let s = setup("namespace: shop-ns\n");
    std::fs::write(
        s.dir.path().join("deploy.yaml"),
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: 3}\n---\n\
         apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\n\
         spec: {group: example.com, scope: Namespaced, names: {kind: Widget, plural: widgets}, versions: [{name: v1, served: true, storage: true}]}\n---\n\
         apiVersion: v1\nkind: Namespace\nmetadata: {name: shop-ns}\n",
    )
    .unwrap();
    // Before anything exists, diff shows everything as new (its CRD and Namespace come with it).
    let diff = s.run(&["diff"]);
    assert_eq!(diff.status.code(), Some(1), "{}", stderr(&diff));
    let text = String::from_utf8_lossy(&diff.stdout);
    assert!(
        text.contains("+++ merged/Widget/shop-ns/w")
            && text.contains("+++ merged/Namespace/shop-ns"),
        "{text}"
    );
    let out = s.run(&["apply"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = s.api.log();
    let config = format!("ConfigMap/{}", s.config_names("shop-ns")[0]);
    assert_eq!(
        log[..3],
        [
            "Namespace/shop-ns",
            "CustomResourceDefinition/widgets.example.com",
            config.as_str()
        ]
    );
    assert!(
        s.api.object("widgets", "shop-ns", "w").is_some(),
        "berth.yaml's namespace"
    );
    // --namespace wins over berth.yaml.
    let out = s.run(&["apply", "-n", "elsewhere"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(s.api.object("widgets", "elsewhere", "w").is_some());
}

#[test]
fn cluster_errors_are_clear() {
    let s = setup("");
    std::fs::write(
        s.dir.path().join("deploy.yaml"),
        "apiVersion: example.com/v1\nkind: Frobnicator\nmetadata: {name: f}\n",
    )
    .unwrap();
    let out = s.run(&["apply"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out), "error: unknown kind `Frobnicator` (apiVersion `example.com/v1`): the cluster does not serve it; install its CRD first, or check the apiVersion\n");
    let diff = s.run(&["diff"]);
    assert_eq!(
        diff.status.code(),
        Some(2),
        "diff errors exit 2: {}",
        stderr(&diff)
    );

    std::fs::write(s.dir.path().join("deploy.yaml"), DEPLOY).unwrap();
    s.api.forbid("patch", "deployments");
    let out = s.run(&["apply"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("error: forbidden: RBAC does not allow `patch` on `deployments.apps` in namespace `dev`"), "{}", stderr(&out));

    let out = s.run(&["rollback"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no earlier successful apply is recorded in namespace `dev`"),
        "{}",
        stderr(&out)
    );

    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let elsewhere = tempfile::tempdir().unwrap();
    let unreachable =
        common::fake_kube::write_kubeconfig(elsewhere.path(), &format!("http://127.0.0.1:{port}"));
    let out = berth(s.dir.path())
        .args(["apply", "--kubeconfig"])
        .arg(&unreachable)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("cannot reach the API server"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_rollout_that_does_not_finish_times_out() {
    let s = setup("");
    s.api.behave("web", Behaviour::Slow);
    let out = s.run(&["apply", "--timeout", "1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("error: rollout of Deployment/web (namespace dev): timed out after 1 s: 0 of 1 new replicas updated; nothing was deleted"), "{}", stderr(&out));
    // --no-wait applies and records without waiting.
    let out = s.run(&["apply", "--no-wait"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("rolled out"));
}

#[test]
fn secrets_are_masked_in_diff_and_records_are_secrets() {
    let s = setup("");
    let path = s.dir.path().join("berth.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        format!("{text}  web-secret:\n    secret: true\n    literals: [\"TOKEN=s3cret-one\"]\n"),
    )
    .unwrap();
    assert!(s.run(&["apply"]).status.success());
    std::fs::write(
        &path,
        format!("{text}  web-secret:\n    secret: true\n    literals: [\"TOKEN=s3cret-two\"]\n"),
    )
    .unwrap();
    let out = s.run(&["diff"]);
    assert_eq!(out.status.code(), Some(1));
    let diff = String::from_utf8_lossy(&out.stdout);
    assert!(
        diff.contains("+  TOKEN: '*** (after)'") || diff.contains("+  TOKEN: \"*** (after)\""),
        "{diff}"
    );
    for leaked in ["s3cret", "czNjcmV0"] {
        assert!(!diff.contains(leaked), "secret value printed: {diff}");
    }
    let record = record(&s.api, 1);
    assert_eq!(record["kind"], "Secret");
    assert_eq!(record["type"], "berth.dev/apply-record");
}

#[test]
fn no_cluster_configuration_is_clear() {
    let s = setup("");
    let home = tempfile::tempdir().unwrap();
    let out = berth(s.dir.path())
        .env("HOME", home.path())
        .arg("apply")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("error: no cluster configuration"),
        "{}",
        stderr(&out)
    );
}

/// Opt-in: `BERTH_TEST_CLUSTER=1` with `KUBECONFIG` pointing at a disposable cluster
/// (kind or k3d; see the README). Applies a busybox Deployment with a generated config
/// into namespace `berth-apply-test`, changes the config, checks diff, apply and
/// rollback, then deletes the namespace.
#[test]
#[ignore = "opt-in: needs a real cluster; run with BERTH_TEST_CLUSTER=1, KUBECONFIG and -- --ignored"]
fn real_cluster_apply_diff_rollback() {
    if std::env::var("BERTH_TEST_CLUSTER").as_deref() != Ok("1")
        || std::env::var_os("KUBECONFIG").is_none()
    {
        panic!("opt-in test run without its cluster: set BERTH_TEST_CLUSTER=1 and KUBECONFIG to apply to a real cluster");
    }
    let ns = "berth-apply-test";
    let kubectl = |args: &[&str]| {
        std::process::Command::new("kubectl")
            .args(args)
            .output()
            .unwrap()
    };
    let _ = kubectl(&["delete", "namespace", ns, "--wait"]);
    assert!(kubectl(&["create", "namespace", ns]).status.success());
    let dir = project(&format!(
        "name: shop\nnamespace: {ns}\nmanifests: [deploy.yaml]\nimages:\n  web: {{image: docker.io/library/busybox:1.36}}\nconfigs:\n  web-config:\n    literals: [\"LEVEL=one\"]\n"
    ));
    let deploy = DEPLOY.replace(
        "ghcr.io/acme/web:v1",
        "docker.io/library/busybox:1.36\n          command: [sleep, \"3600\"]",
    );
    std::fs::write(dir.path().join("deploy.yaml"), deploy).unwrap();
    let run = |args: &[&str]| {
        berth(dir.path())
            .env("KUBECONFIG", std::env::var_os("KUBECONFIG").unwrap())
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["apply", "--timeout", "180"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(run(&["diff"]).status.code(), Some(0));
    let path = dir.path().join("berth.yaml");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("LEVEL=one", "LEVEL=two");
    std::fs::write(&path, text).unwrap();
    assert_eq!(run(&["diff"]).status.code(), Some(1));
    assert!(run(&["apply", "--timeout", "180"]).status.success());
    assert!(run(&["rollback", "--timeout", "180"]).status.success());
    let _ = kubectl(&["delete", "namespace", ns, "--wait=false"]);
}
