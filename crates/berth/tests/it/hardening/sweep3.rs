//! Reproducers of the third hostile sweep (issue "Hardening 3"): each case
//! leaked, hung, read without bound or misled before its fix.

use super::common::{berth, project};
use super::stderr;

#[test]
fn a_link_below_a_manifests_directory_that_points_out_is_refused() {
    let _filters = crate::common::snapshot_filters();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("config"),
        "apiVersion: v1\nkind: Config\nusers: [{name: u, user: {token: pl4nted-token}}]\n",
    )
    .unwrap();
    let dir = project("name: demo\nmanifests: [deploy/]\n");
    std::fs::create_dir(dir.path().join("deploy")).unwrap();
    std::fs::write(
        dir.path().join("deploy/app.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("config"),
        dir.path().join("deploy/kc.yaml"),
    )
    .unwrap();
    let out = berth(dir.path()).arg("render").output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(out.stdout.is_empty(), "no partial output");
    assert!(!err.contains("pl4nted"), "leaked: {err}");
    insta::assert_snapshot!(err, @"error: cannot read deploy/kc.yaml (below berth.yaml:2:13 (`manifests:`)): it is outside the project directory `[tmp]` (it resolves to `[tmp]/config`); berth reads only files under the directory of berth.yaml (as kustomize does): move the file in, or pass `--load-restrictor none`");
    // A link that stays inside is read, as any file.
    std::fs::remove_file(dir.path().join("deploy/kc.yaml")).unwrap();
    std::fs::write(
        dir.path().join("other.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(
        dir.path().join("other.yaml"),
        dir.path().join("deploy/b.yaml"),
    )
    .unwrap();
    let out = berth(dir.path()).arg("render").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("name: b"));
}

/// A project pinning one image of `127.0.0.1:1` (nothing listens: the
/// credential is asked for before any request), with a Docker config whose
/// credential helper is `script`.
fn with_helper(script: &str) -> (tempfile::TempDir, assert_cmd::Command) {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = project("name: demo\nimages:\n  app: {image: '127.0.0.1:1/acme/app:v1'}\n");
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let helper = bin.join("docker-credential-sweep");
    std::fs::write(&helper, format!("#!/bin/sh\n{script}\n")).unwrap();
    std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        dir.path().join("config.json"),
        r#"{"credHelpers": {"127.0.0.1:1": "sweep"}}"#,
    )
    .unwrap();
    let mut cmd = berth(dir.path());
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    cmd.env("PATH", path)
        .env("DOCKER_CONFIG", dir.path())
        .args([
            "pin",
            "--insecure-registry",
            "127.0.0.1:1",
            "--timeout",
            "3",
        ]);
    (dir, cmd)
}

#[test]
fn a_failing_credential_helper_is_named_by_its_status_and_stderr_never_its_stdout() {
    let _filters = crate::common::snapshot_filters();
    let (_dir, mut cmd) = with_helper(
        r#"echo '{"Username":"sweep","Secret":"pl4nted-secret"}'; echo 'keychain locked' >&2; exit 1"#,
    );
    let out = cmd.output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("pl4nted"), "leaked: {err}");
    insta::assert_snapshot!(err, @"error: credential helper `docker-credential-sweep` failed for `127.0.0.1:1`: exit status 1: keychain locked; berth.lock is unchanged");
    let (_dir, mut cmd) = with_helper(r#"echo '{"Secret":"pl4nted-secret"}'; exit 2"#);
    let err = stderr(&cmd.output().unwrap());
    assert!(!err.contains("pl4nted"), "leaked: {err}");
    insta::assert_snapshot!(err, @"error: credential helper `docker-credential-sweep` failed for `127.0.0.1:1`: exit status 2 (what it printed on stdout is not shown: it may hold a credential); berth.lock is unchanged");
}

