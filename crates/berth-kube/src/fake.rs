//! A stand-in for kube-apiserver's answers to the requests an apply session
//! makes — discovery of `v1` and `apps/v1`, server-side apply (and its dry
//! run), get, create, list by label (whole or as metadata), delete — so that
//! [`crate::Applier`]'s and the collector's tests run in milliseconds and count every request.
//! What it does not do as the real server does (a patch is merged into the
//! object, managed fields are one entry per manager, a Deployment rolls out at
//! once) is what these tests do not judge: the real server is tested on the
//! plane (`crates/berth/tests/it/cluster.rs`, `controller.rs`).

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use berth_core::cluster::{fingerprint, Fingerprint, ObjectRef};
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};

use crate::remember::Watches;

/// The fake's objects and the requests it answered.
#[derive(Default)]
pub(crate) struct State {
    /// `(resource path without name, name)` → object.
    objects: BTreeMap<(String, String), Value>,
    /// `METHOD PATH` of every request, in order.
    pub(crate) requests: Vec<String>,
    version: u64,
}

/// The fake server: a [`kube::Client`] for it, and its state.
#[derive(Clone, Default)]
pub(crate) struct FakeApi(pub(crate) Arc<Mutex<State>>);

impl FakeApi {
    pub(crate) fn client(&self) -> kube::Client {
        let state = self.clone();
        let service = tower::service_fn(move |request: Request<kube::client::Body>| {
            let state = state.clone();
            async move { Ok::<_, Infallible>(state.answer(request).await) }
        });
        kube::Client::new(service, "shop")
    }

    /// The requests answered since the last call, as `METHOD PATH`.
    pub(crate) fn take_requests(&self) -> Vec<String> {
        std::mem::take(&mut self.0.lock().unwrap().requests)
    }

    /// Puts `object` into `collection` as if created there (another client's
    /// object: a Pod, a workload).
    pub(crate) fn put(&self, collection: &str, object: Value) {
        let mut state = self.0.lock().unwrap();
        let name = object["metadata"]["name"].as_str().unwrap().to_string();
        let object = state.stamped(object, &name, None);
        state.objects.insert((collection.to_string(), name), object);
    }

    /// Sets the top-level `field` of a live object as another field manager
    /// (`kubectl edit`) would: the field's ownership moves to that manager, so
    /// berth's managed-fields entry, and its fingerprint, change.
    pub(crate) fn edit(&self, collection: &str, name: &str, field: &str, value: Value) {
        let mut state = self.0.lock().unwrap();
        state.version += 1;
        let version = state.version.to_string();
        let object = state
            .objects
            .get_mut(&(collection.to_string(), name.to_string()))
            .unwrap();
        object[field] = value;
        object["metadata"]["resourceVersion"] = json!(version);
        let owned = format!("f:{field}");
        let entries = object["metadata"]["managedFields"].as_array_mut().unwrap();
        for entry in entries.iter_mut() {
            if let Some(fields) = entry["fieldsV1"].as_object_mut() {
                fields.remove(&owned);
            }
        }
        entries.push(
            json!({"manager": "kubectl-edit", "operation": "Update", "fieldsV1": {owned: {}}}),
        );
    }

    async fn answer(&self, request: Request<kube::client::Body>) -> Response<Full<Bytes>> {
        let method = request.method().to_string();
        let path = request.uri().path().to_string();
        let query = request.uri().query().unwrap_or_default().to_string();
        let metadata_only = request
            .headers()
            .get("accept")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("PartialObjectMetadata"));
        let body = request
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let mut state = self.0.lock().unwrap();
        state.requests.push(format!("{method} {path}"));
        let (status, answer) = state.handle(&method, &path, &query, metadata_only, body);
        Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(answer.to_string())))
            .unwrap()
    }
}

impl State {
    /// Deletes an object as another client would.
    pub(crate) fn remove(&mut self, collection: &str, name: &str) {
        self.objects
            .remove(&(collection.to_string(), name.to_string()));
    }

