//! The controller's process shell: signals from the first instruction, the
//! health and metrics server, leader election, the kube-runtime `Controller`
//! and its watches, and an orderly stop.
//!
//! SIGTERM or SIGINT: in-flight reconciles finish (each bounded by its request
//! timeouts), the Lease is released so a standby leads within its retry period,
//! and the process exits 0. Leadership lost: the controller's future is dropped
//! at once (in-flight reconciles are aborted, and the write fence already
//! refuses their writes), and `run` returns [`Error::LeadershipLost`].
//!
//! Watches: `Berth`s (whole objects, the spec is what is reconciled); the
//! workloads, ConfigMaps and Secrets the controller applied, and the sources it
//! reads, metadata only (`Api<PartialObjectMeta<K>>`) and label-selected, so memory and
//! traffic grow with what the controller manages, not with the namespace. Their
//! stores (`caches::Watched`) let a reconcile that changes nothing skip the
//! reads and dry runs that would find nothing.

use std::sync::Arc;
use std::time::Duration;

use berth_kube::fence::Fence;
use berth_kube::Cluster;
use futures_util::StreamExt;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{ApiResource, DynamicObject};
use kube::core::PartialObjectMeta;
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::Store;
use kube::runtime::{watcher, Controller, PredicateConfig, WatchStreamExt};
use kube::{Client, Resource, ResourceExt};

use crate::backoff::WatchBackoff;
use crate::caches::{Memories, SourceData, Watched};
use crate::context::{Context, Error, TrustBundles};
use crate::desired::SourceKind;
use crate::lease::{self, Candidate, Election};
use crate::reconcile::{error_policy, reconcile};
use crate::scope::api;
use crate::serve::{Metrics, Phase};
pub use crate::shutdown::Shutdown;
use crate::types::Berth;
use crate::workloads::{trim_metadata, Trimmed};
use crate::{CONTROLLED, SOURCE_LABEL};

/// Where the controller works.
#[derive(Debug, Clone)]
pub struct Settings {
    /// One namespace (a Role is enough), or every namespace (a ClusterRole).
    pub namespace: Option<String>,
    /// The API server's URL, for messages.
    pub server: String,
    /// Where `/healthz`, `/readyz` and `/metrics` are served (none: not served).
    pub listen: Option<std::net::SocketAddr>,
    /// Leader election (none: this replica always leads).
    pub election: Option<Election>,
    /// The fence the client was built with ([`berth_kube::Connection::write_fence`]);
    /// opened while this replica holds the Lease. Without election: none.
    pub fence: Option<Fence>,
    /// This replica's name in Events (the pod name).
    pub instance: Option<String>,
    /// How `spec.images[].pin` reaches registries.
    pub registry: berth_registry::Options,
    /// Registry credentials (`DOCKER_CONFIG`, as `berth pin` reads them).
    pub docker_config: berth_registry::DockerConfig,
    /// Config generations kept for a GitOps engine: how many of each config stay
    /// (the newest; older ones go once nothing uses them).
    pub gitops_keep: usize,
    /// Berths reconciled at once. kube-runtime's default is unbounded: with
    /// thousands of Berths at start, thousands of reconciles each holding their
    /// objects and making their requests at once overload the API server (504s)
    /// and the controller's memory; a bound keeps both proportional to it.
    pub concurrency: u16,
    /// Read and watch ClusterTrustBundles (cluster-scoped: get, list and watch
    /// on them), for `clusterTrustBundle` CA sources.
    pub cluster_trust_bundles: bool,
}

/// How long the ClusterTrustBundle API's discovery may take at start.
const DISCOVERY: Duration = Duration::from_secs(30);

/// How long in-flight reconciles may take to finish after SIGTERM or SIGINT:
/// each is bounded by its requests' timeouts, and the pod's grace period
/// (30 s by default) must cover this, the Lease's release and the exit.
const DRAIN: Duration = Duration::from_secs(8);

/// The controller's own async runtime, apart from the CLI's two-worker one: a
/// worker per CPU the pod may use (std reads the cgroup's quota), at least two,
/// because a reconcile renders on its worker with `block_in_place` while the
/// others renew the Lease, serve `/readyz` and drive the watches.
pub fn async_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    let cpus = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cpus.max(2))
        .thread_name("berth-controller")
        .enable_all()
        .build()
}

