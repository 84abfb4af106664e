//! `berth controller` as a child process for the tests against the real control
//! plane: started for one namespace, killed when dropped, its log beside the
//! namespace's kubeconfig; and the polling the tests use to wait for its work.
#![allow(dead_code)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::berth_path;
use super::testenv::Namespace;

/// The controller for one namespace, killed when dropped.
pub struct Controller {
    /// The process.
    pub child: Child,
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn start(ns: &Namespace) -> Controller {
    start_as(ns, "controller", &[])
}

/// A controller logging to `<name>.log` beside the namespace's kubeconfig.
pub fn start_as(ns: &Namespace, name: &str, extra: &[&str]) -> Controller {
    start_with(ns, name, extra, &ns.kubeconfig)
}

pub fn start_with(
    ns: &Namespace,
    name: &str,
    extra: &[&str],
    kubeconfig: &std::path::Path,
) -> Controller {
    start_env(ns, name, extra, kubeconfig, &[])
}

/// A controller with these environment variables (only `PATH` otherwise).
pub fn start_env(
    ns: &Namespace,
    name: &str,
    extra: &[&str],
    kubeconfig: &std::path::Path,
    env: &[(&str, &std::ffi::OsStr)],
) -> Controller {
    ns.plane.install_berth_crd();
    let log = std::fs::File::create(ns.kubeconfig.with_file_name(format!("{name}.log"))).unwrap();
    let child = Command::new(berth_path())
        .args([
            "controller",
            "--listen",
            "127.0.0.1:0",
            "--namespace",
            &ns.name,
        ])
        .args(extra)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        // The replica's identity in the Lease and in Events, as the downward API gives it.
        .env("POD_NAME", name)
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    Controller { child }
}

/// `deploy/controller/rbac-namespace.yaml` applied to `ns`: a kubeconfig of its
/// ServiceAccount, which has that Role's permissions only.
pub fn namespaced_rbac(ns: &Namespace) -> std::path::PathBuf {
    let rbac =
        std::fs::read_to_string(super::repo_root().join("deploy/controller/rbac-namespace.yaml"))
            .unwrap()
            .replace("team-a", &ns.name);
    apply(ns, &rbac);
    ns.token_kubeconfig("berth-controller")
}

pub fn apply(ns: &Namespace, manifest: &str) {
    let out = ns
        .plane
        .kubectl_with(&ns.kubeconfig, &["apply", "-f", "-"], Some(manifest));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Polls `check` every 50 ms until it returns `Some`, or fails after `secs`.
pub fn eventually<T>(
    secs: u64,
    what: &str,
    ns: &Namespace,
    mut check: impl FnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(value) = check() {
            return value;
        }
        if Instant::now() > deadline {
            let log = std::fs::read_to_string(ns.kubeconfig.with_file_name("controller.log"))
                .unwrap_or_default();
            let status = ns
                .get("berths", "llama")
                .map(|b| b["status"].to_string())
                .unwrap_or_default();
            panic!("{what}: not within {secs} s\nstatus: {status}\ncontroller log:\n{log}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn condition(berth: &Value, type_: &str) -> Option<(String, String, String)> {
    berth["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .map(|c| {
            (
                c["status"].as_str().unwrap_or_default().to_string(),
                c["reason"].as_str().unwrap_or_default().to_string(),
                c["message"].as_str().unwrap_or_default().to_string(),
            )
        })
}
