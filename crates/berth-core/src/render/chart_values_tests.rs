//! Which image values reach which chart, and a chart's own defaults against berth.yaml's.

use super::*;
use crate::project::parse;
use crate::resolve::{resolve, Overrides};

fn tree(yaml: &str) -> Node {
    berth_yaml::load_all(yaml, berth_yaml::Limits::default())
        .unwrap()
        .remove(0)
}

fn text(node: &Option<Node>) -> String {
    let mut out = String::new();
    if let Some(node) = node {
        berth_yaml::write_document(&mut out, node);
    }
    out
}

#[test]
fn image_values_reach_only_the_charts_that_have_a_place_for_them() {
    let images = tree("inferenceExtension:\n  image:\n    tag: dev\nrouter:\n  image:\n    tag: v2\nglobal:\n  hub: quay.io/me\nloose:\n  value: x\n");
    let gateway = ChartValues {
        opened: true,
        own: Some((
            "gw/values.yaml".into(),
            tree("inferenceExtension:\n  image:\n    name: epp\n    tag: main\n"),
        )),
        ..Default::default()
    };
    let router = ChartValues {
        opened: true,
        own: Some(("router/values.yaml".into(), tree("replicas: 1\n"))),
        dependencies: vec![("router".into(), None)],
        ..Default::default()
    };
    let remote = ChartValues::default();
    let got = for_charts(&images, &[&gateway, &router, &remote]);
    // `loose.value` has a place in no chart: it goes everywhere, as before.
    assert_eq!(text(&got[0]), "inferenceExtension:\n  image:\n    tag: dev\nglobal:\n  hub: quay.io/me\nloose:\n  value: x\n");
    assert_eq!(
        text(&got[1]),
        "router:\n  image:\n    tag: v2\nglobal:\n  hub: quay.io/me\nloose:\n  value: x\n"
    );
    // A chart berth cannot read gets everything.
    assert_eq!(text(&got[2]), text(&Some(images.clone())));
    // A layer the user gives the chart counts as a place.
    let given = ChartValues {
        opened: true,
        given: vec![("v.yaml".into(), tree("router:\n  image: {}\n"))],
        ..Default::default()
    };
    assert_eq!(
        text(
            &for_charts(
                &tree("router:\n  image:\n    tag: v2\n"),
                &[&given, &gateway]
            )[1]
        ),
        ""
    );
}

fn resolution_of(project: &crate::Project) -> Resolution<'_> {
    resolve(project, &Overrides::default(), &|_| None).unwrap()
}

#[test]
fn a_charts_own_default_that_differs_from_berth_yaml_is_drift() {
    let project = parse(
        "berth.yaml",
        "/p".into(),
        "name: x\nimages:\n  epp:\n    image: ghcr.io/llm-d/epp:dev\n    helmValues: {repository: epp.image.repository, tag: [epp.image.tag, router.epp.tag]}\n  kserve:\n    image: kserve/controller:latest\n    helmValues: {tag: kserve.tag}\n  same:\n    image: ghcr.io/acme/same:v1\n    helmValues: {image: same.image}\n",
    )
    .unwrap();
    let resolution = resolution_of(&project);
    let chart = ChartValues {
        opened: true,
        own: Some((
            "charts/x/values.yaml".into(),
            tree("epp:\n  image:\n    repository: ghcr.io/llm-d/epp\n    tag: main\nkserve:\n  tag: ''\nsame:\n  image: ghcr.io/acme/same:v1\n"),
        )),
        app_version: Some("v0.20.0".into()),
        dependencies: vec![("router".into(), Some(("charts/x/charts/router/values.yaml".into(), tree("epp:\n  tag: dev\n"))))],
        given: Vec::new(),
        templates: "image: {{ .Values.kserve.image }}:{{ .Values.kserve.tag | default .Chart.AppVersion }}\n".into(),
    };
    let warnings = default_drift(&chart, &resolution, "berth.yaml");
    let texts: Vec<&str> = warnings.iter().map(|w| w.text.as_str()).collect();
    assert_eq!(texts.len(), 2, "{texts:#?}");
    assert!(texts[0].starts_with("charts/x/values.yaml:4:10: the chart's default for `epp.image.tag` is `main`, but berth.yaml's default for component `epp` is `ghcr.io/llm-d/epp:dev` (berth.yaml:4:12), and berth sets `ghcr.io/llm-d/epp:dev`"), "{}", texts[0]);
    assert!(texts[1].starts_with("charts/x/values.yaml:6:8: the chart's default for `kserve.tag` is empty (the chart's appVersion `v0.20.0`)"), "{}", texts[1]);
    assert!(warnings.iter().all(|w| w.code == Code::Drift));
}

