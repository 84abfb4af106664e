//! `berth sync` against real podman containers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::podman::{local_tree, Podman, IMAGE};
use common::{berth, berth_path, project};

fn rule_project(extra: &str) -> tempfile::TempDir {
    let dir = project(&format!(
        "name: demo\nimages:\n  app: {{image: {IMAGE}}}\nsync:\n  - name: app\n    target: {{component: app}}\n    paths:\n      - {{from: src/, to: /app/}}\n    ignore: [\"**/*.swp\"]\n{extra}"
    ));
    std::fs::create_dir(dir.path().join("src")).unwrap();
    dir
}

fn sync_cmd(podman: &Podman, dir: &Path) -> assert_cmd::Command {
    let mut cmd = berth(dir);
    cmd.envs(podman.env()).args(["sync", "--engine", "podman"]);
    cmd
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
#[cfg_attr(
    not(feature = "test-podman"),
    ignore = "needs test-podman (run scripts/test)"
)]
fn once_mirrors_the_tree_and_runs_triggered_steps() {
    let _filters = crate::common::snapshot_filters();
    let podman = Podman::start();
    let dir = rule_project(
        "    run:\n      - {cmd: [touch, /tmp/reloaded], trigger: [\"src/bin/**\"]}\n      - {cmd: [touch, /tmp/never], trigger: [\"docs/**\"]}\n",
    );
    let src = dir.path().join("src");
    write(&src.join("a.txt"), "hello");
    write(&src.join("bin/run.sh"), "#!/bin/sh\necho hi\n");
    std::fs::set_permissions(
        src.join("bin/run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::create_dir_all(src.join("empty/dir")).unwrap();
    std::os::unix::fs::symlink("bin/run.sh", src.join("run")).unwrap();
    write(&src.join("x.swp"), "editor junk");
    let big = vec![b'z'; 3 * 1024 * 1024 + 7];
    std::fs::write(src.join("big.bin"), &big).unwrap();
    podman.container("web", &[]);
    podman.exec("web", &["mkdir", "-p", "/app/stale"]);
    podman.exec("web", &["touch", "/app/stale/old", "/app/gone"]);

    let out = sync_cmd(&podman, dir.path())
        .arg("--once")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("sync app (once): 7 written, 2 deleted, 3.0 MiB, 1 step -> 1 container in"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_file(src.join("x.swp")).unwrap(); // ignored: must not be in the container
    assert_eq!(podman.tree("web", "/app"), local_tree(&src));
    assert!(podman
        .exec("web", &["cat", "/tmp/reloaded"])
        .status
        .success());
    assert!(!podman.exec("web", &["cat", "/tmp/never"]).status.success());

    // Unchanged: nothing is sent and no step runs.
    podman.exec("web", &["rm", "/tmp/reloaded"]);
    let again = sync_cmd(&podman, dir.path())
        .arg("--once")
        .output()
        .unwrap();
    assert!(again.status.success());
    insta::assert_snapshot!(stderr(&again), @"sync app (once): 0 written, 0 deleted, 0 B, 0 steps -> 1 container in [time] ms");
    assert!(!podman
        .exec("web", &["cat", "/tmp/reloaded"])
        .status
        .success());

    // Dry run: the plan is printed, nothing changes.
    write(&src.join("bin/new"), "new");
    let dry = sync_cmd(&podman, dir.path())
        .args(["--once", "--dry-run"])
        .output()
        .unwrap();
    assert!(dry.status.success());
    assert_eq!(
        String::from_utf8_lossy(&dry.stdout),
        "app -> podman:web\n  write /app/bin/new (3 B)\n  run touch /tmp/reloaded\n"
    );
    assert!(!podman
        .exec("web", &["cat", "/app/bin/new"])
        .status
        .success());
}

#[test]
#[cfg_attr(
    not(feature = "test-podman"),
    ignore = "needs test-podman (run scripts/test)"
)]
fn files_are_owned_by_the_container_user() {
    let podman = Podman::start();
    let dir = rule_project("");
    write(&dir.path().join("src/a/b.txt"), "owned");
    podman.container("nonroot", &["--user", "1000:1000"]);
    let mk = podman
        .cmd()
        .args([
            "exec",
            "-u",
            "0",
            "nonroot",
            "sh",
            "-c",
            "mkdir /app && chown 1000:1000 /app",
        ])
        .output()
        .unwrap();
    assert!(mk.status.success());
    let out = sync_cmd(&podman, dir.path())
        .arg("--once")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let owners = podman.exec(
        "nonroot",
        &["stat", "-c", "%u:%g %n", "/app/a", "/app/a/b.txt"],
    );
    assert_eq!(
        String::from_utf8_lossy(&owners.stdout),
        "1000:1000 /app/a\n1000:1000 /app/a/b.txt\n"
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-podman"),
    ignore = "needs test-podman (run scripts/test)"
)]
fn bad_cases_say_what_is_wrong() {
    let _filters = crate::common::snapshot_filters();
    let podman = Podman::start();
    let dir = rule_project("");
    write(&dir.path().join("src/a.txt"), "a");

    // Nothing matches: what was looked for, and what runs.
    podman.container_with(&["run", "-d", "--name", "other", IMAGE, "/bin/sleep", "3600"]);
    let none = project(
        "name: demo\nsync:\n  - name: web\n    target: {container: web}\n    paths: [{from: src/, to: /app/}]\n",
    );
    std::fs::create_dir(none.path().join("src")).unwrap();
    let out = sync_cmd(&podman, none.path())
        .arg("--once")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!("error: sync rule `web`: no running container matches container `web` on podman; found podman:other ({IMAGE})\n")
    );

    // Permission denied: a non-root user cannot create /app under a root-owned `/`.
    podman.run(&["rm", "-f", "-t", "0", "other"]);
    podman.container("denied", &["--user", "1000"]);
    let out = sync_cmd(&podman, dir.path())
        .arg("--once")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!(stderr(&out), @"
    sync app (once): 1 written, 0 deleted, 1 B, 0 steps -> 1 container in [time] ms, 1 failed
      error: podman:denied: permission denied writing `/app` as uid 1000; make the directory writable by that user (chown it in the image) or sync somewhere it owns
    ");

    // Read-only root filesystem.
    podman.run(&["rm", "-f", "-t", "0", "denied"]);
    podman.container("ro", &["--read-only"]);
    let out = sync_cmd(&podman, dir.path())
        .arg("--once")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!(stderr(&out), @"
    sync app (once): 1 written, 0 deleted, 1 B, 0 steps -> 1 container in [time] ms, 1 failed
      error: podman:ro: `/app` is on a read-only filesystem; sync into a writable volume (emptyDir, a bind mount) or drop `readOnlyRootFilesystem` for development
    ");
    podman.run(&["rm", "-f", "-t", "0", "ro"]);

    // No tar in the image: named, with the fallback.
    podman.host_image(
        "localhost/no-tar:latest",
        &[("bin/sh", "dash"), ("bin/sleep", "sleep")],
    );
    let stripped = |image: &str, container: &str| {
        podman.container_with(&[
            "run",
            "-d",
            "--name",
            container,
            image,
            "/bin/sleep",
            "3600",
        ]);
        let dir = project(&format!(
            "name: demo\nsync:\n  - target: {{image: {image}}}\n    paths: [{{from: src/, to: /app/}}]\n"
        ));
        write(&dir.path().join("src/a.txt"), "a");
        let out = sync_cmd(&podman, dir.path())
            .arg("--once")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        podman.run(&["rm", "-f", "-t", "0", container]);
        stderr(&out)
    };
    let notar = stripped("localhost/no-tar:latest", "notar");
    insta::assert_snapshot!(notar, @"
    sync sync-0 (once): 1 written, 0 deleted, 1 B, 0 steps -> 1 container in [time] ms, 1 failed
      error: podman:notar: the container has no `tar`, which berth sync needs to unpack the files it sends; add it to the image (busybox provides sh, tar, find and sha256sum), or copy files without it using `podman cp LOCAL CONTAINER:PATH`
    ");

    // No shell at all.
    podman.image("localhost/no-sh:latest", &["sleep"]);
    let nosh = stripped("localhost/no-sh:latest", "nosh");
    insta::assert_snapshot!(nosh, @"
    sync sync-0 (once): 0 written, 0 deleted, 0 B, 0 steps -> 1 container in [time] ms, 1 failed
      error: podman:nosh: the container has no `sh`, which berth sync needs to apply an update in one exec; add it to the image (busybox provides sh, tar, find and sha256sum), or copy files without it using `podman cp LOCAL CONTAINER:PATH`
    ");

    // A symlink leaving the synced directory is reported and never written.
    podman.container("esc", &[]);
    std::os::unix::fs::symlink("../../etc/passwd", dir.path().join("src/escape")).unwrap();
    let out = sync_cmd(&podman, dir.path())
        .arg("--once")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    insta::assert_snapshot!(stderr(&out), @"
    warning: [tmp]/src/escape: would be written outside `/app` in the container (it is a symlink to `../../etc/passwd`, outside the synced directory); not sent
    sync app (once): 1 written, 0 deleted, 1 B, 0 steps -> 1 container in [time] ms
    ");
    assert!(!podman
        .exec("esc", &["readlink", "/app/escape"])
        .status
        .success());
    assert!(podman.exec("esc", &["cat", "/app/a.txt"]).status.success());
}

#[test]
fn engine_missing_and_no_rules_are_clear() {
    let dir = rule_project("");
    let out = berth(dir.path())
        .env("PATH", "/nonexistent")
        .args(["sync", "--once", "--engine", "podman"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "error: podman: `podman` is not installed or not on PATH; install it or pick another engine with --engine\n"
    );
    let empty = project("name: demo\n");
    let out = berth(empty.path())
        .args(["sync", "--once"])
        .output()
        .unwrap();
    assert!(
        stderr(&out).starts_with("error: berth.yaml has no `sync:` rules; add one"),
        "{}",
        stderr(&out)
    );
    let missing = project(
        "name: demo\nsync:\n  - name: web\n    target: {container: web}\n    paths:\n      - {from: nowhere/, to: /app/}\n",
    );
    let out = berth(missing.path())
        .args(["sync", "--once", "--engine", "podman"])
        .output()
        .unwrap();
    assert_eq!(
        stderr(&out),
        "error: berth.yaml:6:9: sync rule `web`: `from: nowhere/` does not exist; create it or correct the path (relative to the project directory)\n"
    );
    let out = berth(dir.path())
        .args(["sync", "nope", "--once"])
        .output()
        .unwrap();
    assert_eq!(
        stderr(&out),
        "error: no sync rule named `nope` in berth.yaml; its rules are: app\n"
    );
}

/// A running `berth sync` (watch mode), killed on drop.
struct Watching {
    child: Child,
    log: std::path::PathBuf,
}

impl Watching {
    fn start(podman: &Podman, dir: &Path) -> Watching {
        let log = dir.join("sync.log");
        let mut cmd = std::process::Command::new(berth_path());
        cmd.current_dir(dir)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap())
            .envs(podman.env())
            .args(["sync", "--engine", "podman", "--poll", "0.3"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap());
        let child = cmd.spawn().unwrap();
        let w = Watching { child, log };
        w.wait_log("watching for changes");
        w
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn wait_log(&self, needle: &str) {
        let start = Instant::now();
        while !self.log().contains(needle) {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "no `{needle}` in:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until the container's tree equals the local one.
fn converges(podman: &Podman, container: &str, src: &Path, step: &str, watching: &Watching) {
    let start = Instant::now();
    loop {
        let (remote, local) = (podman.tree(container, "/app"), local_tree(src));
        if remote == local {
            return;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let missing: Vec<_> = local
                .iter()
                .filter(|l| !remote.contains(l))
                .take(5)
                .collect();
            let extra: Vec<_> = remote
                .iter()
                .filter(|r| !local.contains(r))
                .take(5)
                .collect();
            panic!(
                "{step}: container never matched; missing {missing:?}, extra {extra:?}\nlog:\n{}",
                watching.log()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// podman, a project with `files` under src/, a container, and `berth sync`
/// watching, after its initial sync has converged.
fn live(
    rule_extra: &str,
    container: &str,
    files: &[(&str, &str)],
) -> (Podman, tempfile::TempDir, std::path::PathBuf, Watching) {
    let podman = Podman::start();
    let dir = rule_project(rule_extra);
    let src = dir.path().join("src");
    for (name, text) in files {
        write(&src.join(name), text);
    }
    podman.container(container, &[]);
    let w = Watching::start(&podman, dir.path());
    converges(&podman, container, &src, "initial sync", &w);
    (podman, dir, src, w)
}

#[test]
#[cfg_attr(
    not(feature = "test-podman"),
    ignore = "needs test-podman (run scripts/test)"
)]
fn watch_mode_keeps_the_container_equal_to_the_local_tree() {
    let (podman, _dir, src, w) = live("", "live", &[("keep.txt", "keep")]);

    write(&src.join("added.txt"), "added");
    converges(&podman, "live", &src, "add", &w);
    write(&src.join("keep.txt"), "modified");
    converges(&podman, "live", &src, "modify", &w);
    std::fs::rename(src.join("added.txt"), src.join("renamed.txt")).unwrap();
    converges(&podman, "live", &src, "rename", &w);
    std::fs::remove_file(src.join("renamed.txt")).unwrap();
    converges(&podman, "live", &src, "delete", &w);
    write(&src.join("d/e/f.txt"), "deep");
    std::fs::create_dir_all(src.join("d/empty")).unwrap();
    converges(&podman, "live", &src, "new directories", &w);
    std::fs::remove_dir_all(src.join("d")).unwrap();
    converges(&podman, "live", &src, "directory delete", &w);
    std::os::unix::fs::symlink("keep.txt", src.join("link")).unwrap();
    converges(&podman, "live", &src, "symlink", &w);
    write(&src.join("tool"), "#!/bin/sh\n");
    converges(&podman, "live", &src, "tool", &w);
    std::fs::set_permissions(src.join("tool"), std::fs::Permissions::from_mode(0o755)).unwrap();
    converges(&podman, "live", &src, "exec bit", &w);
    // A file becomes a directory and back.
    std::fs::remove_file(src.join("tool")).unwrap();
    write(&src.join("tool/inner"), "x");
    converges(&podman, "live", &src, "file to directory", &w);

    // A branch switch: 5,000 files appear across 50 directories, then half are replaced.
    for i in 0..5000 {
        write(
            &src.join(format!("gen/d{:02}/f{i:04}.txt", i % 50)),
            &format!("v1 {i}"),
        );
    }
    converges(&podman, "live", &src, "5,000 new files", &w);
    for i in 0..5000 {
        let path = src.join(format!("gen/d{:02}/f{i:04}.txt", i % 50));
        if i % 2 == 0 {
            std::fs::remove_file(&path).unwrap();
        } else {
            std::fs::write(&path, format!("v2 {i}")).unwrap();
        }
    }
    std::fs::remove_dir_all(src.join("gen/d07")).unwrap();
    converges(&podman, "live", &src, "branch switch", &w);
    assert!(!w.log().contains("error"), "{}", w.log());
}

#[test]
#[cfg_attr(
    not(feature = "test-podman"),
    ignore = "needs test-podman (run scripts/test)"
)]
fn restarted_and_new_containers_are_resynced_before_steps_run() {
    let steps = "    run:\n      - {cmd: [sh, -c, \"echo ran >> /tmp/steps\"]}\n";
    let (podman, _dir, src, w) = live(steps, "r1", &[("a.txt", "a"), ("b.txt", "b")]);

    // A restart keeps the filesystem: berth notices, compares hashes, sends nothing.
    podman.run(&["restart", "-t", "0", "r1"]);
    w.wait_log("sync app (restart): 0 written, 0 deleted, 0 B, 0 steps -> 1 container");

    // Drift inside the container, then a restart: only the differing file goes back.
    podman.exec("r1", &["sh", "-c", "echo drift > /app/a.txt"]);
    podman.run(&["restart", "-t", "0", "r1"]);
    w.wait_log("sync app (restart): 1 written, 0 deleted, 1 B, 1 step -> 1 container");
    converges(&podman, "r1", &src, "after restart", &w);
    let steps = podman.exec("r1", &["cat", "/tmp/steps"]);
    assert_eq!(
        String::from_utf8_lossy(&steps.stdout),
        "ran\nran\n",
        "initial sync and the resync each ran the step"
    );

    // A replacement container (new ID) gets everything.
    podman.run(&["rm", "-f", "-t", "0", "r1"]);
    podman.container("r2", &[]);
    w.wait_log("sync app (restart): 2 written");
    converges(&podman, "r2", &src, "new container", &w);
}

#[test]
#[cfg_attr(
    not(feature = "test-podman"),
    ignore = "needs test-podman (run scripts/test)"
)]
fn dockerignore_and_exec_only_rules() {
    let podman = Podman::start();
    let dir = project(&format!(
        "name: demo\nimages:\n  app: {{image: {IMAGE}}}\nsync:\n  - name: code\n    target: {{component: app}}\n    paths: [{{from: src/, to: /app/}}]\n    run: [{{cmd: [sh, -c, \"echo code >> /tmp/code-steps\"]}}]\n  - name: reload\n    target: {{container: exec-only}}\n    run:\n      - {{cmd: [sh, -c, \"echo reloaded >> /tmp/reloads\"], trigger: [\"conf/*.toml\"]}}\n"
    ));
    write(
        &dir.path().join(".dockerignore"),
        "# build output\nsrc/target/\n**/*.log\n!src/keep.log\n",
    );
    write(&dir.path().join("src/main.rs"), "fn main() {}");
    write(&dir.path().join("src/target/debug/big"), "ignored");
    write(&dir.path().join("src/a.log"), "ignored");
    write(&dir.path().join("src/keep.log"), "kept");
    write(&dir.path().join("conf/app.toml"), "a = 1");
    podman.container("exec-only", &[]);
    let w = Watching::start(&podman, dir.path());
    let start = std::time::Instant::now();
    loop {
        let tree = podman.tree("exec-only", "/app");
        if tree.iter().any(|l| l.starts_with("main.rs"))
            && tree.iter().any(|l| l.starts_with("keep.log"))
        {
            assert!(
                !tree
                    .iter()
                    .any(|l| l.starts_with("target") || l.starts_with("a.log")),
                "{tree:?}"
            );
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{tree:?}\n{}",
            w.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // An exec-only rule: a matching file change runs the step, with nothing synced.
    assert!(!podman
        .exec("exec-only", &["cat", "/tmp/reloads"])
        .status
        .success());
    write(&dir.path().join("conf/app.toml"), "a = 2");
    w.wait_log("sync reload (change): 0 written, 0 deleted, 0 B, 1 step -> 1 container");
    let reloads = podman.exec("exec-only", &["cat", "/tmp/reloads"]);
    assert_eq!(String::from_utf8_lossy(&reloads.stdout), "reloaded\n");
    write(&dir.path().join("conf/notes.txt"), "not a trigger");
    std::thread::sleep(Duration::from_millis(800));
    let reloads = podman.exec("exec-only", &["cat", "/tmp/reloads"]);
    assert_eq!(
        String::from_utf8_lossy(&reloads.stdout),
        "reloaded\n",
        "{}",
        w.log()
    );
    // The other rule's untriggered step ran for its initial sync only, not for conf/ edits.
    let code = podman.exec("exec-only", &["cat", "/tmp/code-steps"]);
    assert_eq!(
        String::from_utf8_lossy(&code.stdout),
        "code\n",
        "{}",
        w.log()
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-podman"),
    ignore = "needs test-podman (run scripts/test)"
)]
fn the_docker_cli_works_too() {
    let _filters = crate::common::snapshot_filters();
    let podman = Podman::start();
    common::require_program(common::Group::Podman, "docker");
    let docker_host = podman.docker_host();
    let dir = rule_project("");
    write(&dir.path().join("src/a/b.txt"), "through docker");
    podman.container("dockerized", &[]);
    let out = berth(dir.path())
        .env("DOCKER_HOST", &docker_host)
        .args(["sync", "--once", "--engine", "docker"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    insta::assert_snapshot!(stderr(&out), @"sync app (once): 2 written, 0 deleted, 14 B, 0 steps -> 1 container in [time] ms");
    assert_eq!(
        podman.tree("dockerized", "/app"),
        local_tree(&dir.path().join("src"))
    );
}
