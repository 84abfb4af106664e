//! CA bundles injected per runtime: Java's options appended, a container's own
//! values kept and said.

use std::path::PathBuf;

use super::*;
use crate::project;
use crate::resolve::{resolve, Overrides};

fn rendered(container_env: &str) -> Rendered {
    let project = project::parse(
        "berth.yaml",
        PathBuf::from("/p"),
        "name: t\nimages:\n  app: {image: 'ghcr.io/acme/app:v1'}\ncaBundles:\n  corp:\n    sources: [corp.pem]\n    inject: {components: [app]}\n",
    )
    .unwrap();
    let resolution = resolve(&project, &Overrides::default(), &|_| None).unwrap();
    let src = format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  containers:\n  - name: app\n    image: ghcr.io/acme/app:v1\n    env: {container_env}\n");
    let inputs = [Input::text("in.yaml", &src)];
    render(
        &Spec::from_project(&project, &resolution, &[], &Options::default()).unwrap(),
        &inputs,
    )
    .unwrap()
}

const OURS: &str = "-Djavax.net.ssl.trustStore=/etc/ssl/certs/berth/corp/truststore.p12 -Djavax.net.ssl.trustStoreType=PKCS12 -Djavax.net.ssl.trustStorePassword=changeit";

#[test]
fn java_options_are_appended_and_another_truststore_is_kept_and_said() {
    // The container's own options stay first; berth's follow.
    let out = rendered("[{name: JAVA_TOOL_OPTIONS, value: '-Xmx1g'}]");
    assert!(
        out.yaml.contains(&format!("value: -Xmx1g {OURS}\n")),
        "{}",
        out.yaml
    );
    assert!(
        out.yaml.contains("subPath: truststore.p12\n"),
        "{}",
        out.yaml
    );
    assert!(out.findings.trust.is_empty(), "{:?}", out.findings.trust);
    // Rendering berth's own output again changes nothing.
    let again = rendered(&format!(
        "[{{name: JAVA_TOOL_OPTIONS, value: '-Xmx1g {OURS}'}}]"
    ));
    assert_eq!(
        again.yaml.matches("trustStore=").count(),
        1,
        "{}",
        again.yaml
    );
    // Options naming another truststore: kept, and a finding that says so.
    let other = rendered(
        "[{name: JAVA_TOOL_OPTIONS, value: '-Djavax.net.ssl.trustStore=/opt/app/cacerts'}]",
    );
    assert!(
        other
            .yaml
            .contains("value: '-Djavax.net.ssl.trustStore=/opt/app/cacerts'\n"),
        "{}",
        other.yaml
    );
    assert_eq!(other.findings.trust.len(), 1);
    assert!(
        other.findings.trust[0]
            .1
            .contains("names another truststore"),
        "{:?}",
        other.findings.trust
    );
}

#[test]
fn a_variable_the_container_sets_otherwise_is_kept_and_said() {
    let out = rendered("[{name: NODE_EXTRA_CA_CERTS, value: /opt/ca.pem}, {name: CURL_CA_BUNDLE, valueFrom: {configMapKeyRef: {name: x, key: y}}}]");
    assert!(out.yaml.contains("value: /opt/ca.pem\n"), "{}", out.yaml);
    let said: Vec<String> = out
        .findings
        .trust
        .iter()
        .map(|(at, _)| at.to_string())
        .collect();
    assert_eq!(said, ["in.yaml:8:11 (Pod/p)", "in.yaml:8:60 (Pod/p)"]);
    assert!(
        out.findings.trust[1].1.contains("set from `valueFrom`"),
        "{:?}",
        out.findings.trust
    );
    // The others are berth's.
    assert!(
        out.yaml.contains(
            "- name: SSL_CERT_FILE\n      value: /etc/ssl/certs/berth/corp/ca-bundle.crt\n"
        ),
        "{}",
        out.yaml
    );
}

#[test]
fn the_hashed_directory_is_mounted_whole_and_a_containers_own_dir_is_kept() {
    let out = rendered("[]");
    for wanted in [
        "- name: corp\n      mountPath: /etc/ssl/certs/berth/corp/certs\n      readOnly: true\n",
        "- name: SSL_CERT_DIR\n      value: /etc/ssl/certs/berth/corp/certs\n",
    ] {
        assert!(out.yaml.contains(wanted), "{wanted}\n{}", out.yaml);
    }
    let kept = rendered("[{name: SSL_CERT_DIR, value: /etc/ssl/certs}]");
    assert!(
        kept.yaml.contains("value: /etc/ssl/certs\n"),
        "{}",
        kept.yaml
    );
    let (_, said) = &kept.findings.trust[0];
    assert!(
        said.contains("`SSL_CERT_DIR` is already `/etc/ssl/certs`")
            && said.contains("berth sets it to `/etc/ssl/certs/berth/corp/certs`"),
        "{said}"
    );
}
