#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking

use crate::common;

use common::{berth, project};

const PROJECT: &str = "name: demo\nimages:\n  web: {image: nginx}\n";

#[test]
fn runs_the_command_with_variables_and_passes_the_exit_status() {
    let dir = project(PROJECT);
    berth(dir.path())
        .args(["env", "--", "sh", "-c", "echo \"$WEB_IMAGE\"; exit 7"])
        .env("WEB_TAG", "1.27")
        .assert()
        .code(7)
        .stdout("docker.io/library/nginx:1.27\n");
}

#[test]
fn stdin_is_inherited() {
    let dir = project(PROJECT);
    berth(dir.path())
        .args(["env", "--", "cat"])
        .write_stdin("hello\n")
        .assert()
        .success()
        .stdout("hello\n");
}

#[test]
fn missing_command_is_127_with_a_message() {
    let dir = project(PROJECT);
    let out = berth(dir.path())
        .args(["env", "--", "no-such-program-xyz"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("command `no-such-program-xyz` not found")
    );
}

#[test]
fn a_resolution_error_runs_nothing() {
    let dir = project(PROJECT);
    let marker = dir.path().join("ran");
    let out = berth(dir.path())
        .args(["env", "--", "touch"])
        .arg(&marker)
        .env("WEB_IMAGE", "nginx:a")
        .env("WEB_TAG", "b")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(!marker.exists(), "the command must not run");
}

#[test]
fn the_command_must_follow_a_double_dash() {
    let dir = project(PROJECT);
    berth(dir.path()).args(["env"]).assert().code(2);
    berth(dir.path()).args(["env", "make"]).assert().code(2);
}

/// #36 item 6: a make word that feeds, in the Makefile, a variable berth sets
/// (`EPP_IMAGE ?= $(EPP_IMAGE_TAG_BASE):$(EPP_TAG)`) would change nothing under
/// `berth env` (the environment wins over `?=`): it is refused before make
/// runs, with the fix, instead of berth's answer winning silently.
#[test]
fn a_make_word_berth_would_shadow_is_refused() {
    let dir = project("name: x\nimages:\n  epp: {image: ghcr.io/llm-d/epp:dev}\n");
    std::fs::write(
        dir.path().join("Makefile"),
        "EPP_IMAGE_TAG_BASE ?= ghcr.io/llm-d/epp\nEPP_TAG ?= dev\nEPP_IMAGE ?= $(EPP_IMAGE_TAG_BASE):$(EPP_TAG)\nenv:\n\t@echo $(EPP_IMAGE)\n",
    )
    .unwrap();
    let out = berth(dir.path())
        .args([
            "env",
            "--",
            "make",
            "-s",
            "env",
            "EPP_IMAGE_TAG_BASE=quay.io/me/epp",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "make did not run");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: `EPP_IMAGE_TAG_BASE=quay.io/me/epp` (command line of `make`) feeds the Makefile's `EPP_IMAGE ?= $(EPP_IMAGE_TAG_BASE):$(EPP_TAG)` (Makefile:3), but berth sets `EPP_IMAGE` for the command, which wins over `?=`, so the word would change nothing: give the override to berth (`EPP_IMAGE=…`, or `repositoryEnv: EPP_IMAGE_TAG_BASE` on component `epp` in berth.yaml)\n"
    );
}
