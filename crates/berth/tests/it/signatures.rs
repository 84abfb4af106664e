//! `verify:` (#51) against a real registry and real cosign 2 and 3: images
//! signed by the policy's key with cosign 2's tag scheme and with cosign 3's
//! bundle (an OCI 1.1 referrer), one unsigned, one signed by another key, one
//! whose tag was pushed again after it was signed. `berth pin` accepts exactly
//! the first two, names each refusal, records the verification in berth.lock,
//! and `--locked` refuses a pin without one.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::registry::{Layout, TestRegistry};
use common::{berth, project};

/// Runs `program` (a cosign) in `dir` with `args`, no key password and `dir` as its
/// home; fails the test with cosign's stderr when it fails.
pub(crate) fn cosign_ok(program: &Path, dir: &Path, args: &[&str]) {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("COSIGN_PASSWORD", "")
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cosign {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `cosign2 generate-key-pair` in `dir` as `PREFIX.key` / `PREFIX.pub`, no password.
pub(crate) fn key_pair(cosign: &Path, dir: &Path, prefix: &str) {
    cosign_ok(
        cosign,
        dir,
        &["generate-key-pair", "--output-key-prefix", prefix],
    );
}

/// Signs `image@digest` with `PREFIX.key` (tag scheme, no transparency log: nothing
/// is reachable from here).
fn sign(cosign: &Path, dir: &Path, prefix: &str, image: &str) {
    let key = format!("{prefix}.key");
    let args = [
        "sign",
        "--key",
        &key,
        "--tlog-upload=false",
        "--allow-insecure-registry",
        "-y",
        image,
    ];
    cosign_ok(cosign, dir, &args);
}

/// Signs `image@digest` with cosign 3 and `PREFIX.key`: a sigstore bundle attached as a
/// referrer, under a signing config without a transparency log (nothing is reachable here).
pub(crate) fn sign3(cosign: &Path, dir: &Path, prefix: &str, image: &str) {
    if !dir.join("no-log.json").exists() {
        cosign_ok(
            cosign,
            dir,
            &["signing-config", "create", "--out", "no-log.json"],
        );
    }
    let key = format!("{prefix}.key");
    let args = [
        "sign",
        "--key",
        &key,
        "--signing-config",
        "no-log.json",
        "--allow-insecure-registry",
        "-y",
        image,
    ];
    cosign_ok(cosign, dir, &args);
}

pub(crate) fn digest_of(registry: &TestRegistry, repository: &str, tag: &str) -> String {
    let out = Command::new("skopeo")
        .args(["inspect", "--tls-verify=false", "--format", "{{.Digest}}"])
        .arg(format!("docker://{}/{repository}:{tag}", registry.host))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

pub(crate) fn pin(root: &Path, registry: &TestRegistry) -> (Option<i32>, String) {
    let out = berth(root)
        .args(["pin", "--insecure-registry", &registry.host])
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
#[cfg_attr(
    not(all(feature = "test-registry", feature = "test-plane")),
    ignore = "needs test-registry and test-plane (cosign is built with the plane; run scripts/test)"
)]
fn pin_verifies_cosign_2_and_3_signatures_and_names_each_refusal() {
    let cosign: PathBuf = common::testenv::plane().cosign2();
    let cosign3: PathBuf = common::testenv::plane().cosign3();
    let registry = TestRegistry::start(None);
    let host = registry.host.clone();
    let keys = tempfile::tempdir().unwrap();
    key_pair(&cosign, keys.path(), "ours");
    key_pair(&cosign, keys.path(), "theirs");
    for (repository, seed) in [
        ("acme/signed", "a"),
        ("acme/bundled", "e"),
        ("acme/unsigned", "b"),
        ("acme/other", "c"),
        ("acme/moved", "d"),
    ] {
        registry.push(&Layout::image(seed, 1, 64), repository, "v1");
    }
    let at = |repository: &str| {
        format!(
            "{host}/{repository}@{}",
            digest_of(&registry, repository, "v1")
        )
    };
    sign(&cosign, keys.path(), "ours", &at("acme/signed"));
    sign3(&cosign3, keys.path(), "ours", &at("acme/bundled"));
    sign(&cosign, keys.path(), "theirs", &at("acme/other"));
    sign(&cosign, keys.path(), "ours", &at("acme/moved"));
    registry.push(&Layout::image("d2", 1, 64), "acme/moved", "v1"); // the tag moves after signing

    let images: String = ["signed", "bundled", "unsigned", "other", "moved"]
        .iter()
        .map(|c| format!("  {c}: {{image: '{host}/acme/{c}:v1'}}\n"))
        .collect();
    let dir = project(&format!(
        "name: p\nimages:\n{images}verify:\n  - key: keys/ours.pub\n"
    ));
    let root = dir.path();
    fs::create_dir(root.join("keys")).unwrap();
    fs::copy(keys.path().join("ours.pub"), root.join("keys/ours.pub")).unwrap();

    let (code, stderr) = pin(root, &registry);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("3 images are not signed as `verify:` requires; berth.lock is unchanged"),
        "{stderr}"
    );
    assert!(
        stderr.contains("component `unsigned`")
            && stderr.contains("unsigned: its repository has no signature for this digest"),
        "{stderr}"
    );
    assert!(
        stderr.contains("component `other`")
            && stderr.contains("none of its 1 signature(s) is by the key sha256:"),
        "{stderr}"
    );
    assert!(
        stderr.contains("component `moved`") && stderr.contains("component `moved` ("),
        "{stderr}"
    );
    assert!(
        !stderr.contains("component `signed`") && !stderr.contains("component `bundled`"),
        "{stderr}"
    );
    assert!(!root.join("berth.lock").exists());
    // `render --pin` pins on the fly, and verifies as `berth pin` does.
    let rendered = berth(root)
        .args(["render", "--pin", "--insecure-registry", &host, "-"])
        .write_stdin("")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&rendered.stderr);
    assert_eq!(rendered.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("3 images are not signed as `verify:` requires"),
        "{stderr}"
    );

    // Only the signed image (the others out of `verify:`): pinned, and verified.
    let text = fs::read_to_string(root.join("berth.yaml")).unwrap();
    fs::write(
        root.join("berth.yaml"),
        text.replace(
            "  - key: keys/ours.pub",
            "  - {components: [signed], key: keys/ours.pub}",
        ),
    )
    .unwrap();
    let (code, stderr) = pin(root, &registry);
    assert_eq!(code, Some(0), "{stderr}");
    let lock = fs::read_to_string(root.join("berth.lock")).unwrap();
    let signed = lock
        .split("- component: ")
        .find(|e| e.starts_with("signed"))
        .unwrap();
    assert!(
        signed.contains("  verified:\n    key: sha256:")
            && signed.contains("    signature: sha256:"),
        "{lock}"
    );
    assert_eq!(
        lock.matches("verified:").count(),
        1,
        "only the covered image: {lock}"
    );
    let locked = berth(root).args(["images", "--locked"]).output().unwrap();
    assert!(
        locked.status.success(),
        "{}",
        String::from_utf8_lossy(&locked.stderr)
    );

    // A lock whose pin records no verification is refused under --locked, with no registry asked.
    let stripped: String = lock
        .lines()
        .filter(|l| !l.starts_with("  verified:") && !l.starts_with("    "))
        .map(|l| format!("{l}\n"))
        .collect();
    fs::write(root.join("berth.lock"), stripped).unwrap();
    let locked = berth(root)
        .args(["render", "--locked", "-"])
        .write_stdin("")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&locked.stderr);
    assert_eq!(locked.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("with no signature verified by the key sha256:")
            && stderr.contains("run `berth pin`"),
        "{stderr}"
    );
}

