//! Generated, content-addressed ConfigMaps and Secrets (`configs:`).
//!
//! Data assembly follows kustomize's configMapGenerator: env files, then
//! literals, then files; duplicate keys are errors; non-UTF-8 content goes to
//! `binaryData` (a Secret holds everything base64 in `data`). The name suffix
//! is kustomize's ([`hash`]). File contents come through [`FileSource`], so
//! this module does no I/O of its own.

pub mod ca;
mod ca_password;
pub mod hash;
pub use berth_trust::rehash;
pub mod schema;
mod sources;
pub mod trust_bundles;
pub use berth_trust::truststore;

use std::path::{Path, PathBuf};

use base64::Engine as _;
use berth_yaml::{Node, Pos, Value};

use crate::project::{ConfigSpec, Project};
pub use sources::{parse_env_file, FileSource};

/// ConfigMap or Secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ConfigKind {
    /// A ConfigMap.
    ConfigMap,
    /// A Secret.
    Secret,
}

impl ConfigKind {
    /// The Kubernetes kind.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfigKind::ConfigMap => "ConfigMap",
            ConfigKind::Secret => "Secret",
        }
    }
}

/// A generated ConfigMap or Secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    /// The base name (`configs:` key); references to it are rewritten.
    pub base_name: String,
    /// The generated name: `<base>-<suffix>`, or the base with `hash: false`.
    pub name: String,
    /// ConfigMap or Secret.
    pub kind: ConfigKind,
    /// Secret type.
    pub secret_type: Option<String>,
    /// `data`, sorted by key (base64 for Secrets).
    pub data: Vec<(String, String)>,
    /// `binaryData` (base64), sorted by key.
    pub binary_data: Vec<(String, String)>,
    /// `immutable: true`.
    pub immutable: bool,
    /// Whether the name carries the content hash; if not, pods get an annotation.
    pub hashed: bool,
    /// SHA-256 (hex) of the content, as kustomize encodes it.
    pub content_sha256: String,
    /// Labels for the object's metadata (not part of the hash, as in kustomize).
    pub labels: Vec<(String, String)>,
    /// Annotations for the object's metadata.
    pub annotations: Vec<(String, String)>,
}

/// Why a config cannot be generated. Values are never included: a config
/// may be a Secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A Secret of a built-in type lacks a key the API server requires of it.
    #[error("{file}:{pos}: {config}: {reason}")]
    TypeKeys {
        /// The project file.
        file: String,
        /// Where the config is defined.
        pos: Pos,
        /// `configs.NAME`.
        config: String,
        /// Which keys, and how to add them.
        reason: String,
    },
    /// More data than the API server stores in one object.
    #[error("{file}:{pos}: {config}: {reason}")]
    TooLarge {
        /// The project file.
        file: String,
        /// Where the entry that crossed the limit is named.
        pos: Pos,
        /// `configs.NAME`.
        config: String,
        /// What was too large, and what to do.
        reason: String,
    },
    /// A source file or directory cannot be read.
    #[error("{file}:{pos}: {config}: cannot read `{path}`: {reason}")]
    Read {
        /// The project file.
        file: String,
        /// Where the source is named.
        pos: Pos,
        /// `configs.<name>`.
        config: String,
        /// The path as written.
        path: String,
        /// The operating system's explanation.
        reason: String,
    },
    /// A source entry is malformed (`key=path`, `KEY=VALUE`).
    #[error("{file}:{pos}: {config}: {reason}")]
    Source {
        /// The project file.
        file: String,
        /// Where the entry is.
        pos: Pos,
        /// `configs.<name>`.
        config: String,
        /// What is wrong and how to write it.
        reason: String,
    },
    /// A line of an env file is malformed.
    #[error("{path}:{line}: {reason} (used by {config})")]
    EnvLine {
        /// The env file.
        path: String,
        /// Its line number.
        line: usize,
        /// What is wrong.
        reason: String,
        /// `configs.<name>`.
        config: String,
    },
    /// A key is not a valid ConfigMap/Secret key.
    #[error("{file}:{pos}: {config}: invalid key `{key}`: a key is letters, digits, `-`, `_` and `.` (at most 253, not `.` or `..`)")]
    InvalidKey {
        /// The project file.
        file: String,
        /// Where the source of the key is named.
        pos: Pos,
        /// `configs.<name>`.
        config: String,
        /// The key.
        key: String,
    },
    /// A typed config fails its schema (or the schema cannot be used).
    #[error(transparent)]
    Schema(#[from] schema::SchemaError),
    /// Two sources give the same key.
    #[error("{file}:{pos}: {config}: key `{key}` is given twice; each key may come from one source only")]
    DuplicateKey {
        /// The project file.
        file: String,
        /// Where the second source is named.
        pos: Pos,
        /// `configs.<name>`.
        config: String,
        /// The key.
        key: String,
    },
}

pub use crate::names::is_config_key;

/// Generates every `configs:` entry of the project, in file order.
pub fn generate_all(
    project: &Project,
    files: &dyn FileSource,
) -> Result<Vec<Generated>, ConfigError> {
    project
        .configs
        .iter()
        .map(|spec| generate(project, spec, files))
        .collect()
}

