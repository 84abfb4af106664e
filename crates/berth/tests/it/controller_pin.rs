//! `spec.images[].pin` against a real registry (Debian's `docker-registry`, with
//! basic auth, credentials from `DOCKER_CONFIG` as in a cluster with a mounted
//! `dockerconfigjson` Secret) and the real control plane: the digest the
//! registry serves is what the workload runs and what the status shows; it is
//! kept while the tag moves, re-pinned when the spec's image changes, and a tag
//! the registry does not have degrades the `Berth` without touching the workload.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use base64::Engine as _;
use common::controller::{apply, condition, eventually, start_env};
use common::registry::{Layout, TestRegistry};
use common::testenv::{plane, Namespace};

fn berth(host: &str, tag: &str) -> String {
    format!(
        "apiVersion: berth.dev/v1alpha1
kind: Berth
metadata: {{name: llama}}
spec:
  workloads:
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {{name: app}}
    spec:
      selector: {{matchLabels: {{app: app}}}}
      template:
        metadata: {{labels: {{app: app}}}}
        spec:
          containers: [{{name: app, image: '{host}/team/app:v0'}}]
  images:
    app: {{image: '{host}/team/app:{tag}', pin: true}}
"
    )
}

fn running_image(ns: &Namespace) -> Option<String> {
    let d = ns.get("deployments", "app")?;
    d["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .map(str::to_string)
}

fn status_image(ns: &Namespace) -> Option<String> {
    let b = ns.get("berths", "llama")?;
    b["status"]["images"][0]["image"]
        .as_str()
        .map(str::to_string)
}

#[test]
#[cfg_attr(
    not(all(feature = "test-plane", feature = "test-registry")),
    ignore = "needs test-plane, test-registry (run scripts/test)"
)]
fn pinned_images_run_the_registry_digest_and_keep_it_until_the_spec_changes() {
    let plane = plane();
    let registry = TestRegistry::start(Some(("pinner", "s3cr3t-pw")));
    let host = registry.host.clone();
    let v1 = registry.push(&Layout::image("one", 1, 64), "team/app", "v1");
    let docker = tempfile::tempdir().unwrap();
    let auth = base64::engine::general_purpose::STANDARD.encode("pinner:s3cr3t-pw");
    std::fs::write(
        docker.path().join("config.json"),
        format!(r#"{{"auths": {{"{host}": {{"auth": "{auth}"}}}}}}"#),
    )
    .unwrap();
    let ns = plane.namespace("controller-pin");
    let _controller = start_env(
        &ns,
        "controller",
        &["--insecure-registry", &host],
        &ns.kubeconfig,
        &[("DOCKER_CONFIG", docker.path().as_os_str())],
    );
    apply(&ns, &berth(&host, "v1"));
    let pinned = format!("{host}/team/app:v1@{v1}");
    eventually(60, "Ready with the digest", &ns, || {
        let b = ns.get("berths", "llama")?;
        (condition(&b, "Ready")?.0 == "True").then_some(())
    });
    assert_eq!(status_image(&ns).as_deref(), Some(pinned.as_str()));
    assert_eq!(running_image(&ns).as_deref(), Some(pinned.as_str()));

    // The tag moves in the registry; a reconcile (an annotation wakes it) keeps the pin.
    let moved = registry.push(&Layout::image("two", 1, 64), "team/app", "v1");
    assert_ne!(moved, v1);
    let reconciles = || {
        std::fs::read_to_string(ns.kubeconfig.with_file_name("controller.log"))
            .unwrap_or_default()
            .matches(" reconciled berth=")
            .count()
    };
    let before = reconciles();
    ns.ok(&["annotate", "berth", "llama", "touch=1", "--overwrite"]);
    eventually(30, "a reconcile after the annotation", &ns, || {
        (reconciles() > before).then_some(())
    });
    assert_eq!(
        running_image(&ns).as_deref(),
        Some(pinned.as_str()),
        "a moving tag does not roll the workload by itself"
    );

    // A new image in the spec is pinned again.
    let v2 = registry.push(&Layout::image("three", 1, 64), "team/app", "v2");
    apply(&ns, &berth(&host, "v2"));
    let repinned = format!("{host}/team/app:v2@{v2}");
    // The workload is applied first, the status written after it.
    eventually(60, "re-pinned", &ns, || {
        (running_image(&ns)? == repinned && status_image(&ns)? == repinned).then_some(())
    });

    // A tag the registry does not have: Degraded, the workload stays on v2.
    apply(&ns, &berth(&host, "missing"));
    let (_, reason, message) = eventually(60, "Degraded", &ns, || {
        let b = ns.get("berths", "llama")?;
        condition(&b, "Degraded").filter(|c| c.0 == "True")
    });
    assert_eq!(reason, "PinFailed");
    assert!(
        message.contains(&format!(
            "spec.images.app: cannot pin `{host}/team/app:missing`"
        )),
        "{message}"
    );
    assert!(!message.contains("s3cr3t-pw"), "no credential: {message}");
    assert_eq!(running_image(&ns).as_deref(), Some(repinned.as_str()));
    let log = std::fs::read_to_string(ns.kubeconfig.with_file_name("controller.log")).unwrap();
    assert!(
        !log.contains("s3cr3t-pw") && !log.contains(&auth),
        "no credential in the log"
    );
}
