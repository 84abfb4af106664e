//! The controller observing rollouts on the real control plane, through the same
//! `observe` as `berth apply --wait`: a failed rollout keeps its one record however
//! often it is reconciled, a corrected spec is not judged by the failed rollout's
//! verdict, and the failure shows as a Warning Event and in the metrics by reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::controller::{http_get, log_of};

use common::controller::{apply, condition, eventually, start};
use common::testenv::{plane, Namespace};

/// A Deployment no node takes (the nodeSelector matches none) with a 2 s progress
/// deadline: its rollout fails with ProgressDeadlineExceeded.
fn berth(node_selector: &str) -> String {
    format!(
        "apiVersion: berth.dev/v1alpha1
kind: Berth
metadata: {{name: llama}}
spec:
  workloads:
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {{name: web}}
    spec:
      replicas: 1
      progressDeadlineSeconds: 2
      selector: {{matchLabels: {{app: web}}}}
      template:
        metadata: {{labels: {{app: web}}}}
        spec:
{node_selector}          containers:
          - name: web
            image: ghcr.io/acme/web:v1
            envFrom: [{{configMapRef: {{name: web-config}}}}]
  configs:
    web-config:
      inline: {{LEVEL: one}}
"
    )
}

const NOWHERE: &str = "          nodeSelector: {berth.dev/test: nowhere}\n";

fn records(ns: &Namespace) -> Vec<String> {
    ns.ok(&[
        "get",
        "secrets",
        "-l",
        "berth.dev/record=true",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name}{\"\\n\"}{end}",
    ])
    .lines()
    .map(str::to_string)
    .collect()
}

fn reconciles(ns: &Namespace) -> usize {
    log_of(ns, "controller")
        .matches(" reconciled berth=")
        .count()
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn a_failed_rollout_keeps_one_record_and_a_fix_is_not_judged_by_its_verdict() {
    let plane = plane();
    let ns = plane.namespace("controller-rollout");
    let _controller = start(&ns);
    apply(&ns, &berth(NOWHERE));
    eventually(60, "RolloutFailed", &ns, || {
        let b = ns.get("berths", "llama")?;
        (condition(&b, "Ready")?.1 == "RolloutFailed").then_some(())
    });
    let failed = records(&ns);
    assert_eq!(failed.len(), 1, "{failed:?}");

    // Five reconciles of the unchanged, failed Berth (each annotation wakes one).
    for i in 0..5 {
        let before = reconciles(&ns);
        ns.ok(&[
            "annotate",
            "berth",
            "llama",
            &format!("touch={i}"),
            "--overwrite",
        ]);
        eventually(30, "a reconcile after the annotation", &ns, || {
            (reconciles(&ns) > before).then_some(())
        });
    }
    assert_eq!(records(&ns), failed, "no record per retry");
    let b = ns.get("berths", "llama").unwrap();
    assert_eq!(condition(&b, "Ready").unwrap().1, "RolloutFailed");

    // Seen from outside: a Warning Event on the Berth, and the metric by reason.
    let events: serde_json::Value =
        serde_json::from_str(&ns.ok(&["get", "events.events.k8s.io", "-o", "json"])).unwrap();
    let warning = events["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["regarding"]["name"] == "llama" && e["reason"] == "RolloutFailed")
        .unwrap_or_else(|| panic!("no RolloutFailed Event: {events}"));
    assert_eq!(warning["type"], "Warning");
    assert_eq!(warning["reportingController"], "berth-controller");
    assert!(
        warning["note"]
            .as_str()
            .unwrap()
            .contains("ProgressDeadlineExceeded"),
        "{warning}"
    );
    let (_, metrics) = http_get(&log_of(&ns, "controller"), "/metrics");
    assert!(
        metrics.contains("berth_controller_reconcile_errors_total{reason=\"RolloutFailed\"} "),
        "{metrics}"
    );
    assert!(
        log_of(&ns, "controller").contains(" WARN ")
            && log_of(&ns, "controller").contains("degraded berth=")
    );

    // The fix: nodes take the pod. The Deployment still carries the old verdict
    // until the new ReplicaSet progresses; that verdict is not this rollout's.
    apply(&ns, &berth(""));
    let generation = ns.get("berths", "llama").unwrap()["metadata"]["generation"]
        .as_i64()
        .unwrap();
    let mut seen = Vec::new();
    eventually(60, "Ready after the fix", &ns, || {
        let b = ns.get("berths", "llama")?;
        let ready = b["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == "Ready")?
            .clone();
        if ready["observedGeneration"].as_i64() == Some(generation) {
            seen.push(ready["reason"].as_str().unwrap_or_default().to_string());
        }
        (ready["status"] == "True" && ready["observedGeneration"].as_i64() == Some(generation))
            .then_some(())
    });
    assert!(
        !seen.iter().any(|r| r == "RolloutFailed"),
        "the corrected spec was judged by the old verdict: {seen:?}"
    );
    // One new record for the new objects; the failed one is beyond what rollback
    // reaches once the new one succeeded, so clean-up deleted it.
    assert_eq!(records(&ns), ["berth-llama-r2"]);
}
