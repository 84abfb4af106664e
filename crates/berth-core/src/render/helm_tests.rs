//! The values layer, from berth.yaml text to YAML.

use super::*;
use crate::project::parse;
use crate::resolve::{resolve, Overrides};

fn values(yaml: &str) -> Result<Option<String>, HelmValuesError> {
    let project = parse("berth.yaml", "/p".into(), yaml).unwrap();
    let resolution = resolve(&project, &Overrides::default(), &|_| None).unwrap();
    image_values(&resolution).map(|node| {
        node.map(|n| {
            let mut out = String::new();
            berth_yaml::write_document(&mut out, &n);
            out
        })
    })
}

#[test]
fn split_and_whole_forms_take_the_parts_of_the_resolved_reference() {
    let text = "name: x\nimages:\n  epp:\n    image: ghcr.io/llm-d/epp:v0.3.0\n    helmValues: {repository: image.repository, tag: image.tag}\n  sidecar:\n    image: ghcr.io/llm-d/sidecar:v1@sha256:0000000000000000000000000000000000000000000000000000000000000000\n    helmValues: {registry: sidecar.registry, repository: sidecar.repository, tag: sidecar.tag}\n  proxy:\n    image: envoyproxy/envoy:v1.31\n    helmValues: {image: routing.proxy.image}\n  plain: {image: nginx:1}\n";
    assert_eq!(
        values(text).unwrap().unwrap(),
        "image:\n  repository: ghcr.io/llm-d/epp\n  tag: v0.3.0\n\
         sidecar:\n  registry: ghcr.io\n  repository: llm-d/sidecar\n  tag: v1@sha256:0000000000000000000000000000000000000000000000000000000000000000\n\
         routing:\n  proxy:\n    image: docker.io/envoyproxy/envoy:v1.31\n"
    );
    assert_eq!(
        values("name: x\nimages:\n  a: {image: nginx:1}\n").unwrap(),
        None
    );
}

#[test]
fn clashes_nesting_and_a_lone_digest_are_errors() {
    let clash = "name: x\nimages:\n  a: {image: a:1, helmValues: {tag: image.tag}}\n  b: {image: b:2, helmValues: {tag: image.tag}}\n";
    assert!(matches!(values(clash), Err(HelmValuesError::Clash { .. })));
    let nested = "name: x\nimages:\n  a: {image: a:1, helmValues: {image: image}}\n  b: {image: b:2, helmValues: {tag: image.tag}}\n";
    assert!(matches!(
        values(nested),
        Err(HelmValuesError::Nested { .. })
    ));
    let digest = "name: x\nimages:\n  a:\n    image: a@sha256:0000000000000000000000000000000000000000000000000000000000000000\n    helmValues: {repository: a.repository, tag: a.tag}\n";
    assert!(matches!(
        values(digest),
        Err(HelmValuesError::DigestOnly { .. })
    ));
}

#[test]
fn helm_values_are_checked_where_they_are_written() {
    let err = |text: &str| {
        parse("berth.yaml", "/p".into(), text)
            .unwrap_err()
            .to_string()
    };
    assert!(
        err("name: x\nimages:\n  a: {image: a:1, helmValues: {image: i, tag: t}}\n")
            .contains("give it alone")
    );
    assert!(
        err("name: x\nimages:\n  a: {image: a:1, helmValues: {tag: \"c[0].tag\"}}\n")
            .contains("list indexes")
    );
    assert!(err("name: x\nimages:\n  a: {image: a:1, helmValues: {tags: t}}\n").contains("tags"));
    assert!(
        err("name: x\nmanifests:\n  - helm: {chart: oci://r.example/c/web}\n")
            .contains("needs `version:`")
    );
    assert!(err("name: x\nmanifests:\n  - helm: {version: 1.0.0}\n").contains("chart"));
    let project = parse(
        "berth.yaml",
        "/p".into(),
        "name: x\nmanifests:\n  - helm:\n      chart: charts/web\n      values: [a.yaml]\n      set: {replicaCount: 2}\n",
    )
    .unwrap();
    let crate::ManifestSource::Helm(chart) = &project.manifests[0].source else {
        panic!("{:?}", project.manifests)
    };
    assert!(chart.is_local());
    assert_eq!(chart.values[0].value, "a.yaml");
    assert_eq!(chart.set.as_deref(), Some("replicaCount: 2\n"));
}
