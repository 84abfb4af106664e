//! The `berth.dev/v1alpha1` `Berth` resource (design section 10). The CRD is
//! generated from these types: structural, with CEL rules for what the API
//! server can refuse itself (exactly one source per config and per CA source),
//! printer columns and a status subresource.

// Each printer column repeats `type_ = "string"`: the derive's syntax, not a mistake.
#![allow(clippy::duplicated_attributes)]

use std::collections::BTreeMap;

use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a `Berth` wants: workloads, their images, configs and CA bundles.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "Berth",
    namespaced,
    status = "BerthStatus",
    shortname = "berths",
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(
        name = "Reason",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].reason"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct BerthSpec {
    /// Deployments, StatefulSets, DaemonSets or Jobs, as written by hand. References
    /// to a config's or CA bundle's name are rewritten to the generated object.
    #[schemars(schema_with = "objects")]
    pub workloads: Vec<Value>,
    /// Components, as in berth.yaml's `images:`.
    #[serde(default)]
    pub images: BTreeMap<String, ImageSpec>,
    /// The variant each family runs, `{COMPONENT: VARIANT}` (`default` is the
    /// component's own `image`), as berth.yaml's `--variant`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variants: BTreeMap<String, String>,
    /// Configs, each from exactly one source; they become immutable,
    /// content-addressed ConfigMaps (Secrets from a Secret).
    #[serde(default)]
    pub configs: BTreeMap<String, ConfigSpec>,
    /// CA bundles: validated, de-duplicated certificates from ConfigMaps and inline PEM.
    #[serde(default)]
    pub ca_bundles: BTreeMap<String, CaBundleSpec>,
    /// Generations of each config kept after a successful rollout (for rollback).
    #[serde(default = "default_keep")]
    #[schemars(schema_with = "keep_schema")]
    pub keep: u32,
}

fn default_keep() -> u32 {
    2
}

/// `keep`: an integer of at least 1, default 2.
fn keep_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "integer", "minimum": 1, "default": 2})
}

/// A count. Not schemars' `format: uint32`, which the API server does not know
/// (it warns `unrecognized format "uint32"` whenever the CRD is applied).
fn count_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "integer", "format": "int32", "minimum": 0})
}

/// A list of Kubernetes objects, kept as written.
fn objects(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
    })
}

/// A JSON object, kept as written (typed data, an inline schema).
fn any_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
}

/// A component, as in berth.yaml.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ImageSpec {
    /// The reference the component's containers get.
    pub image: String,
    /// `auto`, `Always`, `IfNotPresent` or `Never`; absent leaves pull policies as they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_policy: Option<String>,
    /// Further repositories in the workloads that are this component.
    #[serde(default, rename = "match", skip_serializing_if = "Vec::is_empty")]
    pub match_: Vec<String>,
    /// Resolve the tag to a digest through the registry, once: the digest is kept in
    /// `status.images` and used until `image` changes, so a moving tag does not roll
    /// the workload by itself.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pin: bool,
    /// The family's other images (an accelerator's or a platform's build), as in
    /// berth.yaml's `images.NAME.variants`; `spec.variants` selects one.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variants: BTreeMap<String, VariantSpec>,
}

/// A member of a component's image family.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VariantSpec {
    /// A repository (follows the component's tag) or a reference with its own tag.
    pub image: String,
    /// Appended to the component's tag (`-arm64`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag_suffix: Option<String>,
}

/// A key of a ConfigMap or Secret in the `Berth`'s namespace.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct KeyRef {
    /// The object's name.
    pub name: String,
    /// The key in its data.
    pub key: String,
}

/// A config: exactly one source.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("(has(self.inline) ? 1 : 0) + (has(self.fromConfigMap) ? 1 : 0) + (has(self.fromSecret) ? 1 : 0) == 1").message("set exactly one of inline, fromConfigMap, fromSecret"))]
pub struct ConfigSpec {
    /// Typed data, written as YAML under `key` (default `config.yaml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "any_object")]
    pub inline: Option<Value>,
    /// A key of a ConfigMap in the same namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_config_map: Option<KeyRef>,
    /// A key of a Secret in the same namespace; the generated object is a Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_secret: Option<KeyRef>,
    /// The key in the generated object (default: the source's key; `config.yaml` for inline data).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// A JSON Schema (draft 2020-12 or 7) the data must meet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<SchemaSource>,
}