/// `cosign verify` (or `verify-attestation`) of `image` with `ours.pub`, no log.
/// `berth promote --to HOST/prod` in `root`, which must succeed and say it carried
/// `artifacts` signatures, attestations and SBOMs.
fn promote_carrying(root: &Path, host: &str, artifacts: usize) {
    let to = format!("{host}/prod");
    let out = berth(root)
        .args(["promote", "--to", &to, "--insecure-registry", host])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let said = format!("{artifacts} signature/attestation/SBOM artifact(s) with them");
    assert!(stderr.contains(&said), "{stderr}");
}

pub(crate) fn cosign_verifies(cosign: &Path, dir: &Path, what: &str, image: &str) -> bool {
    let mut command = Command::new(cosign);
    command.arg(what).args([
        "--key",
        "ours.pub",
        "--insecure-ignore-tlog=true",
        "--allow-insecure-registry",
    ]);
    if what == "verify-attestation" {
        command.args(["--type", "custom"]);
    }
    let out = command
        .arg(image)
        .current_dir(dir)
        .env("HOME", dir)
        .output()
        .unwrap();
    out.status.success()
}

#[test]
#[cfg_attr(
    not(all(feature = "test-registry", feature = "test-plane")),
    ignore = "needs test-registry and test-plane (cosign is built with the plane; run scripts/test)"
)]
fn promote_and_mirror_carry_signatures_and_attestations_where_skopeo_copy_does_not() {
    let cosign: PathBuf = common::testenv::plane().cosign2();
    let cosign3: PathBuf = common::testenv::plane().cosign3();
    let registry = TestRegistry::start(None);
    let host = registry.host.clone();
    let keys = tempfile::tempdir().unwrap();
    key_pair(&cosign, keys.path(), "ours");
    registry.push(&Layout::image("carried", 2, 64), "acme/web", "v1");
    registry.push(&Layout::image("bundled", 1, 64), "acme/api", "v1");
    let api_digest = digest_of(&registry, "acme/api", "v1");
    sign3(
        &cosign3,
        keys.path(),
        "ours",
        &format!("{host}/acme/api@{api_digest}"),
    );
    let digest = digest_of(&registry, "acme/web", "v1");
    let source = format!("{host}/acme/web@{digest}");
    sign(&cosign, keys.path(), "ours", &source);
    fs::write(
        keys.path().join("predicate.json"),
        r#"{"built": "by the tests"}"#,
    )
    .unwrap();
    let attest = [
        "attest",
        "--key",
        "ours.key",
        "--predicate",
        "predicate.json",
        "--type",
        "custom",
        "--tlog-upload=false",
        "--allow-insecure-registry",
        "-y",
        &source,
    ];
    cosign_ok(&cosign, keys.path(), &attest);
    assert!(
        cosign_verifies(&cosign, keys.path(), "verify", &source),
        "the source verifies"
    );

    let dir = project(&format!(
        "name: p\nimages:\n  web: {{image: '{host}/acme/web:v1'}}\n"
    ));
    let root = dir.path();
    promote_carrying(root, &host, 2);
    let promoted = format!("{host}/prod/web@{digest}");
    assert!(
        cosign_verifies(&cosign, keys.path(), "verify", &promoted),
        "the promoted copy verifies"
    );
    assert!(
        cosign_verifies(&cosign, keys.path(), "verify-attestation", &promoted),
        "its attestation too"
    );

    let out = berth(root)
        .args([
            "mirror",
            "--to",
            &format!("{host}/mirror"),
            "--out",
            "mirror",
            "--insecure-registry",
            &host,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mirrored = format!("{host}/mirror/acme/web@{digest}");
    assert!(
        cosign_verifies(&cosign, keys.path(), "verify", &mirrored),
        "the mirrored copy verifies"
    );
    assert!(cosign_verifies(
        &cosign,
        keys.path(),
        "verify-attestation",
        &mirrored
    ));

    // The same image copied by skopeo: the signature stays behind, and cosign says so.
    skopeo_copy(&source, &format!("{host}/skopeo/web:v1"));
    assert!(!cosign_verifies(
        &cosign,
        keys.path(),
        "verify",
        &format!("{host}/skopeo/web@{digest}")
    ));

    // --no-signatures leaves them behind, and says so.
    let out = berth(root)
        .args([
            "promote",
            "--to",
            &format!("{host}/bare"),
            "--no-signatures",
            "--insecure-registry",
            &host,
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.contains("signatures left behind (--no-signatures)"),
        "{stderr}"
    );
    assert!(!cosign_verifies(
        &cosign,
        keys.path(),
        "verify",
        &format!("{host}/bare/web@{digest}")
    ));
}

/// `skopeo copy --all` of `source` to `target` (both plain HTTP), which must succeed.
pub(crate) fn skopeo_copy(source: &str, target: &str) {
    let out = Command::new("skopeo")
        .args(["copy", "--all", "--quiet"])
        .args(["--src-tls-verify=false", "--dest-tls-verify=false"])
        .arg(format!("docker://{source}"))
        .arg(format!("docker://{target}"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "skopeo copy: {stderr}");
}

/// A test CA (`root.pem`) and a leaf for `identity` from `issuer` (Fulcio's issuer
/// extension), its key imported for cosign as `leaf.key`: written into `dir`.
pub(crate) fn test_ca(cosign: &Path, dir: &Path, identity: &str, issuer: &str) {
    use rcgen::{
        BasicConstraints, CertificateParams, CustomExtension, IsCa, Issuer, KeyPair, SanType,
    };
    let mut ca = CertificateParams::new(vec![]).unwrap();
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "berth test signing CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().unwrap();
    fs::write(dir.join("root.pem"), ca.self_signed(&ca_key).unwrap().pem()).unwrap();
    let mut leaf = CertificateParams::new(vec![]).unwrap();
    leaf.subject_alt_names = vec![SanType::URI(identity.try_into().unwrap())];
    let mut value = vec![0x0c, u8::try_from(issuer.len()).unwrap()];
    value.extend_from_slice(issuer.as_bytes());
    leaf.custom_extensions = vec![CustomExtension::from_oid_content(
        &[1, 3, 6, 1, 4, 1, 57264, 1, 8],
        value,
    )];
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = leaf.signed_by(&leaf_key, &Issuer::new(ca, ca_key)).unwrap();
    fs::write(dir.join("leaf.crt"), leaf.pem()).unwrap();
    fs::write(dir.join("leaf.pem"), leaf_key.serialize_pem()).unwrap();
    cosign_ok(
        cosign,
        dir,
        &[
            "import-key-pair",
            "--key",
            "leaf.pem",
            "--output-key-prefix",
            "leaf",
        ],
    );
}

#[test]
#[cfg_attr(
    not(all(feature = "test-registry", feature = "test-plane")),
    ignore = "needs test-registry and test-plane (cosign is built with the plane; run scripts/test)"
)]
fn a_certificate_signature_is_verified_for_its_identity_and_issuer() {
    let cosign: PathBuf = common::testenv::plane().cosign2();
    let registry = TestRegistry::start(None);
    let host = registry.host.clone();
    let keys = tempfile::tempdir().unwrap();
    let identity = "https://github.com/acme/web/.github/workflows/release.yml@refs/tags/v1";
    let issuer = "https://token.actions.githubusercontent.com";
    test_ca(&cosign, keys.path(), identity, issuer);
    registry.push(&Layout::image("certified", 1, 64), "acme/web", "v1");
    let image = format!("{host}/acme/web@{}", digest_of(&registry, "acme/web", "v1"));
    let sign = [
        "sign",
        "--key",
        "leaf.key",
        "--certificate",
        "leaf.crt",
        "--certificate-chain",
        "root.pem",
        "--tlog-upload=false",
        "--allow-insecure-registry",
        "-y",
        &image,
    ];
    cosign_ok(&cosign, keys.path(), &sign);

    let policy = |identity: &str| {
        format!(
        "name: p\nimages:\n  web: {{image: '{host}/acme/web:v1'}}\nverify:\n  - certificate: {{identity: '{identity}', issuer: '{issuer}', roots: root.pem}}\n    transparencyLog: optional\n"
    )
    };
    let dir = project(&policy(identity));
    let root = dir.path();
    fs::copy(keys.path().join("root.pem"), root.join("root.pem")).unwrap();
    let (code, stderr) = pin(root, &registry);
    assert_eq!(code, Some(0), "{stderr}");
    let lock = fs::read_to_string(root.join("berth.lock")).unwrap();
    assert!(
        lock.contains(&format!("    identity: {identity}\n    issuer: {issuer}\n")),
        "{lock}"
    );
    let locked = berth(root).args(["images", "--locked"]).output().unwrap();
    assert!(
        locked.status.success(),
        "{}",
        String::from_utf8_lossy(&locked.stderr)
    );

    // Another identity: refused, naming both; and the lock of the first does not satisfy it.
    fs::write(
        root.join("berth.yaml"),
        policy("https://github.com/evil/fork/.github/workflows/x.yml@refs/heads/main"),
    )
    .unwrap();
    let locked = berth(root).args(["images", "--locked"]).output().unwrap();
    assert_eq!(locked.status.code(), Some(1));
    fs::remove_file(root.join("berth.lock")).unwrap();
    let (code, stderr) = pin(root, &registry);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "its certificate is for {identity}, not https://github.com/evil/fork"
        )),
        "{stderr}"
    );
    // A log entry required, and `roots:` names no log key: said, before any registry is asked.
    fs::write(
        root.join("berth.yaml"),
        policy(identity).replace("    transparencyLog: optional\n", ""),
    )
    .unwrap();
    let (code, stderr) = pin(root, &registry);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("`transparencyLog: required` checks the signature's log entry against the log's key, which only a `trustedRoot:`"),
        "{stderr}"
    );
}

