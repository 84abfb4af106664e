//! `berth pin`, `berth.lock`, `--locked` and `render --pin` against a real
//! registry, with digests checked against `skopeo inspect`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking

use crate::common;

use std::fs;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use base64::Engine as _;
use common::registry::{free_port, Layout, TestRegistry};
use common::{berth, project};

fn project_for(registry: &TestRegistry, images: &[(&str, &str)]) -> tempfile::TempDir {
    let mut text = String::from("name: pins\nmanifests: [app.yaml]\nimages:\n");
    for (component, image) in images {
        text.push_str(&format!(
            "  {component}: {{image: '{}/{image}', pullPolicy: auto}}\n",
            registry.host
        ));
    }
    let dir = project(&text);
    let first = images[0].1.split(':').next().unwrap();
    fs::write(
        dir.path().join("app.yaml"),
        format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  containers:\n  - {{name: a, image: '{}/{first}:old', imagePullPolicy: Always}}\n", registry.host),
    )
    .unwrap();
    dir
}

#[test]
#[cfg_attr(
    not(feature = "test-registry"),
    ignore = "needs test-registry (run scripts/test)"
)]
fn pin_writes_the_lock_and_locked_uses_it() {
    let _filters = common::snapshot_filters();
    let registry = TestRegistry::start(None);
    let epp = registry.push(&Layout::image("epp", 2, 1000), "llm-d/epp", "dev");
    let sidecar = registry.push(&Layout::image("sidecar", 1, 100), "llm-d/sidecar", "v1");
    let dir = project_for(
        &registry,
        &[("epp", "llm-d/epp:dev"), ("sidecar", "llm-d/sidecar:v1")],
    );
    let insecure = ["--insecure-registry", registry.host.as_str()];

    let out = berth(dir.path())
        .arg("pin")
        .args(insecure)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    insta::assert_snapshot!(common::transcript(&out), @"
    exit: 0
    --- stdout
    --- stderr
    pinned 2 image(s) in [time] s; berth.lock written
    ");
    let lock = fs::read_to_string(dir.path().join("berth.lock")).unwrap();
    let want = format!(
        "# berth.lock: image digests pinned by `berth pin`. Commit it; regenerate it with `berth pin`.\nversion: 1\nimages:\n- component: epp\n  image: {h}/llm-d/epp:dev\n  digest: {epp}\n- component: sidecar\n  image: {h}/llm-d/sidecar:v1\n  digest: {sidecar}\n",
        h = registry.host
    );
    assert_eq!(lock, want);

    // Nothing changed: the file is not rewritten.
    let modified = fs::metadata(dir.path().join("berth.lock"))
        .unwrap()
        .modified()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let out = berth(dir.path())
        .arg("pin")
        .args(insecure)
        .output()
        .unwrap();
    insta::assert_snapshot!(common::transcript(&out), @"
    exit: 0
    --- stdout
    --- stderr
    pinned 2 image(s) in [time] s; berth.lock unchanged
    ");
    assert_eq!(
        fs::metadata(dir.path().join("berth.lock"))
            .unwrap()
            .modified()
            .unwrap(),
        modified
    );

    // --locked: every consumer sees repo:tag@digest; auto pull policy becomes IfNotPresent.
    let out = berth(dir.path())
        .args(["images", "--locked", "-o", "env"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "EPP_IMAGE={h}/llm-d/epp:dev@{epp}\nSIDECAR_IMAGE={h}/llm-d/sidecar:v1@{sidecar}\n",
            h = registry.host
        )
    );
    let out = berth(dir.path())
        .args(["render", "--locked"])
        .output()
        .unwrap();
    let yaml = String::from_utf8_lossy(&out.stdout);
    // Quoted: a plain scalar starting with a digit could read as a number.
    assert!(
        yaml.contains(&format!(
            "image: \"{}/llm-d/epp:dev@{epp}\"\n    imagePullPolicy: IfNotPresent",
            registry.host
        )),
        "{yaml}"
    );

    // A tag the lock does not know: a clear error, not a silent unpinned image.
    let out = berth(dir.path())
        .args(["images", "--locked", "--tag", "epp=v2"])
        .output()
        .unwrap();
    insta::assert_snapshot!(common::transcript(&out), @"
    exit: 1
    --- stdout
    --- stderr
    error: component `epp`: berth.lock has no digest for `127.0.0.1:[port]/llm-d/epp:v2` (it pins `127.0.0.1:[port]/llm-d/epp:dev`); run `berth pin` to update the lock, or drop --locked
    ");

    // render --pin pins on the fly and writes no lock.
    fs::remove_file(dir.path().join("berth.lock")).unwrap();
    let out = berth(dir.path())
        .args(["render", "--pin"])
        .args(insecure)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("@{epp}")));
    assert!(!dir.path().join("berth.lock").exists());
    let out = berth(dir.path())
        .args(["images", "--locked"])
        .output()
        .unwrap();
    insta::assert_snapshot!(common::transcript(&out), @"
    exit: 1
    --- stdout
    --- stderr
    error: --locked needs berth.lock next to berth.yaml; run `berth pin` first
    ");
}

#[test]
#[cfg_attr(
    not(feature = "test-registry"),
    ignore = "needs test-registry (run scripts/test)"
)]
fn multi_platform_images_pin_the_index_or_one_platform() {
    let _filters = common::snapshot_filters();
    let registry = TestRegistry::start(None);
    let index = registry.push(&Layout::index("multi"), "acme/multi", "v1");
    let arm64 = registry.skopeo_digest("acme/multi:v1", Some("arm64"));
    assert_ne!(index, arm64);
    let dir = project_for(&registry, &[("multi", "acme/multi:v1")]);
    let insecure = ["--insecure-registry", registry.host.as_str()];
    berth(dir.path())
        .arg("pin")
        .args(insecure)
        .assert()
        .success();
    assert!(fs::read_to_string(dir.path().join("berth.lock"))
        .unwrap()
        .contains(&format!("digest: {index}\n")));
    berth(dir.path())
        .args(["pin", "--platform", "linux/arm64"])
        .args(insecure)
        .assert()
        .success();
    let lock = fs::read_to_string(dir.path().join("berth.lock")).unwrap();
    assert!(
        lock.contains(&format!("digest: {arm64}\n  platform: linux/arm64\n")),
        "{lock}"
    );
    let out = berth(dir.path())
        .args(["pin", "--platform", "windows/amd64"])
        .args(insecure)
        .output()
        .unwrap();
    insta::assert_snapshot!(common::transcript(&out), @"
    exit: 1
    --- stdout
    --- stderr
    error: 127.0.0.1:[port]/acme/multi:v1: no manifest for platform `windows/amd64` in its index (it has: linux/amd64, linux/arm64); berth.lock is unchanged
    ");
    assert!(
        fs::read_to_string(dir.path().join("berth.lock"))
            .unwrap()
            .contains("linux/arm64"),
        "lock untouched on failure"
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-registry"),
    ignore = "needs test-registry (run scripts/test)"
)]
fn a_single_platform_image_of_another_platform_is_not_pinned_as_if_it_matched() {
    let _filters = common::snapshot_filters();
    let registry = TestRegistry::start(None);
    let digest = registry.push(&Layout::image("single", 1, 10), "acme/single", "v1");
    let dir = project_for(&registry, &[("single", "acme/single:v1")]);
    let insecure = ["--insecure-registry", registry.host.as_str()];
    let out = berth(dir.path())
        .args(["pin", "--platform", "linux/arm64"])
        .args(insecure)
        .output()
        .unwrap();
    insta::assert_snapshot!(common::transcript(&out), @"
    exit: 1
    --- stdout
    --- stderr
    error: 127.0.0.1:[port]/acme/single:v1: no manifest for platform `linux/arm64` in its index (it has: linux/amd64 only: it is a single-platform image, not an index); berth.lock is unchanged
    ");
    assert!(!dir.path().join("berth.lock").exists(), "nothing written");
    // Its own platform pins it.
    berth(dir.path())
        .args(["pin", "--platform", "linux/amd64"])
        .args(insecure)
        .assert()
        .success();
    let lock = fs::read_to_string(dir.path().join("berth.lock")).unwrap();
    assert!(
        lock.contains(&format!("digest: {digest}\n  platform: linux/amd64\n")),
        "{lock}"
    );
    // promote copies whole images: --platform is refused, not ignored.
    let out = berth(dir.path())
        .args([
            "promote",
            "--to",
            "127.0.0.1:1/x",
            "--platform",
            "linux/arm64",
        ])
        .output()
        .unwrap();
    insta::assert_snapshot!(common::transcript(&out), @"
    exit: 1
    --- stdout
    --- stderr
    error: --platform linux/arm64 does not apply to `berth promote`: it copies each image whole (every platform of an index), so the target has the source's digest; drop --platform, and pin one platform afterwards with `berth pin --platform linux/arm64`
    ");
}

/// Sweep 4, item 9: after `podman login` — to REGISTRY_AUTH_FILE, or to its
/// default `$XDG_RUNTIME_DIR/containers/auth.json` — `berth pin` uses that login.
#[test]
#[cfg_attr(
    not(all(feature = "test-podman", feature = "test-registry")),
    ignore = "needs test-podman, test-registry (run scripts/test)"
)]
fn pin_works_after_podman_login() {
    let _filters = common::snapshot_filters();
    common::require_program(common::Group::Podman, "podman");
    let registry = TestRegistry::start(Some(("berth", "s3cret")));
    let digest = registry.push(&Layout::image("private", 1, 10), "team/private", "v1");
    let dir = project_for(&registry, &[("private", "team/private:v1")]);
    let insecure = ["--insecure-registry", registry.host.as_str()];
    let home = tempfile::tempdir().unwrap();
    let runtime = tempfile::tempdir().unwrap();
    let auth_file = home.path().join("auth.json");
    for (variable, value, written) in [
        ("REGISTRY_AUTH_FILE", auth_file.clone(), auth_file.clone()),
        (
            "XDG_RUNTIME_DIR",
            runtime.path().to_path_buf(),
            runtime.path().join("containers/auth.json"),
        ),
    ] {
        let login = std::process::Command::new("podman")
            .args([
                "login",
                "--tls-verify=false",
                "-u",
                "berth",
                "--password-stdin",
                &registry.host,
            ])
            .env(variable, &value)
            .env("HOME", home.path())
            .stdin(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write as _;
                child.stdin.take().unwrap().write_all(b"s3cret")?;
                child.wait_with_output()
            })
            .unwrap();
        assert!(
            login.status.success(),
            "podman login: {}",
            String::from_utf8_lossy(&login.stderr)
        );
        assert!(
            written.is_file(),
            "podman login wrote {}",
            written.display()
        );
        let _ = fs::remove_file(dir.path().join("berth.lock"));
        let out = berth(dir.path())
            .arg("pin")
            .args(insecure)
            .env(variable, &value)
            .env("HOME", home.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{variable}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(fs::read_to_string(dir.path().join("berth.lock"))
            .unwrap()
            .contains(&digest));
        fs::remove_file(&written).unwrap();
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-registry"),
    ignore = "needs test-registry (run scripts/test)"
)]
fn credentials_come_from_the_docker_config() {
    let _filters = common::snapshot_filters();
    let registry = TestRegistry::start(Some(("berth", "s3cret")));
    let digest = registry.push(&Layout::image("private", 1, 10), "team/private", "v1");
    let dir = project_for(&registry, &[("private", "team/private:v1")]);
    let insecure = ["--insecure-registry", registry.host.as_str()];
    let docker = tempfile::tempdir().unwrap();

    let out = berth(dir.path())
        .arg("pin")
        .args(insecure)
        .env("DOCKER_CONFIG", docker.path())
        .output()
        .unwrap();
    insta::assert_snapshot!(common::transcript(&out), @"
    exit: 1
    --- stdout
    --- stderr
    error: 127.0.0.1:[port]/team/private:v1: registry `127.0.0.1:[port]` refused access (401 Unauthorized); no login for `127.0.0.1:[port]` was found (REGISTRY_AUTH_FILE or $XDG_RUNTIME_DIR/containers/auth.json, ~/.config/containers/auth.json, then the Docker config); log in with `podman login 127.0.0.1:[port]` or `docker login 127.0.0.1:[port]`; berth.lock is unchanged
    ");
    assert!(!dir.path().join("berth.lock").exists());

    let auth = base64::engine::general_purpose::STANDARD.encode("berth:s3cret");
    fs::write(
        docker.path().join("config.json"),
        format!(
            r#"{{"auths": {{"{}": {{"auth": "{auth}"}}}}}}"#,
            registry.host
        ),
    )
    .unwrap();
    let out = berth(dir.path())
        .arg("pin")
        .args(insecure)
        .env("DOCKER_CONFIG", docker.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(fs::read_to_string(dir.path().join("berth.lock"))
        .unwrap()
        .contains(&digest));

    // A working helper, through credHelpers and through credsStore.
    let bin = tempfile::tempdir().unwrap();
    let helper = bin.path().join("docker-credential-berth-test");
    fs::write(&helper, "#!/bin/sh\nread server\nprintf '{\"ServerURL\":\"%s\",\"Username\":\"berth\",\"Secret\":\"s3cret\"}' \"$server\"\n").unwrap();
    fs::set_permissions(&helper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap()
    );
    for config in [
        format!(
            r#"{{"credHelpers": {{"{}": "berth-test"}}}}"#,
            registry.host
        ),
        r#"{"credsStore": "berth-test"}"#.to_string(),
    ] {
        fs::remove_file(dir.path().join("berth.lock")).unwrap();
        fs::write(docker.path().join("config.json"), &config).unwrap();
        let out = berth(dir.path())
            .arg("pin")
            .args(insecure)
            .env("DOCKER_CONFIG", docker.path())
            .env("PATH", &path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{config}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(fs::read_to_string(dir.path().join("berth.lock"))
            .unwrap()
            .contains(&digest));
    }

    // A credential helper that fails is named.
    fs::write(
        docker.path().join("config.json"),
        format!(
            r#"{{"credHelpers": {{"{}": "berth-test-absent"}}}}"#,
            registry.host
        ),
    )
    .unwrap();
    let out = berth(dir.path())
        .arg("pin")
        .args(insecure)
        .env("DOCKER_CONFIG", docker.path())
        .output()
        .unwrap();
    insta::assert_snapshot!(common::transcript(&out), @"
    exit: 1
    --- stdout
    --- stderr
    error: credential helper `docker-credential-berth-test-absent` failed for `127.0.0.1:[port]`: cannot run `docker-credential-berth-test-absent`: No such file or directory (os error 2); install it or remove it from the Docker config; berth.lock is unchanged
    ");
}

#[test]
#[cfg_attr(
    not(feature = "test-registry"),
    ignore = "needs test-registry (run scripts/test)"
)]
fn faults_are_clear_and_leave_the_lock_untouched() {
    let registry = TestRegistry::start(None);
    registry.push(&Layout::image("x", 1, 10), "acme/x", "v1");
    let dir = project_for(&registry, &[("x", "acme/x:v1")]);
    let insecure = ["--insecure-registry", registry.host.as_str()];
    berth(dir.path())
        .arg("pin")
        .args(insecure)
        .assert()
        .success();
    let before = fs::read_to_string(dir.path().join("berth.lock")).unwrap();

    let down = format!("127.0.0.1:{}", free_port());
    let cases: Vec<(Vec<String>, String)> = vec![
        (
            vec!["--tag".into(), "x=nope".into()],
            format!(
                "{}/acme/x:nope: not found in registry `{}`",
                registry.host, registry.host
            ),
        ),
        (
            vec![
                "--image".into(),
                format!("x={down}/acme/x:v1"),
                "--insecure-registry".into(),
                down.clone(),
            ],
            format!("{down}/acme/x:v1: cannot reach registry `{down}`"),
        ),
        (
            vec![],
            "a plain-HTTP registry needs `--insecure-registry".to_string(),
        ),
    ];
    for (args, want) in cases {
        let mut cmd = berth(dir.path());
        cmd.arg("pin").args(&args);
        if !args.iter().any(|a| a == "--insecure-registry") && !want.contains("plain-HTTP") {
            cmd.args(insecure);
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains(&want) && stderr.contains("berth.lock is unchanged"),
            "\n got: {stderr}\nwant: {want}"
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("berth.lock")).unwrap(),
            before
        );
    }
}

/// `berth pin` with `component` pointed at `host/path`, reached over plain HTTP.
fn pin_via(
    dir: &std::path::Path,
    component: &str,
    host: &str,
    path: &str,
    extra: &[&str],
) -> std::process::Output {
    berth(dir)
        .arg("pin")
        .args(extra)
        .args([
            "--image",
            &format!("{component}={host}/{path}"),
            "--insecure-registry",
            host,
        ])
        .output()
        .unwrap()
}

/// A proxy that answers 503 to the first `failures` requests, then forwards to `upstream`.
fn flaky_proxy(upstream: String, failures: usize) -> (String, Arc<AtomicUsize>) {
    failing_proxy(
        upstream,
        failures,
        "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    )
}

/// A proxy that sends `answer` to the first `failures` requests, then forwards to `upstream`.
fn failing_proxy(
    upstream: String,
    failures: usize,
    answer: &'static str,
) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let host = listener.local_addr().unwrap().to_string();
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            if n < failures {
                let mut client = client;
                let mut buf = [0u8; 4096];
                let _ = client.read(&mut buf);
                let _ = client.write_all(answer.as_bytes());
                continue;
            }
            let Ok(server) = TcpStream::connect(&upstream) else {
                continue;
            };
            let (mut c1, mut s1) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            let (mut c2, mut s2) = (client, server);
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut c1, &mut s1);
            });
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut s2, &mut c2);
            });
        }
    });
    (host, seen)
}

