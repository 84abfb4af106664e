//! CA bundles injected into containers, `berth validate`, and secrets that
//! never reach the terminal.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking

use crate::common;

use common::{berth, project};
use rcgen::{date_time_ymd, CertificateParams, DnType, KeyPair};

pub(crate) fn cert(cn: &str, years: (i32, i32)) -> (String, String) {
    let mut params = CertificateParams::new(vec![]).unwrap();
    params.distinguished_name.push(DnType::CommonName, cn);
    params.not_before = date_time_ymd(years.0, 1, 1);
    params.not_after = date_time_ymd(years.1, 1, 1);
    let key = KeyPair::generate().unwrap();
    (params.self_signed(&key).unwrap().pem(), key.serialize_pem())
}

use crate::common::write;

const PROJECT: &str = "\
name: ca
manifests: [app.yaml]
images:
  epp: {image: 'ghcr.io/llm-d/epp:dev'}
caBundles:
  trusted-ca:
    sources: [certs/, vendor/corp-root.pem]
    inject:
      components: [epp]
      containers: [helper]
      mountPath: /etc/ssl/certs/berth/ca-bundle.crt
      env: [SSL_CERT_FILE, REQUESTS_CA_BUNDLE]
";

const APP: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: epp, namespace: llm-d}
spec:
  template:
    spec:
      initContainers: [{name: helper, image: busybox}]
      containers:
      - name: epp
        image: ghcr.io/llm-d/epp:old
        env: [{name: SSL_CERT_FILE, value: /old/path}]
      - {name: other, image: nginx}
";

fn ca_project() -> tempfile::TempDir {
    let dir = project(PROJECT);
    let (a, _) = cert("Corp Root", (2020, 2090));
    let (b, _) = cert("Team CA", (2020, 2090));
    write(dir.path(), "certs/team.pem", format!("{b}{a}"));
    write(dir.path(), "vendor/corp-root.pem", &a);
    write(dir.path(), "app.yaml", APP);
    dir
}

