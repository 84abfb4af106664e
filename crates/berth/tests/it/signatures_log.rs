//! `transparencyLog: required` (#51) against a real Rekor v2 (rekor-tiles) and
//! cosign 3: a signature cosign 3 logged there is accepted, its entry checked
//! against the log `trustedRoot:` names (inclusion proof and signed checkpoint)
//! and its index recorded in berth.lock; the same key's signature made with the
//! log skipped, a cosign 2 tag-scheme signature (Rekor v1's kind of entry, not
//! checked here) and a log the trusted root does not name are refused by name;
//! a lock made without the log does not satisfy `--locked`; a policy that names
//! no log key is refused before any registry is asked.
//!
//! The first test's signatures are keyed. For a certificate's (the second
//! test), cosign 3 signing with a key file and a certificate sends the
//! certificate to Rekor v2 as a public key, which rekor-tiles refuses ("parsing
//! verifier: parsing public key"), and no Fulcio runs here; so the test logs the
//! signature itself as cosign's keyless flow does (a client written in the test,
//! against the real log) and attaches the bundle with its entry.
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

    // A trusted root with no log: said, before any registry is asked.
    fs::write(root.join("trusted_root.json"), r#"{"tlogs": []}"#).unwrap();
    refused_before_any_registry(
        root,
        "`trustedRoot: trusted_root.json` names no transparency log",
    );

    // No log key named: refused before any registry is asked.
    let unnamed = only_logged.replace(", trustedRoot: trusted_root.json", "");
    fs::write(root.join("berth.yaml"), unnamed).unwrap();
    refused_before_any_registry(
        root,
        "only a `trustedRoot:` (sigstore's trusted_root.json, its `tlogs`) names",
    );
}

/// `berth pin` in `root` against a registry that does not exist: it must fail
/// with `says`, naming no registry (the policy is refused before any is asked).
fn refused_before_any_registry(root: &Path, says: &str) {
    let out = (berth(root).args(["pin", "--insecure-registry", "127.0.0.1:9"]))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(says) && !stderr.contains("127.0.0.1:9"),
        "{stderr}"
    );
}

/// One plain HTTP/1.0 exchange with a server on 127.0.0.1 (HTTP/1.0, so the
/// answer comes whole, unchunked, and the connection closes): the status, the
/// head and the body.
fn http(
    host: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String, Vec<u8>) {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.0\r\nHost: {host}\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&answer[..split]).into_owned();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head, answer[split + 4..].to_vec())
}

/// A JSON GET that must answer 200.
fn get_json(host: &str, path: &str, accept: &str) -> serde_json::Value {
    let (status, head, body) = http(host, "GET", path, &[("Accept", accept)], b"");
    assert_eq!(status, 200, "GET {path}: {head}");
    serde_json::from_slice(&body).unwrap()
}

