//! What a reconcile asks of the API server, on the real control plane: a
//! status write starts none, an unchanged reconcile of untouched objects asks
//! nothing (no dry run, no record, no read of a workload whose watch shows no
//! change), and what someone else changed is read and put back.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::controller::{apply, condition, eventually, namespaced_rbac, start_as, start_with};
use common::testenv::{plane, Namespace};

use crate::controller::{http_get, log_of, run_yaml, BERTH};

/// The total of `berth_controller_reconciles_total` over its reasons.
fn reconciles(ns: &Namespace, name: &str) -> f64 {
    http_get(&log_of(ns, name), "/metrics")
        .1
        .lines()
        .filter(|l| l.starts_with("berth_controller_reconciles_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Waits until the reconcile count has not moved for 3 s; returns it.
fn settled_reconciles(ns: &Namespace, name: &str) -> f64 {
    let mut last = reconciles(ns, name);
    let mut still = Instant::now();
    let deadline = Instant::now() + Duration::from_secs(60);
    while still.elapsed() < Duration::from_secs(3) {
        assert!(
            Instant::now() < deadline,
            "reconciles never settled: {last}"
        );
        std::thread::sleep(Duration::from_millis(250));
        let now = reconciles(ns, name);
        if now != last {
            (last, still) = (now, Instant::now());
        }
    }
    last
}

/// The llama Berth and its source applied, under controller `name`: Ready, and
/// its reconciles settled (returns their count).
fn ready_and_settled(ns: &Namespace, name: &str) -> f64 {
    apply(ns, &run_yaml("2"));
    apply(ns, BERTH);
    eventually(60, "Ready", ns, || {
        let b = ns.get("berths", "llama")?;
        (condition(&b, "Ready")?.0 == "True").then_some(())
    });
    settled_reconciles(ns, name)
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn a_status_write_triggers_no_reconcile_and_an_annotation_does() {
    let plane = plane();
    let ns = plane.namespace("controller-trigger");
    let _controller = start_as(&ns, "c", &[]);
    let settled = ready_and_settled(&ns, "c");
    // Someone else writes the status (as the controller itself does on every
    // rollout): the spec and metadata are unchanged, so nothing is reconciled.
    ns.ok(&[
        "patch",
        "berth",
        "llama",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"conditions":[{"type":"Probe","status":"True","reason":"Test","message":"a status-only write","lastTransitionTime":"2026-12-02T00:00:00Z"}]}}"#,
    ]);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        reconciles(&ns, "c"),
        settled,
        "a status write was reconciled"
    );
    // An annotation is the usual way to ask for a reconcile; it still works.
    ns.ok(&["annotate", "berth", "llama", "touch=1", "--overwrite"]);
    eventually(30, "the annotation is reconciled", &ns, || {
        (reconciles(&ns, "c") > settled).then_some(())
    });
}

/// `berth_controller_applies_total{outcome}`.
fn applies(ns: &Namespace, name: &str, outcome: &str) -> f64 {
    let line = format!("berth_controller_applies_total{{outcome=\"{outcome}\"}} ");
    http_get(&log_of(ns, name), "/metrics")
        .1
        .lines()
        .find_map(|l| l.strip_prefix(line.as_str())?.parse().ok())
        .unwrap_or(0.0)
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn an_untouched_reconcile_asks_nothing_and_a_deleted_workload_is_put_back() {
    let plane = plane();
    let ns = plane.namespace("controller-untouched");
    let _controller = start_as(&ns, "c", &[]);
    ready_and_settled(&ns, "c");
    let count = |outcome| applies(&ns, "c", outcome);
    let (checked, repaired) = (count("checked"), count("repaired"));
    assert_eq!(count("recorded"), 1.0, "one apply recorded");
    // Asked to reconcile with nothing changed: served from what the watches show.
    let untouched = count("untouched");
    ns.ok(&["annotate", "berth", "llama", "touch=1", "--overwrite"]);
    eventually(30, "an untouched apply", &ns, || {
        (count("untouched") > untouched).then_some(())
    });
    settled_reconciles(&ns, "c");
    assert_eq!(
        (count("checked"), count("repaired"), count("recorded")),
        (checked, repaired, 1.0),
        "an annotation needed no dry run and no new record"
    );
    // Deleted behind its back: the watch shows it gone, the check finds it, it comes back.
    let uid = ns.get("deployments", "llama-stack").unwrap()["metadata"]["uid"].clone();
    ns.ok(&["delete", "deployment", "llama-stack", "--wait=true"]);
    let back = eventually(30, "the Deployment is put back", &ns, || {
        let d = ns.get("deployments", "llama-stack")?;
        (d["metadata"]["uid"] != uid).then_some(d)
    });
    assert_eq!(
        back["spec"]["template"]["spec"]["containers"][0]["image"],
        "docker.io/llamastack/distribution-starter:0.2.1"
    );
    eventually(30, "counted as repaired", &ns, || {
        (count("repaired") > repaired).then_some(())
    });
    assert_eq!(count("recorded"), 1.0, "the same objects: no new record");
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn a_workload_is_judged_from_its_watch_and_never_read() {
    let plane = plane();
    let ns = plane.namespace("controller-reads");
    let kubeconfig = namespaced_rbac(&ns);
    let _controller = start_with(&ns, "c", &[], &kubeconfig);
    ready_and_settled(&ns, "c");
    // From now on a read of a Deployment is refused: any read shows in the log.
    let rules = ns
        .get("roles.rbac.authorization.k8s.io", "berth-controller")
        .unwrap()["rules"]
        .clone();
    let index = rules
        .as_array()
        .unwrap()
        .iter()
        .position(|r| r["resources"][0] == "deployments")
        .unwrap();
    let patch = format!(
        r#"[{{"op":"replace","path":"/rules/{index}/verbs","value":["list","watch","create","patch","update","delete"]}}]"#
    );
    ns.ok(&[
        "patch",
        "role",
        "berth-controller",
        "--type=json",
        "-p",
        &patch,
    ]);
    let who = format!("system:serviceaccount:{}:berth-controller", ns.name);
    eventually(30, "reading Deployments refused", &ns, || {
        let out = ns.kubectl(&["auth", "can-i", "get", "deployments", "--as", &who]);
        (String::from_utf8_lossy(&out.stdout).trim() == "no").then_some(())
    });
    // After `annotate`, a reconcile that reads no workload and leaves the Berth Ready.
    let unread_after = |what: &str, annotate: &[&str]| {
        let untouched = applies(&ns, "c", "untouched");
        ns.ok(annotate);
        eventually(30, what, &ns, || {
            (applies(&ns, "c", "untouched") > untouched).then_some(())
        });
        settled_reconciles(&ns, "c");
        let log = log_of(&ns, "c");
        assert!(!log.contains("forbidden"), "no workload was read: {log}");
        let b = ns.get("berths", "llama").unwrap();
        assert_eq!(condition(&b, "Ready").unwrap().0, "True");
    };
    // Asked to reconcile with nothing changed: the rollout's last look stands.
    unread_after(
        "an untouched apply",
        &["annotate", "berth", "llama", "touch=1", "--overwrite"],
    );
    // Someone else changes the Deployment (not a field berth applied): the watch
    // shows a new resourceVersion and holds the object (trimmed to what a rollout
    // is judged by), so the rollout is judged again without a read.
    unread_after(
        "a reconcile after the change",
        &["annotate", "deployment", "llama-stack", "poked=1"],
    );
}

/// R1 (#46): a controller whose Role may read ConfigMaps but not patch them (so it cannot
/// label a source) says so on the Berth — `Degraded=True`, reason `Forbidden`, naming the verb,
/// the resource and the source — instead of only in its log; and its log holds no kube `Debug`
/// dump of the refusal.
#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn an_rbac_refusal_of_a_source_reaches_the_berth_as_forbidden() {
    let plane = plane();
    let ns = plane.namespace("refused");
    let rbac = std::fs::read_to_string(common::repo_root().join("deploy/controller/rbac-namespace.yaml"))
        .unwrap()
        .replace("team-a", &ns.name)
        .replace(
            "  resources: [configmaps, secrets]\n  verbs: [get, list, watch, create, patch, update, delete]",
            "  resources: [configmaps, secrets]\n  verbs: [get, list, watch]",
        );
    assert!(
        rbac.contains("verbs: [get, list, watch]\n"),
        "the Role's source rule changed shape"
    );
    apply(&ns, &rbac);
    let kubeconfig = ns.token_kubeconfig("berth-controller");
    let _controller = start_with(&ns, "controller", &[], &kubeconfig);
    apply(&ns, &run_yaml("2"));
    apply(&ns, BERTH);
    let (status, reason, message) = eventually(60, "the Berth says Forbidden", &ns, || {
        let berth = ns.get("berths", "llama")?;
        condition(&berth, "Degraded").filter(|(s, _, _)| s == "True")
    });
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "Forbidden"),
        "{message}"
    );
    assert!(
        message.contains(&format!(
            "the controller may not patch configmaps in {} (source `my-run-yaml`)",
            ns.name
        )),
        "{message}"
    );
    let log = log_of(&ns, "controller");
    assert!(
        !log.contains("Api(Status"),
        "a kube Debug dump in the log:\n{log}"
    );
}
