//! The OGX example (`examples/ogx`): an `OGXServer` whose config and CA bundle
//! come from berth — hashed, labelled for the operator's cache — and whose
//! fields name the generated objects, rendered and applied to the test plane.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking

use crate::common;

use std::process::Output;

use common::testenv::plane;
use common::{berth, copy_example};

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// `metadata.name` of each generated ConfigMap, by the name it was given in berth.yaml.
/// `yaml` with the bundle's PEM (two CAs and Mozilla's roots, which move with
/// berth's webpki-root-certs) written as its number of certificates.
fn pem_counted(yaml: &str) -> String {
    let mut out = Vec::new();
    let mut lines = yaml.lines().peekable();
    while let Some(line) = lines.next() {
        out.push(line.to_string());
        if line == "  ca-bundle.crt: |" {
            let mut certificates = 0;
            while lines.peek().is_some_and(|l| l.starts_with("    ")) {
                certificates +=
                    usize::from(lines.next() == Some("    -----BEGIN CERTIFICATE-----"));
            }
            out.push(match certificates {
                n if n > 100 => {
                    "    <more than 100 certificates: the two CAs and Mozilla's roots>".into()
                }
                n => format!("    <{n} certificates>"),
            });
        }
    }
    out.join("\n") + "\n"
}

fn generated_name(yaml: &str, base: &str) -> String {
    yaml.lines()
        .filter_map(|l| l.strip_prefix("  name: "))
        .find(|n| {
            n.strip_prefix(base)
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|hash| hash.len() == 10)
        })
        .unwrap_or_else(|| panic!("no generated {base}-<hash> in:\n{yaml}"))
        .to_string()
}

#[test]
fn the_server_names_the_generated_config_and_bundle() {
    let dir = copy_example("ogx");
    let out = berth(dir.path()).arg("render").output().unwrap();
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let yaml = stdout(&out);
    insta::assert_snapshot!(pem_counted(&yaml));
    let config = generated_name(&yaml, "ogx-config");
    let bundle = generated_name(&yaml, "custom-ca-bundle");
    assert!(yaml.contains(&format!("overrideConfig:\n    name: {config}\n")));
    assert!(yaml.contains(&format!("caCertificates:\n      - name: {bundle}\n")));
    // Both carry the label the operator's cache selects.
    assert_eq!(
        yaml.matches("    ogx.io/watch: \"true\"\n").count(),
        2,
        "{yaml}"
    );
    // The references count: nothing is unused, nothing unmatched.
    berth(dir.path())
        .args(["validate", "--strict"])
        .assert()
        .success();

    // A changed config is a new name, and the server follows it; the bundle stays.
    let file = dir.path().join("config/config.yaml");
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("port: 8321", "port: 8322");
    std::fs::write(&file, text).unwrap();
    let changed = stdout(&berth(dir.path()).arg("render").output().unwrap());
    let new_config = generated_name(&changed, "ogx-config");
    assert_ne!(new_config, config);
    assert!(changed.contains(&format!("name: {new_config}\n    key: config.yaml\n")));
    assert_eq!(generated_name(&changed, "custom-ca-bundle"), bundle);

    // The image follows berth's resolution through `imagePaths:`.
    let moved = berth(dir.path())
        .arg("render")
        .env("OGX_IMAGE", "quay.io/me/distribution-starter:fix")
        .output()
        .unwrap();
    assert!(stdout(&moved).contains("    image: quay.io/me/distribution-starter:fix\n"));
}

#[test]
fn a_config_that_breaks_its_schema_never_reaches_the_server() {
    let _filters = crate::common::snapshot_filters();
    let dir = copy_example("ogx");
    let file = dir.path().join("config/config.yaml");
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("provider_type: remote::ollama", "provider_type: ollama");
    std::fs::write(&file, text).unwrap();
    let out = berth(dir.path()).arg("render").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    insta::assert_snapshot!(stderr, @r#"
    error: configs.ogx-config: 1 violation(s) of config/config.schema.json:
      config/config.yaml:10:22: /providers/inference/0/provider_type: "ollama" does not match "^(remote|inline)::"
    "#);
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn applied_the_server_and_its_labelled_configs_are_in_the_cluster() {
    let plane = plane();
    let dir = copy_example("ogx");
    // The operator's CRD (trimmed); the operator itself cannot run here (no images).
    let crd = dir.path().join("crd/ogx.io_ogxservers.yaml");
    plane.ok(&["apply", "--server-side", "-f", crd.to_str().unwrap()]);
    plane.ok(&[
        "wait",
        "--for=condition=Established",
        "crd/ogxservers.ogx.io",
        "--timeout=30s",
    ]);
    let ns = plane.namespace("ogx");
    let apply = |what: &str| {
        let out = berth(dir.path())
            .args([
                "apply",
                "--rollout-timeout",
                "60",
                "-n",
                &ns.name,
                "--kubeconfig",
            ])
            .arg(&ns.kubeconfig)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    apply("first apply");
    let field = |path: &str| {
        ns.ok(&[
            "get",
            "ogxserver",
            "ogx-starter",
            "-o",
            &format!("jsonpath={{{path}}}"),
        ])
    };
    let config = field(".spec.overrideConfig.name");
    let bundle = field(".spec.tls.trust.caCertificates[0].name");
    assert!(config.starts_with("ogx-config-"), "{config}");
    assert!(bundle.starts_with("custom-ca-bundle-"), "{bundle}");
    let watched = ns.ok(&["get", "configmaps", "-l", "ogx.io/watch=true", "-o", "name"]);
    let mut watched: Vec<&str> = watched.lines().collect();
    watched.sort();
    assert_eq!(
        watched,
        [format!("configmap/{bundle}"), format!("configmap/{config}")]
    );
    let pem = ns.ok(&[
        "get",
        "configmap",
        &bundle,
        "-o",
        "jsonpath={.data.ca-bundle\\.crt}",
    ]);
    // The two example CAs and Mozilla's roots (`defaults: mozilla`).
    for cert in std::fs::read_dir(dir.path().join("certs")).unwrap() {
        let text = std::fs::read_to_string(cert.unwrap().path()).unwrap();
        let body = text.lines().nth(1).unwrap();
        assert!(pem.contains(body), "{body}");
    }
    assert!(pem.matches("-----BEGIN CERTIFICATE-----").count() > 100);

    // Edit the config, apply again: the server names the new generation.
    let file = dir.path().join("config/config.yaml");
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("llama3.2:1b", "llama3.2:3b");
    std::fs::write(&file, text).unwrap();
    apply("second apply");
    let next = field(".spec.overrideConfig.name");
    assert!(next.starts_with("ogx-config-") && next != config, "{next}");
    assert!(ns.get("configmap", &next).is_some());
    assert_eq!(field(".spec.tls.trust.caCertificates[0].name"), bundle);
}
