//! A real OCI registry (Debian's `docker-registry`, or go-containerregistry's
//! where a test needs the OCI 1.1 referrers API) for tests: started on
//! 127.0.0.1 with a random port and temporary storage, stopped on drop; and
//! test images built as OCI layouts and pushed with `skopeo copy`.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest as _, Sha256};

use super::{require_program, Group};

/// A running registry.
pub struct TestRegistry {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub host: String,
    /// Storage and config.
    pub dir: tempfile::TempDir,
    /// `user:password` when started with basic auth.
    pub creds: Option<String>,
}

impl Drop for TestRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free port on 127.0.0.1 (the listener is closed before the server binds it).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl TestRegistry {
    /// Starts a registry (the test needs `test-registry`).
    pub fn start(basic_auth: Option<(&str, &str)>) -> TestRegistry {
        TestRegistry::start_with(basic_auth, None)
    }

    /// A registry that sends clients to the token server `realm` (which need not
    /// answer): distribution's token auth, with a throwaway signing certificate.
    pub fn start_token_auth(realm: &str) -> TestRegistry {
        TestRegistry::start_with(None, Some(realm))
    }

    /// Starts `program`, a registry with the OCI 1.1 referrers API
    /// ([`super::testenv::Plane::referrers_registry`]: go-containerregistry's,
    /// in memory), in place of docker-registry, which has no such API.
    pub fn start_referrers(program: &Path) -> TestRegistry {
        require_program(Group::Registry, "skopeo");
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let mut command = Command::new(program);
        command.args(["--addr", &format!("127.0.0.1:{port}")]);
        TestRegistry::spawn(command, dir, port, None)
    }

