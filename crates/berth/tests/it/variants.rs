#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking
//! #49: an image family from berth.yaml through `images`, `env -- CMD` (a command
//! line's variable included) and `render` with profiles, on a small tree shaped
//! like an accelerator-per-overlay project.

use crate::common::registry::{Layout, TestRegistry};
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
        .filter_map(|l| {
            l.trim()
                .strip_prefix("image: ")
                .map(|i| i.trim_matches('"').to_string())
        })
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
fn explain_names_the_selection_and_what_did_not_reach_a_lagging_member() {
    let dir = tree();
    let out = (berth(dir.path()).args(["images", "--explain", "-o", "table"]))
        .envs([
            ("MODELSERVER_TAG", "v0.8.0"),
            ("MODELSERVER_VARIANT", "rocm"),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("modelserver (rocm)  MODELSERVER_IMAGE  ghcr.io/llm-d/llm-d-rocm:v0.8.0"),
        "{text}"
    );
    assert!(
        text.contains("  variant: `rocm`, selected by `MODELSERVER_VARIANT=rocm` (environment)\n"),
        "{text}"
    );
    assert!(text.contains("  variant tpu (MODELSERVER_TPU_IMAGE=ghcr.io/llm-d/llm-d-tpu:v0.6.0)\n    note: MODELSERVER_TAG (environment) (`v0.8.0`) not applied to variant `tpu`: it keeps its own tag"), "{text}");
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

/// A `berth render` that `berth env`'s command runs (a Makefile's deploy
/// recipe) deploys what it would alone: the profile's member, moved by the
/// outer flags, and its own flags move them again without a clash.
#[test]
fn a_berth_under_env_renders_the_profiles_member_and_takes_its_own_flags() {
    let dir = tree();
    let berth_bin = crate::common::berth_path();
    let nested = |outer: &[&str], inner: &str| {
        let out = berth(dir.path())
            .arg("env")
            .args(outer)
            .args(["--", "sh", "-c"])
            .arg(format!("'{}' render {inner}", berth_bin.display()))
            .output()
            .unwrap();
        images(&out)
    };
    assert_eq!(
        nested(&[], "--profile rocm"),
        [
            "ghcr.io/llm-d/llm-d-rocm:v0.7.0",
            "docker.io/library/redis:7"
        ],
        "the profile's member, not the default member's image under its name"
    );
    assert_eq!(
        nested(&["--tag", "modelserver=v0.8.0"], "--profile rocm"),
        [
            "ghcr.io/llm-d/llm-d-rocm:v0.8.0",
            "docker.io/library/redis:7"
        ]
    );
    assert_eq!(
        nested(
            &["--tag", "modelserver=v0.8.0"],
            "--profile rocm --tag modelserver=v0.9.0"
        ),
        [
            "ghcr.io/llm-d/llm-d-rocm:v0.9.0",
            "docker.io/library/redis:7"
        ],
        "its own tag moves berth env's answer; no clash with the tag berth env handed"
    );
    // Without `berth env`, the same: its answers are the ones handed.
    let alone = berth(dir.path())
        .args(["render", "--profile", "rocm", "--tag", "modelserver=v0.9.0"])
        .output()
        .unwrap();
    assert_eq!(
        nested(&[], "--profile rocm --tag modelserver=v0.9.0"),
        images(&alone)
    );
}

/// A script that `eval`s `berth images --output shell` and then renders a
/// profile deploys the profile's member: the exported images are its base.
#[test]
fn a_script_that_evals_the_shell_output_renders_the_profiles_member() {
    let dir = tree();
    let berth_bin = crate::common::berth_path();
    let script = format!(
        "set -e; b='{}'; images=$(\"$b\" images --tag modelserver=v0.8.0 --output shell); eval \"$images\"; \"$b\" render --profile rocm",
        berth_bin.display()
    );
    let out = std::process::Command::new("sh")
        .args(["-c", &script])
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output()
        .unwrap();
    assert_eq!(
        images(&out),
        [
            "ghcr.io/llm-d/llm-d-rocm:v0.8.0",
            "docker.io/library/redis:7"
        ]
    );
}

/// A family in the tests' registry: `llm-d-cuda:v0.7.0` (an index), the
/// arm64 build under `-arm64` (`arm64` says whether it is an index with
/// linux/arm64, or a single linux/amd64 image), `llm-d-rocm` at the family
/// version and `llm-d-tpu` at its own (`tpu`: pushed or not).
fn family_in(registry: &TestRegistry, arm64: bool, tpu: bool) -> tempfile::TempDir {
    let host = &registry.host;
    registry.push(&Layout::index("cuda"), "llm-d/llm-d-cuda", "v0.7.0");
    let gb200 = if arm64 {
        Layout::index("gb200")
    } else {
        Layout::image("gb200", 1, 64)
    };
    registry.push(&gb200, "llm-d/llm-d-cuda", "v0.7.0-arm64");
    registry.push(&Layout::image("rocm", 1, 64), "llm-d/llm-d-rocm", "v0.7.0");
    if tpu {
        registry.push(&Layout::image("tpu", 1, 64), "llm-d/llm-d-tpu", "v0.6.0");
    }
    registry.push(&Layout::image("redis", 1, 64), "library/redis", "7");
    let text = (FAMILY.replace("ghcr.io", host).replace("docker.io", host))
        .replace("registry: {env: IMAGE_REGISTRY}\n", "");
    let dir = project(&text);
    for (sub, image) in [("cuda", "llm-d-cuda:v0.7.0"), ("rocm", "llm-d-rocm:v0.7.0")] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
        let text = (DEPLOYMENT.replace("IMAGE", &format!("{host}/llm-d/{image}")))
            .replace("redis:7", &format!("{host}/library/redis:7"));
        std::fs::write(dir.path().join(sub).join("ms.yaml"), text).unwrap();
    }
    dir
}

fn pin(dir: &std::path::Path, registry: &TestRegistry) -> std::process::Output {
    (berth(dir).args(["pin", "--insecure-registry", &registry.host]))
        .output()
        .unwrap()
}

#[test]
#[cfg_attr(
    not(feature = "test-registry"),
    ignore = "needs test-registry (run scripts/test)"
)]
fn pin_checks_each_variants_platform_and_version_and_pins_every_member() {
    let registry = TestRegistry::start(None);
    // The arm64 build is a single amd64 image: InferenceX#1582's class.
    let dir = family_in(&registry, false, true);
    let out = pin(dir.path(), &registry);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("component `modelserver` variant `gb200`:")
            && err.contains("linux/arm64")
            && err.contains("amd64 only"),
        "{err}"
    );
    assert!(!dir.path().join("berth.lock").exists(), "no partial lock");

    let registry = TestRegistry::start(None);
    // The family version one variant lacks.
    let dir = family_in(&registry, true, false);
    let err = String::from_utf8_lossy(&pin(dir.path(), &registry).stderr).to_string();
    assert!(
        err.contains("component `modelserver` variant `tpu`:") && err.contains("llm-d-tpu:v0.6.0"),
        "{err}"
    );
    assert!(!dir.path().join("berth.lock").exists(), "no partial lock");

    let registry = TestRegistry::start(None);
    let dir = family_in(&registry, true, true);
    let out = pin(dir.path(), &registry);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lock = std::fs::read_to_string(dir.path().join("berth.lock")).unwrap();
    let host = &registry.host;
    for (variant, image) in [
        (None, "llm-d-cuda:v0.7.0"),
        (Some("gb200"), "llm-d-cuda:v0.7.0-arm64"),
        (Some("rocm"), "llm-d-rocm:v0.7.0"),
        (Some("tpu"), "llm-d-tpu:v0.6.0"),
    ] {
        // The index's digest, as skopeo reads it, for the arm64 build too.
        let digest = registry.skopeo_digest(&format!("llm-d/{image}"), None);
        let entry = match variant {
            Some(v) => format!("- component: modelserver\n  variant: {v}\n  image: {host}/llm-d/{image}\n  digest: {digest}\n"),
            None => format!("- component: modelserver\n  image: {host}/llm-d/{image}\n  digest: {digest}\n"),
        };
        assert!(lock.contains(&entry), "{entry}\nin\n{lock}");
    }
    let out = (berth(dir.path()).args(["render", "--locked", "--profile", "rocm"]))
        .output()
        .unwrap();
    let rocm = registry.skopeo_digest("llm-d/llm-d-rocm:v0.7.0", None);
    assert_eq!(
        images(&out)[0],
        format!("{host}/llm-d/llm-d-rocm:v0.7.0@{rocm}")
    );

    // Every member is copied to the mirror, the suffixed build beside its family's.
    let target = TestRegistry::start(None);
    let out = berth(dir.path())
        .args([
            "mirror",
            "--locked",
            "--to",
            &format!("{}/mirror", target.host),
        ])
        .args(["--out", "mirror", "--insecure-registry", host])
        .args(["--insecure-registry", &target.host])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for image in [
        "llm-d-cuda:v0.7.0",
        "llm-d-cuda:v0.7.0-arm64",
        "llm-d-rocm:v0.7.0",
        "llm-d-tpu:v0.6.0",
    ] {
        let source = registry.skopeo_digest(&format!("llm-d/{image}"), None);
        let copied = target.skopeo_digest(&format!("mirror/llm-d/{image}"), None);
        assert_eq!(copied, source, "{image}");
    }
}

