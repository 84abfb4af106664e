//! Flux end to end on the test control plane (`scripts/testenv up --gitops`: Flux's
//! source-controller and kustomize-controller run beside it): berth renders and pushes
//! a Flux OCI artifact to a real registry, an `OCIRepository` and a `Kustomization`
//! with `prune: true` apply it, a config edit makes a new generation — and the old one
//! stays while the old ReplicaSet's pods use it, until berth's controller removes it
//! after the rollout. The same with `--gitops none` shows what Flux does alone: it
//! prunes the old generation while old pods still run on it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common;
use common::registry::TestRegistry;
use common::testenv::{plane, Namespace, Plane};
use common::{berth, project};

/// The plane, in which Flux must run (the test needs `test-gitops`).
fn flux_plane() -> &'static Plane {
    common::Group::Gitops.check();
    let plane = plane();
    let out = plane.kubectl(&["get", "crd", "ocirepositories.source.toolkit.fluxcd.io"]);
    assert!(
        out.status.success(),
        "Flux is not running in the test control plane (scripts/test starts it; by hand: \
         `scripts/testenv up --gitops DIR`)"
    );
    plane
}

fn berth_yaml(level: &str, gitops: &str) -> String {
    format!("name: shop\nmanifests: [deploy.yaml]\ngitops: {gitops}\nimages:\n  web: {{image: ghcr.io/acme/web:v1}}\nconfigs:\n  web-config: {{literals: [LEVEL={level}]}}\n")
}

/// Old pods stay `MIN_READY` seconds after their replacement is ready: the window in
/// which an engine that prunes at once leaves them without their config.
const MIN_READY: u32 = 10;

fn deploy_yaml() -> String {
    format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web}}\nspec:\n  replicas: 1\n  minReadySeconds: {MIN_READY}\n  strategy: {{rollingUpdate: {{maxUnavailable: 0, maxSurge: 1}}}}\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n      containers: [{{name: web, image: ghcr.io/acme/web:v1, envFrom: [{{configMapRef: {{name: web-config}}}}]}}]\n")
}

struct Setup {
    ns: Namespace,
    registry: TestRegistry,
    dir: tempfile::TempDir,
    gitops: &'static str,
}

