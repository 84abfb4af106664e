//! The owner reference every object a `Berth` makes carries, so Kubernetes'
//! garbage collection removes them with it.

use kube::ResourceExt;
use serde_json::{json, Value};

use crate::types::Berth;

/// The reference to `berth`: the controller of what it makes, blocking its
/// deletion until they are gone.
pub fn reference(berth: &Berth) -> Value {
    json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "Berth",
        "name": berth.name_any(),
        "uid": berth.uid().unwrap_or_default(),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// Adds an owner reference to the `Berth` on every object, so garbage
/// collection removes what it made when it is deleted. The references the
/// workload already carries are kept (an operator's, a user's); one to the same
/// owner (by `uid`) is replaced, so a reconcile does not add it twice.
pub fn own(objects: &mut [Value], owner: &Value) {
    for object in objects {
        if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            let mut references: Vec<Value> = metadata
                .get("ownerReferences")
                .and_then(Value::as_array)
                .map(|all| {
                    all.iter()
                        .filter(|r| r.get("uid") != owner.get("uid"))
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            // Only one owner may be the controller: the Berth's reference says
            // `controller: true`, so another that says so would be refused.
            if owner.get("controller") == Some(&Value::Bool(true)) {
                for reference in &mut references {
                    if let Some(r) = reference.as_object_mut() {
                        r.remove("controller");
                    }
                }
            }
            references.push(owner.clone());
            metadata.insert("ownerReferences".into(), Value::Array(references));
            let labels = metadata
                .entry("labels")
                .or_insert_with(|| Value::Object(serde_json::Map::new()));
            if let Some(labels) = labels.as_object_mut() {
                labels.insert(crate::CONTROLLER_LABEL.into(), crate::MANAGER.into());
            }
        }
    }
}
