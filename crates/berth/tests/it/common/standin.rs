//! A stand-in kubelet for one Node of a test's own, for what kwok cannot do:
//! run the controller's pods for real. kwok (which plays the kubelet of the
//! plane's own Nodes, `type=kwok`) marks every pod Ready; this one runs each pod
//! scheduled to its Node as a real `berth controller` process, with the pod's
//! own arguments (only `--listen` moved to a free local port) and its
//! ServiceAccount's token, and sets the pod's Ready condition from that
//! process's `/readyz`. A pod being deleted gets SIGTERM; once the process
//! exits its pod is removed, and the exit code kept for the test.
//!
//! Its Node is tainted `berth.dev/standin=<node>:NoSchedule`: a test's pods
//! need the toleration (and a nodeSelector on the label of the same name).
//! It keeps the Node's Ready heartbeat so the node-lifecycle controller leaves
//! it alone. A misbehaving peer of our own, in the sense of the guide: no real
//! kubelet can run here (no container runtime for the plane), so this is the
//! smallest thing that makes readiness real.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::berth_path;
use super::testenv::{Namespace, Plane};

/// What the serving thread needs of the test's namespace.
struct Ctx {
    plane: &'static Plane,
    namespace: String,
    /// The namespace's admin kubeconfig (pods, the Node).
    kubeconfig: PathBuf,
    /// The pods' ServiceAccount's token kubeconfig: the controller runs with the
    /// chart's RBAC, not as an admin.
    token: PathBuf,
}

impl Ctx {
    fn kubectl(&self, args: &[&str]) -> std::process::Output {
        self.plane.kubectl_with(&self.kubeconfig, args, None)
    }
}

struct Process {
    child: Child,
    log: PathBuf,
    ready: Option<bool>,
    terminating: bool,
    /// A Job's pod (`restartPolicy` other than `Always`): it runs to its end,
    /// and its exit code becomes the pod's phase.
    runs_once: bool,
    /// The pod's phase was set from the exit.
    finished: bool,
}

/// What the stand-in saw, for the test's assertions.
#[derive(Debug, Default, Clone)]
pub struct Seen {
    /// Exit codes of the processes of deleted pods, by pod name.
    pub exits: BTreeMap<String, Option<i32>>,
    /// Every pod it ran.
    pub ran: Vec<String>,
}

/// The running stand-in; stops its processes when dropped.
pub struct Standin {
    /// The Node's name (also its `berth.dev/standin` label's value).
    pub node: String,
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Seen>>,
    thread: Option<std::thread::JoinHandle<()>>,
    plane: &'static Plane,
}

impl Standin {
    /// Registers Node `standin-<namespace>` and serves the pods scheduled to it,
    /// running them as ServiceAccount `account` (which must exist).
    pub fn start(ns: &Namespace, account: &str) -> Standin {
        let node = format!("standin-{}", ns.name);
        let ctx = Ctx {
            plane: ns.plane,
            namespace: ns.name.clone(),
            kubeconfig: ns.kubeconfig.clone(),
            token: ns.token_kubeconfig(account),
        };
        let manifest = json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": node, "labels": {"berth.dev/standin": node, "kubernetes.io/hostname": node}},
            // Only the test's pods (which tolerate it) land here, never another test's.
            "spec": {"taints": [{"key": "berth.dev/standin", "value": node, "effect": "NoSchedule"}]},
        });
        let out = ns.plane.kubectl_with(
            &ns.kubeconfig,
            &["apply", "-f", "-"],
            Some(&manifest.to_string()),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        heartbeat(&ctx, &node);
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let thread = {
            let (stop, seen, node) = (Arc::clone(&stop), Arc::clone(&seen), node.clone());
            std::thread::spawn(move || serve(&ctx, &node, &stop, &seen))
        };
        Standin {
            node,
            stop,
            seen,
            thread: Some(thread),
            plane: ns.plane,
        }
    }

    /// What it saw so far.
    pub fn seen(&self) -> Seen {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Standin {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let _ = self
            .plane
            .kubectl(&["delete", "node", &self.node, "--wait=false"]);
    }
}

