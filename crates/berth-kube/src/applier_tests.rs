//! The apply session against [`FakeApi`]: which path each apply takes and how
//! many requests it costs, in milliseconds. The same paths run against the real
//! API server on the plane (`crates/berth/tests/it/cluster.rs`, `controller.rs`).

use std::collections::BTreeMap;

use berth_core::cluster::{Desired, Settled};
use serde_json::json;

use super::*;
use crate::fake::FakeApi;

fn options() -> ApplyOptions {
    ApplyOptions {
        manager: "berth".into(),
        force: false,
        keep: 2,
        owner: None,
    }
}

/// A Deployment that reads a generated ConfigMap (`settings-<hash>`).
fn desired(hash: &str) -> Desired {
    let config = format!("settings-{hash}");
    Desired {
        project: "shop".into(),
        objects: vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": config, "namespace": "shop"}, "data": {"level": hash}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "web", "namespace": "shop"},
                   "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                            "template": {"metadata": {"labels": {"app": "web"}},
                                         "spec": {"containers": [{"name": "web", "image": "web:1",
                                            "envFrom": [{"configMapRef": {"name": config}}]}]}}}}),
        ],
        generated: BTreeMap::from([(config, "settings".to_string())]),
    }
}

fn count(requests: &[String], method: &str) -> usize {
    requests.iter().filter(|r| r.starts_with(method)).count()
}

#[tokio::test]
async fn a_first_apply_records_and_a_remembered_untouched_one_asks_nothing() {
    let api = FakeApi::default();
    let cluster = Cluster::new(api.client(), "shop", "https://fake");
    let desired = desired("a1");

    // The first session knows nothing: it lists the records, dry-runs, applies and
    // records. The generated config goes first, without a dry run.
    let mut applier = Applier::new(&cluster, options());
    let applied = applier.apply(&desired, &mut |_| {}).await.unwrap();
    assert_eq!(applied.outcome, Outcome::Recorded);
    assert_eq!(applied.sequence, 1);
    assert_eq!(applied.objects.len(), 2);
    let first = api.take_requests();
    let patches: Vec<&String> = first.iter().filter(|r| r.starts_with("PATCH")).collect();
    assert_eq!(
        patches,
        [
            "PATCH /apis/apps/v1/namespaces/shop/deployments/web",
            "PATCH /api/v1/namespaces/shop/configmaps/settings-a1",
            "PATCH /apis/apps/v1/namespaces/shop/deployments/web",
        ],
        "the Deployment's dry run, then the config, then the Deployment: {first:#?}"
    );
    assert_eq!(count(&first, "POST"), 1, "one record: {first:#?}");
    // The apply's answer is judged: rolled out without a read, the record marked.
    assert_eq!(
        applier.observe(&mut |_| {}).await.unwrap(),
        Settled::RolledOut
    );
    let observed = api.take_requests();
    assert!(
        observed.iter().all(|r| !r.contains("/deployments/")),
        "the Deployment is not read again: {observed:#?}"
    );
    let known = applier.known().expect("a session that applied knows");

    // The next session resumes with what it knew and the watches: nothing was touched,
    // so the same objects cost no request at all, observation included.
    let mut applier = Applier::resume(&cluster, options(), known, &api);
    let applied = applier.apply(&desired, &mut |_| {}).await.unwrap();
    assert_eq!(applied.outcome, Outcome::Untouched);
    assert_eq!(applied.sequence, 1, "no new record");
    assert_eq!(
        applier.observe(&mut |_| {}).await.unwrap(),
        Settled::RolledOut
    );
    assert_eq!(api.take_requests(), Vec::<String>::new());
}

#[tokio::test]
async fn an_object_someone_else_touched_is_checked_and_applied_again() {
    let api = FakeApi::default();
    let cluster = Cluster::new(api.client(), "shop", "https://fake");
    let desired = desired("a1");
    let mut applier = Applier::new(&cluster, options());
    applier.apply(&desired, &mut |_| {}).await.unwrap();
    applier.observe(&mut |_| {}).await.unwrap();
    let known = applier.known().unwrap();
    api.take_requests();

    // `kubectl edit` of the config: the watches show another fingerprint.
    api.edit(
        "/api/v1/namespaces/shop/configmaps",
        "settings-a1",
        "data",
        json!({"level": "edited"}),
    );
    let mut applier = Applier::resume(&cluster, options(), known, &api);
    let applied = applier.apply(&desired, &mut |_| {}).await.unwrap();
    assert_eq!(applied.outcome, Outcome::Checked { reapplied: 1 });
    let requests = api.take_requests();
    assert_eq!(count(&requests, "POST"), 0, "no new record: {requests:#?}");
    assert_eq!(
        count(&requests, "PATCH"),
        3,
        "a dry run of both, the drifted one applied again: {requests:#?}"
    );
}

#[tokio::test]
async fn new_objects_are_a_new_record_and_the_old_generation_goes_after_the_rollout() {
    let api = FakeApi::default();
    let cluster = Cluster::new(api.client(), "shop", "https://fake");
    let options = ApplyOptions {
        keep: 1,
        ..options()
    };
    let mut applier = Applier::new(&cluster, options.clone());
    applier.apply(&desired("a1"), &mut |_| {}).await.unwrap();
    applier.observe(&mut |_| {}).await.unwrap();
    let known = applier.known().unwrap();

    let mut applier = Applier::resume(&cluster, options, known, &api);
    let applied = applier.apply(&desired("b2"), &mut |_| {}).await.unwrap();
    assert_eq!((applied.outcome, applied.sequence), (Outcome::Recorded, 2));
    let mut deleted = Vec::new();
    let settled = applier
        .observe(&mut |e| {
            if let Event::Deleted(object) = e {
                deleted.push(object.name);
            }
        })
        .await
        .unwrap();
    assert_eq!(settled, Settled::RolledOut);
    assert!(deleted.contains(&"settings-a1".to_string()), "{deleted:?}");
    assert!(!deleted.contains(&"settings-b2".to_string()), "{deleted:?}");
}

#[tokio::test]
async fn an_error_forgets_what_the_session_knew() {
    let api = FakeApi::default();
    let cluster = Cluster::new(api.client(), "shop", "https://fake");
    let mut applier = Applier::new(&cluster, options());
    applier.apply(&desired("a1"), &mut |_| {}).await.unwrap();
    assert!(applier.known().is_some());
    // An object of a kind the server does not serve: refused before anything is sent.
    let mut broken = desired("a1");
    broken
        .objects
        .push(json!({"apiVersion": "example.com/v1", "kind": "Gadget",
                               "metadata": {"name": "g", "namespace": "shop"}}));
    assert!(applier.apply(&broken, &mut |_| {}).await.is_err());
    assert!(applier.known().is_none());
    assert_eq!(
        applier.observe(&mut |_| {}).await.unwrap(),
        Settled::RolledOut
    );
}
