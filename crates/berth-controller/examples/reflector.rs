//! The comparisons for the controller's memory figures: what operators that
//! watch every ConfigMap do (Reloader, controllers with a cluster-wide
//! ConfigMap informer) -- a plain kube-runtime reflector over all ConfigMaps and
//! Secrets, caching them whole; with `--metadata`, the fair baseline: the same
//! reflector over their metadata only (`PartialObjectMeta`, kube-rs's advice for
//! watching what one does not read). Runs until killed. Used by
//! `scripts/bench-controller.py`; not part of berth.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures_util::{Stream, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::core::PartialObjectMeta;
use kube::runtime::{reflector, watcher, WatchStreamExt};
use kube::{Api, Client, Resource};

/// A reflector over every `K`, its events reduced to `()`.
fn reflect<K>(client: &Client) -> impl Stream<Item = Result<(), watcher::Error>>
where
    K: Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let (_store, writer) = reflector::store::<K>();
    reflector(
        writer,
        watcher(Api::<K>::all(client.clone()), Default::default()),
    )
    .applied_objects()
    .map_ok(|_| ())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let client = Client::try_default().await.expect("a kubeconfig");
    let both = if std::env::args().any(|a| a == "--metadata") {
        futures_util::stream::select(
            reflect::<PartialObjectMeta<ConfigMap>>(&client).boxed(),
            reflect::<PartialObjectMeta<Secret>>(&client).boxed(),
        )
    } else {
        futures_util::stream::select(
            reflect::<ConfigMap>(&client).boxed(),
            reflect::<Secret>(&client).boxed(),
        )
    };
    let mut both = std::pin::pin!(both);
    while let Some(next) = both.next().await {
        if let Err(e) = next {
            eprintln!("watch: {e}");
        }
    }
}
