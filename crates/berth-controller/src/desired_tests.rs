#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use serde_json::json;

fn berth(spec: Value) -> Berth {
    serde_json::from_value(json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "Berth",
        "metadata": {"name": "llama", "namespace": "team-a", "uid": "u-1"},
        "spec": spec,
    }))
    .unwrap()
}

fn deployment() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "llama-stack"},
        "spec": {"selector": {"matchLabels": {"app": "llama"}}, "template": {
            "metadata": {"labels": {"app": "llama"}},
            "spec": {"containers": [{"name": "server", "image": "docker.io/llamastack/distribution-starter:0.2.0",
                "volumeMounts": [{"name": "run", "mountPath": "/etc/llama"}]}],
                "volumes": [{"name": "run", "configMap": {"name": "run-config"}}]}}}})
}

/// `(kind, name, [(key, value)])`.
type Entry<'a> = (SourceKind, &'a str, &'a [(&'a str, &'a [u8])]);

fn sources(entries: &[Entry<'_>]) -> Sources {
    entries
        .iter()
        .map(|(kind, name, data)| {
            (
                (*kind, name.to_string()),
                Some(
                    data.iter()
                        .map(|(k, v)| (k.to_string(), v.to_vec()))
                        .collect(),
                ),
            )
        })
        .collect()
}

const NOW: i64 = 1_780_272_000; // 2026-06-01

#[test]
fn a_config_from_a_configmap_becomes_a_hashed_object_the_workload_uses() {
    let b = berth(json!({
        "workloads": [deployment()],
        "images": {"server": {"image": "docker.io/llamastack/distribution-starter:0.2.1", "pullPolicy": "auto"}},
        "configs": {"run-config": {"fromConfigMap": {"name": "my-run-yaml", "key": "run.yaml"}}},
    }));
    let s = sources(&[(
        SourceKind::ConfigMap,
        "my-run-yaml",
        &[("run.yaml", b"version: 2\n")],
    )]);
    assert_eq!(
        sources_named(&b),
        [(SourceKind::ConfigMap, "my-run-yaml".to_string())]
    );
    let plan = plan(&b, "team-a", &s, NOW).unwrap();
    let expected = configs::from_entries(
        &ConfigShape {
            name: "run-config".into(),
            kind: ConfigKind::ConfigMap,
            secret_type: None,
            hash: true,
            immutable: true,
        },
        [("run.yaml".to_string(), b"version: 2\n".to_vec())],
    )
    .unwrap();
    assert_eq!(
        plan.configs,
        [ConfigStatus {
            name: "run-config".into(),
            source: "configMap/my-run-yaml".into(),
            sha256: expected.content_sha256.clone(),
            object: expected.name.clone(),
        }]
    );
    let objects = &plan.desired.objects;
    assert_eq!(objects[0]["kind"], "ConfigMap");
    assert_eq!(objects[0]["metadata"]["name"], expected.name.as_str());
    assert_eq!(objects[0]["immutable"], true);
    let spec = &objects[1]["spec"]["template"]["spec"];
    assert_eq!(
        spec["volumes"][0]["configMap"]["name"],
        expected.name.as_str()
    );
    assert_eq!(
        spec["containers"][0]["image"],
        "docker.io/llamastack/distribution-starter:0.2.1"
    );
    assert_eq!(spec["containers"][0]["imagePullPolicy"], "IfNotPresent");
    assert_eq!(
        plan.images[0].image,
        "docker.io/llamastack/distribution-starter:0.2.1"
    );
    assert_eq!(plan.desired.generated[&expected.name], "run-config");
    // A changed source: a new name, so the pod template changes and the workload rolls.
    let changed = sources(&[(
        SourceKind::ConfigMap,
        "my-run-yaml",
        &[("run.yaml", b"version: 3\n")],
    )]);
    let again = plan_with(&b, "team-a", &changed, None, &Pins::new(), NOW).unwrap();
    assert_ne!(again.configs[0].object, plan.configs[0].object);
}

#[test]
fn inline_typed_data_and_secrets() {
    let b = berth(json!({
        "workloads": [deployment()],
        "configs": {
            "run-config": {"inline": {"version": 2, "apis": ["inference"]}, "key": "run.yaml"},
            "token": {"fromSecret": {"name": "creds", "key": "token"}},
        },
    }));
    let s = sources(&[(SourceKind::Secret, "creds", &[("token", b"s3cr3t")])]);
    let plan = plan(&b, "team-a", &s, NOW).unwrap();
    assert_eq!(plan.configs[0].source, "inline");
    assert_eq!(plan.configs[1].source, "secret/creds");
    let secret = plan
        .desired
        .objects
        .iter()
        .find(|o| o["kind"] == "Secret")
        .unwrap();
    assert_eq!(secret["data"]["token"], "czNjcjN0");
    let config = plan
        .desired
        .objects
        .iter()
        .find(|o| o["kind"] == "ConfigMap")
        .unwrap();
    assert_eq!(
        config["data"]["run.yaml"],
        "version: 2\napis:\n- inference\n"
    );
}

#[test]
fn problems_say_what_and_where_and_never_the_value() {
    let b = berth(json!({
        "workloads": [deployment()],
        "configs": {"run-config": {"fromConfigMap": {"name": "my-run-yaml", "key": "run.yaml"},
            "schema": {"inline": {"type": "object", "properties": {"version": {"type": "integer", "maximum": 2}}}}}},
    }));
    let missing = plan(&b, "team-a", &Sources::new(), NOW).unwrap_err();
    assert_eq!(missing.reason, Reason::SourceMissing);
    assert!(
        missing.message.starts_with(
            "spec.configs.run-config.fromConfigMap: configMap `my-run-yaml` does not exist"
        ),
        "{missing}"
    );
    let no_key = sources(&[(SourceKind::ConfigMap, "my-run-yaml", &[("other.yaml", b"")])]);
    let err = plan(&b, "team-a", &no_key, NOW).unwrap_err();
    assert!(
        err.message
            .contains("has no key `run.yaml` (it has: other.yaml)"),
        "{err}"
    );
    let bad = sources(&[(
        SourceKind::ConfigMap,
        "my-run-yaml",
        &[("run.yaml", b"version: 7\n")],
    )]);
    let err = plan(&b, "team-a", &bad, NOW).unwrap_err();
    assert_eq!(err.reason, Reason::SchemaViolation);
    assert!(err.message.contains("run.yaml:1:10: /version"), "{err}");
}

#[test]
fn ca_bundles_merge_sources_inject_and_refuse_keys() {
    let cert = |cn: &str| {
        let mut params = rcgen::CertificateParams::new(vec![format!("{cn}.example")]).unwrap();
        params.not_before = rcgen::date_time_ymd(2024, 1, 1);
        params.not_after = rcgen::date_time_ymd(2030, 1, 1);
        let key = rcgen::KeyPair::generate().unwrap();
        (params.self_signed(&key).unwrap().pem(), key.serialize_pem())
    };
    let (platform, _) = cert("platform");
    let (corporate, key) = cert("corporate");
    let b = berth(json!({
        "workloads": [deployment()],
        "caBundles": {"trusted-ca": {
            "sources": [{"configMap": {"name": "trusted-ca-bundle", "key": "ca-bundle.crt"}}, {"inline": corporate}],
            "inject": {"containers": ["server"], "env": ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"]}}},
    }));
    let s = sources(&[(
        SourceKind::ConfigMap,
        "trusted-ca-bundle",
        &[("ca-bundle.crt", platform.as_bytes())],
    )]);
    let plan = plan(&b, "team-a", &s, NOW).unwrap();
    assert_eq!(plan.ca_bundles[0].certificates, 2);
    assert_eq!(
        plan.ca_bundles[0].first_expiry.as_deref(),
        Some("2030-01-01T00:00:00Z")
    );
    let container = &plan.desired.objects[1]["spec"]["template"]["spec"]["containers"][0];
    let env: Vec<&str> = container["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(env, ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"]);
    // The path berth.yaml's bundles default to: one directory per bundle.
    assert_eq!(
        container["env"][0]["value"],
        berth_core::configs::ca::default_mount_path("trusted-ca", "ca-bundle.crt")
    );
    assert_eq!(
        container["env"][0]["value"],
        "/etc/ssl/certs/berth/trusted-ca/ca-bundle.crt"
    );
    // The same sources after the certificates' notAfter (2030-01-01).
    let later = plan_with(&b, "team-a", &s, None, &Pins::new(), 1_900_000_000).unwrap_err();
    assert_eq!(later.reason, Reason::ExpiredCertificate);
    assert!(
        later.message.contains("expired on") && later.message.contains("replace it"),
        "{later}"
    );
    let with_key = sources(&[(
        SourceKind::ConfigMap,
        "trusted-ca-bundle",
        &[("ca-bundle.crt", format!("{platform}{key}").as_bytes())],
    )]);
    let err = plan_with(&b, "team-a", &with_key, None, &Pins::new(), NOW).unwrap_err();
    assert_eq!(err.reason, Reason::PrivateKeyInSource);
    assert!(
        !err.message.contains("PRIVATE KEY-----\nMI"),
        "no key material: {err}"
    );
}

#[test]
fn workloads_stay_in_the_namespace_and_are_workloads() {
    let mut other = deployment();
    other["metadata"]["namespace"] = json!("elsewhere");
    let err = plan(
        &berth(json!({"workloads": [other]})),
        "team-a",
        &Sources::new(),
        NOW,
    )
    .unwrap_err();
    assert!(
        err.message
            .contains("a Berth's workloads live in its own namespace"),
        "{err}"
    );
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}});
    let err = plan(
        &berth(json!({"workloads": [svc]})),
        "team-a",
        &Sources::new(),
        NOW,
    )
    .unwrap_err();
    assert_eq!(err.reason, Reason::InvalidSpec);
}

