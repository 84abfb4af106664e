//! The comparison for the controller's memory figures: what operators that
//! watch every ConfigMap do (Reloader, controllers with a cluster-wide
//! ConfigMap informer) -- a plain kube-runtime reflector over all ConfigMaps and
//! Secrets, caching them whole. Runs until killed. Used by
//! `scripts/bench-controller.py`; not part of berth.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::runtime::{reflector, watcher, WatchStreamExt};
use kube::{Api, Client};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let client = Client::try_default().await.expect("a kubeconfig");
    let (_maps, maps_writer) = reflector::store::<ConfigMap>();
    let (_secrets, secrets_writer) = reflector::store::<Secret>();
    let maps = reflector(
        maps_writer,
        watcher(Api::<ConfigMap>::all(client.clone()), Default::default()),
    )
    .applied_objects()
    .map_ok(|_| ());
    let secrets = reflector(
        secrets_writer,
        watcher(Api::<Secret>::all(client), Default::default()),
    )
    .applied_objects()
    .map_ok(|_| ());
    let mut both = std::pin::pin!(futures_util::stream::select(maps, secrets));
    while let Some(next) = both.next().await {
        if let Err(e) = next {
            eprintln!("watch: {e}");
        }
    }
}