/// #49 item 6 from the command line: init reads a chart's accelerator values
/// files beside values.yaml (helm is not needed to propose).
#[test]
fn init_reads_a_charts_accelerator_values_files() {
    let dir = tempfile::tempdir().unwrap();
    let chart = dir.path().join("charts/server");
    std::fs::create_dir_all(chart.join("templates")).unwrap();
    let files = [
        ("Chart.yaml", "apiVersion: v2\nname: server\nversion: 0.1.0\nappVersion: '1.0.0'\n"),
        ("values.yaml", "image: {repository: quay.io/acme/server-cuda, tag: v2.0.0}\n"),
        ("values_xpu.yaml", "image: {repository: quay.io/acme/server-xpu}\n"),
        ("templates/d.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: s}\nspec:\n  containers:\n  - name: s\n    image: \"{{ .Values.image.repository }}:{{ .Values.image.tag }}\"\n"),
    ];
    for (name, text) in files {
        std::fs::write(chart.join(name), text).unwrap();
    }
    let out = berth(dir.path()).arg("init").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let yaml = std::fs::read_to_string(dir.path().join("berth.yaml")).unwrap();
    assert!(
        yaml.contains("    variants:\n      xpu:\n        image: quay.io/acme/server-xpu\n"),
        "{yaml}"
    );
    assert!(
        yaml.contains(
            "        - charts/server/values_xpu.yaml\n    variants:\n      server: xpu\n"
        ),
        "{yaml}"
    );
}