/// Runs the controller until a termination signal (then `Ok`), or until the
/// Lease is lost ([`Error::LeadershipLost`]).
pub async fn run(client: Client, settings: Settings, shutdown: Shutdown) -> Result<(), Error> {
    tracing::info!(
        server = %settings.server,
        namespace = settings.namespace.as_deref().unwrap_or("<all>"),
        version = env!("CARGO_PKG_VERSION"),
        "berth controller starting"
    );
    let metrics = Arc::new(Metrics::default());
    if let Some(address) = settings.listen {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|source| Error::Listen {
                address,
                low: source.kind() == std::io::ErrorKind::PermissionDenied && address.port() < 1024,
                source,
            })?;
        tracing::info!(address = %listener.local_addr()?, "serving /healthz /readyz /metrics");
        tokio::spawn(crate::serve::serve(listener, Arc::clone(&metrics)));
    }
    let mut candidate = Candidate::default();
    if let (Some(election), Some(fence)) = (&settings.election, &settings.fence) {
        let looked = |reached: bool| {
            if reached {
                metrics.enter_from(Phase::Starting, Phase::Standby);
            } else {
                metrics.enter_from(Phase::Standby, Phase::Starting);
            }
        };
        tokio::select! {
            () = lease::acquire(election, &mut candidate, &client, fence, &looked) => {}
            () = shutdown.requested() => {
                metrics.enter(Phase::Stopping);
                tracing::info!("stopped before leading");
                return Ok(());
            }
        }
        tracing::info!(identity = %election.identity, "leading");
    }
    metrics.enter(Phase::Leading);
    let collector = crate::collector::Collector {
        client: client.clone(),
        namespace: settings.namespace.clone(),
        server: settings.server.clone(),
        keep: settings.gitops_keep,
        metrics: Arc::clone(&metrics),
        recorder: Recorder::new(client.clone(), reporter(&settings)),
    }
    .run(shutdown.clone());
    let trust = discover_trust_bundles(&client, &settings, &shutdown).await;
    let controller = controller(&client, &settings, &metrics, &shutdown, trust)?;
    // Both end on the signal; the controller after its graceful drain, which
    // kube-runtime holds until the Berth cache has synced — forever against an
    // API server that refuses or never answers. So the drain has a bound, and
    // none at all when nothing was synced (no reconcile can be in flight).
    let drained = {
        let (shutdown, metrics) = (shutdown.clone(), Arc::clone(&metrics));
        async move {
            shutdown.requested().await;
            if metrics.phase() == Phase::Synced {
                tokio::time::sleep(DRAIN).await;
                tracing::warn!(after = ?DRAIN, "in-flight reconciles did not finish after the signal; stopping anyway (the next leader reconciles them again)");
            } else {
                tracing::info!("stopping before the caches synced");
            }
        }
    };
    let controller = async move {
        tokio::select! {
            _ = async { tokio::join!(controller, collector) } => {}
            () = drained => {}
        }
    };
    let outcome = match (&settings.election, &settings.fence) {
        (Some(election), Some(fence)) => {
            tokio::select! {
                () = controller => Ok(()),
                () = lease::keep(election, &mut candidate, &client, fence) => Err(Error::LeadershipLost),
            }
        }
        _ => {
            controller.await;
            Ok(())
        }
    };
    metrics.enter(Phase::Stopping);
    outcome?;
    if let Some(election) = &settings.election {
        match candidate.release(election, &client).await {
            Ok(()) => tracing::info!("released the Lease"),
            Err(e) => {
                tracing::warn!(error = %crate::logged::error(&e), "could not release the Lease; a standby takes over once it expires")
            }
        }
        if let Some(fence) = &settings.fence {
            fence.close();
        }
    }
    tracing::info!("stopped");
    Ok(())
}

/// Who writes the controller's Events.
fn reporter(settings: &Settings) -> Reporter {
    Reporter {
        controller: crate::MANAGER.into(),
        instance: settings.instance.clone(),
    }
}

/// What about a `Berth` a reconcile acts on: its spec (through the generation),
/// labels, annotations (`kubectl annotate` is the usual way to ask for a
/// reconcile), finalizers (the finalizer's own write starts the first apply)
/// and deletion. Not its status: the status a reconcile writes would otherwise
/// trigger another reconcile of every Berth, which finds nothing to do but still
/// reads its records, workloads and status -- a third of the API server's work
/// when 2,000 Berths start at once.
fn trigger(berth: &Berth) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let meta = berth.meta();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (
        meta.generation,
        &meta.labels,
        &meta.annotations,
        &meta.finalizers,
        meta.deletion_timestamp.is_some(),
    )
        .hash(&mut hasher);
    Some(hasher.finish())
}

