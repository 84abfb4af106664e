//! `berth mirror` against real consumers: two real registries (the source and
//! the mirror), podman pulling through the generated registries.conf, and a
//! containerd started here pulling through the generated `hosts.toml` — each
//! with the source registry stopped, so the configuration is what made the
//! pull work (without it, the same pull fails).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;

use common::podman::Podman;
use common::registry::TestRegistry;
use common::{berth, project};

/// A project of two images podman built and pushed to `source`, one nested
/// below the other's path (`llm-d/epp` and `llm-d/epp/sidecar`, the layout
/// oc-mirror once broke on), pinned; returns the project and each image by
/// digest as berth.lock pins it.
fn pushed(podman: &Podman, source: &TestRegistry) -> (tempfile::TempDir, Vec<String>) {
    let mut yaml = String::from("name: shop\nimages:\n");
    for (component, path, applets) in [
        ("epp", "llm-d/epp", &["sh", "true"][..]),
        ("sidecar", "llm-d/epp/sidecar", &["sh", "true", "echo"][..]),
    ] {
        let local = format!("localhost/{component}");
        podman.image(&local, applets);
        let repository = format!("{}/{path}", source.host);
        podman.run(&[
            "push",
            "--tls-verify=false",
            &local,
            &format!("docker://{repository}:v1"),
        ]);
        yaml.push_str(&format!("  {component}: {{image: '{repository}:v1'}}\n"));
    }
    let dir = project(&yaml);
    let out = berth(dir.path())
        .args(["pin", "--insecure-registry", &source.host])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::transcript(&out));
    let list = berth(dir.path())
        .args(["images", "--locked", "--output", "list"])
        .output()
        .unwrap();
    assert!(list.status.success(), "{}", common::transcript(&list));
    // `repo:v1@sha256:…` → `repo@sha256:…`: pulled by digest alone.
    let images = String::from_utf8_lossy(&list.stdout)
        .lines()
        .map(|l| l.replace(":v1@", "@"))
        .collect();
    (dir, images)
}

/// A pushed and mirrored image: podman, both registries, the project.
struct Mirrored {
    podman: Podman,
    source: TestRegistry,
    target: TestRegistry,
    dir: tempfile::TempDir,
    /// Each image by digest.
    images: Vec<String>,
}

/// Pushes an image to a source registry, pins it and mirrors it to another.
fn mirrored() -> Mirrored {
    let podman = Podman::start();
    let source = TestRegistry::start(None);
    let target = TestRegistry::start(None);
    let (dir, images) = pushed(&podman, &source);
    let out = mirror(dir.path(), &source, &target);
    assert!(out.status.success(), "{}", common::transcript(&out));
    Mirrored {
        podman,
        source,
        target,
        dir,
        images,
    }
}

fn mirror(dir: &Path, source: &TestRegistry, to: &TestRegistry) -> std::process::Output {
    berth(dir)
        .args(["mirror", "--locked", "--to", &format!("{}/mirror", to.host)])
        .args(["--out", "mirror", "--insecure-registry", &source.host])
        .args(["--insecure-registry", &to.host])
        .output()
        .unwrap()
}

fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in walk(dir) {
        let bytes = std::fs::read(&entry).unwrap();
        out.push((
            entry.strip_prefix(dir).unwrap().display().to_string(),
            bytes,
        ));
    }
    out.sort();
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
#[cfg_attr(
    not(all(feature = "test-registry", feature = "test-podman")),
    ignore = "needs test-registry, test-podman (run scripts/test)"
)]
fn podman_pulls_from_the_mirror_with_the_source_stopped() {
    let Mirrored {
        podman,
        source,
        target,
        dir,
        images,
    } = mirrored();
    let written = tree(&dir.path().join("mirror"));
    let names: Vec<&str> = written.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            ".berth-mirror".to_string(),
            format!("containerd/certs.d/{}/hosts.toml", source.host),
            "openshift/imagedigestmirrorset.yaml".to_string(),
            "registries.conf.d/50-shop.conf".to_string(),
        ]
    );
    // The same lock, the same bytes (and the copy finds every blob in place).
    let again = mirror(dir.path(), &source, &target);
    assert!(again.status.success(), "{}", common::transcript(&again));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("0 blob(s) sent"),
        "{}",
        common::transcript(&again)
    );
    assert_eq!(tree(&dir.path().join("mirror")), written);

    // Another component: one more object, the others' bytes unchanged.
    let sets = |dir: &Path| {
        std::fs::read_to_string(dir.join("mirror/openshift/imagedigestmirrorset.yaml")).unwrap()
    };
    let before = sets(dir.path());
    let yaml = std::fs::read_to_string(dir.path().join("berth.yaml")).unwrap();
    let digest = images[0].rsplit('@').next().unwrap();
    std::fs::write(
        dir.path().join("berth.yaml"),
        format!("{yaml}  extra: {{image: 'ghcr.io/llm-d/extra:v1@{digest}'}}\n"),
    )
    .unwrap();
    let more = berth(dir.path())
        .args([
            "mirror",
            "--locked",
            "--no-copy",
            "--to",
            &format!("{}/mirror", target.host),
        ])
        .args(["--out", "mirror", "--insecure-registry", &source.host])
        .args(["--insecure-registry", &target.host])
        .output()
        .unwrap();
    assert!(more.status.success(), "{}", common::transcript(&more));
    let after = sets(dir.path());
    let objects = |text: &str| -> Vec<String> { text.split("---\n").map(str::to_string).collect() };
    assert_eq!(objects(&after).len(), objects(&before).len() + 1);
    for object in objects(&before) {
        assert!(objects(&after).contains(&object), "changed: {object}");
    }

    drop(source);
    podman.run(&["rmi", "--all", "--force"]);
    let conf = dir.path().join("mirror/registries.conf.d/50-shop.conf");
    for by_digest in &images {
        let without = podman
            .cmd()
            .env("CONTAINERS_REGISTRIES_CONF", dir.path().join("none.conf"))
            .args(["pull", "--tls-verify=false", by_digest])
            .output()
            .unwrap();
        assert!(
            !without.status.success(),
            "the source is stopped: without the mirror configuration the pull must fail"
        );
        let with = podman
            .cmd()
            .env("CONTAINERS_REGISTRIES_CONF", &conf)
            .args(["pull", by_digest])
            .output()
            .unwrap();
        assert!(
            with.status.success(),
            "{by_digest}: {}",
            common::transcript(&with)
        );
        let id = podman.run(&["image", "inspect", "--format", "{{.Digest}}", by_digest]);
        assert_eq!(Some(id.trim()), by_digest.rsplit('@').next());
    }
}

/// containerd, started here as root with its own root, state and socket and the
/// native snapshotter (no CRI plugin), stopped on drop.
struct Containerd {
    child: Child,
    dir: tempfile::TempDir,
}

