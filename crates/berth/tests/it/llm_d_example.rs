//! The llm-d example (`examples/llm-d`, shaped like llm-d-router's tree): in the
//! fork scenario every consumer — `berth images`, the Makefile, the pull script
//! and the e2e harness run through `berth env`, and `berth render` of each
//! overlay — sees the same images, and the third-party image stays put.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking

use crate::common;

use std::path::Path;
use std::process::Output;

use common::{berth, berth_path};

const FORK_ENV: [(&str, &str); 2] = [
    ("IMAGE_REGISTRY", "quay.io/developer-username"),
    ("EPP_TAG", "my-feature-fix"),
];

/// What every consumer must see in the fork scenario.
const FORK_IMAGES: [(&str, &str); 4] = [
    (
        "EPP_IMAGE",
        "quay.io/developer-username/llm-d-router-endpoint-picker:my-feature-fix",
    ),
    (
        "SIDECAR_IMAGE",
        "quay.io/developer-username/llm-d-router-disagg-sidecar:dev",
    ),
    (
        "VLLM_IMAGE",
        "quay.io/developer-username/llm-d-inference-sim:v0.7.1",
    ),
    // Third-party (`registry: false`): the fork's registry does not move it.
    (
        "VLLM_RENDER_IMAGE",
        "docker.io/vllm/vllm-openai-cpu:v0.21.0",
    ),
];

/// The overlays, and the variable each container's image comes from.
const OVERLAYS: [&str; 2] = [
    "deploy/environments/dev/kind",
    "deploy/environments/dev/kgateway",
];
const CONTAINERS: [(&str, &str); 4] = [
    ("Deployment/llm-d-router-epp epp", "EPP_IMAGE"),
    (
        "Deployment/llm-d-router-epp vllm-render",
        "VLLM_RENDER_IMAGE",
    ),
    ("Deployment/vllm-sim-decode vllm", "VLLM_IMAGE"),
    ("Deployment/vllm-sim-decode routing-proxy", "SIDECAR_IMAGE"),
];

fn example() -> tempfile::TempDir {
    common::copy_example("llm-d")
}

/// `program args` in `dir` with only PATH, BERTH and `env` set.
fn run(dir: &Path, program: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = std::process::Command::new(program);
    cmd.args(args).current_dir(dir).env_clear();
    cmd.env("PATH", std::env::var_os("PATH").unwrap_or_default());
    cmd.env("BERTH", berth_path());
    cmd.envs(env.iter().copied());
    cmd.output().unwrap()
}

