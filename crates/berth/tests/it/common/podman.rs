//! Real podman containers for the sync tests.
//!
//! Each [`Podman`] has its own storage and configuration in a temporary
//! directory (written once as `CONTAINERS_CONF`/`CONTAINERS_STORAGE_CONF`, so
//! every podman call — berth's own included — gets this machine's settings:
//! runc, cgroupfs, vfs, ulimits). The image is a root filesystem built from
//! busybox and `podman import`ed; containers are removed on drop.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::{require_program, Group};

/// The busybox applets the images get (berth needs sh, tar, find, sha256sum, readlink, rm).
const APPLETS: &[&str] = &[
    "sh",
    "tar",
    "sleep",
    "ls",
    "cat",
    "sha256sum",
    "find",
    "readlink",
    "rm",
    "id",
    "kill",
    "mkdir",
    "chmod",
    "chown",
    "touch",
    "echo",
    "mount",
    "stat",
    "true",
    "false",
];

pub struct Podman {
    dir: tempfile::TempDir,
    /// `podman system service`, when a test drives the docker CLI through it.
    service: std::cell::RefCell<Option<std::process::Child>>,
}

/// An image built by [`Podman::image`].
pub const IMAGE: &str = "localhost/berth-busybox:latest";

impl Podman {
    /// podman with private storage (the test needs `test-podman`).
    pub fn start() -> Podman {
        for program in ["podman", "runc", "busybox"] {
            require_program(Group::Podman, program);
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        std::fs::write(
            root.join("containers.conf"),
            "[containers]\ndefault_ulimits = [\"nofile=1024:1024\", \"nproc=4096:4096\"]\n\
             [engine]\nruntime = \"runc\"\ncgroup_manager = \"cgroupfs\"\nevents_logger = \"file\"\n",
        )
        .expect("containers.conf");
        std::fs::write(
            root.join("storage.conf"),
            format!(
                "[storage]\ndriver = \"vfs\"\nrunroot = \"{0}/runroot\"\ngraphroot = \"{0}/graph\"\n",
                root.display()
            ),
        )
        .expect("storage.conf");
        let podman = Podman {
            dir,
            service: std::cell::RefCell::new(None),
        };
        podman.image(IMAGE, APPLETS);
        podman
    }

    /// The two variables that point podman at this instance's configuration.
    pub fn env(&self) -> [(&'static str, PathBuf); 2] {
        [
            ("CONTAINERS_CONF", self.dir.path().join("containers.conf")),
            (
                "CONTAINERS_STORAGE_CONF",
                self.dir.path().join("storage.conf"),
            ),
        ]
    }

    /// A `podman` command using this instance.
    pub fn cmd(&self) -> Command {
        let mut cmd = Command::new("podman");
        cmd.envs(self.env());
        cmd
    }

    /// Runs podman and returns stdout; panics with stderr on failure.
    pub fn run(&self, args: &[&str]) -> String {
        let out = self.cmd().args(args).output().expect("run podman");
        assert!(
            out.status.success(),
            "podman {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Imports a busybox root filesystem with `applets` linked as `name`.
    pub fn image(&self, name: &str, applets: &[&str]) {
        let rootfs = self.rootfs(name);
        std::fs::create_dir_all(rootfs.join("bin")).expect("rootfs");
        std::fs::create_dir_all(rootfs.join("tmp")).expect("rootfs");
        let busybox = which("busybox");
        std::fs::copy(&busybox, rootfs.join("bin/busybox")).expect("copy busybox");
        for applet in applets {
            std::os::unix::fs::symlink("busybox", rootfs.join("bin").join(applet))
                .expect("applet link");
        }
        self.import(&rootfs, name);
    }

    /// Imports an image holding host programs (`sh` = dash, `sleep`) and the
    /// libraries they load, and nothing else: a container genuinely without tar
    /// (busybox's standalone shell would run its own tar applet).
    pub fn host_image(&self, name: &str, programs: &[(&str, &str)]) {
        let rootfs = self.rootfs(name);
        for (inside, host) in programs {
            let host = which(host);
            copy_into(&rootfs, &host, inside);
            let ldd = Command::new("ldd").arg(&host).output().expect("ldd");
            for lib in String::from_utf8_lossy(&ldd.stdout)
                .split_whitespace()
                .filter(|w| w.starts_with('/'))
            {
                copy_into(&rootfs, Path::new(lib), lib.trim_start_matches('/'));
            }
        }
        self.import(&rootfs, name);
    }

    fn rootfs(&self, image: &str) -> PathBuf {
        self.dir
            .path()
            .join(format!("rootfs-{}", image.replace(['/', ':'], "-")))
    }

    /// Tars `rootfs` and `podman import`s it as `name`.
    fn import(&self, rootfs: &Path, name: &str) {
        let tar = rootfs.with_extension("tar");
        let status = Command::new("tar")
            .arg("-C")
            .arg(rootfs)
            .arg("-cf")
            .arg(&tar)
            .arg(".")
            .status()
            .expect("tar");
        assert!(status.success());
        let tar = tar.to_str().expect("UTF-8 temp path");
        self.run(&["import", "-q", "--change", "ENV=PATH=/bin", tar, name]);
    }

    /// Serves podman's Docker-compatible API on a socket (`podman system service`),
    /// so the real docker CLI drives these containers; returns the `DOCKER_HOST` value.
    pub fn docker_host(&self) -> String {
        let socket = self.dir.path().join("docker.sock");
        let url = format!("unix://{}", socket.display());
        let child = self
            .cmd()
            .args(["system", "service", "--time=0", &url])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("podman system service");
        *self.service.borrow_mut() = Some(child);
        let start = std::time::Instant::now();
        while !socket.exists() {
            assert!(
                start.elapsed() < std::time::Duration::from_secs(20),
                "podman service did not start"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        url
    }

    /// Starts a container that sleeps; returns its ID.
    pub fn container(&self, name: &str, extra: &[&str]) -> String {
        let mut args = vec!["run", "-d", "--name", name];
        args.extend(extra);
        args.extend([IMAGE, "/bin/sleep", "3600"]);
        self.container_with(&args)
    }

    /// `podman run ARGS` (a full argument list); returns the container ID.
    pub fn container_with(&self, args: &[&str]) -> String {
        self.run(args).trim().to_string()
    }

    /// Runs a command in a container.
    pub fn exec(&self, container: &str, argv: &[&str]) -> Output {
        self.cmd()
            .arg("exec")
            .arg(container)
            .args(argv)
            .output()
            .expect("podman exec")
    }

    /// `path -> sha256` (and `path -> link:target`, `path/ -> dir`, exec bit as `+x`)
    /// of everything below `root` in a container.
    pub fn tree(&self, container: &str, root: &str) -> Vec<String> {
        let script = r#"cd "$1" || exit 0
find . -type d | while IFS= read -r d; do echo "$d/ dir"; done
find . -type l | while IFS= read -r l; do echo "$l link:$(readlink "$l")"; done
find . -type f -perm -100 | while IFS= read -r f; do echo "$f +x"; done
find . -type f -exec sha256sum {} + | while read -r h f; do echo "$f $h"; done"#;
        let out = self.exec(container, &["sh", "-c", script, "sh", root]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.starts_with("./ ") && *l != "./ dir")
            .map(|l| l.trim_start_matches("./").to_string())
            .collect();
        lines.sort();
        lines
    }
}

/// The same listing as [`Podman::tree`] for a local directory.
pub fn local_tree(root: &Path) -> Vec<String> {
    use sha2::Digest;
    use std::os::unix::fs::PermissionsExt;
    let mut lines = Vec::new();
    fn walk(root: &Path, dir: &Path, lines: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_str()
                .unwrap()
                .to_string();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.file_type().is_symlink() {
                lines.push(format!(
                    "{rel} link:{}",
                    std::fs::read_link(&path).unwrap().display()
                ));
            } else if meta.is_dir() {
                lines.push(format!("{rel}/ dir"));
                walk(root, &path, lines);
            } else {
                if meta.permissions().mode() & 0o100 != 0 {
                    lines.push(format!("{rel} +x"));
                }
                let hash = sha2::Sha256::digest(std::fs::read(&path).unwrap());
                let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
                lines.push(format!("{rel} {hex}"));
            }
        }
    }
    walk(root, root, &mut lines);
    lines.sort();
    lines
}

fn copy_into(rootfs: &Path, from: &Path, inside: &str) {
    let to = rootfs.join(inside);
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(from, &to).unwrap_or_else(|e| panic!("copy {}: {e}", from.display()));
}

fn which(program: &str) -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{program} on PATH"))
}

impl Drop for Podman {
    fn drop(&mut self) {
        if let Some(mut service) = self.service.borrow_mut().take() {
            let _ = service.kill();
            let _ = service.wait();
        }
        let _ = self.cmd().args(["rm", "-af", "-t", "0"]).output();
        kill_conmons_under(self.dir.path());
        // vfs layers can hold files podman made read-only; make them removable.
        let _ = Command::new("chmod")
            .arg("-R")
            .arg("u+w")
            .arg(self.dir.path())
            .output();
    }
}

/// Exec sessions opened through the Docker API leave a `conmon --exit-delay 300`
/// behind after their container is removed; stop the ones that name this store, so a
/// test run leaves no process of its own.
fn kill_conmons_under(dir: &Path) {
    let needle = dir.as_os_str().as_encoded_bytes();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let conmon = cmdline
            .split(|b| *b == 0)
            .next()
            .is_some_and(|argv0| argv0.ends_with(b"conmon"));
        if conmon && cmdline.windows(needle.len()).any(|w| w == needle) {
            let _ = Command::new("kill").arg(pid.to_string()).output();
        }
    }
}