#[test]
fn dotted_set_keys_are_found_where_they_stand() {
    let layer = tree(
        "router.modelServers.matchLabels.app: vllm\nrouter:\n  epp.replicas: 2\n  plain: {a: 1}\n",
    );
    assert_eq!(
        dotted_keys(&layer),
        ["router.modelServers.matchLabels.app", "router.epp.replicas"]
    );
}

/// A chart that composes `registry/repository` (`ghcr.io/llm-d` + `epp`) agrees with berth.yaml's
/// `ghcr.io/llm-d/epp` although berth splits it elsewhere (`ghcr.io` + `llm-d/epp`): compared
/// composed, and said once, at the repository, when it differs.
#[test]
fn registry_and_repository_are_compared_composed() {
    let project = parse(
        "berth.yaml",
        "/p".into(),
        "name: x\nimages:\n  epp:\n    image: ghcr.io/llm-d/epp:dev\n    helmValues: {registry: epp.registry, repository: epp.repository, tag: epp.tag}\n",
    )
    .unwrap();
    let resolution = resolution_of(&project);
    let chart = |values: &str| ChartValues {
        opened: true,
        own: Some(("values.yaml".into(), tree(values))),
        ..Default::default()
    };
    let same = chart("epp:\n  registry: ghcr.io/llm-d\n  repository: epp\n  tag: dev\n");
    assert!(default_drift(&same, &resolution, "berth.yaml").is_empty());
    let other = chart("epp:\n  registry: quay.io/llm-d\n  repository: epp\n  tag: dev\n");
    let warnings = default_drift(&other, &resolution, "berth.yaml");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0]
            .text
            .contains("is `quay.io/llm-d/epp` (registry and repository)"),
        "{}",
        warnings[0].text
    );
}

/// Kubeflow's shape: two charts read one path (`ui.image.repository`) for two images. Each chart
/// gets the component its own defaults name there; a chart whose defaults name neither (or a
/// chart berth cannot read) keeps the clash as an error.
#[test]
fn two_charts_that_read_one_path_each_get_the_image_their_defaults_name() {
    let project = parse(
        "berth.yaml",
        "/p".into(),
        "name: x\nimages:\n  katib-ui:\n    image: ghcr.io/kubeflow/katib/katib-ui:v0.19.0\n    helmValues: {repository: ui.image.repository, tag: ui.image.tag}\n  registry-ui:\n    image: ghcr.io/kubeflow/model-registry/ui:v0.3.0\n    helmValues: {repository: ui.image.repository, tag: ui.image.tag}\n",
    )
    .unwrap();
    let resolution = resolution_of(&project);
    let chart = |repository: &str| ChartValues {
        opened: true,
        own: Some((
            "values.yaml".into(),
            tree(&format!(
                "ui:\n  image:\n    repository: {repository}\n    tag: ''\n"
            )),
        )),
        ..Default::default()
    };
    let (katib, registry) = (
        chart("ghcr.io/kubeflow/katib/katib-ui"),
        chart("ghcr.io/kubeflow/model-registry/ui"),
    );
    let got = values_for_charts(&resolution, &[&katib, &registry]).unwrap();
    assert_eq!(
        text(&got[0]),
        "ui:\n  image:\n    repository: ghcr.io/kubeflow/katib/katib-ui\n    tag: v0.19.0\n"
    );
    assert_eq!(
        text(&got[1]),
        "ui:\n  image:\n    repository: ghcr.io/kubeflow/model-registry/ui\n    tag: v0.3.0\n"
    );
    let neither = chart("docker.io/other/dashboard");
    assert!(matches!(
        values_for_charts(&resolution, &[&katib, &neither]),
        Err(crate::render::HelmValuesError::Clash { .. })
    ));
    assert!(values_for_charts(&resolution, &[&katib, &ChartValues::default()]).is_err());
}

