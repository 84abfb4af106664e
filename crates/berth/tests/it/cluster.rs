//! `berth apply`, `diff` and `rollback` against a real control plane
//! (`common/testenv.rs`: kube-apiserver, etcd, controller-manager, scheduler and
//! kwok nodes), each test in a namespace of its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::Path;

use common::testenv::{plane, Namespace};
use common::{berth, project};
use serde_json::Value;

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

/// A pod template no node can take: the rollout never finishes, and a Deployment
/// with a 2 s progress deadline reports ProgressDeadlineExceeded.
const NOWHERE: &str = "      nodeSelector: {berth.dev/test: nowhere}\n";

struct Setup {
    ns: Namespace,
    dir: tempfile::TempDir,
}

fn setup(prefix: &str, namespace_line: &str) -> Setup {
    let ns = plane().namespace(prefix);
    let dir = project(&format!(
        "name: shop\n{namespace_line}manifests: [deploy.yaml]\nimages:\n  web: {{image: ghcr.io/acme/web:v1}}\nconfigs:\n  web-config:\n    literals: [\"LEVEL=one\"]\n"
    ));
    std::fs::write(dir.path().join("deploy.yaml"), DEPLOY).unwrap();
    Setup { ns, dir }
}

impl Setup {
    fn run(&self, args: &[&str]) -> std::process::Output {
        self.run_with(&self.ns.kubeconfig, args)
    }

    fn run_with(&self, kubeconfig: &Path, args: &[&str]) -> std::process::Output {
        berth(self.dir.path())
            .args(args)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .output()
            .unwrap()
    }

