//! An in-memory Kubernetes API server for the apply/diff/rollback tests: no
//! API server can run on the CI machine, and the maintained in-memory backend
//! for kube::Api (kube-fake-client 0.3) is built on kube 4.2 while berth uses
//! kube 5, and has no server-side dry run. This one speaks HTTP on 127.0.0.1,
//! so the real `berth` binary and kube-rs client are what is tested.
//!
//! It implements what berth uses: discovery (`/api/v1`, `/apis/G/V`), get,
//! list (label selectors with `k=v` and `k`), delete, and server-side apply
//! with field ownership per manager (leaf fields; lists of named items merge
//! by name, other lists are atomic), conflicts (409 with the fields and
//! managers), `force`, `dryRun`, generation and resourceVersion. A simulated
//! controller sets workload status after each apply: healthy, stuck
//! (ProgressDeadlineExceeded) or slow, per workload name.

use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

/// Namespaces that exist from the start (others must be applied).
const PRESENT_NAMESPACES: &[&str] = &["default", "dev", "elsewhere"];

/// A kind the fake serves.
#[derive(Clone, Debug)]
struct KindDef {
    group: String,
    version: String,
    kind: String,
    plural: String,
    namespaced: bool,
}

#[derive(Clone, Debug)]
struct Stored {
    value: Value,
    /// Manager → the leaf fields it owns.
    owners: BTreeMap<String, BTreeSet<String>>,
}

/// How the simulated controller treats a workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behaviour {
    /// Rolled out at once.
    Healthy,
    /// Never progresses: ProgressDeadlineExceeded.
    Stuck,
    /// Progressing forever (for timeouts).
    Slow,
}

#[derive(Default)]
struct State {
    kinds: Vec<KindDef>,
    objects: BTreeMap<(String, String, String), Stored>,
    resource_version: u64,
    behaviour: BTreeMap<String, Behaviour>,
    /// `(verb, plural)` pairs answered with 403.
    forbidden: Vec<(String, String)>,
    /// Every non-dry-run apply, in order: `Kind/name`.
    log: Vec<String>,
}

pub struct FakeApi {
    pub url: String,
    state: Arc<Mutex<State>>,
    _runtime: tokio::runtime::Runtime,
}

fn builtin_kinds() -> Vec<KindDef> {
    let k = |group: &str, version: &str, kind: &str, plural: &str, namespaced| KindDef {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
        namespaced,
    };
    vec![
        k("", "v1", "Namespace", "namespaces", false),
        k("", "v1", "ConfigMap", "configmaps", true),
        k("", "v1", "Secret", "secrets", true),
        k("", "v1", "Service", "services", true),
        k("", "v1", "Pod", "pods", true),
        k("", "v1", "ServiceAccount", "serviceaccounts", true),
        k("apps", "v1", "Deployment", "deployments", true),
        k("apps", "v1", "StatefulSet", "statefulsets", true),
        k("apps", "v1", "DaemonSet", "daemonsets", true),
        k("batch", "v1", "Job", "jobs", true),
        k(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            false,
        ),
    ]
}