/// `plan` with no pins (most tests pin nothing).
fn plan(b: &Berth, namespace: &str, s: &Sources, now: i64) -> Result<Plan, Problem> {
    plan_with(b, namespace, s, None, &Pins::new(), now)
}

/// The plan the reconciler makes: the spec parsed, then planned.
fn plan_with(
    b: &Berth,
    namespace: &str,
    s: &Sources,
    trust: Option<&[TrustBundle]>,
    pins: &Pins,
    now: i64,
) -> Result<Plan, Problem> {
    super::parse(b, namespace)?.plan(b, s, trust, pins, now)
}

#[test]
fn pinned_components_get_a_digest_recorded_in_status_until_the_image_changes() {
    let digest = format!("sha256:{}", "a".repeat(64));
    let mut b = berth(json!({
        "workloads": [deployment()],
        "images": {
            "server": {"image": "docker.io/llamastack/distribution-starter:0.2.1", "pin": true},
        },
        "configs": {"run-config": {"inline": {"version": 2}, "key": "run.yaml"}},
    }));
    let requests = pin_requests(&b, "team-a");
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].image.to_string(),
        "docker.io/llamastack/distribution-starter:0.2.1"
    );
    assert_eq!(
        requests[0].known, None,
        "nothing recorded yet: ask the registry"
    );
    // Without its digest the plan refuses rather than run an unpinned image.
    assert_eq!(
        plan(&b, "team-a", &Sources::new(), NOW).unwrap_err().reason,
        Reason::PinFailed
    );
    let pins: Pins = [("server".to_string(), Digest::parse(&digest).unwrap())].into();
    let planned = plan_with(&b, "team-a", &Sources::new(), None, &pins, NOW).unwrap();
    let pinned = format!("docker.io/llamastack/distribution-starter:0.2.1@{digest}");
    assert_eq!(planned.images[0].image, pinned);
    let container = &planned.desired.objects[1]["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], pinned.as_str());
    // Recorded in status: the same reference is not asked for again.
    b.status = Some(crate::types::BerthStatus {
        images: planned.images.clone(),
        ..Default::default()
    });
    assert_eq!(
        pin_requests(&b, "team-a")[0]
            .known
            .as_ref()
            .map(ToString::to_string),
        Some(digest.clone())
    );
    // A new tag in the spec is a new reference: asked for again.
    b.spec.images.get_mut("server").unwrap().image =
        "docker.io/llamastack/distribution-starter:0.2.2".into();
    assert_eq!(pin_requests(&b, "team-a")[0].known, None);
    // A digest written in the spec needs no registry.
    b.spec.images.get_mut("server").unwrap().image = pinned.clone();
    assert!(pin_requests(&b, "team-a").is_empty());
    assert_eq!(
        plan(&b, "team-a", &Sources::new(), NOW).unwrap().images[0].image,
        pinned
    );
}

