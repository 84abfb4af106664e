//! One YAML document as the render meets it: a `List` opened into its items, keys
//! and tags that are not Kubernetes', and the object's `apiVersion` and `kind`.

use super::*;

/// `kind: List` (and `*List` with `items`) becomes its items.
pub(super) fn expand_list(file: &str, mut doc: Node) -> Result<Vec<Node>, RenderError> {
    let is_list = doc.get("kind").and_then(Node::as_str).is_some_and(|k| {
        k == "List"
            || (k.ends_with("List") && doc.get("items").is_some_and(|i| i.as_seq().is_some()))
    });
    if !is_list {
        return Ok(vec![doc]);
    }
    let pos = doc.pos;
    if doc.get("items").is_none_or(Node::is_null) {
        return Ok(Vec::new());
    }
    match doc.get_mut("items").and_then(Node::as_seq_mut) {
        Some(items) => Ok(std::mem::take(items)
            .into_iter()
            .filter(|i| !i.is_null())
            .collect()),
        None => Err(RenderError::NotAnObject {
            file: file.to_string(),
            pos,
            problem: "a `List` whose `items` is not a list",
        }),
    }
}

/// Where a mapping key that is not a scalar is, at any depth (JSON, and so every
/// Kubernetes object, has only string keys).
pub(super) fn non_text_key(node: &Node) -> Option<Pos> {
    use berth_yaml::Value;
    match &node.value {
        Value::Map(entries) => entries.iter().find_map(|(k, v)| {
            if matches!(k.value, Value::Map(_) | Value::Seq(_)) {
                Some(k.pos)
            } else {
                non_text_key(v)
            }
        }),
        Value::Seq(items) => items.iter().find_map(non_text_key),
        _ => None,
    }
}

/// The first tag outside YAML's core schema, where it is.
pub(super) fn custom_tag(node: &Node) -> Option<(Pos, &str)> {
    use berth_yaml::Value;
    const CORE: [&str; 9] = [
        "!!str",
        "!!int",
        "!!float",
        "!!bool",
        "!!null",
        "!!map",
        "!!seq",
        "!!binary",
        "!!timestamp",
    ];
    if let Some(tag) = node.tag.as_deref() {
        if !CORE.contains(&tag) {
            return Some((node.pos, tag));
        }
    }
    match &node.value {
        Value::Map(entries) => entries
            .iter()
            .find_map(|(k, v)| custom_tag(k).or_else(|| custom_tag(v))),
        Value::Seq(items) => items.iter().find_map(custom_tag),
        _ => None,
    }
}

pub(super) fn identity(file: &str, object: &Node) -> Result<(String, String), RenderError> {
    let fail = |problem| RenderError::NotAnObject {
        file: file.to_string(),
        pos: object.pos,
        problem,
    };
    if object.as_map().is_none() {
        return Err(fail(
            "the document is not a mapping of `apiVersion`, `kind`, `metadata`, …",
        ));
    }
    let field = |key: &str, missing, not_text| match object.get(key) {
        None => Err(fail(missing)),
        Some(value) => value
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| fail(not_text)),
    };
    let api_version = field(
        "apiVersion",
        "it has no `apiVersion` (every document needs `apiVersion` and `kind`)",
        "its `apiVersion` is not text; write it as e.g. `apiVersion: apps/v1`",
    )?;
    let kind = field(
        "kind",
        "it has no `kind` (every document needs `apiVersion` and `kind`)",
        "its `kind` is not text; write it as e.g. `kind: Deployment`",
    )?;
    if !is_api_version(&api_version) {
        return Err(fail(
            "its `apiVersion` is not `[group/]version` (such as `v1` or `apps/v1`)",
        ));
    }
    // As the API server checks a CRD's kind: letters and digits, starting with
    // a letter, case not checked (`randomKind` is valid; kustomize's tests use it).
    if !kind.starts_with(|c: char| c.is_ascii_alphabetic())
        || !kind.bytes().all(|b| b.is_ascii_alphanumeric())
    {
        return Err(fail("its `kind` is not a kind's name (such as `Deployment`: letters and digits, starting with a letter)"));
    }
    match object.get("metadata") {
        None => {}
        Some(m) if m.as_map().is_none() => {
            return Err(fail(
                "its `metadata` is not a mapping; write `metadata: {name: NAME}`",
            ))
        }
        Some(m) => {
            // M77 (#46): the API server refuses it at apply; `""` means the default,
            // and a `${NAMESPACE}` placeholder is filled later (envsubst, a script).
            if let Some(ns) = m.get("namespace") {
                let valid = ns.as_str().is_some_and(|text| {
                    text.is_empty() || text.contains("${") || crate::project::is_dns_label(text, 63)
                });
                if !valid && !ns.is_null() {
                    return Err(RenderError::NotAnObject {
                        file: file.to_string(),
                        pos: ns.pos,
                        problem: "its `metadata.namespace` is not a namespace's name (lowercase letters, digits and `-`, at most 63 characters, starting and ending with a letter or digit)",
                    });
                }
            }
            if let Some(name) = m.get("name") {
                match name.as_str() {
                    Some(text) if !text.trim().is_empty() => {}
                    _ => {
                        return Err(fail(
                            "its `metadata.name` is empty or not text; give the object a name",
                        ))
                    }
                }
            } else if m.get("generateName").is_none() && !kind.ends_with("List") {
                // M69 (#46): the API server refuses a nameless object at apply; say so here.
                return Err(fail(
                    "it has no `metadata.name` (nor `generateName`); give the object a name",
                ));
            }
        }
    }
    Ok((api_version, kind))
}

/// `v1`, `apps/v1`, `gateway.networking.k8s.io/v1beta1`.
pub(super) fn is_api_version(text: &str) -> bool {
    let (group, version) = text.rsplit_once('/').unwrap_or(("", text));
    let version_ok = version.starts_with('v')
        && version[1..].starts_with(|c: char| c.is_ascii_digit())
        && version
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let group_ok = text.matches('/').count() <= 1
        && group
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
        && (group.is_empty() || group.starts_with(|c: char| c.is_ascii_alphanumeric()));
    version_ok && group_ok && !(text.contains('/') && group.is_empty())
}

/// An object's `apiVersion` and `kind`, after the checks every object passes:
/// keys are text, no custom tags, and not kustomize's own input.
pub(super) fn checked(file: &str, object: &Node) -> Result<(String, String), RenderError> {
    if let Some(pos) = non_text_key(object) {
        return Err(RenderError::KeyNotText {
            file: file.to_string(),
            pos,
        });
    }
    if let Some((pos, tag)) = custom_tag(object) {
        return Err(RenderError::CustomTag {
            file: file.to_string(),
            pos,
            tag: berth_io::shown(tag),
        });
    }
    let (api_version, kind) = identity(file, object)?;
    if api_version.starts_with("kustomize.config.k8s.io/") {
        return Err(RenderError::NotAnObject {
            file: file.to_string(),
            pos: object.pos,
            problem: "it is kustomize's input, not an object for the cluster; list its directory under `manifests:` as `- kustomize: DIR` (or give the directory as the path)",
        });
    }
    Ok((api_version, kind))
}