impl FakeApi {
    pub fn start() -> FakeApi {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let state = Arc::new(Mutex::new(State {
            kinds: builtin_kinds(),
            ..State::default()
        }));
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = state.clone();
        runtime.spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let state = shared.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| handle(req, state.clone()));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        FakeApi {
            url: format!("http://{addr}"),
            state,
            _runtime: runtime,
        }
    }

    /// A kubeconfig for this server (context namespace `dev`).
    pub fn kubeconfig(&self, dir: &Path) -> PathBuf {
        super::fake_kube::write_kubeconfig(dir, &self.url)
    }

    pub fn behave(&self, workload: &str, behaviour: Behaviour) {
        self.state
            .lock()
            .unwrap()
            .behaviour
            .insert(workload.into(), behaviour);
    }

    pub fn forbid(&self, verb: &str, plural: &str) {
        self.state
            .lock()
            .unwrap()
            .forbidden
            .push((verb.into(), plural.into()));
    }

    /// Every object of a kind (by plural) in a namespace (`""` for cluster-scoped).
    pub fn objects(&self, plural: &str, namespace: &str) -> Vec<Value> {
        self.state
            .lock()
            .unwrap()
            .objects
            .iter()
            .filter(|((p, ns, _), _)| p == plural && ns == namespace)
            .map(|(_, s)| s.value.clone())
            .collect()
    }

    pub fn object(&self, plural: &str, namespace: &str, name: &str) -> Option<Value> {
        let key = (plural.to_string(), namespace.to_string(), name.to_string());
        self.state
            .lock()
            .unwrap()
            .objects
            .get(&key)
            .map(|s| s.value.clone())
    }

    /// The order of real (not dry-run) applies.
    pub fn log(&self) -> Vec<String> {
        self.state.lock().unwrap().log.clone()
    }

    /// Applies as another field manager (someone else's kubectl).
    pub fn apply_as(&self, manager: &str, plural: &str, namespace: &str, body: Value) {
        let mut state = self.state.lock().unwrap();
        let def = state
            .kinds
            .iter()
            .find(|k| k.plural == plural)
            .cloned()
            .unwrap();
        let name = body["metadata"]["name"].as_str().unwrap().to_string();
        apply(
            &mut state, &def, namespace, &name, body, manager, true, false,
        )
        .unwrap();
    }
}

fn respond(status: StatusCode, body: Value) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason, "code": code})
}

/// `%xx` and `+` decoding of a query value.
pub fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
                out.push(u8::from_str_radix(hex, 16).unwrap());
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap()
}

