#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking
//! #49's "done when" on a tree shaped like an accelerator-per-Component project
//! (written here; its shape studied from llm-d's modelserver guides, nothing
//! copied): a base with an image placeholder, one kustomize `Component` per
//! accelerator build that fills it in, and guides whose overlays pick one
//! Component each. berth's render of every guide × accelerator equals `kubectl
//! kustomize` of the overlay but for image lines; one component with variants
//! replaces the image Components; a fork moves every accelerator; a selection
//! an overlay contradicts is an error.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::{self, berth};

/// (Component directory, repository, tag): the builds as the Components pin them.
const BUILDS: &[(&str, &str, &str)] = &[
    ("cuda", "registry.example/acme/server-cuda", "v1.4.0"),
    ("rocm", "registry.example/acme/server-rocm", "v1.4.0"),
    ("xpu", "registry.example/acme/server-xpu", "v1.4.0"),
    ("gb200", "registry.example/acme/server-cuda", "v1.4.0-arm64"),
    ("tpu", "registry.example/acme/server-tpu", "v1.3.2"),
    ("cpu", "registry.example/acme/server-cpu", "v1.4.0"),
];

const GUIDES: &[&str] = &["basic", "disaggregated", "wide-ep"];

const BERTH_YAML: &str = "\
name: server
registry: {env: IMAGE_REGISTRY}
images:
  server:
    image: registry.example/acme/server-cuda:v1.4.0
    variants:
      rocm: {image: registry.example/acme/server-rocm}
      xpu: {image: registry.example/acme/server-xpu}
      gb200: {image: registry.example/acme/server-cuda, tagSuffix: -arm64, platform: linux/arm64}
      tpu: {image: registry.example/acme/server-tpu:v1.3.2}
      cpu: {image: registry.example/acme/server-cpu}
  router:
    image: registry.example/acme/router:v0.9.0
  cache:
    image: docker.io/library/redis:7.4
    registry: false
accept:
  - {warning: variant-lag, at: server/tpu, because: the TPU build trails one release}
";

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// The tree, and berth.yaml's profiles: one per guide × accelerator.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        &root.join("base/server.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: server\n  labels: {app: server}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: server}}\n  template:\n    metadata: {labels: {app: server}}\n    spec:\n      containers:\n      - name: server\n        image: SERVER_IMAGE\n        args: [\n          \"--port\", \"8000\",\n          \"--max-model-len\", \"4096\"\n        ]\n      - name: router\n        image: registry.example/acme/router:v0.9.0\n      - name: cache\n        image: redis:7.4\n",
    );
    write(
        &root.join("base/kustomization.yaml"),
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [server.yaml]\n",
    );
    for (name, repository, tag) in BUILDS {
        write(
            &root.join(format!("components/images/{name}/kustomization.yaml")),
            &format!("apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nimages:\n- name: SERVER_IMAGE\n  newName: {repository}\n  newTag: {tag}\n"),
        );
    }
    let mut profiles = String::from("profiles:\n");
    for guide in GUIDES {
        for (build, _, _) in BUILDS {
            let overlay = format!("guides/{guide}/{build}");
            write(
                &root.join(&overlay).join("kustomization.yaml"),
                &format!("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamePrefix: {guide}-\nresources: [../../../base]\ncomponents: [../../../components/images/{build}]\n"),
            );
            profiles.push_str(&format!("  {guide}-{build}: [{{kustomize: {overlay}}}]\n"));
        }
    }
    write(&root.join("berth.yaml"), &format!("{BERTH_YAML}{profiles}"));
    dir
}

