#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking

use crate::common;

use common::{berth, transcript};

#[test]
fn ref_text_one_line_per_input_and_exit_1_on_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let out = berth(dir.path())
        .args([
            "ref",
            "nginx",
            "localhost:5000",
            "[::1]:5000/app:v1",
            "Foo",
            "ghcr.io/llm-d/x:dev",
        ])
        .output()
        .unwrap();
    insta::assert_snapshot!(transcript(&out));
}

#[test]
fn ref_json_has_every_field_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let digest = format!("sha256:{}", "a".repeat(64));
    let out = berth(dir.path())
        .args(["ref", "--output", "json", "nginx:1.25"])
        .arg(format!("quay.io/me/app:v1@{digest}"))
        .arg("UPPER/Case:ok")
        .arg("bad@md5:00")
        .output()
        .unwrap();
    insta::assert_snapshot!(transcript(&out));
}

#[test]
fn ref_all_valid_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    berth(dir.path())
        .args(["ref", "-o", "json", "alpine"])
        .assert()
        .success();
}

#[test]
fn usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    berth(dir.path()).args(["ref"]).assert().code(2);
    berth(dir.path())
        .args(["images", "--output", "xml"])
        .assert()
        .code(2);
    berth(dir.path())
        .args(["images", "--tag", "noequals"])
        .assert()
        .code(2);
}
