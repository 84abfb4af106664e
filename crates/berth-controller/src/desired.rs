//! What a `Berth` wants, computed by berth-core from the resource and the
//! sources read for it: no client, no I/O. The same transforms `berth render`
//! runs (image resolution, pull policies, content-addressed configs and CA
//! bundles, reference rewriting, CA injection), so the same data gets the same
//! object names under both.

use std::collections::BTreeMap;

use berth_core::cluster::Desired;
use berth_core::configs::trust_bundles::TrustBundle;
use berth_core::configs::{self, schema::Checker, ConfigKind, ConfigShape, Generated};
use berth_core::project::{Component, ComponentSpec, Variant};
use berth_core::render::{self, Definition, Input, Spec};
use berth_core::resolve::{self, Overrides};
use berth_core::PullPolicy;
use berth_ref::{Digest, Reference};
use serde_json::Value;

use crate::reason::Reason;
use crate::types::{Berth, BundleStatus, ConfigStatus, ImageStatus, KeyRef};

/// Which kind of object a source is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SourceKind {
    /// A ConfigMap (`data` and `binaryData`).
    ConfigMap,
    /// A Secret (`data`, decoded).
    Secret,
}

impl SourceKind {
    /// The resource as RBAC names it (`configmaps`).
    pub fn resource(self) -> &'static str {
        match self {
            SourceKind::ConfigMap => "configmaps",
            SourceKind::Secret => "secrets",
        }
    }

    fn label(self) -> &'static str {
        match self {
            SourceKind::ConfigMap => "configMap",
            SourceKind::Secret => "secret",
        }
    }
}

/// The sources read for a `Berth`: `(kind, name)` → its data, `None` when the
/// object does not exist.
pub type Sources = BTreeMap<(SourceKind, String), Option<BTreeMap<String, Vec<u8>>>>;

