//! The kube-runtime `Controller` over `Berth` resources. Each reconcile is
//! level-triggered: it reads the resource's sources, asks berth-core for the
//! desired objects (`desired::plan`), applies them with berth-kube's one apply
//! path (field manager `berth-controller`, owner references to the `Berth`),
//! looks at the rollouts and writes the status. A problem with a source never
//! touches what runs: the status says why.
//!
//! Watches, all filtered: `Berth`s; the workloads and ConfigMaps berth manages
//! (`app.kubernetes.io/managed-by=berth`); ConfigMaps and Secrets labelled
//! `berth.dev/source=true`, which the controller sets on the sources it reads.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use berth_kube::{ApplyOptions, Cluster, ClusterError, Settled};
use futures_util::StreamExt;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{finalizer, Event as Finalize};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{watcher, Controller};
use kube::{Client, Resource, ResourceExt};
use serde_json::{json, Value};

use crate::desired::{self, Problem, SourceKind, Sources};
use crate::status;
use crate::types::Berth;

/// The field manager of everything the controller applies.
pub const MANAGER: &str = "berth-controller";
/// The field manager of the source label (it owns nothing else on a source).
pub const SOURCE_MANAGER: &str = "berth-controller-sources";
/// The label the controller puts on the sources it reads, and watches by.
pub const SOURCE_LABEL: &str = "berth.dev/source";
/// Removes the source labels when a `Berth` goes.
const FINALIZER: &str = "berth.dev/sources";
const MANAGED: &str = "app.kubernetes.io/managed-by=berth";

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
    pub election: Option<crate::lease::Election>,
    /// How `spec.images[].pin` reaches registries.
    pub registry: berth_registry::Options,
    /// Registry credentials (`DOCKER_CONFIG`, as `berth pin` reads them).
    pub docker_config: berth_registry::DockerConfig,
}