/// The decoded query parameters of a request.
pub fn query<B>(req: &Request<B>) -> Vec<(String, String)> {
    req.uri()
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn resource_list(state: &State, group: &str, version: &str) -> Option<Value> {
    let resources: Vec<Value> = state
        .kinds
        .iter()
        .filter(|k| k.group == group && k.version == version)
        .map(|k| {
            json!({"name": k.plural, "singularName": "", "namespaced": k.namespaced, "kind": k.kind,
                        "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]})
        })
        .collect();
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    (!resources.is_empty()).then(|| json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}))
}

async fn handle(
    req: Request<Incoming>,
    state: Arc<Mutex<State>>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let method = req.method().clone();
    let params = query(&req);
    let path: Vec<String> = req
        .uri()
        .path()
        .trim_matches('/')
        .split('/')
        .map(str::to_string)
        .collect();
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let mut state = state.lock().unwrap();
    let p: Vec<&str> = path.iter().map(String::as_str).collect();
    // Discovery.
    let discovery = match p[..] {
        ["api", "v1"] => Some(("", "v1")),
        ["apis", group, version] => Some((group, version)),
        _ => None,
    };
    if let Some((group, version)) = discovery {
        return Ok(match resource_list(&state, group, version) {
            Some(list) => respond(StatusCode::OK, list),
            None => respond(
                StatusCode::NOT_FOUND,
                status(
                    404,
                    "NotFound",
                    "the server could not find the requested resource",
                ),
            ),
        });
    }
    // Object paths: (group, version, namespace, plural, name).
    let (group, version, rest) = match p[..] {
        ["api", "v1", ref rest @ ..] => ("", "v1", rest.to_vec()),
        ["apis", g, v, ref rest @ ..] => (g, v, rest.to_vec()),
        _ => {
            return Ok(respond(
                StatusCode::NOT_FOUND,
                status(404, "NotFound", "unknown path"),
            ))
        }
    };
    let (namespace, plural, name) = match rest[..] {
        ["namespaces", ns, plural] => (ns, plural, None),
        ["namespaces", ns, plural, name] => (ns, plural, Some(name)),
        [plural] => ("", plural, None),
        [plural, name] => ("", plural, Some(name)),
        _ => {
            return Ok(respond(
                StatusCode::NOT_FOUND,
                status(404, "NotFound", "unknown path"),
            ))
        }
    };
    let Some(def) = state
        .kinds
        .iter()
        .find(|k| k.group == group && k.version == version && k.plural == plural)
        .cloned()
    else {
        return Ok(respond(
            StatusCode::NOT_FOUND,
            status(
                404,
                "NotFound",
                "the server could not find the requested resource",
            ),
        ));
    };
    let verb = match (&method, name) {
        (&Method::GET, None) => "list",
        (&Method::GET, Some(_)) => "get",
        (&Method::PATCH, _) => "patch",
        (&Method::DELETE, _) => "delete",
        _ => "other",
    };
    if state
        .forbidden
        .iter()
        .any(|(v, p)| v == verb && p == plural)
    {
        let message = format!("{plural} is forbidden: User \"dev\" cannot {verb} resource \"{plural}\" in API group \"{group}\" in the namespace \"{namespace}\"");
        return Ok(respond(
            StatusCode::FORBIDDEN,
            status(403, "Forbidden", &message),
        ));
    }
    let key = |name: &str| (def.plural.clone(), namespace.to_string(), name.to_string());
    Ok(match (verb, name) {
        ("list", _) => {
            let selector = params
                .iter()
                .find(|(k, _)| k == "labelSelector")
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            let items: Vec<Value> = state
                .objects
                .iter()
                .filter(|((p, ns, _), _)| *p == def.plural && ns == namespace)
                .filter(|(_, s)| matches_selector(&s.value, &selector))
                .map(|(_, s)| s.value.clone())
                .collect();
            respond(
                StatusCode::OK,
                json!({"kind": format!("{}List", def.kind), "apiVersion": def_api_version(&def), "metadata": {"resourceVersion": state.resource_version.to_string()}, "items": items}),
            )
        }
        ("get", Some(name)) => match state.objects.get_mut(&key(name)) {
            Some(stored) => {
                let value = stored.value.clone();
                respond(StatusCode::OK, value)
            }
            None => respond(
                StatusCode::NOT_FOUND,
                status(404, "NotFound", &format!("{plural} \"{name}\" not found")),
            ),
        },
        ("delete", Some(name)) => match state.objects.remove(&key(name)) {
            Some(_) => respond(
                StatusCode::OK,
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}),
            ),
            None => respond(
                StatusCode::NOT_FOUND,
                status(404, "NotFound", &format!("{plural} \"{name}\" not found")),
            ),
        },
        ("patch", Some(name)) => {
            let manager = params
                .iter()
                .find(|(k, _)| k == "fieldManager")
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            let force = params.iter().any(|(k, v)| k == "force" && v == "true");
            let dry_run = params.iter().any(|(k, _)| k == "dryRun");
            let patch: Value = match serde_json::from_slice(&body) {
                Ok(v) => v,
                Err(e) => {
                    return Ok(respond(
                        StatusCode::BAD_REQUEST,
                        status(400, "BadRequest", &e.to_string()),
                    ))
                }
            };
            match apply(
                &mut state, &def, namespace, name, patch, &manager, force, dry_run,
            ) {
                Ok((value, created)) => respond(
                    if created {
                        StatusCode::CREATED
                    } else {
                        StatusCode::OK
                    },
                    value,
                ),
                Err((code, body)) => respond(code, body),
            }
        }
        _ => respond(
            StatusCode::METHOD_NOT_ALLOWED,
            status(405, "MethodNotAllowed", "not supported by the fake"),
        ),
    })
}

fn def_api_version(def: &KindDef) -> String {
    if def.group.is_empty() {
        def.version.clone()
    } else {
        format!("{}/{}", def.group, def.version)
    }
}

fn matches_selector(object: &Value, selector: &str) -> bool {
    let labels = &object["metadata"]["labels"];
    selector
        .split(',')
        .filter(|s| !s.is_empty())
        .all(|term| match term.split_once('=') {
            Some((k, v)) => labels[k].as_str() == Some(v),
            None => labels.get(term).is_some(),
        })
}

/// Leaf fields of an applied configuration: `.a.b`, `.list[name="x"].c`; other lists are leaves.
fn leaves(value: &Value, prefix: &str, out: &mut BTreeMap<String, Value>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                leaves(v, &format!("{prefix}.{k}"), out);
            }
        }
        Value::Array(items)
            if !items.is_empty()
                && items
                    .iter()
                    .all(|i| i.get("name").and_then(Value::as_str).is_some()) =>
        {
            for item in items {
                let name = item["name"].as_str().unwrap_or_default();
                leaves(item, &format!("{prefix}[name=\"{name}\"]"), out);
            }
        }
        other => {
            out.insert(prefix.to_string(), other.clone());
        }
    }
}

