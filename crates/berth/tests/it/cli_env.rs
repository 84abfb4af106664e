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