/// What a generated config is, apart from its data: the entry point for
/// callers whose data does not come from project files (the controller reads
/// ConfigMaps and typed data from its custom resource).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigShape {
    /// The base name; the generated name is `<name>-<suffix>` when `hash`.
    pub name: String,
    /// ConfigMap or Secret.
    pub kind: ConfigKind,
    /// The Secret type (`Opaque` when `None`); ignored for ConfigMaps.
    pub secret_type: Option<String>,
    /// Whether the name carries the content hash.
    pub hash: bool,
    /// `immutable: true`.
    pub immutable: bool,
}

/// A key [`from_entries`] refuses. Values are never included.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    /// Not a valid ConfigMap/Secret key.
    #[error("invalid key `{0}`: a key is letters, digits, `-`, `_` and `.` (at most 253, not `.` or `..`)")]
    InvalidKey(String),
    /// Given twice.
    #[error("key `{0}` is given twice; each key may come from one source only")]
    DuplicateKey(String),
    /// More data than one object may hold.
    #[error("with key `{key}` the data reaches {bytes} bytes, more than the 1 MiB the API server stores in one object; split it into several configs, or mount large files another way")]
    TooLarge {
        /// The key that crossed the limit.
        key: String,
        /// The data's size so far (base64 counted as stored).
        bytes: usize,
    },
}

/// The most data one ConfigMap or Secret holds: etcd's 1.5 MiB request limit, less
/// room for the rest of the object, as the API server enforces it (`1 MiB`).
pub const MAX_OBJECT_DATA: usize = 1 << 20;

/// Builds a config from `(key, bytes)` entries: UTF-8 values go to `data`,
/// others to `binaryData` (everything base64 in a Secret's `data`), sorted, with
/// kustomize's name suffix. On a bad key, its index among `entries` and why.
pub fn from_entries(
    shape: &ConfigShape,
    entries: impl IntoIterator<Item = (String, Vec<u8>)>,
) -> Result<Generated, (usize, EntryError)> {
    let mut data: Vec<(String, String)> = Vec::new();
    let mut binary: Vec<(String, String)> = Vec::new();
    let mut keys = std::collections::HashSet::new();
    let b64 = base64::engine::general_purpose::STANDARD;
    let secret = shape.kind == ConfigKind::Secret;
    let mut total = 0;
    for (index, (key, value)) in entries.into_iter().enumerate() {
        if !is_config_key(&key) {
            return Err((index, EntryError::InvalidKey(key)));
        }
        if !keys.insert(key.clone()) {
            return Err((index, EntryError::DuplicateKey(key)));
        }
        let stored = match (secret, String::from_utf8(value)) {
            (true, Ok(text)) => (&mut data, b64.encode(text)),
            (true, Err(e)) => (&mut data, b64.encode(e.into_bytes())),
            (false, Ok(text)) => (&mut data, text),
            (false, Err(e)) => (&mut binary, b64.encode(e.into_bytes())),
        };
        total += key.len() + stored.1.len();
        if total > MAX_OBJECT_DATA {
            return Err((index, EntryError::TooLarge { key, bytes: total }));
        }
        stored.0.push((key, stored.1));
    }
    data.sort();
    binary.sort();
    let secret_type = secret.then(|| shape.secret_type.clone().unwrap_or_else(|| "Opaque".into()));
    let input = hash::HashInput {
        kind: shape.kind.as_str(),
        secret_type: secret_type.as_deref(),
        data: &data,
        binary_data: &binary,
    };
    let (name, content_sha256) = hash::name_and_hash(&shape.name, shape.hash, &input);
    Ok(Generated {
        base_name: shape.name.clone(),
        name,
        kind: shape.kind,
        secret_type,
        data,
        binary_data: binary,
        immutable: shape.immutable,
        hashed: shape.hash,
        content_sha256,
        labels: Vec::new(),
        annotations: Vec::new(),
    })
}

