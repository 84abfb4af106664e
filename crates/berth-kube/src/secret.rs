//! What berth shows of a Secret: never a value. Every place that prints a
//! Secret (today `berth diff`) passes it through here first. (What peers say
//! is redacted in one place too: `berth_io::redact`.)

use serde_json::Value;

/// The annotation `kubectl apply` (client-side) writes: the whole object as last
/// applied, so for a Secret its old `data` and `stringData` in clear.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Masks the Secret `merged` and, when it exists, its `live` version: each value
/// of `data` and `stringData`, and the last-applied annotation, becomes `***`,
/// marked `(before)`/`(after)` where it differs between the two (as `kubectl
/// diff` marks changed Secret values), so a diff still shows which keys change.
pub fn mask_secret_pair(live: Option<&mut Value>, merged: &mut Value) {
    let old = live.as_deref().cloned().unwrap_or(Value::Null);
    let new = merged.clone();
    if let Some(live) = live {
        mask(live, &new, "before");
    }
    mask(merged, &old, "after");
}

/// Masks one Secret on its own (nothing to compare with: every value is `***`).
pub fn mask_secret(secret: &mut Value) {
    let itself = secret.clone();
    mask(secret, &itself, "");
}

fn mask(secret: &mut Value, other: &Value, marker: &str) {
    let label = |same: bool| {
        Value::String(if same || marker.is_empty() {
            "***".into()
        } else {
            format!("*** ({marker})")
        })
    };
    for field in ["data", "stringData"] {
        if let Some(map) = secret.get_mut(field).and_then(Value::as_object_mut) {
            for (key, value) in map.iter_mut() {
                let same = other.get(field).and_then(|o| o.get(key)) == Some(&*value);
                *value = label(same);
            }
        }
    }
    if let Some(annotations) = secret
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        if let Some(value) = annotations.get_mut(LAST_APPLIED) {
            let same = other
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(LAST_APPLIED))
                == Some(&*value);
            *value = label(same);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_and_the_last_applied_annotation_are_masked() {
        let mut live = json!({"kind": "Secret", "metadata": {"name": "db", "annotations": {
            LAST_APPLIED: "{\"stringData\":{\"PASSWORD\":\"old\"}}", "keep": "me"}},
            "data": {"PASSWORD": "b2xk", "USER": "dXNlcg=="}});
        let mut merged = json!({"kind": "Secret", "metadata": {"name": "db", "annotations": {
            LAST_APPLIED: "{\"stringData\":{\"PASSWORD\":\"old\"}}", "keep": "me"}},
            "data": {"PASSWORD": "bmV3", "USER": "dXNlcg=="}, "stringData": {"X": "y"}});
        mask_secret_pair(Some(&mut live), &mut merged);
        assert_eq!(
            live["data"],
            json!({"PASSWORD": "*** (before)", "USER": "***"})
        );
        assert_eq!(
            merged["data"],
            json!({"PASSWORD": "*** (after)", "USER": "***"})
        );
        assert_eq!(merged["stringData"], json!({"X": "*** (after)"}));
        assert_eq!(live["metadata"]["annotations"][LAST_APPLIED], "***");
        assert_eq!(merged["metadata"]["annotations"]["keep"], "me");
        let text = format!("{live}{merged}");
        for leaked in ["old", "b2xk", "bmV3", "dXNlcg", "\"y\""] {
            assert!(!text.contains(leaked), "{leaked} in {text}");
        }
    }

    #[test]
    fn a_changed_annotation_is_marked_and_a_lone_secret_is_all_stars() {
        let mut live = json!({"metadata": {"annotations": {LAST_APPLIED: "a"}}});
        let mut merged = json!({"metadata": {"annotations": {LAST_APPLIED: "b"}}});
        mask_secret_pair(Some(&mut live), &mut merged);
        assert_eq!(
            live["metadata"]["annotations"][LAST_APPLIED],
            "*** (before)"
        );
        assert_eq!(
            merged["metadata"]["annotations"][LAST_APPLIED],
            "*** (after)"
        );
        let mut alone =
            json!({"data": {"k": "djE="}, "metadata": {"annotations": {LAST_APPLIED: "x"}}});
        mask_secret(&mut alone);
        assert_eq!(
            alone,
            json!({"data": {"k": "***"}, "metadata": {"annotations": {LAST_APPLIED: "***"}}})
        );
    }
}