    /// Runs `command` (a registry on `port`, logging to `dir/registry.log`) and waits
    /// until it answers.
    fn spawn(
        mut command: Command,
        dir: tempfile::TempDir,
        port: u16,
        creds: Option<String>,
    ) -> TestRegistry {
        let child = command
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("registry.log")).unwrap())
            .spawn()
            .unwrap();
        let registry = TestRegistry {
            child,
            host: format!("127.0.0.1:{port}"),
            dir,
            creds,
        };
        registry.wait_ready();
        registry
    }

    fn start_with(basic_auth: Option<(&str, &str)>, realm: Option<&str>) -> TestRegistry {
        require_program(Group::Registry, "docker-registry");
        require_program(Group::Registry, "skopeo");
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let mut config = format!(
            "version: 0.1\nlog: {{level: error}}\nstorage:\n  filesystem: {{rootdirectory: {}}}\n  delete: {{enabled: true}}\nhttp:\n  addr: 127.0.0.1:{port}\n",
            dir.path().join("data").display()
        );
        let mut creds = None;
        if let Some((user, password)) = basic_auth {
            require_program(Group::Registry, "htpasswd");
            let file = dir.path().join("htpasswd");
            let status = Command::new("htpasswd")
                .args(["-Bbc"])
                .arg(&file)
                .args([user, password])
                .stderr(Stdio::null())
                .status()
                .unwrap();
            assert!(status.success());
            config.push_str(&format!(
                "auth:\n  htpasswd: {{realm: berth-test, path: {}}}\n",
                file.display()
            ));
            creds = Some(format!("{user}:{password}"));
        }
        if let Some(realm) = realm {
            let key = rcgen::KeyPair::generate().unwrap();
            let cert = rcgen::CertificateParams::new(vec!["token".into()])
                .unwrap()
                .self_signed(&key)
                .unwrap();
            let bundle = dir.path().join("token.pem");
            std::fs::write(&bundle, cert.pem()).unwrap();
            config.push_str(&format!(
                "auth:\n  token: {{realm: '{realm}', service: berth-test, issuer: berth-test, rootcertbundle: {}}}\n",
                bundle.display()
            ));
        }
        let config_path = dir.path().join("config.yml");
        std::fs::write(&config_path, config).unwrap();
        let mut command = Command::new("docker-registry");
        command.arg("serve").arg(&config_path);
        TestRegistry::spawn(command, dir, port, creds)
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(mut stream) = TcpStream::connect(&self.host) {
                let _ = stream.write_all(b"GET /v2/ HTTP/1.0\r\n\r\n");
                let mut buf = [0u8; 12];
                if stream.read(&mut buf).is_ok_and(|n| n >= 12) && buf.starts_with(b"HTTP/1.") {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let log = std::fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default();
        panic!("the registry did not start on {}:\n{log}", self.host);
    }

    /// Pushes an image built by [`Layout`] as `name:tag`; returns its digest as the registry serves it.
    pub fn push(&self, layout: &Layout, name: &str, tag: &str) -> String {
        let mut cmd = Command::new("skopeo");
        cmd.args([
            "copy",
            "--all",
            "--quiet",
            "--insecure-policy",
            "--dest-tls-verify=false",
        ]);
        if let Some(creds) = &self.creds {
            cmd.arg("--dest-creds").arg(creds);
        }
        cmd.arg(format!("oci:{}:{}", layout.dir.display(), layout.tag));
        cmd.arg(format!("docker://{}/{name}:{tag}", self.host));
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "skopeo copy: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.skopeo_digest(&format!("{name}:{tag}"), None)
    }

    /// `sha256` of the manifest skopeo reads (optionally for one architecture).
    pub fn skopeo_digest(&self, image: &str, arch: Option<&str>) -> String {
        let mut cmd = Command::new("skopeo");
        cmd.args(["inspect", "--raw", "--tls-verify=false"]);
        if let Some(creds) = &self.creds {
            cmd.arg("--creds").arg(creds);
        }
        cmd.arg(format!("docker://{}/{image}", self.host));
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "skopeo inspect: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let raw = out.stdout;
        match arch {
            None => sha256(&raw),
            Some(arch) => {
                let index: serde_json::Value = serde_json::from_slice(&raw).unwrap();
                index["manifests"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|m| m["platform"]["architecture"] == arch)
                    .map(|m| m["digest"].as_str().unwrap().to_string())
                    .unwrap()
            }
        }
    }
}

/// `sha256:<hex>` of some bytes.
pub fn sha256(bytes: &[u8]) -> String {
    format!(
        "sha256:{}",
        Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    )
}

/// An OCI image layout on disk, made by the test (no network, no daemon).
pub struct Layout {
    /// The layout directory.
    pub dir: PathBuf,
    /// The tag inside the layout.
    pub tag: String,
    _temp: tempfile::TempDir,
}

fn put_blob(dir: &Path, bytes: &[u8]) -> (String, usize) {
    let digest = sha256(bytes);
    std::fs::write(
        dir.join("blobs/sha256")
            .join(digest.trim_start_matches("sha256:")),
        bytes,
    )
    .unwrap();
    (digest, bytes.len())
}

/// A manifest with `layers` layers of `layer_size` bytes each (plus `seed` to make them unique).
fn image_manifest(
    dir: &Path,
    arch: &str,
    seed: &str,
    layers: usize,
    layer_size: usize,
) -> (String, usize) {
    let mut descriptors = Vec::new();
    let mut diff_ids = Vec::new();
    for i in 0..layers {
        let mut content = format!("{seed}-{arch}-{i}\n").into_bytes();
        content.resize(layer_size.max(content.len()), b'x');
        let (digest, size) = put_blob(dir, &content);
        diff_ids.push(format!("\"{digest}\""));
        descriptors.push(format!(r#"{{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"{digest}","size":{size}}}"#));
    }
    let config = format!(
        r#"{{"architecture":"{arch}","os":"linux","rootfs":{{"type":"layers","diff_ids":[{}]}}}}"#,
        diff_ids.join(",")
    );
    let (config_digest, config_size) = put_blob(dir, config.as_bytes());
    let manifest = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{config_digest}","size":{config_size}}},"layers":[{}]}}"#,
        descriptors.join(",")
    );
    put_blob(dir, manifest.as_bytes())
}

impl Layout {
    fn empty() -> (tempfile::TempDir, PathBuf) {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("layout");
        std::fs::create_dir_all(dir.join("blobs/sha256")).unwrap();
        std::fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
        (temp, dir)
    }

    fn finish(
        temp: tempfile::TempDir,
        dir: PathBuf,
        media_type: &str,
        digest: &str,
        size: usize,
    ) -> Layout {
        let index = format!(
            r#"{{"schemaVersion":2,"manifests":[{{"mediaType":"{media_type}","digest":"{digest}","size":{size},"annotations":{{"org.opencontainers.image.ref.name":"t"}}}}]}}"#
        );
        std::fs::write(dir.join("index.json"), index).unwrap();
        Layout {
            dir,
            tag: "t".into(),
            _temp: temp,
        }
    }

    /// A single-platform image (linux/amd64).
    pub fn image(seed: &str, layers: usize, layer_size: usize) -> Layout {
        let (temp, dir) = Layout::empty();
        let (digest, size) = image_manifest(&dir, "amd64", seed, layers, layer_size);
        Layout::finish(
            temp,
            dir,
            "application/vnd.oci.image.manifest.v1+json",
            &digest,
            size,
        )
    }

    /// A multi-platform index for linux/amd64 and linux/arm64.
    pub fn index(seed: &str) -> Layout {
        let (temp, dir) = Layout::empty();
        let entries: Vec<String> = ["amd64", "arm64"]
            .iter()
            .map(|arch| {
                let (digest, size) = image_manifest(&dir, arch, seed, 1, 64);
                format!(r#"{{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"{digest}","size":{size},"platform":{{"architecture":"{arch}","os":"linux"}}}}"#)
            })
            .collect();
        let index = format!(
            r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{}]}}"#,
            entries.join(",")
        );
        let (digest, size) = put_blob(&dir, index.as_bytes());
        Layout::finish(
            temp,
            dir,
            "application/vnd.oci.image.index.v1+json",
            &digest,
            size,
        )
    }
}
