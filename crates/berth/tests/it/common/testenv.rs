//! The real control plane for cluster tests (`scripts/testenv`): kube-apiserver,
//! etcd, controller-manager, scheduler and kwok nodes built from Go modules.
//!
//! Which cluster, in order:
//! - `BERTH_TEST_KUBECONFIG`: any cluster (the testenv `.ci/run` starts, kind, k3d…);
//!   `BERTH_TEST_KUBECTL` names the kubectl to drive it (default: testenv's, else PATH's).
//! - otherwise `scripts/testenv up target/testenv`, which builds the plane (once; cached)
//!   and starts it, or reuses the one already running there. It keeps running after the
//!   tests, for the next run; `scripts/testenv down target/testenv` stops it.
//!
//! Cluster tests are marked as needing `test-plane` (`common::Group::Plane`): off,
//! they show as ignored; on, a plane that cannot start is a failure. Each test works
//! in a namespace of its own, so every test of every binary shares one plane.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

use serde_json::Value;

use super::repo_root;

/// A running cluster and the kubectl that drives it.
#[derive(Debug)]
pub struct Plane {
    /// Admin kubeconfig.
    pub kubeconfig: PathBuf,
    /// kubectl matching the server's version.
    pub kubectl: PathBuf,
}

static PLANE: OnceLock<Result<Plane, String>> = OnceLock::new();