/// #34 item 8: a workload's own owner references stay; the Berth's is added once.
#[test]
fn own_appends_the_berth_and_keeps_the_users_owner_references() {
    let owner = json!({"apiVersion": "berth.dev/v1alpha1", "kind": "Berth", "name": "b", "uid": "u-berth", "controller": true});
    let theirs =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "keep", "uid": "u-theirs"});
    let mut objects = vec![
        json!({"kind": "Deployment", "metadata": {"name": "web", "ownerReferences": [theirs.clone()]}}),
        json!({"kind": "Service", "metadata": {"name": "web"}}),
    ];
    crate::owner::own(&mut objects, &owner);
    crate::owner::own(&mut objects, &owner); // a second reconcile adds nothing
    assert_eq!(
        objects[0]["metadata"]["ownerReferences"],
        json!([theirs, owner])
    );
    assert_eq!(objects[1]["metadata"]["ownerReferences"], json!([owner]));
}

/// A certificate valid at `NOW`.
fn current_pem() -> String {
    let mut params = rcgen::CertificateParams::new(vec![]).unwrap();
    params.not_before = rcgen::date_time_ymd(2024, 1, 1);
    params.not_after = rcgen::date_time_ymd(2030, 1, 1);
    params
        .self_signed(&rcgen::KeyPair::generate().unwrap())
        .unwrap()
        .pem()
}

