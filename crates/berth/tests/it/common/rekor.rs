//! A real Rekor v2 for tests (rekor-tiles' POSIX server, built by
//! `scripts/testenv build`): started on 127.0.0.1 with free ports, a fresh
//! ECDSA P-256 log key and temporary tile storage, stopped on drop; and the
//! files cosign 3 and berth need to use it (a signing config, a trusted root).
#![allow(dead_code)]

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;

use super::registry::{free_port, sha256};

/// The checkpoint origin the tests' log signs as.
pub const ORIGIN: &str = "rekor.test";

/// A running log.
pub struct Rekor {
    child: Child,
    /// `http://127.0.0.1:PORT`, where cosign sends entries.
    pub url: String,
    /// The log key's DER SubjectPublicKeyInfo.
    pub public_der: Vec<u8>,
    dir: tempfile::TempDir,
}

impl Drop for Rekor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Rekor {
    /// Starts `program` (rekor-tiles' POSIX server) and waits until it listens.
    pub fn start(program: &Path) -> Rekor {
        let dir = tempfile::tempdir().unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let key_file = dir.path().join("log.pem");
        std::fs::write(&key_file, key.serialize_pem()).unwrap();
        let (http, grpc, metrics) = (free_port(), free_port(), free_port());
        let child = Command::new(program)
            .arg("serve")
            .arg("--storage-dir")
            .arg(dir.path().join("tiles"))
            .arg("--signer-filepath")
            .arg(&key_file)
            .args(["--hostname", ORIGIN])
            .args([
                "--http-port",
                &http.to_string(),
                "--grpc-port",
                &grpc.to_string(),
            ])
            .args(["--http-metrics-port", &metrics.to_string()])
            // Entries are sequenced and checkpointed within a second, so cosign's
            // wait for its inclusion proof is short.
            .args(["--checkpoint-interval", "300ms", "--batch-max-age", "50ms"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("rekor.log")).unwrap())
            .spawn()
            .unwrap();
        let rekor = Rekor {
            child,
            url: format!("http://127.0.0.1:{http}"),
            public_der: pem_der(key.public_key_pem().as_bytes(), "PUBLIC KEY"),
            dir,
        };
        rekor.wait_ready(&[http, grpc]);
        rekor
    }

    fn wait_ready(&self, ports: &[u16]) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if ports
                .iter()
                .all(|p| TcpStream::connect(("127.0.0.1", *p)).is_ok())
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let log = std::fs::read_to_string(self.dir.path().join("rekor.log")).unwrap_or_default();
        panic!("rekor-tiles did not start on {}:\n{log}", self.url);
    }

    /// A cosign signing config that logs to this Rekor (API v2), and nothing else.
    pub fn signing_config(&self) -> String {
        format!(
            r#"{{"mediaType":"application/vnd.dev.sigstore.signingconfig.v0.2+json","rekorTlogUrls":[{{"url":"{}","majorApiVersion":2,"validFor":{{"start":"2024-01-01T00:00:00Z"}},"operator":"berth-tests"}}],"rekorTlogConfig":{{"selector":"ANY"}},"tsaConfig":{{}}}}"#,
            self.url
        )
    }

    /// Sigstore's trusted_root.json naming this log (its origin as the base URL's
    /// host) and the certificate authorities `ca_pems` (PEM files) hold.
    pub fn trusted_root(&self, ca_pems: &[PathBuf]) -> String {
        let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
        let key_id = sha256(&self.public_der);
        let key_id = hex_bytes(key_id.trim_start_matches("sha256:"));
        let authorities: Vec<String> = (ca_pems.iter())
            .map(|pem| {
                let text = std::fs::read(pem).unwrap();
                let der = pem_der(&text, "CERTIFICATE");
                format!(
                    r#"{{"subject":{{"organization":"berth tests","commonName":"test CA"}},"uri":"https://ca.test","certChain":{{"certificates":[{{"rawBytes":"{}"}}]}},"validFor":{{"start":"2024-01-01T00:00:00Z"}}}}"#,
                    b64(&der)
                )
            })
            .collect();
        format!(
            r#"{{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1","tlogs":[{{"baseUrl":"https://{ORIGIN}","hashAlgorithm":"SHA2_256","publicKey":{{"rawBytes":"{}","keyDetails":"PKIX_ECDSA_P256_SHA_256","validFor":{{"start":"2024-01-01T00:00:00Z"}}}},"logId":{{"keyId":"{}"}}}}],"certificateAuthorities":[{}],"ctlogs":[],"timestampAuthorities":[]}}"#,
            b64(&self.public_der),
            b64(&key_id),
            authorities.join(",")
        )
    }
}

/// Bytes from hex.
fn hex_bytes(hex: &str) -> Vec<u8> {
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// The DER of the first `label` block of a PEM text.
fn pem_der(pem: &[u8], label: &str) -> Vec<u8> {
    let text = String::from_utf8_lossy(pem);
    let begin = format!("-----BEGIN {label}");
    let body: String = (text.lines())
        .skip_while(|l| !l.starts_with(&begin))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .unwrap()
}