/// The YAML with each `image:` line's value dropped.
fn without_images(text: &str) -> String {
    (text.lines())
        .map(|l| match l.find("image: ") {
            Some(at) => &l[..at + "image:".len()],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn images_of(text: &str) -> Vec<String> {
    (text.lines())
        .filter_map(|l| l.trim().trim_start_matches("- ").strip_prefix("image: "))
        .map(|i| i.trim_matches('"').to_string())
        .collect()
}

/// `berth render --profile PROFILE` with `env`, which must succeed: its output.
fn render(root: &Path, profile: &str, env: &[(&str, &str)]) -> String {
    let out = (berth(root).args(["render", "--profile", profile]))
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{profile}: {}",
        common::transcript(&out)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn kustomize(dir: &Path) -> String {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn every_guide_and_accelerator_renders_as_kustomize_and_a_fork_moves_them_all() {
    common::require_program(common::Group::Tools, "kubectl");
    let dir = tree();
    let root = dir.path();
    let fork = [("IMAGE_REGISTRY", "quay.io/me"), ("SERVER_TAG", "fix-1")];
    for guide in GUIDES {
        for (build, repository, tag) in BUILDS {
            let profile = format!("{guide}-{build}");
            let theirs = kustomize(&root.join(format!("guides/{guide}/{build}")));
            let ours = render(root, &profile, &[]);
            assert_eq!(without_images(&ours), without_images(&theirs), "{profile}");
            assert_eq!(
                images_of(&ours),
                [
                    format!("{repository}:{tag}"),
                    "registry.example/acme/router:v0.9.0".into(),
                    "docker.io/library/redis:7.4".into()
                ],
                "{profile}"
            );
            // A fork: every accelerator's build moves, the lagging TPU keeps its tag,
            // the third-party cache stays.
            let moved = render(root, &profile, &fork);
            let last = repository.rsplit('/').next().unwrap();
            let want_tag = match *build {
                "tpu" => "v1.3.2".to_string(),
                "gb200" => "fix-1-arm64".to_string(),
                _ => "fix-1".to_string(),
            };
            assert_eq!(
                images_of(&moved),
                [
                    format!("quay.io/me/{last}:{want_tag}"),
                    "quay.io/me/router:v0.9.0".into(),
                    "docker.io/library/redis:7.4".into()
                ],
                "{profile}"
            );
        }
    }
    // Six image Components, one berth component; validate --strict is clean.
    let out = berth(root).args(["validate", "--strict"]).output().unwrap();
    assert!(out.status.success(), "{}", common::transcript(&out));
}

#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn a_selection_an_overlay_contradicts_is_an_error_and_one_it_allows_applies() {
    common::require_program(common::Group::Tools, "kubectl");
    let dir = tree();
    let root = dir.path();
    // The ROCm overlay, told to run XPU: neither wins silently.
    let out = (berth(root).args([
        "render",
        "--profile",
        "basic-rocm",
        "--variant",
        "server=xpu",
    ]))
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "runs variant `rocm` of component `server`, but `--variant server=xpu` selects `xpu`"
        ),
        "{err}"
    );
    assert!(err.contains("kustomize guides/basic/rocm:"), "{err}");
    // The CUDA overlay runs the default build: a selection moves it.
    let out = (berth(root).args(["render", "--profile", "basic-cuda"]))
        .env("SERVER_VARIANT", "xpu")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::transcript(&out));
    let images = images_of(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(images[0], "registry.example/acme/server-xpu:v1.4.0");
}

#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn init_proposes_one_component_with_variants_and_check_is_clean_after() {
    common::require_program(common::Group::Tools, "kubectl");
    let dir = tree();
    let root = dir.path();
    fs::remove_file(root.join("berth.yaml")).unwrap();
    let out = berth(root).arg("init").output().unwrap();
    assert!(out.status.success(), "{}", common::transcript(&out));
    let yaml = fs::read_to_string(root.join("berth.yaml")).unwrap();
    // The six image Components are one component: the family's name, five variants.
    assert!(
        yaml.contains("  server:\n    image: registry.example/acme/server-"),
        "{yaml}"
    );
    for variant in [
        "gb200:\n        image: registry.example/acme/server-cuda\n        tagSuffix: -arm64\n",
        "tpu:\n        image: registry.example/acme/server-tpu:v1.3.2\n",
    ] {
        assert!(yaml.contains(variant), "{variant} in\n{yaml}");
    }
    assert_eq!(
        yaml.matches("image: registry.example/acme/server-").count(),
        6,
        "{yaml}"
    );
    assert!(
        yaml.contains("    variants:\n      server: rocm\n"),
        "{yaml}"
    );
    let out = berth(root).args(["init", "--check"]).output().unwrap();
    assert!(out.status.success(), "{}", common::transcript(&out));
    // What init wrote renders each guide as its overlay does.
    let out = berth(root)
        .args(["render", "--profile", "guides-wide-ep-rocm"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::transcript(&out));
    let images = images_of(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(images[0], "registry.example/acme/server-rocm:v1.4.0");
}

/// Engines and the accelerators each is built for: thirty image Components
/// over one placeholder, as a project that ships every engine × accelerator.
const ENGINES: &[(&str, &[&str])] = &[
    (
        "vllm",
        &["cuda", "rocm", "xpu", "tpu", "cpu", "hpu", "gb200", "npu"],
    ),
    ("sglang", &["cuda", "rocm", "xpu", "cpu", "gb200", "tpu"]),
    (
        "llmd",
        &["cuda", "rocm", "xpu", "cpu", "hpu", "gb200", "aws"],
    ),
    ("trtllm", &["cuda", "gb200"]),
    ("omni", &["cuda", "rocm", "xpu", "cpu"]),
    ("coordinator", &["cuda", "rocm", "gb200"]),
];

/// An engine's build for an accelerator: its repository and tag.
fn build_of(engine: &str, accelerator: &str) -> (String, String) {
    match accelerator {
        "gb200" => (
            format!("registry.example/{engine}/{engine}-cuda"),
            "v3.0.0-arm64".into(),
        ),
        a => (
            format!("registry.example/{engine}/{engine}-{a}"),
            "v3.0.0".into(),
        ),
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn thirty_image_components_are_six_components_and_a_fork_moves_every_one() {
    common::require_program(common::Group::Tools, "kubectl");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        &root.join("base/server.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: server}\nspec:\n  selector: {matchLabels: {app: s}}\n  template:\n    metadata: {labels: {app: s}}\n    spec:\n      containers:\n      - {name: engine, image: ENGINE_IMAGE}\n",
    );
    write(
        &root.join("base/kustomization.yaml"),
        "resources: [server.yaml]\n",
    );
    let mut yaml = String::from("name: engines\nregistry: {env: IMAGE_REGISTRY}\nimages:\n");
    let mut profiles = String::from("profiles:\n");
    let mut components = 0;
    for (engine, accelerators) in ENGINES {
        yaml.push_str(&format!("  {engine}:\n    image: registry.example/{engine}/{engine}-cuda:v3.0.0\n    variants:\n"));
        for accelerator in *accelerators {
            let (repository, tag) = build_of(engine, accelerator);
            let component = format!("components/images/{engine}/{accelerator}");
            write(
                &root.join(&component).join("kustomization.yaml"),
                &format!("apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nimages:\n- {{name: ENGINE_IMAGE, newName: {repository}, newTag: {tag}}}\n"),
            );
            components += 1;
            let overlay = format!("guides/{engine}-{accelerator}");
            write(
                &root.join(&overlay).join("kustomization.yaml"),
                &format!("resources: [../../base]\ncomponents: [../../{component}]\n"),
            );
            profiles.push_str(&format!(
                "  {engine}-{accelerator}: [{{kustomize: {overlay}}}]\n"
            ));
            match *accelerator {
                "cuda" => {}
                "gb200" => yaml.push_str(&format!(
                    "      gb200: {{image: {repository}, tagSuffix: -arm64}}\n"
                )),
                a => yaml.push_str(&format!("      {a}: {{image: {repository}}}\n")),
            }
        }
    }
    assert_eq!((components, ENGINES.len()), (30, 6));
    write(&root.join("berth.yaml"), &format!("{yaml}{profiles}"));
    let mut fork: Vec<(String, String)> = vec![("IMAGE_REGISTRY".into(), "quay.io/me".into())];
    fork.extend(
        ENGINES
            .iter()
            .map(|(e, _)| (format!("{}_TAG", e.to_uppercase()), "fix-1".into())),
    );
    for (engine, accelerators) in ENGINES {
        for accelerator in *accelerators {
            let profile = format!("{engine}-{accelerator}");
            let theirs = kustomize(&root.join(format!("guides/{profile}")));
            let ours = render(root, &profile, &[]);
            assert_eq!(ours, theirs, "{profile}: nothing to rewrite, byte for byte");
            let env: Vec<(&str, &str)> = (fork.iter())
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            let moved = render(root, &profile, &env);
            let (repository, tag) = build_of(engine, accelerator);
            let name = repository.rsplit('/').next().unwrap();
            let tag = tag.replace("v3.0.0", "fix-1");
            assert_eq!(
                images_of(&moved),
                [format!("quay.io/me/{name}:{tag}")],
                "{profile}"
            );
        }
    }
}