fn stdout(out: &Output, who: &str) -> String {
    assert!(
        out.status.success(),
        "{who} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// The `NAME=value` lines of an output that name the image variables.
fn image_lines(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| FORK_IMAGES.iter().any(|(v, _)| v == k))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn fork_lines() -> Vec<(String, String)> {
    FORK_IMAGES
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The `image:` values of a YAML stream, in order.
fn rendered_images(yaml: &str) -> Vec<String> {
    yaml.lines()
        .filter_map(|l| l.trim_start().strip_prefix("image: "))
        .map(str::to_string)
        .collect()
}

#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn every_consumer_sees_the_same_fork_images() {
    let dir = example();
    let dir = dir.path();
    let want = fork_lines();
    let images = berth(dir)
        .args(["images", "--output", "env"])
        .envs(FORK_ENV)
        .output()
        .unwrap();
    assert_eq!(image_lines(&stdout(&images, "berth images")), want);

    // The pull script, run through berth env, directly and from the Makefile.
    let mut dry = FORK_ENV.to_vec();
    dry.push(("DRY_RUN", "1"));
    let script = berth(dir)
        .args(["env", "--", "scripts/pull_images.sh"])
        .envs(dry.iter().copied())
        .output()
        .unwrap();
    assert_eq!(image_lines(&stdout(&script, "pull_images.sh")), want);
    {
        common::require_program(common::Group::Tools, "make");
        let printed = run(dir, "make", &["-s", "print-images"], &FORK_ENV);
        assert_eq!(image_lines(&stdout(&printed, "make print-images")), want);
        let pulled = run(dir, "make", &["-s", "image-pull"], &dry);
        assert_eq!(image_lines(&stdout(&pulled, "make image-pull")), want);
    }

    // The e2e harness fills the placeholders itself, from what berth env exports;
    // berth render fills them from berth.yaml. Same images, container by container.
    common::require_program(common::Group::Tools, "kubectl");
    let expected: Vec<String> = CONTAINERS
        .iter()
        .map(|(container, variable)| {
            let image = FORK_IMAGES.iter().find(|(v, _)| v == variable).unwrap().1;
            format!("{container} {image}")
        })
        .collect();
    for overlay in OVERLAYS {
        let harness = berth(dir)
            .args(["env", "--", "python3", "test/e2e/harness.py", overlay])
            .envs(FORK_ENV)
            .output()
            .unwrap();
        let harness = stdout(&harness, "the e2e harness");
        assert_eq!(harness.lines().collect::<Vec<_>>(), expected, "{overlay}");
        let render = berth(dir)
            .args(["render", overlay])
            .envs(FORK_ENV)
            .output()
            .unwrap();
        assert!(
            render.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&render.stderr)
        );
        let rendered = rendered_images(&stdout(&render, "berth render"));
        let from_harness: Vec<String> = harness
            .lines()
            .map(|l| l.rsplit(' ').next().unwrap().to_string())
            .collect();
        assert_eq!(
            rendered, from_harness,
            "{overlay}: berth render and the harness"
        );
        berth(dir)
            .args(["validate", "--strict", overlay])
            .envs(FORK_ENV)
            .assert()
            .success();
    }
}

/// llm-d #408 with make 4.3, which gives command-line variables to recipes but
/// not to `$(shell)`: `make X EPP_TAG=x`, `EPP_TAG=x make X`, `berth env -- make X
/// EPP_TAG=x` and a recipe running `berth env` all give `:x`.
#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn make_command_line_variables_reach_every_consumer() {
    common::require_program(common::Group::Tools, "make");
    let dir = example();
    let dir = dir.path();
    let want = "EPP_IMAGE=ghcr.io/llm-d/llm-d-router-endpoint-picker:my-fix";
    let epp = |out: &Output, who: &str| -> String {
        let text = stdout(out, who);
        text.lines()
            .find(|l| l.starts_with("EPP_IMAGE="))
            .unwrap_or_else(|| panic!("{who}: no EPP_IMAGE line in {text}"))
            .to_string()
    };
    let on_line = run(dir, "make", &["-s", "print-images", "EPP_TAG=my-fix"], &[]);
    assert_eq!(epp(&on_line, "make print-images EPP_TAG=my-fix"), want);
    let in_env = run(
        dir,
        "make",
        &["-s", "print-images"],
        &[("EPP_TAG", "my-fix")],
    );
    assert_eq!(epp(&in_env, "EPP_TAG=my-fix make print-images"), want);
    let under_env = run(
        dir,
        berth_path().to_str().unwrap(),
        &["env", "--", "make", "-s", "print-images", "EPP_TAG=my-fix"],
        &[],
    );
    assert_eq!(epp(&under_env, "berth env -- make … EPP_TAG=my-fix"), want);
    let recipe = run(dir, "make", &["-s", "print-epp", "EPP_TAG=my-fix"], &[]);
    assert_eq!(epp(&recipe, "a recipe running berth env"), want);
    let plain = run(
        dir,
        berth_path().to_str().unwrap(),
        &[
            "env",
            "--",
            "env",
            "EPP_TAG=my-fix",
            "sh",
            "-c",
            "echo EPP_IMAGE=$EPP_IMAGE",
        ],
        &[],
    );
    assert_eq!(epp(&plain, "berth env -- env EPP_TAG=my-fix sh -c …"), want);

    // The command line wins over the environment, as in make; a disagreement with a
    // full reference in the environment stops make, naming both.
    let wins = run(
        dir,
        "make",
        &["-s", "print-images", "EPP_TAG=my-fix"],
        &[("EPP_TAG", "other")],
    );
    assert_eq!(epp(&wins, "EPP_TAG=other make … EPP_TAG=my-fix"), want);
    let conflict = run(
        dir,
        berth_path().to_str().unwrap(),
        &["env", "--", "make", "-s", "print-images", "EPP_TAG=b"],
        &[("EPP_IMAGE", "ghcr.io/llm-d/llm-d-router-endpoint-picker:a")],
    );
    assert_eq!(conflict.status.code(), Some(1));
    insta::assert_snapshot!(String::from_utf8_lossy(&conflict.stderr), @"error: component `epp`: `EPP_IMAGE=ghcr.io/llm-d/llm-d-router-endpoint-picker:a` (environment) and `EPP_TAG=b` (command line of `make`) disagree (the full reference has tag `a`); unset one of them or make them agree");
    assert!(conflict.stdout.is_empty());
}

#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn an_explicit_always_in_an_overlay_is_kept_and_the_base_stays_if_not_present() {
    common::require_program(common::Group::Tools, "kubectl");
    let dir = example();
    let policy_of_epp = |overlay: &str| {
        let out = berth(dir.path())
            .args(["render", overlay])
            .output()
            .unwrap();
        let yaml = stdout(&out, "berth render");
        let at = yaml
            .find("image: ghcr.io/llm-d/llm-d-router-endpoint-picker:dev")
            .unwrap_or_else(|| panic!("{overlay}: the EPP image is missing:\n{yaml}"));
        let line = yaml[at..].lines().nth(1).unwrap().trim().to_string();
        line
    };
    assert_eq!(policy_of_epp(OVERLAYS[0]), "imagePullPolicy: IfNotPresent");
    // `pullPolicy: auto` on a `:dev` tag: the kgateway overlay's Always stays.
    assert_eq!(policy_of_epp(OVERLAYS[1]), "imagePullPolicy: Always");
}

