//! `berth controller` against the real control plane (`common/testenv.rs`): the
//! CRD as `berth controller crd` prints it, the controller as a child process
//! watching one namespace, and the cluster's state as the test's evidence.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::controller::{
    apply, condition, eventually, namespaced_rbac, start, start_as, start_with,
};
use common::testenv::{plane, Namespace};
use common::{berth, project};

fn mounted_config(ns: &Namespace) -> Option<String> {
    let d = ns.get("deployments", "llama-stack")?;
    d["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"]
        .as_str()
        .map(str::to_string)
}

pub(crate) const BERTH: &str = "apiVersion: berth.dev/v1alpha1
kind: Berth
metadata: {name: llama}
spec:
  keep: 2
  workloads:
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {name: llama-stack}
    spec:
      replicas: 2
      selector: {matchLabels: {app: llama-stack}}
      template:
        metadata: {labels: {app: llama-stack}}
        spec:
          containers:
          - name: server
            image: docker.io/llamastack/distribution-starter:0.2.0
            volumeMounts: [{name: run, mountPath: /etc/llama}]
          volumes:
          - {name: run, configMap: {name: run-config}}
  images:
    server: {image: 'docker.io/llamastack/distribution-starter:0.2.1', pullPolicy: auto}
  configs:
    run-config:
      fromConfigMap: {name: my-run-yaml, key: run.yaml}
      schema:
        inline: {type: object, required: [version], properties: {version: {type: integer, maximum: 9}}}
";

