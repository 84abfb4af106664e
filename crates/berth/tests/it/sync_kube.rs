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
        let out = self.ns.plane.kubectl_with(
            &self.ns.kubeconfig,
            &["apply", "-f", "-"],
            Some(&deployment(2)),
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
