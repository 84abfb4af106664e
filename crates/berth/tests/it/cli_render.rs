#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking

use crate::common;

use std::fs;

use common::{berth, project, transcript};

const PROJECT: &str = "\
name: demo
manifests: [deploy/, extra.yaml]
images:
  web:
    image: nginx:1.25
    pullPolicy: auto
";

const DEPLOYMENT: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers:
      - {name: web, image: nginx, imagePullPolicy: Always}
      - {name: other, image: 'quay.io/x/y:dev', imagePullPolicy: Never}
";

fn setup() -> tempfile::TempDir {
    let dir = project(PROJECT);
    fs::create_dir_all(dir.path().join("deploy/b")).unwrap();
    fs::write(dir.path().join("deploy/b/2-web.yaml"), DEPLOYMENT).unwrap();
    fs::write(
        dir.path().join("deploy/1-svc.yml"),
        "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n",
    )
    .unwrap();
    fs::write(dir.path().join("deploy/notes.txt"), "not yaml: [").unwrap();
    fs::write(
        dir.path().join("extra.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\n",
    )
    .unwrap();
    dir
}

#[test]
fn renders_the_projects_manifests_in_path_order() {
    let dir = setup();
    let out = berth(dir.path())
        .args(["render"])
        .env("WEB_TAG", "1.27")
        .output()
        .unwrap();
    insta::assert_snapshot!(transcript(&out));
}

#[test]
fn stdin_to_stdout_as_a_helm_post_renderer() {
    let dir = setup();
    // Helm runs the post-renderer with the chart's manifests on stdin.
    let wrapper = dir.path().join("post-render.sh");
    fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec '{}' render -\n",
            common::berth_path().display()
        ),
    )
    .unwrap();
    let out = std::process::Command::new("sh")
        .arg(&wrapper)
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap())
        .stdin(fs::File::open(dir.path().join("deploy/b/2-web.yaml")).unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("  - name: web\n        image: docker.io/library/nginx:1.25\n        imagePullPolicy: Always\n"), "the manifest's explicit Always stays under auto: {stdout}");
    assert!(
        stdout.contains("image: 'quay.io/x/y:dev'\n        imagePullPolicy: Never\n"),
        "{stdout}"
    );
}

#[test]
fn output_is_deterministic() {
    let dir = setup();
    let a = berth(dir.path()).arg("render").output().unwrap();
    let b = berth(dir.path()).arg("render").output().unwrap();
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn out_dir_gets_one_file_per_object_and_is_replaced_whole() {
    let dir = setup();
    let out = dir.path().join("rendered");
    berth(dir.path())
        .args(["render", "--out", "rendered"])
        .assert()
        .success();
    let mut names: Vec<String> = fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            ".berth-render",
            "0001-service-web.yaml",
            "0002-deployment-web.yaml",
            "0003-configmap-extra.yaml"
        ]
    );
    assert!(fs::read_to_string(out.join("0002-deployment-web.yaml"))
        .unwrap()
        .starts_with("apiVersion: apps/v1\n"));

    // A failing render leaves the previous output exactly as it was, and no temporary files.
    fs::write(dir.path().join("extra.yaml"), "apiVersion: v1\nkind: [\n").unwrap();
    let failed = berth(dir.path())
        .args(["render", "--out", "rendered"])
        .output()
        .unwrap();
    assert_eq!(failed.status.code(), Some(1));
    assert_eq!(fs::read_dir(&out).unwrap().count(), 4);
    let leftovers: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains("berth-")
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // Fewer objects next time: stale files do not survive.
    fs::write(dir.path().join("extra.yaml"), "").unwrap();
    berth(dir.path())
        .args(["render", "--out", "rendered"])
        .assert()
        .success();
    assert_eq!(fs::read_dir(&out).unwrap().count(), 3);
}

#[test]
fn out_dir_refuses_a_foreign_directory() {
    let dir = setup();
    fs::create_dir(dir.path().join("mine")).unwrap();
    fs::write(dir.path().join("mine/keep.txt"), "precious").unwrap();
    let out = berth(dir.path())
        .args(["render", "--out", "mine"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("was not written by berth render"));
    assert_eq!(
        fs::read_to_string(dir.path().join("mine/keep.txt")).unwrap(),
        "precious"
    );
}

#[test]
fn bad_input_is_one_message_and_no_output() {
    let bomb = {
        let mut s = String::from("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9 {
            let p = i - 1;
            s.push_str(&format!("a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"));
        }
        s
    };
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "syntax.yaml",
            "apiVersion: v1\nkind: Pod\nspec: {a: [}\n".into(),
            "error: syntax.yaml:3:",
        ),
        (
            "noKind.yaml",
            "apiVersion: v1\nkind: Pod\n---\napiVersion: v1\nmetadata: {}\n".into(),
            "error: noKind.yaml:4:1: not a Kubernetes object: it has no `kind`",
        ),
        ("bomb.yaml", bomb, "alias-expansion bomb"),
        (
            "dup.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata: {name: a, name: b}\n".into(),
            "error: dup.yaml:3:21: duplicate key `name`",
        ),
    ];
    for (file, content, want) in cases {
        let dir = setup();
        fs::write(dir.path().join(file), content).unwrap();
        let out = berth(dir.path())
            .args(["render", "deploy/", file])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{file}: {stderr}");
        assert!(out.stdout.is_empty(), "{file}: partial output");
        assert!(
            stderr.starts_with(want) || stderr.contains(want),
            "{file}\n got: {stderr}\nwant: {want}"
        );
    }
}