/// The value at a leaf path, if present.
fn at<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    let mut current = value;
    for segment in split_path(path) {
        current = match segment {
            Segment::Key(k) => current.get(k)?,
            Segment::Named(n) => current.as_array()?.iter().find(|i| i["name"] == n)?,
        };
    }
    Some(current)
}

enum Segment<'p> {
    Key(&'p str),
    Named(&'p str),
}

fn split_path(path: &str) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        match part.split_once("[name=\"") {
            Some((key, rest)) => {
                out.push(Segment::Key(key));
                out.push(Segment::Named(rest.trim_end_matches("\"]")));
            }
            None => out.push(Segment::Key(part)),
        }
    }
    out
}

/// Removes a leaf path from an object (fields a manager stopped applying).
fn remove(value: &mut Value, path: &str) {
    let segments = split_path(path);
    let Some((last, parents)) = segments.split_last() else {
        return;
    };
    let mut current = value;
    for segment in parents {
        current = match segment {
            Segment::Key(k) => match current.get_mut(*k) {
                Some(v) => v,
                None => return,
            },
            Segment::Named(n) => match current
                .as_array_mut()
                .and_then(|a| a.iter_mut().find(|i| i["name"] == *n))
            {
                Some(v) => v,
                None => return,
            },
        };
    }
    match last {
        Segment::Key(k) => {
            current.as_object_mut().map(|m| m.remove(*k));
        }
        Segment::Named(n) => {
            if let Some(items) = current.as_array_mut() {
                items.retain(|i| i["name"] != *n);
            }
        }
    }
}

/// Deep merge: maps recursively, named lists by name, everything else replaced.
fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                merge(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (Value::Array(t), Value::Array(p))
            if p.iter()
                .all(|i| i.get("name").and_then(Value::as_str).is_some())
                && !p.is_empty() =>
        {
            for item in p {
                match t.iter_mut().find(|i| i["name"] == item["name"]) {
                    Some(existing) => merge(existing, item),
                    None => t.push(item.clone()),
                }
            }
        }
        (t, p) => *t = p.clone(),
    }
}

#[allow(clippy::too_many_arguments)]
fn apply(
    state: &mut State,
    def: &KindDef,
    namespace: &str,
    name: &str,
    patch: Value,
    manager: &str,
    force: bool,
    dry_run: bool,
) -> Result<(Value, bool), (StatusCode, Value)> {
    // The NamespaceLifecycle admission: namespaced objects need their namespace.
    let namespace_exists = PRESENT_NAMESPACES.contains(&namespace)
        || state.objects.contains_key(&(
            "namespaces".to_string(),
            String::new(),
            namespace.to_string(),
        ));
    if def.namespaced && !namespace_exists {
        return Err((
            StatusCode::NOT_FOUND,
            status(
                404,
                "NotFound",
                &format!("namespaces \"{namespace}\" not found"),
            ),
        ));
    }
    let key = (def.plural.clone(), namespace.to_string(), name.to_string());
    let existing = state.objects.get(&key).cloned();
    let created = existing.is_none();
    let mut stored = existing.unwrap_or(Stored {
        value: json!({}),
        owners: BTreeMap::new(),
    });
    let mut fields = BTreeMap::new();
    let mut config = patch.clone();
    // Status is the controllers' to write.
    if let Some(map) = config.as_object_mut() {
        map.remove("status");
    }
    leaves(&config, "", &mut fields);
    fields.retain(|path, _| {
        !matches!(
            path.as_str(),
            ".apiVersion" | ".kind" | ".metadata.name" | ".metadata.namespace"
        )
    });
    // Conflicts: a field someone else owns, with a different value.
    let mut conflicts = Vec::new();
    for (path, value) in &fields {
        for (other, owned) in &stored.owners {
            if other != manager && owned.contains(path) && at(&stored.value, path) != Some(value) {
                conflicts.push(json!({"reason": "FieldManagerConflict", "message": format!("conflict with \"{other}\" using {}", def_api_version(def)), "field": path}));
            }
        }
    }
    if !conflicts.is_empty() && !force {
        return Err((
            StatusCode::CONFLICT,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "code": 409, "reason": "Conflict",
            "message": format!("Apply failed with {} conflict(s)", conflicts.len()), "details": {"causes": conflicts}}),
        ));
    }
    let before = stored.value.clone();
    // Fields this manager applied before and no longer does go, unless someone else owns them.
    let previous = stored.owners.get(manager).cloned().unwrap_or_default();
    for path in previous.difference(&fields.keys().cloned().collect()) {
        if !stored
            .owners
            .iter()
            .any(|(m, owned)| m != manager && owned.contains(path))
        {
            remove(&mut stored.value, path);
        }
    }
    for owned in stored.owners.values_mut() {
        owned.retain(|p| !fields.contains_key(p));
    }
    stored
        .owners
        .insert(manager.to_string(), fields.keys().cloned().collect());
    merge(&mut stored.value, &config);
    let value = &mut stored.value;
    value["apiVersion"] = json!(def_api_version(def));
    value["kind"] = json!(def.kind);
    value["metadata"]["name"] = json!(name);
    if def.namespaced {
        value["metadata"]["namespace"] = json!(namespace);
    }
    if created {
        value["metadata"]["uid"] = json!(format!("uid-{}-{name}", def.plural));
        value["metadata"]["creationTimestamp"] = json!("2026-11-30T00:00:00Z");
        value["metadata"]["generation"] = json!(1);
    } else if before.get("spec") != value.get("spec") {
        let generation = before["metadata"]["generation"].as_i64().unwrap_or(1) + 1;
        value["metadata"]["generation"] = json!(generation);
    }
    if created || before != *value {
        state.resource_version += 1;
        value["metadata"]["resourceVersion"] = json!(state.resource_version.to_string());
    }
    value["metadata"]["managedFields"] = json!(stored
        .owners
        .keys()
        .map(|m| json!({"manager": m, "operation": "Apply"}))
        .collect::<Vec<_>>());
    if dry_run {
        return Ok((stored.value, created));
    }
    control(state, def, &mut stored.value);
    state.log.push(format!("{}/{name}", def.kind));
    if def.kind == "CustomResourceDefinition" {
        serve_crd(state, &stored.value);
    }
    let result = stored.value.clone();
    state.objects.insert(key, stored);
    Ok((result, created))
}

