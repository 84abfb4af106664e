//! `berth sync --engine kubernetes` through a real control plane
//! (`common/testenv.rs`): pods of the project's rendered workloads are found through
//! kube-apiserver, and exec goes berth → kube-apiserver → kwok (playing the kubelet)
//! → `sh` and `tar`, which kwok's `ClusterExec` runs as local processes. So a sync
//! into `to: /some/dir` lands in that directory on this machine, which the tests
//! read back; every replica writes the same directory, and a `run` step appends a
//! line per container to tell them apart.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::Path;

use common::podman::local_tree;
use common::testenv::{plane, Namespace};
use common::{berth, project};

const IMAGE: &str = "ghcr.io/acme/app:v1";

fn deployment(replicas: u32) -> String {
    format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web}}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n      containers: [{{name: app, image: {IMAGE}}}]\n")
}

struct Setup {
    ns: Namespace,
    dir: tempfile::TempDir,
    /// Where the containers' `/app` lands (kwok runs exec on this machine).
    target: tempfile::TempDir,
}

fn setup(prefix: &str) -> Setup {
    let ns = plane().namespace(prefix);
    let target = tempfile::tempdir().unwrap();
    let to = target.path().join("app");
    let runs = target.path().join("runs");
    let dir = project(&format!(
        "name: demo\nmanifests: [deploy.yaml]\nimages:\n  app: {{image: {IMAGE}}}\nsync:\n  - name: app\n    target: {{component: app}}\n    paths: [{{from: src/, to: {}/}}]\n    run: [{{cmd: [sh, -c, \"echo ran >> {}\"]}}]\n",
        to.display(),
        runs.display()
    ));
    std::fs::write(dir.path().join("deploy.yaml"), deployment(2)).unwrap();
    std::fs::create_dir_all(dir.path().join("src/sub")).unwrap();
    std::fs::write(dir.path().join("src/a.txt"), "a").unwrap();
    std::fs::write(dir.path().join("src/sub/b.txt"), "b").unwrap();
    std::fs::set_permissions(
        dir.path().join("src/a.txt"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    Setup { ns, dir, target }
}

impl Setup {
    fn sync(&self, kubeconfig: &Path) -> std::process::Output {
        berth(self.dir.path())
            .args(["sync", "--once", "--engine", "kubernetes", "--kubeconfig"])
            .arg(kubeconfig)
            .output()
            .unwrap()
    }

    fn runs(&self) -> usize {
        std::fs::read_to_string(self.target.path().join("runs"))
            .unwrap_or_default()
            .lines()
            .count()
    }

    /// Applies the workload with kubectl and waits for its rollout.
    fn deploy(&self) {
        self.deploy_replicas(2);
    }

    fn deploy_replicas(&self, replicas: u32) {
        let out = self.ns.plane.kubectl_with(
            &self.ns.kubeconfig,
            &["apply", "-f", "-"],
            Some(&deployment(replicas)),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.ns
            .ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    }
}

/// The processes of the exec streams `berth sync` keeps open into `s`'s pods:
/// kwok runs each exec as a local `sh -c SCRIPT`, whose script (berth's session
/// script, with this test's own step in it) names the test's `runs` file. A
/// shell's own subshells (a pipeline or `$(…)` while it applies an update) carry
/// the same command line until they exec: they are not streams, and are left
/// out by their parent being one.
fn stream_shells(s: &Setup) -> Vec<u32> {
    let runs = s.target.path().join("runs").display().to_string();
    let mut shells = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline);
        if cmdline.contains("run_step()") && cmdline.contains(&runs) {
            shells.push((pid, parent_of(pid)));
        }
    }
    let pids: Vec<u32> = shells.iter().map(|(pid, _)| *pid).collect();
    shells
        .into_iter()
        .filter(|(_, parent)| !parent.is_some_and(|p| pids.contains(&p)))
        .map(|(pid, _)| pid)
        .collect()
}

/// `pid`'s parent, from `/proc/PID/stat` (the field after the state, which
/// follows the parenthesised command name); `None` once it has exited.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, after_name) = stat.rsplit_once(')')?;
    after_name.split_whitespace().nth(1)?.parse().ok()
}