#[test]
#[cfg_attr(
    not(feature = "test-registry"),
    ignore = "needs test-registry (run scripts/test)"
)]
fn server_errors_are_retried_and_timeouts_reported() {
    let _filters = crate::common::snapshot_filters();
    let registry = TestRegistry::start(None);
    let digest = registry.push(&Layout::image("flaky", 1, 10), "acme/flaky", "v1");
    let (proxy, seen) = flaky_proxy(registry.host.clone(), 2);
    let dir = project_for(&registry, &[("flaky", "acme/flaky:v1")]);
    let out = pin_via(dir.path(), "flaky", &proxy, "acme/flaky:v1", &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(fs::read_to_string(dir.path().join("berth.lock"))
        .unwrap()
        .contains(&digest));
    assert!(seen.load(Ordering::SeqCst) >= 3, "two 503s, then success");

    // A registry that always fails: the attempts are counted in the message.
    let (broken, _) = flaky_proxy(registry.host.clone(), usize::MAX);
    let out = pin_via(dir.path(), "flaky", &broken, "acme/flaky:v1", &[]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("failed after 4 attempts"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A server that accepts and never answers.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_host = silent.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let held: Vec<TcpStream> = silent.incoming().flatten().collect();
        drop(held);
    });
    let started = std::time::Instant::now();
    let out = pin_via(
        dir.path(),
        "flaky",
        &silent_host,
        "acme/flaky:v1",
        &["--timeout", "1"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("did not answer within 1 s"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(started.elapsed().as_secs() < 10);
    let lock = fs::read_to_string(dir.path().join("berth.lock")).unwrap();
    assert!(
        lock.contains(&digest),
        "the failed pin left berth.lock as it was"
    );

    // 403 Forbidden: a clear refusal naming image and registry, not retried.
    let forbidden = "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    let (proxy, seen) = failing_proxy(registry.host.clone(), usize::MAX, forbidden);
    let out = pin_via(dir.path(), "flaky", &proxy, "acme/flaky:v1", &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    insta::assert_snapshot!(stderr, @"error: 127.0.0.1:[port]/acme/flaky:v1: registry `127.0.0.1:[port]` refused access (403 Forbidden); no login for `127.0.0.1:[port]` was found (REGISTRY_AUTH_FILE or $XDG_RUNTIME_DIR/containers/auth.json, ~/.config/containers/auth.json, then the Docker config); log in with `podman login 127.0.0.1:[port]` or `docker login 127.0.0.1:[port]`; berth.lock is unchanged");
    assert!(seen.load(Ordering::SeqCst) <= 3, "a 403 is not retried");
    assert_eq!(
        fs::read_to_string(dir.path().join("berth.lock")).unwrap(),
        lock
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-registry"),
    ignore = "needs test-registry (run scripts/test)"
)]
fn retry_after_is_honoured() {
    let registry = TestRegistry::start(None);
    let digest = registry.push(&Layout::image("slow", 1, 10), "acme/slow", "v1");
    let dir = project_for(&registry, &[("slow", "acme/slow:v1")]);
    let limited = "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    // Three refusals: the first lands on the one authentication probe per repository
    // (oci-client's `GET /v2/`), the next two on the manifest HEAD that berth retries.
    let (proxy, _) = failing_proxy(registry.host.clone(), 3, limited);
    let started = std::time::Instant::now();
    let out = pin_via(dir.path(), "slow", &proxy, "acme/slow:v1", &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(fs::read_to_string(dir.path().join("berth.lock"))
        .unwrap()
        .contains(&digest));
    // Exponential backoff alone would wait 0.25 s + 0.5 s; the registry asked for 1 s twice.
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(2),
        "waited only {:?}",
        started.elapsed()
    );

    let closed = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 3600\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    let (proxy, _) = failing_proxy(registry.host.clone(), usize::MAX, closed);
    let out = pin_via(dir.path(), "slow", &proxy, "acme/slow:v1", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("it asks to retry after 3600 s, more than berth waits"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A registry that omits `Docker-Content-Digest` on HEAD (allowed) and answers every
/// manifest GET with `body` as `content_type`: what a login page, a captive proxy
/// or a broken mirror does. `length` false leaves the body delimited by the close.
fn digestless_registry(content_type: &'static str, body: Vec<u8>, length: bool) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let host = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for mut client in listener.incoming().flatten() {
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && client.read(&mut byte).is_ok_and(|n| n == 1) {
                head.push(byte[0]);
            }
            let length_line = if length {
                format!("Content-Length: {}\r\n", body.len())
            } else {
                String::new()
            };
            let status = format!("HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\n{length_line}Connection: close\r\n\r\n");
            let _ = client.write_all(status.as_bytes());
            if head.starts_with(b"GET") {
                let _ = client.write_all(&body);
            }
        }
    });
    host
}

#[test]
fn an_answer_that_is_not_a_manifest_is_never_pinned() {
    let oci = "application/vnd.oci.image.manifest.v1+json";
    let cases: Vec<(&str, &'static str, Vec<u8>, bool, &str)> = vec![
        (
            "an empty body",
            oci,
            Vec::new(),
            true,
            "the registry answered with an empty body instead of an image manifest",
        ),
        (
            "a login page",
            "text/html",
            b"<html><form>Sign in</form></html>".to_vec(),
            true,
            "bytes of `text/html` that are not JSON",
        ),
        (
            "6 MiB announced",
            oci,
            vec![b'a'; 6 << 20],
            true,
            "larger than 4 MiB",
        ),
        (
            "6 MiB until the close",
            oci,
            vec![b'a'; 6 << 20],
            false,
            "larger than 4 MiB",
        ),
        (
            "JSON of another kind",
            "application/json",
            br#"{"token":"x"}"#.to_vec(),
            true,
            "without `schemaVersion: 2`",
        ),
    ];
    for (what, content_type, body, length, want) in cases {
        let host = digestless_registry(content_type, body, length);
        let dir = project("name: p\nimages:\n  app: {image: 'example.com/acme/app:v1'}\n");
        let out = pin_via(dir.path(), "app", &host, "acme/app:v1", &["--timeout", "5"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
        assert!(stderr.contains(want), "{what}:\n{stderr}");
        assert!(stderr.contains("nothing was pinned"), "{what}:\n{stderr}");
        assert!(
            !dir.path().join("berth.lock").exists(),
            "{what}: no berth.lock written"
        );
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-registry"),
    ignore = "needs test-registry (run scripts/test)"
)]
fn an_unreachable_token_server_is_named_as_such() {
    let _filters = crate::common::snapshot_filters();
    let registry = TestRegistry::start_token_auth("http://127.0.0.1:1/token");
    let dir = project("name: p\nimages:\n  app: {image: 'example.com/acme/app:v1'}\n");
    let out = pin_via(
        dir.path(),
        "app",
        &registry.host,
        "acme/app:v1",
        &["--timeout", "5"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    insta::assert_snapshot!(stderr, @"error: 127.0.0.1:[port]/acme/app:v1: registry `127.0.0.1:[port]`: the registry's token server `127.0.0.1:1` (the realm its WWW-Authenticate names) cannot be reached: Connection refused (os error 111); berth.lock is unchanged");
}

/// A token server no real one is: it answers every request with `answer(request)`
/// (a misbehaving peer, for what no real token server does on purpose: echo the
/// request, answer endlessly, answer a login page).
fn bad_token_server(answer: fn(&str, &mut TcpStream)) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let realm = format!("http://{}/token", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut client in listener.incoming().flatten() {
            let mut buf = [0u8; 8192];
            let n = client.read(&mut buf).unwrap_or(0);
            let request = String::from_utf8_lossy(&buf[..n]).into_owned();
            std::thread::spawn(move || answer(&request, &mut client));
        }
    });
    realm
}

/// `berth pin` of `acme/app:v1` through a token-auth registry whose token server
/// is `realm`, with `sweep:pl4nted-password` for the registry in the Docker config.
fn pin_with_token_server(realm: &str) -> String {
    let registry = TestRegistry::start_token_auth(realm);
    let dir = project("name: p\nimages:\n  app: {image: 'example.com/acme/app:v1'}\n");
    let auth = base64::engine::general_purpose::STANDARD.encode("sweep:pl4nted-password");
    fs::write(
        dir.path().join("config.json"),
        format!(
            r#"{{"auths": {{"{}": {{"auth": "{auth}"}}}}}}"#,
            registry.host
        ),
    )
    .unwrap();
    let out = berth(dir.path())
        .env("DOCKER_CONFIG", dir.path())
        .args(["pin", "--timeout", "10", "--image"])
        .arg(format!("app={}/acme/app:v1", registry.host))
        .args(["--insecure-registry", &registry.host])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let encoded = base64::engine::general_purpose::STANDARD.encode("sweep:pl4nted-password");
    assert!(
        !stderr.contains("pl4nted") && !stderr.contains(&encoded[..12]),
        "the credentials leaked: {stderr}"
    );
    stderr
}

#[test]
#[cfg_attr(
    not(feature = "test-registry"),
    ignore = "needs test-registry (run scripts/test)"
)]
fn a_token_server_that_echoes_the_request_is_shown_only_by_its_status() {
    let _filters = crate::common::snapshot_filters();
    let realm = bad_token_server(|request, client| {
        let body = format!("token server failed; request had {request}");
        let _ = write!(
            client,
            "HTTP/1.1 500 Internal Server Error\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    });
    let stderr = pin_with_token_server(&realm);
    insta::assert_snapshot!(stderr, @"error: 127.0.0.1:[port]/acme/app:v1: registry `127.0.0.1:[port]`: its token server `127.0.0.1:[port]` answered 500 Internal Server Error (what it said is not shown: it may repeat the credentials); berth.lock is unchanged");
    let realm = bad_token_server(|request, client| {
        let body = format!("denied: {request}");
        let _ = write!(
            client,
            "HTTP/1.1 401 Unauthorized\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    });
    let stderr = pin_with_token_server(&realm);
    insta::assert_snapshot!(stderr, @"error: 127.0.0.1:[port]/acme/app:v1: registry `127.0.0.1:[port]` refused access (its token server `127.0.0.1:[port]` answered 401 Unauthorized); the credentials for `127.0.0.1:[port]` came from [tmp]/config.json: check them, or log in again (`podman login 127.0.0.1:[port]` or `docker login 127.0.0.1:[port]`); berth.lock is unchanged");
}

#[test]
#[cfg_attr(
    not(feature = "test-registry"),
    ignore = "needs test-registry (run scripts/test)"
)]
fn a_token_server_that_never_stops_or_answers_html_is_refused_clearly() {
    let _filters = crate::common::snapshot_filters();
    let realm = bad_token_server(|_, client| {
        let _ = client.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{\"token\": \"");
        let chunk = vec![b'a'; 64 * 1024];
        for _ in 0..(256 * 16) {
            if client.write_all(&chunk).is_err() {
                return;
            }
        }
    });
    let stderr = pin_with_token_server(&realm);
    insta::assert_snapshot!(stderr, @"error: 127.0.0.1:[port]/acme/app:v1: registry `127.0.0.1:[port]`: its token server `127.0.0.1:[port]` answered more than 1 MiB, which is no token; berth.lock is unchanged");
    let realm = bad_token_server(|_, client| {
        let body = "<html><body>Sign in</body></html>";
        let _ = write!(
            client,
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    });
    let stderr = pin_with_token_server(&realm);
    insta::assert_snapshot!(stderr, @"error: 127.0.0.1:[port]/acme/app:v1: registry `127.0.0.1:[port]`: its token server `127.0.0.1:[port]` gave no token: its answer is not JSON (a login page or a proxy in front of it answers like this); berth.lock is unchanged");
}

#[test]
fn the_token_flow_fetches_a_scoped_token_with_the_docker_config_credentials() {
    // A registry and token server in one small peer (no token server ships in
    // Debian): `/v2/` challenges, `/token` wants the basic credentials and the
    // repository's pull scope, the manifest wants the token it issued.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let host = listener.local_addr().unwrap().to_string();
    let digest = format!("sha256:{}", "7".repeat(64));
    let basic = base64::engine::general_purpose::STANDARD.encode("sweep:pw");
    let (realm_host, served, expected) = (host.clone(), digest.clone(), basic.clone());
    std::thread::spawn(move || {
        for mut client in listener.incoming().flatten() {
            let mut buf = [0u8; 8192];
            let n = client.read(&mut buf).unwrap_or(0);
            let request = String::from_utf8_lossy(&buf[..n]).into_owned();
            let line = request.lines().next().unwrap_or_default().to_string();
            let answer = if line.starts_with("GET /v2/ ") {
                format!("HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm=\"http://{realm_host}/token\",service=\"fake\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            } else if line
                .starts_with("GET /token?service=fake&scope=repository%3Aacme%2Fapp%3Apull ")
                && request.contains(&format!("authorization: Basic {expected}"))
            {
                let body = r#"{"token": "tok-1", "expires_in": 300}"#;
                format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())
            } else if line.starts_with("HEAD /v2/acme/app/manifests/v1 ")
                && request.contains("authorization: Bearer tok-1")
            {
                format!("HTTP/1.1 200 OK\r\nDocker-Content-Digest: {served}\r\nContent-Type: application/vnd.oci.image.index.v1+json\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            } else {
                "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_string()
            };
            let _ = client.write_all(answer.as_bytes());
        }
    });
    let dir = project("name: p\nimages:\n  app: {image: 'example.com/acme/app:v1'}\n");
    fs::write(
        dir.path().join("config.json"),
        format!(r#"{{"auths": {{"{host}": {{"auth": "{basic}"}}}}}}"#),
    )
    .unwrap();
    let out = berth(dir.path())
        .env("DOCKER_CONFIG", dir.path())
        .args(["pin", "--image", &format!("app={host}/acme/app:v1")])
        .args(["--insecure-registry", &host])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lock = fs::read_to_string(dir.path().join("berth.lock")).unwrap();
    assert!(lock.contains(&digest), "{lock}");
}

#[test]
fn a_redirect_that_leads_nowhere_or_off_http_is_said() {
    for (answer, want) in [
        (
            "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://berth-unresolvable.invalid/v2/\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            "(at `berth-unresolvable.invalid`, where the registry redirected)",
        ),
        (
            "HTTP/1.1 307 Temporary Redirect\r\nLocation: file:///etc/passwd\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            "it redirected to `file:///etc/passwd`, which is not an http(s) URL, so berth does not follow it",
        ),
    ] {
        let (host, _) = failing_proxy("127.0.0.1:1".into(), usize::MAX, answer);
        let dir = project("name: p\nimages:\n  app: {image: 'example.com/acme/app:v1'}\n");
        let out = pin_via(dir.path(), "app", &host, "acme/app:v1", &["--timeout", "5"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(want), "{stderr}");
        assert!(!stderr.contains("root:"), "{stderr}");
    }
}

/// #50 step 2: a repository's tags read page by page as the registry links
/// them (`Link: rel="next"`), and the newest release among them.
#[test]
#[cfg_attr(
    not(feature = "test-registry"),
    ignore = "needs test-registry (run scripts/test)"
)]
fn tags_are_read_across_pages_and_ordered_as_versions() {
    let registry = TestRegistry::start(None);
    let image = Layout::image("tags", 1, 64);
    let tags = [
        "v1.3.0",
        "v1.10.0",
        "latest",
        "v1.9.2",
        "v1.11.0-rc1",
        "main",
        "sha-abc1234",
    ];
    for tag in tags {
        registry.push(&image, "acme/server", tag);
    }
    let client = berth_registry::Registry::new(
        berth_registry::Options {
            insecure: vec![registry.host.clone()],
            ..berth_registry::Options::default()
        },
        berth_registry::DockerConfig::default(),
    )
    .unwrap();
    let repository =
        berth_ref::Reference::parse(&format!("{}/acme/server", registry.host)).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Two tags a page: four pages, linked.
    let mut listed = runtime
        .block_on(client.tags_in_pages(&repository, 2))
        .unwrap();
    listed.sort();
    let mut want: Vec<String> = tags.iter().map(|t| t.to_string()).collect();
    want.sort();
    assert_eq!(listed, want);
    let all = runtime.block_on(client.tags(&repository)).unwrap();
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    assert_eq!(
        berth_ref::version::newest(&refs, "v1.3.0", false),
        Some("v1.10.0")
    );
    assert_eq!(
        berth_ref::version::newest(&refs, "v1.3.0", true),
        Some("v1.11.0-rc1")
    );
    // A repository the registry does not know is one clear error naming it.
    let missing = berth_ref::Reference::parse(&format!("{}/acme/nothing", registry.host)).unwrap();
    let err = runtime
        .block_on(client.tags(&missing))
        .unwrap_err()
        .to_string();
    assert!(err.contains("acme/nothing"), "{err}");
}
