//! `berth promote` between real registries, digests checked with skopeo.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking

use crate::common;

use common::registry::{free_port, Layout, TestRegistry};
use common::{berth, project};

fn project_for(registry: &TestRegistry, images: &[(&str, &str)]) -> tempfile::TempDir {
    let mut text = String::from("name: promote\nimages:\n");
    for (component, image) in images {
        text.push_str(&format!(
            "  {component}: {{image: '{}/{image}'}}\n",
            registry.host
        ));
    }
    project(&text)
}

fn summary(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr).to_string()
}

#[test]
#[cfg_attr(
    not(feature = "test-registry"),
    ignore = "needs test-registry (run scripts/test)"
)]
fn promotes_images_and_indexes_with_digests_preserved() {
    let dev = TestRegistry::start(None);
    let prod = TestRegistry::start(None);
    let app = dev.push(&Layout::image("app", 3, 50_000), "team/app", "v1");
    let multi = dev.push(&Layout::index("multi"), "team/multi", "v2");
    let dir = project_for(&dev, &[("app", "team/app:v1"), ("multi", "team/multi:v2")]);
    let to = format!("{}/prod", prod.host);
    let flags = [
        "--insecure-registry",
        dev.host.as_str(),
        "--insecure-registry",
        prod.host.as_str(),
    ];

    // The plan, and nothing copied.
    let out = berth(dir.path())
        .args(["promote", "--to", &to, "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "app: {d}/team/app:v1 -> {to}/app:v1\nmulti: {d}/team/multi:v2 -> {to}/multi:v2\n",
            d = dev.host
        )
    );
    let missing = std::process::Command::new("skopeo")
        .args(["inspect", "--raw", "--tls-verify=false"])
        .arg(format!("docker://{to}/app:v1"))
        .output()
        .unwrap();
    assert!(!missing.status.success(), "--dry-run copied something");

    let first = summary(
        &berth(dir.path())
            .args(["promote", "--to", &to])
            .args(flags)
            .output()
            .unwrap(),
    );
    assert!(
        first.contains("promoted 2 image(s)") && first.contains("8 blob(s) sent"),
        "{first}"
    );
    assert_eq!(prod.skopeo_digest("prod/app:v1", None), app);
    assert_eq!(prod.skopeo_digest("prod/multi:v2", None), multi);
    assert_eq!(
        prod.skopeo_digest("prod/multi:v2", Some("arm64")),
        dev.skopeo_digest("team/multi:v2", Some("arm64"))
    );

    // Again: every blob is already there, none is sent.
    let again = summary(
        &berth(dir.path())
            .args(["promote", "--to", &to])
            .args(flags)
            .output()
            .unwrap(),
    );
    assert!(
        again.contains("0 blob(s) sent (0.0 MB), 8 already there"),
        "{again}"
    );

    // Within one registry, blobs are mounted rather than sent.
    let staging = format!("{}/staging", dev.host);
    let mounted = summary(
        &berth(dir.path())
            .args([
                "promote",
                "--to",
                &staging,
                "--insecure-registry",
                &dev.host,
            ])
            .output()
            .unwrap(),
    );
    assert!(
        mounted.contains("0 blob(s) sent") && mounted.contains("8 mounted"),
        "{mounted}"
    );
    assert_eq!(dev.skopeo_digest("staging/app:v1", None), app);
}

#[test]
#[cfg_attr(
    not(feature = "test-registry"),
    ignore = "needs test-registry (run scripts/test)"
)]
fn locked_promotes_the_pinned_digest() {
    let dev = TestRegistry::start(None);
    let first = dev.push(&Layout::image("one", 1, 10), "team/app", "v1");
    let dir = project_for(&dev, &[("app", "team/app:v1")]);
    berth(dir.path())
        .args(["pin", "--insecure-registry", &dev.host])
        .assert()
        .success();
    // The tag moves after pinning; --locked still promotes what was pinned.
    dev.push(&Layout::image("two", 1, 10), "team/app", "v1");
    let to = format!("{}/release", dev.host);
    summary(
        &berth(dir.path())
            .args([
                "promote",
                "--locked",
                "--to",
                &to,
                "--insecure-registry",
                &dev.host,
            ])
            .output()
            .unwrap(),
    );
    assert_eq!(dev.skopeo_digest("release/app:v1", None), first);
}

#[test]
#[cfg_attr(
    not(feature = "test-registry"),
    ignore = "needs test-registry (run scripts/test)"
)]
fn failures_name_the_image_and_registry() {
    let _filters = crate::common::snapshot_filters();
    let dev = TestRegistry::start(None);
    dev.push(&Layout::image("x", 1, 10), "team/x", "v1");
    let dir = project_for(&dev, &[("x", "team/x:v1")]);
    let down = format!("127.0.0.1:{}", free_port());
    let out = berth(dir.path())
        .args([
            "promote",
            "--to",
            &format!("{down}/prod"),
            "--insecure-registry",
            &dev.host,
            "--insecure-registry",
            &down,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    insta::assert_snapshot!(stderr, @"error: component `x`: 127.0.0.1:[port]/prod/x:v1: cannot reach registry `127.0.0.1:[port]`: Connection refused (os error 111); check that it is up (a plain-HTTP registry needs `--insecure-registry 127.0.0.1:[port]`)");

    let untagged = project(&format!(
        "name: p\nimages:\n  x: {{image: '{}/team/x@sha256:{}'}}\n",
        dev.host,
        "a".repeat(64)
    ));
    let out = berth(untagged.path())
        .args(["promote", "--to", "quay.io/me", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no tag to promote under"));
}
