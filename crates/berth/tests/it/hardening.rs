//! Reproducers of the hardening issue: each case misbehaved before its fix (a
//! value that could only hang or fail later was accepted, a secret was printed,
//! a panic). Every case checks the exit code and the whole of what was printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
#[path = "hardening/sweep3.rs"]
mod sweep3;

use common::{berth, project};

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn flags_that_could_only_hang_or_fail_later_are_refused_up_front() {
    let dir = project("name: demo\nimages:\n  app: {image: ghcr.io/acme/app:v1}\n");
    let cases: &[(&[&str], &str)] = &[
        (
            &["pin", "--concurrency", "0"],
            "'--concurrency <N>': must be at least 1",
        ),
        (
            &["pin", "--timeout", "0"],
            "'--timeout <SECONDS>': must be at least 1 second",
        ),
        (
            &["apply", "--rollout-timeout", "0"],
            "'--rollout-timeout <SECONDS>': must be at least 1 second",
        ),
        (
            &["pin", "--insecure-registry", "http://localhost:5000/"],
            "give the host without a scheme (`localhost:5000`)",
        ),
        (
            &["controller", "--insecure-registry", "localhost:5000/v2"],
            "`localhost:5000/v2` is not a registry host; write HOST or HOST:PORT",
        ),
    ];
    for (args, want) in cases {
        let out = berth(dir.path()).args(*args).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}:\n{err}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
    }
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn a_typo_in_a_secret_env_file_never_prints_the_value() {
    for line in [
        "DB_PASS2 pl4nted-s3cr3t",
        "DB_PASS:pl4nted-s3cr3t",
        "9pl4nted-s3cr3t",
    ] {
        let dir = project(
            "name: demo\nmanifests: [app.yaml]\nconfigs:\n  db:\n    secret: true\n    envs: [db.env]\n",
        );
        std::fs::write(dir.path().join("app.yaml"), "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: x, envFrom: [{secretRef: {name: db}}]}]\n").unwrap();
        std::fs::write(dir.path().join("db.env"), format!("OK=1\n{line}\n")).unwrap();
        // The planted value is in db.env itself; everything else is checked.
        let before = walk(dir.path());
        for args in [&["render"][..], &["validate"], &["render", "--out", "out"]] {
            let out = berth(dir.path()).args(args).output().unwrap();
            assert_ne!(out.status.code(), Some(0), "{line:?} {args:?}");
            let printed = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(printed.contains("db.env:2: column"), "{line:?}: {printed}");
            assert!(
                !printed.contains("pl4nted"),
                "{line:?} {args:?} leaked: {printed}"
            );
            let added: Vec<_> = walk(dir.path())
                .into_iter()
                .filter(|f| !before.contains(f))
                .collect();
            for file in added {
                let text = std::fs::read_to_string(&file).unwrap_or_default();
                assert!(!text.contains("pl4nted"), "{} leaked it", file.display());
            }
        }
    }
}

/// berth as a plain process, whose streams can be any file.
fn plain(dir: &std::path::Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(common::berth_path());
    cmd.current_dir(dir);
    cmd
}

#[test]
fn an_unwritable_stderr_or_stdout_is_an_exit_code_not_a_panic() {
    let _filters = crate::common::snapshot_filters();
    let bad = project("name: demo\nimages:\n  app: {image: 'BAD REF'}\n");
    let good = project("name: demo\nimages:\n  app: {image: 'ghcr.io/acme/app:v1'}\n");
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    // stderr full: the error cannot be told, the exit code still says it.
    let out = plain(bad.path())
        .arg("images")
        .stderr(full())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let out = plain(good.path())
        .args(["images", "--explain"])
        .stderr(full())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "only the explanation was lost");
    // stdout full: said on stderr, naming stdout.
    let out = plain(good.path())
        .arg("images")
        .stdout(full())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!(stderr(&out), @"error: cannot write the output to stdout: No space left on device (os error 28)");
}