#[test]
fn a_credential_helper_that_never_ends_or_never_stops_printing_is_stopped() {
    let _filters = crate::common::snapshot_filters();
    let started = std::time::Instant::now();
    let (_dir, mut cmd) = with_helper("exec sleep 3600");
    let out = cmd.output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    insta::assert_snapshot!(err, @"error: credential helper `docker-credential-sweep` failed for `127.0.0.1:1`: it did not finish within 3 s and was stopped (is it waiting for a password, a keychain or a browser?); berth.lock is unchanged");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let (_dir, mut cmd) = with_helper("exec yes pl4nted");
    let out = cmd.output().unwrap();
    let err = stderr(&out);
    insta::assert_snapshot!(err, @"error: credential helper `docker-credential-sweep` failed for `127.0.0.1:1`: it printed more than 1 MiB on stdout and was stopped; berth.lock is unchanged");
    assert!(!err.contains("pl4nted"), "{err}");
}

#[test]
fn a_docker_config_that_is_a_device_is_refused_not_read() {
    let _filters = crate::common::snapshot_filters();
    let dir = project("name: demo\nimages:\n  app: {image: '127.0.0.1:1/acme/app:v1'}\n");
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("config.json")).unwrap();
    let out = berth(dir.path())
        .env("DOCKER_CONFIG", dir.path())
        .args(["pin", "--insecure-registry", "127.0.0.1:1"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    insta::assert_snapshot!(err, @"error: [tmp]/config.json: it is not a regular file (a FIFO, a socket or a device); give a file");
}

/// `berth diff` of a one-object project with `kubeconfig` (the file's text; a
/// server nothing listens on: each case fails before any request), and `extra`.
fn diff_with_kubeconfig(kubeconfig: &str, extra: &[&str]) -> (String, std::time::Duration) {
    let dir = project("name: demo\nmanifests: [app.yaml]\n");
    std::fs::write(
        dir.path().join("app.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("kubeconfig"), kubeconfig).unwrap();
    let started = std::time::Instant::now();
    let out = berth(dir.path())
        .args(["diff", "--kubeconfig", "kubeconfig"])
        .args(extra)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty(), "{err}");
    (err, started.elapsed())
}

fn kubeconfig_with(user: &str, cluster_extra: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:9'{cluster_extra}}}}}]\n\
         users: [{{name: u, user: {user}}}]\ncontexts: [{{name: c, context: {{cluster: c, user: u}}}}]\ncurrent-context: c\n"
    )
}

#[test]
fn exec_plugins_that_hang_or_flood_are_stopped_within_the_request_timeout() {
    let _filters = crate::common::snapshot_filters();
    let exec = |script: &str| {
        kubeconfig_with(
            &format!("{{exec: {{apiVersion: client.authentication.k8s.io/v1, command: sh, interactiveMode: Never, args: ['-c', '{script}']}}}}"),
            "",
        )
    };
    let (err, took) = diff_with_kubeconfig(&exec("exec sleep 3600"), &["--request-timeout", "3"]);
    insta::assert_snapshot!(err, @"error: kubeconfig user `u`: credential plugin `sh`: it did not finish within 3 s and was stopped (is it waiting for a password, a keychain or a browser?)");
    assert!(took < std::time::Duration::from_secs(20), "{took:?}");
    let (err, _) = diff_with_kubeconfig(&exec("exec yes pl4nted"), &[]);
    insta::assert_snapshot!(err, @"error: kubeconfig user `u`: credential plugin `sh`: it printed more than 1 MiB on stdout and was stopped");
    assert!(!err.contains("pl4nted"), "{err}");
    let (err, _) = diff_with_kubeconfig(
        &kubeconfig_with(
            "{exec: {apiVersion: client.authentication.k8s.io/v1, command: berth-no-such-plugin, installHint: 'brew install x'}}",
            "",
        ),
        &[],
    );
    insta::assert_snapshot!(err, @"error: kubeconfig user `u`: credential plugin `berth-no-such-plugin` cannot be run: No such file or directory (os error 2); install it or fix the kubeconfig (brew install x)");
}

#[test]
fn kubeconfig_fields_that_cannot_work_are_named_with_their_user_or_cluster() {
    let _filters = crate::common::snapshot_filters();
    let cases = [
        (
            kubeconfig_with("{client-certificate-data: 'LS0t', client-key-data: 'not base64!'}", ""),
            "kubeconfig user `u`: `client-key-data` is not base64; it holds the PEM file base64-encoded (`base64 -w0 FILE`), or name the file with `client-key` instead",
        ),
        (
            kubeconfig_with("{client-certificate: missing.crt, client-key: missing.key}", ""),
            "kubeconfig user `u`: cannot read its client-certificate ",
        ),
        (
            kubeconfig_with("{token: t}", ", proxy-url: 'http://proxy:3128'"),
            "kubeconfig cluster `c` sets `proxy-url`, which berth does not support",
        ),
        (
            kubeconfig_with("{tokenFile: /dev/zero}", ""),
            "kubeconfig user `u`: cannot read its tokenFile /dev/zero: it is not a regular file",
        ),
    ];
    for (kubeconfig, want) in &cases {
        let (err, _) = diff_with_kubeconfig(kubeconfig, &[]);
        assert!(err.contains(want), "{kubeconfig}\n{err}");
    }
    let (err, _) = diff_with_kubeconfig(&cases[1].0, &[]);
    insta::assert_snapshot!(err, @"error: kubeconfig user `u`: cannot read its client-certificate missing.crt: No such file or directory (os error 2)");
}

#[test]
fn kubeconfigs_that_are_devices_or_missing_are_refused_clearly() {
    let _filters = crate::common::snapshot_filters();
    let dir = project("name: demo\nmanifests: [app.yaml]\n");
    std::fs::write(
        dir.path().join("app.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
    )
    .unwrap();
    let run = |env: Option<&str>, args: &[&str]| {
        let mut cmd = berth(dir.path());
        if let Some(list) = env {
            cmd.env("KUBECONFIG", list);
        }
        let out = cmd.arg("diff").args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        stderr(&out)
    };
    let err = run(None, &["--kubeconfig", "/dev/zero"]);
    insta::assert_snapshot!(err, @"error: cannot read kubeconfig /dev/zero: it is not a regular file (a FIFO, a socket or a device); give a file");
    let err = run(Some("/dev/zero"), &[]);
    insta::assert_snapshot!(err, @"error: cannot read kubeconfig /dev/zero: it is not a regular file (a FIFO, a socket or a device); give a file");
    let err = run(Some("/nope/a:/nope/b"), &[]);
    insta::assert_snapshot!(err, @"error: KUBECONFIG names /nope/a, /nope/b but none of them exists; point KUBECONFIG at your cluster's kubeconfig, or unset it to use ~/.kube/config");
}

#[test]
fn an_exported_but_empty_berth_project_means_unset() {
    let dir = project("name: demo\nimages:\n  app: {image: ghcr.io/acme/app:v1}\n");
    let out = berth(dir.path())
        .env("BERTH_PROJECT", "")
        .arg("images")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn control_characters_from_input_are_escaped_and_long_values_cut() {
    let long = "x".repeat(100_000);
    let dir = project("name: demo\nimages:\n  app: {image: ghcr.io/acme/app:v1}\n");
    let out = berth(dir.path())
        .args(["images", "--image"])
        .arg(format!("app=\u{1b}]0;pwned\u{7}{long}"))
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
    assert!(err.len() < 5_000, "{} bytes", err.len());
}

#[test]
fn concurrent_renders_into_one_directory_take_turns_and_leave_nothing_behind() {
    let dir = project(
        "name: demo\nmanifests: [app.yaml]\nconfigs:\n  db:\n    secret: true\n    literals: [PASSWORD=pl4nted]\n",
    );
    std::fs::write(
        dir.path().join("app.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: nginx, envFrom: [{secretRef: {name: db}}]}]\n",
    )
    .unwrap();
    let children: Vec<_> = (0..24)
        .map(|_| {
            std::process::Command::new(super::common::berth_path())
                .current_dir(dir.path())
                .env_clear()
                .args(["render", "--out", "out"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("berth-"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert_eq!(
        std::fs::read_dir(dir.path().join("out")).unwrap().count(),
        3,
        "two objects and the marker"
    );
}

/// A project from `(path, content)` files, `berth.yaml` among them.
fn tree(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, content) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    dir
}

/// `(files of the project, what the refusal says)`.
type Case<'a> = (&'a [(&'a str, &'a [u8])], &'a str);

const POD: &[u8] = b"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: nginx}]\n";

#[test]
fn inputs_the_api_server_would_refuse_are_refused_at_render() {
    let cases: &[Case] = &[
        (
            &[("berth.yaml", b"name: d\nmanifests: [a.yaml]\nconfigs:\n  c:\n    literals: [A=b]\n    labels: {app.kubernetes.io/managed-by: me}\n"), ("a.yaml", POD)],
            "berth sets this key itself",
        ),
        (
            &[("berth.yaml", b"name: d\nmanifests: [a.yaml]\nconfigs:\n  c:\n    literals: [A=b]\n    labels: {berth.dev/project: x}\n"), ("a.yaml", POD)],
            "berth sets this key itself",
        ),
        (
            &[("berth.yaml", b"name: d\nmanifests: [a.yaml]\nconfigs:\n  c:\n    literals: [A=b]\n    labels: {Example.COM/team: x}\n"), ("a.yaml", POD)],
            "is not a lowercase DNS subdomain",
        ),
        (
            &[("berth.yaml", b"name: d\nmanifests: [a.yaml]\nconfigPaths: [{kind: X, path: 5}]\n"), ("a.yaml", POD)],
            "configPaths[].path",
        ),
        (
            &[("berth.yaml", b"name: d\nmanifests: [a.yaml]\nconfigPaths: [{kind: X, path: metadata.name}]\n"), ("a.yaml", POD)],
            "a path under `metadata` would rename or relabel the object itself",
        ),
        (
            &[("berth.yaml", b"name: d\nmanifests: [a.yaml]\nconfigs:\n  tls:\n    secret: true\n    type: kubernetes.io/tls\n    files: [tls.key]\n"), ("a.yaml", POD), ("tls.key", b"k")],
            "a Secret of type `kubernetes.io/tls` needs the key `tls.crt`",
        ),
        (
            &[("berth.yaml", b"name: d\nmanifests: [a.yaml]\n"), ("a.yaml", b"apiVersion: 1\nkind: Pod\nmetadata: {name: p}\n")],
            "a.yaml:1:1: not a Kubernetes object: its `apiVersion` is not `[group/]version`",
        ),
        (
            &[("berth.yaml", b"name: d\nmanifests: [a.yaml]\n"), ("a.yaml", b"apiVersion: v1\nkind: Pod\nmetadata: {name: ''}\n")],
            "its `metadata.name` is empty or not text",
        ),
        (
            &[("berth.yaml", b"name: d\nmanifests: [a.yaml]\n"), ("a.yaml", b"apiVersion: v1\nkind: Pod\nmetadata: 5\n")],
            "its `metadata` is not a mapping",
        ),
        (
            &[("berth.yaml", b"name: d\nmanifests: [a.yaml]\n"), ("a.yaml", b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: p}\ndata: {a: !foo b}\n")],
            "a.yaml:4:11: the YAML tag `!foo` means nothing to Kubernetes",
        ),
        (
            &[("berth.yaml", b"name: d\nmanifests: [a.yaml]\nconfigs:\n  c: {files: [c.json], schema: s.json}\n"), ("a.yaml", POD), ("c.json", b"{}"), ("s.json", b"{\"$schema\": \"http://json-schema.org/draft-03/schema#\"}")],
            "which is no JSON Schema draft berth knows",
        ),
        (
            &[("berth.yaml", b"name: d\nmanifests: [a.yaml]\nconfigs:\n  c: {envs: [w.env]}\n"), ("a.yaml", POD), ("w.env", b"\xff\xfeA\x00=\x00b\x00")],
            "w.env:1: the file is UTF-16 text",
        ),
        (
            &[("berth.yaml", b"name: d\nmanifests: [a.yaml]\ncaBundles:\n  ca: {sources: [ca.pem]}\n"), ("a.yaml", POD), ("ca.pem", b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END PRIVATE KEY-----\n")],
            "PEM block 1 begins as `CERTIFICATE` but ends as `PRIVATE KEY`",
        ),
    ];
    let mut said = String::new();
    for (files, want) in cases {
        let dir = tree(files);
        let out = berth(dir.path()).arg("render").output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{want}: {err}");
        assert!(out.stdout.is_empty(), "{want}: no partial output");
        assert!(err.contains(want), "want `{want}`:\n{err}");
        said.push_str(&err.replace(&dir.path().display().to_string(), "[PROJECT]"));
    }
    // The whole of each message is the contract (where, what, how to fix).
    insta::assert_snapshot!(said, @r#"
    error: berth.yaml:6:14: invalid `configs.c.labels` value `app.kubernetes.io/managed-by`: berth sets this key itself (`app.kubernetes.io/managed-by` and every `berth.dev/` key): clean-up and rollback find their objects by them; use a key of your own
    error: berth.yaml:6:14: invalid `configs.c.labels` value `berth.dev/project`: berth sets this key itself (`app.kubernetes.io/managed-by` and every `berth.dev/` key): clean-up and rollback find their objects by them; use a key of your own
    error: berth.yaml:6:14: invalid `configs.c.labels` value `Example.COM/team`: the prefix before `/` is not a lowercase DNS subdomain (such as `example.com`); the API server refuses it
    error: berth.yaml:3:31: invalid `configPaths[].path` value `5`: a dotted field path such as `spec.server.image`; `[]` walks a list (`spec.images[].ref`); a key with dots is quoted (`data["config.yaml"]`)
    error: berth.yaml:3:31: invalid `configPaths[].path` value `metadata.name`: a path under `metadata` would rename or relabel the object itself; point at the field of the spec that names the image or config
    error: berth.yaml:4:3: configs.tls: a Secret of type `kubernetes.io/tls` needs the key `tls.crt` (the API server refuses it without); add it to its sources, e.g. `files: [tls.crt, tls.key]`
    error: a.yaml:1:1: not a Kubernetes object: its `apiVersion` is not `[group/]version` (such as `v1` or `apps/v1`)
    error: a.yaml:1:1: not a Kubernetes object: its `metadata.name` is empty or not text; give the object a name
    error: a.yaml:1:1: not a Kubernetes object: its `metadata` is not a mapping; write `metadata: {name: NAME}`
    error: a.yaml:4:11: the YAML tag `!foo` means nothing to Kubernetes (only the core `!!str`, `!!int`, … do); remove it, or run the tool that understands it first
    error: berth.yaml:4:32: configs.c: schema `s.json`: `$schema` is `http://json-schema.org/draft-03/schema#`, which is no JSON Schema draft berth knows; use one of http://json-schema.org/draft-04/schema#, draft-06, draft-07, https://json-schema.org/draft/2019-09/schema or https://json-schema.org/draft/2020-12/schema
    error: w.env:1: the file is UTF-16 text (as PowerShell's `>` and some Windows editors save it); save it as UTF-8 (used by configs.c)
    error: ca.pem: PEM block 1 begins as `CERTIFICATE` but ends as `PRIVATE KEY`; the file is two blocks glued together: re-export the certificate (in caBundles.ca)
    "#);
}

#[test]
fn a_sync_source_that_is_a_fifo_is_refused() {
    let _filters = crate::common::snapshot_filters();
    let dir = project(
        "name: demo\nimages:\n  app: {image: ghcr.io/acme/app:v1}\nsync:\n  - target: {component: app}\n    paths: [{from: pipe, to: /app/pipe}]\n",
    );
    let status = std::process::Command::new("mkfifo")
        .arg(dir.path().join("pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    let out = berth(dir.path())
        .args(["sync", "--once", "--dry-run", "--engine", "podman"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    insta::assert_snapshot!(err, @"error: [tmp]/pipe: `from:` is not a regular file or a directory (a FIFO, a socket or a device); sync files or directories");
}

/// An "API server" no real one is (a misbehaving peer): every request gets
/// `head` and then `body` repeated `times` times.
fn fake_api_server(head: &'static str, body: &'static [u8], times: usize) -> String {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let server = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut client in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                let _ = client.read(&mut buf);
                let _ = client.write_all(head.as_bytes());
                for _ in 0..times {
                    if client.write_all(body).is_err() {
                        return;
                    }
                }
            });
        }
    });
    server
}

#[test]
fn an_api_server_answer_that_never_ends_or_is_html_is_refused_clearly() {
    let _filters = crate::common::snapshot_filters();
    static CHUNK: [u8; 65536] = [b' '; 65536];
    let endless = fake_api_server(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n[",
        &CHUNK,
        usize::MAX,
    );
    let kubeconfig = |server: &str| {
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: '{server}'}}}}]\n\
             users: [{{name: u, user: {{token: t}}}}]\ncontexts: [{{name: c, context: {{cluster: c, user: u}}}}]\ncurrent-context: c\n"
        )
    };
    let (err, took) = diff_with_kubeconfig(&kubeconfig(&endless), &[]);
    insta::assert_snapshot!(err, @"error: discover the v1 API from http://127.0.0.1:[port]/: the answer is larger than 128 MiB, berth's bound on one answer; is http://127.0.0.1:[port]/ a Kubernetes API server (a proxy in front of it may be streaming)?");
    assert!(took < std::time::Duration::from_secs(60), "{took:?}");
    let html = fake_api_server(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 22\r\nConnection: close\r\n\r\n",
        b"<html>Sign in</html>\r\n",
        1,
    );
    let (err, _) = diff_with_kubeconfig(&kubeconfig(&html), &[]);
    insta::assert_snapshot!(err, @"error: discover the v1 API from http://127.0.0.1:[port]/: the answer is not the API server's JSON (expected value at line 1 column 1); is http://127.0.0.1:[port]/ the API server itself, not a proxy, a login page or a redirect (berth does not follow redirects)?");
}

#[test]
fn the_controller_never_logs_a_token_an_api_server_echoes() {
    // 401 for everything, with the request's Authorization header in the message.
    let server = fake_api_server(
        "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n",
        br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"request carried Authorization: Bearer pl4nted-t0ken-abcdefghijklmnopqrs","reason":"Unauthorized","code":401}"#,
        1,
    );
    let dir = project("name: demo\n");
    std::fs::write(
        dir.path().join("kubeconfig"),
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: '{server}'}}}}]\n\
             users: [{{name: u, user: {{token: pl4nted-t0ken-abcdefghijklmnopqrs}}}}]\ncontexts: [{{name: c, context: {{cluster: c, user: u}}}}]\ncurrent-context: c\n"
        ),
    )
    .unwrap();
    let mut child = std::process::Command::new(super::common::berth_path())
        .current_dir(dir.path())
        .env_clear()
        .args([
            "controller",
            "--kubeconfig",
            "kubeconfig",
            "--listen",
            "127.0.0.1:0",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(4));
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let log = stderr(&out);
    assert!(
        log.contains(" WARN ") && log.contains("Unauthorized"),
        "it did log the failure: {log}"
    );
    assert!(!log.contains("pl4nted"), "the token leaked: {log}");
    assert!(
        !log.contains("Status {") && !log.contains("ErrorResponse {"),
        "a Debug dump: {log}"
    );
}