#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn disagreeing_variables_stop_every_consumer() {
    let dir = example();
    let dir = dir.path();
    let env = [
        (
            "EPP_IMAGE",
            "quay.io/developer-username/llm-d-router-endpoint-picker:a",
        ),
        ("EPP_TAG", "b"),
    ];
    let check = |out: Output, who: &str| {
        assert!(!out.status.success(), "{who} must fail");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("`EPP_IMAGE=") && stderr.contains("`EPP_TAG=b`"),
            "{who}: {stderr}"
        );
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("EPP_IMAGE="),
            "{who} printed images after the error"
        );
    };
    check(
        berth(dir).arg("images").envs(env).output().unwrap(),
        "berth images",
    );
    check(
        berth(dir)
            .args(["env", "--", "scripts/pull_images.sh"])
            .envs(env)
            .env("DRY_RUN", "1")
            .output()
            .unwrap(),
        "berth env -- pull_images.sh",
    );
    check(
        berth(dir).arg("render").envs(env).output().unwrap(),
        "berth render",
    );
    {
        common::require_program(common::Group::Tools, "make");
        check(run(dir, "make", &["-s", "print-images"], &env), "Makefile");
    }
}

#[test]
fn the_pull_script_refuses_to_run_outside_berth_env() {
    let dir = example();
    let out = run(
        dir.path(),
        "bash",
        &["scripts/pull_images.sh"],
        &[("DRY_RUN", "1")],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("EPP_IMAGE is not set; run me as: berth env -- scripts/pull_images.sh"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn the_example_renders_the_fork_and_validates() {
    common::require_program(common::Group::Tools, "kubectl");
    let dir = example();
    let out = berth(dir.path())
        .arg("render")
        .envs(FORK_ENV)
        .output()
        .unwrap();
    insta::assert_snapshot!(common::transcript(&out));
    berth(dir.path())
        .args(["validate", "--strict"])
        .assert()
        .success();
}

#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn a_placeholder_berth_cannot_resolve_is_a_warning_with_its_place() {
    common::require_program(common::Group::Tools, "kubectl");
    let dir = example();
    // As llm-d's e-p-d-pools environment adds a coordinator under its own variable.
    let file = dir
        .path()
        .join("deploy/components/vllm-sim/deployment.yaml");
    let text = std::fs::read_to_string(&file).unwrap().replace(
        "      - name: vllm\n",
        "      - name: coordinator\n        image: ${COORDINATOR_IMAGE}\n      - name: vllm\n",
    );
    std::fs::write(&file, text).unwrap();
    let warning = "warning: kustomize deploy/environments/dev/kind:99:16 (Deployment/vllm-sim-decode): image `${COORDINATOR_IMAGE}` is a placeholder that names no component's variable (`env:`); add the component, or set its `env:` to this variable [unparsed-image]\n";
    let render = berth(dir.path()).arg("render").output().unwrap();
    assert!(render.status.success());
    assert_eq!(String::from_utf8_lossy(&render.stderr), warning);
    assert!(String::from_utf8_lossy(&render.stdout).contains("image: ${COORDINATOR_IMAGE}"));
    let validate = berth(dir.path()).arg("validate").output().unwrap();
    assert!(validate.status.success());
    assert_eq!(String::from_utf8_lossy(&validate.stderr), warning);
    let strict = berth(dir.path())
        .args(["validate", "--strict"])
        .output()
        .unwrap();
    assert_eq!(strict.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&strict.stderr),
        format!("{warning}error: 1 warning (errors under --strict)\n")
    );
}

#[test]
fn a_config_that_breaks_its_schema_is_reported() {
    let _filters = crate::common::snapshot_filters();
    let dir = example();
    std::fs::write(
        dir.path().join("deploy/config/sim-epp-config.yaml"),
        "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n  - type: max-score-picker\nschedulingProfiles:\n  - name: default\n    plugins:\n      - {pluginRef: max-score-picker, weight: -1}\n",
    )
    .unwrap();
    // No manifests needed to check a config: an empty overlay list is fine.
    let out = berth(dir.path())
        .args(["validate", "/dev/null"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    insta::assert_snapshot!(stderr, @"
    error: configs.epp-config: 1 violation(s) of deploy/config/epp-config.schema.json:
      deploy/config/sim-epp-config.yaml:8:47: /schedulingProfiles/0/plugins/0/weight: -1 is less than the minimum of 0
    ");
}