/// The kube-runtime `Controller` with its watches, as one future that ends after
/// a graceful shutdown.
fn controller(
    client: &Client,
    settings: &Settings,
    metrics: &Arc<Metrics>,
    shutdown: &Shutdown,
    trust: Discovered,
) -> Result<impl std::future::Future<Output = ()>, Error> {
    let ns = &settings.namespace;
    let owned = || watcher::Config::default().labels(CONTROLLED);
    let sources = || watcher::Config::default().labels(&format!("{SOURCE_LABEL}=true"));
    // The store sees every change of a Berth; reconciles are triggered only by
    // what a reconcile acts on (see `trigger`), not by the status it writes itself.
    let (store, writer) = kube::runtime::reflector::store();
    let berths = kube::runtime::reflector(
        writer,
        watcher(api::<Berth>(client, ns), watcher::Config::default()).modify(Trimmed::trim),
    )
    .applied_objects()
    .predicate_filter(trigger, PredicateConfig::default());
    let controller = Controller::for_stream(berths, store.clone()).with_config(
        kube::runtime::controller::Config::default().concurrency(settings.concurrency),
    );
    report_when_synced(store.clone(), Arc::clone(metrics));
    let index = Arc::new(crate::index::SourceIndex::default());
    let (for_maps, for_secrets) = (
        (store.clone(), Arc::clone(&index)),
        (store.clone(), Arc::clone(&index)),
    );
    let reporter = reporter(settings);
    let (deployments, deployment_events) = workloads::<Deployment>(client, ns, owned());
    let (stateful_sets, stateful_set_events) = workloads::<StatefulSet>(client, ns, owned());
    let (daemon_sets, daemon_set_events) = workloads::<DaemonSet>(client, ns, owned());
    let (jobs, job_events) = workloads::<Job>(client, ns, owned());
    let (config_maps, config_map_events) = metadata::<ConfigMap>(client, ns, owned());
    let (secrets, secret_events) = metadata::<Secret>(client, ns, owned());
    let (source_maps, source_map_events) = metadata::<ConfigMap>(client, ns, sources());
    let (source_secrets, source_secret_events) = metadata::<Secret>(client, ns, sources());
    let (controller, trust_bundles) =
        watch_trust_bundles(controller, client, settings, trust, &store);
    let context = Arc::new(Context {
        client: client.clone(),
        cluster: Cluster::new(client.clone(), "default", settings.server.as_str()),
        berths: store,
        watched: Watched {
            deployments,
            stateful_sets,
            daemon_sets,
            jobs,
            config_maps,
            secrets,
            source_maps,
            source_secrets,
        },
        memories: Memories::default(),
        sources: index,
        source_data: SourceData::default(),
        metrics: Arc::clone(metrics),
        registry: berth_registry::Registry::new(
            settings.registry.clone(),
            settings.docker_config.clone(),
        )?,
        recorder: Recorder::new(client.clone(), reporter),
        failures: std::sync::Mutex::default(),
        trust_bundles,
    });
    let throttle = Arc::new(crate::logged::Throttle::default());
    let run = controller
        .owns_stream(deployment_events)
        .owns_stream(stateful_set_events)
        .owns_stream(daemon_set_events)
        .owns_stream(job_events)
        .owns_stream(config_map_events)
        .owns_stream(secret_events)
        .watches_stream(
            source_map_events,
            move |cm: PartialObjectMeta<ConfigMap>| {
                let (store, index) = &for_maps;
                index.users(store, SourceKind::ConfigMap, cm.namespace(), cm.name_any())
            },
        )
        .watches_stream(source_secret_events, move |s: PartialObjectMeta<Secret>| {
            let (store, index) = &for_secrets;
            index.users(store, SourceKind::Secret, s.namespace(), s.name_any())
        })
        .trigger_backoff(WatchBackoff::controller())
        .graceful_shutdown_on(shutdown.trigger())
        .run(reconcile, error_policy, context)
        .for_each(move |outcome| log_outcome(outcome, Arc::clone(&throttle)));
    Ok(run)
}

/// With `--cluster-trust-bundles`: the ClusterTrustBundle API's discovery,
/// bounded, and ended by a signal like every other wait before the controller runs.
async fn discover_trust_bundles(
    client: &Client,
    settings: &Settings,
    shutdown: &Shutdown,
) -> Discovered {
    match settings.cluster_trust_bundles {
        true => tokio::select! {
            found = tokio::time::timeout(DISCOVERY, trust_bundle_api(client, settings)) => found.unwrap_or_else(|_| {
                tracing::warn!(after = ?DISCOVERY, "--cluster-trust-bundles: the API server did not answer discovery; Berths that name a ClusterTrustBundle are Degraded until the controller restarts");
                Discovered::NoAnswer
            }),
            // Stopping: the controller below ends at once and the Lease is released.
            () = shutdown.requested() => Discovered::NoAnswer,
        },
        false => Discovered::NotServed,
    }
}