/// Every source object a `Berth` names, in a stable order.
pub fn sources_named(berth: &Berth) -> Vec<(SourceKind, String)> {
    let mut out = Vec::new();
    for config in berth.spec.configs.values() {
        if let Some(r) = &config.from_config_map {
            out.push((SourceKind::ConfigMap, r.name.clone()));
        }
        if let Some(r) = &config.from_secret {
            out.push((SourceKind::Secret, r.name.clone()));
        }
        if let Some(r) = config.schema.as_ref().and_then(|s| s.config_map.as_ref()) {
            out.push((SourceKind::ConfigMap, r.name.clone()));
        }
    }
    for bundle in berth.spec.ca_bundles.values() {
        if let Some(r) = &bundle.password {
            out.push((SourceKind::Secret, r.name.clone()));
        }
        for source in &bundle.sources {
            if let Some(r) = &source.config_map {
                out.push((SourceKind::ConfigMap, r.name.clone()));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Why a `Berth` cannot be carried out now. The running workloads are left as
/// they are; the `Degraded` condition says this.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Problem {
    /// The condition's reason (`SourceMissing`, `SchemaViolation`, ...).
    pub reason: Reason,
    /// What is wrong and what to do.
    pub message: String,
}

fn problem(reason: Reason, message: impl Into<String>) -> Problem {
    Problem {
        reason,
        message: message.into(),
    }
}

/// The objects to apply and what the status reports about them.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// What to apply (generated objects first), for berth-kube.
    pub desired: Desired,
    /// Each component's resolved image.
    pub images: Vec<ImageStatus>,
    /// Each config's generated object.
    pub configs: Vec<ConfigStatus>,
    /// Each CA bundle's generated object.
    pub ca_bundles: Vec<BundleStatus>,
}

/// Digests of the components with `pin: true`, by component: what the registry
/// answered, or what `status.images` already recorded for the same reference.
pub type Pins = BTreeMap<String, Digest>;

/// A component with `pin: true` whose resolved reference has no digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinRequest {
    /// The component.
    pub component: String,
    /// Its resolved reference (a tag, no digest): what to ask the registry about.
    pub image: Reference,
    /// The digest `status.images` holds for this very reference, if any: used again,
    /// so a tag that moves in the registry does not roll the workload by itself.
    pub known: Option<Digest>,
}

/// A `Berth`'s spec as berth-core reads it, parsed once per reconcile: its
/// components, and how messages name it. Pinning and planning both start here.
pub struct Parsed {
    /// The namespace it lives in (and its workloads with it).
    namespace: String,
    /// `Berth ns/name`.
    origin: String,
    /// `spec.images` as berth-core's components.
    components: Vec<Component>,
    /// `spec.variants`: `(component, variant)`.
    variants: Vec<(String, String)>,
}

/// Parses `berth`'s images; an invalid one is the reconcile's problem at once.
pub fn parse(berth: &Berth, namespace: &str) -> Result<Parsed, Problem> {
    Ok(Parsed {
        namespace: namespace.to_string(),
        origin: origin(berth, namespace),
        components: components(berth)?,
        variants: (berth.spec.variants.iter())
            .map(|(c, v)| (c.clone(), v.clone()))
            .collect(),
    })
}

/// The images a reconcile must pin before `plan` (see [`Parsed::pin_requests`]);
/// an invalid spec gives none.
pub fn pin_requests(berth: &Berth, namespace: &str) -> Vec<PinRequest> {
    parse(berth, namespace)
        .map(|parsed| parsed.pin_requests(berth))
        .unwrap_or_default()
}

impl Parsed {
    /// The resolution of the components, before any pin.
    fn resolve(&self) -> Result<resolve::Resolution<'_>, Problem> {
        let overrides = Overrides {
            variants: self.variants.clone(),
            names: resolve::SourceNames {
                variant: "spec.variants.{component}: ".into(),
                ..resolve::SourceNames::default()
            },
            ..Overrides::default()
        };
        resolve::resolve_catalog(catalog(&self.origin, &self.components), &overrides, &|_| {
            None
        })
        .map_err(|e| problem(Reason::InvalidImage, e.to_string()))
    }

    /// The images a reconcile must pin before `plan`.
    pub fn pin_requests(&self, berth: &Berth) -> Vec<PinRequest> {
        let Ok(resolution) = self.resolve() else {
            return Vec::new(); // `plan` reports it
        };
        let recorded = berth
            .status
            .as_ref()
            .map(|s| s.images.as_slice())
            .unwrap_or_default();
        resolution
            .images
            .iter()
            .filter(|i| i.reference.digest().is_none())
            .filter(|i| {
                berth
                    .spec
                    .images
                    .get(&i.component.name)
                    .is_some_and(|s| s.pin)
            })
            .map(|i| {
                let known = recorded
                    .iter()
                    .filter(|r| r.component == i.component.name)
                    .filter_map(|r| Reference::parse(&r.image).ok())
                    .find(|r| {
                        r.repository() == i.reference.repository() && r.tag() == i.reference.tag()
                    })
                    .and_then(|r| r.digest().cloned());
                PinRequest {
                    component: i.component.name.clone(),
                    image: i.reference.clone(),
                    known,
                }
            })
            .collect()
    }
}

/// `spec.workloads` as trees to render, each checked: a kind with a rollout, in
/// the Berth's own namespace.
fn workloads(berth: &Berth, namespace: &str) -> Result<Vec<berth_yaml::Node>, Problem> {
    let mut workloads = Vec::new();
    for (i, workload) in berth.spec.workloads.iter().enumerate() {
        let kind = workload
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !berth_core::kinds::WorkloadKind::parse(kind).is_some_and(|k| k.has_rollout()) {
            return Err(problem(
                Reason::InvalidSpec,
                format!("spec.workloads[{i}]: kind `{kind}`: a Berth manages Deployments, StatefulSets, DaemonSets and Jobs"),
            ));
        }
        if let Some(ns) = workload
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
        {
            if ns != namespace {
                return Err(problem(
                    Reason::InvalidSpec,
                    format!("spec.workloads[{i}]: namespace `{ns}`: a Berth's workloads live in its own namespace (`{namespace}`)"),
                ));
            }
        }
        workloads.push(berth_yaml::json::from_json(workload));
    }
    Ok(workloads)
}

