//! What the collector reads of a namespace, against the in-memory API server
//! (`crate::fake`): only what changed since its last look.

use serde_json::json;

use super::*;
use crate::fake::FakeApi;

const PODS: &str = "/api/v1/namespaces/shop/pods";

fn pod(name: &str, config: &str, phase: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "shop"},
           "spec": {"containers": [{"name": "c", "image": "x",
                    "envFrom": [{"configMapRef": {"name": config}}]}]},
           "status": {"phase": phase}})
}

fn used(set: &BTreeSet<(String, String, String)>) -> Vec<String> {
    set.iter().map(|(_, _, name)| name.clone()).collect()
}

#[tokio::test]
async fn a_second_look_reads_only_what_changed() {
    let api = FakeApi::default();
    let cluster = Cluster::new(api.client(), "shop", "https://fake");
    api.put(PODS, pod("a", "settings-1", "Running"));
    api.put(PODS, pod("b", "settings-2", "Succeeded"));
    let mut references = References::default();

    let first = cluster
        .referenced_in("shop", &mut references)
        .await
        .unwrap();
    assert_eq!(used(&first), ["settings-1"], "a finished pod uses nothing");
    let requests = api.take_requests();
    let reads = |requests: &[String]| {
        requests
            .iter()
            .filter(|r| r.starts_with("GET") && r.contains("/pods/"))
            .count()
    };
    assert_eq!(reads(&requests), 2, "each pod read once: {requests:#?}");

    // Nothing changed: metadata lists only, no pod read again.
    let again = cluster
        .referenced_in("shop", &mut references)
        .await
        .unwrap();
    assert_eq!(again, first);
    let requests = api.take_requests();
    assert_eq!(reads(&requests), 0, "{requests:#?}");
    assert_eq!(
        requests.len(),
        users().count(),
        "one metadata list per kind: {requests:#?}"
    );

    // One new pod: only it is read; a deleted one is forgotten.
    api.put(PODS, pod("c", "settings-3", "Running"));
    api.0.lock().unwrap().remove(PODS, "a");
    let third = cluster
        .referenced_in("shop", &mut references)
        .await
        .unwrap();
    assert_eq!(used(&third), ["settings-3"]);
    assert_eq!(reads(&api.take_requests()), 1);
    assert_eq!(references.len(), 2);
    references.forget("shop");
    assert!(references.is_empty());
}

#[tokio::test]
async fn many_changes_are_one_list() {
    let api = FakeApi::default();
    let cluster = Cluster::new(api.client(), "shop", "https://fake");
    for i in 0..=READ_ONE_BY_ONE {
        api.put(PODS, pod(&format!("p{i}"), "settings-1", "Running"));
    }
    let mut references = References::default();
    let used = cluster
        .referenced_in("shop", &mut references)
        .await
        .unwrap();
    assert_eq!(used.len(), 1);
    let requests = api.take_requests();
    assert!(
        requests.iter().all(|r| !r.contains("/pods/")),
        "{requests:#?}"
    );
    assert_eq!(references.len(), READ_ONE_BY_ONE + 1);
}

#[test]
fn history_and_finished_pods_use_nothing() {
    let rs = |spec: i64, status: i64| json!({"spec": {"replicas": spec}, "status": {"replicas": status}});
    let replica_set = WorkloadKind::ReplicaSet;
    assert!(
        !live(replica_set, &rs(0, 0)),
        "a scaled-down ReplicaSet is history"
    );
    assert!(live(replica_set, &rs(0, 1)), "its last pod is still going");
    assert!(live(replica_set, &rs(2, 0)));
    let pod = |phase: &str| json!({"status": {"phase": phase}});
    assert!(!live(WorkloadKind::Pod, &pod("Succeeded")));
    assert!(live(WorkloadKind::Pod, &pod("Running")));
    assert!(live(WorkloadKind::Deployment, &json!({})));
}