/// What discovery found of the ClusterTrustBundle API.
enum Discovered {
    /// Its newest served version.
    Served(ApiResource),
    /// No version is served.
    NotServed,
    /// Discovery failed or did not answer in time.
    NoAnswer,
}

/// The newest served version of the ClusterTrustBundle API (with a warning
/// when the cluster serves none or discovery fails: Berths that name one say so).
async fn trust_bundle_api(client: &Client, settings: &Settings) -> Discovered {
    let cluster = Cluster::new(client.clone(), "default", settings.server.as_str());
    match cluster.trust_bundle_api().await {
        Ok(Some(resource)) => {
            tracing::info!(version = %resource.version, "watching ClusterTrustBundles");
            Discovered::Served(resource)
        }
        Ok(None) => {
            tracing::warn!("--cluster-trust-bundles: the cluster serves no ClusterTrustBundle API (certificates.k8s.io); Berths that name one are Degraded");
            Discovered::NotServed
        }
        Err(e) => {
            tracing::warn!(error = %crate::logged::error(&e), "--cluster-trust-bundles: discovery of the ClusterTrustBundle API failed; Berths that name one are Degraded until the controller restarts");
            Discovered::NoAnswer
        }
    }
}

/// With `--cluster-trust-bundles` and a served API, the controller also
/// watches ClusterTrustBundles and reconciles the Berths a change reaches.
fn watch_trust_bundles(
    controller: Controller<Berth>,
    client: &Client,
    settings: &Settings,
    trust: Discovered,
    berths: &Store<Berth>,
) -> (Controller<Berth>, TrustBundles) {
    match (settings.cluster_trust_bundles, trust) {
        (false, _) => (controller, TrustBundles::Off),
        (true, Discovered::NotServed) => (controller, TrustBundles::NotServed),
        (true, Discovered::NoAnswer) => (controller, TrustBundles::Undiscovered),
        (true, Discovered::Served(resource)) => {
            let (store, events) = trust_bundle_watch(client, resource.clone());
            let berths = berths.clone();
            let mapper = move |o: DynamicObject| trust_bundle_users(&berths, &o);
            let controller = controller.watches_stream_with(events, mapper, resource);
            (controller, TrustBundles::Watched(store))
        }
    }
}

/// A watch of every ClusterTrustBundle (whole objects: their PEM is what is
/// read; they are few and small), kept in a store.
#[allow(clippy::type_complexity)]
fn trust_bundle_watch(
    client: &Client,
    resource: ApiResource,
) -> (
    Store<DynamicObject>,
    impl futures_util::Stream<Item = Result<DynamicObject, watcher::Error>> + Send + 'static,
) {
    let writer = kube::runtime::reflector::store::Writer::new(resource.clone());
    let store = writer.as_reader();
    let api = kube::Api::<DynamicObject>::all_with(client.clone(), &resource);
    let stream = watcher(api, watcher::Config::default())
        .reflect(writer)
        .touched_objects();
    (store, stream)
}

/// The Berths whose CA sources read this ClusterTrustBundle (a scan of the
/// Berths: trust bundles change rarely).
fn trust_bundle_users(
    berths: &Store<Berth>,
    object: &DynamicObject,
) -> Vec<kube::runtime::reflector::ObjectRef<Berth>> {
    use berth_core::configs::trust_bundles::TrustBundle;
    // A DynamicObject always serializes; an empty object matches nothing.
    let bundle = TrustBundle::from_json(&serde_json::to_value(object).unwrap_or_default());
    let reads = |berth: &Berth| {
        (berth.spec.ca_bundles.values())
            .flat_map(|b| &b.sources)
            .filter_map(|s| s.cluster_trust_bundle.as_ref())
            .any(|r| crate::desired::trust_bundle_source(r).reads(&bundle))
    };
    (berths.state().iter())
        .filter(|b| reads(b))
        .map(|b| kube::runtime::reflector::ObjectRef::from_obj(&**b))
        .collect()
}