/// `cosign sign --recursive` signs a multi-platform index and each platform's manifest:
/// `berth promote` carries all three signatures, so `cosign verify` of the arm64 image
/// at the destination (what a node of that platform pulls) succeeds too.
#[test]
#[cfg_attr(
    not(all(feature = "test-registry", feature = "test-plane")),
    ignore = "needs test-registry and test-plane (cosign is built with the plane; run scripts/test)"
)]
fn promote_carries_the_signatures_of_each_platform_of_an_index() {
    let cosign: PathBuf = common::testenv::plane().cosign2();
    let registry = TestRegistry::start(None);
    let host = registry.host.clone();
    let keys = tempfile::tempdir().unwrap();
    key_pair(&cosign, keys.path(), "ours");
    registry.push(&Layout::index("multi"), "acme/multi", "v1");
    let digest = digest_of(&registry, "acme/multi", "v1");
    let source = format!("{host}/acme/multi@{digest}");
    let args = [
        "sign",
        "--key",
        "ours.key",
        "--recursive",
        "--tlog-upload=false",
        "--allow-insecure-registry",
        "-y",
        &source,
    ];
    cosign_ok(&cosign, keys.path(), &args);
    let raw = Command::new("skopeo")
        .args(["inspect", "--raw", "--tls-verify=false"])
        .arg(format!("docker://{source}"))
        .output()
        .unwrap();
    let index: serde_json::Value = serde_json::from_slice(&raw.stdout).unwrap();
    let arm64 = index["manifests"][1]["digest"]
        .as_str()
        .unwrap()
        .to_string();

    let dir = project(&format!(
        "name: p\nimages:\n  multi: {{image: '{host}/acme/multi:v1'}}\n"
    ));
    promote_carrying(dir.path(), &host, 3);
    for promoted in [digest.as_str(), arm64.as_str()] {
        let image = format!("{host}/prod/multi@{promoted}");
        assert!(
            cosign_verifies(&cosign, keys.path(), "verify", &image),
            "{image} verifies"
        );
    }
}
