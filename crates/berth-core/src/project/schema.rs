//! The JSON Schema (draft 2020-12) of berth.yaml, for editors
//! (`# yaml-language-server: $schema=…`) and `berth schema`.
//!
//! Each object's properties are the loader's own key lists (`TOP_KEYS`,
//! `COMPONENT_KEYS`, …), so a key the loader accepts is a key the schema has; a
//! key without a schema here is caught by this module's test, never shipped as
//! "anything goes". Unknown keys are refused (`additionalProperties: false`), as
//! the loader refuses them.

use serde_json::{json, Map, Value};

use super::components::{COMPONENT_KEYS, TAG_KEYS};
use super::dev::{DEV_KEYS, FORWARD_KEYS};
use super::generated::CONFIG_KEYS;
use super::sync::{PATH_KEYS, RULE_KEYS, RUN_KEYS, TARGET_KEYS};
use super::trust::{CA_KEYS, INJECT_KEYS};
use super::{CONFIG_PATH_KEYS, IMAGE_PATH_KEYS, REGISTRY_KEYS, TOP_KEYS};

/// The schema's `$id`, where editors may fetch it once it is published.
pub const SCHEMA_ID: &str = "https://berth.dev/schemas/berth.yaml.json";

/// A scalar berth reads as text: berth.yaml's `image: 42`, `cmd: [true]` and `labels: {watch:
/// true}` are read as the strings `42`, `true`, `true`, so the schema accepts what berth
/// accepts (R7, #46).
const SCALAR: [&str; 3] = ["string", "number", "boolean"];

fn text(description: &str) -> Value {
    json!({"type": SCALAR, "description": description})
}

fn boolean(description: &str) -> Value {
    json!({"type": "boolean", "description": description})
}

fn texts(description: &str) -> Value {
    json!({"type": "array", "items": {"type": SCALAR}, "description": description})
}

fn variable(description: &str) -> Value {
    json!({"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$", "description": description})
}

fn string_map(description: &str) -> Value {
    json!({"type": "object", "additionalProperties": {"type": SCALAR}, "description": description})
}