/// The simulated controllers: workload status and CRD establishment.
fn control(state: &State, def: &KindDef, value: &mut Value) {
    let name = value["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let generation = value["metadata"]["generation"].clone();
    let replicas = value["spec"]["replicas"].as_i64().unwrap_or(1);
    let behaviour = state
        .behaviour
        .get(&name)
        .copied()
        .unwrap_or(Behaviour::Healthy);
    match (def.kind.as_str(), behaviour) {
        ("Deployment", Behaviour::Healthy) => {
            value["status"] = json!({"observedGeneration": generation, "replicas": replicas, "updatedReplicas": replicas, "availableReplicas": replicas, "readyReplicas": replicas});
        }
        ("Deployment", Behaviour::Stuck) => {
            value["status"] = json!({"observedGeneration": generation, "replicas": replicas, "updatedReplicas": 0, "availableReplicas": replicas,
                "conditions": [{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": format!("ReplicaSet \"{name}-7c9f\" has timed out progressing.")}]});
        }
        ("Deployment", Behaviour::Slow) => {
            value["status"] = json!({"observedGeneration": generation, "replicas": replicas, "updatedReplicas": 0, "availableReplicas": replicas});
        }
        ("CustomResourceDefinition", _) => {
            value["status"] = json!({"conditions": [{"type": "Established", "status": "True"}]});
        }
        _ => {}
    }
}

fn serve_crd(state: &mut State, crd: &Value) {
    let group = crd["spec"]["group"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let kind = crd["spec"]["names"]["kind"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let plural = crd["spec"]["names"]["plural"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let namespaced = crd["spec"]["scope"].as_str() != Some("Cluster");
    for version in crd["spec"]["versions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
    {
        let version = version["name"].as_str().unwrap_or_default().to_string();
        if !state
            .kinds
            .iter()
            .any(|k| k.group == group && k.version == version && k.kind == kind)
        {
            state.kinds.push(KindDef {
                group: group.clone(),
                version,
                kind: kind.clone(),
                plural: plural.clone(),
                namespaced,
            });
        }
    }
}