fn heartbeat(ctx: &Ctx, node: &str) {
    let now = now();
    let status = json!({"status": {
        "capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"},
        "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True", "reason": "StandinReady",
            "message": "the test's stand-in kubelet", "lastHeartbeatTime": now, "lastTransitionTime": now}],
    }});
    let out = ctx.kubectl(&[
        "patch",
        "node",
        node,
        "--subresource=status",
        "--type=merge",
        "-p",
        &status.to_string(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn now() -> String {
    let out = Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The pod's container arguments with `--listen` on a free local port.
fn arguments(pod: &Value) -> Vec<String> {
    pod["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .map(|a| {
            if a.starts_with("--listen") {
                "--listen=127.0.0.1:0".to_string()
            } else {
                a
            }
        })
        .collect()
}

fn readyz(log: &std::path::Path) -> bool {
    use std::io::{Read as _, Write as _};
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let Some(address) = text.lines().find_map(|l| {
        let at = l.find("\"address\":\"")? + "\"address\":\"".len();
        Some(l[at..].split('"').next()?.to_string())
    }) else {
        return false;
    };
    let Ok(mut stream) = std::net::TcpStream::connect(&address) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if write!(
        stream,
        "GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .is_err()
    {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 200")
}

fn set_ready(ctx: &Ctx, pod: &str, ready: bool) {
    let now = now();
    let status = if ready { "True" } else { "False" };
    let patch = json!({"status": {
        "phase": "Running",
        "podIP": "127.0.0.1",
        "startTime": now,
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
            {"type": "Initialized", "status": "True", "lastTransitionTime": now},
            {"type": "ContainersReady", "status": status, "lastTransitionTime": now},
            {"type": "Ready", "status": status, "lastTransitionTime": now},
        ],
        "containerStatuses": [{"name": "controller", "ready": ready, "restartCount": 0,
            "image": "stand-in", "imageID": "stand-in", "started": true,
            "state": {"running": {"startedAt": now}}}],
    }});
    let _ = ctx.kubectl(&[
        "patch",
        "pod",
        pod,
        "--subresource=status",
        "--type=merge",
        "-p",
        &patch.to_string(),
    ]);
}

/// A Job pod's process ended: its phase and container state, as a kubelet reports them.
fn finish(ctx: &Ctx, pod: &str, spec: &Value, code: Option<i32>) {
    let now = now();
    let code = code.unwrap_or(137);
    let container = spec["spec"]["containers"][0]["name"]
        .as_str()
        .unwrap_or("main");
    let patch = json!({"status": {
        "phase": if code == 0 { "Succeeded" } else { "Failed" },
        "podIP": "127.0.0.1",
        "startTime": now,
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
            {"type": "Initialized", "status": "True", "lastTransitionTime": now},
            {"type": "ContainersReady", "status": "False", "lastTransitionTime": now},
            {"type": "Ready", "status": "False", "lastTransitionTime": now},
        ],
        "containerStatuses": [{"name": container, "ready": false, "restartCount": 0,
            "image": "stand-in", "imageID": "stand-in", "started": false,
            "state": {"terminated": {"exitCode": code, "startedAt": now, "finishedAt": now,
                "reason": if code == 0 { "Completed" } else { "Error" }}}}],
    }});
    let _ = ctx.kubectl(&[
        "patch",
        "pod",
        pod,
        "--subresource=status",
        "--type=merge",
        "-p",
        &patch.to_string(),
    ]);
}

fn serve(ctx: &Ctx, node: &str, stop: &AtomicBool, seen: &Mutex<Seen>) {
    let mut processes: BTreeMap<String, Process> = BTreeMap::new();
    let mut beat = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        if beat.elapsed() > Duration::from_secs(5) {
            heartbeat(ctx, node);
            beat = Instant::now();
        }
        let out = ctx.kubectl(&[
            "get",
            "pods",
            "-o",
            "json",
            &format!("--field-selector=spec.nodeName={node}"),
        ]);
        let pods: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let pods = pods["items"].as_array().cloned().unwrap_or_default();
        for pod in &pods {
            let name = pod["metadata"]["name"].as_str().unwrap().to_string();
            let deleting = pod["metadata"]["deletionTimestamp"].is_string();
            if !processes.contains_key(&name) && !deleting {
                let log = ctx.kubeconfig.with_file_name(format!("{name}.log"));
                let child = Command::new(berth_path())
                    .args(arguments(pod))
                    .arg("--kubeconfig")
                    .arg(&ctx.token)
                    .env_clear()
                    .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                    .env("POD_NAME", &name)
                    .env("POD_NAMESPACE", &ctx.namespace)
                    .stdout(Stdio::null())
                    .stderr(std::fs::File::create(&log).unwrap())
                    .spawn()
                    .unwrap();
                seen.lock().unwrap().ran.push(name.clone());
                processes.insert(
                    name.clone(),
                    Process {
                        child,
                        log,
                        ready: None,
                        terminating: false,
                        runs_once: pod["spec"]["restartPolicy"]
                            .as_str()
                            .is_some_and(|p| p != "Always"),
                        finished: false,
                    },
                );
            }
            let Some(process) = processes.get_mut(&name) else {
                continue;
            };
            if deleting && !process.terminating {
                let _ = Command::new("kill")
                    .args(["-TERM", &process.child.id().to_string()])
                    .status();
                process.terminating = true;
            }
            if process.runs_once {
                if !process.finished {
                    if let Ok(Some(status)) = process.child.try_wait() {
                        finish(ctx, &name, pod, status.code());
                        seen.lock()
                            .unwrap()
                            .exits
                            .insert(name.clone(), status.code());
                        process.finished = true;
                    }
                }
                continue;
            }
            if !process.terminating {
                let ready = readyz(&process.log);
                if process.ready != Some(ready) {
                    set_ready(ctx, &name, ready);
                    process.ready = Some(ready);
                }
            }
        }
        // Processes whose pods are being deleted and that exited: the pod goes.
        let mut gone = Vec::new();
        for (name, process) in &mut processes {
            if process.terminating {
                if let Ok(Some(status)) = process.child.try_wait() {
                    seen.lock()
                        .unwrap()
                        .exits
                        .insert(name.clone(), status.code());
                    let _ = ctx.kubectl(&["delete", "pod", name, "--grace-period=0", "--force"]);
                    gone.push(name.clone());
                }
            }
        }
        for name in gone {
            processes.remove(&name);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    for process in processes.values_mut() {
        let _ = process.child.kill();
        let _ = process.child.wait();
    }
}
