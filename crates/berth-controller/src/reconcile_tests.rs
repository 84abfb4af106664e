//! `reconcile` request by request, against berth-kube's in-memory API server
//! (as controller-rs tests its reconciler): what each kind of reconcile asks the
//! server, and what it leaves in the `Berth`'s status. The metadata watches'
//! stores are filled from the fake's objects between reconciles, as the
//! watches would; the same reconciles run against the real API server on the
//! plane (`crates/berth/tests/it/controller.rs`).

use std::sync::Arc;

use berth_kube::fake::FakeApi;
use berth_kube::Cluster;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::core::PartialObjectMeta;
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::{store::Writer, Store};
use kube::runtime::watcher;
use kube::Resource;
use serde_json::{json, Value};

use super::*;
use crate::caches::{Memories, SourceData, Watched};
use crate::context::TrustBundles;
use crate::serve::Metrics;

const NS: &str = "team-a";
const BERTHS: &str = "/apis/berth.dev/v1alpha1/namespaces/team-a/berths";
const MAPS: &str = "/api/v1/namespaces/team-a/configmaps";
const SECRETS: &str = "/api/v1/namespaces/team-a/secrets";
const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/team-a/deployments";

/// A fake API server, a `Context` on it, and the writers of the stores its watches would fill.
struct Plane {
    api: FakeApi,
    context: Arc<Context>,
    berths: Writer<Berth>,
    deployments: Writer<Deployment>,
    config_maps: Writer<PartialObjectMeta<ConfigMap>>,
    secrets: Writer<PartialObjectMeta<Secret>>,
    source_maps: Writer<PartialObjectMeta<ConfigMap>>,
}

fn store<K>() -> (Store<K>, Writer<K>)
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    let writer = Writer::default();
    (writer.as_reader(), writer)
}

impl Plane {
    fn new() -> Plane {
        let api = FakeApi::default();
        let client = api.client();
        let (berth_store, berths) = store();
        let (deployment_store, deployments) = store();
        let (map_store, config_maps) = store();
        let (secret_store, secrets) = store();
        let (source_map_store, source_maps) = store();
        let watched = Watched {
            deployments: deployment_store,
            stateful_sets: store().0,
            daemon_sets: store().0,
            jobs: store().0,
            config_maps: map_store,
            secrets: secret_store,
            source_maps: source_map_store,
            source_secrets: store().0,
        };
        let reporter = Reporter {
            controller: crate::MANAGER.into(),
            instance: None,
        };
        let context = Arc::new(Context {
            client: client.clone(),
            cluster: Cluster::new(client.clone(), "default", "https://fake"),
            berths: berth_store,
            watched,
            memories: Memories::default(),
            sources: Arc::default(),
            source_data: SourceData::default(),
            metrics: Arc::new(Metrics::default()),
            registry: berth_registry::Registry::new(
                berth_registry::Options::default(),
                berth_registry::DockerConfig::default(),
            )
            .unwrap(),
            recorder: Recorder::new(client, reporter),
            failures: std::sync::Mutex::default(),
            trust_bundles: TrustBundles::Off,
        });
        Plane {
            api,
            context,
            berths,
            deployments,
            config_maps,
            secrets,
            source_maps,
        }
    }

    /// Fills every store from the fake's objects, as the watches would have by now.
    fn watch(&mut self) {
        fn fill<K>(writer: &mut Writer<K>, objects: Vec<Value>)
        where
            K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned,
        {
            writer.apply_watcher_event(&watcher::Event::Init);
            for object in objects {
                let object: K = serde_json::from_value(object).unwrap();
                writer.apply_watcher_event(&watcher::Event::InitApply(object));
            }
            writer.apply_watcher_event(&watcher::Event::InitDone);
        }
        let api = &self.api;
        let meta = |collection: &str, selector: &dyn Fn(&Value) -> bool| -> Vec<Value> {
            (api.objects(collection).into_iter())
                .filter(|o| selector(&o["metadata"]["labels"]))
                .map(|o| json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": o["metadata"]}))
                .collect()
        };
        let controlled = |labels: &Value| labels[crate::CONTROLLER_LABEL] == crate::MANAGER;
        let source = |labels: &Value| labels[crate::SOURCE_LABEL] == "true";
        fill(&mut self.berths, api.objects(BERTHS));
        // Workloads are watched whole (trimmed as the watch trims them).
        let workloads: Vec<Value> = (api.objects(DEPLOYMENTS).into_iter())
            .filter(|o| controlled(&o["metadata"]["labels"]))
            .map(|o| {
                let mut d: Deployment = serde_json::from_value(o).unwrap();
                crate::workloads::Trimmed::trim(&mut d);
                serde_json::to_value(d).unwrap()
            })
            .collect();
        fill(&mut self.deployments, workloads);
        fill(&mut self.config_maps, meta(MAPS, &controlled));
        fill(&mut self.secrets, meta(SECRETS, &controlled));
        fill(&mut self.source_maps, meta(MAPS, &source));
    }

    /// The Berth as it lives.
    fn berth(&self) -> Arc<Berth> {
        let live = self.api.object(BERTHS, "llama").expect("the Berth lives");
        Arc::new(serde_json::from_value(live).unwrap())
    }

    /// One reconcile of the live Berth (the stores filled first), and the requests it made.
    async fn reconcile(&mut self) -> (Result<Action, Error>, Vec<String>) {
        self.watch();
        self.api.take_requests();
        let outcome = reconcile(self.berth(), Arc::clone(&self.context)).await;
        (outcome, self.api.take_requests())
    }

    fn condition(&self, type_: &str) -> (String, String, String) {
        let status = self.berth().status.clone().expect("a status");
        let c = (status.conditions.iter())
            .find(|c| c.type_ == type_)
            .unwrap_or_else(|| panic!("no {type_} in {status:?}"));
        (c.status.clone(), c.reason.clone(), c.message.clone())
    }
}

fn source(run_yaml: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "my-run-yaml", "namespace": NS}, "data": {"run.yaml": run_yaml}})
}