/// How messages name the resource: `Berth ns/name`.
fn origin(berth: &Berth, namespace: &str) -> String {
    format!(
        "Berth {namespace}/{}",
        berth.metadata.name.as_deref().unwrap_or_default()
    )
}

/// What the resolver reads of a `Berth`: its components, and no variables (a
/// controller takes its overrides from the resource).
fn catalog<'c>(origin: &'c str, components: &'c [Component]) -> resolve::Catalog<'c> {
    resolve::Catalog {
        file: origin,
        components,
        registry_env: None,
        tag_env: None,
    }
}

/// The components of `spec.images`, as berth-core's type.
fn components(berth: &Berth) -> Result<Vec<Component>, Problem> {
    let mut components = Vec::new();
    for (component, spec) in &berth.spec.images {
        let field = format!("spec.images.{component}");
        let image = Reference::parse(&spec.image)
            .map_err(|e| problem(Reason::InvalidImage, format!("{field}.image: {e}")))?;
        let mut repositories = vec![image.repository().clone()];
        for (i, m) in spec.match_.iter().enumerate() {
            let r = Reference::parse(m)
                .map_err(|e| problem(Reason::InvalidImage, format!("{field}.match[{i}]: {e}")))?;
            if !repositories.contains(r.repository()) {
                repositories.push(r.repository().clone());
            }
        }
        let pull_policy = match &spec.pull_policy {
            None => None,
            Some(p) => Some(PullPolicy::parse(p).ok_or_else(|| {
                problem(
                    Reason::InvalidImage,
                    format!(
                        "{field}.pullPolicy: `{p}`: use one of auto, Always, IfNotPresent, Never"
                    ),
                )
            })?),
        };
        let variants = variants(&field, spec)?;
        for variant in &variants {
            if !repositories.contains(variant.image.repository()) {
                repositories.push(variant.image.repository().clone());
            }
        }
        components.push(Component::from_spec(ComponentSpec {
            name: component.clone(),
            image,
            pull_policy,
            repositories,
            deployed: true,
            resource: None,
            variants,
        }));
    }
    Ok(components)
}

/// `spec.images.X.variants` as berth-core's type.
fn variants(field: &str, spec: &crate::types::ImageSpec) -> Result<Vec<Variant>, Problem> {
    let mut out = Vec::new();
    for (name, variant) in &spec.variants {
        let here = format!("{field}.variants.{name}");
        let valid = !name.is_empty()
            && name != berth_core::project::DEFAULT_VARIANT
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !valid {
            return Err(problem(Reason::InvalidImage, format!("{here}: a variant name is lowercase letters, digits and `-`, and not `default`")));
        }
        let image = Reference::parse(&variant.image)
            .map_err(|e| problem(Reason::InvalidImage, format!("{here}.image: {e}")))?;
        out.push(Variant {
            name: name.clone(),
            image,
            tag_suffix: variant.tag_suffix.clone(),
            platform: None,
            resource: None,
            pos: berth_yaml::Pos::default(),
        });
    }
    Ok(out)
}

/// The bytes of `reference` in `sources`, or why they are missing.
fn read<'s>(
    sources: &'s Sources,
    kind: SourceKind,
    reference: &KeyRef,
    field: &str,
) -> Result<&'s [u8], Problem> {
    let data = sources
        .get(&(kind, reference.name.clone()))
        .and_then(Option::as_ref)
        .ok_or_else(|| {
            problem(
                Reason::SourceMissing,
                format!(
                    "{field}: {} `{}` does not exist in this namespace; create it (sources are read from the Berth's own namespace only)",
                    kind.label(),
                    reference.name
                ),
            )
        })?;
    data.get(&reference.key).map(Vec::as_slice).ok_or_else(|| {
        problem(
            Reason::SourceMissing,
            format!(
                "{field}: {} `{}` has no key `{}` (it has: {})",
                kind.label(),
                reference.name,
                reference.key,
                data.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        )
    })
}

