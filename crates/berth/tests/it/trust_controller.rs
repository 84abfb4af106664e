//! #38 item 2, the controller's half: a `Berth`'s CA bundle with a ConfigMap
//! source and a signer's ClusterTrustBundles, Mozilla's roots, every runtime
//! (the hashed directory and Java's stores included). Rotating either source
//! rolls exactly the injecting workload after one reconcile; the other
//! workload is left alone. The controller runs as deployed: with
//! deploy/controller's namespaced Role only.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking

use serde_json::{json, Value};

use crate::common::controller::{
    apply, condition, eventually, namespaced_rbac, start_as, start_with,
};
use crate::common::testenv::{plane, Namespace};

fn ca_pem(name: &str) -> String {
    let mut params = rcgen::CertificateParams::new(vec![]).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let key = rcgen::KeyPair::generate().unwrap();
    params.self_signed(&key).unwrap().pem()
}

fn deployment(name: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": name, "image": format!("ghcr.io/acme/{name}:v1")}]}}}
    })
}

/// The Deployment's bundle ConfigMap name and its generation.
fn rollout(ns: &Namespace, name: &str) -> (String, i64) {
    let d = ns.get("deployments", name).unwrap();
    let volume = &d["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"];
    let generation = d["metadata"]["generation"].as_i64().unwrap();
    (volume.as_str().unwrap_or_default().to_string(), generation)
}

fn put_config_map(ns: &Namespace, pem: &str) {
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "corp-ca"}, "data": {"ca-bundle.crt": pem}});
    apply(ns, &object.to_string());
}