    fn handle(
        &mut self,
        method: &str,
        path: &str,
        query: &str,
        metadata_only: bool,
        body: Value,
    ) -> (StatusCode, Value) {
        if let Some(list) = discovery(path) {
            return (StatusCode::OK, list);
        }
        if path.matches('/').count() <= 3 {
            return not_found(path); // a group version this server does not serve
        }
        let (collection, name) = match path.rsplit_once('/') {
            Some((c, n)) if is_named(path) => (c.to_string(), Some(n.to_string())),
            _ => (path.to_string(), None),
        };
        let key = |name: &str| (collection.clone(), name.to_string());
        match (method, name) {
            ("GET", Some(name)) => match self.objects.get(&key(&name)) {
                Some(object) => (StatusCode::OK, object.clone()),
                None => not_found(&name),
            },
            ("GET", None) => (StatusCode::OK, self.list(&collection, query, metadata_only)),
            ("PATCH", Some(name)) => {
                let dry = query.contains("dryRun=All");
                let manager = param(query, "fieldManager").unwrap_or_default();
                let live = self.objects.get(&key(&name)).cloned();
                let merged = self.applied(live, body, &manager, &name);
                if !dry {
                    self.objects.insert(key(&name), merged.clone());
                }
                (StatusCode::OK, merged)
            }
            ("POST", None) => {
                let name = body["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                if self.objects.contains_key(&key(&name)) {
                    return (StatusCode::CONFLICT, status(409, "AlreadyExists", &name));
                }
                let created = self.stamped(body, &name, None);
                self.objects.insert(key(&name), created.clone());
                (StatusCode::CREATED, created)
            }
            ("DELETE", Some(name)) => match self.objects.remove(&key(&name)) {
                Some(object) => (StatusCode::OK, object),
                None => not_found(&name),
            },
            _ => (
                StatusCode::METHOD_NOT_ALLOWED,
                status(405, "MethodNotAllowed", path),
            ),
        }
    }

    /// A server-side apply of `patch` by `manager`: merged into what lives, the
    /// manager's entry set, a Deployment rolled out.
    fn applied(&mut self, live: Option<Value>, patch: Value, manager: &str, name: &str) -> Value {
        let mut object = live.clone().unwrap_or_else(|| json!({}));
        merge(&mut object, &patch);
        let mut entries: Vec<Value> = live
            .as_ref()
            .and_then(|l| l["metadata"]["managedFields"].as_array().cloned())
            .unwrap_or_default();
        entries.retain(|e| e["manager"] != manager);
        entries.push(json!({"manager": manager, "operation": "Apply", "fieldsV1": fields(&patch)}));
        if object["kind"] == "Deployment" {
            let replicas = object["spec"]["replicas"].as_u64().unwrap_or(1);
            object["status"] = json!({"observedGeneration": 1, "replicas": replicas,
                "updatedReplicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas,
                "conditions": [{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]});
        }
        let mut object = self.stamped(object, name, live.as_ref());
        object["metadata"]["managedFields"] = Value::Array(entries);
        object
    }

    /// `object` with the metadata the server keeps: uid, resourceVersion, generation.
    fn stamped(&mut self, mut object: Value, name: &str, live: Option<&Value>) -> Value {
        self.version += 1;
        let uid = live
            .and_then(|l| l["metadata"]["uid"].as_str())
            .map_or_else(|| format!("uid-{name}-{}", self.version), str::to_string);
        let metadata = &mut object["metadata"];
        metadata["uid"] = json!(uid);
        metadata["resourceVersion"] = json!(self.version.to_string());
        metadata["generation"] = json!(1);
        object
    }

    fn list(&self, collection: &str, query: &str, metadata_only: bool) -> Value {
        let selector = param(query, "labelSelector").unwrap_or_default();
        let items: Vec<Value> = self
            .objects
            .iter()
            .filter(|((c, _), o)| c == collection && selects(&selector, o))
            .map(|(_, o)| match metadata_only {
                true => json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": o["metadata"]}),
                false => o.clone(),
            })
            .collect();
        let kind = if metadata_only {
            "PartialObjectMetadataList"
        } else {
            "List"
        };
        json!({"apiVersion": "v1", "kind": kind, "metadata": {"resourceVersion": self.version.to_string()}, "items": items})
    }
}

/// The fake's view for [`Watches`]: what a metadata watch of its objects shows.
impl Watches for FakeApi {
    fn fingerprint(&self, object: &ObjectRef) -> Option<Fingerprint> {
        fingerprint(&self.live(object)??, "berth")
    }

    fn version(&self, object: &ObjectRef) -> Option<String> {
        Some(
            self.live(object)??["metadata"]["resourceVersion"]
                .as_str()?
                .to_string(),
        )
    }