    fn manifests(&self, text: &str) {
        std::fs::write(self.dir.path().join("deploy.yaml"), text).unwrap();
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

    fn config_names(&self) -> Vec<String> {
        self.ns
            .names("configmaps")
            .into_iter()
            .filter(|n| n.starts_with("web-config"))
            .collect()
    }

    fn deployment_config(&self) -> String {
        let d = self.ns.get("deployments", "web").unwrap();
        d["spec"]["template"]["spec"]["containers"][0]["envFrom"][0]["configMapRef"]["name"]
            .as_str()
            .unwrap()
            .to_string()
    }

    fn record(&self, sequence: u32) -> Value {
        self.ns
            .get("secrets", &format!("berth-shop-r{sequence}"))
            .unwrap()
    }
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The last line of a message (after the progress lines, the error).
fn last_line(text: &str) -> &str {
    text.trim_end().lines().last().unwrap_or_default()
}

/// The `applied …` lines of berth's log, in order.
fn applied(log: &str) -> Vec<String> {
    log.lines()
        .filter_map(|l| l.trim().strip_prefix("applied "))
        .map(|l| l.split(" (namespace").next().unwrap().to_string())
        .collect()
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn apply_labels_records_waits_and_is_idempotent() {
    let s = setup("apply", "");
    let ns = &s.ns.name;
    let out = s.run(&["apply"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = stderr(&out);
    assert!(
        log.contains(&format!("applied Deployment/web (namespace {ns})")),
        "{log}"
    );
    assert!(
        log.contains(&format!("rolled out Deployment/web (namespace {ns})")),
        "{log}"
    );
    assert!(log.contains("recorded as Secret berth-shop-r1"), "{log}");
    // The kubeconfig context's namespace; labels on everything; the generated name in use.
    for (resource, name) in [("deployments", "web"), ("services", "web")] {
        let object = s.ns.get(resource, name).unwrap();
        assert_eq!(
            object["metadata"]["labels"]["app.kubernetes.io/managed-by"],
            "berth"
        );
        assert_eq!(object["metadata"]["labels"]["berth.dev/project"], "shop");
        let managers: Vec<&str> = object["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["operation"] == "Apply")
            .map(|m| m["manager"].as_str().unwrap())
            .collect();
        assert_eq!(managers, ["berth"], "server-side apply as `berth`");
    }
    let config = s.deployment_config();
    assert!(
        config.starts_with("web-config-") && config.len() == "web-config-".len() + 10,
        "{config}"
    );
    let cm = s.ns.get("configmaps", &config).unwrap();
    assert_eq!(cm["metadata"]["labels"]["berth.dev/config"], "web-config");
    assert_eq!(cm["immutable"], true);
    assert_eq!(
        s.record(1)["metadata"]["annotations"]["berth.dev/status"],
        "succeeded"
    );
    assert_eq!(
        applied(&log),
        [
            format!("ConfigMap/{config}"),
            "Deployment/web".into(),
            "Service/web".into()
        ]
    );
    let deployment = s.ns.get("deployments", "web").unwrap();
    assert_eq!(deployment["status"]["readyReplicas"], 1, "kwok ran the pod");

    // Again: nothing changes (same resourceVersions), and diff agrees.
    let version = |resource: &str, name: &str| {
        s.ns.get(resource, name).unwrap()["metadata"]["resourceVersion"].clone()
    };
    let before = (version("deployments", "web"), version("services", "web"));
    let again = s.run(&["apply"]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(
        (version("deployments", "web"), version("services", "web")),
        before
    );
    let diff = s.run(&["diff"]);
    assert_eq!(
        diff.status.code(),
        Some(0),
        "{}{}",
        stdout(&diff),
        stderr(&diff)
    );
    assert!(diff.stdout.is_empty(), "{}", stdout(&diff));
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn diff_shows_what_apply_would_change_and_changes_nothing() {
    let _filters = crate::common::snapshot_filters();
    let s = setup("diff", "");
    assert!(s.run(&["apply"]).status.success());
    let old = s.deployment_config();
    s.level("two");
    let out = s.run(&["diff"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    // The new generation of the config is shown against the one it replaces: the keys
    // that changed, not a whole new object. Where a hunk starts depends on the fields
    // the API server defaults (Kubernetes 1.30 gives a Deployment one more line
    // before its containers than 1.37): the lines are redacted, the sizes kept.
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(
        r"@@ -\d+,(\d+) \+\d+,(\d+) @@",
        "@@ -[line],$1 +[line],$2 @@",
    );
    let _hunks = settings.bind_to_scope();
    insta::assert_snapshot!(text, @"
    --- live/ConfigMap/diff-[ns]/web-config-6ccmkhhg6h
    +++ merged/ConfigMap/diff-[ns]/web-config-g8tck2f6f6
    @@ -[line],7 +[line],7 @@
     apiVersion: v1
     kind: ConfigMap
     metadata:
    -  name: web-config-6ccmkhhg6h
    +  name: web-config-g8tck2f6f6
       labels:
         app.kubernetes.io/managed-by: berth
         berth.dev/config: web-config
    @@ -[line],4 +[line],4 @@
       namespace: diff-[ns]
     immutable: true
     data:
    -  LEVEL: one
    +  LEVEL: two
    --- live/Deployment/diff-[ns]/web
    +++ merged/Deployment/diff-[ns]/web
    @@ -[line],7 +[line],7 @@
             image: ghcr.io/acme/web:v1
             envFrom:
             - configMapRef:
    -            name: web-config-6ccmkhhg6h
    +            name: web-config-g8tck2f6f6
             resources: {}
             terminationMessagePath: /dev/termination-log
             terminationMessagePolicy: File
    ");
    assert!(
        !text.contains("generation:") && !text.contains("managedFields"),
        "server bookkeeping is not shown: {text}"
    );
    assert!(!text.contains("\x1b["), "no colour when not on a terminal");
    assert_eq!(s.deployment_config(), old, "diff applied nothing");
    assert_eq!(s.config_names().len(), 1);
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn old_generations_go_only_after_success_and_only_berths_own() {
    let s = setup("generations", "");
    let ns = &s.ns.name;
    // Look-alikes that are not this project's: no labels, and another project's.
    s.ns.apply_as(
        "kubectl",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config-handmade}\n",
    );
    s.ns.apply_as("kubectl", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config-other\n  labels: {app.kubernetes.io/managed-by: berth, berth.dev/project: other, berth.dev/config: web-config}\n");
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
    assert_eq!(s.config_names(), expected);

    // A failed rollout (no node takes the new pod; the progress deadline passes)
    // deletes nothing and is recorded as failed.
    s.manifests(
        &DEPLOY
            .replace(
                "  replicas: 1\n",
                "  replicas: 1\n  progressDeadlineSeconds: 2\n",
            )
            .replace(
                "    spec:\n      containers:",
                &format!("    spec:\n{NOWHERE}      containers:"),
            ),
    );
    s.level("four");
    let out = s.run(&["apply", "--rollout-timeout", "60"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "error: rollout of Deployment/web (namespace {ns}): failed: ProgressDeadlineExceeded: ReplicaSet \"web-"
        )) && stderr(&out).contains("has timed out progressing.; nothing was deleted"),
        "{}",
        stderr(&out)
    );
    let names = s.config_names();
    assert_eq!(names.len(), 5, "every generation kept: {names:?}");
    assert_eq!(
        s.record(4)["metadata"]["annotations"]["berth.dev/status"],
        "failed"
    );

    // Rollback goes to the last good apply (r3), waits, and records itself.
    let out = s.run(&["rollback"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("rolling back to apply r3 of project `shop`"),
        "{}",
        stderr(&out)
    );
    assert_eq!(s.deployment_config(), generations[2]);
    let deployment = s.ns.get("deployments", "web").unwrap();
    assert!(
        deployment["spec"]["template"]["spec"]
            .get("nodeSelector")
            .is_none(),
        "r3's pod template is back: {deployment}"
    );
    let r5 = s.record(5);
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
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn conflicts_are_reported_and_nothing_is_applied() {
    let _filters = crate::common::snapshot_filters();
    let s = setup("conflicts", "");
    let ns = &s.ns.name;
    // Someone else owns spec.replicas (kubectl apply --server-side --field-manager=other).
    s.ns.apply_as(
        "other",
        &DEPLOY
            .split("---")
            .next()
            .unwrap()
            .replace("replicas: 1", "replicas: 3")
            .replace("web-config", "hand-made"),
    );
    let out = s.run(&["apply"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let log = stderr(&out);
    assert!(
        log.starts_with(&format!(
            "error: Deployment/web (namespace {ns}): apply conflicts with other field managers:\n"
        )),
        "{log}"
    );
    assert!(log.contains("  .spec.replicas (owned by other)\n"), "{log}");
    assert!(
        log.ends_with("  help: these fields were set by someone else; re-run with --force-conflicts to take them over, or remove them from the manifests\n"),
        "{log}"
    );
    assert!(
        s.ns.get("services", "web").is_none(),
        "the dry run stopped everything"
    );
    assert!(s.config_names().is_empty());
    let out = s.run(&["apply", "--force-conflicts"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        s.ns.get("deployments", "web").unwrap()["spec"]["replicas"],
        1
    );
    // The same objects again (the "unchanged" path), after someone took a field
    // and the Service went: the dry run still comes first, so nothing is written.
    s.ns.ok(&["delete", "service", "web"]);
    let taken = plane().kubectl_with(
        &s.ns.kubeconfig,
        &[
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager",
            "other",
            "-f",
            "-",
        ],
        Some(
            &DEPLOY
                .split("---")
                .next()
                .unwrap()
                .replace("replicas: 1", "replicas: 3"),
        ),
    );
    assert!(taken.status.success(), "{}", stderr(&taken));
    let out = s.run(&["apply"]);
    let log = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{log}");
    insta::assert_snapshot!(log, @r#"
    error: Deployment/web (namespace conflicts-[ns]): apply conflicts with other field managers:
      .spec.replicas (owned by other)
      .spec.template.spec.containers[name="app"].envFrom (owned by other)
      help: these fields were set by someone else; re-run with --force-conflicts to take them over, or remove them from the manifests
    "#);
    assert!(!log.contains("unchanged"), "{log}");
    assert!(
        s.ns.get("services", "web").is_none(),
        "nothing applied before the conflict"
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn crds_and_namespaces_first_and_namespace_precedence() {
    let plane = plane();
    let own = format!("shop-ns-{}", std::process::id());
    let s = setup("crds", &format!("namespace: {own}\n"));
    let group = format!("g{}.example.com", std::process::id());
    s.manifests(&format!(
        "apiVersion: {group}/v1\nkind: Widget\nmetadata: {{name: w}}\nspec: {{size: 3}}\n---\n\
         apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: widgets.{group}}}\n\
         spec:\n  group: {group}\n  scope: Namespaced\n  names: {{kind: Widget, plural: widgets}}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}\n---\n\
         apiVersion: v1\nkind: Namespace\nmetadata: {{name: {own}}}\n",
    ));
    // Before anything exists, diff shows everything as new (its CRD and Namespace come with it).
    let diff = s.run(&["diff"]);
    assert_eq!(diff.status.code(), Some(1), "{}", stderr(&diff));
    let text = stdout(&diff);
    assert!(
        text.contains(&format!("+++ merged/Widget/{own}/w"))
            && text.contains(&format!("+++ merged/Namespace/{own}")),
        "{text}"
    );
    let out = s.run(&["apply"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let order = applied(&stderr(&out));
    assert_eq!(
        order[..2],
        [
            format!("Namespace/{own}"),
            format!("CustomResourceDefinition/widgets.{group}"),
        ]
    );
    assert!(order[2].starts_with("ConfigMap/web-config-"), "{order:?}");
    assert!(
        s.ns.get_in(&own, &format!("widgets.{group}"), "w")
            .is_some(),
        "berth.yaml's namespace"
    );
    // --namespace wins over berth.yaml.
    let elsewhere = plane.namespace("elsewhere");
    let out = s.run(&["apply", "-n", &elsewhere.name]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(elsewhere.get(&format!("widgets.{group}"), "w").is_some());
    plane.ok(&["delete", "namespace", &own, "--wait=false"]);
    plane.ok(&["delete", "crd", &format!("widgets.{group}"), "--wait=false"]);
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn statefulsets_daemonsets_and_jobs_are_waited_for() {
    let s = setup("workloads", "");
    let ns = &s.ns.name;
    s.manifests(
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n  replicas: 2\n  serviceName: db\n  selector: {matchLabels: {app: db}}\n  template:\n    metadata: {labels: {app: db}}\n    spec:\n      containers: [{name: db, image: ghcr.io/acme/web:v1}]\n---\n\
         apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent}\nspec:\n  selector: {matchLabels: {app: agent}}\n  template:\n    metadata: {labels: {app: agent}}\n    spec:\n      containers: [{name: agent, image: ghcr.io/acme/web:v1}]\n---\n\
         apiVersion: batch/v1\nkind: Job\nmetadata: {name: migrate}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: migrate, image: ghcr.io/acme/web:v1}]\n",
    );
    let out = s.run(&["apply", "--rollout-timeout", "60"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = stderr(&out);
    for workload in ["StatefulSet/db", "DaemonSet/agent", "Job/migrate"] {
        assert!(
            log.contains(&format!("rolled out {workload} (namespace {ns})")),
            "{log}"
        );
    }
    assert_eq!(
        s.ns.get("statefulsets", "db").unwrap()["status"]["readyReplicas"],
        2
    );
    assert_eq!(
        s.ns.get("daemonsets", "agent").unwrap()["status"]["numberReady"],
        2,
        "one pod on each of the two kwok nodes"
    );
    assert_eq!(
        s.ns.get("jobs", "migrate").unwrap()["status"]["succeeded"],
        1
    );

    // A StatefulSet whose new pods no node takes: the wait times out, naming its state.
    s.manifests(
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n  replicas: 2\n  serviceName: db\n  selector: {matchLabels: {app: db}}\n  template:\n    metadata: {labels: {app: db}}\n    spec:\n      nodeSelector: {berth.dev/test: nowhere}\n      containers: [{name: db, image: ghcr.io/acme/web:v2}]\n",
    );
    let out = s.run(&["apply", "--rollout-timeout", "3"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "error: rollout of StatefulSet/db (namespace {ns}): timed out after 3 s"
        )),
        "{}",
        stderr(&out)
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn a_rollout_that_does_not_finish_times_out() {
    let _filters = crate::common::snapshot_filters();
    let s = setup("timeout", "");
    s.manifests(&DEPLOY.replace(
        "    spec:\n      containers:",
        &format!("    spec:\n{NOWHERE}      containers:"),
    ));
    let out = s.run(&["apply", "--rollout-timeout", "2"]);
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!(last_line(&stderr(&out)), @"error: rollout of Deployment/web (namespace timeout-[ns]): timed out after 2 s: 0 of 1 updated replicas available; nothing was deleted");
    // --no-wait applies and records without waiting.
    let out = s.run(&["apply", "--no-wait"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("rolled out"));
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn immutable_configs_are_replaced_by_name_never_edited() {
    let s = setup("immutable", "");
    // The real API server refuses data changes to an immutable ConfigMap; berth never
    // makes one, because the changed data has a new name.
    assert!(s.run(&["apply"]).status.success());
    let first = s.deployment_config();
    let edit = s.ns.kubectl(&[
        "patch",
        "configmap",
        &first,
        "--type=merge",
        "-p",
        r#"{"data":{"LEVEL":"edited"}}"#,
    ]);
    assert!(!edit.status.success(), "the server keeps it immutable");
    assert!(
        String::from_utf8_lossy(&edit.stderr).contains("field is immutable"),
        "{}",
        String::from_utf8_lossy(&edit.stderr)
    );
    s.level("two");
    let out = s.run(&["apply"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_ne!(s.deployment_config(), first);
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn secrets_are_masked_in_diff_and_records_are_secrets() {
    let s = setup("secrets", "");
    // A Secret first created by `kubectl apply` (client-side) carries its old data in
    // clear in the last-applied-configuration annotation.
    let db = |password: &str| {
        format!("apiVersion: v1\nkind: Secret\nmetadata: {{name: db}}\nstringData: {{PASSWORD: {password}}}\n")
    };
    let out = s.ns.plane.kubectl_with(
        &s.ns.kubeconfig,
        &["apply", "-f", "-"],
        Some(&db("old-pa55word")),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let path = s.dir.path().join("berth.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        format!("{text}  web-secret:\n    secret: true\n    literals: [\"TOKEN=s3cret-one\"]\n"),
    )
    .unwrap();
    // berth takes the Secret over: its labels land beside the annotation, so the
    // annotation is in the diff's context.
    s.manifests(&format!("{DEPLOY}---\n{}", db("new-pa55word")));
    let first = s.run(&["diff"]);
    assert_eq!(first.status.code(), Some(1), "{}", stderr(&first));
    let first_diff = stdout(&first);
    assert!(
        first_diff.contains("kubectl.kubernetes.io/last-applied-configuration: \"***\""),
        "the annotation is named, its value masked: {first_diff}"
    );
    let out = s.run(&["apply", "--force-conflicts"]);
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::write(
        &path,
        format!("{text}  web-secret:\n    secret: true\n    literals: [\"TOKEN=s3cret-two\"]\n"),
    )
    .unwrap();
    s.manifests(&format!("{DEPLOY}---\n{}", db("newer-pa55word")));
    let out = s.run(&["diff"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let diff = stdout(&out);
    assert!(
        diff.contains("+  TOKEN: '*** (after)'") || diff.contains("+  TOKEN: \"*** (after)\""),
        "{diff}"
    );
    assert!(diff.contains("+  PASSWORD: \"*** (after)\""), "{diff}");
    let diff = format!("{first_diff}{diff}");
    use base64::Engine as _;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    for leaked in [
        "s3cret".to_string(),
        b64("s3cret-one"),
        b64("s3cret-two"),
        "pa55word".into(),
        b64("old-pa55word"),
        b64("new-pa55word"),
        b64("newer-pa55word"),
    ] {
        for (channel, text) in [("stdout", &diff), ("stderr", &stderr(&out))] {
            assert!(
                !text.contains(&leaked),
                "secret value `{leaked}` printed on {channel}: {text}"
            );
        }
    }
    let record = s.record(1);
    assert_eq!(record["kind"], "Secret");
    assert_eq!(record["type"], "berth.dev/apply-record");
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn cluster_errors_are_clear() {
    let _filters = crate::common::snapshot_filters();
    let s = setup("errors", "");
    let ns = &s.ns.name;
    s.manifests("apiVersion: example.com/v1\nkind: Frobnicator\nmetadata: {name: f}\n");
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

    // A user bound to a namespaced Role that may read but not write deployments.
    s.manifests(DEPLOY);
    let restricted = restricted_user(&s.ns);
    let out = s.run_with(&restricted, &["apply"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with(&format!(
            "error: forbidden: RBAC does not allow `patch` on `deployments.apps` in namespace `{ns}`"
        )),
        "{}",
        stderr(&out)
    );
    // The Deployment's dry run is refused before anything is written (the generated
    // config, which needs no dry run, would go first).
    assert!(s.ns.get("deployments", "web").is_none());
    assert_eq!(
        s.ns.ok(&["get", "configmaps", "-l", "berth.dev/project", "-o", "name"]),
        ""
    );

    let out = s.run(&["rollback"]);
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!(stderr(&out), @"error: rollback of project `shop`: no earlier successful apply is recorded in namespace `errors-[ns]` (berth keeps --keep generations; 1 keeps none to go back to)");

    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let elsewhere = tempfile::tempdir().unwrap();
    let unreachable = elsewhere.path().join("kubeconfig");
    std::fs::write(
        &unreachable,
        format!("apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\nusers: [{{name: u, user: {{}}}}]\ncontexts: [{{name: c, context: {{cluster: c, user: u, namespace: dev}}}}]\ncurrent-context: c\n"),
    )
    .unwrap();
    let out = s.run_with(&unreachable, &["apply"]);
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!(stderr(&out), @"error: cannot reach the API server at http://127.0.0.1:[port]/ (Connection refused (os error 111)); is the cluster up and the kubeconfig current?");
}

/// A kubeconfig for ServiceAccount `reader` of `ns`, whose Role may get, list and
/// watch everything in the namespace but change nothing.
fn restricted_user(ns: &Namespace) -> std::path::PathBuf {
    ns.ok(&["create", "serviceaccount", "reader"]);
    ns.ok(&[
        "create",
        "role",
        "reader",
        "--verb=get,list,watch",
        "--resource=configmaps,secrets,deployments.apps,services",
    ]);
    ns.ok(&[
        "create",
        "rolebinding",
        "reader",
        "--role=reader",
        &format!("--serviceaccount={}:reader", ns.name),
    ]);
    ns.token_kubeconfig("reader")
}

#[test]
fn no_cluster_configuration_is_clear() {
    let dir = project("name: shop\nmanifests: [deploy.yaml]\n");
    std::fs::write(dir.path().join("deploy.yaml"), DEPLOY).unwrap();
    let home = tempfile::tempdir().unwrap();
    let out = berth(dir.path())
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

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn fields_removed_from_the_manifests_leave_the_cluster() {
    let s = setup("prune-fields", "");
    // Server-side apply keys these lists by mountPath, containerPort+protocol and
    // name: removing an entry berth applied removes it from the live object.
    let full = DEPLOY.replace(
        "          envFrom: [{configMapRef: {name: web-config}}]\n",
        "          envFrom: [{configMapRef: {name: web-config}}]\n          env: [{name: A, value: a}, {name: B, value: b}]\n          ports: [{containerPort: 80}, {containerPort: 81, protocol: UDP}]\n          volumeMounts: [{name: v, mountPath: /a}, {name: v, mountPath: /b}]\n      volumes: [{name: v, emptyDir: {}}]\n",
    );
    s.manifests(&full);
    let out = s.run(&["apply"]);
    assert!(out.status.success(), "{}", stderr(&out));
    s.manifests(
        &full
            .replace(", {name: B, value: b}", "")
            .replace(", {containerPort: 81, protocol: UDP}", "")
            .replace(", {name: v, mountPath: /b}", ""),
    );
    let out = s.run(&["apply"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let live = s.ns.get("deployments", "web").unwrap();
    let container = &live["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container["env"],
        serde_json::json!([{"name": "A", "value": "a"}])
    );
    assert_eq!(
        container["ports"],
        serde_json::json!([{"containerPort": 80, "protocol": "TCP"}])
    );
    assert_eq!(
        container["volumeMounts"],
        serde_json::json!([{"name": "v", "mountPath": "/a"}])
    );
}

#[test]
fn a_failing_credential_plugin_is_named_and_its_output_never_printed() {
    let dir = project("name: shop\nmanifests: [deploy.yaml]\n");
    std::fs::write(dir.path().join("deploy.yaml"), DEPLOY).unwrap();
    std::fs::write(
        dir.path().join("kubeconfig"),
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]\n\
         users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, interactiveMode: Never,\n\
           args: ['-c', 'echo {\"status\": {\"token\": \"pl4nted-t0ken\"}}; echo session expired >&2; exit 3']}}}]\n\
         contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n",
    )
    .unwrap();
    for command in ["apply", "diff"] {
        let out = berth(dir.path())
            .args([command, "--kubeconfig", "kubeconfig"])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let log = stderr(&out);
        assert!(
            log.contains("kubeconfig user `u`: credential plugin `sh` exited 3: session expired"),
            "{log}"
        );
        for channel in [&log, &stdout(&out)] {
            assert!(
                !channel.contains("pl4nted"),
                "the credential leaked: {channel}"
            );
        }
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn a_token_file_ending_in_a_newline_authenticates_as_with_kubectl() {
    let s = setup("token-file", "");
    s.ns.ok(&["create", "serviceaccount", "deployer"]);
    s.ns.ok(&[
        "create",
        "rolebinding",
        "deployer",
        "--clusterrole=cluster-admin",
        &format!("--serviceaccount={}:deployer", s.ns.name),
    ]);
    let token = s.ns.ok(&["create", "token", "deployer", "--duration=10m"]);
    let file = s.dir.path().join("token");
    std::fs::write(&file, format!("{}\n", token.trim())).unwrap(); // `echo "$TOKEN" > token`
    let kubeconfig = s.ns.token_kubeconfig("deployer");
    let path = file.display().to_string();
    for args in [
        &["config", "set", "users.deployer.tokenFile", path.as_str()][..],
        &["config", "unset", "users.deployer.token"],
    ] {
        let out = plane().kubectl_with(&kubeconfig, args, None);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    s.manifests(DEPLOY);
    let out = berth(s.dir.path())
        .args(["diff", "--kubeconfig"])
        .arg(&kubeconfig)
        .args(["--namespace", &s.ns.name])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "differences, no error: {}",
        stderr(&out)
    );
    assert!(stdout(&out).contains("Deployment"), "{}", stdout(&out));
}

/// Sweep 4, item 6 (K96, K97): a project whose rendered objects total 20 MiB —
/// each object under the API's limit, the whole far over one Secret's — is
/// applied, recorded (gzipped, over part Secrets) and rolled back.
#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn k96_a_20_mib_project_applies_and_rolls_back() {
    let s = setup("big", "");
    // 40 ConfigMaps of ~512 KiB each, text that compresses badly.
    let mut manifests = String::from(DEPLOY);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..40 {
        let mut data = String::with_capacity(512 << 10);
        while data.len() < 512 << 10 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            data.push_str(&format!("{x:016x}"));
        }
        manifests.push_str(&format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: blob-{i}}}\ndata: {{blob: {data}}}\n"
        ));
    }
    assert!(manifests.len() > 20 << 20);
    s.manifests(&manifests);
    let out = s.run(&["apply", "--rollout-timeout", "120"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r1 = s.record(1);
    let parts: usize = r1["metadata"]["annotations"]["berth.dev/parts"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(parts > 10, "{parts} parts");
    assert!(s
        .ns
        .get("secrets", &format!("berth-shop-r1-p{}", parts - 1))
        .is_some());
    let first = s.deployment_config();
    // A second apply with another config, then back.
    s.level("two");
    let out = s.run(&["apply", "--rollout-timeout", "120"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_ne!(s.deployment_config(), first);
    let out = s.run(&["rollback", "--rollout-timeout", "120"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(s.deployment_config(), first);
    assert!(s.ns.get("configmaps", "blob-39").is_some());
    // Two more applies push the first records past what is kept: a record that
    // went took its parts with it; a kept one keeps them.
    for level in ["three", "four"] {
        s.level(level);
        let out = s.run(&["apply", "--rollout-timeout", "120"]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let gone: Vec<u32> = (1..=3)
        .filter(|n| s.ns.get("secrets", &format!("berth-shop-r{n}")).is_none())
        .collect();
    assert!(!gone.is_empty(), "an old record was cleaned up");
    for n in gone {
        for part in 1..parts {
            assert!(
                s.ns.get("secrets", &format!("berth-shop-r{n}-p{part}"))
                    .is_none(),
                "part {part} of the removed r{n}"
            );
        }
    }
    assert!(s.ns.get("secrets", "berth-shop-r5-p1").is_some());
}

/// Sweep 4, item 12: a `${VAR}` placeholder berth does not fill would be
/// applied as written; apply, diff and dev say so before (render leaves it for
/// envsubst and says nothing).
#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn an_unfilled_placeholder_is_named_before_it_is_applied() {
    let s = setup("placeholder", "");
    s.manifests(&DEPLOY.replace(
        "          envFrom: [{configMapRef: {name: web-config}}]\n",
        "          envFrom: [{configMapRef: {name: web-config}}]\n          args: ['${POOL_NAME}', 'sh -c echo ${HOME}']\n",
    ));
    let out = s.run(&["diff"]);
    assert!(
        stderr(&out).contains("warning: Deployment/web: `spec.template.spec.containers[0].args[0]` is `${POOL_NAME}`, a placeholder berth does not fill"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("${HOME}"), "{}", stderr(&out));
    let render = berth(s.dir.path()).arg("render").output().unwrap();
    assert!(
        render.status.success() && render.stderr.is_empty(),
        "{}",
        stderr(&render)
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn the_rollout_wait_reads_what_it_may_not_watch() {
    // The wait follows the workloads with a watch; a Role without `watch` makes it
    // read them as it looks instead, and the rollout is seen all the same.
    let s = setup("no-watch", "");
    s.ns.ok(&["create", "serviceaccount", "nowatch"]);
    s.ns.ok(&[
        "create",
        "role",
        "nowatch",
        "--verb=get,list,create,patch,update,delete",
        "--resource=configmaps,secrets,deployments.apps,services",
    ]);
    s.ns.ok(&[
        "create",
        "rolebinding",
        "nowatch",
        "--role=nowatch",
        &format!("--serviceaccount={}:nowatch", s.ns.name),
    ]);
    let kubeconfig = s.ns.token_kubeconfig("nowatch");
    let started = std::time::Instant::now();
    let out = s.run_with(&kubeconfig, &["apply", "--rollout-timeout", "60"]);
    let log = stderr(&out);
    assert!(out.status.success(), "{log}");
    assert!(
        log.contains(&format!(
            "rolled out Deployment/web (namespace {})",
            s.ns.name
        )),
        "{log}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "{log}"
    );
}
