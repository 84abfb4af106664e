//! Typed configs: each YAML/JSON file of a config is checked against the
//! config's JSON Schema (the draft `$schema` names: 4, 6, 7, 2019-09 or 2020-12, the last by default) before
//! anything is generated. Every violation is reported, with file, line,
//! column and JSON pointer. `$ref` may name local files only; they are read
//! up front through [`FileSource`], so validation never touches the network.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use berth_yaml::{Limits, Pos};
use serde_json::Value;

use super::FileSource;

/// One schema violation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The data file.
    pub file: String,
    /// Where the offending value is.
    pub pos: Pos,
    /// JSON pointer of the offending value (`""` is the whole document).
    pub pointer: String,
    /// What is wrong (without the value, for Secrets).
    pub message: String,
}

/// A typed config that fails its checks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// The schema itself cannot be used.
    #[error("{file}:{pos}: configs.{config}: schema `{path}`: {reason}")]
    Schema {
        /// The project file.
        file: String,
        /// Where `schema:` is.
        pos: Pos,
        /// The config.
        config: String,
        /// The schema path.
        path: String,
        /// Why.
        reason: Unusable,
    },
    /// A data file is not valid YAML/JSON.
    #[error("{file}:{source} (a file of configs.{config}, which has a schema)")]
    Data {
        /// The data file.
        file: String,
        /// The YAML error.
        source: berth_yaml::Error,
        /// The config.
        config: String,
    },
    /// Data files violate the schema.
    #[error("{}", render_violations(config, schema, violations))]
    Violations {
        /// The config.
        config: String,
        /// The schema path.
        schema: String,
        /// Every violation, in file order.
        violations: Vec<Violation>,
    },
}

/// Why a schema cannot be used. The text names the file, the reference or
/// where in the schema, never the schema's values (a `schema:` pointing at the
/// wrong file may point at a secret).
#[derive(Debug, Clone, thiserror::Error)]
pub enum Unusable {
    /// The file cannot be read.
    #[error("cannot read `{path}`: {source}")]
    Unreadable {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::sync::Arc<std::io::Error>,
    },
    /// The file is not UTF-8.
    #[error("`{0}` is not UTF-8")]
    NotUtf8(String),
    /// The file is not YAML or JSON.
    #[error("`{path}`:{source}")]
    NotYaml {
        /// The file.
        path: String,
        /// Where and why.
        #[source]
        source: Box<berth_yaml::Error>,
    },
    /// The file has no document.
    #[error("`{0}` is empty")]
    Empty(String),
    /// A `$ref` names a remote document.
    #[error("`$ref: {0}` is remote; berth validates offline, so $ref may name local files only")]
    RemoteRef(String),
    /// `$schema` is not a string.
    #[error("`$schema` is not text")]
    DraftNotText,
    /// `$schema` names no draft berth knows.
    #[error("`$schema` is `{}`, which is no JSON Schema draft berth knows; use one of http://json-schema.org/draft-04/schema#, draft-06, draft-07, https://json-schema.org/draft/2019-09/schema or https://json-schema.org/draft/2020-12/schema", berth_io::shown(.0))]
    UnknownDraft(String),
    /// The validator refuses it (where in the schema, or the `$ref` it could not resolve).
    #[error("{0}")]
    Invalid(String),
}

fn render_violations(config: &str, schema: &str, violations: &[Violation]) -> String {
    let mut out = format!(
        "configs.{config}: {} violation(s) of {schema}:",
        violations.len()
    );
    for v in violations {
        let pointer = if v.pointer.is_empty() {
            "(document)"
        } else {
            v.pointer.as_str()
        };
        out.push_str(&format!(
            "\n  {}:{}: {pointer}: {}",
            v.file, v.pos, v.message
        ));
    }
    out
}

/// A schema, ready to check files.
pub struct Checker {
    validator: jsonschema::Validator,
    config: String,
    schema: String,
    secret: bool,
}

/// What the caller knows about the schema: where `schema:` is written and the file's path.
pub struct SchemaSource<'a> {
    /// The project file (for messages).
    pub project_file: &'a str,
    /// Where `schema:` is written.
    pub pos: Pos,
    /// The config's name.
    pub config: &'a str,
    /// The path as written.
    pub written: &'a str,
    /// The absolute path.
    pub path: &'a Path,
    /// Whether the config is a Secret (messages then omit values).
    pub secret: bool,
}

