//! Signatures a registry lists only through the OCI 1.1 referrers API (#51):
//! cosign 3 signs and attests onto go-containerregistry's registry with that API
//! on, which keeps no `sha256-<hex>` tag. `berth pin` verifies them (that
//! registry lists a bundle under its config's type, so berth reads the manifest's
//! own), and `berth promote` and `mirror` carry them: to a registry with the API,
//! which lists them by their subject, and to docker-registry, which has none, in
//! the referrers tag index a client writes there. `cosign verify` and
//! `verify-attestation` pass at each destination; `skopeo copy`'s copy fails.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::registry::{Layout, TestRegistry};
use common::{berth, project};

use super::signatures::{cosign_ok, cosign_verifies, digest_of, key_pair, pin, sign3, skopeo_copy};

/// Tags of `repository` on `registry`.
fn tags(registry: &TestRegistry, repository: &str) -> Vec<String> {
    let out = Command::new("skopeo")
        .args(["list-tags", "--tls-verify=false"])
        .arg(format!("docker://{}/{repository}", registry.host))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    (listed["Tags"].as_array().unwrap().iter())
        .map(|t| t.as_str().unwrap().to_string())
        .collect()
}

/// `cosign3 attest` of a custom predicate as a bundle referrer, no log.
fn attest3(cosign: &Path, dir: &Path, image: &str) {
    fs::write(dir.join("predicate.json"), r#"{"built": "by the tests"}"#).unwrap();
    let args = [
        "attest",
        "--key",
        "ours.key",
        "--predicate",
        "predicate.json",
        "--type",
        "custom",
        "--signing-config",
        "no-log.json",
        "--allow-insecure-registry",
        "-y",
        image,
    ];
    cosign_ok(cosign, dir, &args);
}

/// Both `cosign verify` and `verify-attestation` (cosign 3) of `image`.
fn both_verify(cosign: &Path, dir: &Path, image: &str) -> bool {
    cosign_verifies(cosign, dir, "verify", image)
        && cosign_verifies(cosign, dir, "verify-attestation", image)
}

/// `berth ARGS… --insecure-registry` each host; must succeed and say it carried
/// the signature and the attestation.
fn copy_carrying_two(root: &Path, args: &[&str], hosts: &[&str]) {
    let mut command = berth(root);
    command.args(args);
    for host in hosts {
        command.args(["--insecure-registry", host]);
    }
    let out = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("2 signature/attestation/SBOM artifact(s) with them"),
        "{stderr}"
    );
}

#[test]
#[cfg_attr(
    not(all(feature = "test-registry", feature = "test-plane")),
    ignore = "needs test-registry and test-plane (cosign and the referrers registry are built with the plane; run scripts/test)"
)]
fn referrers_listed_only_by_the_api_are_verified_at_pin_and_carried_by_promote_and_mirror() {
    let plane = common::testenv::plane();
    let cosign: PathBuf = plane.cosign3();
    let with_api = TestRegistry::start_referrers(&plane.referrers_registry());
    let without_api = TestRegistry::start(None);
    let (api, plain) = (with_api.host.clone(), without_api.host.clone());
    let keys = tempfile::tempdir().unwrap();
    key_pair(&cosign, keys.path(), "ours");
    with_api.push(&Layout::image("referred", 2, 64), "acme/app", "v1");
    let digest = digest_of(&with_api, "acme/app", "v1");
    let source = format!("{api}/acme/app@{digest}");
    sign3(&cosign, keys.path(), "ours", &source);
    attest3(&cosign, keys.path(), &source);
    assert_eq!(
        tags(&with_api, "acme/app"),
        ["v1"],
        "the API alone lists them"
    );
    assert!(
        both_verify(&cosign, keys.path(), &source),
        "the source verifies"
    );

    let dir = project(&format!(
        "name: p\nimages:\n  app: {{image: '{api}/acme/app:v1'}}\nverify:\n  - key: keys/ours.pub\n"
    ));
    let root = dir.path();
    fs::create_dir(root.join("keys")).unwrap();
    fs::copy(keys.path().join("ours.pub"), root.join("keys/ours.pub")).unwrap();
    let (code, stderr) = pin(root, &with_api);
    assert_eq!(code, Some(0), "{stderr}");
    let lock = fs::read_to_string(root.join("berth.lock")).unwrap();
    assert!(lock.contains("  verified:\n    key: sha256:"), "{lock}");

    // To a registry with the API: it lists the copies by their subject.
    copy_carrying_two(root, &["promote", "--to", &format!("{api}/prod")], &[&api]);
    let promoted = format!("{api}/prod/app@{digest}");
    assert!(both_verify(&cosign, keys.path(), &promoted), "{promoted}");
    assert_eq!(tags(&with_api, "prod/app"), ["v1"]);

    // To one without: berth writes the referrers tag index cosign reads there.
    copy_carrying_two(
        root,
        &["promote", "--to", &format!("{plain}/prod")],
        &[&api, &plain],
    );
    let promoted = format!("{plain}/prod/app@{digest}");
    assert!(both_verify(&cosign, keys.path(), &promoted), "{promoted}");
    let fallback = format!("sha256-{}", digest.trim_start_matches("sha256:"));
    assert!(tags(&without_api, "prod/app").contains(&fallback));
    let mirror_to = format!("{plain}/mirror");
    let mirror = ["mirror", "--to", &mirror_to, "--out", "mirror"];
    copy_carrying_two(root, &mirror, &[&api, &plain]);
    let mirrored = format!("{plain}/mirror/acme/app@{digest}");
    assert!(both_verify(&cosign, keys.path(), &mirrored), "{mirrored}");

    // skopeo's copy of the same image: the referrers stay behind.
    skopeo_copy(&source, &format!("{plain}/skopeo/app:v1"));
    let copied = format!("{plain}/skopeo/app@{digest}");
    assert!(!cosign_verifies(&cosign, keys.path(), "verify", &copied));
}
