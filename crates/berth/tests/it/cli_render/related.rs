//! #37 item 2 on an OGX-shaped operator: `relatedImage:` components reach the
//! operator's `RELATED_IMAGE_*` env and a bundle's ClusterServiceVersion, and
//! `validate --strict` fails where the manifests say otherwise.

use std::fs;

use super::common::{berth, project};

const DIGEST: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const STALE: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

fn berth_yaml() -> String {
    format!("name: ogx\nmanifests: [config/, bundle/]\noperator: {{workload: Deployment/ogx-operator-controller-manager, container: manager}}\nimages:\n  operator: {{image: 'quay.io/ogx-ai/ogx-k8s-operator:v1'}}\n  starter: {{image: 'docker.io/llamastack/distribution-starter:0.3.0@{DIGEST}', relatedImage: true, registry: false}}\n")
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn related_images_reach_the_operator_and_the_csv_and_disagreements_fail_strict() {
    let dir = project(&berth_yaml());
    let d = dir.path();
    fs::create_dir_all(d.join("config")).unwrap();
    fs::create_dir_all(d.join("bundle")).unwrap();
    fs::write(
        d.join("config/manager.yaml"),
        format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: ogx-operator-controller-manager}}\nspec:\n  template:\n    spec:\n      containers:\n      - name: manager\n        image: quay.io/ogx-ai/ogx-k8s-operator:v1\n        env:\n        - name: RELATED_IMAGE_STARTER\n          value: docker.io/llamastack/distribution-starter:0.3.0@{STALE}\n"),
    )
    .unwrap();
    fs::write(
        d.join("bundle/csv.yaml"),
        "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata: {name: ogx.v1}\nspec:\n  relatedImages:\n  - name: postgres-demo\n    image: docker.io/library/postgres:17\n",
    )
    .unwrap();
    let render = berth(d).arg("render").output().unwrap();
    assert!(render.status.success(), "{}", stderr(&render));
    let yaml = String::from_utf8_lossy(&render.stdout);
    let pinned = format!("docker.io/llamastack/distribution-starter:0.3.0@{DIGEST}");
    assert!(
        yaml.contains(&format!(
            "- name: RELATED_IMAGE_STARTER\n          value: {pinned}\n"
        )),
        "{yaml}"
    );
    assert!(
        yaml.contains(&format!("  - name: starter\n    image: {pinned}\n")),
        "{yaml}"
    );
    let strict = berth(d).args(["validate", "--strict"]).output().unwrap();
    assert_eq!(strict.status.code(), Some(1), "{}", stderr(&strict));
    let said = stderr(&strict);
    let stale = format!("warning: config/manager.yaml:12:18 (Deployment/ogx-operator-controller-manager): `RELATED_IMAGE_STARTER` is `docker.io/llamastack/distribution-starter:0.3.0@{STALE}`, but berth's answer is `{pinned}`");
    for expected in [
        stale.as_str(),
        "warning: bundle/csv.yaml:6:5 (ClusterServiceVersion/ogx.v1): `relatedImages` entry `postgres-demo` names no component with `relatedImage:`",
        "[related-image]",
        "error: 2 warnings (errors under --strict)",
    ] {
        assert!(said.contains(expected), "{expected}\n---\n{said}");
    }

    // Under --locked an image berth.lock lacks is refused before anything renders.
    fs::write(
        d.join("berth.yaml"),
        berth_yaml().replace(&format!("@{DIGEST}"), ""),
    )
    .unwrap();
    fs::write(d.join("berth.lock"), format!("version: 1\nimages:\n- {{component: operator, image: 'quay.io/ogx-ai/ogx-k8s-operator:v1', digest: '{DIGEST}'}}\n")).unwrap();
    let locked = berth(d)
        .args(["validate", "--strict", "--locked"])
        .output()
        .unwrap();
    assert_eq!(locked.status.code(), Some(1), "{}", stderr(&locked));
    assert!(stderr(&locked).contains("starter"), "{}", stderr(&locked));

    // The operator named nowhere is said once.
    fs::write(
        d.join("berth.yaml"),
        berth_yaml().replace("container: manager", "container: mgr"),
    )
    .unwrap();
    let missing = berth(d).arg("validate").output().unwrap();
    assert!(
        stderr(&missing).contains("berth.yaml:3:11: `operator:` names container `mgr` of Deployment/ogx-operator-controller-manager, which no object of the manifests has"),
        "{}",
        stderr(&missing)
    );
}
