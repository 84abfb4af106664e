//! Helpers shared by the CLI tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;

pub mod controller;
pub mod gitops;
pub mod podman;
pub mod registry;
pub mod rekor;
pub mod standin;
pub mod testenv;

/// The `berth` binary under test, with a clean environment (PATH kept) so
/// that variables of the developer's shell never leak into a test.
pub fn berth(dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("berth").expect("berth binary is built by cargo test");
    cmd.current_dir(dir).env_clear();
    if let Some(path) = std::env::var_os("PATH") {
        cmd.env("PATH", path);
    }
    cmd
}

/// Path of the built `berth` binary, for scripts and Makefiles.
pub fn berth_path() -> PathBuf {
    assert_cmd::cargo::cargo_bin("berth")
}

/// The repository's root directory.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root exists")
}

/// A temporary project directory holding `berth.yaml` with `content`.
pub fn project(content: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("berth.yaml"), content).expect("write berth.yaml");
    dir
}

/// Writes `content` to `dir/path`, making the directories above it.
pub fn write(dir: &Path, path: &str, content: impl AsRef<[u8]>) {
    let path = dir.join(path);
    std::fs::create_dir_all(path.parent().expect("a file path")).expect("create directories");
    std::fs::write(path, content).expect("write file");
}

/// A private copy of `examples/NAME` (tests run in parallel, and examples'
/// Makefiles write next to themselves), without files the examples ignore.
pub fn copy_example(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(&repo_root().join("examples").join(name), dir.path());
    dir
}

/// A copy of the tree `from` at `to` (generated files of a local run left out).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create a directory of the copy");
    for entry in std::fs::read_dir(from).expect("list the tree") {
        let entry = entry.expect("list the tree");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else if entry.file_name() != ".berth-images.mk" {
            std::fs::copy(entry.path(), target).expect("copy a file");
        }
    }
}

/// `exit: N` then stdout then stderr, for snapshots.
pub fn transcript(out: &Output) -> String {
    format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        out.status
            .code()
            .map_or("signal".to_string(), |c| c.to_string()),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Snapshot filters for what changes from run to run: temporary directories,
/// loopback ports, digests, timings and test namespaces. Bound for the rest of
/// the calling scope: `let _filters = common::snapshot_filters();`.
pub fn snapshot_filters() -> impl Drop {
    let mut settings = insta::Settings::clone_current();
    // TMPDIR (scripts/test sets one per run) before the usual /tmp.
    let tmp = std::env::temp_dir().display().to_string();
    let escaped: String = tmp
        .trim_end_matches('/')
        .chars()
        .flat_map(|c| {
            (!c.is_alphanumeric() && c != '/')
                .then_some('\\')
                .into_iter()
                .chain([c])
        })
        .collect();
    settings.add_filter(&format!(r"{escaped}/\.tmp[A-Za-z0-9]+"), "[tmp]");
    for (pattern, replacement) in [
        // Temporary directories (tempfile's `.tmpXXXXXX`), with or without /private or /var.
        (r"(/private)?(/var)?/tmp/\.tmp[A-Za-z0-9]+", "[tmp]"),
        (r"\b(127\.0\.0\.1|localhost):\d{2,5}\b", "$1:[port]"),
        (r"sha256:[0-9a-f]{64}", "sha256:[digest]"),
        // What a run measured ("in 84 ms"); limits and timeouts ("within 3 s") stay.
        (r"\bin \d+(\.\d+)? (ms|s)\b", "in [time] $2"),
        // Test namespaces: `<prefix>-<pid>-<n>`.
        (r"\b([a-z][a-z0-9-]*?)-\d+-\d+\b", "$1-[ns]"),
    ] {
        settings.add_filter(pattern, replacement);
    }
    settings.bind_to_scope()
}

/// What a test needs beyond cargo, in the groups the `test-*` features of the
/// `berth` package name. `scripts/test` (the README's test command) enables the
/// groups this machine has (all of them under `CI=true`); a test of a group that
/// is off is marked `#[cfg_attr(not(feature = "test-…"), ignore = "needs …")]`,
/// so it shows as ignored, with its reason, in the summary line — never as passed.
#[derive(Clone, Copy, Debug)]
pub enum Group {
    /// A Kubernetes control plane (`scripts/testenv`, built with Go) and its helm.
    Plane,
    /// Flux and Argo CD running in that plane (`scripts/testenv up --gitops --argocd`).
    Gitops,
    /// podman, runc, busybox and the docker CLI: real containers for `berth sync`.
    Podman,
    /// docker-registry, skopeo and htpasswd: a real OCI registry.
    Registry,
    /// kubectl (kustomize v5), GNU make, python3 and bash.
    Tools,
}

impl Group {
    /// The cargo feature that turns the group on.
    pub fn feature(self) -> &'static str {
        match self {
            Group::Plane => "test-plane",
            Group::Gitops => "test-gitops",
            Group::Podman => "test-podman",
            Group::Registry => "test-registry",
            Group::Tools => "test-tools",
        }
    }

    fn enabled(self) -> bool {
        match self {
            Group::Plane => cfg!(feature = "test-plane"),
            Group::Gitops => cfg!(feature = "test-gitops"),
            Group::Podman => cfg!(feature = "test-podman"),
            Group::Registry => cfg!(feature = "test-registry"),
            Group::Tools => cfg!(feature = "test-tools"),
        }
    }

    /// Panics unless the running test may use this group: its feature is on
    /// (a test using it without being marked would run where it cannot).
    pub fn check(self) {
        assert!(
            self.enabled(),
            "this test needs {0} but is not marked so: add \
             #[cfg_attr(not(feature = \"{0}\"), ignore = \"needs …\")] to it",
            self.feature()
        );
    }
}

/// Requires `program` of `group` for the running test. The group's feature says the
/// program is here, so a missing one is a failure, never a skip: install it (see
/// .ci/run) or let `scripts/test` turn the group off on this machine.
pub fn require_program(group: Group, program: &str) {
    group.check();
    let found = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
        .unwrap_or(false);
    assert!(
        found,
        "`{program}` is not on PATH, but {} is on: install it (see .ci/run), or run \
         scripts/test, which turns on only the groups this machine has",
        group.feature()
    );
}