/// A reconcile that failed; retried with a back-off.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A cluster request failed.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// The client failed (reading sources, writing status).
    #[error("{0}")]
    Kube(#[from] kube::Error),
    /// The finalizer could not be added or removed.
    #[error("finalizer: {0}")]
    Finalizer(String),
    /// The Lease could not be renewed in time: another replica may lead now.
    #[error("lost the leader Lease; exiting so that one replica leads")]
    LeadershipLost,
    /// The registry client cannot be set up.
    #[error(transparent)]
    Registry(#[from] berth_registry::RegistryError),
    /// The health and metrics address cannot be served.
    #[error("cannot serve health and metrics: {0}")]
    Serve(#[from] std::io::Error),
}

struct Context {
    client: Client,
    /// Discovery is cached here and shared by every reconcile.
    cluster: Cluster,
    berths: Store<Berth>,
    metrics: Arc<crate::serve::Metrics>,
    registry: berth_registry::Registry,
}

fn api<K>(client: &Client, namespace: &Option<String>) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// The `Berth`s of `store` in `namespace` that name the source `(kind, name)`.
fn users(
    store: &Store<Berth>,
    kind: SourceKind,
    namespace: Option<String>,
    name: String,
) -> Vec<ObjectRef<Berth>> {
    store
        .state()
        .iter()
        .filter(|b| b.namespace() == namespace)
        .filter(|b| desired::sources_named(b).contains(&(kind, name.clone())))
        .map(|b| ObjectRef::from_obj(b.as_ref()))
        .collect()
}

/// Runs the controller until a termination signal (or, with leader election,
/// until the Lease is lost).
pub async fn run(client: Client, settings: Settings) -> Result<(), Error> {
    let metrics = Arc::new(crate::serve::Metrics::default());
    if let Some(address) = settings.listen {
        let listener = tokio::net::TcpListener::bind(address).await?;
        say!(
            "level=info msg=\"serving /healthz /readyz /metrics\" address={}",
            listener.local_addr()?
        );
        tokio::spawn(crate::serve::serve(listener, Arc::clone(&metrics)));
    }
    let lost = match &settings.election {
        Some(election) => {
            election.acquire(&client).await;
            say!("level=info msg=\"leading\" identity={}", election.identity);
            let (election, client) = (election.clone(), client.clone());
            let (tx, rx) = tokio::sync::oneshot::channel::<()>();
            tokio::spawn(async move {
                election.keep(&client).await;
                let _ = tx.send(());
            });
            Some(rx)
        }
        None => None,
    };
    metrics
        .leading
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let lost_flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let shutdown = {
        let lost_flag = Arc::clone(&lost_flag);
        async move {
            match lost {
                Some(rx) => {
                    tokio::select! {
                        _ = rx => lost_flag.store(true, std::sync::atomic::Ordering::Relaxed),
                        _ = tokio::signal::ctrl_c() => {}
                    }
                }
                None => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    };
    let ns = &settings.namespace;
    let managed = || watcher::Config::default().labels(MANAGED);
    let sources = || watcher::Config::default().labels(&format!("{SOURCE_LABEL}=true"));
    let controller = Controller::new(api::<Berth>(&client, ns), watcher::Config::default());
    let store = controller.store();
    let (for_maps, for_secrets) = (store.clone(), store.clone());
    let context = Arc::new(Context {
        client: client.clone(),
        cluster: Cluster::new(client.clone(), "default", settings.server.as_str()),
        berths: store,
        metrics: Arc::clone(&metrics),
        registry: berth_registry::Registry::new(
            settings.registry.clone(),
            settings.docker_config.clone(),
        )?,
    });
    metrics
        .running
        .store(true, std::sync::atomic::Ordering::Relaxed);
    controller
        .owns(api::<Deployment>(&client, ns), managed())
        .owns(api::<StatefulSet>(&client, ns), managed())
        .owns(api::<DaemonSet>(&client, ns), managed())
        .owns(api::<Job>(&client, ns), managed())
        .owns(api::<ConfigMap>(&client, ns), managed())
        .watches(
            api::<ConfigMap>(&client, ns),
            sources(),
            move |cm: ConfigMap| {
                users(
                    &for_maps,
                    SourceKind::ConfigMap,
                    cm.namespace(),
                    cm.name_any(),
                )
            },
        )
        .watches(api::<Secret>(&client, ns), sources(), move |s: Secret| {
            users(
                &for_secrets,
                SourceKind::Secret,
                s.namespace(),
                s.name_any(),
            )
        })
        .trigger_backoff(WatchBackoff {
            next: WatchBackoff::FIRST,
        })
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, context)
        .for_each(|outcome| async move {
            match outcome {
                Ok((object, _)) => say!("level=info msg=reconciled berth={object}"),
                // A Berth deleted while a reconcile was queued: nothing to do.
                Err(kube::runtime::controller::Error::ObjectNotFound(object)) => {
                    say!("level=info msg=gone berth={object}")
                }
                Err(e) => say!(
                    "level=warn msg=\"reconcile failed\" error=\"{}\"",
                    crate::logged::error(&e)
                ),
            }
        })
        .await;
    metrics
        .running
        .store(false, std::sync::atomic::Ordering::Relaxed);
    if lost_flag.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(Error::LeadershipLost);
    }
    say!("level=info msg=\"stopped\"");
    Ok(())
}

/// The back-off of the controller's merged watch streams. kube-runtime's default
/// (client-go's: 0.8 s doubling to 30 s, reset after 120 s without errors) is
/// shared by all six watches here, so the burst of errors an API server restart
/// causes (each watch fails to reconnect, then finds its resourceVersion expired)
/// stopped every watch for minutes. Short and capped instead: 100 ms doubling to
/// 2 s, reset once a poll succeeds.
struct WatchBackoff {
    next: Duration,
}

impl WatchBackoff {
    const FIRST: Duration = Duration::from_millis(100);
    const MAX: Duration = Duration::from_secs(2);
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let now = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        Some(now)
    }
}

impl kube::runtime::utils::Backoff for WatchBackoff {
    fn reset(&mut self) {
        self.next = Self::FIRST;
    }
}

fn error_policy(_: Arc<Berth>, error: &Error, _: Arc<Context>) -> Action {
    say!(
        "level=warn msg=\"will retry\" error=\"{}\"",
        crate::logged::error(error)
    );
    Action::requeue(Duration::from_secs(5))
}

async fn reconcile(berth: Arc<Berth>, context: Arc<Context>) -> Result<Action, Error> {
    let started = std::time::Instant::now();
    let outcome = reconcile_timed(berth, &context).await;
    context
        .metrics
        .reconciled(started.elapsed(), outcome.is_err());
    outcome
}

async fn reconcile_timed(berth: Arc<Berth>, context: &Context) -> Result<Action, Error> {
    let namespace = berth.namespace().unwrap_or_default();
    let api: Api<Berth> = Api::namespaced(context.client.clone(), &namespace);
    finalizer(&api, FINALIZER, berth, |event| async {
        match event {
            Finalize::Apply(berth) => apply(&berth, context).await,
            Finalize::Cleanup(berth) => {
                unlabel_unused(context, &namespace, Some(&berth.name_any())).await?;
                Ok(Action::await_change())
            }
        }
    })
    .await
    .map_err(|e| Error::Finalizer(e.to_string()))
}

async fn apply(berth: &Berth, context: &Context) -> Result<Action, Error> {
    let namespace = berth.namespace().unwrap_or_default();
    let named = desired::sources_named(berth);
    let (sources, unlabelled) = read_sources(&context.client, &namespace, &named).await?;
    for (kind, name) in &unlabelled {
        patch_source(&context.client, &namespace, *kind, name, true).await?;
    }
    // Sources only stop being named when a spec changes (or a Berth goes).
    let spec_changed =
        berth.status.as_ref().and_then(|s| s.observed_generation) != berth.metadata.generation;
    if spec_changed {
        unlabel_unused(context, &namespace, None).await?;
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let pins = match pin(berth, &namespace, context).await {
        Ok(pins) => pins,
        Err(problem) => {
            write_status(context, berth, status::degraded(berth, &problem, None)).await?;
            return Ok(Action::requeue(Duration::from_secs(60)));
        }
    };
    let mut plan = match desired::plan(berth, &namespace, &sources, &pins, now) {
        Ok(plan) => plan,
        Err(problem) => {
            write_status(context, berth, status::degraded(berth, &problem, None)).await?;
            // A source that exists carries the label, so its edits arrive by watch; one
            // that does not exist yet has no label to be watched by: look again soon.
            let again = if problem.reason == "SourceMissing" {
                10
            } else {
                300
            };
            return Ok(Action::requeue(Duration::from_secs(again)));
        }
    };
    let owner = owner_reference(berth);
    desired::own(&mut plan.desired.objects, &owner);
    let cluster = context.cluster.in_namespace(&namespace);
    let keep = berth.spec.keep.max(1) as usize;
    let options = ApplyOptions {
        manager: MANAGER.into(),
        force: false,
        keep,
        wait: None,
        owner: Some(owner),
    };
    if let Err(e) = cluster
        .deploy(&plan.desired, &options, None, &mut |_| {})
        .await
    {
        let problem = Problem {
            reason: reason_of(&e),
            message: e.to_string(),
        };
        write_status(
            context,
            berth,
            status::degraded(berth, &problem, Some(&plan)),
        )
        .await?;
        return Ok(Action::requeue(Duration::from_secs(30)));
    }
    let settled = cluster.settle(&plan.desired, keep).await?;
    let again = match &settled {
        Settled::Progressing(_) => Duration::from_secs(5),
        _ => Duration::from_secs(300),
    };
    write_status(context, berth, status::applied(berth, &plan, &settled)).await?;
    Ok(Action::requeue(again))
}

/// The digests of the components with `pin: true`: recorded in status for the same
/// reference, or one manifest HEAD each (concurrently) for those not pinned yet.
async fn pin(berth: &Berth, namespace: &str, context: &Context) -> Result<desired::Pins, Problem> {
    let requests = desired::pin_requests(berth, namespace);
    let answers = futures_util::future::join_all(requests.iter().map(|r| async {
        match &r.known {
            Some(digest) => Ok(digest.clone()),
            None => context.registry.manifest_digest(&r.image).await,
        }
    }))
    .await;
    let mut pins = desired::Pins::new();
    for (request, answer) in requests.into_iter().zip(answers) {
        let digest = answer.map_err(|e| Problem {
            reason: "PinFailed",
            message: format!(
                "spec.images.{}: cannot pin `{}`: {e}",
                request.component, request.image
            ),
        })?;
        pins.insert(request.component, digest);
    }
    Ok(pins)
}

/// The condition reason for a cluster error: what a status reader can act on.
fn reason_of(error: &ClusterError) -> &'static str {
    match error {
        ClusterError::Conflict { .. } => "Conflict",
        ClusterError::Forbidden { .. } => "Forbidden",
        ClusterError::Invalid { .. } => "Invalid",
        ClusterError::Timeout { .. } | ClusterError::Unreachable { .. } => "Unreachable",
        ClusterError::Plan(_) => "UnknownKind",
        _ => "ApplyFailed",
    }
}

fn owner_reference(berth: &Berth) -> Value {
    json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "Berth",
        "name": berth.name_any(),
        "uid": berth.uid().unwrap_or_default(),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// The data of every named source (`None` for a missing one), and the existing
/// sources that do not carry the source label yet.
async fn read_sources(
    client: &Client,
    namespace: &str,
    named: &[(SourceKind, String)],
) -> Result<(Sources, Vec<(SourceKind, String)>), Error> {
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let mut out = Sources::new();
    let mut unlabelled = Vec::new();
    let labelled = |labels: Option<&std::collections::BTreeMap<String, String>>| {
        labels.and_then(|l| l.get(SOURCE_LABEL)).map(String::as_str) == Some("true")
    };
    for (kind, name) in named {
        let data = match kind {
            SourceKind::ConfigMap => maps.get_opt(name).await?.map(|cm| {
                if !labelled(cm.metadata.labels.as_ref()) {
                    unlabelled.push((*kind, name.clone()));
                }
                let mut data: std::collections::BTreeMap<String, Vec<u8>> = cm
                    .data
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.into_bytes()))
                    .collect();
                for (k, v) in cm.binary_data.unwrap_or_default() {
                    data.insert(k, v.0);
                }
                data
            }),
            SourceKind::Secret => secrets.get_opt(name).await?.map(|s| {
                if !labelled(s.metadata.labels.as_ref()) {
                    unlabelled.push((*kind, name.clone()));
                }
                let mut data: std::collections::BTreeMap<String, Vec<u8>> = s
                    .data
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.0))
                    .collect();
                for (k, v) in s.string_data.unwrap_or_default() {
                    data.insert(k, v.into_bytes());
                }
                data
            }),
        };
        out.insert((*kind, name.clone()), data);
    }
    Ok((out, unlabelled))
}