#[test]
fn files_outside_the_project_are_refused_unless_the_restrictor_is_none() {
    let _filters = crate::common::snapshot_filters();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "pl4nted-outside\n").unwrap();
    std::fs::write(
        outside.path().join("deploy.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    )
    .unwrap();
    let o = outside.path().display().to_string();
    let cases = [
        (
            format!("configs:\n  c: {{files: ['{o}/secret.txt']}}\n"),
            "configs.c: cannot read",
        ),
        (
            format!(
                "configs:\n  c: {{files: ['../{}/secret.txt']}}\n",
                outside.path().file_name().unwrap().to_str().unwrap()
            ),
            "configs.c: cannot read",
        ),
        (
            format!("caBundles:\n  ca: {{sources: ['{o}/secret.txt']}}\n"),
            "caBundles.ca: cannot read",
        ),
        (
            format!("configs:\n  c: {{literals: [a=b], schema: '{o}/secret.txt'}}\n"),
            "schema",
        ),
        (
            format!("manifests: ['{o}/deploy.yaml']\n"),
            "(from berth.yaml:2:13 (`manifests:`))",
        ),
    ];
    for (body, want) in &cases {
        let dir = project(&format!("name: demo\n{body}"));
        // Relative `../` paths are written relative to the project's parent.
        let out = berth(dir.path()).arg("render").output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{body}: {err}");
        assert!(err.contains(want), "{body}:\n{err}");
        assert!(
            err.contains("outside the project directory"),
            "{body}:\n{err}"
        );
        assert!(err.contains("--load-restrictor none"), "{body}:\n{err}");
        assert!(!err.contains("pl4nted"), "{body}: leaked {err}");
        assert!(out.stdout.is_empty(), "{body}: no partial output");
    }
    // The opt-out, as kustomize's: the absolute file is read.
    let dir = project(&format!("name: demo\nmanifests: ['{o}/deploy.yaml']\nconfigs:\n  c: {{files: ['{o}/secret.txt']}}\n"));
    let out = berth(dir.path())
        .args(["render", "--load-restrictor", "none"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // A symlink inside the project that points out is outside too.
    let dir = project("name: demo\nconfigs:\n  c: {files: [link.txt]}\nmanifests: [app.yaml]\n");
    std::fs::write(
        dir.path().join("app.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y}\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        dir.path().join("link.txt"),
    )
    .unwrap();
    let out = berth(dir.path()).arg("render").output().unwrap();
    insta::assert_snapshot!(stderr(&out), @"error: berth.yaml:3:15: configs.c: cannot read `link.txt`: it is outside the project directory `[tmp]` (it resolves to `[tmp]/secret.txt`); berth reads only files under the directory of berth.yaml (as kustomize does): move the file in, or pass `--load-restrictor none`");
}

#[test]
fn endless_and_blocking_inputs_fail_fast() {
    let _filters = crate::common::snapshot_filters();
    let dir = project("name: demo\n");
    let started = std::time::Instant::now();
    for args in [
        &["--project", "/dev/zero", "images"][..],
        &["render", "/dev/zero"],
    ] {
        let out = berth(dir.path()).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&out).contains("not a regular file"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    // A pipe given on the command line is read (`berth render <(helm template …)`).
    let out = plain(dir.path())
        .args(["render", "/dev/stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write as _;
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: piped}\n")?;
            drop(stdin);
            child.wait_with_output()
        })
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("name: piped"));
    // A FIFO as berth.yaml: an error, not a hang, and no parent's berth.yaml instead.
    let parent = project("name: parent\n");
    let child = parent.path().join("child");
    std::fs::create_dir(&child).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(child.join("berth.yaml"))
        .status()
        .unwrap();
    assert!(status.success());
    let out = berth(&child).arg("images").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!(stderr(&out), @"error: cannot read berth.yaml: it is not a regular file (a FIFO, a socket or a device); give a file");
    // Endless stdin stops at the limit.
    let mut child = plain(dir.path())
        .args(["render", "-"])
        .stdin(std::fs::File::open("/dev/zero").unwrap())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1));
    assert!(
        started.elapsed().as_secs() < 20,
        "all of it in bounded time"
    );
}

/// `berth render -` fed by `feed` on a thread; the exit status and stderr once
/// berth has exited, within 10 s, and how many bytes `feed` got written.
fn render_stream(
    feed: impl FnOnce(&mut std::process::ChildStdin) -> u64 + Send + 'static,
) -> (Option<i32>, String, u64) {
    let dir = project("name: demo\n");
    let mut child = plain(dir.path())
        .args(["render", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (done, finished) = std::sync::mpsc::channel();
    let writer = std::thread::spawn(move || {
        let written = feed(&mut stdin);
        // Hold the pipe open (no end of input) until berth has exited.
        let _ = finished.recv_timeout(std::time::Duration::from_secs(10));
        written
    });
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > std::time::Duration::from_secs(10) {
            let _ = child.kill();
            panic!("berth still reads a stream whose error it has seen");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let _ = done.send(());
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    (status.code(), err, writer.join().unwrap())
}

#[test]
fn errors_in_an_endless_stream_are_reported_as_it_arrives() {
    use std::io::Write as _;
    // A duplicate key on line 4, then input without end: reported at once, not at a limit.
    let (code, err, written) = render_stream(|stdin| {
        let mut written = 0;
        let head = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\nmetadata: {name: b}\n";
        if stdin.write_all(head).is_ok() {
            written += head.len() as u64;
            let line = "x: y\n".repeat(1000);
            while stdin.write_all(line.as_bytes()).is_ok() {
                written += line.len() as u64;
            }
        }
        written
    });
    assert_eq!(code, Some(1));
    assert_eq!(
        err,
        "error: <stdin>:4:1: duplicate key `metadata` (first at line 3); remove one of them\n"
    );
    assert!(
        written < 4 << 20,
        "berth read {written} bytes past the error"
    );
    // A stream that stays open after a bad document: the error comes before its end
    // (once the parser has the next token, which it needs to know the error is one).
    let (code, err, _) = render_stream(|stdin| {
        let docs = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkind: [}\n---\napiVersion: v1\n";
        stdin.write_all(docs).map_or(0, |()| docs.len() as u64)
    });
    assert_eq!(code, Some(1));
    assert!(err.starts_with("error: <stdin>:5:8: invalid YAML"), "{err}");
    // Bytes that are not UTF-8 are named with their offset, as in a file.
    let (code, err, _) = render_stream(|stdin| {
        let bytes = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: \xff}\n";
        stdin.write_all(bytes).map_or(0, |()| bytes.len() as u64)
    });
    assert_eq!(code, Some(1));
    assert_eq!(
        err,
        "error: <stdin>: not UTF-8 text (invalid byte at offset 48); manifests must be UTF-8 YAML\n"
    );
}

#[test]
fn render_out_never_deletes_a_file_it_did_not_write() {
    let _filters = crate::common::snapshot_filters();
    let dir = project("name: demo\nmanifests: [app.yaml]\n");
    std::fs::write(
        dir.path().join("app.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
    )
    .unwrap();
    let render = || {
        berth(dir.path())
            .args(["render", "--out", "out"])
            .output()
            .unwrap()
    };
    assert!(render().status.success());
    assert!(render().status.success(), "its own output is replaced");
    std::fs::write(dir.path().join("out/NOTES.md"), "mine").unwrap();
    let out = render();
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!(stderr(&out), @"error: --out out: it holds `NOTES.md` that berth render did not write, and replacing the directory would delete it; move it elsewhere, or choose another directory");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out/NOTES.md")).unwrap(),
        "mine",
        "the user's file is still there"
    );
    // --out naming a file: says so, with the path.
    std::fs::write(dir.path().join("file.yaml"), "x").unwrap();
    let out = berth(dir.path())
        .args(["render", "--out", "file.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!(stderr(&out), @"error: --out file.yaml: it exists and is not a directory; --out takes a directory (one file per object); to get one file, redirect stdout");
}

/// A kubeconfig for `server` with a planted bearer token.
fn kubeconfig(dir: &std::path::Path, server: &str) -> std::path::PathBuf {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!("apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: '{server}'}}}}]\nusers: [{{name: u, user: {{token: pl4nted-bearer-token}}}}]\ncontexts: [{{name: x, context: {{cluster: c, user: u, namespace: default}}}}]\ncurrent-context: x\n"),
    )
    .unwrap();
    path
}

/// A server on 127.0.0.1 that answers each request with `answer(request head)`,
/// or never answers when `answer` gives `None`.
fn peer(answer: fn(&str) -> Option<String>) -> String {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for mut client in listener.incoming().flatten() {
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && client.read(&mut byte).is_ok_and(|n| n == 1) {
                head.push(byte[0]);
            }
            match answer(&String::from_utf8_lossy(&head)) {
                Some(response) => {
                    let _ = client.write_all(response.as_bytes());
                }
                None => held.push(client),
            }
        }
    });
    address
}

fn cluster_project() -> tempfile::TempDir {
    let dir = project("name: demo\nmanifests: [app.yaml]\n");
    std::fs::write(
        dir.path().join("app.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n",
    )
    .unwrap();
    dir
}

#[test]
fn a_peer_that_reflects_the_request_never_gets_the_token_printed() {
    let server = peer(refuse);
    let dir = cluster_project();
    let config = kubeconfig(dir.path(), &format!("http://{server}"));
    for command in ["diff", "apply"] {
        let out = berth(dir.path())
            .args([command, "--kubeconfig"])
            .arg(&config)
            .output()
            .unwrap();
        let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert_ne!(out.status.code(), Some(0), "{command}: {all}");
        assert!(
            all.contains("Bearer <redacted>") || !all.contains("Bearer"),
            "{command}: {all}"
        );
        assert!(
            !all.contains("pl4nted-bearer-token"),
            "{command} leaked the token: {all}"
        );
    }
}

/// A 500 answer whose body is the request head (a proxy that reflects it).
fn refuse(head: &str) -> Option<String> {
    Some(format!(
        "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{head}",
        head.len()
    ))
}

#[test]
fn kubeconfig_lists_skip_missing_files_as_kubectl_does() {
    let _filters = crate::common::snapshot_filters();
    let server = peer(refuse);
    let dir = cluster_project();
    let config = kubeconfig(dir.path(), &format!("http://{server}"));
    let list = format!("/nonexistent/kubeconfig:{}", config.display());
    let out = berth(dir.path())
        .arg("diff")
        .env("KUBECONFIG", &list)
        .output()
        .unwrap();
    // The good file was used: berth reached its server (which refuses).
    insta::assert_snapshot!(stderr(&out), @"error: discover the v1 API from http://127.0.0.1:[port]/: GET /api/v1 HTTP/1.1 authorization: Bearer <redacted> host: 127.0.0.1:[port]");
}

#[test]
fn a_server_that_never_answers_times_out() {
    let server = peer(|_| None);
    let dir = cluster_project();
    let config = kubeconfig(dir.path(), &format!("http://{server}"));
    for command in ["diff", "apply"] {
        let started = std::time::Instant::now();
        let out = berth(dir.path())
            .args([command, "--request-timeout", "2", "--kubeconfig"])
            .arg(&config)
            .output()
            .unwrap();
        assert_ne!(out.status.code(), Some(0), "{command}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "{command} took {:?}",
            started.elapsed()
        );
        assert!(stderr(&out).contains("2 s"), "{command}: {}", stderr(&out));
    }
}

/// The adversarial sweep of `scripts/sweep.py` (149 hostile inputs) finds nothing:
/// no hang, no panic, no bad input accepted, no planted secret printed or written.
#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn the_sweep_of_hostile_inputs_finds_no_defect() {
    let _filters = crate::common::snapshot_filters();
    common::require_program(common::Group::Tools, "python3");
    let out = std::process::Command::new("python3")
        .arg(common::repo_root().join("scripts/sweep.py"))
        .arg("--berth")
        .arg(common::berth_path())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{report}{}", stderr(&out));
    insta::assert_snapshot!(report, @"
    area         tried handled
    berth.yaml      48      48
    configs         27      27
    manifests       23      23
    references      16      16
    berth.lock       9       9
    arguments       18      18
    kubeconfig       8       8
    sweep 3         33      33
    total          182     182  defects: 0
    ");
}

/// Sweep 4, K98/K99/K99b: a malformed kubeconfig holding a token, a client key
/// and a password is named with its line and key by every cluster command and
/// the controller, and none of its values reaches stdout or stderr.
#[test]
fn k98_k99_a_malformed_kubeconfig_never_prints_its_credentials() {
    let dir =
        project("name: demo\nmanifests: [deploy/]\nimages:\n  app: {image: ghcr.io/acme/app:v1}\n");
    std::fs::create_dir(dir.path().join("deploy")).unwrap();
    std::fs::write(
        dir.path().join("deploy/pod.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata: {name: app}\nspec: {containers: [{name: app, image: ghcr.io/acme/app:v1}]}\n",
    )
    .unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1', certificate-authority-data: CASECRET}\nusers:\n- name: u\n  user:\n    token: TOKENSECRET\n    client-key-data: [KEYSECRET]\n    password: PASSSECRET\n",
    )
    .unwrap();
    for args in [
        &["diff"][..],
        &["apply"],
        &["gc", "--dry-run"],
        &["rollback"],
        &["controller", "--namespace", "x"],
    ] {
        let out = berth(dir.path())
            .args(args)
            .env("KUBECONFIG", &kubeconfig)
            .output()
            .unwrap();
        let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert!(!out.status.success(), "{args:?}: {all}");
        for secret in ["CASECRET", "TOKENSECRET", "KEYSECRET", "PASSSECRET"] {
            assert!(!all.contains(secret), "{args:?} printed {secret}: {all}");
        }
        assert!(
            all.contains("line 10, column 22 (`users[0].user.client-key-data`)"),
            "{args:?}: {all}"
        );
    }
}

/// Sweep 4, O27: a push whose rendered manifests hold Secrets is refused, the
/// Secrets named, until `--allow-secrets` confirms it (nothing is sent before).
#[test]
fn o27_a_push_of_rendered_secrets_needs_allow_secrets() {
    let dir = project("name: demo\nmanifests: [deploy/]\nconfigs:\n  creds:\n    secret: true\n    literals: [PASSWORD=hunter2]\n");
    std::fs::create_dir(dir.path().join("deploy")).unwrap();
    std::fs::write(
        dir.path().join("deploy/pod.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata: {name: app}\nspec: {containers: [{name: app, image: ghcr.io/acme/app:v1, envFrom: [{secretRef: {name: creds}}]}]}\n",
    )
    .unwrap();
    let out = berth(dir.path())
        .args(["push", "oci://127.0.0.1:1/team/demo:main"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the rendered manifests hold 1 Secret(s) (creds-")
            && err.contains("or pass --allow-secrets to publish them anyway"),
        "{err}"
    );
    assert!(!err.contains("hunter2"), "{err}");
    // Confirmed, it goes on to the registry (here: nothing listens).
    let out = berth(dir.path())
        .args([
            "push",
            "--allow-secrets",
            "oci://127.0.0.1:1/team/demo:main",
        ])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(
        err.contains("warning: pushing 1 Secret(s) (creds-"),
        "{err}"
    );
    assert!(!out.status.success());
}

/// Sweep 4, item 11: a custom resource whose kind starts in lowercase is valid
/// (the API server checks a CRD's kind without case, and kustomize's image
/// tests use `randomKind`); its images are rewritten through `imagePaths`.
#[test]
fn item11_a_lowercase_crd_kind_is_accepted() {
    let dir = project("name: demo\nmanifests: [deploy/]\nimages:\n  app: {image: ghcr.io/acme/app:v1}\nimagePaths:\n  - {kind: randomKind, path: spec.image}\n");
    std::fs::create_dir(dir.path().join("deploy")).unwrap();
    std::fs::write(
        dir.path().join("deploy/cr.yaml"),
        "apiVersion: example.com/v1\nkind: randomKind\nmetadata: {name: x}\nspec: {image: ghcr.io/acme/app:v1}\n",
    )
    .unwrap();
    let out = berth(dir.path())
        .arg("render")
        .env("APP_TAG", "v2")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("image: ghcr.io/acme/app:v2"));
    let bad = "apiVersion: v1\nkind: 9lives\nmetadata: {name: x}\n";
    std::fs::write(dir.path().join("deploy/cr.yaml"), bad).unwrap();
    let out = berth(dir.path()).arg("render").output().unwrap();
    assert!(
        stderr(&out).contains("starting with a letter"),
        "{}",
        stderr(&out)
    );
}

/// Sweep 4, R70/W30: a 100 KB value is shown cut, and the reason after it is
/// kept (it used to fall off the message's 2,000-character line).
#[test]
fn r70_w30_a_huge_value_keeps_its_reason() {
    let dir = project("name: x\nimages:\n  web: {image: ghcr.io/acme/web:v1}\n");
    let huge = "a".repeat(100_000);
    for (variable, reason) in [
        ("WEB_IMAGE", "repository name is 100000 characters long"),
        ("WEB_TAG", "a tag is 1 to 128 letters"),
    ] {
        let out = berth(dir.path())
            .arg("images")
            .env(variable, &huge)
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1));
        assert!(
            err.len() < 1_000 && err.contains(reason),
            "{variable}: {err}"
        );
    }
}
