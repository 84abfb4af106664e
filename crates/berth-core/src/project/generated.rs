//! `configs:` of berth.yaml, and the field readers the trust and config
//! sections share (what a CA bundle is lives in `trust.rs`).

use berth_yaml::{Node, Pos};

use super::{Loader, ProjectError};

pub(super) const CONFIG_KEYS: &[&str] = &[
    "files",
    "literals",
    "envs",
    "schema",
    "secret",
    "type",
    "immutable",
    "hash",
    "labels",
    "annotations",
];
/// A value with the position it was written at, for messages about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spanned<T> {
    /// The value.
    pub value: T,
    /// Where it is written in berth.yaml.
    pub pos: Pos,
}

/// One entry of `configs:`: a content-addressed ConfigMap or Secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigSpec {
    /// The base name; the generated object is `<name>-<suffix>`.
    pub name: String,
    /// Where the entry is.
    pub pos: Pos,
    /// `files:` (`path`, `key=path`, or a directory), as written.
    pub files: Vec<Spanned<String>>,
    /// `literals:` (`KEY=VALUE`), as written.
    pub literals: Vec<Spanned<String>>,
    /// `envs:` (files of `KEY=VALUE` lines), as written.
    pub envs: Vec<Spanned<String>>,
    /// `schema:`: a JSON Schema every YAML/JSON file of the config must meet.
    pub schema: Option<Spanned<String>>,
    /// `secret: true` makes a Secret.
    pub secret: bool,
    /// `type:` of the Secret (default `Opaque`).
    pub secret_type: Option<String>,
    /// `immutable:` (default: the value of `hash`, since a name that does not
    /// change with the content cannot hold immutable data that does).
    pub immutable: bool,
    /// `hash:` (default true): add the content-hash suffix to the name.
    pub hash: bool,
    /// `labels:` put on the generated object (an operator's cache may select by one).
    pub labels: Vec<(String, String)>,
    /// `annotations:` put on the generated object.
    pub annotations: Vec<(String, String)>,
}

/// Kubernetes object names: lowercase DNS subdomain; room is left for the suffix.
fn is_object_name(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric())
}