/// An object whose properties are exactly `keys`, each described by `schema`.
fn object(
    section: &str,
    keys: &[&str],
    schema: fn(&str) -> Option<Value>,
    required: &[&str],
) -> Value {
    let mut properties = Map::new();
    for key in keys {
        // A key without a schema fails `every_key_the_loader_accepts_has_a_schema`.
        let value =
            schema(key).unwrap_or_else(|| json!({"description": format!("{section}.{key}")}));
        properties.insert((*key).to_string(), value);
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

fn top(key: &str) -> Option<Value> {
    Some(match key {
        "name" => {
            json!({"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "maxLength": 63, "description": "The project's name: labels berth's objects (berth.dev/project) and names apply records."})
        }
        "namespace" => text("The namespace of objects that set none, for cluster commands."),
        "manifests" => {
            json!({"$ref": "#/$defs/manifests", "description": "What berth renders: files and directories of YAML, `-` (stdin), `{kustomize: DIR}`, or `{helm: {chart, …}}`."})
        }
        "images" => {
            json!({"type": "object", "additionalProperties": {"$ref": "#/$defs/component"}, "propertyNames": {"pattern": "^[A-Za-z][A-Za-z0-9._-]*$"}, "description": "The components, by name."})
        }
        "registry" => object("registry", REGISTRY_KEYS, registry, &[]),
        "tag" => object("tag", TAG_KEYS, tag, &[]),
        "profiles" => {
            let map_form = json!({"type": "object", "properties": {"manifests": {"$ref": "#/$defs/manifests"}, "variants": {"type": "object", "additionalProperties": {"type": "string"}, "description": "The variant each component's family runs in this profile: {COMPONENT: VARIANT}."}}, "required": ["manifests"], "additionalProperties": false});
            json!({"type": "object", "additionalProperties": {"oneOf": [{"$ref": "#/$defs/manifests"}, map_form]}, "propertyNames": {"pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"}, "description": "Alternative manifest sets, chosen with --profile NAME: a list of manifests, or {manifests, variants}."})
        }
        "imagePaths" => {
            json!({"type": "array", "items": object("imagePaths[]", IMAGE_PATH_KEYS, field_path, &["kind", "path"]), "description": "Fields of other kinds that hold an image."})
        }
        "configPaths" => {
            json!({"type": "array", "items": object("configPaths[]", CONFIG_PATH_KEYS, field_path, &["kind", "path"]), "description": "Fields of custom resources that name a config or CA bundle."})
        }
        "configs" => {
            json!({"type": "object", "additionalProperties": object("configs.NAME", CONFIG_KEYS, config, &[]), "description": "Immutable, content-addressed ConfigMaps and Secrets."})
        }
        "caBundles" => {
            json!({"type": "object", "additionalProperties": object("caBundles.NAME", CA_KEYS, ca_bundle, &["sources"]), "description": "Validated CA trust bundles, injected into components."})
        }
        "sync" => {
            json!({"type": "array", "items": object("sync[]", RULE_KEYS, sync_rule, &["target"]), "description": "Live-update rules for `berth sync`."})
        }
        "dev" => object("dev", DEV_KEYS, dev, &[]),
        "audit" => object("audit", super::AUDIT_KEYS, audit, &[]),
        "operator" => object(
            "operator",
            super::accept::OPERATOR_KEYS,
            operator,
            &["workload", "container"],
        ),
        "accept" => {
            json!({"type": "array", "items": object("accept[]", super::accept::ACCEPT_KEYS, accept, &["warning", "at", "because"]), "description": "Warnings acknowledged, each at one place with the reason; an entry that matches no warning is itself a warning under `berth validate`."})
        }
        "verify" => {
            json!({"type": "array", "items": object("verify[]", super::verify::VERIFY_KEYS, verify_policy, &[]), "description": "The signatures `berth pin` requires: each entry names components (default: every one) and a signer, a cosign public key or a certificate."})
        }
        "gitops" => {
            json!({"enum": ["flux", "argocd", "none"], "description": "The GitOps engine that applies the rendered output: generated configs carry its never-prune annotation and berth's labels, and berth removes old generations once nothing uses them."})
        }
        _ => return None,
    })
}

fn verify_policy(key: &str) -> Option<Value> {
    Some(match key {
        "components" => texts(
            "The components this policy covers (default: every component without `verify: false`).",
        ),
        "key" => text(
            "A cosign public key (PEM: ECDSA P-256/P-384, Ed25519 or RSA), relative to berth.yaml.",
        ),
        "certificate" => object(
            "verify[].certificate",
            super::verify::CERTIFICATE_KEYS,
            verify_certificate,
            &["identity", "issuer"],
        ),
        "trustedRoot" => text("With `key:`: sigstore's trusted_root.json, whose `tlogs` a log entry is checked against (`transparencyLog: required`)."),
        "transparencyLog" => {
            json!({"enum": ["required", "optional"], "description": "Whether a transparency-log entry must be checked (default: optional for a key, required for a certificate); checked against the logs `trustedRoot` names."})
        }
        _ => return None,
    })
}

fn verify_certificate(key: &str) -> Option<Value> {
    Some(match key {
        "identity" => {
            text("The certificate's subject alternative name (a workflow URL, an e-mail).")
        }
        "issuer" => text("The OIDC issuer the certificate records."),
        "roots" => text("A PEM file of the CA certificates the signing certificate must chain to."),
        "trustedRoot" => text("Sigstore's trusted_root.json: its certificate authorities, and its `tlogs` for `transparencyLog: required`."),
        _ => return None,
    })
}

fn operator(key: &str) -> Option<Value> {
    Some(match key {
        "workload" => {
            json!({"type": "string", "pattern": "^[^/]+/[^/]+$", "description": "The operator's workload, `Kind/name` (`Deployment/ogx-operator-controller-manager`)."})
        }
        "container" => text("The container that gets the `RELATED_IMAGE_*` variables."),
        _ => return None,
    })
}

fn accept(key: &str) -> Option<Value> {
    Some(match key {
        "warning" => {
            let codes: Vec<&str> = crate::warning::Code::ALL.iter().map(|c| c.as_str()).collect();
            json!({"enum": codes, "description": "The warning's code, shown in brackets at the end of its line."})
        }
        "at" => text("Where: a file or a directory above it, an object (`Kind/name`), or a variable's name, as the warning names it."),
        "because" => text("Why the warning is right to ignore, for the next reader."),
        _ => return None,
    })
}

fn audit(key: &str) -> Option<Value> {
    (key == "exclude").then(|| texts("Globs (gitignore syntax, relative to the audited directory) `berth audit` does not search, e.g. `docs/**`."))
}

fn dev(key: &str) -> Option<Value> {
    (key == "forward").then(|| json!({"type": "array", "items": object("dev.forward[]", FORWARD_KEYS, forward, &["component", "port"]), "description": "Port-forwards `berth dev` keeps open: 127.0.0.1:local to `port` of a ready pod of the component."}))
}

fn forward(key: &str) -> Option<Value> {
    let port = |description: &str| json!({"type": "integer", "minimum": 1, "maximum": 65535, "description": description});
    Some(match key {
        "component" => text("The component whose pods serve the port."),
        "port" => port("The port in the pod."),
        "local" => port("The port on 127.0.0.1 (default: `port`)."),
        _ => return None,
    })
}

fn registry(key: &str) -> Option<Value> {
    (key == "env").then(|| variable("The variable whose value (a prefix such as quay.io/me) replaces everything before each project image's last path component."))
}

fn tag(key: &str) -> Option<Value> {
    (key == "env").then(|| variable("One tag variable for every component without `tag: false`."))
}

fn component(key: &str) -> Option<Value> {
    Some(match key {
        "image" => text("The default image reference."),
        "env" => variable("The full-reference variable (default <NAME>_IMAGE)."),
        "tagEnv" => variable("The tag variable (default <NAME>_TAG)."),
        "repositoryEnv" => variable("A variable whose value replaces the repository and keeps the tag (operator-sdk's IMAGE_TAG_BASE)."),
        "pullPolicy" => json!({"enum": ["auto", "Always", "IfNotPresent", "Never"], "description": "The pull policy of this component's containers."}),
        "match" => texts("More repositories that are this component (no tags)."),
        "registry" => boolean("false: a third-party image the registry override never moves (nor the shared tag, unless `tag: true`)."),
        "tag" => boolean("false: the shared `tag.env` variable does not apply (the default with `registry: false`)."),
        "sameAs" => text("Another component whose resolved image is this one's default."),
        "deployed" => boolean("false: built and pushed, never in the manifests."),
        "relatedImage" => {
            json!({"oneOf": [{"type": "boolean"}, {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,63}$"}], "description": "An image an operator pulls at run time: `true` (by the component's name) or a name; `render` sets `RELATED_IMAGE_<NAME>` on `operator:`'s container and fills a ClusterServiceVersion's `spec.relatedImages`."})
        }
        "tagSuffix" => boolean("true: a manifest's tag that is the default tag plus a suffix (`latest-gpu` for `latest`) is a variant, rewritten to the resolved tag plus that suffix (`v0.17.0-gpu`)."),
        "helmValues" => object("images.NAME.helmValues", super::helm::HELM_VALUE_KEYS, helm_value, &[]),
        "variants" => {
            json!({"type": "object", "additionalProperties": object("images.NAME.variants.VARIANT", super::variants::VARIANT_KEYS, variant, &["image"]), "propertyNames": {"pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "not": {"const": "default"}}, "description": "The family's other images (an accelerator's or a platform's build), selected with --variant NAME=VARIANT, <NAME>_VARIANT or a profile's `variants:`."})
        }
        "variantEnv" => variable("The variable that selects a variant (default <NAME>_VARIANT)."),
        "resource" => resource("The extended resource a pod running the default image requests (nvidia.com/gpu)."),
        "verify" => boolean("false: no `verify:` policy covers this component."),
        "versions" => {
            json!({"type": "object", "additionalProperties": false, "required": ["pattern"], "properties": {"pattern": {"type": "string", "minLength": 1, "description": "A regular expression the whole tag matches, one capture group per number of the version (v(\\d+)\\.(\\d+)\\.(\\d+)-ubuntu2404)."}}, "description": "How the component's tags read as versions, for `berth outdated` and `berth update` (default: v1.2.3, optional v, -rc1 pre-releases)."})
        }
        _ => return None,
    })
}

fn variant(key: &str) -> Option<Value> {
    Some(match key {
        "image" => {
            text("A repository (follows the family's tag) or a reference with its own tag (kept).")
        }
        "tagSuffix" => {
            json!({"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$", "description": "Appended to the family's tag (-arm64)."})
        }
        "platform" => {
            json!({"type": "string", "pattern": "^[A-Za-z0-9_]+/[A-Za-z0-9_]+(/[A-Za-z0-9_]+)?$", "description": "The platform its image provides (linux/arm64)."})
        }
        "resource" => resource("The extended resource a pod running it requests (amd.com/gpu)."),
        _ => return None,
    })
}

fn resource(description: &str) -> Value {
    json!({"type": "string", "pattern": "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "description": description})
}

fn helm_value(key: &str) -> Option<Value> {
    Some(text_or_texts(match key {
        "image" => "The values path (dotted) that takes the whole reference.",
        "registry" => "The values path that takes the registry host (with `name:`, everything before the image's last path component).",
        "repository" => "The values path that takes the repository (without the registry when `registry:` is given).",
        "name" => "The values path that takes the image's last path component, for a chart that joins it to a registry prefix (`global.imageRegistry`).",
        "tag" => "The values path that takes the tag.",
        "digest" => "The values path that takes the digest (sha256:…).",
        _ => return None,
    }))
}

/// A string, or a non-empty list of strings (a chart that repeats an image under several keys).
fn text_or_texts(description: &str) -> Value {
    json!({"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}], "description": description})
}

fn helm(key: &str) -> Option<Value> {
    Some(match key {
        "chart" => text("A chart directory or .tgz (relative to berth.yaml), oci://HOST/REPO/NAME, or a chart name in `repository:`."),
        "version" => text("The chart version (required for a remote chart)."),
        "repository" => text("The chart repository URL that holds `chart`."),
        "release" => text("The release name (default: the project's name)."),
        "namespace" => text("The release namespace (default: berth.yaml's `namespace:`)."),
        "values" => texts("Values files relative to berth.yaml, in order (as helm's -f)."),
        "set" => json!({"type": "object", "description": "Values written inline (typed YAML), after `values:`; berth's image values come last."}),
        "includeCrds" => boolean("Render the chart's crds/ too (helm template --include-crds)."),
        "plainHttp" => boolean("An oci:// chart registry served over HTTP (helm --plain-http)."),
        "kubeVersion" => text("The Kubernetes version the chart sees (--kube-version)."),
        "apiVersions" => texts("API versions the chart sees as available (--api-versions)."),
        _ => return None,
    })
}

fn field_path(key: &str) -> Option<Value> {
    Some(match key {
        "kind" => text("The kind whose objects have the field."),
        "apiVersion" => text("Only objects of this apiVersion."),
        "path" => text("The field, dotted; `[]` walks a list (spec.images[].ref); a key with dots is quoted (data[\"config.yaml\"]). For imagePaths, a field that holds text has every component image in it rewritten."),
        "key" => text("configPaths only: the field beside the name that holds the key asked for."),
        _ => return None,
    })
}

fn config(key: &str) -> Option<Value> {
    Some(match key {
        "files" => texts("Files (`key=path` or `path`) and directories."),
        "literals" => texts("KEY=VALUE entries."),
        "envs" => texts("Env files of KEY=VALUE lines."),
        "schema" => text("A JSON Schema the config's YAML and JSON files must satisfy."),
        "secret" => boolean("A Secret instead of a ConfigMap."),
        "type" => text("The Secret's type (kubernetes.io/tls …)."),
        "immutable" => boolean("Mark the object immutable (default true)."),
        "hash" => boolean("Append the content hash to the name (default true)."),
        "labels" => string_map("Labels of the generated object."),
        "annotations" => string_map("Annotations of the generated object."),
        _ => return None,
    })
}

fn ca_bundle(key: &str) -> Option<Value> {
    Some(match key {
        "sources" => {
            let labels = json!({"type": "object", "properties": {"matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}}, "additionalProperties": false});
            let trust_bundle = json!({"type": "object", "properties": {"name": {"type": "string"}, "signerName": {"type": "string"}, "labelSelector": labels}, "additionalProperties": false});
            json!({"type": "array", "items": {"oneOf": [
                {"type": "string"},
                {"type": "object", "properties": {"configMap": {"type": "string"}, "key": {"type": "string"}}, "required": ["configMap", "key"], "additionalProperties": false},
                {"type": "object", "properties": {"clusterTrustBundle": trust_bundle}, "required": ["clusterTrustBundle"], "additionalProperties": false}
            ]}, "description": "PEM files and directories; `{configMap: NAME, key: KEY}` and `{clusterTrustBundle: {name} | {signerName, labelSelector}}` read from the cluster by apply, diff and dev."})
        }
        "key" => text("The key of the bundle in the ConfigMap (default ca.crt)."),
        "inject" => object("caBundles.NAME.inject", INJECT_KEYS, inject, &[]),
        "hash" => boolean("Append the content hash to the name (default true)."),
        "labels" => string_map("Labels of the generated object."),
        "annotations" => string_map("Annotations of the generated object."),
        "formats" => {
            json!({"type": "array", "items": {"enum": ["pem", "pkcs12", "jks"]}, "description": "Java truststores written beside the PEM, in binaryData: truststore.p12 and truststore.jks (password `changeit`, or `password:`); PKCS#12 is added when the `java` runtime is injected."})
        }
        "password" => {
            json!({"type": "object", "properties": {"config": {"type": "string"}, "key": {"type": "string"}}, "required": ["config", "key"], "additionalProperties": false, "description": "The Java stores' password: a key of a `secret: true` config. The JVM reads it through a variable from that Secret; the manifest never holds it (default `changeit`)."})
        }
        "defaults" => {
            json!({"enum": ["system", "mozilla"], "description": "Add the public roots: `system` = the store of the machine that renders (Debian's /etc/ssl/certs/ca-certificates.crt, or BERTH_SYSTEM_CA_BUNDLE); `mozilla` = Mozilla's roots as berth is built with them (the webpki-root-certs crate), the same on every machine."})
        }
        _ => return None,
    })
}

fn inject(key: &str) -> Option<Value> {
    Some(match key {
        "components" => texts("Components whose containers get the bundle."),
        "containers" => texts("Containers, by name, that get the bundle."),
        "mountPath" => text("Where the bundle is mounted."),
        "env" => texts("Variables set to the bundle's path, beside the runtimes' (with neither `env:` nor `runtimes:`, every runtime's)."),
        "runtimes" => json!({"type": "array", "items": {"enum": super::Runtime::names()}, "description": "Runtimes whose variables point at the bundle: openssl SSL_CERT_FILE and SSL_CERT_DIR (a directory of the certificates named as `openssl rehash` names them), go SSL_CERT_FILE, python REQUESTS_CA_BUNDLE and SSL_CERT_FILE, node NODE_EXTRA_CA_CERTS, curl CURL_CA_BUNDLE, java a PKCS#12 truststore through JAVA_TOOL_OPTIONS (default: all)."}),
        _ => return None,
    })
}

fn sync_rule(key: &str) -> Option<Value> {
    Some(match key {
        "name" => text("The rule's name in messages."),
        "target" => object("sync[].target", TARGET_KEYS, sync_target, &[]),
        "paths" => {
            json!({"type": "array", "items": object("sync[].paths[]", PATH_KEYS, sync_path, &["from", "to"])})
        }
        "ignore" => texts(".dockerignore-syntax patterns."),
        "run" => {
            json!({"type": "array", "items": object("sync[].run[]", RUN_KEYS, run_step, &["cmd"])})
        }
        "initialSync" => boolean("Send everything when a container is first seen (default true)."),
        _ => return None,
    })
}

fn sync_target(key: &str) -> Option<Value> {
    Some(match key {
        "component" => text("The component whose containers are updated."),
        "container" => text("A container by name."),
        "image" => text("Containers running this image."),
        _ => return None,
    })
}

fn sync_path(key: &str) -> Option<Value> {
    Some(match key {
        "from" => text("A local file or directory, relative to berth.yaml."),
        "to" => text("An absolute path in the container."),
        _ => return None,
    })
}

fn run_step(key: &str) -> Option<Value> {
    Some(match key {
        "cmd" => texts("The command and its arguments."),
        "trigger" => texts("Globs of changed files that run it (default: any)."),
        _ => return None,
    })
}

/// The sections the loader reads as absent when they are `~` (null), as YAML
/// writes an empty section: the schema must let editors accept what berth does.
const NULLABLE: [&str; 13] = [
    "manifests",
    "images",
    "registry",
    "tag",
    "profiles",
    "imagePaths",
    "configPaths",
    "configs",
    "caBundles",
    "sync",
    "dev",
    "accept",
    "verify",
];

/// The whole schema.
pub fn json_schema() -> Value {
    let mut body = object("berth.yaml", TOP_KEYS, top, &["name"]);
    if let Some(properties) = body.get_mut("properties").and_then(Value::as_object_mut) {
        for key in NULLABLE {
            if let Some(section) = properties.get_mut(key) {
                let description = section.get("description").cloned();
                let mut either = json!({"anyOf": [section.take(), {"type": "null"}]});
                if let Some(description) = description {
                    either["description"] = description;
                }
                *section = either;
            }
        }
    }
    let mut root = Map::new();
    root.insert(
        "$schema".into(),
        json!("https://json-schema.org/draft/2020-12/schema"),
    );
    root.insert("$id".into(), json!(SCHEMA_ID));
    root.insert("title".into(), json!("berth.yaml"));
    if let Value::Object(fields) = body {
        root.extend(fields);
    }
    root.insert(
        "$defs".into(),
        json!({
            "component": object("images.NAME", COMPONENT_KEYS, component, &[]),
            "manifests": {
                "type": "array",
                "items": {"oneOf": [
                    {"type": "string"},
                    {"type": "object", "properties": {"kustomize": {"type": "string"}}, "required": ["kustomize"], "additionalProperties": false},
                    {"type": "object", "properties": {"helm": object("manifests[].helm", super::helm::HELM_KEYS, helm, &["chart"])}, "required": ["helm"], "additionalProperties": false},
                ]},
            },
        }),
    );
    Value::Object(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sweep 4, B03: what the loader accepts, the schema accepts too — an empty
    /// (`~`) section, and nothing the loader refuses (`namespace: ~`).
    #[test]
    fn the_schema_and_the_loader_agree_on_empty_sections() {
        let schema = json_schema();
        let validator = jsonschema::validator_for(&schema).unwrap();
        for key in TOP_KEYS.iter().filter(|k| **k != "name") {
            let text = format!("name: shop\n{key}: ~\n");
            let loaded = crate::project::parse("berth.yaml", std::path::PathBuf::from("."), &text);
            let document = serde_json::json!({"name": "shop", *key: null});
            assert_eq!(
                loaded.is_ok(),
                validator.is_valid(&document),
                "`{key}: ~`: the loader says {:?}",
                loaded.err().map(|e| e.to_string())
            );
        }
    }

    #[test]
    fn every_key_the_loader_accepts_has_a_schema() {
        type Section = (
            &'static str,
            &'static [&'static str],
            fn(&str) -> Option<Value>,
        );
        let sections: [Section; 18] = [
            ("top", TOP_KEYS, top),
            ("registry", REGISTRY_KEYS, registry),
            ("tag", TAG_KEYS, tag),
            ("component", COMPONENT_KEYS, component),
            ("imagePaths", IMAGE_PATH_KEYS, field_path),
            ("configPaths", CONFIG_PATH_KEYS, field_path),
            ("configs", CONFIG_KEYS, config),
            ("caBundles", CA_KEYS, ca_bundle),
            ("inject", INJECT_KEYS, inject),
            ("sync", RULE_KEYS, sync_rule),
            ("target", TARGET_KEYS, sync_target),
            ("paths", PATH_KEYS, sync_path),
            ("run", RUN_KEYS, run_step),
            ("dev", DEV_KEYS, dev),
            ("audit", crate::project::AUDIT_KEYS, audit),
            ("accept", crate::project::accept::ACCEPT_KEYS, accept),
            ("operator", crate::project::accept::OPERATOR_KEYS, operator),
            ("forward", FORWARD_KEYS, forward),
        ];
        for (section, keys, schema) in sections {
            for key in keys {
                assert!(schema(key).is_some(), "{section}.{key} has no schema");
            }
        }
    }

    /// The schema, built as a draft 2020-12 validator.
    fn validator() -> jsonschema::Validator {
        jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&json_schema())
            .unwrap()
    }

    #[test]
    fn the_schema_is_a_valid_draft_2020_12_schema_that_refuses_unknown_keys() {
        let validator = validator();
        assert!(validator.is_valid(&json!({"name": "shop", "images": {"web": {"image": "nginx"}}})));
        assert!(!validator.is_valid(&json!({"name": "shop", "imagez": {}})));
        assert!(!validator.is_valid(&json!({"name": "shop", "images": {"web": {"imag": "nginx"}}})));
        assert!(
            !validator.is_valid(&json!({"images": {}})),
            "name is required"
        );
    }

    /// R7 (#46): the texts berth reads as strings (any scalar) the schema accepts too.
    #[test]
    fn the_schema_accepts_the_scalars_berth_reads_as_text() {
        let validator = validator();
        let texts = [
            "name: shop\nimages:\n  web: {image: 42}\n",
            "name: shop\nsync:\n  - target: {container: web}\n    paths: [{from: a, to: /a}]\n    run: [{cmd: [true]}]\n",
            "name: shop\nconfigs:\n  c: {literals: [a=b], labels: {watch: true}}\n",
            "name: shop\nconfigs:\n  c: {literals: [a=b], annotations: {n: 5}}\n",
        ];
        for text in texts {
            let docs = berth_yaml::load_all(text, berth_yaml::Limits::default()).unwrap();
            let value = berth_yaml::json::to_json(&docs[0]);
            let errors: Vec<String> = validator
                .iter_errors(&value)
                .map(|e| e.to_string())
                .collect();
            assert!(errors.is_empty(), "{text}: {errors:?}");
            crate::project::parse("berth.yaml", "/p".into(), text)
                .unwrap_or_else(|e| panic!("{text}: {e}"));
        }
    }

    #[test]
    fn every_examples_berth_yaml_satisfies_the_schema() {
        let validator = validator();
        let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let mut seen = 0;
        for entry in std::fs::read_dir(examples).unwrap() {
            let path = entry.unwrap().path().join("berth.yaml");
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let docs = berth_yaml::load_all(&text, berth_yaml::Limits::default()).unwrap();
            let value = berth_yaml::json::to_json(&docs[0]);
            let errors: Vec<String> = validator
                .iter_errors(&value)
                .map(|e| e.to_string())
                .collect();
            assert!(errors.is_empty(), "{}: {errors:?}", path.display());
            seen += 1;
        }
        assert!(seen >= 3, "only {seen} examples");
    }
}