impl Containerd {
    fn start() -> Containerd {
        common::require_program(common::Group::Podman, "containerd");
        common::require_program(common::Group::Podman, "ctr");
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(
            d.join("config.toml"),
            format!(
                "version = 2\nroot = \"{0}/root\"\nstate = \"{0}/state\"\ndisabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n[grpc]\n  address = \"{0}/containerd.sock\"\n",
                d.display()
            ),
        )
        .unwrap();
        let child = Command::new("containerd")
            .arg("--config")
            .arg(d.join("config.toml"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(d.join("containerd.log")).unwrap())
            .spawn()
            .unwrap();
        let containerd = Containerd { child, dir };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let version = containerd.ctr().arg("version").output().unwrap();
            if version.status.success() {
                return containerd;
            }
            if Instant::now() > deadline {
                let log = std::fs::read_to_string(containerd.dir.path().join("containerd.log"))
                    .unwrap_or_default();
                panic!(
                    "containerd did not start within 30 s: {}\n{log}",
                    String::from_utf8_lossy(&version.stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn ctr(&self) -> Command {
        let mut command = Command::new("ctr");
        command
            .arg("--address")
            .arg(self.dir.path().join("containerd.sock"))
            .args(["--namespace", "berth-test", "--timeout", "60s"]);
        command
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
#[cfg_attr(
    not(all(feature = "test-registry", feature = "test-podman")),
    ignore = "needs test-registry, test-podman (run scripts/test)"
)]
fn containerd_pulls_from_the_mirror_with_the_source_stopped() {
    // The mirror registry (`_target`) serves the pull; the source is stopped.
    let Mirrored {
        podman: _podman,
        source,
        target: _target,
        dir,
        images,
    } = mirrored();
    drop(source);
    let containerd = Containerd::start();
    for by_digest in &images {
        let pull = |hosts: &Path| {
            containerd
                .ctr()
                .args(["images", "pull", "--snapshotter", "native", "--hosts-dir"])
                .arg(hosts)
                .arg(by_digest)
                .output()
                .unwrap()
        };
        let without = pull(&dir.path().join("no-hosts"));
        assert!(
            !without.status.success(),
            "the source is stopped: without hosts.toml the pull must fail"
        );
        let with = pull(&dir.path().join("mirror/containerd/certs.d"));
        assert!(
            with.status.success(),
            "{by_digest}: {}",
            common::transcript(&with)
        );
    }
    let listed = containerd
        .ctr()
        .args(["images", "ls", "--quiet"])
        .output()
        .unwrap();
    for by_digest in &images {
        assert!(
            String::from_utf8_lossy(&listed.stdout).contains(by_digest.as_str()),
            "{}",
            common::transcript(&listed)
        );
    }
}

/// The CRDs of `scripts/testenv crds` (openshift/api), applied to the plane
/// once and Established.
fn openshift_crds(plane: &common::testenv::Plane) {
    let out = Command::new(common::repo_root().join("scripts/testenv"))
        .arg("crds")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::transcript(&out));
    let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let applied = plane.kubectl(&["apply", "--server-side", "-f", &dir]);
    assert!(applied.status.success(), "{}", common::transcript(&applied));
    for crd in [
        "imagedigestmirrorsets.config.openshift.io",
        "imagetagmirrorsets.config.openshift.io",
    ] {
        // A CRD created a moment ago may have no status yet ("accessor error"): ask again.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let wait = plane.kubectl(&[
                "wait",
                "--for=condition=Established",
                &format!("crd/{crd}"),
                "--timeout=30s",
            ]);
            if wait.status.success() {
                break;
            }
            assert!(Instant::now() < deadline, "{}", common::transcript(&wait));
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// #37: the ImageDigestMirrorSet and ImageTagMirrorSet objects pass the real
/// CRDs' server-side validation (openshift/api's schemas on the test plane),
/// and the check is real: an object the schema refuses fails it.
#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn the_mirror_sets_pass_openshifts_own_crd_validation() {
    let plane = common::testenv::plane();
    openshift_crds(plane);
    let digest = "sha256:8b1d5b5c1e4f7f2d3a0c9e6b5a4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d";
    let dir = project(&format!(
        "name: shop\nimages:\n  epp: {{image: 'ghcr.io/llm-d/epp:v1@{digest}'}}\n  sidecar: {{image: 'quay.io/a/b/sidecar:v1@{digest}'}}\n  db: {{image: 'mysql:8.0', registry: false}}\n"
    ));
    let out = berth(dir.path())
        .args([
            "mirror",
            "--no-copy",
            "--to",
            "mirror.corp:5000/mirror",
            "--out",
            "mirror",
        ])
        .args(["--mirror-source-policy", "NeverContactSource"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::transcript(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("[tag-mirror]"),
        "{}",
        common::transcript(&out)
    );
    let openshift = dir.path().join("mirror/openshift");
    let dry = plane.kubectl(&[
        "apply",
        "--dry-run=server",
        "-f",
        &openshift.display().to_string(),
    ]);
    assert!(dry.status.success(), "{}", common::transcript(&dry));
    let applied = String::from_utf8_lossy(&dry.stdout);
    assert_eq!(applied.matches("(server dry run)").count(), 3, "{applied}");
    // The schema is enforced: a policy it does not know is refused.
    let bad = std::fs::read_to_string(openshift.join("imagedigestmirrorset.yaml"))
        .unwrap()
        .replace("NeverContactSource", "SometimesContactSource");
    std::fs::write(dir.path().join("bad.yaml"), bad).unwrap();
    let refused = plane.kubectl(&[
        "apply",
        "--dry-run=server",
        "-f",
        &dir.path().join("bad.yaml").display().to_string(),
    ]);
    assert!(
        !refused.status.success(),
        "{}",
        common::transcript(&refused)
    );
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("mirrorSourcePolicy"),
        "{}",
        common::transcript(&refused)
    );
}
