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
fn a_name_takes_the_last_component_and_the_registry_the_rest() {
    // Kubeflow's katib: `global.imageRegistry` joined to each image's name;
    // components that share the prefix write it once, and agree.
    let text = "name: x\nimages:\n  controller:\n    image: ghcr.io/kubeflow/katib/katib-controller:v0.19.0\n    helmValues: {registry: global.imageRegistry, name: controller.image.repository, tag: controller.image.tag}\n  ui:\n    image: ghcr.io/kubeflow/katib/katib-ui:v0.19.0\n    helmValues: {registry: global.imageRegistry, name: ui.image.repository}\n  flat:\n    image: ghcr.io/web:1\n    helmValues: {registry: flat.registry, name: flat.name}\n";
    assert_eq!(
        values(text).unwrap().unwrap(),
        "global:\n  imageRegistry: ghcr.io/kubeflow/katib\n\
         controller:\n  image:\n    repository: katib-controller\n    tag: v0.19.0\n\
         ui:\n  image:\n    repository: katib-ui\n\
         flat:\n  registry: ghcr.io\n  name: web\n"
    );
    // One moved elsewhere clashes at the shared prefix: said, never half-applied.
    let moved = text.replace("ghcr.io/kubeflow/katib/katib-ui", "quay.io/me/katib-ui");
    assert!(matches!(values(&moved), Err(HelmValuesError::Clash { .. })));
    let both = "name: x\nimages:\n  a: {image: a:1, helmValues: {repository: a.repository, name: a.name}}\n";
    let project = parse("berth.yaml", "/p".into(), both);
    let error = project.unwrap_err().to_string();
    assert!(
        error.contains("give `repository:` or `name:`, not both"),
        "{error}"
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