/// Logs `caches synced` (and moves the phase metric) once the Berth store has its
/// first list, warning after 30 s that it has not.
fn report_when_synced(store: Store<Berth>, metrics: Arc<Metrics>) {
    tokio::spawn(async move {
        // Polled again and again: kube-runtime's readiness is a oneshot that wakes
        // only its last poller (the controller's runner), not this task.
        let started = std::time::Instant::now();
        let mut warned = false;
        let poll = Duration::from_millis(100);
        loop {
            match tokio::time::timeout(poll, store.wait_until_ready()).await {
                Ok(Ok(())) => break,
                // The watch ended (a signal) before its first list: nothing synced
                // (KC08, #46: it was logged as `caches synced` after SIGTERM).
                Ok(Err(_writer_dropped)) => return,
                Err(_elapsed) => {}
            }
            if !warned && started.elapsed() > Duration::from_secs(30) {
                tracing::warn!(after = ?started.elapsed(), "the initial list of Berths has not finished; the watch lines say why (a refusal names what to grant; none means the API server does not answer)");
                warned = true;
            }
        }
        tracing::info!(took = ?started.elapsed(), "caches synced");
        metrics.enter_from(Phase::Leading, Phase::Synced);
    });
}

/// Logs what one reconcile came to: failures of the watches throttled (a refusing
/// API server would repeat them after every back-off); a reconcile's own failure
/// was logged by the error policy.
async fn log_outcome(
    outcome: Result<
        (
            kube::runtime::reflector::ObjectRef<Berth>,
            kube::runtime::controller::Action,
        ),
        kube::runtime::controller::Error<Error, watcher::Error>,
    >,
    throttle: Arc<crate::logged::Throttle>,
) {
    match outcome {
        Ok((object, _)) => tracing::debug!(berth = %object, "reconciled"),
        // A Berth deleted while a reconcile was queued: nothing to do.
        Err(kube::runtime::controller::Error::ObjectNotFound(object)) => {
            tracing::info!(berth = %object, "gone")
        }
        // The reconcile's own failure was logged by the error policy.
        Err(kube::runtime::controller::Error::ReconcilerFailed(..)) => {}
        // Only the Berth list can answer 404: its CRD is missing.
        Err(kube::runtime::controller::Error::QueueError(watcher::Error::InitialListFailed(
            kube::Error::Api(status),
        ))) if status.code == 404 => {
            if let Some(suppressed) = throttle.admit("no Berth CRD") {
                tracing::warn!(suppressed, "the Berth CRD is not installed (listing berths.berth.dev answers 404 Not Found); install it with `berth controller crd | kubectl apply -f -` or the Helm chart; retrying with back-off");
            }
        }
        Err(e) => {
            let error = crate::logged::error(&e);
            if let Some(suppressed) = throttle.admit(&error) {
                tracing::warn!(%error, suppressed, "watch (retrying with back-off)");
            }
        }
    }
}

/// A label-selected metadata watch of `K` kept in a store, and its stream of
/// touched objects for the controller. The store keeps what [`Watched`] and
/// the controller's mappers read (names, labels, owner references, this
/// controller's managed-fields entry as its digest), not annotations (a
/// `kubectl apply`'d source's last-applied copy of its data) or other
/// managers' entries: memory stays small.
#[allow(clippy::type_complexity)]
fn metadata<K>(
    client: &Client,
    namespace: &Option<String>,
    config: watcher::Config,
) -> (
    Store<PartialObjectMeta<K>>,
    impl futures_util::Stream<Item = Result<PartialObjectMeta<K>, watcher::Error>> + Send + 'static,
)
where
    K: Watchable,
{
    let (store, writer) = kube::runtime::reflector::store();
    let stream = watcher(api::<PartialObjectMeta<K>>(client, namespace), config)
        .modify(|o: &mut PartialObjectMeta<K>| trim_metadata(&mut o.metadata))
        .reflect(writer)
        .touched_objects();
    (store, stream)
}

/// A namespaced kind the controller watches.
trait Watchable:
    Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
    + Clone
    + serde::de::DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
}

impl<K> Watchable for K where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static
{
}

/// A label-selected watch of workload kind `K`, whole but [`Trimmed`], kept in a
/// store, and its stream of touched objects for the controller.
#[allow(clippy::type_complexity)]
fn workloads<K>(
    client: &Client,
    namespace: &Option<String>,
    config: watcher::Config,
) -> (
    Store<K>,
    impl futures_util::Stream<Item = Result<K, watcher::Error>> + Send + 'static,
)
where
    K: Watchable + Trimmed,
{
    let (store, writer) = kube::runtime::reflector::store();
    let stream = watcher(api::<K>(client, namespace), config)
        .modify(Trimmed::trim)
        .reflect(writer)
        .touched_objects();
    (store, stream)
}