/// Waits (30 s at most) until `check` holds, saying `what` and the sync log if not.
fn until(what: &str, log: &Path, mut check: impl FnMut() -> bool) {
    let started = std::time::Instant::now();
    while !check() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{what}, after 30 s; berth sync said:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// `berth sync` watching, stopped on drop.
struct Watching(std::process::Child);

impl Drop for Watching {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn updates_go_over_one_exec_stream_and_none_is_lost_when_it_is_cut_or_the_pod_replaced() {
    let s = setup("sync-stream");
    s.deploy_replicas(1);
    let log = s.target.path().join("sync.log");
    let _watching = Watching(
        std::process::Command::new(common::berth_path())
            .current_dir(s.dir.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .args([
                "sync",
                "--engine",
                "kubernetes",
                "--poll",
                "0.3",
                "--kubeconfig",
            ])
            .arg(&s.ns.kubeconfig)
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    until("no `watching` line", &log, || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("watching for changes"))
    });
    let landed = s.target.path().join("app/a.txt");
    let edit = |text: &str| {
        std::fs::write(s.dir.path().join("src/a.txt"), text).unwrap();
    };
    let arrives = |text: &str| {
        until(&format!("`{text}` never arrived"), &log, || {
            std::fs::read_to_string(&landed).is_ok_and(|t| t == text)
        });
    };

    // Five edits, one stream: the same shell process answers every one.
    edit("edit 0");
    arrives("edit 0");
    let shells = stream_shells(&s);
    assert_eq!(shells.len(), 1, "one stream into the one pod: {shells:?}");
    for i in 1..5 {
        edit(&format!("edit {i}"));
        arrives(&format!("edit {i}"));
    }
    // A stream the plane cuts by itself (a loaded machine) is said on the update's
    // line and opened again: every other shell is one of those, never unexplained.
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    let breaks = said.matches("its warm shell broke").count();
    assert!(
        breaks == 0 && stream_shells(&s) == shells || stream_shells(&s).len() <= 1 + breaks,
        "the stream stayed open, or each new one follows a break berth reported; \
         shells {:?} (first {shells:?}); berth sync said:\n{said}",
        stream_shells(&s)
    );
    assert!(breaks <= 1, "more than one break in five edits:\n{said}");

    // The stream cut while updates are under way, at different moments: each
    // update goes over an exec instead, and the stream is opened again.
    for (i, wait) in [0u64, 30, 60, 120].into_iter().enumerate() {
        let text = format!("cut {i}");
        edit(&text);
        std::thread::sleep(std::time::Duration::from_millis(wait));
        for pid in stream_shells(&s) {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
        }
        arrives(&text);
    }
    std::thread::sleep(std::time::Duration::from_millis(1100)); // the first wait to reopen
    edit("after the cuts");
    arrives("after the cuts");
    until("no stream opened again", &log, || {
        stream_shells(&s).len() == 1
    });

    // A new pod: a new stream serves its container. (berth closes the old one; kwok,
    // unlike a kubelet, does not end an exec whose stream closed, so the old shell
    // may stay until the end of this test.)
    let before = stream_shells(&s);
    s.ns.ok(&["delete", "pods", "-l", "app=web", "--wait=false"]);
    s.ns.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    let mut i = 0;
    until("no stream into the new pod", &log, || {
        i += 1;
        let text = format!("new pod {i}");
        edit(&text);
        arrives(&text);
        stream_shells(&s).iter().any(|pid| !before.contains(pid))
    });
    let synced = std::fs::read_to_string(&log).unwrap();
    assert!(!synced.contains("error"), "{synced}");
    drop(_watching);
    for pid in stream_shells(&s) {
        let _ = std::process::Command::new("kill")
            .arg(pid.to_string())
            .status();
    }
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn every_ready_replica_is_synced_through_exec() {
    let _filters = crate::common::snapshot_filters();
    let s = setup("sync");
    s.deploy();
    // A pod with the workload's labels that no node takes: Pending, never Ready, left alone.
    let pending = format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: web-pending, labels: {{app: web}}}}\nspec:\n  nodeSelector: {{berth.dev/test: nowhere}}\n  containers: [{{name: app, image: {IMAGE}}}]\n");
    let out =
        s.ns.plane
            .kubectl_with(&s.ns.kubeconfig, &["apply", "-f", "-"], Some(&pending));
    assert!(out.status.success(), "{}", stderr(&out));

    let out = s.sync(&s.ns.kubeconfig);
    let log = stderr(&out);
    assert!(out.status.success(), "{log}");
    assert!(
        log.contains("sync app (once): 3 written, 0 deleted, 2 B, 1 step -> 2 containers in"),
        "{log}"
    );
    assert_eq!(
        local_tree(&s.target.path().join("app")),
        local_tree(&s.dir.path().join("src")),
        "files, directories and the exec bit arrived"
    );
    // Both replicas write the same directory of this machine, so the one whose hash
    // comparison comes second may find the files already there and, correctly, send
    // nothing and run nothing. In a real cluster each has its own filesystem.
    let runs = s.runs();
    assert!(
        (1..=2).contains(&runs),
        "the step ran in one or both Ready replicas, never in the Pending pod: {runs}"
    );

    // Unchanged: the hash comparison runs through exec too, and nothing is sent.
    let again = s.sync(&s.ns.kubeconfig);
    insta::assert_snapshot!(stderr(&again), @"sync app (once): 0 written, 0 deleted, 0 B, 0 steps -> 2 containers in [time] ms");
    // A local change reaches both replicas; a deleted file is deleted.
    std::fs::write(s.dir.path().join("src/a.txt"), "changed").unwrap();
    std::fs::remove_file(s.dir.path().join("src/sub/b.txt")).unwrap();
    let out = s.sync(&s.ns.kubeconfig);
    insta::assert_snapshot!(stderr(&out), @"sync app (once): 1 written, 1 deleted, 7 B, 1 step -> 2 containers in [time] ms");
    assert_eq!(
        local_tree(&s.target.path().join("app")),
        local_tree(&s.dir.path().join("src"))
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn cluster_errors_are_clear() {
    let _filters = crate::common::snapshot_filters();
    let s = setup("sync-errors");
    let ns = &s.ns.name;
    // No pods: what was looked for, where, and that nothing runs.
    let out = s.sync(&s.ns.kubeconfig);
    assert_eq!(out.status.code(), Some(1));
    let log = stderr(&out);
    assert!(log.starts_with("error: sync rule `app`: no running container matches component `app` (image repository ghcr.io/acme/app) on kubernetes (https://127.0.0.1:"), "{log}");
    assert!(log.contains(&format!("namespace {ns})")), "{log}");
    assert!(
        log.trim_end().ends_with("found no running containers"),
        "{log}"
    );

    // RBAC refusal names the verb, resource and namespace: a ServiceAccount with no Role.
    s.ns.ok(&["create", "serviceaccount", "nobody"]);
    let nobody = s.ns.token_kubeconfig("nobody");
    let out = s.sync(&nobody);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with(&format!(
            "error: kubernetes: forbidden: RBAC does not allow `list` on `pods` in namespace `{ns}`"
        )),
        "{}",
        stderr(&out)
    );

    // Unreachable API server.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let unreachable = s.target.path().join("unreachable-kubeconfig");
    std::fs::write(
        &unreachable,
        format!("apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\nusers: [{{name: u, user: {{}}}}]\ncontexts: [{{name: c, context: {{cluster: c, user: u, namespace: dev}}}}]\ncurrent-context: c\n"),
    )
    .unwrap();
    let out = s.sync(&unreachable);
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!(stderr(&out), @"error: kubernetes: cannot reach the API server at http://127.0.0.1:[port]/ (Connection refused (os error 111)); is the cluster up and the kubeconfig current?");

    // No configuration at all.
    let home = tempfile::tempdir().unwrap();
    let out = berth(s.dir.path())
        .env("HOME", home.path())
        .args(["sync", "--once", "--engine", "kubernetes"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let log = stderr(&out);
    assert!(
        log.starts_with("error: kubernetes: no cluster configuration"),
        "{log}"
    );
    assert!(
        log.contains("set KUBECONFIG, pass --kubeconfig, or run inside a pod"),
        "{log}"
    );
}

#[test]
fn no_workloads_in_the_manifests_is_an_error() {
    let dir = project(&format!(
        "name: demo\nmanifests: [deploy.yaml]\nimages:\n  app: {{image: {IMAGE}}}\nsync:\n  - target: {{component: app}}\n    paths: [{{from: src/, to: /app/}}]\n"
    ));
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("deploy.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    )
    .unwrap();
    let out = berth(dir.path())
        .args(["sync", "--once", "--engine", "kubernetes"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("error: --engine kubernetes syncs into the pods of the project's workloads, and berth.yaml renders none"), "{}", stderr(&out));
}