/// Where a schema comes from: exactly one of these.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("has(self.inline) != has(self.configMap)").message("set exactly one of inline, configMap"))]
pub struct SchemaSource {
    /// The schema itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "any_object")]
    pub inline: Option<Value>,
    /// A key of a ConfigMap in the same namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<KeyRef>,
}

/// A CA bundle.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CaBundleSpec {
    /// Where its certificates come from.
    #[schemars(length(max = 64))]
    pub sources: Vec<CaSource>,
    /// The key in the generated ConfigMap (default `ca-bundle.crt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Public roots added to the bundle, so a variable that replaces a
    /// client's default store does not cut it off from public endpoints:
    /// `mozilla`, Mozilla's root program as berth is built with it. (berth.yaml's
    /// `system` reads the store of the machine that renders; a controller's
    /// image is no machine of yours.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defaults: Option<DefaultRoots>,
    /// Forms written beside the PEM file: `pkcs12` (also whenever the `java`
    /// runtime is injected) and `jks`, in `binaryData`, password `changeit`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub formats: Vec<CaFormat>,
    /// The Java stores' password: a key of a Secret in the same namespace
    /// (default `changeit`). The JVM reads it through a variable from that
    /// Secret; the workload never holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<KeyRef>,
    /// Containers that should trust it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inject: Option<InjectSpec>,
}

/// `defaults:` of a CA bundle.
#[derive(schemars::JsonSchema, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum DefaultRoots {
    /// Mozilla's root program (the `webpki-root-certs` crate berth is built with).
    Mozilla,
}

/// A form of a CA bundle.
#[derive(schemars::JsonSchema, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CaFormat {
    /// The PEM file (always written).
    Pem,
    /// A PKCS#12 truststore, `truststore.p12`.
    Pkcs12,
    /// A JKS truststore, `truststore.jks`.
    Jks,
}

/// A runtime whose variables `inject` sets (berth.yaml's `inject.runtimes`):
/// core's [`berth_core::project::Runtime`] itself, so berth.yaml and a `Berth`
/// name the same set, spelt by the same [`name`](berth_core::project::Runtime::name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Runtime(pub berth_core::project::Runtime);

impl From<Runtime> for berth_core::project::Runtime {
    fn from(runtime: Runtime) -> Self {
        runtime.0
    }
}

impl Serialize for Runtime {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0.name())
    }
}

impl<'de> Deserialize<'de> for Runtime {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        berth_core::project::Runtime::parse(&name)
            .map(Runtime)
            .ok_or_else(|| {
                let names = berth_core::project::Runtime::names().join(", ");
                serde::de::Error::custom(format!("unknown runtime `{name}`: one of {names}"))
            })
    }
}

impl schemars::JsonSchema for Runtime {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Runtime".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A runtime whose variables `inject` sets (berth.yaml's `inject.runtimes`).",
            "type": "string",
            "enum": berth_core::project::Runtime::names(),
        })
    }
}

/// One source of certificates: exactly one of these.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("(has(self.inline) ? 1 : 0) + (has(self.configMap) ? 1 : 0) + (has(self.clusterTrustBundle) ? 1 : 0) == 1").message("set exactly one of inline, configMap, clusterTrustBundle"))]
pub struct CaSource {
    /// A key of a ConfigMap in the same namespace (a platform-injected bundle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<KeyRef>,
    /// PEM certificates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1048576))]
    pub inline: Option<String>,
    /// Kubernetes `ClusterTrustBundle`s (certificates.k8s.io, cluster-scoped),
    /// as the kubelet's projection names them; read only when the controller
    /// runs with `--cluster-trust-bundles` (the chart's `clusterTrustBundles.read`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_trust_bundle: Option<TrustBundleRef>,
}

/// ClusterTrustBundles: one by `name`, or a signer's by `signerName` and labels.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("has(self.name) != has(self.signerName) && !(has(self.name) && has(self.labelSelector))").message("set name, or signerName (with an optional labelSelector)"))]
pub struct TrustBundleRef {
    /// One ClusterTrustBundle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Every ClusterTrustBundle of this signer (`spec.signerName`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer_name: Option<String>,
    /// Of the signer's, those with these labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<MatchLabels>,
}

/// A label selector of exact labels.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MatchLabels {
    /// Labels an object must carry, with these values.
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
}