#[test]
fn trust_bundle_sources_read_the_watched_objects_and_every_runtime_is_injected() {
    use berth_core::configs::trust_bundles::TrustBundle;
    let pem = current_pem();
    let b = berth(json!({
        "workloads": [deployment()],
        "caBundles": {"corp": {
            "sources": [{"clusterTrustBundle": {"signerName": "x.io/corp", "labelSelector": {"matchLabels": {"tier": "corp"}}}}],
            "inject": {"containers": ["server"]}}},
    }));
    let bundle = |name: &str, tier: &str| TrustBundle {
        name: name.into(),
        signer_name: "x.io/corp".into(),
        labels: [("tier".to_string(), tier.to_string())].into(),
        pem: pem.clone(),
    };
    let watched = [bundle("x.io:corp:a", "corp")];
    let planned = plan_with(
        &b,
        "team-a",
        &Sources::new(),
        Some(&watched),
        &Pins::new(),
        NOW,
    )
    .unwrap();
    assert_eq!(planned.ca_bundles[0].certificates, 1);
    let container = &planned.desired.objects[1]["spec"]["template"]["spec"]["containers"][0];
    let env: Vec<&str> = (container["env"].as_array().unwrap().iter())
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        env,
        [
            "SSL_CERT_FILE",
            "REQUESTS_CA_BUNDLE",
            "NODE_EXTRA_CA_CERTS",
            "CURL_CA_BUNDLE",
            "SSL_CERT_DIR",
            "JAVA_TOOL_OPTIONS"
        ]
    );
    // Only the signer's other labels: missing, and said so.
    let other = [bundle("x.io:corp:b", "other")];
    let err = plan_with(
        &b,
        "team-a",
        &Sources::new(),
        Some(&other),
        &Pins::new(),
        NOW,
    )
    .unwrap_err();
    assert_eq!(err.reason, Reason::SourceMissing);
    assert!(
        err.message.contains("sources[0].clusterTrustBundle: no clusterTrustBundle of signer `x.io/corp` labelled tier=corp exists"),
        "{err}"
    );
}

