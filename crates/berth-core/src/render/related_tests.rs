//! Related images written into an operator's Deployment and a CSV.

use std::path::PathBuf;

use super::*;
use crate::project;
use crate::resolve::{resolve, Overrides};

const PROJECT: &str = "\
name: ogx
operator: {workload: Deployment/ogx-operator-controller-manager, container: manager}
images:
  operator: {image: 'quay.io/ogx-ai/ogx-k8s-operator:v1'}
  starter: {image: 'docker.io/llamastack/distribution-starter:0.3.0', relatedImage: true}
  vllm: {image: 'docker.io/llamastack/distribution-remote-vllm:0.3.0', relatedImage: remote-vllm}
";

const DEPLOYMENT: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: ogx-operator-controller-manager}
spec:
  template:
    spec:
      containers:
      - name: manager
        image: quay.io/ogx-ai/ogx-k8s-operator:v1
        env:
        - {name: GOMEMLIMIT, value: 800MiB}
        - {name: RELATED_IMAGE_STARTER, value: ''}
        - {name: RELATED_IMAGE_REMOTE_VLLM, value: 'docker.io/llamastack/distribution-remote-vllm:0.2.0'}
        - {name: RELATED_IMAGE_POSTGRES_DEMO, value: ''}
";

const CSV: &str = "\
apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata: {name: ogx.v1}
spec:
  relatedImages:
  - {name: starter, image: 'docker.io/llamastack/distribution-starter:0.3.0'}
  - {name: gone, image: 'docker.io/x/gone:1'}
  install:
    strategy: deployment
    spec:
      deployments:
      - name: ogx-operator-controller-manager
        spec:
          template:
            spec:
              containers:
              - name: manager
                image: quay.io/ogx-ai/ogx-k8s-operator:v1
";

fn rendered(src: &str, project_text: &str) -> Rendered {
    let project = project::parse("berth.yaml", PathBuf::from("/p"), project_text).unwrap();
    let resolution = resolve(&project, &Overrides::default(), &|_| None).unwrap();
    let inputs = [Input::text("in.yaml", src)];
    render(
        &Spec::from_project(&project, &resolution, &[], &Options::default()).unwrap(),
        &inputs,
    )
    .unwrap()
}

fn problems(rendered: &Rendered) -> Vec<String> {
    rendered
        .findings
        .related
        .iter()
        .map(|f| {
            format!(
                "{}: {}",
                f.at,
                f.problem.split(':').next().unwrap_or_default()
            )
        })
        .collect()
}

#[test]
fn the_operator_container_gets_every_related_image_and_disagreements_are_named() {
    let out = rendered(DEPLOYMENT, PROJECT);
    for line in [
        "- name: RELATED_IMAGE_STARTER\n          value: docker.io/llamastack/distribution-starter:0.3.0\n",
        "- name: RELATED_IMAGE_REMOTE_VLLM\n          value: docker.io/llamastack/distribution-remote-vllm:0.3.0\n",
        "- name: GOMEMLIMIT\n          value: 800MiB\n",
    ] {
        assert!(out.yaml.contains(line), "{line}\n---\n{}", out.yaml);
    }
    assert_eq!(
        problems(&out),
        [
            "in.yaml:13:52 (Deployment/ogx-operator-controller-manager): `RELATED_IMAGE_REMOTE_VLLM` is `docker.io/llamastack/distribution-remote-vllm",
            "in.yaml:14:11 (Deployment/ogx-operator-controller-manager): `RELATED_IMAGE_POSTGRES_DEMO` names no component with `relatedImage",
        ]
    );
}

#[test]
fn a_csv_gets_its_related_images_and_its_deployments_env() {
    let out = rendered(CSV, PROJECT);
    assert!(
        out.yaml.contains("  - name: starter\n    image: docker.io/llamastack/distribution-starter:0.3.0\n  - name: gone\n    image: 'docker.io/x/gone:1'\n  - name: remote-vllm\n    image: docker.io/llamastack/distribution-remote-vllm:0.3.0\n"),
        "{}",
        out.yaml
    );
    assert!(
        out.yaml.contains("                env:\n                - name: RELATED_IMAGE_STARTER\n                  value: docker.io/llamastack/distribution-starter:0.3.0\n"),
        "{}",
        out.yaml
    );
    assert_eq!(
        problems(&out),
        ["in.yaml:7:5 (ClusterServiceVersion/ogx.v1): `relatedImages` entry `gone` names no component with `relatedImage"]
    );
}

#[test]
fn an_operator_the_manifests_lack_is_named() {
    let out = rendered(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
        PROJECT,
    );
    assert!(problems(&out).is_empty());
    let missing = operator_missing(&[&out.findings]).unwrap();
    assert!(
        missing
            .text
            .starts_with("berth.yaml:2:11: `operator:` names container `manager`"),
        "{}",
        missing.text
    );
    let present = rendered(DEPLOYMENT, PROJECT);
    assert!(operator_missing(&[&out.findings, &present.findings]).is_none());
}

#[test]
fn related_variables_are_olms_spelling() {
    for (name, var) in [
        ("starter", "RELATED_IMAGE_STARTER"),
        ("remote-vllm", "RELATED_IMAGE_REMOTE_VLLM"),
        ("meta.reference_gpu", "RELATED_IMAGE_META_REFERENCE_GPU"),
    ] {
        assert_eq!(related::variable(name), var);
    }
}
