//! `berth sync --engine kubernetes`: pods of the project's rendered workloads,
//! reached through kube-rs's exec client. No API server runs here, so a local
//! fake serves the pod list and the exec websocket, backed by real podman
//! containers (see `common/fake_kube.rs`); an opt-in test uses a real cluster.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::fake_kube::{write_kubeconfig, FakeKube, FakePod};
use common::podman::{local_tree, Podman, IMAGE};
use common::{berth, project};

const DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: app, image: IMAGE}]\n";

fn kube_project() -> tempfile::TempDir {
    let dir = project(&format!(
        "name: demo\nnamespace: dev\nmanifests: [deploy.yaml]\nimages:\n  app: {{image: {IMAGE}}}\nsync:\n  - name: app\n    target: {{component: app}}\n    paths: [{{from: src/, to: /app/}}]\n    run: [{{cmd: [touch, /tmp/reloaded]}}]\n"
    ));
    std::fs::write(
        dir.path().join("deploy.yaml"),
        DEPLOYMENT.replace("IMAGE", IMAGE),
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("src/sub")).unwrap();
    std::fs::write(dir.path().join("src/a.txt"), "a").unwrap();
    std::fs::write(dir.path().join("src/sub/b.txt"), "b").unwrap();
    dir
}

fn pod(name: &str, backing: &str, ready: bool) -> FakePod {
    FakePod {
        namespace: "dev".into(),
        name: name.into(),
        labels: BTreeMap::from([("app".to_string(), "web".to_string())]),
        containers: vec![("app".into(), IMAGE.into(), backing.into())],
        ready,
    }
}

fn sync(dir: &Path, kubeconfig: &Path) -> std::process::Output {
    berth(dir)
        .args(["sync", "--once", "--engine", "kubernetes", "--kubeconfig"])
        .arg(kubeconfig)
        .output()
        .unwrap()
}

#[test]
fn every_ready_replica_is_synced_through_exec() {
    let Some(podman) = Podman::start() else {
        return;
    };
    for name in ["replica-a", "replica-b", "not-ready"] {
        podman.container(name, &[]);
    }
    let kube = FakeKube::start(podman.env().to_vec());
    kube.add_pod(pod("web-5d9f-a", "replica-a", true));
    kube.add_pod(pod("web-5d9f-b", "replica-b", true));
    kube.add_pod(pod("web-5d9f-c", "not-ready", false));
    let dir = kube_project();
    let kubeconfig = kube.kubeconfig(dir.path());

    let out = sync(dir.path(), &kubeconfig);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("sync app (once): 3 written, 0 deleted, 2 B, 1 step -> 2 containers in"),
        "{stderr}"
    );
    let local = local_tree(&dir.path().join("src"));
    for replica in ["replica-a", "replica-b"] {
        assert_eq!(podman.tree(replica, "/app"), local, "{replica}");
        assert!(podman
            .exec(replica, &["cat", "/tmp/reloaded"])
            .status
            .success());
    }
    assert!(
        podman.tree("not-ready", "/app").is_empty(),
        "a pod that is not Ready is left alone"
    );

    // Unchanged: the hash comparison runs through exec too, and nothing is sent.
    let again = sync(dir.path(), &kubeconfig);
    assert!(String::from_utf8_lossy(&again.stderr)
        .contains("0 written, 0 deleted, 0 B, 0 steps -> 2 containers"));
}

