//! Where config data comes from: env files, literals and files, in that order.

use std::path::{Path, PathBuf};

use berth_yaml::Pos;

use super::{under, ConfigError};
use crate::project::{ConfigSpec, Project};

/// Read access to the project's files. The CLI reads the file system; tests
/// use a table. Paths are absolute (the project directory joined in).
pub trait FileSource {
    /// The bytes of a regular file.
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>>;
    /// The regular files directly inside `path` if it is a directory, else `None`.
    fn list_dir(&self, path: &Path) -> std::io::Result<Option<Vec<PathBuf>>>;
}

/// A key, its raw value, and where its source is named.
pub(super) struct Pair {
    pub key: String,
    pub value: Vec<u8>,
    pub pos: Pos,
    /// The file it came from (as written, or `dir/name`), for file sources.
    pub file: Option<String>,
}

pub(super) fn collect(
    project: &Project,
    spec: &ConfigSpec,
    files: &dyn FileSource,
) -> Result<Vec<Pair>, ConfigError> {
    let at = Where {
        project,
        context: format!("configs.{}", spec.name),
    };
    let mut pairs = Vec::new();
    for env in &spec.envs {
        let bytes = files
            .read(&under(&project.dir, &env.value))
            .map_err(|e| at.read(env.pos, &env.value, e))?;
        let lines = parse_env_file(&bytes).map_err(|(line, reason)| ConfigError::EnvLine {
            path: env.value.clone(),
            line,
            reason,
            config: at.context.clone(),
        })?;
        pairs.extend(lines.into_iter().map(|(key, value)| Pair {
            key,
            value: value.into_bytes(),
            pos: env.pos,
            file: None,
        }));
    }
    for literal in &spec.literals {
        let (key, value) = literal
            .value
            .split_once('=')
            .filter(|(k, _)| !k.is_empty())
            .ok_or_else(|| {
                at.source(
                    literal.pos,
                    "a literal is `KEY=VALUE` with a non-empty KEY".into(),
                )
            })?;
        pairs.push(Pair {
            key: key.to_string(),
            value: remove_quotes(value).as_bytes().to_vec(),
            pos: literal.pos,
            file: None,
        });
    }
    for source in &spec.files {
        pairs.extend(file_pairs(&at, source, files)?);
    }
    Ok(pairs)
}

/// Where a config's sources are named, for its errors.
struct Where<'a> {
    project: &'a Project,
    /// `configs.NAME`.
    context: String,
}

impl Where<'_> {
    /// A source that cannot be read.
    fn read(&self, pos: Pos, path: &str, e: std::io::Error) -> ConfigError {
        ConfigError::Read {
            file: self.project.file.clone(),
            pos,
            config: self.context.clone(),
            path: path.to_string(),
            reason: if path.contains('$') && e.kind() == std::io::ErrorKind::NotFound {
                format!("{e}; berth.yaml does not expand variables: write the path itself")
            } else {
                e.to_string()
            },
        }
    }

    /// A source written wrong.
    fn source(&self, pos: Pos, reason: String) -> ConfigError {
        ConfigError::Source {
            file: self.project.file.clone(),
            pos,
            config: self.context.clone(),
            reason,
        }
    }
}

/// The pairs of one `files:` entry: a file (under its name or `key=`), or each
/// file of a directory under its own name.
fn file_pairs(
    at: &Where<'_>,
    source: &crate::project::Spanned<String>,
    files: &dyn FileSource,
) -> Result<Vec<Pair>, ConfigError> {
    let (key, path) =
        parse_file_source(&source.value).map_err(|reason| at.source(source.pos, reason))?;
    let full = under(&at.project.dir, path);
    let listing = files
        .list_dir(&full)
        .map_err(|e| at.read(source.pos, path, e))?;
    match (listing, key) {
        (Some(_), Some(_)) => Err(at.source(
            source.pos,
            format!(
                "`{}`: a directory adds each file under its own name and takes no key",
                source.value
            ),
        )),
        (Some(mut entries), None) => {
            entries.sort();
            let mut pairs = Vec::new();
            for entry in entries {
                let name = entry
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let shown = format!("{}/{name}", path.trim_end_matches('/'));
                let value = files
                    .read(&entry)
                    .map_err(|e| at.read(source.pos, &shown, e))?;
                pairs.push(Pair {
                    key: name,
                    value,
                    pos: source.pos,
                    file: Some(shown),
                });
            }
            Ok(pairs)
        }
        (None, key) => {
            let key = key.map(str::to_string).unwrap_or_else(|| base_name(path));
            let value = files
                .read(&full)
                .map_err(|e| at.read(source.pos, path, e))?;
            Ok(vec![Pair {
                key,
                value,
                pos: source.pos,
                file: Some(path.to_string()),
            }])
        }
    }
}

