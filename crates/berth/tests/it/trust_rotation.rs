//! #38 item 2: CA bundle sources in the cluster — `{configMap, key}` from the
//! workloads' namespace, and `{clusterTrustBundle}` by name or by signer and
//! labels — read by `berth apply`. The bundle's name covers what
//! was read, so rotating the CA in that ConfigMap and applying again rolls
//! exactly the injecting workload; the other is left alone. `berth render`
//! reaches no cluster and says so (`[cluster-source]`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking

use rcgen::{CertificateParams, DnType, KeyPair};

use crate::common::testenv::{plane, Namespace};
use crate::common::{self, berth, project};

fn ca_pem(name: &str) -> String {
    let mut params = CertificateParams::new(vec![]).unwrap();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .self_signed(&KeyPair::generate().unwrap())
        .unwrap()
        .pem()
}

const DEPLOY: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      containers: [{name: app, image: 'ghcr.io/acme/app:v1'}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: other}
spec:
  selector: {matchLabels: {app: other}}
  template:
    metadata: {labels: {app: other}}
    spec:
      containers: [{name: other, image: 'ghcr.io/acme/other:v1'}]
";

/// Two Deployments; a CA bundle of ConfigMap `corp-ca` injected into `app`'s.
fn config_map_project() -> tempfile::TempDir {
    let dir = project("name: shop\nmanifests: [deploy.yaml]\nimages:\n  app: {image: 'ghcr.io/acme/app:v1'}\n  other: {image: 'ghcr.io/acme/other:v1'}\ncaBundles:\n  corp:\n    sources: [{configMap: corp-ca, key: ca-bundle.crt}]\n    inject: {components: [app], runtimes: [node]}\n");
    std::fs::write(dir.path().join("deploy.yaml"), DEPLOY).unwrap();
    dir
}

