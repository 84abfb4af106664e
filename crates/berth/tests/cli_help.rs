//! Every command's `--help` works (clap checks argument definitions only when
//! a command is parsed, so a clash would otherwise surface in users' hands).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

#[test]
fn every_command_has_help() {
    let dir = tempfile::tempdir().unwrap();
    for command in [
        "ref", "images", "env", "render", "validate", "pin", "promote", "sync", "apply", "diff",
        "rollback",
    ] {
        let out = common::berth(dir.path())
            .args([command, "--help"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "berth {command} --help: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("Usage: berth"),
            "berth {command} --help:\n{text}"
        );
    }
}
