//! #38 item 2: a CA bundle source in the cluster (`{configMap, key}`), read by
//! `berth apply` from the workloads' namespace. The bundle's name covers what
//! was read, so rotating the CA in that ConfigMap and applying again rolls
//! exactly the injecting workload; the other is left alone. `berth render`
//! reaches no cluster and says so (`[cluster-source]`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking

use rcgen::{CertificateParams, DnType, KeyPair};

use crate::common::testenv::plane;
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

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn rotating_a_cluster_ca_source_rolls_exactly_the_injecting_workload() {
    let ns = plane().namespace("trust");
    let dir = project("name: shop\nmanifests: [deploy.yaml]\nimages:\n  app: {image: 'ghcr.io/acme/app:v1'}\n  other: {image: 'ghcr.io/acme/other:v1'}\ncaBundles:\n  corp:\n    sources: [{configMap: corp-ca, key: ca-bundle.crt}]\n    inject: {components: [app], runtimes: [node]}\n");
    let d = dir.path();
    std::fs::write(d.join("deploy.yaml"), DEPLOY).unwrap();
    let put_ca = |pem: &str| {
        let file = d.join("ca.pem");
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
    };
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