    fn generations(
        &self,
        kind: &str,
        namespace: &str,
        project: &str,
    ) -> Option<Vec<(String, String)>> {
        let state = self.0.lock().unwrap();
        let collection = format!(
            "/api/v1/namespaces/{namespace}/{}s",
            kind.to_ascii_lowercase()
        );
        let selector = format!("berth.dev/project={project},berth.dev/config");
        Some(
            state
                .objects
                .iter()
                .filter(|((c, _), o)| *c == collection && selects(&selector, o))
                .map(|((_, name), o)| {
                    let config = o["metadata"]["labels"]["berth.dev/config"]
                        .as_str()
                        .unwrap_or_default();
                    (config.to_string(), name.clone())
                })
                .collect(),
        )
    }
}

impl FakeApi {
    /// The live object `object` names (`Some(None)`: known absent).
    fn live(&self, object: &ObjectRef) -> Option<Option<Value>> {
        let (group_path, plural) = match object.kind.as_str() {
            "Deployment" => ("/apis/apps/v1", "deployments"),
            "ConfigMap" => ("/api/v1", "configmaps"),
            "Secret" => ("/api/v1", "secrets"),
            _ => return None,
        };
        let namespace = object.namespace.as_deref().unwrap_or("shop");
        let collection = format!("{group_path}/namespaces/{namespace}/{plural}");
        let state = self.0.lock().unwrap();
        Some(
            state
                .objects
                .get(&(collection, object.name.clone()))
                .cloned(),
        )
    }
}

fn is_named(path: &str) -> bool {
    // /api/v1/namespaces/NS/PLURAL/NAME or /apis/G/V/namespaces/NS/PLURAL/NAME
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match parts.first() {
        Some(&"api") => parts.len() == 6,
        Some(&"apis") => parts.len() == 7,
        _ => false,
    }
}

fn discovery(path: &str) -> Option<Value> {
    let resource = |name: &str, kind: &str| {
        json!({"name": name, "singularName": "", "namespaced": true, "kind": kind,
               "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]})
    };
    let list = |group_version: &str, resources: Vec<Value>| {
        Some(
            json!({"kind": "APIResourceList", "groupVersion": group_version, "resources": resources}),
        )
    };
    match path {
        "/api/v1" => list(
            "v1",
            vec![
                resource("configmaps", "ConfigMap"),
                resource("secrets", "Secret"),
                resource("pods", "Pod"),
            ],
        ),
        "/apis/apps/v1" => list(
            "apps/v1",
            vec![
                resource("deployments", "Deployment"),
                resource("replicasets", "ReplicaSet"),
                resource("statefulsets", "StatefulSet"),
                resource("daemonsets", "DaemonSet"),
            ],
        ),
        "/apis/batch/v1" => list(
            "batch/v1",
            vec![resource("jobs", "Job"), resource("cronjobs", "CronJob")],
        ),
        _ => None,
    }
}

fn param(query: &str, key: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == key).then(|| percent_decode(v))
    })
}

fn percent_decode(text: &str) -> String {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("20");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(b' '));
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
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether `object`'s labels meet `selector` (`k=v` and `k` terms, comma-separated).
fn selects(selector: &str, object: &Value) -> bool {
    let labels = &object["metadata"]["labels"];
    selector
        .split(',')
        .filter(|t| !t.is_empty())
        .all(|term| match term.split_once('=') {
            Some((k, v)) => labels[k] == v,
            None => labels.get(term).is_some(),
        })
}

fn merge(into: &mut Value, patch: &Value) {
    match (into, patch) {
        (Value::Object(into), Value::Object(patch)) => {
            for (k, v) in patch {
                merge(into.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (into, patch) => *into = patch.clone(),
    }
}

/// The fields a patch sets, as managedFields' `fieldsV1` writes them.
fn fields(patch: &Value) -> Value {
    match patch {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (format!("f:{k}"), fields(v)))
                .collect(),
        ),
        _ => json!({}),
    }
}

fn not_found(name: &str) -> (StatusCode, Value) {
    (StatusCode::NOT_FOUND, status(404, "NotFound", name))
}

fn status(code: u16, reason: &str, name: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
           "reason": reason, "message": format!("{name}: {reason}")})
}
