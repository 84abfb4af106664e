//! Dynamic object operations: any kind the cluster serves, found by discovery
//! (one resource-list request per group version, cached), as JSON values.
//! Every request is bounded by the cluster's request timeout.

use std::future::Future;

use berth_core::cluster::ObjectRef;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::GroupVersion;
use kube::discovery::{pinned_group, ApiResource, Scope};
use serde_json::Value;

use crate::connect::Cluster;
use crate::error::{explain, ClusterError};

impl Cluster {
    /// Runs one request, or reports a timeout naming `action`.
    pub(crate) async fn timed<T>(
        &self,
        action: impl FnOnce() -> String,
        request: impl Future<Output = Result<T, ClusterError>>,
    ) -> Result<T, ClusterError> {
        tokio::time::timeout(self.request_timeout, request)
            .await
            .unwrap_or_else(|_| {
                Err(ClusterError::Timeout {
                    action: action(),
                    after: self.request_timeout,
                })
            })
    }

    /// The resource serving `kind` of `api_version` and whether it is namespaced;
    /// `None` when the cluster does not serve it.
    pub async fn resource(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<Option<(ApiResource, bool)>, ClusterError> {
        let key = (api_version.to_string(), kind.to_string());
        let cached = berth_io::locked(&self.kinds).get(&key).cloned();
        if let Some(found) = cached {
            return Ok(found);
        }
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        // One request answers for every kind of the group version: all are kept, so
        // the next kind of `v1` (a Secret after a ConfigMap) asks nothing.
        let gv = GroupVersion::gv(group, version);
        let served = self
            .timed(|| format!("discover the {api_version} API"), async {
                match pinned_group(&self.client, &gv).await {
                    Ok(group) => Ok(group.versioned_resources(version)),
                    Err(kube::Error::Discovery(_)) => Ok(Vec::new()),
                    Err(kube::Error::Api(status)) if status.code == 404 => Ok(Vec::new()),
                    Err(e) => Err(explain(
                        e,
                        &self.server,
                        "discover",
                        &format!("the {api_version} API"),
                        "<cluster>",
                    )),
                }
            })
            .await?;
        let mut cache = berth_io::locked(&self.kinds);
        for (resource, caps) in served {
            let namespaced = caps.scope == Scope::Namespaced;
            let key = (api_version.to_string(), resource.kind.clone());
            cache.insert(key, Some((resource, namespaced)));
        }
        Ok(cache.entry(key).or_insert(None).clone())
    }

    /// Forgets discovered kinds (after CRDs are applied, new kinds appear).
    pub fn forget_kinds(&self) {
        {
            let mut cache = berth_io::locked(&self.kinds);
            cache.clear();
        }
    }

    pub(crate) async fn api(
        &self,
        object: &ObjectRef,
    ) -> Result<(Api<DynamicObject>, ApiResource), ClusterError> {
        let Some((resource, namespaced)) = self.resource(&object.api_version, &object.kind).await?
        else {
            return Err(berth_core::cluster::PlanError::UnknownKind {
                api_version: object.api_version.clone(),
                kind: object.kind.clone(),
            }
            .into());
        };
        let api = match (&object.namespace, namespaced) {
            (Some(ns), true) => Api::namespaced_with(self.client.clone(), ns, &resource),
            (None, true) => Api::namespaced_with(self.client.clone(), &self.namespace, &resource),
            (_, false) => Api::all_with(self.client.clone(), &resource),
        };
        Ok((api, resource))
    }

    fn explain(
        &self,
        error: kube::Error,
        verb: &str,
        resource: &ApiResource,
        object: &ObjectRef,
    ) -> ClusterError {
        explain(
            error,
            &self.server,
            verb,
            &plural(resource),
            &namespace_of(object),
        )
    }

    /// Server-side apply as field manager `manager`; returns the object as the
    /// server has it (or would, with `dry_run`). A conflict lists the fields and
    /// their managers.
    pub async fn apply(
        &self,
        object: &ObjectRef,
        body: &Value,
        manager: &str,
        force: bool,
        dry_run: bool,
    ) -> Result<Value, ClusterError> {
        let (api, resource) = self.api(object).await?;
        let mut params = PatchParams::apply(manager);
        params.force = force;
        params.dry_run = dry_run;
        let result = self
            .timed(|| format!("apply {object}"), async {
                Ok(api.patch(&object.name, &params, &Patch::Apply(body)).await)
            })
            .await?;
        match result {
            Ok(applied) => Ok(to_value(applied)),
            Err(kube::Error::Api(status)) if status.code == 409 => {
                let conflicts = status
                    .details
                    .as_ref()
                    .map(|d| {
                        d.causes
                            .iter()
                            .map(|c| (c.field.clone(), manager_of(&c.message)))
                            .collect()
                    })
                    .unwrap_or_default();
                Err(ClusterError::Conflict {
                    object: Box::new(object.clone()),
                    conflicts,
                })
            }
            Err(kube::Error::Api(status))
                if status.code == 404 && status.message.starts_with("namespaces ") =>
            {
                Err(ClusterError::NamespaceMissing {
                    object: Box::new(object.clone()),
                    message: status.message.clone(),
                })
            }
            Err(e) => Err(self.explain(e, "patch", &resource, object)),
        }
    }

    /// The live object, if it exists.
    pub async fn get(&self, object: &ObjectRef) -> Result<Option<Value>, ClusterError> {
        let (api, resource) = self.api(object).await?;
        let found = self
            .timed(|| format!("get {object}"), async {
                Ok(api.get_opt(&object.name).await)
            })
            .await?
            .map_err(|e| self.explain(e, "get", &resource, object))?;
        Ok(found.map(to_value))
    }

    /// The objects of `kind` in `namespace` matching the label `selector`
    /// (`""` for all), whole or as [`Shape::Metadata`].
    pub async fn list(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        selector: &str,
        shape: Shape,
    ) -> Result<Vec<Value>, ClusterError> {
        let probe = ObjectRef {
            api_version: api_version.into(),
            kind: kind.into(),
            name: String::new(),
            namespace: Some(namespace.into()),
        };
        let (api, resource) = self.api(&probe).await?;
        let params = ListParams::default().labels(selector);
        let items = self
            .timed(
                || format!("list {kind} in namespace `{namespace}`"),
                async {
                    Ok(if shape == Shape::Metadata {
                        api.list_metadata(&params).await.map(|list| {
                            list.items
                                .into_iter()
                                .map(|o| serde_json::json!({"metadata": serde_json::to_value(o.metadata).unwrap_or(Value::Null)}))
                                .collect::<Vec<_>>()
                        })
                    } else {
                        api.list(&params)
                            .await
                            .map(|list| list.items.into_iter().map(to_value).collect())
                    })
                },
            )
            .await?
            .map_err(|e| self.explain(e, "list", &resource, &probe))?;
        Ok(items)
    }

    /// Creates an object that must not exist yet (an apply record: two writers of
    /// one sequence number cannot both succeed, so a deposed leader or a second
    /// `berth apply` running at the same time loses instead of overwriting).
    pub(crate) async fn create(
        &self,
        object: &ObjectRef,
        body: &Value,
        manager: &str,
    ) -> Result<Value, ClusterError> {
        let (api, resource) = self.api(object).await?;
        let dynamic: DynamicObject =
            serde_json::from_value(body.clone()).map_err(|e| ClusterError::Record {
                action: format!("create {object}"),
                message: format!("the object is not a Kubernetes object: {e}"),
            })?;
        let params = PostParams {
            field_manager: Some(manager.to_string()),
            ..PostParams::default()
        };
        let result = self
            .timed(|| format!("create {object}"), async {
                Ok(api.create(&params, &dynamic).await)
            })
            .await?;
        match result {
            Ok(created) => Ok(to_value(created)),
            Err(kube::Error::Api(status)) if status.code == 409 => {
                Err(ClusterError::RecordExists {
                    object: Box::new(object.clone()),
                })
            }
            Err(e) => Err(self.explain(e, "create", &resource, object)),
        }
    }

    /// Deletes an object; one that is already gone is fine.
    pub async fn delete(&self, object: &ObjectRef) -> Result<(), ClusterError> {
        let (api, resource) = self.api(object).await?;
        let result = self
            .timed(|| format!("delete {object}"), async {
                Ok(api.delete(&object.name, &DeleteParams::default()).await)
            })
            .await?;
        match result {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(e) => Err(self.explain(e, "delete", &resource, object)),
        }
    }
}

fn to_value(object: DynamicObject) -> Value {
    // A DynamicObject is JSON to begin with; serialising it cannot fail.
    serde_json::to_value(object).unwrap_or(Value::Null)
}

fn plural(resource: &ApiResource) -> String {
    if resource.group.is_empty() {
        resource.plural.clone()
    } else {
        format!("{}.{}", resource.plural, resource.group)
    }
}

fn namespace_of(object: &ObjectRef) -> String {
    object
        .namespace
        .clone()
        .unwrap_or_else(|| "<cluster>".into())
}

/// `conflict with "kubectl-edit" using apps/v1` → `kubectl-edit`.
fn manager_of(message: &str) -> String {
    message
        .split('"')
        .nth(1)
        .map_or_else(|| message.to_string(), str::to_string)
}

/// How much of each object a list returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// The whole object.
    Objects,
    /// Metadata only (`PartialObjectMeta`): names, labels and annotations, never
    /// a Secret's data.
    Metadata,
}

#[cfg(test)]
mod tests {
    #[test]
    fn manager_from_conflict_message() {
        assert_eq!(
            super::manager_of("conflict with \"kubectl-edit\" using apps/v1"),
            "kubectl-edit"
        );
        assert_eq!(super::manager_of("odd"), "odd");
    }
}
