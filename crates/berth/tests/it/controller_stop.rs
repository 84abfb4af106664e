//! Sweep 4, item 4: the controller against API servers that refuse it (401), do
//! not exist (connection refused) or never answer stops within 10 s of SIGTERM
//! or SIGINT in every state — before the first list, during a failing list,
//! while trying to take the Lease — and writes fewer than 200 log lines in 8 s.
//!
//! The peers are written here: no real API server answers 401 to everything or
//! accepts connections and then says nothing, which is what these cases need.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::berth_path;

/// A peer that answers every HTTP request with `code` and a Status: 401 as an
/// API server does for a bad token, 404 as it does for a resource with no CRD.
pub(crate) fn answering_server(code: u16) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut buffer = [0u8; 8192];
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                while let Ok(n) = stream.read(&mut buffer) {
                    if n == 0 {
                        return;
                    }
                    let reason = if code == 404 {
                        "NotFound"
                    } else {
                        "Unauthorized"
                    };
                    let body = format!(
                        r#"{{"kind":"Status","apiVersion":"v1","status":"Failure","message":"{reason}","reason":"{reason}","code":{code}}}"#
                    );
                    let answer = format!("HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len());
                    if stream.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{address}")
}

/// A peer that accepts connections and never says a word.
fn silent_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    format!("http://{address}")
}

/// A port nothing listens on.
fn refused_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{address}")
}

pub(crate) fn kubeconfig(dir: &std::path::Path, server: &str) -> std::path::PathBuf {
    let path = dir.join(format!("kubeconfig-{}", server.replace([':', '/'], "_")));
    std::fs::write(
        &path,
        format!("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: '{server}'}}\nusers:\n- name: u\n  user: {{token: not-a-valid-token}}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u, namespace: default}}\ncurrent-context: c\n"),
    )
    .unwrap();
    path
}

/// Runs the controller for 8 s against `server`, sends `signal`, and returns
/// (its whole log, seconds to exit after the signal, exit code).
fn run(server: &str, extra: &[&str], signal: &str) -> (String, f64, Option<i32>) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let mut child = Command::new(berth_path())
        .args(["controller", "--listen", "127.0.0.1:0", "--kubeconfig"])
        .arg(kubeconfig(dir.path(), server))
        .args(extra)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(8));
    let logged = std::fs::read_to_string(&log).unwrap();
    let sent = Instant::now();
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if sent.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{server} {extra:?}: still running 20 s after SIG{signal}; its log:\n{}",
                std::fs::read_to_string(&log).unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let took = sent.elapsed().as_secs_f64();
    // What it said while stopping too.
    let stopped = std::fs::read_to_string(&log).unwrap();
    assert!(stopped.starts_with(&logged));
    (stopped, took, code)
}

#[test]
fn the_controller_stops_and_stays_quiet_against_a_refusing_missing_or_silent_api_server() {
    let unauthorized = answering_server(401);
    let no_crd = answering_server(404);
    let silent = silent_server();
    let refused = refused_server();
    let cases: [(&str, &str, &[&str], &str); 10] = [
        ("no Berth CRD", &no_crd, &[], "TERM"),
        ("401, all namespaces", &unauthorized, &[], "TERM"),
        (
            "401, one namespace",
            &unauthorized,
            &["--namespace", "team-a"],
            "INT",
        ),
        (
            "401, taking the Lease",
            &unauthorized,
            &["--leader-elect"],
            "TERM",
        ),
        ("connection refused", &refused, &[], "TERM"),
        ("never answers", &silent, &[], "TERM"),
        // Discovering the ClusterTrustBundle API before the controller runs.
        (
            "never answers, reading trust bundles",
            &silent,
            &["--cluster-trust-bundles"],
            "TERM",
        ),
        (
            "401, reading trust bundles",
            &unauthorized,
            &["--cluster-trust-bundles"],
            "INT",
        ),
        (
            "never answers, taking the Lease",
            &silent,
            &["--leader-elect"],
            "INT",
        ),
        (
            "401, JSON logs",
            &unauthorized,
            &["--log-format", "json", "--leader-elect"],
            "TERM",
        ),
    ];
    // Side by side: each case is 8 s of waiting.
    let runs: Vec<_> = cases
        .iter()
        .map(|(case, server, extra, signal)| {
            let (server, extra, signal) = (
                server.to_string(),
                extra.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
                signal.to_string(),
            );
            let case = case.to_string();
            std::thread::spawn(move || {
                let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
                (case, signal.clone(), run(&server, &extra, &signal))
            })
        })
        .collect();
    for handle in runs {
        let (case, signal, (logged, took, code)) = handle.join().unwrap();
        let lines = logged.lines().count();
        assert!(lines < 200, "{case}: {lines} log lines in 8 s");
        if case == "401, JSON logs" {
            // Sweep 4, item 8: one JSON object per line, each key once.
            for line in logged.lines() {
                let value: serde_json::Value = serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("{case}: not JSON ({e}): {line}"));
                let keys = value.as_object().unwrap().len();
                assert_eq!(
                    line.matches("\":").count(),
                    keys,
                    "{case}: a key twice: {line}"
                );
            }
        }
        if case == "no Berth CRD" {
            assert!(
                logged.contains("the Berth CRD is not installed"),
                "{case}: {logged}"
            );
        }
        // KC08 (#46): a watch that never listed is not `caches synced` once it ends.
        if let Some((_, after)) = logged.split_once("stopping before the caches synced") {
            assert!(!after.contains("caches synced"), "{case}: {logged}");
        }
        assert!(took < 10.0, "{case}: {took:.1} s to stop after SIG{signal}");
        assert_eq!(code, Some(0), "{case}: a signal is a clean stop");
    }
}