impl Checker {
    /// Loads the schema and every local file it refers to.
    pub fn load(source: &SchemaSource<'_>, files: &dyn FileSource) -> Result<Checker, SchemaError> {
        let fail = |reason: Unusable| SchemaError::Schema {
            file: source.project_file.to_string(),
            pos: source.pos,
            config: source.config.to_string(),
            path: source.written.to_string(),
            reason,
        };
        let root = read_json(files, source.path).map_err(&fail)?;
        let mut documents = HashMap::new();
        collect_refs(&root, source.path, files, &mut documents).map_err(&fail)?;
        let draft = draft_of(&root).map_err(&fail)?;
        let validator = jsonschema::options()
            .with_draft(draft)
            .with_base_uri(file_uri(source.path))
            .with_retriever(LocalOnly(documents))
            .build(&root)
            .map_err(|e| fail(unusable(&e)))?;
        Ok(Checker {
            validator,
            config: source.config.to_string(),
            schema: source.written.to_string(),
            secret: source.secret,
        })
    }

    /// A schema given as a value (a controller's inline schema, or one read from a
    /// ConfigMap), named `shown` in messages. Only references inside the schema
    /// itself resolve: nothing is fetched. On failure, why (never the document).
    pub fn from_value(
        schema: &Value,
        config: &str,
        shown: &str,
        secret: bool,
    ) -> Result<Checker, Unusable> {
        let draft = draft_of(schema)?;
        let validator = jsonschema::options()
            .with_draft(draft)
            .with_retriever(LocalOnly(HashMap::new()))
            .build(schema)
            .map_err(|e| unusable(&e))?;
        Ok(Checker {
            validator,
            config: config.to_string(),
            schema: shown.to_string(),
            secret,
        })
    }

    /// Every violation in the documents of `text` (named `file` in messages).
    pub fn check(&self, file: &str, text: &str) -> Result<Vec<Violation>, SchemaError> {
        let mut out = Vec::new();
        for doc in berth_yaml::Documents::new(text, Limits::default()) {
            let doc = doc.map_err(|source| SchemaError::Data {
                file: file.to_string(),
                source,
                config: self.config.clone(),
            })?;
            let mut positions = HashMap::new();
            let instance = berth_yaml::json::to_json_positions(&doc, &mut positions);
            for error in self.validator.iter_errors(&instance) {
                let pointer = error.instance_path().as_str().to_string();
                // An unexpected key is best shown where the key is written.
                let key_pos = match error.kind() {
                    jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } => {
                        unexpected.first().and_then(|key| {
                            positions
                                .get(&format!(
                                    "{pointer}/{}{}",
                                    berth_yaml::json::escape(key),
                                    berth_yaml::json::KEY_MARK
                                ))
                                .copied()
                        })
                    }
                    _ => None,
                };
                let pos = key_pos
                    .or_else(|| nearest(&positions, &pointer))
                    .unwrap_or(doc.pos);
                let message = if self.secret {
                    let keyword = error
                        .schema_path()
                        .as_str()
                        .rsplit('/')
                        .next()
                        .unwrap_or_default()
                        .to_string();
                    format!("does not satisfy `{keyword}` (value hidden: this config is a Secret)")
                } else {
                    error.to_string()
                };
                out.push(Violation {
                    file: file.to_string(),
                    pos,
                    pointer,
                    message,
                });
            }
        }
        Ok(out)
    }

    /// Wraps violations into the error that reports them.
    pub fn error(&self, violations: Vec<Violation>) -> SchemaError {
        SchemaError::Violations {
            config: self.config.clone(),
            schema: self.schema.clone(),
            violations,
        }
    }
}

/// The position of `pointer`, or of its nearest ancestor that has one.
fn nearest(positions: &HashMap<String, Pos>, pointer: &str) -> Option<Pos> {
    let mut current = pointer;
    loop {
        if let Some(pos) = positions.get(current) {
            return Some(*pos);
        }
        current = &current[..current.rfind('/')?];
    }
}