/// `path` or `key=path` (kustomize's ParseFileSource).
fn parse_file_source(source: &str) -> Result<(Option<&str>, &str), String> {
    match source.matches('=').count() {
        0 => Ok((None, source)),
        1 if source.starts_with('=') => {
            Err(format!("`{source}`: the key is missing; write `key=path`"))
        }
        1 if source.ends_with('=') => {
            Err(format!("`{source}`: the path is missing; write `key=path`"))
        }
        1 => Ok(source
            .split_once('=')
            .map(|(k, p)| (Some(k), p))
            .unwrap_or((None, source))),
        _ => Err(format!(
            "`{source}`: keys and paths cannot contain `=`; write `key=path`"
        )),
    }
}

fn base_name(path: &str) -> String {
    path.trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(path)
        .to_string()
}

/// Matching surrounding quotes are removed, as kustomize does for literals.
fn remove_quotes(value: &str) -> &str {
    let bytes = value.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(&a), Some(&b)) if bytes.len() >= 2 && a == b && (a == b'"' || a == b'\'') => {
            &value[1..value.len() - 1]
        }
        _ => value,
    }
}

/// `KEY=VALUE` lines: a UTF-8 byte-order mark on the first line is dropped,
/// leading white space trimmed, blank and `#` lines skipped, the value taken
/// as is after the first `=`. `KEY` alone gives an empty value (kustomize
/// would read the environment instead; berth keeps output independent of it).
/// Errors are `(line number, reason)` and never contain values.
pub fn parse_env_file(bytes: &[u8]) -> Result<Vec<(String, String)>, (usize, String)> {
    // UTF-16 (PowerShell's `>` writes it): a byte-order mark, or NULs between ASCII.
    let head = &bytes[..bytes.len().min(64)];
    if head.starts_with(b"\xff\xfe") || head.starts_with(b"\xfe\xff") || head.contains(&0) {
        return Err((
            1,
            "the file is UTF-16 text (as PowerShell's `>` and some Windows editors save it); save it as UTF-8".into(),
        ));
    }
    let mut out = Vec::new();
    for (index, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let number = index + 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let raw = if index == 0 {
            raw.strip_prefix(b"\xef\xbb\xbf").unwrap_or(raw)
        } else {
            raw
        };
        let line = std::str::from_utf8(raw)
            .map_err(|_| (number, "the line is not valid UTF-8".to_string()))?;
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line.split_once('=').unwrap_or((line, ""));
        if !is_env_var_name(key) {
            return Err((number, bad_name(key)));
        }
        out.push((key.to_string(), value.to_string()));
    }
    Ok(out)
}

/// Why `key` is not a variable name, quoting only the valid name before the first
/// offending character: in `DB_PASS s3cr3t` or `TOKEN:abc` (a typo for `=`) what
/// follows is the value, which must never be printed.
fn bad_name(key: &str) -> String {
    if key.is_empty() {
        // E17 (#46): `=VALUE` has no name at all; it was called "a space".
        return "column 1: the line starts with `=`: a variable name is missing; write `KEY=VALUE` (the rest of the line is not shown: it may be a value)".into();
    }
    let valid = |(i, c): &(usize, char)| {
        c.is_ascii_alphabetic() || matches!(c, '-' | '.' | '_') || (*i > 0 && c.is_ascii_digit())
    };
    let (at, offending) = key
        .char_indices()
        .find(|ic| !valid(ic))
        .unwrap_or((key.len(), ' '));
    let what = match offending {
        ' ' => "a space".to_string(),
        '\t' => "a tab".to_string(),
        c if c.is_ascii_digit() => "a digit".to_string(),
        c if c.is_ascii_punctuation() => format!("`{c}`"),
        _ => "a character that is not ASCII".to_string(),
    };
    let column = key[..at].chars().count() + 1;
    let shown = &key[..at];
    let head = if shown.is_empty() {
        format!("column {column}: a variable name cannot start with {what}")
    } else {
        format!("column {column}: invalid variable name: `{shown}` is followed by {what}")
    };
    format!("{head}; write `KEY=VALUE`, KEY of letters, digits, `_`, `-` and `.`, not starting with a digit (the rest of the line is not shown: it may be a value)")
}

/// kubernetes' IsEnvVarName: `[-._a-zA-Z][-._a-zA-Z0-9]*`.
fn is_env_var_name(key: &str) -> bool {
    let mut bytes = key.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || matches!(b, b'-' | b'.' | b'_'))
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
}
