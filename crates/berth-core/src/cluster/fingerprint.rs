//! Whether anyone touched what an apply set, told from metadata alone.
//!
//! Server-side apply records, per field manager, the set of fields it owns
//! (`metadata.managedFields`). Whoever changes one of those fields takes it over
//! (`kubectl edit`, `kubectl scale`, another apply with force), so the applier's
//! set shrinks; whoever deletes the object and makes it again gives it a new uid.
//! The pair (uid, the applier's field set) is therefore the same as after the
//! apply exactly while no field the applier set was changed. A long-running
//! caller compares the pair an apply returned with the one its metadata watch
//! shows now, and skips the dry run and the read that would find no drift.
//! Status writes and other managers' own fields leave the pair alone.
//!
//! The field set is kept as its digest: a cache of thousands of objects keeps
//! 71 characters instead of a tree of every field ([`fields_digest`]).

use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// An object's uid and the digest of the fields one manager applied in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    uid: String,
    fields: String,
}

/// The digest (`sha256:<hex>`) of a managed-fields entry's `fieldsV1`. A watch
/// cache may keep it in place of the entry's `fieldsV1` (which is always an
/// object, never a string): [`fingerprint`] reads either.
pub fn fields_digest(fields: &Value) -> String {
    if let Some(digest) = fields.as_str() {
        return digest.to_string();
    }
    // A Value serialises without failing; the server's key order is kept.
    let bytes = serde_json::to_vec(fields).unwrap_or_default();
    berth_ref::Digest::from_sha256(&Sha256::digest(bytes).into()).to_string()
}

/// The fingerprint of `object` (as the server returned it, or its metadata as a
/// watch shows it) for the apply entry of `manager`; `None` when it has no uid
/// or `manager` applied nothing there (it cannot be known untouched).
pub fn fingerprint(object: &Value, manager: &str) -> Option<Fingerprint> {
    let metadata = object.get("metadata")?;
    let uid = metadata.get("uid")?.as_str()?;
    let entry = metadata
        .get("managedFields")?
        .as_array()?
        .iter()
        .find(|e| {
            e["manager"] == manager && e["operation"] == "Apply" && e.get("subresource").is_none()
        })?;
    Some(Fingerprint {
        uid: uid.to_string(),
        fields: fields_digest(entry.get("fieldsV1")?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(uid: &str, entries: Value) -> Value {
        json!({"metadata": {"uid": uid, "managedFields": entries}})
    }

    fn entry(manager: &str, operation: &str, fields: Value) -> Value {
        json!({"manager": manager, "operation": operation, "fieldsType": "FieldsV1",
               "fieldsV1": fields, "time": "2026-12-02T00:00:00Z"})
    }

    #[test]
    fn the_same_while_only_others_and_status_change() {
        let ours = json!({"f:spec": {"f:replicas": {}}});
        let applied = object(
            "u1",
            json!([entry("berth-controller", "Apply", ours.clone())]),
        );
        let later = object(
            "u1",
            json!([
                entry("berth-controller", "Apply", ours.clone()),
                entry("kube-controller-manager", "Update", json!({"f:status": {}})),
            ]),
        );
        assert_eq!(
            fingerprint(&applied, "berth-controller"),
            fingerprint(&later, "berth-controller")
        );
        assert!(fingerprint(&applied, "berth-controller").is_some());
    }

    #[test]
    fn differs_when_a_field_is_taken_or_the_object_made_again() {
        let ours = json!({"f:spec": {"f:replicas": {}, "f:paused": {}}});
        let applied = fingerprint(
            &object("u1", json!([entry("berth-controller", "Apply", ours)])),
            "berth-controller",
        );
        let scaled = object(
            "u1",
            json!([
                entry(
                    "berth-controller",
                    "Apply",
                    json!({"f:spec": {"f:paused": {}}})
                ),
                entry("kubectl", "Update", json!({"f:spec": {"f:replicas": {}}})),
            ]),
        );
        assert_ne!(applied, fingerprint(&scaled, "berth-controller"));
        let remade = object(
            "u2",
            json!([entry(
                "berth-controller",
                "Apply",
                json!({"f:spec": {"f:replicas": {}, "f:paused": {}}})
            )]),
        );
        assert_ne!(applied, fingerprint(&remade, "berth-controller"));
    }

    #[test]
    fn a_cache_may_keep_the_digest_instead_of_the_fields() {
        let fields = json!({"f:spec": {"f:replicas": {}}});
        let whole = object("u1", json!([entry("m", "Apply", fields.clone())]));
        let kept = object(
            "u1",
            json!([entry("m", "Apply", json!(fields_digest(&fields)))]),
        );
        assert_eq!(fingerprint(&whole, "m"), fingerprint(&kept, "m"));
        assert!(fields_digest(&fields).starts_with("sha256:"));
        assert_eq!(fields_digest(&fields).len(), 71);
    }

    #[test]
    fn none_without_an_apply_by_the_manager() {
        let updated = object(
            "u1",
            json!([entry("berth-controller", "Update", json!({}))]),
        );
        assert_eq!(fingerprint(&updated, "berth-controller"), None);
        let status = object(
            "u1",
            json!([{"manager": "berth-controller", "operation": "Apply", "subresource": "status", "fieldsV1": {}}]),
        );
        assert_eq!(fingerprint(&status, "berth-controller"), None);
        assert_eq!(
            fingerprint(&json!({"metadata": {}}), "berth-controller"),
            None
        );
    }
}