/// ConfigMap `corp-ca` with `pem` under `ca-bundle.crt` (the file written in `dir`).
fn put_config_map(ns: &Namespace, dir: &std::path::Path, pem: &str) {
    let file = dir.join("ca.pem");
    std::fs::write(&file, pem).unwrap();
    let yaml = ns.ok(&[
        "create",
        "configmap",
        "corp-ca",
        "--dry-run=client",
        "-o",
        "yaml",
        &format!("--from-file=ca-bundle.crt={}", file.display()),
    ]);
    let applied = plane().kubectl_with(&ns.kubeconfig, &["apply", "-f", "-"], Some(&yaml));
    assert!(applied.status.success(), "{}", common::transcript(&applied));
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn rotating_a_cluster_ca_source_rolls_exactly_the_injecting_workload() {
    let ns = plane().namespace("trust");
    let dir = config_map_project();
    let d = dir.path();
    let put_ca = |pem: &str| put_config_map(&ns, d, pem);
    put_ca(&ca_pem("Corp Root 1"));

    // Without a cluster, render says what it could not read.
    let render = berth(d).arg("render").output().unwrap();
    assert!(render.status.success(), "{}", common::transcript(&render));
    assert!(
        String::from_utf8_lossy(&render.stderr).contains("[cluster-source]"),
        "{}",
        common::transcript(&render)
    );

    let apply = || {
        let out = berth(d)
            .args(["apply", "--kubeconfig"])
            .arg(&ns.kubeconfig)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", common::transcript(&out));
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("[cluster-source]"),
            "{}",
            common::transcript(&out)
        );
    };
    let bundle_of = |name: &str| -> String {
        let d = ns.get("deployments", name).unwrap();
        d["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let generation = |name: &str| {
        ns.get("deployments", name).unwrap()["metadata"]["generation"]
            .as_i64()
            .unwrap()
    };
    apply();
    let first = bundle_of("app");
    assert!(first.starts_with("corp-"), "{first}");
    let bundle = ns.get("configmaps", &first).unwrap();
    assert!(bundle["data"]["ca-bundle.crt"]
        .as_str()
        .unwrap()
        .contains("BEGIN CERTIFICATE"));
    let (app_before, other_before) = (generation("app"), generation("other"));

    // The same ConfigMap: nothing moves.
    apply();
    assert_eq!(bundle_of("app"), first);
    assert_eq!(generation("app"), app_before);

    // The rotation: a new CA in the ConfigMap, one apply.
    put_ca(&ca_pem("Corp Root 2"));
    apply();
    let second = bundle_of("app");
    assert_ne!(second, first, "a rotated CA is a new bundle name");
    assert_eq!(
        generation("app"),
        app_before + 1,
        "the injecting workload rolls"
    );
    assert_eq!(
        generation("other"),
        other_before,
        "the other workload is left alone"
    );
}

/// A cluster-scoped object the test made, deleted when dropped (deleting
/// the namespace does not reach it).
struct ClusterScoped(Vec<String>);

impl Drop for ClusterScoped {
    fn drop(&mut self) {
        for name in &self.0 {
            let _ = plane().kubectl(&["delete", "clustertrustbundle", name, "--ignore-not-found"]);
        }
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn cluster_trust_bundles_by_name_and_by_signer_feed_the_bundle_and_roll_it() {
    let ns = plane().namespace("ctb");
    let id = ns.name.clone();
    let signer = format!("berth.test/{id}");
    let prefix = format!("berth.test:{id}");
    let (root, corp, other) = (
        format!("{id}-root"),
        format!("{prefix}:corp"),
        format!("{prefix}:other"),
    );
    let _cleanup = ClusterScoped(vec![root.clone(), corp.clone(), other.clone()]);
    let put = |name: &str, signer: Option<&str>, tier: &str, pem: &str| {
        let spec = serde_json::json!({
            "apiVersion": plane().trust_bundle_api(),
            "kind": "ClusterTrustBundle",
            "metadata": {"name": name, "labels": {"tier": tier}},
            "spec": {"signerName": signer, "trustBundle": pem},
        });
        let out = plane().kubectl_with(
            &plane().kubeconfig,
            &["apply", "-f", "-"],
            Some(&spec.to_string()),
        );
        assert!(out.status.success(), "{}", common::transcript(&out));
    };
    put(&root, None, "base", &ca_pem("Cluster Root"));
    put(&corp, Some(&signer), "corp", &ca_pem("Corp Signer 1"));
    put(&other, Some(&signer), "other", &ca_pem("Other Signer"));
    let dir = project(&format!("name: shop\nmanifests: [deploy.yaml]\nimages:\n  app: {{image: 'ghcr.io/acme/app:v1'}}\n  other: {{image: 'ghcr.io/acme/other:v1'}}\ncaBundles:\n  corp:\n    sources:\n      - {{clusterTrustBundle: {{name: {root}}}}}\n      - {{clusterTrustBundle: {{signerName: {signer}, labelSelector: {{matchLabels: {{tier: corp}}}}}}}}\n    inject: {{components: [app], runtimes: [node]}}\n"));
    let d = dir.path();
    std::fs::write(d.join("deploy.yaml"), DEPLOY).unwrap();
    let apply = || {
        let out = berth(d)
            .args(["apply", "--kubeconfig"])
            .arg(&ns.kubeconfig)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", common::transcript(&out));
    };
    let bundle = || {
        let deployment = ns.get("deployments", "app").unwrap();
        let name = deployment["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"]
            .as_str()
            .unwrap()
            .to_string();
        let generation = deployment["metadata"]["generation"].as_i64().unwrap();
        let object = ns.get("configmaps", &name).unwrap();
        let pem = object["data"]["ca-bundle.crt"]
            .as_str()
            .unwrap()
            .to_string();
        (name, generation, pem)
    };
    apply();
    let (first, generation, pem) = bundle();
    // The named one and the signer's labelled `corp`; not the signer's other one.
    assert_eq!(pem.matches("BEGIN CERTIFICATE").count(), 2, "{pem}");

    // The signer's bundle rotates: one apply rolls the injecting workload.
    put(&corp, Some(&signer), "corp", &ca_pem("Corp Signer 2"));
    apply();
    let (second, rolled, pem) = bundle();
    assert_ne!(second, first, "a rotated trust bundle is a new bundle name");
    assert_eq!(rolled, generation + 1);
    assert_eq!(pem.matches("BEGIN CERTIFICATE").count(), 2, "{pem}");

    // A name that does not exist: an error naming it and where it is written.
    std::fs::write(
        d.join("berth.yaml"),
        std::fs::read_to_string(d.join("berth.yaml"))
            .unwrap()
            .replace(&root, "no-such-bundle"),
    )
    .unwrap();
    let out = berth(d)
        .args(["apply", "--kubeconfig"])
        .arg(&ns.kubeconfig)
        .output()
        .unwrap();
    let text = common::transcript(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("berth.yaml:9:")
            && text.contains("clusterTrustBundle `no-such-bundle` does not exist"),
        "{text}"
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn berth_dev_reads_cluster_sources_as_apply_does() {
    let ns = plane().namespace("trust-dev");
    let dir = config_map_project();
    let d = dir.path();
    put_config_map(&ns, d, &ca_pem("Corp Root"));
    let out = berth(d)
        .args(["dev", "--once", "--output", "json", "--kubeconfig"])
        .arg(&ns.kubeconfig)
        .output()
        .unwrap();
    let text = common::transcript(&out);
    assert!(out.status.success(), "{text}");
    assert!(!text.contains("cluster-source"), "{text}");
    let deployment = ns.get("deployments", "app").unwrap();
    let name = deployment["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"]
        .as_str()
        .unwrap();
    let bundle = ns.get("configmaps", name).unwrap();
    let pem = bundle["data"]["ca-bundle.crt"].as_str().unwrap();
    assert_eq!(pem.matches("BEGIN CERTIFICATE").count(), 1, "{pem}");
}