fn start() -> Result<Plane, String> {
    if let Some(kubeconfig) = std::env::var_os("BERTH_TEST_KUBECONFIG") {
        let kubectl = std::env::var_os("BERTH_TEST_KUBECTL")
            .map(PathBuf::from)
            .or_else(testenv_kubectl)
            .unwrap_or_else(|| PathBuf::from("kubectl"));
        return Ok(Plane {
            kubeconfig: kubeconfig.into(),
            kubectl,
        });
    }
    super::require_program(super::Group::Plane, "go");
    let dir = repo_root().join("target/testenv");
    eprintln!(
        "starting the test control plane: scripts/testenv up {} (the first build takes minutes)",
        dir.display()
    );
    let out = Command::new(repo_root().join("scripts/testenv"))
        .arg("up")
        .arg(&dir)
        .output()
        .map_err(|e| format!("cannot run scripts/testenv: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let Some(kubeconfig) = stdout
        .lines()
        .last()
        .and_then(|l| l.strip_prefix("export KUBECONFIG="))
    else {
        return Err(format!(
            "scripts/testenv up failed:\n{}{}",
            stdout,
            String::from_utf8_lossy(&out.stderr)
        ));
    };
    Ok(Plane {
        kubeconfig: kubeconfig.into(),
        kubectl: testenv_kubectl().ok_or("scripts/testenv build printed no directory")?,
    })
}

fn testenv_kubectl() -> Option<PathBuf> {
    let out = Command::new(repo_root().join("scripts/testenv"))
        .arg("build")
        .output()
        .ok()?;
    let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let kubectl = Path::new(&dir).join("kubectl");
    (out.status.success() && kubectl.is_file()).then_some(kubectl)
}

/// The shared plane (the test needs `test-plane`); one that cannot start is a failure.
pub fn plane() -> &'static Plane {
    super::Group::Plane.check();
    match PLANE.get_or_init(start) {
        Ok(plane) => plane,
        Err(why) => panic!("the test control plane did not start: {why}"),
    }
}

/// A namespace of one test, deleted when dropped, with a kubeconfig whose
/// context defaults to it.
pub struct Namespace {
    /// The plane it lives in.
    pub plane: &'static Plane,
    /// Its name.
    pub name: String,
    /// Admin kubeconfig defaulting to this namespace.
    pub kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

impl Plane {
    /// helm: `BERTH_TEST_HELM`, else the one `scripts/testenv build` put beside its
    /// kubectl; a missing one is a failure (it is part of the plane).
    pub fn helm(&self) -> PathBuf {
        self.beside_kubectl("BERTH_TEST_HELM", "helm")
    }

    /// Helm 3 (for its exec-form post-renderer): `BERTH_TEST_HELM3`, else the `helm3`
    /// `scripts/testenv build` put beside its kubectl; a missing one is a failure.
    pub fn helm3(&self) -> PathBuf {
        self.beside_kubectl("BERTH_TEST_HELM3", "helm3")
    }

    /// cosign 2 (the signature tests): `BERTH_TEST_COSIGN2`, else the `cosign2`
    /// `scripts/testenv build` put beside its kubectl; a missing one is a failure.
    pub fn cosign2(&self) -> PathBuf {
        self.beside_kubectl("BERTH_TEST_COSIGN2", "cosign2")
    }

    /// cosign 3 (its sigstore bundles as referrers): `BERTH_TEST_COSIGN3`, else the
    /// `cosign3` `scripts/testenv build` put beside its kubectl.
    pub fn cosign3(&self) -> PathBuf {
        self.beside_kubectl("BERTH_TEST_COSIGN3", "cosign3")
    }

    /// A registry with the OCI 1.1 referrers API (go-containerregistry's, built by
    /// `scripts/testenv build`): `BERTH_TEST_REFERRERS_REGISTRY`, else the one beside kubectl.
    pub fn referrers_registry(&self) -> PathBuf {
        self.beside_kubectl("BERTH_TEST_REFERRERS_REGISTRY", "referrers-registry")
    }

    /// Rekor v2 (rekor-tiles' POSIX server, built by `scripts/testenv build`):
    /// `BERTH_TEST_REKOR`, else the `rekor-tiles` beside kubectl.
    pub fn rekor(&self) -> PathBuf {
        self.beside_kubectl("BERTH_TEST_REKOR", "rekor-tiles")
    }

    /// The program `variable` names, else `name` beside the plane's kubectl.
    fn beside_kubectl(&self, variable: &str, name: &str) -> PathBuf {
        let program = std::env::var_os(variable)
            .map(PathBuf::from)
            .unwrap_or_else(|| self.kubectl.with_file_name(name));
        assert!(
            program.is_file(),
            "no {name} at {} (scripts/testenv build builds it beside kubectl)",
            program.display()
        );
        program
    }

    /// `program` (a helm) run in `dir` with helm's homes inside it, so no test
    /// reads or writes the user's plugins, repositories or cache.
    pub fn helm_in(program: &Path, dir: &Path) -> Command {
        let mut command = Command::new(program);
        command
            .current_dir(dir)
            .env("HELM_CACHE_HOME", dir.join(".helm/cache"))
            .env("HELM_CONFIG_HOME", dir.join(".helm/config"))
            .env("HELM_DATA_HOME", dir.join(".helm/data"));
        command
    }

    /// Runs kubectl against the plane with the admin kubeconfig.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_with(&self.kubeconfig, args, None)
    }

    /// Runs kubectl with `kubeconfig`, optionally feeding `stdin`.
    pub fn kubectl_with(&self, kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> Output {
        use std::io::Write as _;
        let mut child = Command::new(&self.kubectl)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("kubectl runs");
        let mut input = child.stdin.take().expect("piped stdin");
        input
            .write_all(stdin.unwrap_or_default().as_bytes())
            .expect("write kubectl's stdin");
        drop(input);
        child.wait_with_output().expect("kubectl finishes")
    }

    /// kubectl that must succeed; its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The `apiVersion` ClusterTrustBundles are served at: `certificates.k8s.io/v1`
    /// from 1.37, `v1alpha1` on 1.30 (where scripts/testenv enables the API).
    pub fn trust_bundle_api(&self) -> String {
        let out = self.ok(&[
            "api-resources",
            "--api-group=certificates.k8s.io",
            "--no-headers",
        ]);
        let row = out.lines().find(|l| l.starts_with("clustertrustbundles "));
        let row = row.expect("the plane serves ClusterTrustBundles (scripts/testenv enables them)");
        row.split_whitespace()
            .find(|w| w.starts_with("certificates.k8s.io/"))
            .expect("an API version column")
            .to_string()
    }

    /// Applies the `Berth` CRD as `berth controller crd` prints it and waits for it.
    pub fn install_berth_crd(&self) {
        let crd = Command::new(super::berth_path())
            .args(["controller", "crd"])
            .output()
            .expect("berth controller crd runs");
        assert!(
            crd.status.success(),
            "{}",
            String::from_utf8_lossy(&crd.stderr)
        );
        let out = self.kubectl_with(
            &self.kubeconfig,
            &["apply", "--server-side", "-f", "-"],
            Some(&String::from_utf8_lossy(&crd.stdout)),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // A CRD created a moment ago may have no status yet, which kubectl's wait
        // reports as an error ("accessor error: <nil>") instead of waiting: ask again.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let out = self.kubectl(&[
                "wait",
                "--for=condition=Established",
                "crd/berths.berth.dev",
                "--timeout=30s",
            ]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            if out.status.success() {
                break;
            }
            assert!(
                stderr.contains("accessor error") && std::time::Instant::now() < deadline,
                "kubectl wait for the Berth CRD: {stderr}"
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }

    /// A fresh namespace named `<prefix>-<pid>-<n>`.
    pub fn namespace(&'static self, prefix: &str) -> Namespace {
        let name = format!(
            "{prefix}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        self.ok(&["create", "namespace", &name]);
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = dir.path().join("kubeconfig");
        std::fs::copy(&self.kubeconfig, &kubeconfig).expect("copy the kubeconfig");
        let out = self.kubectl_with(
            &kubeconfig,
            &["config", "set-context", "--current", "--namespace", &name],
            None,
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Namespace {
            plane: self,
            name,
            kubeconfig,
            _dir: dir,
        }
    }
}

impl Namespace {
    /// Runs kubectl in this namespace.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.plane.kubectl_with(&self.kubeconfig, args, None)
    }

    /// kubectl in this namespace that must succeed; its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `kubectl apply --server-side -f -` of `manifest` as field manager `manager`.
    pub fn apply_as(&self, manager: &str, manifest: &str) {
        let out = self.plane.kubectl_with(
            &self.kubeconfig,
            &[
                "apply",
                "--server-side",
                "--field-manager",
                manager,
                "-f",
                "-",
            ],
            Some(manifest),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A kubeconfig for ServiceAccount `account` of this namespace (a 10-minute
    /// token), beside the namespace's own.
    pub fn token_kubeconfig(&self, account: &str) -> PathBuf {
        let token = self.ok(&["create", "token", account, "--duration=10m"]);
        let path = self
            .kubeconfig
            .with_file_name(format!("{account}-kubeconfig"));
        std::fs::copy(&self.kubeconfig, &path).expect("copy the kubeconfig");
        for args in [
            vec![
                "config",
                "set-credentials",
                account,
                "--token",
                token.trim(),
            ],
            vec!["config", "set-context", "--current", "--user", account],
        ] {
            let out = self.plane.kubectl_with(&path, &args, None);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        path
    }

    /// One object as JSON, or `None` when it does not exist.
    pub fn get(&self, resource: &str, name: &str) -> Option<Value> {
        self.get_in(&self.name, resource, name)
    }

    /// One object of namespace `namespace` as JSON, or `None`.
    pub fn get_in(&self, namespace: &str, resource: &str, name: &str) -> Option<Value> {
        let out = self.kubectl(&[
            "get",
            resource,
            name,
            "-n",
            namespace,
            "-o",
            "json",
            "--show-managed-fields",
        ]);
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("NotFound"),
                "kubectl get {resource} {name}: {stderr}"
            );
            return None;
        }
        Some(serde_json::from_slice(&out.stdout).expect("kubectl prints JSON"))
    }

    /// Names of the objects of `resource` in this namespace, sorted.
    pub fn names(&self, resource: &str) -> Vec<String> {
        let out = self.ok(&[
            "get",
            resource,
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}{\"\\n\"}{end}",
        ]);
        let mut names: Vec<String> = out.lines().map(str::to_string).collect();
        names.sort();
        names
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = self
            .plane
            .kubectl(&["delete", "namespace", &self.name, "--wait=false"]);
    }
}

/// A control plane of a test's own (`scripts/testenv up` in a temporary
/// directory), for fault tests: the shared one must not go away under the other
/// tests. Stopped when dropped.
pub struct OwnPlane {
    dir: tempfile::TempDir,
    /// The plane, as the shared one is used.
    pub plane: &'static Plane,
}

impl OwnPlane {
    /// Starts one (the binaries `scripts/testenv build` made).
    pub fn up() -> OwnPlane {
        let dir = tempfile::tempdir().unwrap();
        let up = testenv(&["up".as_ref(), dir.path().as_os_str()]);
        assert!(
            up.status.success(),
            "{}",
            String::from_utf8_lossy(&up.stderr)
        );
        let bins = String::from_utf8(testenv(&["build".as_ref()]).stdout).unwrap();
        let plane: &'static Plane = Box::leak(Box::new(Plane {
            kubeconfig: dir.path().join("kubeconfig"),
            kubectl: Path::new(bins.trim()).join("kubectl"),
        }));
        OwnPlane { dir, plane }
    }

    /// Stops `component` and starts it again `down_for` later (blocks until it is up).
    pub fn restart(&self, component: &str, down_for: std::time::Duration) {
        let seconds = format!("{:.1}", down_for.as_secs_f64());
        let restarted = testenv(&[
            "restart".as_ref(),
            self.dir.path().as_os_str(),
            component.as_ref(),
            "--down-for".as_ref(),
            seconds.as_ref(),
        ]);
        assert!(
            restarted.status.success(),
            "{}",
            String::from_utf8_lossy(&restarted.stderr)
        );
    }
}

impl Drop for OwnPlane {
    fn drop(&mut self) {
        let _ = testenv(&["down".as_ref(), self.dir.path().as_os_str()]);
    }
}

fn testenv(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(repo_root().join("scripts/testenv"))
        .args(args)
        .output()
        .unwrap()
}