#[test]
fn missing_paths_and_non_utf8_input() {
    let dir = setup();
    let out = berth(dir.path())
        .args(["render", "nope.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope.yaml (from the command line)"));
    fs::write(
        dir.path().join("latin1.yaml"),
        b"apiVersion: v1\nkind: ConfigMap\ndata: {a: \xe9}\n",
    )
    .unwrap();
    let out = berth(dir.path())
        .args(["render", "latin1.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("latin1.yaml: not UTF-8"));
}

#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn kustomization_entries_run_kubectl_kustomize() {
    let _filters = crate::common::snapshot_filters();
    common::require_program(common::Group::Tools, "kubectl");
    let dir = project(
        "name: demo\nmanifests:\n  - kustomize: overlay\nimages:\n  web: {image: 'nginx:1.25'}\n",
    );
    fs::create_dir(dir.path().join("overlay")).unwrap();
    fs::write(
        dir.path().join("overlay/kustomization.yaml"),
        "resources: [web.yaml]\nnamePrefix: dev-\n",
    )
    .unwrap();
    fs::write(dir.path().join("overlay/web.yaml"), DEPLOYMENT).unwrap();
    let out = berth(dir.path()).arg("render").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("name: dev-web") && stdout.contains("image: docker.io/library/nginx:1.25"),
        "{stdout}"
    );

    // A kustomization's directory given as a path is rendered by kustomize too:
    // the same output, not its Kustomization object and raw patches.
    let as_path = berth(dir.path())
        .args(["render", "overlay/"])
        .output()
        .unwrap();
    assert!(
        as_path.status.success(),
        "{}",
        String::from_utf8_lossy(&as_path.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&as_path.stdout), stdout);
    // A Kustomization reached as a plain file gets the hint.
    let out = berth(dir.path())
        .args(["render", "overlay/kustomization.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    insta::assert_snapshot!(stderr, @"
    error: overlay/kustomization.yaml:1:1: not a Kubernetes object: it has no `apiVersion` (every document needs `apiVersion` and `kind`)
      help: to render a kustomization, list it as `- kustomize: DIR` under `manifests:`
    ");
}

#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn a_broken_kustomize_entry_names_its_line_in_berth_yaml() {
    let dir =
        project("name: demo\nmanifests:\n  - deploy/\n  - kustomize: overlays/dev\nimages: {}\n");
    fs::create_dir(dir.path().join("deploy")).unwrap();
    let render = || berth(dir.path()).arg("render").output().unwrap();
    let out = render();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: berth.yaml:4:16 (`manifests:`): `kustomize: overlays/dev` is not a directory; name the directory that holds kustomization.yaml (relative to the directory of berth.yaml)\n"
    );
    fs::create_dir_all(dir.path().join("overlays/dev")).unwrap();
    let out = render();
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with(
            "error: berth.yaml:4:16 (`manifests:`): `kustomize: overlays/dev` has no kustomization.yaml"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    common::require_program(common::Group::Tools, "kubectl");
    fs::write(
        dir.path().join("overlays/dev/kustomization.yaml"),
        "resources: [missing.yaml]\n",
    )
    .unwrap();
    let out = render();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    // kubectl's own words, without its log prefix.
    assert!(
        stderr.starts_with("error: berth.yaml:4:16 (`manifests:`): kubectl kustomize overlays/dev failed: accumulating resources")
            && stderr.contains("missing.yaml")
            && !stderr.contains("run.go"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn nothing_to_render_says_how_to_fix() {
    let dir = project("name: demo\nimages: {}\n");
    let out = berth(dir.path()).arg("render").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no `manifests:`"));
}

#[test]
fn kustomize_entries_without_kubectl_say_what_to_do() {
    let _filters = crate::common::snapshot_filters();
    let dir = project("name: demo\nmanifests:\n  - kustomize: overlay\nimages: {}\n");
    fs::create_dir(dir.path().join("overlay")).unwrap();
    fs::write(
        dir.path().join("overlay/kustomization.yaml"),
        "resources: []\n",
    )
    .unwrap();
    let empty = tempfile::tempdir().unwrap();
    let out = berth(dir.path())
        .arg("render")
        .env("PATH", empty.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    insta::assert_snapshot!(stderr, @"error: berth.yaml:3:16 (`manifests:`): `kustomize: overlay` needs kubectl, and `kubectl` on PATH was not found; install kubectl (or name it with BERTH_KUBECTL), or render the overlay first (`kubectl kustomize DIR | berth render -`)");
    assert!(out.stdout.is_empty());
}

#[test]
fn config_paths_point_a_custom_resource_at_the_generated_names() {
    let key = rcgen::KeyPair::generate().unwrap();
    let ca = rcgen::CertificateParams::new(vec!["corp.example".into()])
        .unwrap()
        .self_signed(&key)
        .unwrap()
        .pem();
    let dir = project(
        "name: ogx\nmanifests: [server.yaml]\nconfigPaths:\n  - {kind: OGXServer, path: spec.overrideConfig.name}\n  - {kind: OGXServer, path: 'spec.caCertificates[].name'}\nconfigs:\n  starter-config: {files: [run.yaml], labels: {ogx.io/watch: 'true'}}\ncaBundles:\n  corp-ca: {sources: [ca.pem], labels: {ogx.io/watch: 'true'}}\n",
    );
    fs::write(dir.path().join("run.yaml"), "version: 2\n").unwrap();
    fs::write(dir.path().join("ca.pem"), ca).unwrap();
    fs::write(
        dir.path().join("server.yaml"),
        "apiVersion: ogx.io/v1alpha1\nkind: OGXServer\nmetadata: {name: starter}\nspec:\n  overrideConfig: {name: starter-config}\n  caCertificates: [{name: corp-ca}, {name: not-ours}]\n",
    )
    .unwrap();
    let out = berth(dir.path()).arg("render").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("  name: "))
        .collect();
    let config = names
        .iter()
        .find(|n| n.starts_with("starter-config-"))
        .unwrap();
    let bundle = names.iter().find(|n| n.starts_with("corp-ca-")).unwrap();
    assert!(
        stdout.contains(&format!("overrideConfig:\n    name: {config}\n")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("- name: {bundle}\n  - name: not-ours\n")),
        "{stdout}"
    );
    assert_eq!(
        stdout.matches("ogx.io/watch: \"true\"").count(),
        2,
        "{stdout}"
    );
    // Referenced through configPaths: validate has nothing to warn about.
    let out = berth(dir.path())
        .args(["validate", "--strict"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn only_overridden_leaves_a_charts_own_tags_unless_an_override_touches_them() {
    let dir = project("name: demo\nimages:\n  web: {image: 'nginx:1.25', pullPolicy: auto}\n  api: {image: 'ghcr.io/acme/api:v1'}\n");
    let chart = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: web, image: 'nginx:1.27'}\n  - {name: api, image: 'ghcr.io/acme/api:v0'}\n";
    let render = |args: &[&str], env: &[(&str, &str)]| {
        let mut cmd = berth(dir.path());
        cmd.args(["render", "-"]).args(args).write_stdin(chart);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    // The default rewrites every component to berth's answer.
    let all = render(&[], &[]);
    assert!(
        all.contains("image: docker.io/library/nginx:1.25") && all.contains("api:v1"),
        "{all}"
    );
    // --only-overridden: nothing overridden, the chart's tags stay, policies too.
    let none = render(&["--only-overridden"], &[]);
    assert!(
        none.contains("image: 'nginx:1.27'") && none.contains("api:v0"),
        "{none}"
    );
    assert!(!none.contains("imagePullPolicy"), "{none}");
    // An override touches exactly its component.
    let one = render(&["--only-overridden", "--tag", "web=1.26"], &[]);
    assert!(
        one.contains("image: docker.io/library/nginx:1.26") && one.contains("api:v0"),
        "{one}"
    );
    let env = render(
        &["--only-overridden"],
        &[("API_IMAGE", "quay.io/me/api:dev")],
    );
    assert!(
        env.contains("image: quay.io/me/api:dev") && env.contains("'nginx:1.27'"),
        "{env}"
    );
}

/// Nothing disagrees silently: drift, idle overrides, stray copies, missing keys,
/// collisions, profiles (in the same test binary: one link).
#[path = "cli_render/field_truth.rs"]
mod field_truth;

/// `accept:`: acknowledged warnings, their codes, stale acknowledgements.
#[path = "cli_render/accept.rs"]
mod accept;

/// `relatedImage:` and `operator:`: RELATED_IMAGE_* env and a CSV's relatedImages.
#[path = "cli_render/related.rs"]
mod related;

/// Field truth 3: YAML as helm and kubectl read it, a chart's own defaults, values sent only to
/// the charts that have them.
#[path = "cli_render/field_truth3.rs"]
mod field_truth3;

/// The cache of `kubectl kustomize` output.
#[path = "cli_render/kustomize_cache.rs"]
mod kustomize_cache;

/// kustomize's content-hashed ConfigMap names, kept true when berth rewrites their text.
#[path = "cli_render/kustomize_names.rs"]
mod kustomize_names;
