//! `berth dev` end to end on the real control plane (`common/testenv.rs`): kwok
//! plays the kubelet, so exec (sync) runs `sh` and `tar` on this machine, every
//! container's log is the plane's `pod.log` (CRI log lines, followed), and a pod's
//! port P reaches 127.0.0.1:P here. The loop is driven through its JSON events.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::common;
use common::testenv::{plane, Namespace};

const IMAGE: &str = "ghcr.io/acme/app:v1";

/// A project with a Deployment of `replicas` whose pods read a generated config,
/// a sync rule from `src/` into `target`, and (with `forward`) a forward to port
/// `forward.0` of the pods from 127.0.0.1:`forward.1`.
fn project(
    target: &Path,
    replicas: u32,
    level: &str,
    forward: Option<(u16, u16)>,
) -> tempfile::TempDir {
    let dev = forward.map_or(String::new(), |(port, local)| {
        format!("dev:\n  forward:\n    - {{component: app, port: {port}, local: {local}}}\n")
    });
    let dir = common::project(&berth_yaml(target, level, &dev));
    std::fs::write(
        dir.path().join("deploy.yaml"),
        format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web}}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n      containers:\n        - name: app\n          image: {IMAGE}\n          envFrom: [{{configMapRef: {{name: web-config}}}}]\n"),
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/a.txt"), "one").unwrap();
    dir
}

fn berth_yaml(target: &Path, level: &str, dev: &str) -> String {
    format!(
        "name: devloop\nmanifests: [deploy.yaml]\nimages:\n  app: {{image: {IMAGE}}}\nconfigs:\n  web-config:\n    literals: [LEVEL={level}]\nsync:\n  - name: app\n    target: {{component: app}}\n    paths: [{{from: src/, to: {}/}}]\n{dev}",
        target.display()
    )
}

/// A running `berth dev --output json` and the events it printed.
struct Dev {
    child: Child,
    events: Receiver<Value>,
    seen: Vec<Value>,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl Dev {
    fn start(dir: &Path, ns: &Namespace, extra: &[&str]) -> Dev {
        Dev::start_env(dir, ns, extra, &[])
    }

    fn start_env(dir: &Path, ns: &Namespace, extra: &[&str], env: &[(&str, &str)]) -> Dev {
        let mut child = Command::new(common::berth_path())
            .current_dir(dir)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .envs(env.iter().copied())
            .args(["dev", "--output", "json", "--poll", "0.3", "--kubeconfig"])
            .arg(&ns.kubeconfig)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let (tx, events) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let event: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not a JSON event ({e}): {line}"));
                if tx.send(event).is_err() {
                    return;
                }
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        Dev {
            child,
            events,
            seen: Vec::new(),
            stderr: Some(stderr),
        }
    }

    /// The first event from now on that `wanted` accepts; fails after `within`
    /// with every event seen.
    fn wait(&mut self, what: &str, within: Duration, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(event) => {
                    self.seen.push(event.clone());
                    if wanted(&event) {
                        return event;
                    }
                }
                Err(_) => panic!(
                    "no {what} within {within:?}; events:\n{}",
                    self.seen
                        .iter()
                        .map(Value::to_string)
                        .collect::<Vec<_>>()
                        .join("\n")
                ),
            }
        }
    }

    /// How many events have been seen: a mark for [`Dev::since`].
    fn mark(&self) -> usize {
        self.seen.len()
    }

    /// The first event after `mark` that `wanted` accepts, already seen or still
    /// to come: the loop's parts run side by side, so a sync into a new pod may be
    /// reported before the rollout that made the pod.
    fn since(
        &mut self,
        mark: usize,
        what: &str,
        within: Duration,
        wanted: impl Fn(&Value) -> bool,
    ) -> Value {
        match self.seen[mark..].iter().find(|e| wanted(e)) {
            Some(event) => event.clone(),
            None => self.wait(what, within, wanted),
        }
    }

    fn errors(&self) -> Vec<&Value> {
        self.seen.iter().filter(|e| e["event"] == "error").collect()
    }

    /// The exit status of a loop that stops by itself within `within`, its events and stderr.
    fn exited(mut self, within: Duration) -> (Option<i32>, Vec<Value>, String) {
        let deadline = Instant::now() + within;
        let code = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status.code();
            }
            assert!(
                Instant::now() < deadline,
                "berth dev did not stop by itself within {within:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        let stderr = self
            .stderr
            .take()
            .map(|t| t.join().unwrap())
            .unwrap_or_default();
        let rest: Vec<Value> = self.events.try_iter().collect();
        self.seen.extend(rest);
        (code, std::mem::take(&mut self.seen), stderr)
    }

    /// SIGTERM, then the exit status and stderr.
    fn terminate(mut self) -> (Option<i32>, Vec<Value>, String) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let deadline = Instant::now() + Duration::from_secs(20);
        let code = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status.code();
            }
            assert!(
                Instant::now() < deadline,
                "berth dev did not stop within 20 s of SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        let rest: Vec<Value> = self.events.try_iter().collect();
        self.seen.extend(rest);
        let stderr = self
            .stderr
            .take()
            .map(|t| t.join().unwrap())
            .unwrap_or_default();
        (code, std::mem::take(&mut self.seen), stderr)
    }
}