/// YAML text of a JSON value (the typed `inline` data of a config).
fn yaml_text(value: &Value) -> Vec<u8> {
    let mut out = String::new();
    berth_yaml::write_document(&mut out, &berth_yaml::json::from_json(value));
    out.into_bytes()
}

/// A config's data read from the object `r` names: the generated kind follows
/// the source's (a Secret's data stays in a Secret), the source's label
/// (`secret/NAME`) and its key.
fn from_object(
    sources: &Sources,
    kind: SourceKind,
    r: &KeyRef,
    field: &str,
) -> Result<(ConfigKind, String, String, Vec<u8>), Problem> {
    let (generated, label, at) = match kind {
        SourceKind::ConfigMap => (ConfigKind::ConfigMap, "configMap", "fromConfigMap"),
        SourceKind::Secret => (ConfigKind::Secret, "secret", "fromSecret"),
    };
    let bytes = read(sources, kind, r, &format!("{field}.{at}"))?.to_vec();
    Ok((
        generated,
        format!("{label}/{}", r.name),
        r.key.clone(),
        bytes,
    ))
}

fn generate_configs(
    berth: &Berth,
    sources: &Sources,
) -> Result<(Vec<Generated>, Vec<ConfigStatus>), Problem> {
    let mut generated = Vec::new();
    let mut status = Vec::new();
    for (name, spec) in &berth.spec.configs {
        let field = format!("spec.configs.{name}");
        let (kind, source, default_key, bytes): (ConfigKind, String, String, Vec<u8>) =
            match (&spec.inline, &spec.from_config_map, &spec.from_secret) {
                (Some(inline), None, None) => (
                    ConfigKind::ConfigMap,
                    "inline".into(),
                    "config.yaml".into(),
                    yaml_text(inline),
                ),
                (None, Some(r), None) => from_object(sources, SourceKind::ConfigMap, r, &field)?,
                (None, None, Some(r)) => from_object(sources, SourceKind::Secret, r, &field)?,
                _ => {
                    return Err(problem(
                        Reason::InvalidSpec,
                        format!("{field}: set exactly one of inline, fromConfigMap, fromSecret"),
                    ))
                }
            };
        let key = spec.key.clone().unwrap_or(default_key);
        if let Some(schema) = &spec.schema {
            let data = Data {
                key: &key,
                bytes: &bytes,
                secret: kind == ConfigKind::Secret,
            };
            check_schema(name, &field, schema, data, sources)?;
        }
        let shape = ConfigShape {
            name: name.clone(),
            kind,
            secret_type: None,
            hash: true,
            immutable: true,
        };
        let config = configs::from_entries(&shape, [(key, bytes)])
            .map_err(|(_, e)| problem(Reason::InvalidSpec, format!("{field}: {e}")))?;
        status.push(ConfigStatus {
            name: name.clone(),
            source,
            sha256: config.content_sha256.clone(),
            object: config.name.clone(),
        });
        generated.push(config);
    }
    Ok((generated, status))
}

/// A config's data as a schema checks it: its key, bytes, and whether it is a
/// Secret's (whose values are never shown).
struct Data<'a> {
    key: &'a str,
    bytes: &'a [u8],
    secret: bool,
}