/// Logs the certificate signature of the bundle `repository` holds for `digest` in
/// `rekor` (a hashedrekord v0.0.2 over DSSE's pre-authentication encoding, the
/// certificate as its verifier: what cosign's keyless flow sends), and attaches
/// the bundle again with that entry, as a new referrer.
fn log_certificate_bundle(registry: &str, repository: &str, digest: &str, rekor: &Rekor) {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let manifest_type = "application/vnd.oci.image.manifest.v1+json";
    let index = get_json(
        registry,
        &format!("/v2/{repository}/referrers/{digest}"),
        "application/vnd.oci.image.index.v1+json",
    );
    let referrer = index["manifests"][0]["digest"]
        .as_str()
        .unwrap()
        .to_string();
    let mut manifest = get_json(
        registry,
        &format!("/v2/{repository}/manifests/{referrer}"),
        manifest_type,
    );
    let layer = manifest["layers"][0]["digest"]
        .as_str()
        .unwrap()
        .to_string();
    let mut bundle = get_json(registry, &format!("/v2/{repository}/blobs/{layer}"), "*/*");
    let envelope = &bundle["dsseEnvelope"];
    let payload = b64.decode(envelope["payload"].as_str().unwrap()).unwrap();
    let payload_type = envelope["payloadType"].as_str().unwrap();
    let mut pae = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    pae.extend_from_slice(&payload);
    let pae_digest = common::registry::sha256(&pae);
    let pae_hex = pae_digest.trim_start_matches("sha256:");
    let pae_bytes: Vec<u8> = (0..32)
        .map(|i| u8::from_str_radix(&pae_hex[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let leaf =
        &bundle["verificationMaterial"]["x509CertificateChain"]["certificates"][0]["rawBytes"];
    let request = serde_json::json!({"hashedRekordRequestV002": {
        "digest": b64.encode(pae_bytes),
        "signature": {"content": envelope["signatures"][0]["sig"], "verifier": {
            "x509Certificate": {"rawBytes": leaf}, "keyDetails": "PKIX_ECDSA_P256_SHA_256"}}}});
    let rekor_host = rekor.url.trim_start_matches("http://");
    let body = serde_json::to_vec(&request).unwrap();
    let (status, head, entry) = http(
        rekor_host,
        "POST",
        "/api/v2/log/entries",
        &[("Content-Type", "application/json")],
        &body,
    );
    assert_eq!(status, 201, "{head}\n{}", String::from_utf8_lossy(&entry));
    let entry: serde_json::Value = serde_json::from_slice(&entry).unwrap();
    bundle["verificationMaterial"]["tlogEntries"] = serde_json::json!([entry]);
    let bundle = serde_json::to_vec(&bundle).unwrap();
    let bundle_digest = common::registry::sha256(&bundle);
    let (status, head, _) = http(
        registry,
        "POST",
        &format!("/v2/{repository}/blobs/uploads/"),
        &[],
        b"",
    );
    assert_eq!(status, 202, "{head}");
    let location = (head.lines())
        .find_map(|l| l.strip_prefix("Location: "))
        .unwrap()
        .trim()
        .to_string();
    let separator = if location.contains('?') { '&' } else { '?' };
    let put = format!("{location}{separator}digest={bundle_digest}");
    let (status, head, _) = http(registry, "PUT", &put, &[], &bundle);
    assert_eq!(status, 201, "{head}");
    manifest["layers"][0]["digest"] = bundle_digest.into();
    manifest["layers"][0]["size"] = bundle.len().into();
    let manifest = serde_json::to_vec(&manifest).unwrap();
    let path = format!(
        "/v2/{repository}/manifests/{}",
        common::registry::sha256(&manifest)
    );
    let (status, head, _) = http(
        registry,
        "PUT",
        &path,
        &[("Content-Type", manifest_type)],
        &manifest,
    );
    assert_eq!(status, 201, "{head}");
}

/// A certificate's signature whose entry its signer logged in Rekor v2 meets
/// `transparencyLog: required` (a certificate's default): its trust and the
/// log's both come from `certificate.trustedRoot`. cosign 3 cannot log a key
/// file's certificate (it sends it to Rekor v2 as a public key, which rekor-tiles
/// refuses), and no Fulcio runs here, so the test logs the signature as cosign's
/// keyless flow does and attaches the bundle with its entry.
#[test]
#[cfg_attr(
    not(all(feature = "test-registry", feature = "test-plane")),
    ignore = "needs test-registry and test-plane (cosign, rekor-tiles and the referrers registry are built with the plane; run scripts/test)"
)]
fn a_logged_certificate_signature_meets_the_certificates_default() {
    const IDENTITY: &str = "https://github.com/acme/web/.github/workflows/release.yml@refs/tags/v1";
    const ISSUER: &str = "https://token.actions.githubusercontent.com";
    let plane = common::testenv::plane();
    let cosign3 = plane.cosign3();
    let rekor = Rekor::start(&plane.rekor());
    let registry = TestRegistry::start_referrers(&plane.referrers_registry());
    let host = registry.host.clone();
    let keys = tempfile::tempdir().unwrap();
    super::signatures::test_ca(&cosign3, keys.path(), IDENTITY, ISSUER);
    registry.push(&Layout::image("certified", 1, 64), "acme/web", "v1");
    let digest = digest_of(&registry, "acme/web", "v1");
    let no_log = r#"{"mediaType":"application/vnd.dev.sigstore.signingconfig.v0.2+json","rekorTlogConfig":{},"tsaConfig":{}}"#;
    fs::write(keys.path().join("no-log.json"), no_log).unwrap();
    let image = format!("{host}/acme/web@{digest}");
    let sign = [
        "sign",
        "--key",
        "leaf.key",
        "--certificate",
        "leaf.crt",
        "--certificate-chain",
        "root.pem",
        "--signing-config",
        "no-log.json",
        "--allow-insecure-registry",
        "-y",
        &image,
    ];
    cosign_ok(&cosign3, keys.path(), &sign);

    let dir = project(&format!(
        "name: p\nimages:\n  web: {{image: '{host}/acme/web:v1'}}\nverify:\n  - certificate: {{identity: '{IDENTITY}', issuer: '{ISSUER}', trustedRoot: trusted_root.json}}\n"
    ));
    let root = dir.path();
    fs::write(
        root.join("trusted_root.json"),
        rekor.trusted_root(&[keys.path().join("root.pem")]),
    )
    .unwrap();
    // Signed, not logged: the default asks for the entry.
    let (code, stderr) = pin(root, &registry);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("carries no transparency log entry"),
        "{stderr}"
    );

    log_certificate_bundle(&host, "acme/web", &digest, &rekor);
    let (code, stderr) = pin(root, &registry);
    assert_eq!(code, Some(0), "{stderr}");
    let lock = fs::read_to_string(root.join("berth.lock")).unwrap();
    assert!(
        lock.contains(&format!("    identity: {IDENTITY}\n    issuer: {ISSUER}\n"))
            && lock.contains("    logIndex: 0\n"),
        "{lock}"
    );
}
