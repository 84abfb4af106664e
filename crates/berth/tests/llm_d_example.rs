//! The fork scenario of the llm-d example: a Makefile, a shell script and a
//! test harness run through `berth env` all see the same images.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking

mod common;

use common::{berth, berth_path, repo_root, require_program};

const FORK_IMAGE: &str = "quay.io/developer-username/llm-d-inference-scheduler:my-feature-fix";
const FORK_ENV: [(&str, &str); 2] = [
    ("IMAGE_REGISTRY", "quay.io/developer-username"),
    ("EPP_TAG", "my-feature-fix"),
];

fn example() -> std::path::PathBuf {
    repo_root().join("examples/llm-d")
}

fn run(program: &str, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = std::process::Command::new(program);
    cmd.args(args).current_dir(example()).env_clear();
    cmd.env("PATH", std::env::var_os("PATH").unwrap_or_default());
    cmd.env("BERTH", berth_path());
    cmd.envs(env.iter().copied());
    cmd.output().unwrap()
}

fn epp_line(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.starts_with("EPP_IMAGE="))
        .unwrap_or_default()
        .to_string()
}

#[test]
fn makefile_script_and_harness_agree_on_the_fork_image() {
    let want = format!("EPP_IMAGE={FORK_IMAGE}");
    let images = berth(&example())
        .args(["images", "--output", "env"])
        .envs(FORK_ENV)
        .output()
        .unwrap();
    assert_eq!(epp_line(&images), want, "berth images");
    assert_eq!(
        epp_line(&run("sh", &["scripts/dev-env.sh"], &FORK_ENV)),
        want,
        "shell script"
    );
    let harness = berth(&example())
        .args(["env", "--", "python3", "test/e2e_images.py"])
        .envs(FORK_ENV)
        .output()
        .unwrap();
    assert_eq!(epp_line(&harness), want, "test harness via berth env");
    if require_program("make", "the example Makefile") {
        assert_eq!(
            epp_line(&run("make", &["-s", "print-images"], &FORK_ENV)),
            want,
            "Makefile"
        );
    }
}

#[test]
fn disagreeing_variables_stop_every_consumer() {
    let env = [
        (
            "EPP_IMAGE",
            "quay.io/developer-username/llm-d-inference-scheduler:a",
        ),
        ("EPP_TAG", "b"),
    ];
    let check = |out: std::process::Output, who: &str| {
        assert!(!out.status.success(), "{who} must fail");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("`EPP_IMAGE=") && stderr.contains("`EPP_TAG=b`"),
            "{who}: {stderr}"
        );
    };
    check(
        berth(&example())
            .args(["images"])
            .envs(env)
            .output()
            .unwrap(),
        "berth images",
    );
    check(run("sh", &["scripts/dev-env.sh"], &env), "shell script");
    check(
        berth(&example())
            .args(["env", "--", "python3", "test/e2e_images.py"])
            .envs(env)
            .output()
            .unwrap(),
        "berth env",
    );
    if require_program("make", "the example Makefile") {
        check(run("make", &["-s", "print-images"], &env), "Makefile");
    }
}

#[test]
fn the_example_renders_the_fork_and_validates() {
    let out = berth(&example())
        .arg("render")
        .envs(FORK_ENV)
        .output()
        .unwrap();
    insta::assert_snapshot!(common::transcript(&out));
    berth(&example()).arg("validate").assert().success();
}

#[test]
fn a_config_that_breaks_its_schema_is_reported() {
    let copy = tempfile::tempdir().unwrap();
    for file in [
        "berth.yaml",
        "deploy/epp.yaml",
        "deploy/sim.yaml",
        "config/epp-config.yaml",
        "config/epp-config.schema.json",
    ] {
        let to = copy.path().join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(example().join(file), to).unwrap();
    }
    std::fs::write(
        copy.path().join("config/epp-config.yaml"),
        "plugins:\n  - name: queue-scorer\n    weight: -1\n",
    )
    .unwrap();
    let out = berth(copy.path()).arg("validate").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "config/epp-config.yaml:3:13: /plugins/0/weight: -1 is less than the minimum of 0"
        ),
        "{stderr}"
    );
}
