//! Dynamic object operations: any kind the cluster serves, found by discovery
//! (one resource-list request per group version, cached), as JSON values.

use std::collections::HashMap;

use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::{pinned_kind, ApiResource, Scope};
use serde_json::Value;

use crate::connect::Cluster;
use crate::error::{explain, ClusterError};

/// `(apiVersion, kind)` → the resource and whether it is namespaced.
#[derive(Default)]
pub(crate) struct KindCache {
    map: HashMap<(String, String), (ApiResource, bool)>,
}

/// Identity of an object: what berth prints and looks up by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRef {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// The namespace it lives in (`None` for cluster-scoped objects).
    pub namespace: Option<String>,
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{}/{} (namespace {ns})", self.kind, self.name),
            None => write!(f, "{}/{}", self.kind, self.name),
        }
    }
}

impl Cluster {
    /// The resource serving `kind` of `api_version`, and whether it is namespaced.
    pub fn resource(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<(ApiResource, bool), ClusterError> {
        let key = (api_version.to_string(), kind.to_string());
        if let Some(found) = self
            .kinds
            .lock()
            .ok()
            .and_then(|c| c.map.get(&key).cloned())
        {
            return Ok(found);
        }
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let unknown = || ClusterError::UnknownKind {
            api_version: api_version.into(),
            kind: kind.into(),
        };
        let found = match self.runtime.block_on(pinned_kind(&self.client, &gvk)) {
            Ok((resource, caps)) => (resource, caps.scope == Scope::Namespaced),
            Err(kube::Error::Discovery(_)) => return Err(unknown()),
            Err(kube::Error::Api(status)) if status.code == 404 => return Err(unknown()),
            Err(e) => {
                return Err(explain(
                    e,
                    "get",
                    &format!("the {api_version} API"),
                    "<cluster>",
                ))
            }
        };
        if let Ok(mut cache) = self.kinds.lock() {
            cache.map.insert(key, found.clone());
        }
        Ok(found)
    }

    /// Forgets discovered kinds (after CRDs are applied, new kinds appear).
    pub fn forget_kinds(&self) {
        if let Ok(mut cache) = self.kinds.lock() {
            cache.map.clear();
        }
    }

    fn api(&self, object: &ObjectRef) -> Result<(Api<DynamicObject>, ApiResource), ClusterError> {
        let (resource, namespaced) = self.resource(&object.api_version, &object.kind)?;
        let api = match (&object.namespace, namespaced) {
            (Some(ns), true) => Api::namespaced_with(self.client.clone(), ns, &resource),
            (None, true) => Api::namespaced_with(self.client.clone(), &self.namespace, &resource),
            (_, false) => Api::all_with(self.client.clone(), &resource),
        };
        Ok((api, resource))
    }

    /// Whether `kind` is namespaced (for defaulting namespaces before apply).
    pub fn is_namespaced(&self, api_version: &str, kind: &str) -> Result<bool, ClusterError> {
        self.resource(api_version, kind)
            .map(|(_, namespaced)| namespaced)
    }

    /// Server-side apply with field manager `berth`; returns the object as the server has
    /// it (or would, with `dry_run`). A conflict lists the fields and their managers.
    pub fn apply(
        &self,
        object: &ObjectRef,
        body: &Value,
        force: bool,
        dry_run: bool,
    ) -> Result<Value, ClusterError> {
        let (api, resource) = self.api(object)?;
        let mut params = PatchParams::apply(berth_core::cluster::FIELD_MANAGER);
        params.force = force;
        params.dry_run = dry_run;
        let result = self
            .runtime
            .block_on(api.patch(&object.name, &params, &Patch::Apply(body)));
        match result {
            Ok(applied) => serde_json::to_value(applied).map_err(|e| ClusterError::Api {
                action: format!("apply {object}"),
                message: e.to_string(),
            }),
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
                    object: object.to_string(),
                    conflicts,
                })
            }
            Err(kube::Error::Api(status))
                if status.code == 404 && status.message.starts_with("namespaces ") =>
            {
                Err(ClusterError::NamespaceMissing {
                    action: format!("apply {object}"),
                    message: status.message.clone(),
                })
            }
            Err(e) => Err(explain(
                e,
                "patch",
                &plural(&resource),
                &namespace_of(object),
            )),
        }
    }

    /// A forced apply under another field manager (berth's bookkeeping fields).
    pub(crate) fn apply_as(
        &self,
        object: &ObjectRef,
        body: &Value,
        manager: &str,
    ) -> Result<(), ClusterError> {
        let (api, resource) = self.api(object)?;
        let params = PatchParams::apply(manager).force();
        self.runtime
            .block_on(api.patch(&object.name, &params, &Patch::Apply(body)))
            .map(|_| ())
            .map_err(|e| explain(e, "patch", &plural(&resource), &namespace_of(object)))
    }

    /// The live object, if it exists.
    pub fn get(&self, object: &ObjectRef) -> Result<Option<Value>, ClusterError> {
        let (api, resource) = self.api(object)?;
        let found = self
            .runtime
            .block_on(api.get_opt(&object.name))
            .map_err(|e| explain(e, "get", &plural(&resource), &namespace_of(object)))?;
        found
            .map(serde_json::to_value)
            .transpose()
            .map_err(|e| ClusterError::Api {
                action: format!("get {object}"),
                message: e.to_string(),
            })
    }

    /// Objects of a kind in `namespace` matching a label selector.
    pub fn list(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        selector: &str,
    ) -> Result<Vec<Value>, ClusterError> {
        let probe = ObjectRef {
            api_version: api_version.into(),
            kind: kind.into(),
            name: String::new(),
            namespace: Some(namespace.into()),
        };
        let (api, resource) = self.api(&probe)?;
        let list = self
            .runtime
            .block_on(api.list(&ListParams::default().labels(selector)))
            .map_err(|e| explain(e, "list", &plural(&resource), namespace))?;
        list.items
            .into_iter()
            .map(serde_json::to_value)
            .collect::<Result<_, _>>()
            .map_err(|e| ClusterError::Api {
                action: format!("list {kind}"),
                message: e.to_string(),
            })
    }

    /// Deletes an object (gone already counts as done).
    pub fn delete(&self, object: &ObjectRef) -> Result<(), ClusterError> {
        let (api, resource) = self.api(object)?;
        match self
            .runtime
            .block_on(api.delete(&object.name, &DeleteParams::default()))
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(e) => Err(explain(
                e,
                "delete",
                &plural(&resource),
                &namespace_of(object),
            )),
        }
    }
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