impl Drop for Dev {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn is(event: &Value, name: &str) -> bool {
    event["event"] == name
}

/// A line in the CRI log format kwok reads from the plane's `pod.log`.
fn cri_line(text: &str) -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let seconds = berth_core::time::rfc3339(now.as_secs() as i64);
    format!(
        "{}.{:09}Z stdout F {text}\n",
        seconds.trim_end_matches('Z'),
        now.subsec_nanos()
    )
}

/// The plane's `pod.log` (every container's log), when the plane is testenv's.
fn pod_log(ns: &Namespace) -> PathBuf {
    let log = ns.plane.kubeconfig.with_file_name("pod.log");
    assert!(
        log.is_file(),
        "{} is missing: the plane is not `scripts/testenv up` (kwok's ClusterLogs)",
        log.display()
    );
    log
}

/// A one-answer HTTP server on 127.0.0.1 (what a pod's port reaches through kwok).
fn http_server(body: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut request = [0u8; 1024];
            let _ = stream.read(&mut request);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One GET through the forward, read by its Content-Length: kwok's port-forward
/// (as `kubectl port-forward` through it shows) does not pass the pod side's
/// close on, so reading to the end would wait for the timeout.
fn get(port: u16) -> std::io::Result<String> {
    let stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    (&stream).write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")?;
    let mut reader = BufReader::new(stream);
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse().unwrap_or(0);
        }
        if line == "\r\n" || line.is_empty() {
            break;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(String::from_utf8_lossy(&body).into_owned())
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn dev_once_applies_waits_syncs_and_exits() {
    let plane = plane();
    let ns = plane.namespace("dev-once");
    let target = tempfile::tempdir().unwrap();
    // One replica: kwok runs every pod's exec on this machine, so two would write one directory.
    let dir = project(&target.path().join("app"), 1, "info", None);
    let out = common::berth(dir.path())
        .args(["dev", "--once", "--output", "json", "--kubeconfig"])
        .arg(&ns.kubeconfig)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    // Two objects applied (the config, the Deployment), the rollout done, the pod synced.
    let applied = names.iter().filter(|n| **n == "applied").count();
    let synced = names.iter().filter(|n| **n == "synced").count();
    assert_eq!(
        (names[0], applied, synced, *names.last().unwrap()),
        ("rendered", 2, 1, "stopped"),
        "{stdout}"
    );
    assert!(names.contains(&"ready"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(target.path().join("app/a.txt")).unwrap(),
        "one"
    );
    assert!(ns.get("deployment", "web").is_some());

    // A rollout that does not finish in time: exit 1, with the reason as an error event.
    // (A new config rolls a new pod, which minReadySeconds keeps unavailable.)
    std::fs::write(
        dir.path().join("berth.yaml"),
        berth_yaml(&target.path().join("app"), "warn", ""),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("deploy.yaml"),
        std::fs::read_to_string(dir.path().join("deploy.yaml"))
            .unwrap()
            .replace(
                "spec:\n  replicas",
                "spec:\n  minReadySeconds: 600\n  progressDeadlineSeconds: 900\n  replicas",
            ),
    )
    .unwrap();
    let out = common::berth(dir.path())
        .args([
            "dev",
            "--once",
            "--output",
            "json",
            "--rollout-timeout",
            "3",
            "--kubeconfig",
        ])
        .arg(&ns.kubeconfig)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("\"event\":\"error\"") && l.contains("\"stage\":\"rollout\"")),
        "{stdout}"
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn dev_loop_syncs_rolls_streams_forwards_and_stops_on_sigterm() {
    let plane = plane();
    let ns = plane.namespace("dev-loop");
    let pod_log = pod_log(&ns);
    let target = tempfile::tempdir().unwrap();
    let to = target.path().join("app");
    let port = http_server("hello from the pod");
    let local = free_port();
    let dir = project(&to, 1, "info", Some((port, local)));
    let mut dev = Dev::start(dir.path(), &ns, &[]);
    let minute = Duration::from_secs(60);

    // Ready, and the initial sync into the new pod (reported before or after it).
    dev.wait("the rollout", minute, |e| {
        is(e, "ready") && e["object"]["name"] == "web"
    });
    let first = dev.since(0, "the initial sync", minute, |e| {
        is(e, "synced") && e["reason"] == "initial"
    });
    let first_pod = first["pod"].as_str().unwrap().to_string();
    assert_eq!(std::fs::read_to_string(to.join("a.txt")).unwrap(), "one");

    // An edit of a sync source: synced into the running container, nothing re-applied.
    std::fs::write(dir.path().join("src/a.txt"), "two").unwrap();
    let change = dev.wait("the edit synced", minute, |e| {
        is(e, "synced") && e["reason"] == "change"
    });
    assert_eq!(
        (change["files"].as_u64(), change["pod"].as_str()),
        (Some(1), Some(first_pod.as_str()))
    );
    assert_eq!(std::fs::read_to_string(to.join("a.txt")).unwrap(), "two");

    // A log line of the pod arrives as an event.
    let token = format!("dev-log-{}", std::process::id());
    std::fs::OpenOptions::new()
        .append(true)
        .open(&pod_log)
        .unwrap()
        .write_all(cri_line(&token).as_bytes())
        .unwrap();
    let log = dev.wait("the log line", minute, |e| {
        is(e, "log") && e["text"] == token.as_str()
    });
    assert_eq!(
        (log["pod"].as_str(), log["container"].as_str()),
        (Some(first_pod.as_str()), Some("app"))
    );

    // The forward: 127.0.0.1:local -> kube-apiserver -> kwok -> 127.0.0.1:port.
    dev.since(0, "the forward", minute, |e| {
        is(e, "forward") && e["pod"] == first_pod.as_str()
    });
    let answer = get(local).unwrap();
    assert!(answer.ends_with("hello from the pod"), "{answer}");

    // A config edit: a new hashed config rolls the Deployment; sync follows the new pod.
    std::fs::write(
        dir.path().join("berth.yaml"),
        berth_yaml(
            &to,
            "debug",
            &format!("dev:\n  forward:\n    - {{component: app, port: {port}, local: {local}}}\n"),
        ),
    )
    .unwrap();
    let rendered = dev.wait("the new render", minute, |e| {
        is(e, "rendered") && e["changed"] == true
    });
    let config = rendered["generated"][0].as_str().unwrap().to_string();
    let edited = dev.mark();
    dev.since(edited, "the new rollout", minute, |e| {
        is(e, "ready") && e["object"]["name"] == "web"
    });
    let resynced = dev.since(edited, "the sync into the new pod", minute, |e| {
        is(e, "synced") && e["pod"].as_str().is_some_and(|p| p != first_pod)
    });
    let new_pod = resynced["pod"].as_str().unwrap().to_string();
    let live = ns.get("pod", &new_pod).unwrap();
    assert_eq!(
        live["spec"]["containers"][0]["envFrom"][0]["configMapRef"]["name"],
        config.as_str()
    );
    dev.since(edited, "the forward re-targeted", minute, |e| {
        is(e, "forward") && e["pod"] == new_pod.as_str()
    });
    assert!(get(local).unwrap().ends_with("hello from the pod"));
    std::fs::write(dir.path().join("src/a.txt"), "three").unwrap();
    dev.wait("an edit synced into the new pod", minute, |e| {
        is(e, "synced") && e["reason"] == "change" && e["pod"] == new_pod.as_str()
    });
    assert_eq!(std::fs::read_to_string(to.join("a.txt")).unwrap(), "three");
    assert!(dev.errors().is_empty(), "{:?}", dev.errors());

    // Sweep 4, item 12: a comment added to berth.yaml moves every entry's line, and
    // the forward keeps listening (it used to be reopened and fail: address in use).
    let text = std::fs::read_to_string(dir.path().join("berth.yaml")).unwrap();
    std::fs::write(
        dir.path().join("berth.yaml"),
        format!("# a comment\n{text}"),
    )
    .unwrap();
    let commented = dev.mark();
    dev.since(commented, "the render after the comment", minute, |e| {
        is(e, "rendered")
    });
    std::thread::sleep(Duration::from_millis(500));
    assert!(get(local).unwrap().ends_with("hello from the pod"));
    assert!(dev.errors().is_empty(), "{:?}", dev.errors());

    // An apply the API server refuses is an error event; the loop goes on, and the fix applies.
    let manifest = std::fs::read_to_string(dir.path().join("deploy.yaml")).unwrap();
    std::fs::write(
        dir.path().join("deploy.yaml"),
        manifest.replace("replicas: 1", "replicas: -1"),
    )
    .unwrap();
    let refused = dev.wait("the refused apply", minute, |e| is(e, "error"));
    assert_eq!(refused["stage"], "apply", "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("spec.replicas"),
        "{refused}"
    );
    // (Not the same as before the error, or there would be nothing to apply.)
    let fixed = manifest.replace(
        "metadata: {name: web}",
        "metadata: {name: web, labels: {fixed: \"yes\"}}",
    );
    std::fs::write(dir.path().join("deploy.yaml"), fixed).unwrap();
    let fixing = dev.mark();
    dev.since(fixing, "the fixed apply", minute, |e| {
        is(e, "applied") && e["object"]["kind"] == "Deployment"
    });
    dev.since(fixing, "its rollout", minute, |e| {
        is(e, "ready") && e["object"]["name"] == "web"
    });
    assert_eq!(
        ns.get("deployment", "web").unwrap()["metadata"]["labels"]["fixed"],
        "yes"
    );

    // SIGTERM: `stopped`, exit 0, the forward's port closed, the cluster left as it is.
    let (code, events, stderr) = dev.terminate();
    assert_eq!(code, Some(0), "{stderr}");
    let last = events.last().unwrap();
    assert_eq!(
        (last["event"].as_str(), last["signal"].as_str()),
        (Some("stopped"), Some("SIGTERM"))
    );
    assert!(
        TcpStream::connect(("127.0.0.1", local)).is_err(),
        "the forward still listens"
    );
    assert!(ns.get("deployment", "web").is_some());
}

#[test]
fn dev_refuses_what_it_cannot_do_before_touching_a_cluster() {
    let target = tempfile::tempdir().unwrap();
    let dir = project(&target.path().join("app"), 1, "info", None);
    let run = |args: &[&str]| {
        let out = common::berth(dir.path()).args(args).output().unwrap();
        common::transcript(&out)
    };
    insta::assert_snapshot!(run(&["dev", "--no-wait"]), @"
    exit: 1
    --- stdout
    --- stderr
    error: --no-wait does not apply to `berth dev`, which waits for every rollout to sync into the new pods; use `berth apply --no-wait`
    ");
    insta::assert_snapshot!(run(&["dev", "-"]), @"
    exit: 1
    --- stdout
    --- stderr
    error: `berth dev` renders again on every change, and standard input can be read once; give the manifests as files or directories
    ");
    // Sweep 4: a usage error, exit 2.
    insta::assert_snapshot!(run(&["dev", "--poll", "0"]), @"
    exit: 2
    --- stdout
    --- stderr
    error: invalid value '0' for '--poll <SECONDS>': must be more than 0 and at most 3600 seconds

    For more information, try '--help'.
    ");
}

/// Sweep 4, Y08/Y02/Y22: `dev --once --output json` whose first render fails
/// says so as an `error` event (then `stopped`), once, and exits 1.
#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn y08_a_first_render_that_fails_is_one_error_event() {
    let plane = plane();
    let ns = plane.namespace("dev-broken");
    let target = tempfile::tempdir().unwrap();
    let dir = project(&target.path().join("app"), 1, "info", None);
    std::fs::write(
        dir.path().join("deploy.yaml"),
        "apiVersion: v1\nkind: 9lives\nmetadata: {name: x}\n",
    )
    .unwrap();
    let out = common::berth(dir.path())
        .args(["dev", "--once", "--output", "json", "--kubeconfig"])
        .arg(&ns.kubeconfig)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 2, "{stdout}");
    assert_eq!(
        (events[0]["event"].as_str(), events[0]["stage"].as_str()),
        (Some("error"), Some("render"))
    );
    assert!(
        events[0]["message"]
            .as_str()
            .unwrap()
            .contains("starting with a letter"),
        "{stdout}"
    );
    assert_eq!(events[1]["event"], "stopped");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("starting with a letter"),
        "said once: {stderr}"
    );
}

/// #34: a part of the loop that dies (here the sync session, made to panic by
/// `BERTH_DEV_FAULT=sync`, which only debug builds read) is an `error` event and a
/// clean stop with status 1, not a loop that goes on without it.
#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn a_part_that_dies_is_an_error_event_and_a_clean_stop() {
    let plane = plane();
    let ns = plane.namespace("dev-killed");
    let target = tempfile::tempdir().unwrap();
    let dir = project(&target.path().join("app"), 1, "info", None);
    let dev = Dev::start_env(dir.path(), &ns, &[], &[("BERTH_DEV_FAULT", "sync")]);
    stopped_by_a_dead_part(dev, "sync", "the sync part stopped: BERTH_DEV_FAULT=sync");
}

/// `dev` ends by itself with status 1 after an `error` event of `stage` whose
/// message starts with `message`, and `stopped` (no signal) is its last event.
fn stopped_by_a_dead_part(dev: Dev, stage: &str, message: &str) {
    let (code, events, stderr) = dev.exited(Duration::from_secs(90));
    assert_eq!(code, Some(1), "{stderr}");
    let error = events
        .iter()
        .find(|e| is(e, "error") && e["stage"] == stage)
        .unwrap_or_else(|| panic!("no {stage} error event: {events:?}"));
    assert!(
        error["message"].as_str().unwrap().starts_with(message),
        "{error}"
    );
    let last = events.last().unwrap();
    assert!(is(last, "stopped"), "the last event: {last}");
    assert_eq!(last["signal"], Value::Null);
}

/// #34: the file watcher is a part too. Made to panic on the first edit by
/// `BERTH_DEV_FAULT=watch` (debug builds only), it is an `error` event of stage
/// `watch` and a stop with status 1, not a loop that no longer sees edits.
#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn a_file_watcher_that_dies_is_an_error_event_and_a_clean_stop() {
    let plane = plane();
    let ns = plane.namespace("dev-watch-killed");
    let target = tempfile::tempdir().unwrap();
    let dir = project(&target.path().join("app"), 1, "info", None);
    let mut dev = Dev::start_env(dir.path(), &ns, &[], &[("BERTH_DEV_FAULT", "watch")]);
    dev.wait("the first rollout", Duration::from_secs(90), |e| {
        is(e, "ready") && e["object"]["name"] == "web"
    });
    std::fs::write(dir.path().join("src/a.txt"), "two").unwrap();
    stopped_by_a_dead_part(
        dev,
        "watch",
        "the file watcher stopped: BERTH_DEV_FAULT=watch",
    );
}

/// #33 item 11: `berth dev` across an API-server outage, on a plane of the test's
/// own (`scripts/testenv restart DIR kube-apiserver --down-for 4`): an edit saved
/// while the server is down is synced once it is back (retried, not forgotten
/// until the next save), and the pod's log is followed again afterwards.
#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn an_api_server_outage_loses_neither_a_sync_nor_the_logs() {
    common::require_program(common::Group::Plane, "go");
    let own = common::testenv::OwnPlane::up();
    let ns = own.plane.namespace("outage");
    let pod_log = pod_log(&ns);
    let target = tempfile::tempdir().unwrap();
    let to = target.path().join("app");
    let dir = project(&to, 1, "info", None);
    let mut dev = Dev::start(dir.path(), &ns, &[]);
    let minute = Duration::from_secs(60);
    dev.wait("the initial sync", minute, |e| {
        is(e, "synced") && e["reason"] == "initial"
    });
    let log_line = |text: &str| {
        std::fs::OpenOptions::new()
            .append(true)
            .open(&pod_log)
            .unwrap()
            .write_all(cri_line(text).as_bytes())
            .unwrap();
    };
    let before = format!("before-outage-{}", std::process::id());
    log_line(&before);
    dev.wait("the log line before the outage", minute, |e| {
        is(e, "log") && e["text"] == before.as_str()
    });

    // The API server goes away for 4 s; a file is saved while it is down.
    std::thread::scope(|scope| {
        scope.spawn(|| own.restart("kube-apiserver", Duration::from_secs(4)));
        std::thread::sleep(Duration::from_millis(1500));
        std::fs::write(dir.path().join("src/a.txt"), "saved during the outage").unwrap();
    });

    // Back: the edit lands without another save, and the log is followed again.
    let deadline = Instant::now() + minute;
    while std::fs::read_to_string(to.join("a.txt")).unwrap_or_default() != "saved during the outage"
    {
        assert!(
            Instant::now() < deadline,
            "the edit saved during the outage was not synced within 60 s; events:\n{}",
            dev.seen
                .iter()
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        );
        std::thread::sleep(Duration::from_millis(200));
        // Drain events so `seen` shows what dev said.
        while let Ok(event) = dev.events.try_recv() {
            dev.seen.push(event);
        }
    }
    let after = format!("after-outage-{}", std::process::id());
    let mark = dev.mark();
    // A stream re-opened after the outage may start at its last line again; the new one must come.
    log_line(&after);
    dev.since(mark, "the log line after the outage", minute, |e| {
        is(e, "log") && e["text"] == after.as_str()
    });
    assert!(
        dev.child.try_wait().unwrap().is_none(),
        "berth dev kept running"
    );
}