#[test]
fn a_secret_password_locks_the_java_stores_and_reaches_the_jvm_by_reference() {
    let pem = current_pem();
    let b = berth(json!({
        "workloads": [deployment()],
        "caBundles": {"corp": {
            "sources": [{"inline": pem}],
            "password": {"name": "store-password", "key": "password"},
            "inject": {"containers": ["server"], "runtimes": ["java"]}}},
    }));
    assert!(sources_named(&b).contains(&(SourceKind::Secret, "store-password".into())));
    let with =
        |value: &[u8]| sources(&[(SourceKind::Secret, "store-password", &[("password", value)])]);
    let planned = plan(&b, "team-a", &with(b"Not-changeit-42"), NOW).unwrap();
    let container = &planned.desired.objects[1]["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container["env"][0],
        json!({"name": "BERTH_TRUSTSTORE_PASSWORD_CORP", "valueFrom": {"secretKeyRef": {"name": "store-password", "key": "password"}}})
    );
    let options = container["env"][1]["value"].as_str().unwrap();
    assert!(
        options.ends_with("-Djavax.net.ssl.trustStorePassword=$(BERTH_TRUSTSTORE_PASSWORD_CORP)"),
        "{options}"
    );
    assert!(!planned
        .desired
        .objects
        .iter()
        .any(|o| o.to_string().contains("Not-changeit-42")));
    let err = plan(&b, "team-a", &with(b"Hidden-Value\n"), NOW).unwrap_err();
    assert_eq!(err.reason, Reason::InvalidSpec);
    assert!(
        err.message.contains("spec.caBundles.corp.password") && err.message.contains("newline"),
        "{err}"
    );
    assert!(!err.message.contains("Hidden-Value"), "{err}");
}

/// #49 item 7: a `Berth` selects a family's member through the one resolver,
/// as `--variant` does; an unknown one is the spec's problem, named.
#[test]
fn spec_variants_select_a_member_of_a_family() {
    let mut b = berth(json!({
        "workloads": [deployment()],
        "images": {"server": {
            "image": "docker.io/llamastack/distribution-starter:0.2.1",
            "variants": {
                "rocm": {"image": "docker.io/llamastack/distribution-rocm"},
                "arm": {"image": "docker.io/llamastack/distribution-starter", "tagSuffix": "-arm64"},
            },
        }},
        "variants": {"server": "rocm"},
        "configs": {"run-config": {"inline": {"version": 2}, "key": "run.yaml"}},
    }));
    let planned = plan(&b, "team-a", &Sources::new(), NOW).unwrap();
    let container = &planned.desired.objects[1]["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container["image"],
        "docker.io/llamastack/distribution-rocm:0.2.1"
    );
    b.spec.variants.insert("server".into(), "arm".into());
    let planned = plan(&b, "team-a", &Sources::new(), NOW).unwrap();
    let container = &planned.desired.objects[1]["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container["image"],
        "docker.io/llamastack/distribution-starter:0.2.1-arm64"
    );
    b.spec.variants.insert("server".into(), "rokm".into());
    let problem = plan(&b, "team-a", &Sources::new(), NOW).unwrap_err();
    assert_eq!(problem.reason, Reason::InvalidImage);
    assert_eq!(problem.message, "`spec.variants.server: rokm`: component `server` has no variant `rokm`; its variants: default, arm, rocm; did you mean `rocm`?");
}