/// A Berth whose Deployment reads a config made from the ConfigMap `my-run-yaml`.
fn berth() -> Value {
    json!({"apiVersion": "berth.dev/v1alpha1", "kind": "Berth",
    "metadata": {"name": "llama", "namespace": NS, "generation": 1},
    "spec": {
        "workloads": [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "llama-stack"},
            "spec": {"selector": {"matchLabels": {"app": "llama"}}, "template": {
                "metadata": {"labels": {"app": "llama"}},
                "spec": {"containers": [{"name": "server", "image": "docker.io/llamastack/distribution-starter:0.2.0",
                    "volumeMounts": [{"name": "run", "mountPath": "/etc/llama"}]}],
                    "volumes": [{"name": "run", "configMap": {"name": "run-config"}}]}}}}],
        "configs": {"run-config": {"fromConfigMap": {"name": "my-run-yaml", "key": "run.yaml"}}},
    }})
}

/// Requests that write: anything but a GET.
fn writes(requests: &[String]) -> Vec<&String> {
    requests.iter().filter(|r| !r.starts_with("GET ")).collect()
}

/// The name of the ConfigMap the live Deployment mounts.
fn mounted(api: &FakeApi) -> String {
    let deployment = api.object(DEPLOYMENTS, "llama-stack").expect("applied");
    let volume = &deployment["spec"]["template"]["spec"]["volumes"][0];
    volume["configMap"]["name"].as_str().unwrap().to_string()
}

/// A plane with the source and the Berth, reconciled twice: the finalizer, then the
/// apply (whose requests are returned).
async fn applied_with_requests() -> (Plane, Vec<String>) {
    let mut plane = Plane::new();
    plane.api.put(MAPS, source("version: 2\n"));
    plane.api.put(BERTHS, berth());
    let (outcome, requests) = plane.reconcile().await;
    assert!(outcome.is_ok(), "{outcome:?}");
    assert_eq!(
        requests,
        [format!("PATCH {BERTHS}/llama")],
        "the finalizer, alone"
    );
    assert_eq!(
        plane.berth().metadata.finalizers,
        Some(vec![crate::FINALIZER.to_string()])
    );
    let (outcome, requests) = plane.reconcile().await;
    let action = outcome.unwrap();
    assert_eq!(
        action,
        Action::requeue(Again::RolledOut.after()),
        "{requests:#?}"
    );
    (plane, requests)
}