/// Kubeflow's katib chart joins `global.imageRegistry` to each image's name and
/// defaults an empty tag to `global.imageTag`: compared as it renders, the
/// defaults agree with berth.yaml; an empty tag whose default the templates do
/// not say is not judged.
#[test]
fn a_joined_name_and_a_tag_defaulted_to_another_value_are_compared_as_rendered() {
    let project = parse(
        "berth.yaml",
        "/p".into(),
        "name: x\nimages:\n  controller:\n    image: ghcr.io/kubeflow/katib/katib-controller:v0.19.0\n    helmValues: {registry: global.imageRegistry, name: controller.image.repository, tag: controller.image.tag}\n  ui:\n    image: ghcr.io/kubeflow/katib/katib-ui:v0.19.0\n    helmValues: {tag: ui.image.tag}\n",
    )
    .unwrap();
    let resolution = resolution_of(&project);
    let chart = |image_tag: &str| {
        ChartValues {
        opened: true,
        own: Some((
            "charts/katib/values.yaml".into(),
            tree(&format!("global:\n  imageRegistry: ghcr.io/kubeflow/katib\n  imageTag: {image_tag}\ncontroller:\n  image:\n    repository: katib-controller\n    tag: ''\nui:\n  image:\n    repository: katib-ui\n    tag: ''\n")),
        )),
        app_version: Some("0.16.0".into()),
        templates: "image: {{ include \"katib.image\" (dict \"registry\" .Values.global.imageRegistry \"repository\" .Values.controller.image.repository \"tag\" (.Values.controller.image.tag | default .Values.global.imageTag)) }}\nimage: {{ .Values.ui.image.tag }}\n".into(),
        ..ChartValues::default()
    }
    };
    let texts = |c: &ChartValues| -> Vec<String> {
        (default_drift(c, &resolution, "berth.yaml").into_iter())
            .map(|w| w.text)
            .collect()
    };
    assert_eq!(texts(&chart("v0.19.0")), Vec::<String>::new());
    let moved = texts(&chart("v0.18.0"));
    assert_eq!(moved.len(), 1, "{moved:#?}");
    assert!(
        moved[0].contains("the chart's default for `controller.image.tag` is empty (`global.imageTag`: `v0.18.0`)"),
        "{}",
        moved[0]
    );
}

/// A chart that joins its own registry value to what berth set at a
/// `repository:` path renders the component's whole repository after a prefix:
/// said at the container's image, with the `helmValues:` that fixes it.
#[test]
fn a_chart_image_that_joins_a_prefix_to_a_components_repository_is_said() {
    let project = parse(
        "berth.yaml",
        "/p".into(),
        "name: x\nimages:\n  katib-controller:\n    image: docker.io/library/katib-controller:0.16.0\n    helmValues: {repository: controller.image.repository, tag: controller.image.tag}\n",
    )
    .unwrap();
    let resolution = resolution_of(&project);
    let mut object = tree("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: c}\nspec:\n  template:\n    spec:\n      containers:\n      - name: controller\n        image: ghcr.io/kubeflow/katib/docker.io/library/katib-controller:0.16.0\n      - name: fine\n        image: docker.io/library/katib-controller:0.16.0\n");
    let at = |pos| crate::place::Place::file("helm template katib").at(pos);
    let mut out = Vec::new();
    crate::render::findings::joined_images(&mut object, "Deployment", &at, &resolution, &mut out);
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(
        out[0].1.starts_with("image `ghcr.io/kubeflow/katib/docker.io/library/katib-controller:0.16.0` of container `controller` ends in component `katib-controller`'s repository `docker.io/library/katib-controller` after a prefix: the chart joins the value berth sets at `controller.image.repository`"),
        "{}",
        out[0].1
    );
}