impl Loader<'_> {
    pub(super) fn bool(&self, node: &Node, key: &str) -> Result<bool, ProjectError> {
        match node
            .as_scalar()
            .filter(|s| s.style == berth_yaml::Style::Plain)
            .map(|s| s.text.as_str())
        {
            Some("true") => Ok(true),
            Some("false") => Ok(false),
            _ => Err(self.wrong(node, key, "`true` or `false`")),
        }
    }

    pub(super) fn strings(
        &self,
        node: &Node,
        key: &str,
    ) -> Result<Vec<Spanned<String>>, ProjectError> {
        self.list(node, key, "a list of strings")?
            .iter()
            .map(|item| {
                Ok(Spanned {
                    value: self.string(item, key)?.to_string(),
                    pos: item.pos,
                })
            })
            .collect()
    }

    fn entry_name(&self, key: &Node, section: &str, max: usize) -> Result<String, ProjectError> {
        let name = self.string(key, section)?;
        if !is_object_name(name, max) {
            return Err(ProjectError::InvalidValue {
                file: self.file.to_string(),
                pos: key.pos,
                key: section.to_string(),
                value: name.to_string(),
                reason: "a name is lowercase letters, digits, `-` and `.`, starting and ending with a letter or digit, \
                         short enough for the 11-character hash suffix",
            });
        }
        Ok(name.to_string())
    }

    /// The entries of a section of named objects, each name checked (at most
    /// `max` characters).
    pub(super) fn named<'n>(
        &self,
        node: &'n Node,
        section: &str,
        expected: &'static str,
        max: usize,
    ) -> Result<Vec<(String, &'n Node, &'n Node)>, ProjectError> {
        self.mapping(node, section, expected)?
            .iter()
            .map(|(key, value)| Ok((self.entry_name(key, section, max)?, key, value)))
            .collect()
    }

    pub(super) fn configs(&self, node: &Node) -> Result<Vec<ConfigSpec>, ProjectError> {
        let mut out = Vec::new();
        // 253 characters for an object name, minus `-` and the 10-character suffix.
        for (name, key, value) in self.named(node, "configs", "a mapping of config names", 242)? {
            let context = format!("configs.{name}");
            let mut spec = ConfigSpec {
                name,
                pos: key.pos,
                files: Vec::new(),
                literals: Vec::new(),
                envs: Vec::new(),
                schema: None,
                secret: false,
                secret_type: None,
                immutable: true,
                hash: true,
                labels: Vec::new(),
                annotations: Vec::new(),
            };
            let mut immutable = None;
            for (k, v) in self.fields(value, &context, CONFIG_KEYS)? {
                let field = format!("{context}.{}", k.as_str().unwrap_or_default());
                match k.as_str().unwrap_or_default() {
                    "files" => spec.files = self.strings(v, &field)?,
                    "literals" => spec.literals = self.strings(v, &field)?,
                    "envs" => spec.envs = self.strings(v, &field)?,
                    "schema" => {
                        spec.schema = Some(Spanned {
                            value: self.string(v, &field)?.to_string(),
                            pos: v.pos,
                        })
                    }
                    "secret" => spec.secret = self.bool(v, &field)?,
                    "type" => spec.secret_type = Some(self.string(v, &field)?.to_string()),
                    "immutable" => immutable = Some(self.bool(v, &field)?),
                    "hash" => spec.hash = self.bool(v, &field)?,
                    "labels" => spec.labels = self.metadata_map(v, &field, true)?,
                    "annotations" => spec.annotations = self.metadata_map(v, &field, false)?,
                    _ => {}
                }
            }
            spec.immutable = immutable.unwrap_or(spec.hash);
            if spec.secret_type.is_some() && !spec.secret {
                return Err(self.invalid(
                    value,
                    &format!("{context}.type"),
                    spec.secret_type.as_deref().unwrap_or_default(),
                    "`type:` applies to Secrets; add `secret: true` or remove it",
                ));
            }
            out.push(spec);
        }
        Ok(out)
    }

    /// `labels:` or `annotations:`: a mapping of text to text; label values are
    /// checked as the API server would (at most 63 characters of `[A-Za-z0-9._-]`).
    pub(super) fn metadata_map(
        &self,
        node: &Node,
        context: &str,
        labels: bool,
    ) -> Result<Vec<(String, String)>, ProjectError> {
        let entries = node.as_map().ok_or_else(|| ProjectError::WrongType {
            file: self.file.to_string(),
            pos: node.pos,
            key: context.to_string(),
            expected: "a mapping of names to text",
        })?;
        let mut out = Vec::new();
        for (k, v) in entries {
            let name = self.string(k, context)?;
            let value = self.string(v, &format!("{context}.{name}"))?;
            if let Some(problem) = qualified_name_problem(name) {
                return Err(self.invalid(k, context, name, problem));
            }
            if name == "app.kubernetes.io/managed-by"
                || name
                    .split_once('/')
                    .is_some_and(|(prefix, _)| prefix == "berth.dev")
            {
                return Err(self.invalid(
                    k,
                    context,
                    name,
                    "berth sets this key itself (`app.kubernetes.io/managed-by` and every `berth.dev/` key): clean-up and rollback find their objects by them; use a key of your own",
                ));
            }
            let value_ok = !labels
                || (value.len() <= 63
                    && value
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')));
            if !value_ok {
                return Err(self.invalid(
                    v,
                    &format!("{context}.{name}"),
                    value,
                    "a label value is at most 63 letters, digits, `-`, `_` and `.`",
                ));
            }
            out.push((name.to_string(), value.to_string()));
        }
        // The API server refuses an object whose annotations total more than 256 KiB.
        let total: usize = out.iter().map(|(k, v)| k.len() + v.len()).sum();
        if !labels && total > ANNOTATIONS_MAX {
            return Err(self.invalid(
                node,
                context,
                &format!("({total} bytes)"),
                "the API server refuses annotations that total more than 256 KiB; keep large data in the config itself",
            ));
        }
        Ok(out)
    }

    pub(super) fn check_generated_names(
        &self,
        project: &super::Project,
    ) -> Result<(), ProjectError> {
        let mut seen: Vec<(&str, &'static str)> = Vec::new();
        let all = project
            .configs
            .iter()
            .map(|c| (c.name.as_str(), c.pos, "configs"))
            .chain(
                project
                    .ca_bundles
                    .iter()
                    .map(|b| (b.name.as_str(), b.pos, "caBundles")),
            );
        for (name, pos, section) in all {
            if let Some((_, first)) = seen.iter().find(|(n, _)| *n == name) {
                return Err(ProjectError::DuplicateName {
                    file: self.file.to_string(),
                    pos,
                    name: name.to_string(),
                    first,
                    second: section,
                });
            }
            seen.push((name, section));
        }
        Ok(())
    }
}

/// The most the API server accepts for all of an object's annotations together.
const ANNOTATIONS_MAX: usize = 256 * 1024;

/// Why `key` is not a Kubernetes label or annotation key (`[prefix/]name`: the
/// prefix a lowercase DNS subdomain of at most 253 characters, the name at most
/// 63 letters, digits, `-`, `_` and `.`, starting and ending alphanumeric).
fn qualified_name_problem(key: &str) -> Option<&'static str> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        let subdomain = !prefix.is_empty()
            && prefix.len() <= 253
            && prefix.split('.').all(|label| {
                !label.is_empty()
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            });
        if !subdomain {
            return Some(
                "the prefix before `/` is not a lowercase DNS subdomain (such as `example.com`); the API server refuses it",
            );
        }
    }
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    (!ok).then_some(
        "a key is `[prefix/]name`: a name of at most 63 letters, digits, `-`, `_` and `.` that starts and ends with a letter or digit, after an optional lowercase DNS prefix",
    )
}
