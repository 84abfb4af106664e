#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking
//! #49: an image family from berth.yaml through `images`, `env -- CMD` (a command
//! line's variable included) and `render` with profiles, on a small tree shaped
//! like an accelerator-per-overlay project.

use crate::common::{berth, project};

const FAMILY: &str = "\
name: family
registry: {env: IMAGE_REGISTRY}
images:
  modelserver:
    image: ghcr.io/llm-d/llm-d-cuda:v0.7.0
    resource: nvidia.com/gpu
    variants:
      rocm: {image: ghcr.io/llm-d/llm-d-rocm, resource: amd.com/gpu}
      gb200: {image: ghcr.io/llm-d/llm-d-cuda, tagSuffix: -arm64, platform: linux/arm64}
      tpu: {image: ghcr.io/llm-d/llm-d-tpu:v0.6.0, resource: google.com/tpu}
  redis:
    image: docker.io/library/redis:7
    registry: false
profiles:
  cuda: [cuda]
  rocm:
    manifests: [rocm]
    variants: {modelserver: rocm}
";

const DEPLOYMENT: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: ms}
spec:
  selector: {matchLabels: {app: ms}}
  template:
    metadata: {labels: {app: ms}}
    spec:
      containers:
      - name: vllm
        image: IMAGE
      - name: cache
        image: redis:7
";

fn tree() -> tempfile::TempDir {
    let dir = project(FAMILY);
    for (sub, image) in [
        ("cuda", "ghcr.io/llm-d/llm-d-cuda:v0.7.0"),
        ("rocm", "ghcr.io/llm-d/llm-d-rocm:v0.7.0"),
    ] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
        let text = DEPLOYMENT.replace("IMAGE", image);
        std::fs::write(dir.path().join(sub).join("ms.yaml"), text).unwrap();
    }
    dir
}

fn images(out: &std::process::Output) -> Vec<String> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (String::from_utf8_lossy(&out.stdout).lines())
        .filter_map(|l| l.trim().strip_prefix("image: ").map(str::to_string))
        .collect()
}

#[test]
fn a_fork_moves_every_accelerator_and_nothing_third_party() {
    let dir = tree();
    let fork = [
        ("IMAGE_REGISTRY", "quay.io/me"),
        ("MODELSERVER_TAG", "fix-1"),
    ];
    let out = berth(dir.path())
        .args(["images", "-o", "env"])
        .envs(fork)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "MODELSERVER_IMAGE=quay.io/me/llm-d-cuda:fix-1\n\
         MODELSERVER_ROCM_IMAGE=quay.io/me/llm-d-rocm:fix-1\n\
         MODELSERVER_GB200_IMAGE=quay.io/me/llm-d-cuda:fix-1-arm64\n\
         MODELSERVER_TPU_IMAGE=quay.io/me/llm-d-tpu:v0.6.0\n\
         REDIS_IMAGE=docker.io/library/redis:7\n"
    );
    for (profile, want) in [
        ("cuda", "quay.io/me/llm-d-cuda:fix-1"),
        ("rocm", "quay.io/me/llm-d-rocm:fix-1"),
    ] {
        let out = (berth(dir.path()).args(["render", "--profile", profile]))
            .envs(fork)
            .output()
            .unwrap();
        assert_eq!(
            images(&out),
            [want, "docker.io/library/redis:7"],
            "{profile}"
        );
    }
    // A flag over the profile on the overlay that runs the default image.
    let out = (berth(dir.path()).args([
        "render",
        "--profile",
        "cuda",
        "--variant",
        "modelserver=gb200",
    ]))
    .output()
    .unwrap();
    assert_eq!(images(&out)[0], "ghcr.io/llm-d/llm-d-cuda:v0.7.0-arm64");
}

#[test]
fn a_selection_the_overlay_contradicts_is_an_error_never_a_silent_winner() {
    let dir = tree();
    let out = (berth(dir.path()).args(["render", "--profile", "rocm"]))
        .env("MODELSERVER_VARIANT", "tpu")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "no partial output");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("rocm/ms.yaml:11:16 (Deployment/ms): `ghcr.io/llm-d/llm-d-rocm:v0.7.0` runs variant `rocm` of component `modelserver`, but `MODELSERVER_VARIANT=tpu` (environment) selects `tpu`"),
        "{err}"
    );
    let out = (berth(dir.path()).args(["images", "--variant", "modelserver=rokm"]))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("its variants: default, rocm, gb200, tpu; did you mean `rocm`?"));
}

#[test]
fn env_exports_every_member_and_honours_a_command_lines_selection() {
    let dir = tree();
    let out = berth(dir.path())
        .args(["env", "--", "env", "MODELSERVER_VARIANT=rocm", "sh", "-c"])
        .arg("echo $MODELSERVER_IMAGE $MODELSERVER_TPU_IMAGE")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "ghcr.io/llm-d/llm-d-rocm:v0.7.0 ghcr.io/llm-d/llm-d-tpu:v0.6.0\n"
    );
}
