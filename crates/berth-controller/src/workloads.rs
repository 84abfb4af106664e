//! The controller's watches of the workloads it applied: whole objects, so a
//! rollout is judged from the watch instead of a read after each of
//! kube-controller-manager's status updates (two reads per Berth's rollout,
//! before), each trimmed to what the controller reads — metadata as the
//! metadata watches keep it, the replica count and the status — so memory
//! stays near a metadata watch's: the pod template, the bulk of a workload,
//! is dropped. The `Berth` watch is trimmed here too, of its managed fields.

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// A workload kind as the controller keeps it.
pub(crate) trait Trimmed {
    /// Drops what neither the rollout judgement nor the fingerprints read.
    fn trim(&mut self);
}

/// Keeps of `metadata` what the controller reads: names, labels, owner
/// references, generation and version, and its own managed-fields entry as
/// its digest (not annotations, which may hold a last-applied copy, nor other
/// managers' entries).
pub(crate) fn trim_metadata(metadata: &mut ObjectMeta) {
    metadata.annotations = None;
    if let Some(fields) = metadata.managed_fields.as_mut() {
        fields.retain(|f| f.manager.as_deref() == Some(crate::MANAGER));
        for entry in fields {
            if let Some(v1) = entry.fields_v1.as_mut() {
                v1.0 = serde_json::Value::String(berth_core::cluster::fields_digest(&v1.0));
            }
        }
    }
}

/// kubectl's copy of what `kubectl apply` (client-side) last applied: the
/// whole object again, kept in a Berth's annotations.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// A `Berth` as the controller keeps it: without managed fields (nothing reads
/// them; the status is applied server-side, the finalizer patched with a test
/// of the list), and with kubectl's last-applied copy replaced by its hash — an
/// annotation's change still starts a reconcile (`runtime::trigger`), and the
/// spec is not kept twice. Measured at 500 Berths: the Berth store was the
/// controller's largest heap consumer (heaptrack), its entries mostly
/// managed fields.
impl Trimmed for crate::types::Berth {
    fn trim(&mut self) {
        use std::hash::{Hash, Hasher};
        self.metadata.managed_fields = None;
        let copy = (self.metadata.annotations.as_mut()).and_then(|a| a.get_mut(LAST_APPLIED));
        if let Some(copy) = copy {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            copy.hash(&mut hasher);
            *copy = format!("hash:{:016x}", hasher.finish());
        }
    }
}

/// The workloads whose spec is not optional: their pod template and selector go
/// (the rollout reads neither), and any further field named.
macro_rules! trimmed_workload {
    ($kind:ty $(, $also:ident)*) => {
        impl Trimmed for $kind {
            fn trim(&mut self) {
                trim_metadata(&mut self.metadata);
                self.spec.template = Default::default();
                self.spec.selector = Default::default();
                $(self.spec.$also = None;)*
            }
        }
    };
}

trimmed_workload!(Deployment);
trimmed_workload!(StatefulSet, volume_claim_templates);
trimmed_workload!(DaemonSet);

impl Trimmed for Job {
    fn trim(&mut self) {
        trim_metadata(&mut self.metadata);
        if let Some(spec) = self.spec.as_mut() {
            spec.template = Default::default();
            spec.selector = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::cluster::{rollout_status, Rollout};

    #[test]
    fn a_trimmed_berth_keeps_no_managed_fields_and_hashes_kubectls_copy() {
        let berth = |copy: &str| {
            let mut berth: crate::types::Berth = serde_json::from_value(serde_json::json!({
                "apiVersion": "berth.dev/v1alpha1", "kind": "Berth",
                "metadata": {"name": "web", "namespace": "a",
                             "annotations": {LAST_APPLIED: copy, "note": "kept"},
                             "managedFields": [{"manager": "kubectl", "operation": "Update",
                                                "fieldsV1": {"f:spec": {}}}]},
                "spec": {"workloads": []}
            }))
            .unwrap();
            berth.trim();
            berth
        };
        let (one, again, other) = (berth("{\"a\":1}"), berth("{\"a\":1}"), berth("{\"a\":2}"));
        assert!(one.metadata.managed_fields.is_none());
        let annotations = one.metadata.annotations.as_ref().unwrap();
        assert_eq!(annotations["note"], "kept");
        assert!(annotations[LAST_APPLIED].starts_with("hash:"));
        assert_eq!(one.metadata.annotations, again.metadata.annotations);
        assert_ne!(one.metadata.annotations, other.metadata.annotations);
    }

    #[test]
    fn a_trimmed_deployment_is_judged_as_the_whole_one() {
        let whole = serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "generation": 2, "annotations": {"big": "x"}},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "app", "image": "x"}]}}},
            "status": {"observedGeneration": 2, "replicas": 3, "updatedReplicas": 3,
                       "availableReplicas": 2}
        });
        let mut trimmed: Deployment = serde_json::from_value(whole.clone()).unwrap();
        trimmed.trim();
        let trimmed = serde_json::to_value(&trimmed).unwrap();
        assert!(trimmed["spec"]["template"]["spec"].is_null());
        assert!(trimmed["metadata"]["annotations"].is_null());
        assert_eq!(
            rollout_status("Deployment", &trimmed),
            rollout_status("Deployment", &whole)
        );
        assert!(matches!(
            rollout_status("Deployment", &trimmed),
            Rollout::Progressing(_)
        ));
    }
}
