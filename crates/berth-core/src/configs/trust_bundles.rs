//! Kubernetes `ClusterTrustBundle`s (certificates.k8s.io) as CA bundle
//! sources: which objects a `{clusterTrustBundle: …}` source reads, decided
//! here once for the CLI (which lists them) and the controller (which
//! watches them), as the kubelet's `clusterTrustBundle` projection does.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::project::ClusterObject;

/// The kind, and the versions of certificates.k8s.io that served it, newest
/// first: GA (and on by default) in Kubernetes 1.37, beta from 1.33, alpha
/// from 1.27 (both off unless the API server enables them).
pub const KIND: &str = "ClusterTrustBundle";
/// See [`KIND`].
pub const VERSIONS: &[&str] = &[
    "certificates.k8s.io/v1",
    "certificates.k8s.io/v1beta1",
    "certificates.k8s.io/v1alpha1",
];

/// What this cluster lacks when it serves none of [`VERSIONS`], and what to do.
pub const NOT_SERVED: &str = "this cluster does not serve the ClusterTrustBundle API (certificates.k8s.io: on by default from Kubernetes 1.37; before, the API server needs the ClusterTrustBundle feature gate and `--runtime-config=certificates.k8s.io/v1beta1/clustertrustbundles=true`); use a `{configMap, key}` source instead";

/// One ClusterTrustBundle as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustBundle {
    /// `metadata.name`.
    pub name: String,
    /// `spec.signerName` (empty: none).
    pub signer_name: String,
    /// `metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// `spec.trustBundle`.
    pub pem: String,
}

impl TrustBundle {
    /// The object from its JSON (any served version: the fields are the same).
    pub fn from_json(object: &Value) -> TrustBundle {
        let text = |pointer: &str| {
            let value = object.pointer(pointer).and_then(Value::as_str);
            value.unwrap_or_default().to_string()
        };
        let labels = (object
            .pointer("/metadata/labels")
            .and_then(Value::as_object))
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
        TrustBundle {
            name: text("/metadata/name"),
            signer_name: text("/spec/signerName"),
            labels,
            pem: text("/spec/trustBundle"),
        }
    }
}

impl ClusterObject {
    /// What is said when the source reads nothing.
    pub fn missing(&self) -> String {
        match self {
            ClusterObject::Signer {
                signer_name,
                labels,
            } => {
                let labelled = if labels.is_empty() {
                    String::new()
                } else {
                    format!(" labelled {}", ClusterObject::selector(labels))
                };
                format!("no clusterTrustBundle of signer `{signer_name}`{labelled} exists")
            }
            other => format!("{} does not exist", other.describe()),
        }
    }

    /// Whether this source reads `bundle` (never for a ConfigMap source).
    pub fn reads(&self, bundle: &TrustBundle) -> bool {
        match self {
            ClusterObject::ConfigMap { .. } => false,
            ClusterObject::TrustBundle { name } => *name == bundle.name,
            ClusterObject::Signer {
                signer_name,
                labels,
            } => {
                *signer_name == bundle.signer_name
                    && (labels.iter()).all(|(k, v)| bundle.labels.get(k) == Some(v))
            }
        }
    }
}

/// The PEM a source reads among `bundles`: the objects it names, in name
/// order, joined; `None` when it names none (an error for the caller to say,
/// with [`ClusterObject::describe`]).
pub fn pem(from: &ClusterObject, bundles: &[TrustBundle]) -> Option<String> {
    let mut read: Vec<&TrustBundle> = bundles.iter().filter(|b| from.reads(b)).collect();
    read.sort_by(|a, b| a.name.cmp(&b.name));
    let pems: Vec<&str> = read.iter().map(|b| b.pem.as_str()).collect();
    (!pems.is_empty()).then(|| pems.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(name: &str, signer: &str, tier: &str) -> TrustBundle {
        TrustBundle::from_json(&serde_json::json!({
            "metadata": {"name": name, "labels": {"tier": tier}},
            "spec": {"signerName": signer, "trustBundle": format!("<{name}>")},
        }))
    }

    #[test]
    fn a_source_reads_its_bundle_by_name_or_its_signers_by_labels() {
        let bundles = [
            bundle("x.io:corp:b", "x.io/corp", "corp"),
            bundle("x.io:corp:a", "x.io/corp", "corp"),
            bundle("x.io:corp:c", "x.io/corp", "other"),
            bundle("root", "", "corp"),
        ];
        let signer = |labels: &[(&str, &str)]| ClusterObject::Signer {
            signer_name: "x.io/corp".into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        let by_name = |name: &str| ClusterObject::TrustBundle { name: name.into() };
        let cases: Vec<(ClusterObject, Option<&str>)> = vec![
            (by_name("root"), Some("<root>")),
            (by_name("missing"), None),
            (
                signer(&[]),
                Some("<x.io:corp:a>\n<x.io:corp:b>\n<x.io:corp:c>"),
            ),
            (
                signer(&[("tier", "corp")]),
                Some("<x.io:corp:a>\n<x.io:corp:b>"),
            ),
            (signer(&[("tier", "none")]), None),
            (
                ClusterObject::ConfigMap {
                    name: "root".into(),
                    key: "k".into(),
                },
                None,
            ),
        ];
        for (from, want) in cases {
            assert_eq!(pem(&from, &bundles).as_deref(), want, "{from:?}");
        }
    }
}