/// Generates one of the project's configs, reading its sources through `files`.
pub fn generate(
    project: &Project,
    spec: &ConfigSpec,
    files: &dyn FileSource,
) -> Result<Generated, ConfigError> {
    let pairs = sources::collect(project, spec, files)?;
    if let Some(schema) = &spec.schema {
        check_schema(project, spec, schema, &pairs, files)?;
    }
    let shape = ConfigShape {
        name: spec.name.clone(),
        kind: if spec.secret {
            ConfigKind::Secret
        } else {
            ConfigKind::ConfigMap
        },
        secret_type: spec.secret_type.clone(),
        hash: spec.hash,
        immutable: spec.immutable,
    };
    let positions: Vec<Pos> = pairs.iter().map(|p| p.pos).collect();
    let mut generated = from_entries(&shape, pairs.into_iter().map(|p| (p.key, p.value))).map_err(
        |(index, error)| {
            let (file, pos, config) = (
                project.file.clone(),
                positions[index],
                format!("configs.{}", spec.name),
            );
            match error {
                EntryError::InvalidKey(key) => ConfigError::InvalidKey {
                    file,
                    pos,
                    config,
                    key,
                },
                EntryError::DuplicateKey(key) => ConfigError::DuplicateKey {
                    file,
                    pos,
                    config,
                    key,
                },
                too_large @ EntryError::TooLarge { .. } => ConfigError::TooLarge {
                    file,
                    pos,
                    config,
                    reason: too_large.to_string(),
                },
            }
        },
    )?;
    if let Some(secret_type) = &spec.secret_type {
        let has = |key: &str| generated.data.iter().any(|(k, _)| k == key);
        let missing: Vec<&str> = match required_keys(secret_type) {
            // basic-auth: either key will do.
            Some(keys) if secret_type == "kubernetes.io/basic-auth" => {
                if keys.iter().any(|k| has(k)) {
                    Vec::new()
                } else {
                    keys.to_vec()
                }
            }
            Some(keys) => keys.iter().copied().filter(|k| !has(k)).collect(),
            None => Vec::new(),
        };
        if !missing.is_empty() {
            return Err(ConfigError::TypeKeys {
                file: project.file.clone(),
                pos: spec.pos,
                config: format!("configs.{}", spec.name),
                reason: format!(
                    "a Secret of type `{secret_type}` needs the key{} {} (the API server refuses it without); add {} to its sources, e.g. `files: [tls.crt, tls.key]`",
                    if missing.len() == 1 { "" } else { "s" },
                    missing.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(if secret_type == "kubernetes.io/basic-auth" { " or " } else { " and " }),
                    if missing.len() == 1 { "it" } else { "them" },
                ),
            });
        }
    }
    generated.labels = spec.labels.clone();
    generated.annotations = spec.annotations.clone();
    Ok(generated)
}

/// The keys the API server requires of a Secret of a built-in type.
fn required_keys(secret_type: &str) -> Option<&'static [&'static str]> {
    Some(match secret_type {
        "kubernetes.io/tls" => &["tls.crt", "tls.key"],
        "kubernetes.io/dockerconfigjson" => &[".dockerconfigjson"],
        "kubernetes.io/dockercfg" => &[".dockercfg"],
        "kubernetes.io/ssh-auth" => &["ssh-privatekey"],
        "kubernetes.io/basic-auth" => &["username", "password"],
        _ => return None,
    })
}

/// Checks every YAML/JSON file of a config against its schema; all violations at once.
fn check_schema(
    project: &Project,
    spec: &ConfigSpec,
    schema: &crate::project::Spanned<String>,
    pairs: &[sources::Pair],
    files: &dyn FileSource,
) -> Result<(), ConfigError> {
    let path = under(&project.dir, &schema.value);
    let checker = schema::Checker::load(
        &schema::SchemaSource {
            project_file: &project.file,
            pos: schema.pos,
            config: &spec.name,
            written: &schema.value,
            path: &path,
            secret: spec.secret,
        },
        files,
    )?;
    let mut violations = Vec::new();
    for pair in pairs {
        let Some(shown) = &pair.file else { continue };
        let typed = [".yaml", ".yml", ".json"]
            .iter()
            .any(|ext| shown.ends_with(ext));
        if !typed {
            continue;
        }
        let text = String::from_utf8_lossy(&pair.value);
        violations.extend(checker.check(shown, &text)?);
    }
    if violations.is_empty() {
        Ok(())
    } else {
        Err(checker.error(violations).into())
    }
}

impl Generated {
    /// The object, in `namespace` if given.
    pub fn to_node(&self, namespace: Option<&str>) -> Node {
        let s = |text: &str| Node::string(text, Pos::default());
        let map = |entries: Vec<(Node, Node)>| Node {
            pos: Pos::default(),
            tag: None,
            value: Value::Map(entries),
        };
        let mut metadata = vec![(s("name"), s(&self.name))];
        if let Some(ns) = namespace {
            metadata.push((s("namespace"), s(ns)));
        }
        // Each string map, under its key when it has entries.
        let section = |out: &mut Vec<(Node, Node)>, key: &str, pairs: &[(String, String)]| {
            if !pairs.is_empty() {
                out.push((
                    s(key),
                    map(pairs.iter().map(|(k, v)| (s(k), s(v))).collect()),
                ));
            }
        };
        section(&mut metadata, "labels", &self.labels);
        section(&mut metadata, "annotations", &self.annotations);
        let mut object = vec![
            (s("apiVersion"), s("v1")),
            (s("kind"), s(self.kind.as_str())),
            (s("metadata"), map(metadata)),
        ];
        if let Some(t) = &self.secret_type {
            object.push((s("type"), s(t)));
        }
        if self.immutable {
            object.push((s("immutable"), Node::plain("true", Pos::default())));
        }
        section(&mut object, "data", &self.data);
        section(&mut object, "binaryData", &self.binary_data);
        map(object)
    }
}

/// `dir.join(path)` for a path written in berth.yaml.
fn under(dir: &Path, written: &str) -> PathBuf {
    dir.join(written)
}

#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