#[test]
fn bundles_are_injected_into_the_chosen_containers() {
    let dir = ca_project();
    let out = berth(dir.path())
        .args(["render", "--registry", "quay.io/me"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let yaml = String::from_utf8(out.stdout).unwrap();
    // Documents are separated by lines that are exactly `---` (PEM lines end in `-----`).
    let docs: Vec<&str> = yaml.split("\n---\n").collect();
    let bundle = docs[0];
    assert!(
        bundle.starts_with("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: trusted-ca-"),
        "{bundle}"
    );
    assert!(bundle.contains("  namespace: llm-d\n"));
    assert_eq!(
        bundle.matches("BEGIN CERTIFICATE").count(),
        2,
        "duplicates dropped"
    );
    let name = bundle
        .lines()
        .nth(3)
        .unwrap()
        .trim_start_matches("  name: ");
    let deployment = docs[1];
    // The epp container matched by component (after its registry moved), helper by name; other untouched.
    // The container's own SSL_CERT_FILE is kept (#38: never a silent overwrite), and said.
    assert!(deployment.contains("- name: epp\n        image: quay.io/me/epp:dev\n        env:\n        - name: SSL_CERT_FILE\n          value: /old/path\n        - name: REQUESTS_CA_BUNDLE\n          value: /etc/ssl/certs/berth/ca-bundle.crt\n        volumeMounts:\n        - name: trusted-ca\n          mountPath: /etc/ssl/certs/berth/ca-bundle.crt\n          subPath: ca-bundle.crt\n          readOnly: true\n"), "{deployment}");
    assert!(
        deployment.contains("- name: helper\n        image: busybox\n        volumeMounts:"),
        "{deployment}"
    );
    assert!(deployment.contains("- name: other\n        image: nginx\n      volumes:\n      - name: trusted-ca\n        configMap:\n          name: "), "{deployment}");
    assert!(
        deployment.contains(&format!("configMap:\n          name: {name}\n")),
        "{deployment}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("app.yaml:11:15 (Deployment/epp): `SSL_CERT_FILE` is already `/old/path` in this container, so berth leaves it"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Rendering again gives the same bytes (injection is idempotent and ordered).
    let again = berth(dir.path())
        .args(["render", "--registry", "quay.io/me"])
        .output()
        .unwrap();
    assert_eq!(again.stdout, yaml.as_bytes());
}

#[test]
fn expired_certificates_warn_and_fail_under_strict() {
    let dir = ca_project();
    let (old, _) = cert("Old CA", (2000, 2010));
    write(dir.path(), "certs/old.pem", &old);
    let out = berth(dir.path()).arg("validate").output().unwrap();
    assert!(out.status.success());
    assert!(out.stdout.is_empty(), "validate prints nothing on stdout");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("\nwarning: certs/old.pem: certificate `CN=Old CA` is expired on"),
        "{stderr}"
    );
    // A bundle of private CAs alone, replacing the default store, is named (#38 item 3).
    assert!(
        stderr.starts_with("warning: berth.yaml:6:3: CA bundle `trusted-ca` holds only its own certificates, and `SSL_CERT_FILE`, `REQUESTS_CA_BUNDLE` replace the client's default store"),
        "{stderr}"
    );
    let out = berth(dir.path())
        .args(["validate", "--strict"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("error: certs/old.pem: certificate `CN=Old CA` is expired"));
}

#[test]
fn a_private_key_in_a_source_is_refused_without_printing_it() {
    let dir = ca_project();
    let (cert_pem, key_pem) = cert("Leaky", (2020, 2090));
    write(
        dir.path(),
        "certs/leaky.pem",
        format!("{cert_pem}{key_pem}"),
    );
    for command in ["render", "validate"] {
        let out = berth(dir.path()).arg(command).output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        assert!(out.stdout.is_empty());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("certs/leaky.pem: PEM block 2 is a `PRIVATE KEY`: a trust bundle must never contain a key"), "{stderr}");
        let key_body = key_pem.lines().nth(1).unwrap();
        assert!(!stderr.contains(key_body), "key material printed: {stderr}");
    }
}

#[test]
fn validate_checks_everything_and_writes_nothing() {
    let _filters = crate::common::snapshot_filters();
    let dir = project(
        "name: v
configs:
  settings:
    files: [settings.yaml]
    schema: settings.schema.json
",
    );
    write(
        dir.path(),
        "settings.schema.json",
        r#"{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {"port": {"type": "integer"}}, "required": ["port"]}"#,
    );
    write(dir.path(), "settings.yaml", "port: 8080\n");
    let out = berth(dir.path()).arg("validate").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty() && out.stderr.is_empty());

    write(dir.path(), "settings.yaml", "port: eighty\nextra: [\n");
    let out = berth(dir.path()).arg("validate").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with("error: settings.yaml:"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    write(dir.path(), "settings.yaml", "prt: 8080\n");
    let out = berth(dir.path()).arg("validate").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!(stderr, @r#"
    error: configs.settings: 1 violation(s) of settings.schema.json:
      settings.yaml:1:1: (document): "port" is a required property
    "#);
    assert!(!dir.path().join("out").exists());
}

#[test]
fn secret_values_never_reach_the_terminal() {
    let secret = "hunter2-top-secret";
    let dir = project(&format!(
        "name: s
manifests: [m.yaml]
configs:
  creds:
    secret: true
    literals: [\"password={secret}\", \"password={secret}\"]
"
    ));
    write(dir.path(), "m.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n");
    let mut outputs = Vec::new();
    outputs.push(berth(dir.path()).arg("validate").output().unwrap());
    // A bad env line in a Secret's env file.
    write(
        dir.path(),
        "berth.yaml",
        "name: s\nconfigs:\n  creds: {secret: true, envs: [s.env]}\n",
    );
    write(
        dir.path(),
        "s.env",
        format!("GOOD=1\n{secret}\n=oops-{secret}\n"),
    );
    outputs.push(berth(dir.path()).arg("validate").output().unwrap());
    // A schema violation in a Secret's file.
    write(
        dir.path(),
        "berth.yaml",
        "name: s\nconfigs:\n  creds: {secret: true, files: [c.yaml], schema: s.json}\n",
    );
    write(dir.path(), "c.yaml", format!("token: {secret}\n"));
    write(
        dir.path(),
        "s.json",
        r#"{"properties": {"token": {"type": "integer"}}}"#,
    );
    outputs.push(berth(dir.path()).arg("validate").output().unwrap());
    for out in outputs {
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(1), "{all}");
        assert!(!all.contains(secret), "a secret value was printed: {all}");
    }
}

#[test]
fn validate_warns_about_what_cannot_be_resolved_and_strict_refuses() {
    let _filters = crate::common::snapshot_filters();
    let dir = project(
        "name: demo\nmanifests: [app.yaml]\nimages:\n  web: {image: 'ghcr.io/acme/web:v1'}\n  ghost: {image: 'ghcr.io/acme/ghost:v1'}\n  twin: {image: 'quay.io/other/twin:v1', match: ['ghcr.io/acme/web']}\nconfigs:\n  unused: {literals: ['a=b']}\n",
    );
    std::fs::write(
        dir.path().join("app.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: w, image: 'ghcr.io/acme/web:v0'}\n  - {name: e, image: '${EPP_IMAGE}'}\n  - {name: b, image: 'BAD REF'}\n",
    )
    .unwrap();
    let out = berth(dir.path()).arg("validate").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "warnings only: {stderr}");
    for want in [
        "warning: berth.yaml:6:17: components `web` and `twin` both claim repository `ghcr.io/acme/web`; `web` (the first) gets every image there",
        "warning: berth.yaml:5:18: component `ghost` (`ghcr.io/acme/ghost:v1`) matches no image in the manifests",
        "warning: berth.yaml:8:3: `unused` is referenced by no object in the manifests",
        "warning: app.yaml:7:22 (Pod/p): image `${EPP_IMAGE}` is a placeholder that names no component's variable",
        "warning: app.yaml:8:22 (Pod/p): image `BAD REF` is not an image reference",
    ] {
        assert!(stderr.contains(want), "want {want}\n got {stderr}");
    }
    // render says what would reach the cluster unresolved or silently changed, and
    // only that: a partial render may well leave components unmatched.
    let render = berth(dir.path()).arg("render").output().unwrap();
    assert!(render.status.success());
    let warnings = String::from_utf8_lossy(&render.stderr);
    assert_eq!(warnings.lines().count(), 3, "{warnings}");
    insta::assert_snapshot!(warnings, @"
    warning: app.yaml:7:22 (Pod/p): image `${EPP_IMAGE}` is a placeholder that names no component's variable (`env:`); add the component, or set its `env:` to this variable [unparsed-image]
    warning: app.yaml:8:22 (Pod/p): image `BAD REF` is not an image reference, so no component can match it; fix the value, or render the templating step first [unparsed-image]
    warning: app.yaml:6:22 (Pod/p): image `ghcr.io/acme/web:v0` differs from berth.yaml's default for component `web` (`ghcr.io/acme/web:v1`, berth.yaml:4:16), and berth writes `ghcr.io/acme/web:v1`: put the tag you want in `images.web.image` of berth.yaml (a kustomize `newTag` or a chart value berth.yaml does not know), or drop the tag from the manifest [drift]
    ");
    let strict = berth(dir.path())
        .args(["validate", "--strict"])
        .output()
        .unwrap();
    assert_eq!(strict.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&strict.stderr)
            .contains("error: 7 warnings (errors under --strict)"),
        "{}",
        String::from_utf8_lossy(&strict.stderr)
    );
}

/// A36 (#46): an injection that chooses no container says which containers
/// there are, instead of advising to inject what already is.
#[test]
fn an_injection_that_chooses_no_container_names_the_containers() {
    let dir = ca_project();
    let text = PROJECT
        .replace("      components: [epp]\n", "")
        .replace("containers: [helper]", "containers: [nosuch]");
    write(dir.path(), "berth.yaml", &text);
    let out = berth(dir.path()).arg("validate").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("berth.yaml:6:3: `trusted-ca` is injected into no container: none is named `nosuch` (the manifests' containers are epp, helper, other); name a container in `inject.containers` or its component in `inject.components` [unused-config]"),
        "{stderr}"
    );
    assert!(!stderr.contains("or inject it"), "{stderr}");
}
