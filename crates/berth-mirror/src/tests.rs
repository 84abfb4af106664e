use super::*;
use berth_core::resolve::{resolve, Overrides};

fn project(images: &str) -> berth_core::Project {
    berth_core::project::parse(
        "berth.yaml",
        std::path::PathBuf::from("/p"),
        &format!("name: shop\nimages:\n{images}"),
    )
    .unwrap()
}

fn planned(images: &str, to: &str, project_only: bool) -> Result<Vec<Entry>, MirrorError> {
    let project = project(images);
    let resolution = resolve(&project, &Overrides::default(), &|_| None).unwrap();
    plan(
        &resolution,
        &RegistryPrefix::parse(to).unwrap(),
        project_only,
    )
}

const DIGEST: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000001";

#[test]
fn each_repository_keeps_its_path_below_the_prefix() {
    let images = format!("  epp: {{image: 'ghcr.io/llm-d/epp:v1@{DIGEST}'}}\n  db: {{image: 'mysql:8.0', registry: false}}\n  nested: {{image: 'quay.io/a/b/c:v2'}}\n  parent: {{image: 'quay.io/a/b:v3'}}\n");
    let table = [
        // (prefix, component, mirror)
        (
            "mirror.example:5000/mirror",
            "db",
            "mirror.example:5000/mirror/library/mysql:8.0",
        ),
        (
            "mirror.example:5000/mirror",
            "epp",
            &format!("mirror.example:5000/mirror/llm-d/epp:v1@{DIGEST}"),
        ),
        // Nested sources stay nested: consumers match the longest prefix.
        (
            "mirror.example:5000/mirror",
            "nested",
            "mirror.example:5000/mirror/a/b/c:v2",
        ),
        (
            "mirror.example:5000/mirror",
            "parent",
            "mirror.example:5000/mirror/a/b:v3",
        ),
        // A prefix without a namespace (OCPBUGS-31608's empty namespace).
        (
            "127.0.0.1:5000",
            "epp",
            &format!("127.0.0.1:5000/llm-d/epp:v1@{DIGEST}"),
        ),
    ];
    for (to, component, mirror) in table {
        let entries = planned(&images, to, false).unwrap();
        let entry = entries.iter().find(|e| e.component == component).unwrap();
        assert_eq!(entry.mirror.to_string(), mirror, "{to} {component}");
    }
    let names: Vec<String> = planned(&images, "m.example/x", true)
        .unwrap()
        .into_iter()
        .map(|e| e.component)
        .collect();
    assert_eq!(
        names,
        ["epp", "nested", "parent"],
        "--project-only leaves `registry: false` out"
    );
}

#[test]
fn two_registries_with_one_path_are_refused() {
    let err = planned(
        "  a: {image: 'quay.io/org/app:v1'}\n  b: {image: 'ghcr.io/org/app:v1'}\n",
        "m.example/x",
        false,
    )
    .unwrap_err();
    assert!(
        matches!(err, MirrorError::Collision { ref mirror, .. } if mirror == "m.example/x/org/app"),
        "{err}"
    );
}

fn options() -> Options {
    Options {
        project: "shop".into(),
        insecure: vec!["127.0.0.1:5000".into()],
        ..Options::default()
    }
}

