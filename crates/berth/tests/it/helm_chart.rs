//! The controller's Helm chart (`charts/berth-controller/`) with the real helm
//! (built by `scripts/testenv build`): lint in both RBAC modes, a `helm template`
//! snapshot, the CRD it carries equal to `berth controller crd`, and `helm
//! install`, `upgrade` and `uninstall` on the test control plane.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common;
use common::testenv::plane;

fn chart() -> PathBuf {
    common::repo_root().join("charts/berth-controller")
}

fn run(helm: &Path, args: &[&str], kubeconfig: Option<&Path>) -> String {
    let mut command = Command::new(helm);
    command.args(args).env(
        "HELM_CACHE_HOME",
        std::env::temp_dir().join("berth-helm-cache"),
    );
    if let Some(kubeconfig) = kubeconfig {
        command.arg("--kubeconfig").arg(kubeconfig);
    }
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "helm {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `helm VERB berth-controller CHART` into `namespace`, reconciling Berths there, with `image.tag`.
/// The CRD exists already (other tests apply it): with `crds.install: auto` the
/// release leaves it to its owner.
fn release(verb: &str, namespace: &str, tag: &str) -> Vec<String> {
    [
        verb,
        "berth-controller",
        chart().to_str().unwrap(),
        "--namespace",
        namespace,
        "--set",
        &format!("watchNamespace={namespace}"),
        "--set",
        &format!("image.tag={tag}"),
    ]
    .map(String::from)
    .to_vec()
}

fn documents(yaml: &str) -> Vec<Value> {
    berth_yaml::load_all(yaml, berth_yaml::Limits::default())
        .unwrap()
        .iter()
        .map(berth_yaml::json::to_json)
        .filter(|v| !v.is_null())
        .collect()
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn the_chart_lints_renders_as_snapshotted_and_carries_the_binarys_crd() {
    let plane = plane();
    let helm = plane.helm();
    let chart = chart();
    let chart = chart.to_str().unwrap();
    for set in [
        "watchNamespace=",
        "watchNamespace=team-a,serviceMonitor.enabled=true,networkPolicy.enabled=true,registryCredentialsSecret=creds,insecureRegistries[0]=registry:5000",
    ] {
        let out = run(&helm, &["lint", "--strict", chart, "--set", set], None);
        assert!(out.contains("0 chart(s) failed"), "{out}");
    }
    // Sweep 4, HC03-HC16: values that could only fail later, or inject an argument.
    for (set, want) in [
        ("replicaCount=-1", "/replicaCount"),
        (
            "leaderElection.leaseDuration=0",
            "/leaderElection/leaseDuration",
        ),
        ("concurrency=0", "/concurrency"),
        ("crds.install=maybe", "/crds/install"),
        ("logFormat=yaml", "/logFormat"),
        ("watchNamespace=Team A", "/watchNamespace"),
        (
            "insecureRegistries[0]=evil.example --x",
            "/insecureRegistries/0",
        ),
        (
            "replicaCount=2,leaderElection.enabled=false",
            "replicaCount > 1 needs leaderElection.enabled",
        ),
        // HC10, HC07 (#46): a port the unprivileged pod cannot bind; a quote
        // that broke the rendered YAML.
        ("service.port=80", "/service/port"),
        ("image.repository=a\"b", "/image/repository"),
    ] {
        let out = Command::new(&helm)
            .args(["template", "r", chart, "--set", set])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(want), "{set}: {err}");
    }
    let out = Command::new(&helm)
        .args([
            "template",
            "r",
            chart,
            "--set-string",
            "watchNamespace=team-a\n--insecure-registry=evil.example",
        ])
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "a newline in watchNamespace is refused"
    );
    let rendered = run(
        &helm,
        &[
            "template",
            "berth-controller",
            chart,
            "--namespace",
            "berth-system",
        ],
        None,
    );
    let objects = documents(&rendered);
    let crd = objects
        .iter()
        .find(|o| o["kind"] == "CustomResourceDefinition")
        .expect("the chart carries the CRD");
    let printed = Command::new(common::berth_path())
        .args(["controller", "crd"])
        .output()
        .unwrap();
    let printed = documents(&String::from_utf8_lossy(&printed.stdout)).remove(0);
    assert_eq!(
        crd["spec"], printed["spec"],
        "charts/berth-controller/templates/crd.yaml is `berth controller crd`"
    );
    assert_eq!(
        crd["metadata"]["annotations"]["helm.sh/resource-policy"],
        "keep"
    );
    // Everything but the CRD's schema, as a reviewer reads it.
    let without_schema: String = rendered
        .split("\n---\n")
        .filter(|d| !d.contains("kind: CustomResourceDefinition"))
        .collect::<Vec<_>>()
        .join("\n---\n");
    insta::assert_snapshot!("helm_template", without_schema);
    let deployment = objects.iter().find(|o| o["kind"] == "Deployment").unwrap();
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(
        container["securityContext"]["allowPrivilegeEscalation"],
        false
    );
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(deployment["spec"]["replicas"], 2);

    // One namespace: a Role there, no ClusterRole.
    // A one-namespace install, with more `--set`s.
    let one_namespace = |sets: &[&str]| {
        let mut args = vec!["template", "b", chart, "-n", "berth-system"];
        for set in ["watchNamespace=team-a"].iter().chain(sets) {
            args.extend(["--set", set]);
        }
        documents(&run(&helm, &args, None))
    };
    let one = one_namespace(&[]);
    let kinds: Vec<(&str, &str)> = one
        .iter()
        .map(|o| {
            (
                o["kind"].as_str().unwrap(),
                o["metadata"]["namespace"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert!(kinds.contains(&("Role", "team-a")), "{kinds:?}");
    assert!(!kinds.iter().any(|(k, _)| *k == "ClusterRole"), "{kinds:?}");
    // deploy/controller/ (kustomize) grants exactly what the chart grants.
    let role = |objects: &[Value]| {
        objects
            .iter()
            .find(|o| o["kind"] == "Role" && o["metadata"]["namespace"] == "team-a")
            .map(|o| o["rules"].clone())
            .unwrap()
    };
    let kustomize =
        std::fs::read_to_string(common::repo_root().join("deploy/controller/rbac-namespace.yaml"))
            .unwrap();
    let lease = serde_json::json!({"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]});
    let mut chart_rules = role(&one).as_array().unwrap().clone();
    chart_rules.push(lease);
    assert_eq!(
        role(&documents(&kustomize)),
        Value::Array(chart_rules),
        "deploy/controller/rbac-namespace.yaml and the chart's Role (plus the Lease) agree"
    );

    // ClusterTrustBundles: off by default; on, a read-only ClusterRole for them
    // alone (a one-namespace install too) and the controller's flag.
    let trust = one_namespace(&["clusterTrustBundles.read=true"]);
    let rules = |objects: &[Value]| -> Vec<Value> {
        (objects.iter())
            .filter(|o| o["kind"] == "ClusterRole")
            .map(|o| o["rules"].clone())
            .collect()
    };
    assert_eq!(
        rules(&trust),
        [
            serde_json::json!([{"apiGroups": ["certificates.k8s.io"], "resources": ["clustertrustbundles"], "verbs": ["get", "list", "watch"]}])
        ]
    );
    let args = |objects: &[Value]| -> String {
        let deployment = objects.iter().find(|o| o["kind"] == "Deployment").unwrap();
        deployment["spec"]["template"]["spec"]["containers"][0]["args"].to_string()
    };
    assert!(args(&trust).contains("--cluster-trust-bundles"));
    // Two one-namespace releases of one name do not collide on a cluster-wide name (#46).
    let cluster_names = |objects: &[Value]| -> Vec<String> {
        (objects.iter())
            .filter(|o| o["kind"] == "ClusterRole" || o["kind"] == "ClusterRoleBinding")
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    let other = {
        let args = [
            "template",
            "b",
            chart,
            "-n",
            "berth-other",
            "--set",
            "watchNamespace=team-b",
            "--set",
            "clusterTrustBundles.read=true",
        ];
        documents(&run(&helm, &args, None))
    };
    let (here, there) = (cluster_names(&trust), cluster_names(&other));
    assert!(
        !here.is_empty() && here.iter().all(|n| !there.contains(n)),
        "{here:?} {there:?}"
    );
    assert!(!args(&one).contains("--cluster-trust-bundles") && rules(&one).is_empty());
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn helm_installs_upgrades_and_uninstalls_the_controller_keeping_the_crd() {
    let plane = plane();
    let helm = plane.helm();
    let ns = plane.namespace("helm");
    let kubeconfig = Some(ns.kubeconfig.as_path());
    let install = |verb: &str, tag: &str, replicas: &str| {
        let mut args = release(verb, &ns.name, tag);
        // This release takes the CRD over and keeps it. The uninstall hook is the
        // stand-in test's (here kwok would only complete its Job).
        args.extend(
            [
                "--set",
                "crds.install=true",
                "--take-ownership",
                "--set",
                "uninstall.releaseFinalizers=false",
            ]
            .map(String::from),
        );
        args.extend(["--set".into(), format!("replicaCount={replicas}")]);
        args.extend(["--wait", "--timeout", "120s"].map(String::from));
        run(
            &helm,
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
            kubeconfig,
        )
    };
    install("install", "v1", "2");
    let deployment = ns.get("deployments", "berth-controller").unwrap();
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        "localhost/berth-controller:v1"
    );
    assert_eq!(
        deployment["status"]["availableReplicas"], 2,
        "{}",
        deployment["status"]
    );
    assert!(ns.get("roles", "berth-controller").is_some());
    assert!(ns.get("poddisruptionbudgets", "berth-controller").is_some());

    install("upgrade", "v2", "3");
    let deployment = ns.get("deployments", "berth-controller").unwrap();
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        "localhost/berth-controller:v2"
    );
    assert_eq!(
        deployment["status"]["updatedReplicas"], 3,
        "{}",
        deployment["status"]
    );
    let history = run(
        &helm,
        &["history", "berth-controller", "-n", &ns.name, "-o", "json"],
        kubeconfig,
    );
    assert_eq!(
        serde_json::from_str::<Value>(&history)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let crd = ns.get_in("", "crd", "berths.berth.dev").unwrap();
    assert_eq!(
        crd["metadata"]["annotations"]["helm.sh/resource-policy"],
        "keep"
    );

    run(
        &helm,
        &["uninstall", "berth-controller", "-n", &ns.name, "--wait"],
        kubeconfig,
    );
    assert!(ns.get("deployments", "berth-controller").is_none());
    assert!(
        ns.get_in("", "crd", "berths.berth.dev").is_some(),
        "the CRD stays: deleting it would delete every Berth"
    );
}

/// Whether the Deployment's rollout is done: every replica updated and available.
fn rolled_out(ns: &common::testenv::Namespace, replicas: i64) -> Option<Value> {
    let d = ns.get("deployments", "berth-controller")?;
    let status = &d["status"];
    let done = d["metadata"]["generation"] == status["observedGeneration"]
        && status["updatedReplicas"].as_i64() == Some(replicas)
        && status["availableReplicas"].as_i64() == Some(replicas)
        && status["replicas"].as_i64() == Some(replicas);
    done.then_some(d)
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn the_charts_controllers_are_ready_available_and_roll_out_an_update() {
    use common::controller::{condition, eventually};
    let plane = plane();
    let helm = plane.helm();
    let ns = plane.namespace("helm-standin");
    let node = format!("standin-{}", ns.name);
    let release = |verb: &str, tag: &str| {
        let mut args = release(verb, &ns.name, tag);
        for set in [
            format!("nodeSelector.berth\\.dev/standin={node}"),
            "tolerations[0].key=berth.dev/standin".into(),
            "tolerations[0].operator=Exists".into(),
            "logFormat=json".into(),
        ] {
            args.extend(["--set".into(), set]);
        }
        run(
            &helm,
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
            Some(ns.kubeconfig.as_path()),
        )
    };
    release("install", "v1");
    // The pods wait for a Node; the stand-in brings it and runs them for real.
    let standin = common::standin::Standin::start(&ns, "berth-controller");
    let deployment = eventually(90, "the chart's Deployment Available", &ns, || {
        rolled_out(&ns, 2)
    });
    let available = deployment["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Available")
        .unwrap();
    assert_eq!(available["status"], "True", "{available}");
    assert_eq!(standin.seen().ran.len(), 2, "{:?}", standin.seen());

    // The leader reconciles a Berth with the chart's RBAC.
    let berth = "apiVersion: berth.dev/v1alpha1\nkind: Berth\nmetadata: {name: llama}\nspec:\n  workloads:\n  - apiVersion: apps/v1\n    kind: Deployment\n    metadata: {name: web}\n    spec:\n      selector: {matchLabels: {app: web}}\n      template:\n        metadata: {labels: {app: web}}\n        spec:\n          containers:\n          - {name: web, image: ghcr.io/acme/web:v1, envFrom: [{configMapRef: {name: web-config}}]}\n  configs:\n    web-config:\n      inline: {LEVEL: one}\n";
    common::controller::apply(&ns, berth);
    let ready = |ns: &common::testenv::Namespace| {
        let b = ns.get("berths", "llama")?;
        (condition(&b, "Ready")?.0 == "True").then_some(b)
    };
    eventually(60, "the Berth Ready", &ns, || ready(&ns));

    // An image update: surge a new pod, Ready as a standby, then the old ones go
    // (SIGTERM: exit 0, the Lease released) until both run the new template.
    let started = std::time::Instant::now();
    release("upgrade", "v2");
    let deployment = eventually(120, "the update rolled out", &ns, || {
        let d = rolled_out(&ns, 2)?;
        (d["spec"]["template"]["spec"]["containers"][0]["image"] == "localhost/berth-controller:v2")
            .then_some(d)
    });
    eprintln!(
        "image update rolled out in {} ms",
        started.elapsed().as_millis()
    );
    assert_eq!(deployment["status"]["readyReplicas"], 2);
    // Terminating pods no longer count as replicas: their processes may still be stopping.
    let seen = eventually(30, "both old replicas stopped", &ns, || {
        let seen = standin.seen();
        (seen.exits.len() == 2).then_some(seen)
    });
    assert_eq!(seen.ran.len(), 4, "{seen:?}");
    assert!(
        seen.exits.values().all(|code| *code == Some(0)),
        "every replaced replica stopped cleanly: {seen:?}"
    );
    // A new leader among the new pods carries on.
    ns.ok(&[
        "patch",
        "berth",
        "llama",
        "--type=merge",
        "-p",
        "{\"spec\":{\"configs\":{\"web-config\":{\"inline\":{\"LEVEL\":\"two\"}}}}}",
    ]);
    eventually(60, "the edit reconciled by the new leader", &ns, || {
        let b = ready(&ns)?;
        (b["status"]["observedGeneration"] == b["metadata"]["generation"]).then_some(())
    });
    let holder = ns
        .get("leases.coordination.k8s.io", "berth-controller")
        .unwrap()["spec"]["holderIdentity"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        seen.ran[2..].contains(&holder),
        "the leader is a new pod: {holder} of {seen:?}"
    );

    // Sweep 4, item 8: helm uninstall's pre-delete hook stops the controller and
    // releases its finalizer, so the Berth (and its namespace) can be deleted.
    run(
        &helm,
        &[
            "uninstall",
            "berth-controller",
            "-n",
            &ns.name,
            "--wait",
            "--timeout",
            "120s",
        ],
        Some(ns.kubeconfig.as_path()),
    );
    let berth = ns.get("berths", "llama").unwrap();
    assert!(
        berth["metadata"]["finalizers"]
            .as_array()
            .is_none_or(|f| f.is_empty()),
        "{}",
        berth["metadata"]
    );
    let hook = standin.seen();
    let uninstall = hook
        .exits
        .iter()
        .find(|(pod, _)| pod.starts_with("berth-controller-uninstall"));
    assert_eq!(uninstall.map(|(_, code)| *code), Some(Some(0)), "{hook:?}");
    let started = std::time::Instant::now();
    ns.ok(&["delete", "berth", "llama", "--wait=true", "--timeout=60s"]);
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}

/// Sweep 4, item 7: where the CRD was applied with kubectl, the chart installs
/// (it leaves the CRD to its owner), and two namespace-mode releases — one
/// controller per tenant namespace — install side by side.
#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn two_tenant_releases_install_where_kubectl_applied_the_crd() {
    let plane = plane();
    let helm = plane.helm();
    let crd = Command::new(common::berth_path())
        .args(["controller", "crd"])
        .output()
        .unwrap();
    let out = plane.kubectl_with(
        &plane.kubeconfig,
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        Some(&String::from_utf8_lossy(&crd.stdout)),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tenants = [plane.namespace("tenant-a"), plane.namespace("tenant-b")];
    for ns in &tenants {
        let mut args = release("install", &ns.name, "v1");
        // The uninstall hook is the stand-in test's; here it would only wait for
        // kwok to complete a Job whose controller never ran.
        args.extend(["--set", "uninstall.releaseFinalizers=false"].map(String::from));
        run(
            &helm,
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
            Some(ns.kubeconfig.as_path()),
        );
        assert!(ns.get("deployments", "berth-controller").is_some());
        assert!(ns.get("roles", "berth-controller").is_some());
    }
    for ns in &tenants {
        run(
            &helm,
            &["uninstall", "berth-controller", "-n", &ns.name, "--wait"],
            Some(ns.kubeconfig.as_path()),
        );
    }
    assert!(
        tenants[0].get_in("", "crd", "berths.berth.dev").is_some(),
        "the CRD stays with its owner"
    );
}
