//! Every command's `--help` works (clap checks argument definitions only when
//! a command is parsed, so a clash would otherwise surface in users' hands).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
#[path = "cli_help/docs.rs"]
mod docs;
mod snippets;

#[test]
fn every_command_has_help() {
    let dir = tempfile::tempdir().unwrap();
    for command in ALL_COMMANDS {
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

fn stdout_of(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = common::berth(dir.path()).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "berth {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Every command, in `berth --help`'s order (checked against it below).
pub const ALL_COMMANDS: [&str; 24] = [
    "init",
    "ref",
    "images",
    "env",
    "render",
    "audit",
    "validate",
    "pin",
    "outdated",
    "update",
    "promote",
    "mirror",
    "push",
    "sync",
    "dev",
    "apply",
    "diff",
    "rollback",
    "gc",
    "controller",
    "completions",
    "schema",
    "man",
    "version",
];

/// The commands that do the work (not completions, schema, man, version).
const COMMANDS: &[&str] = ALL_COMMANDS.split_at(20).0;

#[test]
fn the_command_list_is_berths_own() {
    let help = stdout_of(&["--help"]);
    let listed: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        // A wrapped description continues deeper; a command is at two spaces.
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert_eq!(listed, ALL_COMMANDS);
}

#[test]
fn completions_cover_every_command_for_each_shell() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let script = stdout_of(&["completions", shell]);
        for command in COMMANDS {
            assert!(script.contains(command), "{shell} lacks `{command}`");
        }
        assert!(script.contains("load-restrictor"), "{shell}: global flags");
    }
    // bash (which the suite assumes, as its scripts do) can source what it prints.
    {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("c.bash"),
            stdout_of(&["completions", "bash"]),
        )
        .unwrap();
        let status = std::process::Command::new("bash")
            .args(["-c", "source c.bash && complete -p berth"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            status.status.success(),
            "{}",
            String::from_utf8_lossy(&status.stderr)
        );
    }
}

#[test]
fn the_man_page_has_a_section_per_command() {
    let page = stdout_of(&["man"]);
    assert!(page.contains(".TH berth 1"), "{}", &page[..200]);
    for command in COMMANDS {
        assert!(
            page.contains(&format!(".SH \"BERTH {}\"", command.to_uppercase())),
            "no section for {command}"
        );
    }
}

#[test]
fn version_says_version_commit_rust_and_target() {
    let text = stdout_of(&["version"]);
    assert!(
        text.starts_with(&format!("berth {} (commit ", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&stdout_of(&["version", "--output", "json"])).unwrap();
    for key in ["version", "commit", "rust", "target"] {
        assert!(
            json[key].as_str().is_some_and(|v| !v.is_empty()),
            "{key}: {json}"
        );
    }
    assert!(
        json["rust"].as_str().unwrap().starts_with("rustc "),
        "{json}"
    );
}