impl Setup {
    fn push(&self, level: &str) {
        std::fs::write(
            self.dir.path().join("berth.yaml"),
            berth_yaml(level, self.gitops),
        )
        .unwrap();
        let target = format!("oci://{}/{}:main", self.registry.host, self.ns.name);
        let out = berth(self.dir.path())
            .args(["push", &target, "--insecure-registry", &self.registry.host])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Asks Flux to look again now, instead of at its next interval.
    fn reconcile_now(&self) {
        let now = format!("{:?}", Instant::now());
        for object in ["ocirepository/shop", "kustomization/shop"] {
            self.ns.ok(&[
                "annotate",
                "--overwrite",
                object,
                &format!("reconcile.fluxcd.io/requestedAt={now}"),
            ]);
        }
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["get"];
        all.extend(args);
        all.extend(["-o", "json"]);
        serde_json::from_str(&self.ns.ok(&all)).unwrap()
    }

    fn kustomization_ready(&self) -> bool {
        self.json(&["kustomization", "shop"])["status"]["conditions"]
            .as_array()
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
    }
}

fn setup(prefix: &str, gitops: &'static str) -> Setup {
    let plane = flux_plane();
    let registry = TestRegistry::start(None);
    let ns = plane.namespace(prefix);
    let dir = project(&berth_yaml("one", gitops));
    std::fs::write(dir.path().join("deploy.yaml"), deploy_yaml()).unwrap();
    let s = Setup {
        ns,
        registry,
        dir,
        gitops,
    };
    s.push("one");
    let flux = format!(
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata: {{name: shop}}\nspec:\n  interval: 1m\n  insecure: true\n  url: oci://{host}/{ns}\n  ref: {{tag: main}}\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: shop}}\nspec:\n  interval: 1m\n  prune: true\n  wait: false\n  path: ./\n  targetNamespace: {ns}\n  sourceRef: {{kind: OCIRepository, name: shop}}\n",
        host = s.registry.host,
        ns = s.ns.name
    );
    let out =
        s.ns.plane
            .kubectl_with(&s.ns.kubeconfig, &["apply", "-f", "-"], Some(&flux));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait(
        &s,
        120,
        "Flux applies the first generation and it rolls out",
        |s| {
            s.kustomization_ready()
                && s.ns
                    .kubectl(&["rollout", "status", "deployment/web", "--timeout=1s"])
                    .status
                    .success()
        },
    );
    s
}

fn wait(s: &Setup, secs: u64, what: &str, mut done: impl FnMut(&Setup) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !done(s) {
        if Instant::now() > deadline {
            let status =
                s.ns.ok(&["get", "ocirepository,kustomization", "-o", "yaml"]);
            panic!("{what}: not within {secs} s\n{status}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Pushes a config edit, asks Flux to look, and follows the rollout.
fn edit_and_watch(s: &Setup) -> (Duration, bool) {
    common::gitops::old_pods_without_config(
        &s.ns,
        || {
            s.push("two");
            s.reconcile_now();
        },
        || {
            s.ns.ok(&["get", "ocirepository,kustomization", "-o", "yaml"])
        },
    )
}

#[test]
#[cfg_attr(
    not(all(feature = "test-gitops", feature = "test-registry")),
    ignore = "needs test-gitops, test-registry (run scripts/test)"
)]
fn flux_keeps_the_old_generation_for_the_old_pods_and_berth_removes_it_after_the_rollout() {
    let s = setup("flux-berth", "flux");
    let _controller = common::controller::start_as(&s.ns, "controller", &["--gitops-keep", "1"]);
    let (without_config, gone) = edit_and_watch(&s);
    eprintln!(
        "flux with berth's GitOps mode: old pods ran {without_config:?} without their config"
    );
    assert_eq!(
        without_config,
        Duration::ZERO,
        "an old pod ran without its config"
    );
    assert!(
        gone,
        "berth's controller removed the old generation after the rollout"
    );
    wait(
        &s,
        60,
        "the Kustomization stays Ready",
        Setup::kustomization_ready,
    );
}

#[test]
#[cfg_attr(
    not(all(feature = "test-gitops", feature = "test-registry")),
    ignore = "needs test-gitops, test-registry (run scripts/test)"
)]
fn flux_alone_prunes_the_old_generation_while_old_pods_use_it() {
    let s = setup("flux-alone", "none");
    let (without_config, gone) = edit_and_watch(&s);
    eprintln!("flux alone: old pods ran {without_config:?} without their config");
    assert!(gone, "Flux prunes the old generation");
    assert!(
        without_config > Duration::from_secs(1),
        "the bug berth's GitOps mode exists to avoid did not show: {without_config:?}"
    );
}

/// The `Ready` condition of OCIRepository `name`: `(status, reason)`.
fn source_ready(ns: &Namespace, name: &str) -> Option<(String, String)> {
    let value: Value =
        serde_json::from_str(&ns.ok(&["get", "ocirepository", name, "-o", "json"])).ok()?;
    let conditions = value["status"]["conditions"].as_array()?.clone();
    let ready = conditions.iter().find(|c| c["type"] == "Ready")?;
    Some((
        ready["status"].as_str()?.to_string(),
        ready["reason"].as_str().unwrap_or_default().to_string(),
    ))
}

/// #51: `berth push --sign-key` signs the artifact as cosign does; Flux's
/// source-controller with `verify.provider: cosign` accepts it with the matching
/// public key and refuses it with another. The password comes from COSIGN_PASSWORD.
#[test]
#[cfg_attr(
    not(all(feature = "test-gitops", feature = "test-registry")),
    ignore = "needs test-gitops and test-registry (run scripts/test)"
)]
fn flux_verifies_an_artifact_pushed_with_sign_key_and_refuses_another_key() {
    let plane = flux_plane();
    let cosign = plane.cosign2();
    let registry = TestRegistry::start(None);
    let ns = plane.namespace("signed");
    let dir = project(&berth_yaml("one", "flux"));
    let root = dir.path();
    std::fs::write(root.join("deploy.yaml"), deploy_yaml()).unwrap();
    for prefix in ["ours", "theirs"] {
        let out = std::process::Command::new(&cosign)
            .args(["generate-key-pair", "--output-key-prefix", prefix])
            .current_dir(root)
            .env("COSIGN_PASSWORD", "s3cret")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let target = format!("oci://{}/{}:main", registry.host, ns.name);
    let push = |password: &str| {
        berth(root)
            .args([
                "push",
                &target,
                "--sign-key",
                "ours.key",
                "--insecure-registry",
                &registry.host,
            ])
            .env("COSIGN_PASSWORD", password)
            .output()
            .unwrap()
    };
    let wrong = push("not-it");
    let stderr = String::from_utf8_lossy(&wrong.stderr);
    assert_eq!(wrong.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the password does not decrypt it (COSIGN_PASSWORD)")
            && !stderr.contains("not-it"),
        "{stderr}"
    );
    let out = push("s3cret");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut objects = String::new();
    for (name, key) in [("ours", "ours.pub"), ("theirs", "theirs.pub")] {
        let public = std::fs::read_to_string(root.join(key)).unwrap();
        let indented: String = public.lines().map(|l| format!("    {l}\n")).collect();
        objects.push_str(&format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: {name}-key}}\nstringData:\n  cosign.pub: |\n{indented}---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata: {{name: {name}}}\nspec:\n  interval: 1m\n  insecure: true\n  url: oci://{}/{}\n  ref: {{tag: main}}\n  verify: {{provider: cosign, secretRef: {{name: {name}-key}}}}\n---\n",
            registry.host, ns.name
        ));
    }
    let out = plane.kubectl_with(&ns.kubeconfig, &["apply", "-f", "-"], Some(&objects));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (ours, theirs) = (source_ready(&ns, "ours"), source_ready(&ns, "theirs"));
        let accepted = ours.as_ref().is_some_and(|(s, _)| s == "True");
        let refused = theirs
            .as_ref()
            .is_some_and(|(s, r)| s == "False" && r.contains("Verification"));
        if accepted && refused {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "ours {ours:?}, theirs {theirs:?}:\n{}",
            ns.ok(&["get", "ocirepository", "-o", "yaml"])
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}
