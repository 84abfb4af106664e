//! What every reconcile shares ([`Context`]) and how one fails ([`Error`]):
//! apart from `reconcile.rs` so that the parts a reconcile calls (sources,
//! uninstall) need not import the reconcile itself.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use berth_kube::{Cluster, ClusterError, Kind};
use kube::runtime::events::Recorder;
use kube::runtime::finalizer;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::Client;

use crate::caches::{Memories, SourceData, Watched};
use crate::reason::Reason;
use crate::serve::Metrics;
use crate::types::Berth;

/// A reconcile that failed; retried with a back-off by kind.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A cluster request failed.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// The client failed (reading sources, writing status).
    #[error("{0}")]
    Kube(#[from] kube::Error),
    /// A source could not be read or (un)labelled: which request on which object.
    #[error("cannot {verb} {} `{name}` (a source of the Berth): {error}", kind.resource())]
    Source {
        /// The request's verb, as RBAC names it (`get`, `patch`).
        verb: &'static str,
        /// The source's kind.
        kind: crate::desired::SourceKind,
        /// The source's name.
        name: String,
        /// What the API server answered.
        #[source]
        error: kube::Error,
    },
    /// The finalizer could not be added or removed, or what it wrapped failed.
    #[error("{0}")]
    Finalizer(#[source] Box<finalizer::Error<Error>>),
    /// The Lease could not be renewed in time: another replica may lead now.
    #[error("lost the leader Lease; exiting so that one replica leads")]
    LeadershipLost,
    /// The registry client cannot be set up.
    #[error(transparent)]
    Registry(#[from] berth_registry::RegistryError),
    /// The health and metrics address cannot be served, or signals not caught.
    #[error("cannot serve health and metrics: {0}")]
    Serve(#[from] std::io::Error),
    /// `--listen`'s address cannot be bound.
    #[error("cannot listen on {address} for health and metrics: {source}{hint}", hint = if *low { " (a port below 1024 needs root or NET_BIND_SERVICE, which the chart's pod drops: choose `service.port` 1024 or above)" } else { "" })]
    Listen {
        /// The address asked for.
        address: std::net::SocketAddr,
        /// Permission was refused for a port below 1024.
        low: bool,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `berth controller uninstall --stop`: the controller's pods did not stop in time.
    #[error("the controller's Deployment {deployment} still has {pods} pod(s) {waited:?} after it was scaled to zero; its finalizers are left in place (a running controller would add them back): wait for them to stop and run `berth controller uninstall` again")]
    Stopping {
        /// `namespace/name`.
        deployment: String,
        /// Pods left.
        pods: usize,
        /// How long it waited.
        waited: std::time::Duration,
    },
}

impl Error {
    /// The reason a status, metric and retry policy act on.
    pub fn reason(&self) -> Reason {
        match self {
            Error::Cluster(e) => e.kind().into(),
            Error::Kube(e) | Error::Source { error: e, .. } => Kind::of_client(e).into(),
            Error::Finalizer(e) => match e.as_ref() {
                finalizer::Error::ApplyFailed(e) | finalizer::Error::CleanupFailed(e) => e.reason(),
                finalizer::Error::AddFinalizer(e) | finalizer::Error::RemoveFinalizer(e) => {
                    Kind::of_client(e).into()
                }
                _ => Reason::InvalidSpec,
            },
            Error::LeadershipLost
            | Error::Registry(_)
            | Error::Serve(_)
            | Error::Listen { .. }
            | Error::Stopping { .. } => Reason::ApplyFailed,
        }
    }
}

/// What every reconcile shares.
pub(crate) struct Context {
    pub(crate) client: Client,
    /// Discovery is cached here and shared by every reconcile.
    pub(crate) cluster: Cluster,
    pub(crate) berths: Store<Berth>,
    /// The metadata watches' stores: what was applied and the sources, as they are now.
    pub(crate) watched: Watched,
    /// What the last reconcile of each `Berth` left.
    pub(crate) memories: Memories,
    /// Which Berths name which source.
    pub(crate) sources: Arc<crate::index::SourceIndex>,
    /// The sources' data as last read.
    pub(crate) source_data: SourceData,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) registry: berth_registry::Registry,
    pub(crate) recorder: Recorder,
    /// Failed attempts in a row of each `Berth`, for the error policy's back-off.
    pub(crate) failures: Mutex<HashMap<ObjectRef<Berth>, u32>>,
    /// The ClusterTrustBundles, when the controller reads them.
    pub(crate) trust_bundles: TrustBundles,
}

/// Whether the controller reads ClusterTrustBundles, and what it has of them.
pub(crate) enum TrustBundles {
    /// Not asked to (`--cluster-trust-bundles` not given).
    Off,
    /// Asked to, but the cluster serves no version of the API.
    NotServed,
    /// Asked to, but discovery did not answer at start.
    Undiscovered,
    /// Watched: the objects as they are now.
    Watched(Store<kube::api::DynamicObject>),
}

impl TrustBundles {
    /// The objects, or why there are none to read.
    pub(crate) fn objects(
        &self,
    ) -> Result<Vec<berth_core::configs::trust_bundles::TrustBundle>, &'static str> {
        use berth_core::configs::trust_bundles::{TrustBundle, NOT_SERVED};
        match self {
            TrustBundles::Off => Err("this controller does not read ClusterTrustBundles; run it with `--cluster-trust-bundles` (the chart's `clusterTrustBundles.read: true`, which grants get, list and watch on them), or use a `configMap` source"),
            TrustBundles::NotServed => Err(NOT_SERVED),
            TrustBundles::Undiscovered => Err("the API server did not answer the controller's discovery of the ClusterTrustBundle API at start; restart the controller once it answers"),
            // Not listed yet: at start, or forever when RBAC refuses the list.
            TrustBundles::Watched(store)
                if futures_util::FutureExt::now_or_never(store.wait_until_ready()).is_none() =>
            {
                Err("the controller has not listed the ClusterTrustBundles yet; if this lasts, it may not list them: grant get, list and watch on `clustertrustbundles` (certificates.k8s.io), as the chart's `clusterTrustBundles.read: true` does")
            }
            TrustBundles::Watched(store) => Ok(store
                .state()
                .iter()
                // A DynamicObject always serializes; an empty object reads as no bundle.
                .map(|o| TrustBundle::from_json(&serde_json::to_value(&**o).unwrap_or_default()))
                .collect()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TrustBundles;

    #[test]
    fn trust_bundles_not_listed_yet_say_what_to_grant_and_listed_ones_are_read() {
        let resource = kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
            "certificates.k8s.io",
            "v1",
            "ClusterTrustBundle",
        ));
        let mut writer = kube::runtime::reflector::store::Writer::new(resource);
        let watched = TrustBundles::Watched(writer.as_reader());
        let why = watched.objects().unwrap_err();
        assert!(
            why.contains("grant get, list and watch on `clustertrustbundles`"),
            "{why}"
        );
        writer.apply_watcher_event(&kube::runtime::watcher::Event::InitDone);
        assert_eq!(watched.objects().unwrap(), Vec::new());
        assert!(TrustBundles::Off
            .objects()
            .unwrap_err()
            .contains("--cluster-trust-bundles"));
    }
}