fn check_schema(
    name: &str,
    field: &str,
    schema: &crate::types::SchemaSource,
    data: Data<'_>,
    sources: &Sources,
) -> Result<(), Problem> {
    let Data { key, bytes, secret } = data;
    let (value, shown) = match (&schema.inline, &schema.config_map) {
        (Some(inline), None) => (inline.clone(), format!("{field}.schema.inline")),
        (None, Some(r)) => {
            let text = read(
                sources,
                SourceKind::ConfigMap,
                r,
                &format!("{field}.schema.configMap"),
            )?;
            let value: Value = serde_json::from_slice(text).map_err(|e| {
                problem(
                    Reason::InvalidSchema,
                    format!(
                        "{field}.schema: configMap `{}` key `{}` is not JSON (line {}, column {})",
                        r.name,
                        r.key,
                        e.line(),
                        e.column()
                    ),
                )
            })?;
            (value, format!("configMap/{} key {}", r.name, r.key))
        }
        _ => {
            return Err(problem(
                Reason::InvalidSpec,
                format!("{field}.schema: set exactly one of inline, configMap"),
            ))
        }
    };
    let checker = Checker::from_value(&value, name, &shown, secret)
        .map_err(|why| problem(Reason::InvalidSchema, format!("{field}.schema: {why}")))?;
    let text = String::from_utf8_lossy(bytes);
    let violations = checker
        .check(key, &text)
        .map_err(|e| problem(Reason::SchemaViolation, format!("{field}: {e}")))?;
    if violations.is_empty() {
        Ok(())
    } else {
        Err(problem(
            Reason::SchemaViolation,
            checker.error(violations).to_string(),
        ))
    }
}

pub(crate) use berth_core::time::rfc3339;

impl Parsed {
    /// What `berth` wants in its namespace at time `now` (seconds since the
    /// epoch), from the sources read for it, with the spec parsed once
    /// ([`parse`]). Certificates that are expired or not yet valid are problems
    /// here (a controller has no one to warn).
    pub fn plan(
        &self,
        berth: &Berth,
        sources: &Sources,
        trust: Option<&[TrustBundle]>,
        pins: &Pins,
        now: i64,
    ) -> Result<Plan, Problem> {
        let (namespace, origin) = (self.namespace.as_str(), self.origin.as_str());
        let mut resolution = self.resolve()?;
        for image in &mut resolution.images {
            let wants_pin = berth
                .spec
                .images
                .get(&image.component.name)
                .is_some_and(|s| s.pin);
            if !wants_pin || image.reference.digest().is_some() {
                continue; // a digest written in the spec is more specific than any pin
            }
            let digest = pins.get(&image.component.name).ok_or_else(|| {
                problem(
                    Reason::PinFailed,
                    format!(
                        "spec.images.{}: `{}` has no digest yet",
                        image.component.name, image.reference
                    ),
                )
            })?;
            image.reference = image.reference.with_digest(digest.clone());
        }
        let (mut generated, configs) = generate_configs(berth, sources)?;
        let (bundles, ca_bundles) = build_bundles(berth, sources, trust, now)?;
        generated.extend(bundles);
        let workloads = workloads(berth, namespace)?;
        let bundle_specs = bundle_specs(berth);
        let definitions = generated
            .iter()
            .map(|g| {
                let section = if configs.iter().any(|c| c.object == g.name) {
                    "configs"
                } else {
                    "caBundles"
                };
                Definition {
                    origin: origin.to_string(),
                    pos: None,
                    field: format!("spec.{section}.{}", g.base_name),
                }
            })
            .collect();
        let spec = Spec::new(
            origin.to_string(),
            &resolution,
            &generated,
            definitions,
            bundle_specs.iter().collect(),
        );
        let inputs = [Input::objects(
            berth_core::place::File::Name(format!("{origin} spec.workloads")),
            workloads,
        )];
        let rendered = render::render_objects(&spec, &inputs)
            .map_err(|e| problem(Reason::InvalidSpec, e.to_string()))?;
        let images = resolution
            .images
            .iter()
            .map(|i| ImageStatus {
                component: i.component.name.clone(),
                image: i.reference.to_string(),
            })
            .collect();
        Ok(Plan {
            desired: Desired::from_rendered(
                berth.metadata.name.as_deref().unwrap_or_default(),
                &rendered.objects,
                &generated,
            ),
            images,
            configs,
            ca_bundles,
        })
    }
}

#[path = "bundles.rs"]
mod bundles;
pub(crate) use bundles::trust_bundle_source;
use bundles::{build_bundles, bundle_specs};

#[cfg(test)]
#[path = "desired_tests.rs"]
mod tests;