/// Why a schema cannot be used, naming only where in it: the validator's own text
/// quotes the offending value, which may be a secret (a `schema:` pointing at the
/// wrong file) and is the whole document when the root is wrong.
/// The draft `$schema` names (draft 2020-12 without one); a `$schema` that
/// names no draft is an error, never validated as some other draft.
fn draft_of(schema: &Value) -> Result<jsonschema::Draft, Unusable> {
    let Some(uri) = schema.get("$schema") else {
        return Ok(jsonschema::Draft::Draft202012);
    };
    let Some(uri) = uri.as_str() else {
        return Err(Unusable::DraftNotText);
    };
    match jsonschema::Draft::from_schema_uri(uri) {
        jsonschema::Draft::Unknown => Err(Unusable::UnknownDraft(uri.to_string())),
        draft => Ok(draft),
    }
}

fn unusable(e: &jsonschema::ValidationError<'_>) -> Unusable {
    let at = e.schema_path().as_str().to_string();
    let retrieval = matches!(
        e.kind(),
        jsonschema::error::ValidationErrorKind::Referencing(_)
    );
    if retrieval {
        // A `$ref` berth did not load: the message names the reference, not data.
        return Unusable::Invalid(format!("not a usable JSON Schema: {e}"));
    }
    Unusable::Invalid(format!(
        "not a usable JSON Schema (at `{}`); check it with a JSON Schema validator",
        if at.is_empty() { "/" } else { at.as_str() }
    ))
}

/// `path` with `.` and `..` removed without touching the file system: the form
/// the validator resolves a relative `$ref` to, so the pre-loaded key matches.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

fn file_uri(path: &Path) -> String {
    let mut uri = String::from("file://");
    for c in path.to_string_lossy().chars() {
        match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '/' | '-' | '.' | '_' | '~' => uri.push(c),
            c => {
                let mut buf = [0; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    uri.push_str(&format!("%{b:02X}"));
                }
            }
        }
    }
    uri
}

/// Answers only from the files loaded up front.
struct LocalOnly(HashMap<String, Value>);

impl jsonschema::Retrieve for LocalOnly {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let key = uri.as_str().split('#').next().unwrap_or_default();
        self.0.get(key).cloned().ok_or_else(|| {
            format!("`{key}` is not a local file berth loaded; $ref may name local files only")
                .into()
        })
    }
}

fn read_json(files: &dyn FileSource, path: &Path) -> Result<Value, Unusable> {
    let shown = || path.display().to_string();
    let bytes = files.read(path).map_err(|source| Unusable::Unreadable {
        path: shown(),
        source: std::sync::Arc::new(source),
    })?;
    let text = String::from_utf8(bytes).map_err(|_| Unusable::NotUtf8(shown()))?;
    let doc = berth_yaml::load_all(&text, Limits::default())
        .map_err(|source| Unusable::NotYaml {
            path: shown(),
            source: Box::new(source),
        })?
        .into_iter()
        .next()
        .ok_or_else(|| Unusable::Empty(shown()))?;
    Ok(berth_yaml::json::to_json(&doc))
}

/// Two reasons are the same when they say the same (an I/O error has no equality).
impl PartialEq for Unusable {
    fn eq(&self, other: &Unusable) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for Unusable {}

/// Loads every file a `$ref` names (relative to the file it is in), transitively.
fn collect_refs(
    value: &Value,
    from: &Path,
    files: &dyn FileSource,
    loaded: &mut HashMap<String, Value>,
) -> Result<(), Unusable> {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get("$ref") {
                let target = reference.split('#').next().unwrap_or_default();
                if target.contains("://") && !target.starts_with("file://") {
                    return Err(Unusable::RemoteRef(reference.clone()));
                }
                if !target.is_empty() {
                    let relative = target.strip_prefix("file://").unwrap_or(target);
                    let path = normalize(&from.parent().unwrap_or(Path::new("/")).join(relative));
                    let uri = file_uri(&path);
                    if let std::collections::hash_map::Entry::Vacant(slot) = loaded.entry(uri) {
                        let doc = read_json(files, &path)?;
                        slot.insert(doc.clone());
                        collect_refs(&doc, &path, files, loaded)?;
                    }
                }
            }
            map.values()
                .try_for_each(|v| collect_refs(v, from, files, loaded))
        }
        Value::Array(items) => items
            .iter()
            .try_for_each(|v| collect_refs(v, from, files, loaded)),
        _ => Ok(()),
    }
}

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;