fn source_body(kind: SourceKind, name: &str, namespace: &str, labelled: bool) -> Value {
    let mut body = json!({
        "apiVersion": "v1",
        "kind": match kind { SourceKind::ConfigMap => "ConfigMap", SourceKind::Secret => "Secret" },
        "metadata": {"name": name, "namespace": namespace},
    });
    if labelled {
        body["metadata"]["labels"] = json!({ SOURCE_LABEL: "true" });
    }
    body
}

async fn patch_source(
    client: &Client,
    namespace: &str,
    kind: SourceKind,
    name: &str,
    labelled: bool,
) -> Result<(), Error> {
    let params = PatchParams::apply(SOURCE_MANAGER).force();
    let body = source_body(kind, name, namespace, labelled);
    match kind {
        SourceKind::ConfigMap => {
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
            api.patch(name, &params, &Patch::Apply(&body)).await?;
        }
        SourceKind::Secret => {
            let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
            api.patch(name, &params, &Patch::Apply(&body)).await?;
        }
    }
    Ok(())
}

/// Removes the source label from labelled objects of `namespace` that no `Berth`
/// (but `leaving`, which is being deleted) names any more.
async fn unlabel_unused(
    context: &Context,
    namespace: &str,
    leaving: Option<&str>,
) -> Result<(), Error> {
    let named: BTreeSet<(SourceKind, String)> = context
        .berths
        .state()
        .iter()
        .filter(|b| b.namespace().as_deref() == Some(namespace))
        .filter(|b| Some(b.name_any().as_str()) != leaving && b.meta().deletion_timestamp.is_none())
        .flat_map(|b| desired::sources_named(b))
        .collect();
    let selector = ListParams::default().labels(&format!("{SOURCE_LABEL}=true"));
    let maps: Api<ConfigMap> = Api::namespaced(context.client.clone(), namespace);
    for cm in maps.list_metadata(&selector).await? {
        let name = cm.name_any();
        if !named.contains(&(SourceKind::ConfigMap, name.clone())) {
            patch_source(
                &context.client,
                namespace,
                SourceKind::ConfigMap,
                &name,
                false,
            )
            .await?;
        }
    }
    let secrets: Api<Secret> = Api::namespaced(context.client.clone(), namespace);
    for s in secrets.list_metadata(&selector).await? {
        let name = s.name_any();
        if !named.contains(&(SourceKind::Secret, name.clone())) {
            patch_source(&context.client, namespace, SourceKind::Secret, &name, false).await?;
        }
    }
    Ok(())
}

async fn write_status(
    context: &Context,
    berth: &Berth,
    mut status: crate::types::BerthStatus,
) -> Result<(), Error> {
    let namespace = berth.namespace().unwrap_or_default();
    let api: Api<Berth> = Api::namespaced(context.client.clone(), &namespace);
    // The object a reconcile is handed may lag behind the last status written
    // (the watch is behind under load): compare with the live status, keep its
    // transition times, and write nothing when nothing changed -- otherwise
    // every stale reconcile would write, and every write trigger another.
    let live = api
        .get_status(&berth.name_any())
        .await?
        .status
        .unwrap_or_default();
    for condition in &mut status.conditions {
        if let Some(previous) = live.conditions.iter().find(|c| c.type_ == condition.type_) {
            if previous.status == condition.status {
                condition.last_transition_time = previous.last_transition_time.clone();
            }
        }
    }
    if status == live {
        return Ok(());
    }
    let body = json!({"apiVersion": "berth.dev/v1alpha1", "kind": "Berth", "status": status});
    api.patch_status(
        &berth.name_any(),
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&body),
    )
    .await?;
    Ok(())
}