pub(crate) fn run_yaml(version: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: my-run-yaml}}\ndata:\n  run.yaml: |\n    version: {version}\n")
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn a_source_change_rolls_the_workload_and_old_generations_go_after_success() {
    let plane = plane();
    let ns = plane.namespace("controller");
    let _controller = start(&ns);
    apply(&ns, &run_yaml("2"));
    apply(&ns, BERTH);
    let first = eventually(30, "the workload uses a generated config", &ns, || {
        mounted_config(&ns)
    });
    // The same name `berth render` gives for the same data.
    let dir = project("name: same\nconfigs:\n  run-config:\n    files: [run.yaml]\n");
    std::fs::write(dir.path().join("run.yaml"), "version: 2\n").unwrap();
    let rendered = berth(dir.path())
        .args(["render", "-"])
        .write_stdin("")
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&rendered.stdout).contains(&format!("name: {first}\n")),
        "{first}"
    );
    eventually(30, "Ready", &ns, || {
        let b = ns.get("berths", "llama")?;
        (condition(&b, "Ready")?.0 == "True").then_some(())
    });
    let b = ns.get("berths", "llama").unwrap();
    assert_eq!(condition(&b, "Ready").unwrap().1, "RolledOut");
    assert_eq!(b["status"]["observedGeneration"], 1);
    assert_eq!(b["status"]["configs"][0]["object"], first.as_str());
    assert_eq!(b["status"]["configs"][0]["source"], "configMap/my-run-yaml");
    assert_eq!(
        b["status"]["images"][0]["image"],
        "docker.io/llamastack/distribution-starter:0.2.1"
    );
    let d = ns.get("deployments", "llama-stack").unwrap();
    assert_eq!(d["metadata"]["ownerReferences"][0]["kind"], "Berth");
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
        "IfNotPresent"
    );
    let managers: Vec<String> = d["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["operation"] == "Apply")
        .map(|m| m["manager"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(managers, ["berth-controller"]);
    let source = ns.get("configmaps", "my-run-yaml").unwrap();
    assert_eq!(source["metadata"]["labels"]["berth.dev/source"], "true");
    let generated = ns.get("configmaps", &first).unwrap();
    assert_eq!(generated["immutable"], true);

    // Two edits: each a new generation, the workload rolled; keep 2 keeps the last two.
    let mut names = vec![first.clone()];
    for version in ["3", "4"] {
        apply(&ns, &run_yaml(version));
        let previous = names.last().unwrap().clone();
        let next = eventually(30, "the new generation is mounted", &ns, || {
            mounted_config(&ns).filter(|n| *n != previous)
        });
        names.push(next);
        eventually(30, "rolled out", &ns, || {
            let b = ns.get("berths", "llama")?;
            let ready = condition(&b, "Ready")?;
            (ready.0 == "True"
                && b["status"]["configs"][0]["object"] == names.last().unwrap().as_str())
            .then_some(())
        });
    }
    eventually(30, "the oldest generation is deleted", &ns, || {
        let left: Vec<String> = ns
            .names("configmaps")
            .into_iter()
            .filter(|n| n.starts_with("run-config-"))
            .collect();
        (left == {
            let mut kept = names[1..].to_vec();
            kept.sort();
            kept
        })
        .then_some(())
    });

    // A schema violation: Degraded with the pointer and line, the workload untouched.
    apply(&ns, &run_yaml("70"));
    let (status, reason, message) = eventually(30, "Degraded", &ns, || {
        let b = ns.get("berths", "llama")?;
        condition(&b, "Degraded").filter(|c| c.0 == "True")
    });
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "SchemaViolation")
    );
    assert!(message.contains("run.yaml:1:10: /version"), "{message}");
    assert_eq!(
        mounted_config(&ns).as_deref(),
        names.last().map(String::as_str),
        "the last good generation keeps running"
    );
    let b = ns.get("berths", "llama").unwrap();
    assert_eq!(condition(&b, "Ready").unwrap().0, "True");

    // Deleting the source: SourceMissing, still nothing touched.
    ns.ok(&["delete", "configmap", "my-run-yaml"]);
    eventually(30, "SourceMissing", &ns, || {
        let b = ns.get("berths", "llama")?;
        (condition(&b, "Degraded")?.1 == "SourceMissing").then_some(())
    });
    // Looking for it (the label's patch is the read) did not create it.
    assert!(ns.get("configmaps", "my-run-yaml").is_none());
    assert_eq!(
        mounted_config(&ns).as_deref(),
        names.last().map(String::as_str)
    );

    // Deleting the Berth: garbage collection takes what it made.
    apply(&ns, &run_yaml("4"));
    eventually(30, "labelled again", &ns, || {
        let cm = ns.get("configmaps", "my-run-yaml")?;
        (cm["metadata"]["labels"]["berth.dev/source"] == "true").then_some(())
    });
    ns.ok(&["delete", "berth", "llama", "--wait=true", "--timeout=30s"]);
    eventually(60, "garbage collected", &ns, || {
        let left: Vec<String> = ns
            .names("configmaps")
            .into_iter()
            .filter(|n| n.starts_with("run-config-"))
            .collect();
        (left.is_empty() && ns.get("deployments", "llama-stack").is_none()).then_some(())
    });
    let cm = ns.get("configmaps", "my-run-yaml").unwrap();
    assert!(
        cm["metadata"]["labels"].get("berth.dev/source").is_none(),
        "the source label is removed: {cm}"
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn the_api_server_refuses_a_config_with_two_sources() {
    let plane = plane();
    let ns = plane.namespace("controller-cel");
    plane.install_berth_crd();
    let out = plane.kubectl_with(
        &ns.kubeconfig,
        &["apply", "-f", "-"],
        Some("apiVersion: berth.dev/v1alpha1\nkind: Berth\nmetadata: {name: two}\nspec:\n  workloads: []\n  configs:\n    a: {inline: {x: 1}, fromConfigMap: {name: 'cm', key: 'k'}}\n"),
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("set exactly one of inline, fromConfigMap, fromSecret"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Waits (at most `secs`) until controller `name`'s log has `text`.
fn until_logged(ns: &Namespace, name: &str, text: &str, secs: u64) {
    let what = format!("{name} logs {text:?}");
    eventually(secs, &what, ns, || {
        log_of(ns, name).contains(text).then_some(())
    });
}

pub(crate) fn log_of(ns: &Namespace, name: &str) -> String {
    std::fs::read_to_string(ns.kubeconfig.with_file_name(format!("{name}.log"))).unwrap_or_default()
}

/// `GET path` on the address a controller logged; the status code and body.
pub(crate) fn http_get(log: &str, path: &str) -> (u16, String) {
    use std::io::{Read as _, Write as _};
    let address = log
        .lines()
        .find_map(|l| l.split("address=").nth(1))
        .expect("the controller logs its address")
        .trim();
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let code = text.split(' ').nth(1).unwrap().parse().unwrap();
    (
        code,
        text.split("\r\n\r\n")
            .nth(1)
            .unwrap_or_default()
            .to_string(),
    )
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn two_replicas_elect_one_leader_and_the_standby_takes_over() {
    let plane = plane();
    let ns = plane.namespace("controller-lease");
    let election = [
        "--leader-elect",
        "--lease-duration",
        "3",
        "--lease-namespace",
        ns.name.as_str(),
    ];
    let mut first = start_as(&ns, "a", &election);
    until_logged(&ns, "a", " leading identity=", 30);
    let _second = start_as(&ns, "b", &election);
    until_logged(&ns, "b", "waiting for leadership", 30);
    eventually(30, "both Ready", &ns, || {
        let a = http_get(&log_of(&ns, "a"), "/readyz").0;
        let b = http_get(&log_of(&ns, "b"), "/readyz").0;
        (a == 200 && b == 200).then_some(())
    });
    assert_eq!(http_get(&log_of(&ns, "b"), "/healthz").0, 200);
    let (_, standby) = http_get(&log_of(&ns, "b"), "/metrics");
    assert!(standby.contains("berth_controller_leader 0\n"), "{standby}");
    let lease = ns
        .get("leases.coordination.k8s.io", "berth-controller")
        .unwrap();
    let holder = lease["spec"]["holderIdentity"]
        .as_str()
        .unwrap()
        .to_string();

    apply(&ns, &run_yaml("2"));
    apply(&ns, BERTH);
    let generation = eventually(30, "a applies", &ns, || mounted_config(&ns));
    // The reconcile that applied is counted when it ends (it writes the status first).
    let metrics = eventually(30, "a counts its reconcile", &ns, || {
        let (_, metrics) = http_get(&log_of(&ns, "a"), "/metrics");
        metrics
            .contains("berth_controller_reconciles_total{reason=\"")
            .then_some(metrics)
    });
    assert!(metrics.contains("berth_controller_leader 1\n"), "{metrics}");

    // The leader dies without a word: the standby takes the Lease once it expires.
    let killed = Instant::now();
    let _ = first.child.kill();
    let _ = first.child.wait();
    until_logged(&ns, "b", " leading identity=", 30);
    let handover = killed.elapsed();
    eprintln!(
        "handover after the leader died: {} ms (lease 3 s)",
        handover.as_millis()
    );
    assert!(handover < Duration::from_secs(10), "{handover:?}");
    let lease = ns
        .get("leases.coordination.k8s.io", "berth-controller")
        .unwrap();
    assert_ne!(lease["spec"]["holderIdentity"].as_str().unwrap(), holder);
    apply(&ns, &run_yaml("3"));
    eventually(30, "b reconciles", &ns, || {
        mounted_config(&ns).filter(|n| *n != generation)
    });
}

fn signal(controller: &common::controller::Controller, name: &str) {
    let ok = std::process::Command::new("kill")
        .args([&format!("-{name}"), &controller.child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{name}");
}

/// Waits (at most `secs`) for the controller to exit; its exit code.
fn exited(controller: &mut common::controller::Controller, secs: u64) -> Option<i32> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(status) = controller.child.try_wait().unwrap() {
            return status.code();
        }
        assert!(Instant::now() < deadline, "still running after {secs} s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn sigterm_stops_the_leader_cleanly_and_the_standby_leads_within_2_s() {
    let plane = plane();
    let ns = plane.namespace("controller-sigterm");
    // A 15 s Lease (the default): without the release the standby would wait ~15 s.
    let election = ["--leader-elect", "--lease-namespace", ns.name.as_str()];
    let mut first = start_as(&ns, "a", &election);
    until_logged(&ns, "a", " leading identity=", 30);
    let second = start_as(&ns, "b", &election);
    until_logged(&ns, "b", "waiting for leadership", 30);
    let sent = Instant::now();
    signal(&first, "TERM");
    assert_eq!(exited(&mut first, 20), Some(0), "{}", log_of(&ns, "a"));
    until_logged(&ns, "b", " leading identity=", 10);
    let handover = sent.elapsed();
    eprintln!("handover after SIGTERM: {} ms", handover.as_millis());
    assert!(
        handover < Duration::from_secs(2),
        "{handover:?}\n{}",
        log_of(&ns, "a")
    );
    assert!(log_of(&ns, "a").contains("released the Lease"));
    // SIGINT before leading: a standby stops too, at once, with 0.
    drop(second);
    let mut third = start_as(&ns, "c", &election);
    until_logged(&ns, "c", "waiting for leadership", 30);
    signal(&third, "INT");
    assert_eq!(exited(&mut third, 10), Some(0), "{}", log_of(&ns, "c"));
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn a_leader_paused_past_its_lease_writes_nothing_once_it_wakes() {
    let plane = plane();
    let ns = plane.namespace("controller-pause");
    let election = [
        "--leader-elect",
        "--lease-duration",
        "3",
        "--lease-namespace",
        ns.name.as_str(),
    ];
    let mut first = start_as(&ns, "a", &election);
    until_logged(&ns, "a", " leading identity=", 30);
    apply(&ns, &run_yaml("2"));
    apply(&ns, BERTH);
    let generation = eventually(30, "a applies", &ns, || mounted_config(&ns));
    let _second = start_as(&ns, "b", &election);
    until_logged(&ns, "b", "waiting for leadership", 30);
    signal(&first, "STOP");
    until_logged(&ns, "b", " leading identity=", 30);
    // What a wakes up to: a source edit (b rolls it) that a's watches deliver late.
    apply(&ns, &run_yaml("3"));
    let rolled = eventually(30, "b reconciles", &ns, || {
        mounted_config(&ns).filter(|n| *n != generation)
    });
    let before = log_of(&ns, "a").len();
    signal(&first, "CONT");
    let code = exited(&mut first, 20);
    let woke = log_of(&ns, "a")[before..].to_string();
    assert_eq!(code, Some(1), "it exits: it lost the Lease\n{woke}");
    assert!(woke.contains("lost the leader Lease"), "{woke}");
    assert!(
        !woke.contains(" reconciled berth="),
        "no reconcile finished after waking: {woke}"
    );
    assert_eq!(mounted_config(&ns), Some(rolled), "b's work stands");
    let lease = ns
        .get("leases.coordination.k8s.io", "berth-controller")
        .unwrap();
    assert_ne!(lease["spec"]["holderIdentity"], "a");
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn the_namespaced_rbac_of_deploy_controller_is_enough() {
    let plane = plane();
    let ns = plane.namespace("controller-rbac");
    let kubeconfig = namespaced_rbac(&ns);
    let _controller = start_with(
        &ns,
        "controller",
        &["--leader-elect", "--lease-namespace", ns.name.as_str()],
        &kubeconfig,
    );
    apply(&ns, &run_yaml("2"));
    apply(&ns, BERTH);
    eventually(60, "Ready with the Role's permissions only", &ns, || {
        let b = ns.get("berths", "llama")?;
        (condition(&b, "Ready")?.0 == "True").then_some(())
    });
    assert!(
        !log_of(&ns, "controller").contains("forbidden"),
        "{}",
        log_of(&ns, "controller")
    );
}

#[test]
fn deploy_controller_holds_the_crd_the_binary_prints() {
    let printed = berth(std::path::Path::new("."))
        .args(["controller", "crd"])
        .output()
        .unwrap();
    let shipped =
        std::fs::read_to_string(common::repo_root().join("deploy/controller/crd.yaml")).unwrap();
    assert_eq!(
        String::from_utf8(printed.stdout).unwrap(),
        shipped,
        "regenerate it: berth controller crd > deploy/controller/crd.yaml"
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn the_llama_stack_example_rolls_out_with_its_bundle() {
    let plane = plane();
    let ns = plane.namespace("controller-example");
    let _controller = start(&ns);
    let dir = common::repo_root().join("examples/llama-stack");
    for file in ["sources.yaml", "llama.yaml", "llama-inline.yaml"] {
        apply(&ns, &std::fs::read_to_string(dir.join(file)).unwrap());
    }
    for name in ["llama", "llama-inline"] {
        eventually(60, "the example is Ready", &ns, || {
            let b = ns.get("berths", name)?;
            (condition(&b, "Ready")?.0 == "True").then_some(())
        });
    }
    let b = ns.get("berths", "llama").unwrap();
    assert_eq!(b["status"]["caBundles"][0]["certificates"], 2);
    assert_eq!(
        b["status"]["caBundles"][0]["firstExpiry"]
            .as_str()
            .unwrap()
            .len(),
        20
    );
    let d = ns.get("deployments", "llama-stack").unwrap();
    let container = &d["spec"]["template"]["spec"]["containers"][0];
    let env: Vec<&str> = container["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(env, ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"]);
    let inline = ns.get("berths", "llama-inline").unwrap();
    let object = inline["status"]["configs"][0]["object"].as_str().unwrap();
    let cm = ns.get("configmaps", object).unwrap();
    // The API server keeps typed data as JSON, keys sorted: the YAML follows that order.
    let run = cm["data"]["run.yaml"].as_str().unwrap();
    assert!(
        run.starts_with("apis:\n- inference\n") && run.ends_with("version: 2\n"),
        "{run}"
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn a_controller_killed_mid_reconcile_converges_without_duplicates() {
    let plane = plane();
    let ns = plane.namespace("controller-kill");
    // The Berth is applied before any controller starts (and installs the CRD).
    plane.install_berth_crd();
    apply(&ns, &run_yaml("2"));
    apply(&ns, BERTH);
    // Killed as soon as it has written anything, then started again; three times.
    for round in 0..3 {
        let mut controller = start_as(&ns, &format!("kill-{round}"), &[]);
        eventually(30, "the controller writes something", &ns, || {
            let b = ns.get("berths", "llama")?;
            let wrote = b["metadata"]["finalizers"].is_array() || !ns.names("secrets").is_empty();
            wrote.then_some(())
        });
        let _ = controller.child.kill();
        let _ = controller.child.wait();
    }
    let _controller = start_as(&ns, "final", &[]);
    eventually(60, "Ready after the restarts", &ns, || {
        let b = ns.get("berths", "llama")?;
        (condition(&b, "Ready")?.0 == "True").then_some(())
    });
    let generated: Vec<String> = ns
        .names("configmaps")
        .into_iter()
        .filter(|n| n.starts_with("run-config-"))
        .collect();
    assert_eq!(generated.len(), 1, "one generation: {generated:?}");
    let records: Vec<String> = ns
        .names("secrets")
        .into_iter()
        .filter(|n| n.starts_with("berth-llama-r"))
        .collect();
    assert_eq!(
        records,
        ["berth-llama-r1"],
        "one record, no duplicate apply"
    );
}

/// A certificate valid from `from` until `until` (years), in PEM.
fn certificate(cn: &str, from: i32, until: i32) -> String {
    let mut params = rcgen::CertificateParams::new(vec![format!("{cn}.example")]).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    params.not_before = rcgen::date_time_ymd(from, 1, 1);
    params.not_after = rcgen::date_time_ymd(until, 1, 1);
    let key = rcgen::KeyPair::generate().unwrap();
    params.self_signed(&key).unwrap().pem()
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn bad_ca_sources_degrade_and_leave_the_workload_running() {
    let plane = plane();
    let ns = plane.namespace("controller-ca");
    let _controller = start(&ns);
    let dir = common::repo_root().join("examples/llama-stack");
    for file in ["sources.yaml", "llama.yaml"] {
        apply(&ns, &std::fs::read_to_string(dir.join(file)).unwrap());
    }
    eventually(60, "Ready", &ns, || {
        let b = ns.get("berths", "llama")?;
        (condition(&b, "Ready")?.0 == "True").then_some(())
    });
    let running = ns.get("deployments", "llama-stack").unwrap()["spec"]["template"].clone();
    let cm = ns.get("configmaps", "trusted-ca-bundle").unwrap();
    let good = cm["data"]["ca-bundle.crt"].as_str().unwrap().to_string();
    let key = rcgen::KeyPair::generate().unwrap().serialize_pem();
    let cases = [
        (
            "a private key",
            format!("{good}{key}"),
            "PrivateKeyInSource",
            "must never contain a key",
        ),
        (
            "an expired certificate",
            format!("{good}{}", certificate("old", 2010, 2020)),
            "ExpiredCertificate",
            "`CN=old` is expired on 2020-01-01T00:00:00Z",
        ),
        (
            "a certificate not yet valid",
            format!("{good}{}", certificate("future", 2090, 2095)),
            "ExpiredCertificate",
            "`CN=future` is not valid until 2090-01-01T00:00:00Z",
        ),
        (
            "a corrupt block",
            format!(
                "{good}-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n"
            ),
            "InvalidCertificate",
            "is labelled CERTIFICATE but its content ends early",
        ),
    ];
    let set = |pem: &str| {
        let patch = serde_json::json!({"data": {"ca-bundle.crt": pem}}).to_string();
        ns.ok(&[
            "patch",
            "configmap",
            "trusted-ca-bundle",
            "--type=merge",
            "-p",
            &patch,
        ]);
    };
    for (what, pem, want_reason, want_message) in cases {
        // The platform's ConfigMap now also carries `what`.
        set(&pem);
        let (_, reason, message) = eventually(30, &format!("Degraded by {what}"), &ns, || {
            let b = ns.get("berths", "llama")?;
            // The reason and the message: two cases share `ExpiredCertificate`.
            condition(&b, "Degraded")
                .filter(|c| c.0 == "True" && c.1 == want_reason && c.2.contains(want_message))
        });
        assert_eq!(reason, want_reason, "{what}");
        assert!(message.contains(want_message), "{what}: {message}");
        assert!(
            !message.contains("PRIVATE KEY-----\n"),
            "no key material in the status: {message}"
        );
        assert_eq!(
            ns.get("deployments", "llama-stack").unwrap()["spec"]["template"],
            running,
            "{what}: the running workload is untouched"
        );
    }
    // Fixed: the condition clears and the workload is what it was.
    set(&good);
    eventually(30, "Degraded cleared", &ns, || {
        let b = ns.get("berths", "llama")?;
        condition(&b, "Degraded").filter(|c| c.0 == "False")
    });
    assert_eq!(
        ns.get("deployments", "llama-stack").unwrap()["spec"]["template"],
        running
    );
}

/// Sweep 4, item 8: with the controller gone, a Berth keeps the controller's
/// finalizer and deleting it hangs; `berth controller uninstall` releases it
/// (and the source label, as the finalizer would have), so it deletes at once.
#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn uninstall_releases_finalizers_and_source_labels_so_berths_delete() {
    let plane = plane();
    let ns = plane.namespace("uninstall");
    let controller = start(&ns);
    apply(&ns, &run_yaml("2"));
    apply(&ns, BERTH);
    eventually(30, "the finalizer and the source label", &ns, || {
        let b = ns.get("berths", "llama")?;
        let source = ns.get("configmaps", "my-run-yaml")?;
        (b["metadata"]["finalizers"][0] == "berth.dev/sources"
            && source["metadata"]["labels"]["berth.dev/source"] == "true")
            .then_some(())
    });
    drop(controller);
    let out = berth(&std::env::temp_dir())
        .args(["controller", "uninstall", "--kubeconfig"])
        .arg(&ns.kubeconfig)
        .args(["--namespace", &ns.name])
        .output()
        .unwrap();
    let said = common::transcript(&out);
    assert!(out.status.success(), "{said}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "removed the finalizer of Berth {0}/llama\nunlabelled source ConfigMap {0}/my-run-yaml\n",
            ns.name
        )
    );
    let source = ns.get("configmaps", "my-run-yaml").unwrap();
    assert!(
        source["metadata"]["labels"]["berth.dev/source"].is_null(),
        "{source}"
    );
    let started = Instant::now();
    ns.ok(&["delete", "berth", "llama", "--wait=true", "--timeout=60s"]);
    assert!(started.elapsed() < Duration::from_secs(60));
    // Run again: nothing left to release.
    let out = berth(&std::env::temp_dir())
        .args(["controller", "uninstall", "--kubeconfig"])
        .arg(&ns.kubeconfig)
        .args(["--namespace", &ns.name])
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty(),
        "{}",
        common::transcript(&out)
    );
}