/// Which containers trust a bundle, and how.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct InjectSpec {
    /// By component.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<String>,
    /// By container name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub containers: Vec<String>,
    /// Where the bundle is mounted (default `/etc/ssl/certs/berth/<bundle>/<key>`, as in berth.yaml).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount_path: Option<String>,
    /// Variables set to the mount path, beside the runtimes'.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// Runtimes whose variables point at the bundle (with neither `env` nor
    /// `runtimes`: all of them, as in berth.yaml).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtimes: Option<Vec<Runtime>>,
}

/// What the controller last did and saw.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct BerthStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready`, `Progressing`, `Degraded`.
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// Each component's resolved image.
    #[serde(default)]
    pub images: Vec<ImageStatus>,
    /// Each config's source, hash and generated object.
    #[serde(default)]
    pub configs: Vec<ConfigStatus>,
    /// Each CA bundle's certificates and generated object.
    #[serde(default)]
    pub ca_bundles: Vec<BundleStatus>,
}

/// A status condition: Kubernetes' own `metav1.Condition` (its schema too,
/// so `kubectl wait --for=condition=Ready` and every tool that reads
/// conditions sees the shape it expects). `type` is `Ready`, `Progressing` or
/// `Degraded`; `reason` a CamelCase [`crate::reason::Reason`].
pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

/// A component's resolved image.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct ImageStatus {
    /// The component.
    pub component: String,
    /// The reference its containers run (with the digest when pinned).
    pub image: String,
}

/// A config's generated object.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct ConfigStatus {
    /// The config's name.
    pub name: String,
    /// `configMap/NAME`, `secret/NAME` or `inline`.
    pub source: String,
    /// SHA-256 of its content.
    pub sha256: String,
    /// The generated object's name.
    pub object: String,
}

/// A CA bundle's generated object.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct BundleStatus {
    /// The bundle's name.
    pub name: String,
    /// Distinct certificates in it.
    #[schemars(schema_with = "count_schema")]
    pub certificates: u32,
    /// The generated ConfigMap's name.
    pub object: String,
    /// The earliest expiry of its certificates (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_expiry: Option<String>,
}

/// The CRD as YAML, for `berth controller crd` and `deploy/controller/`.
pub fn crd_yaml() -> String {
    use kube::CustomResourceExt as _;
    let json = serde_json::to_value(Berth::crd()).unwrap_or(Value::Null);
    let mut out = String::new();
    berth_yaml::write_document(&mut out, &berth_yaml::json::from_json(&json));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::CustomResourceExt as _;

    #[test]
    fn the_crd_is_structural_with_cel_rules_columns_and_status() {
        let crd = serde_json::to_value(Berth::crd()).unwrap();
        assert_eq!(crd["metadata"]["name"], "berths.berth.dev");
        // Only the formats the API server knows (it warns on any other at every apply).
        let text = crd.to_string();
        for unknown in ["uint32", "uint64", "uint8", "uint16", "int8", "int16"] {
            assert!(
                !text.contains(&format!("\"format\":\"{unknown}\"")),
                "{unknown}"
            );
        }
        assert_eq!(crd["spec"]["scope"], "Namespaced");
        let version = &crd["spec"]["versions"][0];
        assert_eq!(version["name"], "v1alpha1");
        assert!(version["subresources"]["status"].is_object());
        assert_eq!(version["additionalPrinterColumns"][0]["name"], "Ready");
        let text = serde_json::to_string(&crd).unwrap();
        assert!(
            text.contains("set exactly one of inline, fromConfigMap, fromSecret"),
            "{text}"
        );
        assert!(text.contains("x-kubernetes-preserve-unknown-fields"));
        let yaml = crd_yaml();
        assert!(
            yaml.starts_with("apiVersion: apiextensions.k8s.io/v1\n"),
            "{yaml}"
        );
    }

    #[test]
    fn the_crds_runtimes_are_cores_by_name() {
        for core in berth_core::project::Runtime::ALL {
            let json = serde_json::to_value(Runtime(core)).unwrap();
            assert_eq!(json, core.name());
            assert_eq!(
                serde_json::from_value::<Runtime>(json).unwrap(),
                Runtime(core)
            );
        }
        let unknown = serde_json::from_value::<Runtime>("perl".into()).unwrap_err();
        assert!(
            unknown.to_string().contains("one of openssl, python"),
            "{unknown}"
        );
    }
}