#[test]
fn cluster_errors_are_clear() {
    // No pod runs, so no podman is needed behind the fake API server.
    let kube = FakeKube::start(Vec::new());
    let dir = kube_project();
    let kubeconfig = kube.kubeconfig(dir.path());

    // No pods: what was looked for, where, and that nothing runs.
    let out = sync(dir.path(), &kubeconfig);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("error: sync rule `app`: no running container matches component `app` (image repository localhost/berth-busybox) on kubernetes (http://127.0.0.1:"), "{stderr}");
    assert!(
        stderr.trim_end().ends_with("found no running containers"),
        "{stderr}"
    );

    // RBAC refusal names the verb, resource and namespace.
    kube.forbid(true);
    let out = sync(dir.path(), &kubeconfig);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(
            "error: kubernetes: forbidden: RBAC does not allow `list` on `pods` in namespace `dev`"
        ),
        "{stderr}"
    );

    // Unreachable API server.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let unreachable = write_kubeconfig(
        &dir.path().join("src/sub"),
        &format!("http://127.0.0.1:{port}"),
    );
    let out = sync(dir.path(), &unreachable);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot reach the API server"), "{stderr}");

    // No configuration at all.
    let home = tempfile::tempdir().unwrap();
    let out = berth(dir.path())
        .env("HOME", home.path())
        .args(["sync", "--once", "--engine", "kubernetes"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error: kubernetes: no cluster configuration"),
        "{stderr}"
    );
    assert!(
        stderr.contains("set KUBECONFIG, pass --kubeconfig, or run inside a pod"),
        "{stderr}"
    );
}

#[test]
fn no_workloads_in_the_manifests_is_an_error() {
    let dir = kube_project();
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
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: --engine kubernetes syncs into the pods of the project's workloads, and berth.yaml renders none"));
}

/// Opt-in: `BERTH_TEST_CLUSTER=1` with `KUBECONFIG` pointing at a disposable cluster
/// (kind or k3d; see the README). Creates namespace `berth-sync-test`, a busybox
/// Deployment with two replicas, syncs into both, checks through `kubectl exec`,
/// and deletes the namespace.
#[test]
#[ignore = "opt-in: needs a real cluster; run with BERTH_TEST_CLUSTER=1, KUBECONFIG and -- --ignored"]
fn real_cluster_sync() {
    if std::env::var("BERTH_TEST_CLUSTER").as_deref() != Ok("1")
        || std::env::var_os("KUBECONFIG").is_none()
    {
        panic!("opt-in test run without its cluster: set BERTH_TEST_CLUSTER=1 and KUBECONFIG to sync into a real cluster");
    }
    let kubectl = |args: &[&str]| {
        let out = std::process::Command::new("kubectl")
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let ns = "berth-sync-test";
    let _ = std::process::Command::new("kubectl")
        .args(["delete", "namespace", ns, "--wait"])
        .output();
    kubectl(&["create", "namespace", ns]);
    let dir = project(&format!(
        "name: demo\nnamespace: {ns}\nmanifests: [deploy.yaml]\nimages:\n  app: {{image: docker.io/library/busybox:1.36}}\nsync:\n  - target: {{component: app}}\n    paths: [{{from: src/, to: /tmp/app/}}]\n"
    ));
    let deploy = DEPLOYMENT
        .replace("IMAGE", "docker.io/library/busybox:1.36")
        .replace(
            "image: docker.io/library/busybox:1.36}",
            "image: docker.io/library/busybox:1.36, command: [sleep, \"3600\"]}",
        )
        .replace("spec:\n  selector", "spec:\n  replicas: 2\n  selector");
    std::fs::write(dir.path().join("deploy.yaml"), &deploy).unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/hello.txt"), "hello from berth").unwrap();
    let manifest = dir.path().join("deploy.yaml");
    kubectl(&["apply", "-n", ns, "-f", manifest.to_str().unwrap()]);
    kubectl(&[
        "rollout",
        "status",
        "-n",
        ns,
        "deployment/web",
        "--timeout=180s",
    ]);
    let out = berth(dir.path())
        .env("KUBECONFIG", std::env::var_os("KUBECONFIG").unwrap())
        .args(["sync", "--once", "--engine", "kubernetes"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for pod in kubectl(&["get", "pods", "-n", ns, "-l", "app=web", "-o", "name"]).lines() {
        assert_eq!(
            kubectl(&["exec", "-n", ns, pod, "--", "cat", "/tmp/app/hello.txt"]),
            "hello from berth"
        );
    }
    kubectl(&["delete", "namespace", ns, "--wait=false"]);
}