async fn applied() -> Plane {
    applied_with_requests().await.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_berth_gets_its_finalizer_then_its_objects_a_record_a_status_and_an_event() {
    let (plane, mut requests) = applied_with_requests().await;
    // The discoveries are sent side by side, so their order varies.
    requests.get_mut(1..3).into_iter().for_each(|s| s.sort());
    let config = "/api/v1/namespaces/team-a/configmaps/run-config-657dh4gtgm";
    let deployment = format!("{DEPLOYMENTS}/llama-stack");
    assert_eq!(
        requests,
        [
            format!("PATCH {MAPS}/my-run-yaml"), // the source labelled; the patch answers its data
            "GET /api/v1".into(),                // discovery, once per group version
            "GET /apis/apps/v1".into(),
            format!("PATCH {deployment}"), // its dry run: the generated config needs none
            format!("PATCH {config}"),     // the apply: the config first, then what mounts it
            format!("PATCH {deployment}"),
            format!("POST {SECRETS}"), // the apply record: `v1` is known already
            format!("PATCH {SECRETS}/berth-llama-r1"), // its status: succeeded
            format!("PATCH {BERTHS}/llama/status"),
            "POST /apis/events.k8s.io/v1/namespaces/team-a/events".into(),
        ]
    );
    let (status, reason, _) = plane.condition("Ready");
    assert_eq!((status.as_str(), reason.as_str()), ("True", "RolledOut"));
    // The source is labelled, so that its edits arrive by watch.
    let labelled = plane.api.object(MAPS, "my-run-yaml").unwrap();
    assert_eq!(labelled["metadata"]["labels"][crate::SOURCE_LABEL], "true");
    // The generated ConfigMap is content-addressed and owned by the Berth.
    let config = mounted(&plane.api);
    assert!(config.starts_with("run-config-"), "{config}");
    let generated = plane.api.object(MAPS, &config).unwrap();
    assert_eq!(generated["metadata"]["ownerReferences"][0]["kind"], "Berth");
    assert_eq!(generated["data"]["run.yaml"], "version: 2\n");
    // One apply record, and one Event for the rollout.
    let records: Vec<Value> = (plane.api.objects(SECRETS).into_iter())
        .filter(|s| s["metadata"]["labels"]["berth.dev/record"].is_string())
        .collect();
    assert_eq!(records.len(), 1, "{records:#?}");
    let events = plane
        .api
        .objects("/apis/events.k8s.io/v1/namespaces/team-a/events");
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["reason"], "RolledOut");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unchanged_berth_costs_no_write_and_no_read_of_what_the_watches_show() {
    let mut plane = applied().await;
    let (outcome, requests) = plane.reconcile().await;
    assert_eq!(outcome.unwrap(), Action::requeue(Again::RolledOut.after()));
    assert!(requests.is_empty(), "{requests:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workloads_status_update_is_judged_from_the_watch_not_read() {
    let mut plane = applied().await;
    // kube-controller-manager updates the Deployment's status: a new resourceVersion.
    let live = plane.api.object(DEPLOYMENTS, "llama-stack").unwrap();
    let mut status = live["status"].clone();
    status["conditions"] = json!([{"type": "Available", "status": "True"}]);
    plane.api.set_status(DEPLOYMENTS, "llama-stack", status);
    let (outcome, requests) = plane.reconcile().await;
    assert_eq!(outcome.unwrap(), Action::requeue(Again::RolledOut.after()));
    assert!(
        !requests.iter().any(|r| r.starts_with("GET ")),
        "the watch holds the workload whole (trimmed): {requests:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_source_rolls_a_new_config_and_keeps_the_old_one() {
    let mut plane = applied().await;
    let before = mounted(&plane.api);
    let mut edited = plane.api.object(MAPS, "my-run-yaml").unwrap();
    edited["data"]["run.yaml"] = json!("version: 3\n");
    plane.api.put(MAPS, edited);
    let (outcome, requests) = plane.reconcile().await;
    assert_eq!(outcome.unwrap(), Action::requeue(Again::RolledOut.after()));
    let after = mounted(&plane.api);
    assert_ne!(before, after);
    assert_eq!(
        plane.api.object(MAPS, &after).unwrap()["data"]["run.yaml"],
        "version: 3\n"
    );
    // The pods of the old generation may still read it: kept (`keep: 1` of the spec keeps one).
    assert!(plane.api.object(MAPS, &before).is_some());
    let written = writes(&requests);
    assert!(
        written.contains(&&format!("PATCH {DEPLOYMENTS}/llama-stack")),
        "{written:#?}"
    );
    assert!(
        written
            .iter()
            .any(|r| r.starts_with(&format!("PATCH {BERTHS}/llama/status"))),
        "the new config's hash is in the status: {written:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_write_is_the_berths_degraded_condition_not_a_crash_loop() {
    let mut plane = applied().await;
    let running = mounted(&plane.api);
    plane.api.refuse("PATCH", DEPLOYMENTS);
    let mut edited = plane.api.object(MAPS, "my-run-yaml").unwrap();
    edited["data"]["run.yaml"] = json!("version: 4\n");
    plane.api.put(MAPS, edited);
    let (outcome, _) = plane.reconcile().await;
    assert_eq!(outcome.unwrap(), Action::requeue(Again::Refused.after()));
    let (status, reason, message) = plane.condition("Degraded");
    assert_eq!((status.as_str(), reason.as_str()), ("True", "Forbidden"));
    assert!(message.contains("deployments"), "{message}");
    // What runs is untouched.
    assert_eq!(mounted(&plane.api), running);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_berth_unlabels_its_sources_and_lets_go_of_its_finalizer() {
    let mut plane = applied().await;
    let mut leaving = plane.api.object(BERTHS, "llama").unwrap();
    leaving["metadata"]["deletionTimestamp"] = json!("2026-12-06T00:00:00Z");
    plane.api.put(BERTHS, leaving);
    let (outcome, requests) = plane.reconcile().await;
    assert_eq!(outcome.unwrap(), Action::await_change());
    assert_eq!(
        writes(&requests),
        [
            &format!("PATCH {MAPS}/my-run-yaml"),
            &format!("PATCH {BERTHS}/llama"),
        ],
        "the label off, then the finalizer"
    );
    let source = plane.api.object(MAPS, "my-run-yaml").unwrap();
    assert!(source["metadata"]["labels"][crate::SOURCE_LABEL].is_null());
    assert_eq!(plane.berth().metadata.finalizers, Some(vec![]));
    // Nothing the Berth owns is deleted by the controller: the garbage collector does that.
    assert!(plane.api.object(DEPLOYMENTS, "llama-stack").is_some());
}
