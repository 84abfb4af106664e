//! `berth controller` while the API server restarts: a control plane of the
//! test's own (`scripts/testenv up` in a temporary directory; the shared one must
//! not go away under the other tests), `scripts/testenv restart DIR
//! kube-apiserver`, and the controller's watches resuming by themselves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::testenv::OwnPlane;

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn watches_resume_after_the_api_server_restarts() {
    common::require_program(common::Group::Plane, "go");
    let own = OwnPlane::up();
    let plane = own.plane;
    plane.install_berth_crd();
    let ns = plane.namespace("restart");
    let mut controller = common::controller::start(&ns);
    let source = |v: u32| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: src}}\ndata: {{run.yaml: 'v: {v}'}}\n")
    };
    let apply = |text: &str| {
        let out = plane.kubectl_with(&ns.kubeconfig, &["apply", "-f", "-"], Some(text));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    apply(&source(1));
    apply("apiVersion: berth.dev/v1alpha1\nkind: Berth\nmetadata: {name: b}\nspec:\n  workloads:\n  - apiVersion: apps/v1\n    kind: Deployment\n    metadata: {name: web}\n    spec:\n      selector: {matchLabels: {app: web}}\n      template:\n        metadata: {labels: {app: web}}\n        spec:\n          containers: [{name: c, image: 'ghcr.io/acme/web:v1', envFrom: [{configMapRef: {name: cfg}}]}]\n  configs:\n    cfg: {fromConfigMap: {name: src, key: run.yaml}}\n");
    let mounted = || {
        ns.get("deployments", "web").and_then(|d| {
            d["spec"]["template"]["spec"]["containers"][0]["envFrom"][0]["configMapRef"]["name"]
                .as_str()
                .map(str::to_string)
        })
    };
    let wait = |what: &str, check: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !check() {
            let log = std::fs::read_to_string(ns.kubeconfig.with_file_name("controller.log"))
                .unwrap_or_default();
            assert!(Instant::now() < deadline, "{what}: not within 60 s\n{log}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    wait("the first generation", &|| mounted().is_some());
    let first = mounted().unwrap();

    own.restart("kube-apiserver", Duration::ZERO);
    apply(&source(2));
    wait("a new generation after the restart", &|| {
        mounted().is_some_and(|m| m != first)
    });
    assert!(
        controller.child.try_wait().unwrap().is_none(),
        "the controller kept running"
    );
}