fn put_trust_bundle(name: &str, signer: &str, pem: &str) {
    let object = json!({"apiVersion": plane().trust_bundle_api(), "kind": "ClusterTrustBundle",
        "metadata": {"name": name}, "spec": {"signerName": signer, "trustBundle": pem}});
    let kubeconfig = &plane().kubeconfig;
    let out = plane().kubectl_with(kubeconfig, &["apply", "-f", "-"], Some(&object.to_string()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The ClusterTrustBundle the test made: cluster-scoped, so the namespace's
/// deletion does not reach it.
struct Cleanup(String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = plane().kubectl(&[
            "delete",
            "clustertrustbundle",
            &self.0,
            "--ignore-not-found",
        ]);
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn the_controller_rolls_exactly_the_injecting_workload_when_a_cluster_ca_rotates() {
    let ns = plane().namespace("trust-ctl");
    let signer = format!("berth.test/{}", ns.name);
    let trust_bundle = format!("berth.test:{}:one", ns.name);
    let _cleanup = Cleanup(trust_bundle.clone());
    put_config_map(&ns, &ca_pem("Corp Root 1"));
    put_trust_bundle(&trust_bundle, &signer, &ca_pem("Signer Root 1"));
    // As deployed: deploy/controller's namespaced Role, and Kubernetes' own
    // grant of ClusterTrustBundle reads to every ServiceAccount.
    let kubeconfig = namespaced_rbac(&ns);
    let flag = ["--cluster-trust-bundles"];
    let _controller = start_with(&ns, "controller", &flag, &kubeconfig);
    let berth = json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "Berth", "metadata": {"name": "llama"},
        "spec": {
            "workloads": [deployment("app"), deployment("other")],
            "images": {"app": {"image": "ghcr.io/acme/app:v1"}, "other": {"image": "ghcr.io/acme/other:v1"}},
            "caBundles": {"corp": {
                "sources": [
                    {"configMap": {"name": "corp-ca", "key": "ca-bundle.crt"}},
                    {"clusterTrustBundle": {"signerName": signer}}
                ],
                "defaults": "mozilla",
                "formats": ["pem", "jks"],
                "inject": {"components": ["app"]}
            }}
        }
    });
    apply(&ns, &berth.to_string());
    let ready = |ns: &Namespace| {
        let b = ns.get("berths", "llama")?;
        (condition(&b, "Ready")?.0 == "True").then_some(b)
    };
    let b = eventually(60, "Ready", &ns, || ready(&ns));
    // Mozilla's roots and the two sources' CAs.
    let certificates = b["status"]["caBundles"][0]["certificates"]
        .as_u64()
        .unwrap();
    assert!(certificates > 100, "{certificates}");
    let (first, app_generation) = rollout(&ns, "app");
    let (_, other_generation) = rollout(&ns, "other");
    let bundle = ns.get("configmaps", &first).unwrap();
    assert!(
        bundle["binaryData"]["truststore.p12"].is_string(),
        "java's store"
    );
    assert!(
        bundle["binaryData"]["truststore.jks"].is_string(),
        "formats: [jks]"
    );
    let hashed = (bundle["data"].as_object().unwrap().keys())
        .filter(|k| k.len() == 10 && k.ends_with(".0"))
        .count();
    assert!(hashed > 100, "the hashed directory: {hashed} files");
    let app = ns.get("deployments", "app").unwrap();
    let env: Vec<&str> = (app["spec"]["template"]["spec"]["containers"][0]["env"].as_array())
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(env, crate::trust_clients::EVERY_RUNTIME_VARIABLE);

    // Each source rotates in turn: one reconcile each, the injecting workload rolls.
    let mut previous = (first, app_generation);
    let rotate = |what: &str| match what {
        "the ConfigMap" => put_config_map(&ns, &ca_pem("Corp Root 2")),
        _ => put_trust_bundle(&trust_bundle, &signer, &ca_pem("Signer Root 2")),
    };
    for what in ["the ConfigMap", "the ClusterTrustBundle"] {
        rotate(what);
        let now = eventually(60, &format!("{what} rotated: a new bundle"), &ns, || {
            let now = rollout(&ns, "app");
            (now.0 != previous.0).then_some(now)
        });
        assert_eq!(
            now.1,
            previous.1 + 1,
            "{what}: the injecting workload rolls once"
        );
        assert_eq!(
            rollout(&ns, "other").1,
            other_generation,
            "{what}: the other stays"
        );
        previous = now;
    }
    eventually(60, "Ready after the rotations", &ns, || ready(&ns));
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn without_the_flag_a_trust_bundle_source_degrades_and_says_how_to_enable_it() {
    let ns = plane().namespace("trust-off");
    let _controller = start_as(&ns, "controller", &[]);
    let (berth, message) = degraded_by_a_trust_bundle(&ns);
    assert!(
        message.contains("--cluster-trust-bundles") && message.contains("clusterTrustBundles.read"),
        "{message}"
    );
    // Both sources set: the API server refuses it (the CRD's rule).
    let mut both = berth.clone();
    both["spec"]["caBundles"]["corp"]["sources"][0]["inline"] = json!("x");
    let out = plane().kubectl_with(
        &ns.kubeconfig,
        &["apply", "-f", "-"],
        Some(&both.to_string()),
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("set exactly one of inline, configMap, clusterTrustBundle"));
}

/// Applies a Berth whose bundle reads ClusterTrustBundle `corp`; waits for it
/// to be Degraded (`SourceMissing`); the Berth and the condition's message.
fn degraded_by_a_trust_bundle(ns: &Namespace) -> (Value, String) {
    let berth = json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "Berth", "metadata": {"name": "llama"},
        "spec": {
            "workloads": [deployment("app")],
            "images": {"app": {"image": "ghcr.io/acme/app:v1"}},
            "caBundles": {"corp": {"sources": [{"clusterTrustBundle": {"name": "corp"}}], "inject": {"components": ["app"]}}}
        }
    });
    apply(ns, &berth.to_string());
    let (_, reason, message) = eventually(60, "Degraded", ns, || {
        let b = ns.get("berths", "llama")?;
        condition(&b, "Degraded").filter(|c| c.0 == "True")
    });
    assert_eq!(reason, "SourceMissing");
    (berth, message)
}
