//! GitOps: generated configs rendered for Flux or Argo CD (never pruned by the
//! engine, labelled for berth), Argo CD's plugin environment, `berth push` of a
//! Flux artifact to a real registry, and `berth gc` on the real control plane.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;

use crate::common;
use common::registry::TestRegistry;
use common::testenv::plane;
use common::{berth, project};

const PROJECT: &str = "name: shop\nmanifests: [deploy.yaml]\nimages:\n  web: {image: ghcr.io/acme/web:v1}\nconfigs:\n  web-config: {literals: [LEVEL=one]}\n";
const DEPLOY: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: web, image: ghcr.io/acme/web:v1, envFrom: [{configMapRef: {name: web-config}}]}]\n";

fn shop() -> tempfile::TempDir {
    let dir = project(PROJECT);
    std::fs::write(dir.path().join("deploy.yaml"), DEPLOY).unwrap();
    dir
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The generated ConfigMap of a render (the first document).
fn first_document(yaml: &str) -> String {
    yaml.split("\n---\n").next().unwrap().to_string()
}

#[test]
fn generated_configs_carry_the_engines_never_prune_annotation_and_berths_labels() {
    let dir = shop();
    let render = |args: &[&str], env: &[(&str, &str)]| {
        let out = berth(dir.path())
            .arg("render")
            .args(args)
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        first_document(&stdout(&out))
    };
    insta::assert_snapshot!(render(&["--gitops", "flux"], &[]), @"
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: web-config-6ccmkhhg6h
      labels:
        app.kubernetes.io/managed-by: berth
        berth.dev/project: shop
        berth.dev/config: web-config
        berth.dev/gitops: flux
      annotations:
        kustomize.toolkit.fluxcd.io/prune: Disabled
    immutable: true
    data:
      LEVEL: one
    ");
    // Inside an Argo CD plugin, Argo CD is the engine unless told otherwise.
    insta::assert_snapshot!(render(&[], &[("ARGOCD_APP_NAME", "shop")]), @"
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: web-config-6ccmkhhg6h
      labels:
        app.kubernetes.io/managed-by: berth
        berth.dev/project: shop
        berth.dev/config: web-config
        berth.dev/gitops: argocd
      annotations:
        argocd.argoproj.io/sync-options: Prune=false
        argocd.argoproj.io/compare-options: IgnoreExtraneous
    immutable: true
    data:
      LEVEL: one
    ");
    assert_eq!(
        render(&["--gitops", "none"], &[("ARGOCD_APP_NAME", "shop")]),
        render(&[], &[]),
        "none: as without an engine"
    );
    std::fs::write(
        dir.path().join("berth.yaml"),
        format!("{PROJECT}gitops: flux\n"),
    )
    .unwrap();
    assert_eq!(render(&[], &[]), render(&["--gitops", "flux"], &[]));
    // The annotations and labels are not content: the name (hash) stays.
    assert!(
        render(&[], &[]).contains("name: web-config-")
            && render(&["--gitops", "none"], &[]).lines().nth(3) == render(&[], &[]).lines().nth(3)
    );
}

#[test]
fn inside_an_argo_cd_plugin_the_applications_variables_lose_their_prefix() {
    let dir = shop();
    let images = |env: &[(&str, &str)]| {
        let out = berth(dir.path())
            .args(["images", "-o", "env"])
            .envs(env.iter().copied())
            .output()
            .unwrap();
        common::transcript(&out)
    };
    // What Argo CD's cmp-server sets for an Application with `plugin.env: [{name: WEB_TAG, value: fix-408}]`.
    let plugin = [
        ("ARGOCD_APP_NAME", "shop"),
        ("ARGOCD_APP_NAMESPACE", "shop"),
        ("ARGOCD_APP_REVISION", "0123abc"),
        ("ARGOCD_APP_SOURCE_PATH", "."),
        ("ARGOCD_ENV_WEB_TAG", "fix-408"),
    ];
    insta::assert_snapshot!(images(&plugin), @"
    exit: 0
    --- stdout
    WEB_IMAGE=ghcr.io/acme/web:fix-408
    --- stderr
    ");
    // Outside a plugin the prefixed variable is nobody's.
    insta::assert_snapshot!(images(&[("ARGOCD_ENV_WEB_TAG", "fix-408")]), @"
    exit: 0
    --- stdout
    WEB_IMAGE=ghcr.io/acme/web:v1
    --- stderr
    ");
    // A disagreement names the Application, not "the environment".
    insta::assert_snapshot!(images(&[("ARGOCD_APP_NAME", "shop"), ("ARGOCD_ENV_WEB_IMAGE", "ghcr.io/acme/web:a"), ("WEB_TAG", "b")]), @"
    exit: 1
    --- stdout
    --- stderr
    error: component `web`: `WEB_IMAGE=ghcr.io/acme/web:a` (`ARGOCD_ENV_` of Argo CD Application `shop`) and `WEB_TAG=b` (environment) disagree (the full reference has tag `a`); unset one of them or make them agree
    ");
}

/// One GET on a plain-HTTP registry; the body.
fn http_get(host: &str, path: &str) -> Vec<u8> {
    let mut stream = TcpStream::connect(host).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: {host}\r\nAccept: application/vnd.oci.image.manifest.v1+json\r\n\r\n"
    )
    .unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&answer[..split]);
    assert!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "{head}"
    );
    answer[split + 4..].to_vec()
}

#[test]
#[cfg_attr(
    not(feature = "test-registry"),
    ignore = "needs test-registry (run scripts/test)"
)]
fn push_makes_the_flux_artifact_flux_pulls() {
    let _filters = common::snapshot_filters();
    let registry = TestRegistry::start(None);
    let dir = shop();
    let target = format!("oci://{}/acme/shop-manifests:main", registry.host);
    let push = || {
        berth(dir.path())
            .args(["push", &target, "--insecure-registry", &registry.host])
            .args([
                "--source",
                "https://git.example.com/acme/shop",
                "--revision",
                "main@sha1:0123abc",
            ])
            .env("SOURCE_DATE_EPOCH", "1764633600")
            .output()
            .unwrap()
    };
    let out = push();
    insta::assert_snapshot!(common::transcript(&out), @"
    exit: 0
    --- stdout
    oci://127.0.0.1:[port]/acme/shop-manifests:main@sha256:[digest]
    --- stderr
    pushed 2 object(s) (653 bytes of YAML) to oci://127.0.0.1:[port]/acme/shop-manifests:main
    ");
    let printed = stdout(&out);
    let digest = printed.trim().rsplit('@').next().unwrap().to_string();
    // What the registry serves is the manifest whose digest berth printed.
    assert_eq!(
        registry.skopeo_digest("acme/shop-manifests:main", None),
        digest
    );
    let manifest: serde_json::Value = serde_json::from_slice(&http_get(
        &registry.host,
        &format!("/v2/acme/shop-manifests/manifests/{digest}"),
    ))
    .unwrap();
    let mut shape = manifest.clone();
    for at in ["/config/digest", "/layers/0/digest", "/layers/0/size"] {
        *shape.pointer_mut(at).unwrap() = "…".into();
    }
    insta::assert_snapshot!(serde_json::to_string_pretty(&shape).unwrap(), @r#"
    {
      "schemaVersion": 2,
      "mediaType": "application/vnd.oci.image.manifest.v1+json",
      "config": {
        "mediaType": "application/vnd.cncf.flux.config.v1+json",
        "digest": "…",
        "size": 2
      },
      "layers": [
        {
          "mediaType": "application/vnd.cncf.flux.content.v1.tar+gzip",
          "digest": "…",
          "size": "…"
        }
      ],
      "annotations": {
        "org.opencontainers.image.created": "2025-12-02T00:00:00Z",
        "org.opencontainers.image.source": "https://git.example.com/acme/shop",
        "org.opencontainers.image.revision": "main@sha1:0123abc"
      }
    }
    "#);
    // The layer is a gzipped tarball holding the render, for Flux (its prune annotation included).
    let layer = http_get(
        &registry.host,
        &format!(
            "/v2/acme/shop-manifests/blobs/{}",
            manifest["layers"][0]["digest"].as_str().unwrap()
        ),
    );
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(layer.as_slice()));
    let mut files = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let mut text = String::new();
        entry.read_to_string(&mut text).unwrap();
        files.push((entry.path().unwrap().display().to_string(), text));
    }
    let rendered = berth(dir.path())
        .args(["render", "--gitops", "flux"])
        .output()
        .unwrap();
    assert_eq!(files, [("manifests.yaml".to_string(), stdout(&rendered))]);
    // The same manifests again: the same layer, a manifest that differs only by `created`.
    let again = push();
    assert_eq!(stdout(&again), printed, "same inputs, same bytes");
    // Bad targets are refused before anything is rendered or sent.
    let bad = berth(dir.path())
        .args(["push", "ghcr.io/acme/shop:main"])
        .output()
        .unwrap();
    insta::assert_snapshot!(common::transcript(&bad), @"
    exit: 1
    --- stdout
    --- stderr
    error: `ghcr.io/acme/shop:main`: give the artifact as oci://HOST/REPO:TAG (e.g. oci://registry.example.com/team/shop-manifests:main)
    ");
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn gc_deletes_the_generations_nothing_uses_and_keeps_the_newest() {
    let _filters = common::snapshot_filters();
    let plane = plane();
    let ns = plane.namespace("gc");
    let dir = shop();
    // What an engine does: apply the render as it is (here with kubectl), generation after generation.
    let apply_render = || {
        let out = berth(dir.path())
            .args(["render", "--gitops", "flux"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        ns.plane
            .kubectl_with(&ns.kubeconfig, &["apply", "-f", "-"], Some(&stdout(&out)));
        let rollout = ns.kubectl(&["rollout", "status", "deployment/web", "--timeout=60s"]);
        assert!(
            rollout.status.success(),
            "{}",
            String::from_utf8_lossy(&rollout.stderr)
        );
    };
    for level in ["one", "two", "three"] {
        std::fs::write(
            dir.path().join("berth.yaml"),
            PROJECT.replace("LEVEL=one", &format!("LEVEL={level}")),
        )
        .unwrap();
        apply_render();
        // Creation times have whole seconds: one generation per second.
        std::thread::sleep(std::time::Duration::from_millis(1100));
    }
    let oldest = ns.ok(&[
        "get",
        "configmaps",
        "--sort-by=.metadata.creationTimestamp",
        "-o",
        "jsonpath={.items[0].metadata.name}",
    ]);
    assert!(oldest.starts_with("web-config-"), "{oldest}");
    // A pod still running on the first generation keeps it; the second nothing uses.
    ns.plane.kubectl_with(
        &ns.kubeconfig,
        &["apply", "-f", "-"],
        Some(&format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: straggler}}\nspec:\n  containers: [{{name: c, image: ghcr.io/acme/web:v1, envFrom: [{{configMapRef: {{name: {oldest}}}}}]}}]\n")),
    );
    // Sweep 4, Z05: objects with the label that berth did not make — a Helm
    // chart's ConfigMap, a foreign Secret, and a ConfigMap named like a
    // generation whose labels and annotation were added by hand afterwards.
    ns.plane.kubectl_with(
        &ns.kubeconfig,
        &["apply", "-f", "-"],
        Some("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: chart-config\n  labels: {berth.dev/gitops: flux, app.kubernetes.io/managed-by: Helm}\n  annotations: {meta.helm.sh/release-name: r}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: foreign, labels: {berth.dev/gitops: flux}}\nstringData: {password: hunter2}\n"),
    );
    ns.ok(&["create", "configmap", "web-config-bbbbbbbbbb"]);
    ns.ok(&[
        "annotate",
        "configmap",
        "web-config-bbbbbbbbbb",
        "kustomize.toolkit.fluxcd.io/prune=Disabled",
    ]);
    ns.ok(&[
        "label",
        "configmap",
        "web-config-bbbbbbbbbb",
        "berth.dev/gitops=flux",
        "app.kubernetes.io/managed-by=berth",
        "berth.dev/project=shop",
        "berth.dev/config=web-config",
    ]);
    let configs = ns.names("configmaps");
    let gc = |args: &[&str]| {
        let out = berth(dir.path())
            .arg("gc")
            .arg("--kubeconfig")
            .arg(&ns.kubeconfig)
            .args(args)
            .output()
            .unwrap();
        common::transcript(&out)
    };
    insta::assert_snapshot!(gc(&["--dry-run", "--keep", "1"]), @"
    exit: 0
    --- stdout
    kept ConfigMap/web-config-6ccmkhhg6h: in use
    kept ConfigMap/web-config-dg9h595m6k: among the 1 newest of `web-config`
    would delete ConfigMap/web-config-g8tck2f6f6 (nothing uses it)
    --- stderr
    left ConfigMap/chart-config: labelled berth.dev/gitops, but not provably berth's: it has no `app.kubernetes.io/managed-by=berth` label
    left ConfigMap/web-config-bbbbbbbbbb: labelled berth.dev/gitops, but not provably berth's: no one field manager wrote berth's labels and annotations together (managedFields): they were added to it, not rendered by berth
    left Secret/foreign: labelled berth.dev/gitops, but not provably berth's: it has no `app.kubernetes.io/managed-by=berth` label
    ");
    assert_eq!(ns.names("configmaps"), configs, "a dry run deletes nothing");
    insta::assert_snapshot!(gc(&["--keep", "1"]), @"
    exit: 0
    --- stdout
    kept ConfigMap/web-config-6ccmkhhg6h: in use
    kept ConfigMap/web-config-dg9h595m6k: among the 1 newest of `web-config`
    deleted ConfigMap/web-config-g8tck2f6f6
    --- stderr
    left ConfigMap/chart-config: labelled berth.dev/gitops, but not provably berth's: it has no `app.kubernetes.io/managed-by=berth` label
    left ConfigMap/web-config-bbbbbbbbbb: labelled berth.dev/gitops, but not provably berth's: no one field manager wrote berth's labels and annotations together (managedFields): they were added to it, not rendered by berth
    left Secret/foreign: labelled berth.dev/gitops, but not provably berth's: it has no `app.kubernetes.io/managed-by=berth` label
    ");
    let left = |ns: &common::testenv::Namespace| -> usize {
        ns.names("configmaps")
            .iter()
            .filter(|n| n.starts_with("web-config-") && *n != "web-config-bbbbbbbbbb")
            .count()
    };
    assert_eq!(left(&ns), 2, "the newest and the one the pod uses");
    // The pod gone, its generation goes too.
    ns.ok(&["delete", "pod", "straggler", "--wait=true", "--timeout=60s"]);
    insta::assert_snapshot!(gc(&["--keep", "1"]), @"
    exit: 0
    --- stdout
    deleted ConfigMap/web-config-6ccmkhhg6h
    kept ConfigMap/web-config-dg9h595m6k: among the 1 newest of `web-config`
    --- stderr
    left ConfigMap/chart-config: labelled berth.dev/gitops, but not provably berth's: it has no `app.kubernetes.io/managed-by=berth` label
    left ConfigMap/web-config-bbbbbbbbbb: labelled berth.dev/gitops, but not provably berth's: no one field manager wrote berth's labels and annotations together (managedFields): they were added to it, not rendered by berth
    left Secret/foreign: labelled berth.dev/gitops, but not provably berth's: it has no `app.kubernetes.io/managed-by=berth` label
    ");
    assert_eq!(left(&ns), 1);
    insta::assert_snapshot!(gc(&[]), @"
    exit: 0
    --- stdout
    kept ConfigMap/web-config-dg9h595m6k: among the 2 newest of `web-config`
    --- stderr
    left ConfigMap/chart-config: labelled berth.dev/gitops, but not provably berth's: it has no `app.kubernetes.io/managed-by=berth` label
    left ConfigMap/web-config-bbbbbbbbbb: labelled berth.dev/gitops, but not provably berth's: no one field manager wrote berth's labels and annotations together (managedFields): they were added to it, not rendered by berth
    left Secret/foreign: labelled berth.dev/gitops, but not provably berth's: it has no `app.kubernetes.io/managed-by=berth` label
    ");
    // What berth did not make is all still there.
    for (kind, name) in [
        ("configmap", "chart-config"),
        ("configmap", "web-config-bbbbbbbbbb"),
        ("secret", "foreign"),
    ] {
        ns.ok(&["get", kind, name]);
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn the_controller_removes_a_kept_generation_once_its_rollout_is_done() {
    use crate::controller::{http_get, log_of};
    let plane = plane();
    let ns = plane.namespace("collect");
    let dir = shop();
    // The controller cleans up what an engine keeps; here kubectl plays the engine.
    let _controller = common::controller::start_as(&ns, "controller", &["--gitops-keep", "1"]);
    let engine_applies = |level: &str| {
        std::fs::write(
            dir.path().join("berth.yaml"),
            PROJECT.replace("LEVEL=one", &format!("LEVEL={level}")),
        )
        .unwrap();
        let out = berth(dir.path())
            .args(["render", "--gitops", "flux"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let applied =
            ns.plane
                .kubectl_with(&ns.kubeconfig, &["apply", "-f", "-"], Some(&stdout(&out)));
        assert!(
            applied.status.success(),
            "{}",
            String::from_utf8_lossy(&applied.stderr)
        );
        first_document(&stdout(&out))
            .lines()
            .find_map(|l| l.trim().strip_prefix("name: "))
            .unwrap()
            .to_string()
    };
    let first = engine_applies("one");
    common::controller::eventually(60, "the first rollout", &ns, || {
        ns.kubectl(&["rollout", "status", "deployment/web", "--timeout=1s"])
            .status
            .success()
            .then_some(())
    });
    let second = engine_applies("two");
    // The first generation stays while its pods run, and goes once the rollout is done.
    common::controller::eventually(60, "the first generation is deleted", &ns, || {
        ns.get("configmaps", &first).is_none().then_some(())
    });
    assert!(ns.get("configmaps", &second).is_some(), "the newest stays");
    assert!(
        ns.kubectl(&["rollout", "status", "deployment/web", "--timeout=1s"])
            .status
            .success(),
        "deleted only after the rollout finished"
    );
    let events = ns.ok(&[
        "get",
        "events",
        "--field-selector",
        "reason=GenerationDeleted",
        "-o",
        "jsonpath={.items[*].message}",
    ]);
    assert!(
        events.contains(&format!(
            "ConfigMap {first} (config `web-config` of project `shop`)"
        )),
        "{events}"
    );
    let (_, metrics) = http_get(&log_of(&ns, "controller"), "/metrics");
    assert!(
        metrics.contains("berth_controller_generations_deleted_total{kind=\"ConfigMap\"} 1"),
        "{metrics}"
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-registry"),
    ignore = "needs test-registry (run scripts/test)"
)]
fn push_is_for_flux_unless_berth_yaml_or_the_flag_says_otherwise() {
    let registry = TestRegistry::start(None);
    let dir = shop();
    let pushed_annotations = |berth_yaml: &str, args: &[&str]| {
        std::fs::write(dir.path().join("berth.yaml"), berth_yaml).unwrap();
        let target = format!("oci://{}/acme/which:main", registry.host);
        let out = berth(dir.path())
            .args(["push", &target, "--insecure-registry", &registry.host])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let digest = stdout(&out).trim().rsplit('@').next().unwrap().to_string();
        let manifest: serde_json::Value = serde_json::from_slice(&http_get(
            &registry.host,
            &format!("/v2/acme/which/manifests/{digest}"),
        ))
        .unwrap();
        let layer = http_get(
            &registry.host,
            &format!(
                "/v2/acme/which/blobs/{}",
                manifest["layers"][0]["digest"].as_str().unwrap()
            ),
        );
        let mut text = String::new();
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(layer.as_slice()));
        archive
            .entries()
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        let labels: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("berth.dev/gitops"))
            .collect();
        labels.join(",")
    };
    assert_eq!(
        pushed_annotations(PROJECT, &[]),
        "    berth.dev/gitops: flux"
    );
    assert_eq!(
        pushed_annotations(&format!("{PROJECT}gitops: none\n"), &[]),
        "",
        "an explicit none"
    );
    assert_eq!(
        pushed_annotations(&format!("{PROJECT}gitops: argocd\n"), &[]),
        "    berth.dev/gitops: argocd"
    );
    assert_eq!(pushed_annotations(PROJECT, &["--gitops", "none"]), "");
}