#[test]
fn the_four_configurations_say_the_same_thing() {
    let images = format!("  epp: {{image: 'ghcr.io/llm-d/epp:v1@{DIGEST}'}}\n  sidecar: {{image: 'ghcr.io/llm-d/sidecar:v1@{DIGEST}'}}\n  db: {{image: 'mysql:8.0', registry: false}}\n");
    let entries = planned(&images, "127.0.0.1:5000/mirror", false).unwrap();
    let (files, warnings) = files(&entries, &options());
    let paths: Vec<&str> = files.keys().map(String::as_str).collect();
    assert_eq!(
        paths,
        [
            "containerd/certs.d/docker.io/hosts.toml",
            "containerd/certs.d/ghcr.io/hosts.toml",
            "openshift/imagedigestmirrorset.yaml",
            "openshift/imagetagmirrorset.yaml",
            "registries.conf.d/50-shop.conf",
        ]
    );
    insta::assert_snapshot!(files["openshift/imagedigestmirrorset.yaml"], @r#"
    apiVersion: config.openshift.io/v1
    kind: ImageDigestMirrorSet
    metadata:
      name: shop-epp-4d7f0e0a
      labels:
        app.kubernetes.io/managed-by: berth
        berth.dev/project: shop
    spec:
      imageDigestMirrors:
      - source: ghcr.io/llm-d/epp
        mirrors:
        - "127.0.0.1:5000/mirror/llm-d/epp"
    ---
    apiVersion: config.openshift.io/v1
    kind: ImageDigestMirrorSet
    metadata:
      name: shop-sidecar-40ba7e1a
      labels:
        app.kubernetes.io/managed-by: berth
        berth.dev/project: shop
    spec:
      imageDigestMirrors:
      - source: ghcr.io/llm-d/sidecar
        mirrors:
        - "127.0.0.1:5000/mirror/llm-d/sidecar"
    "#);
    insta::assert_snapshot!(files["containerd/certs.d/ghcr.io/hosts.toml"], @r#"
    server = "https://ghcr.io"

    [host."http://127.0.0.1:5000/v2/mirror"]
      capabilities = ["pull", "resolve"]
      override_path = true
    "#);
    insta::assert_snapshot!(files["containerd/certs.d/docker.io/hosts.toml"], @r#"
    server = "https://registry-1.docker.io"

    [host."http://127.0.0.1:5000/v2/mirror"]
      capabilities = ["pull", "resolve"]
      override_path = true
    "#);
    insta::assert_snapshot!(files["registries.conf.d/50-shop.conf"], @r#"
    # Written by `berth mirror` for project "shop": each repository's mirror.

    [[registry]]
    location = "docker.io/library/mysql"

    [[registry.mirror]]
    location = "127.0.0.1:5000/mirror/library/mysql"
    pull-from-mirror = "all"
    insecure = true

    [[registry]]
    location = "ghcr.io/llm-d/epp"

    [[registry.mirror]]
    location = "127.0.0.1:5000/mirror/llm-d/epp"
    pull-from-mirror = "digest-only"
    insecure = true

    [[registry]]
    location = "ghcr.io/llm-d/sidecar"

    [[registry.mirror]]
    location = "127.0.0.1:5000/mirror/llm-d/sidecar"
    pull-from-mirror = "digest-only"
    insecure = true
    "#);
    assert!(
        files["openshift/imagetagmirrorset.yaml"]
            .contains("imageTagMirrors:\n  - source: docker.io/library/mysql\n"),
        "{}",
        files["openshift/imagetagmirrorset.yaml"]
    );
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].to_string().ends_with("[tag-mirror]"),
        "{}",
        warnings[0]
    );
}

#[test]
fn adding_a_component_adds_an_object_and_changes_none() {
    let one = format!("  epp: {{image: 'ghcr.io/llm-d/epp:v1@{DIGEST}'}}\n");
    let two = format!("{one}  api: {{image: 'ghcr.io/llm-d/api:v1@{DIGEST}'}}\n");
    let render = |images: &str| {
        let entries = planned(images, "m.example/x", false).unwrap();
        files(&entries, &options()).0["openshift/imagedigestmirrorset.yaml"].clone()
    };
    let before = render(&one);
    let after = render(&two);
    assert_eq!(before, render(&one), "the same plan, the same bytes");
    let objects = |text: &str| -> Vec<String> { text.split("---\n").map(str::to_string).collect() };
    let (before, after) = (objects(&before), objects(&after));
    assert_eq!(after.len(), 2);
    assert!(after.contains(&before[0]), "epp's object is unchanged");
}

#[test]
fn a_self_signed_mirror_gets_skip_verify_or_its_ca() {
    let entries = planned(
        &format!("  epp: {{image: 'ghcr.io/llm-d/epp:v1@{DIGEST}'}}\n"),
        "mirror.corp",
        false,
    )
    .unwrap();
    let options = Options {
        project: "shop".into(),
        skip_verify: true,
        ca: Some("/etc/containerd/certs.d/mirror.corp/ca.crt".into()),
        policy: SourcePolicy::NeverContactSource,
        ..Options::default()
    };
    let (files, _) = files(&entries, &options);
    assert_eq!(
        files["containerd/certs.d/ghcr.io/hosts.toml"],
        "server = \"https://ghcr.io\"\n\n[host.\"https://mirror.corp\"]\n  capabilities = [\"pull\", \"resolve\"]\n  skip_verify = true\n  ca = \"/etc/containerd/certs.d/mirror.corp/ca.crt\"\n"
    );
    assert!(files["openshift/imagedigestmirrorset.yaml"]
        .contains("    mirrorSourcePolicy: NeverContactSource\n"));
}
