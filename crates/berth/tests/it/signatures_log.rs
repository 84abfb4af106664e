//! `transparencyLog: required` (#51) against a real Rekor v2 (rekor-tiles) and
//! cosign 3: a signature cosign 3 logged there is accepted, its entry checked
//! against the log `trustedRoot:` names (inclusion proof and signed checkpoint)
//! and its index recorded in berth.lock; the same key's signature made with the
//! log skipped, a cosign 2 tag-scheme signature (Rekor v1's kind of entry, not
//! checked here) and a log the trusted root does not name are refused by name;
//! a lock made without the log does not satisfy `--locked`; a policy that names
//! no log key is refused before any registry is asked.
//!
//! The signatures are keyed: cosign 3 signing with a key file and a certificate
//! sends the certificate to Rekor v2 as a public key, which rekor-tiles refuses
//! ("parsing verifier: parsing public key"), and a Fulcio cannot run here. The
//! entry check is the same code for a certificate's bundle.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking

use crate::common;

use std::fs;
use std::path::Path;

use common::registry::{Layout, TestRegistry};
use common::rekor::Rekor;
use common::{berth, project};

use super::signatures::{cosign_ok, digest_of, key_pair, pin, sign3};

/// cosign 3 signs `image` with `ours.key`, logging to the Rekor `with-log.json` names.
fn sign_logged(cosign: &Path, dir: &Path, image: &str) {
    let args = [
        "sign",
        "--key",
        "ours.key",
        "--signing-config",
        "with-log.json",
        "--allow-insecure-registry",
        "-y",
        image,
    ];
    cosign_ok(cosign, dir, &args);
}

/// `berth images --locked` in `root`: its exit code and stderr.
fn locked(root: &Path) -> (Option<i32>, String) {
    let out = berth(root).args(["images", "--locked"]).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
#[cfg_attr(
    not(all(feature = "test-registry", feature = "test-plane")),
    ignore = "needs test-registry and test-plane (cosign and rekor-tiles are built with the plane; run scripts/test)"
)]
fn a_required_log_entry_is_checked_against_the_log_the_trusted_root_names() {
    let plane = common::testenv::plane();
    let (cosign2, cosign3) = (plane.cosign2(), plane.cosign3());
    let rekor = Rekor::start(&plane.rekor());
    let registry = TestRegistry::start(None);
    let host = registry.host.clone();
    let keys = tempfile::tempdir().unwrap();
    key_pair(&cosign3, keys.path(), "ours");
    fs::write(keys.path().join("with-log.json"), rekor.signing_config()).unwrap();
    let mut at = std::collections::BTreeMap::new();
    for (name, seed) in [("logged", "l"), ("unlogged", "u"), ("tagged", "t")] {
        let repository = format!("acme/{name}");
        registry.push(&Layout::image(seed, 1, 64), &repository, "v1");
        let digest = digest_of(&registry, &repository, "v1");
        at.insert(name, format!("{host}/{repository}@{digest}"));
    }
    sign_logged(&cosign3, keys.path(), &at["logged"]);
    sign3(&cosign3, keys.path(), "ours", &at["unlogged"]);
    let tagged = [
        "sign",
        "--key",
        "ours.key",
        "--tlog-upload=false",
        "--allow-insecure-registry",
        "-y",
        &at["tagged"],
    ];
    cosign_ok(&cosign2, keys.path(), &tagged);

    let images: String = ["logged", "unlogged", "tagged"]
        .iter()
        .map(|c| format!("  {c}: {{image: '{host}/acme/{c}:v1'}}\n"))
        .collect();
    let policy = "  - {key: ours.pub, trustedRoot: trusted_root.json, transparencyLog: required}\n";
    let dir = project(&format!("name: p\nimages:\n{images}verify:\n{policy}"));
    let root = dir.path();
    fs::copy(keys.path().join("ours.pub"), root.join("ours.pub")).unwrap();
    fs::write(root.join("trusted_root.json"), rekor.trusted_root(&[])).unwrap();
    let (code, stderr) = pin(root, &registry);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("2 images are not signed as `verify:` requires"),
        "{stderr}"
    );
    assert!(
        stderr.contains("component `unlogged`")
            && stderr.contains("carries no transparency log entry"),
        "{stderr}"
    );
    assert!(
        stderr.contains("component `tagged`")
            && stderr.contains("Rekor v1's signed entry timestamp"),
        "{stderr}"
    );
    assert!(!stderr.contains("component `logged`"), "{stderr}");

    // The logged image alone: pinned, its entry's index recorded.
    let text = fs::read_to_string(root.join("berth.yaml")).unwrap();
    let only_logged = text.replace("  - {key:", "  - {components: [logged], key:");
    fs::write(root.join("berth.yaml"), &only_logged).unwrap();
    let (code, stderr) = pin(root, &registry);
    assert_eq!(code, Some(0), "{stderr}");
    let lock = fs::read_to_string(root.join("berth.lock")).unwrap();
    assert!(lock.contains("    logIndex: "), "{lock}");
    let (code, stderr) = locked(root);
    assert_eq!(code, Some(0), "{stderr}");

    // A pin verified without the log does not satisfy a policy that requires it.
    let optional = only_logged.replace("required", "optional");
    fs::write(root.join("berth.yaml"), &optional).unwrap();
    fs::remove_file(root.join("berth.lock")).unwrap();
    let (code, stderr) = pin(root, &registry);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!fs::read_to_string(root.join("berth.lock"))
        .unwrap()
        .contains("logIndex"));
    fs::write(root.join("berth.yaml"), &only_logged).unwrap();
    let (code, stderr) = locked(root);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("run `berth pin`"), "{stderr}");

    // A trusted root naming another log's key: the entry is in no log it names.
    let other = Rekor::start(&plane.rekor());
    fs::write(root.join("trusted_root.json"), other.trusted_root(&[])).unwrap();
    let (code, stderr) = pin(root, &registry);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("in no log `trustedRoot:` names"),
        "{stderr}"
    );

    // No log key named: refused before any registry is asked.
    let unnamed = only_logged.replace(", trustedRoot: trusted_root.json", "");
    fs::write(root.join("berth.yaml"), unnamed).unwrap();
    let out = (berth(root).args(["pin", "--insecure-registry", "127.0.0.1:9"]))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("only a `trustedRoot:` (sigstore's trusted_root.json, its `tlogs`) names")
            && !stderr.contains("127.0.0.1:9"),
        "{stderr}"
    );
}
