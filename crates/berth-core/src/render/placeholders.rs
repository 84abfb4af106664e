//! `${VAR}` placeholders left in what is about to be applied. berth fills the
//! image placeholders of its components (`${EPP_IMAGE}`); the others stay for
//! whoever renders with envsubst afterwards (`berth render | envsubst | kubectl
//! apply`). `berth apply` and `berth dev` apply directly, so such a value would
//! reach the cluster as the literal `${POOL_NAME}` — said before it is applied.
//!
//! Only what no one else expands counts: a whole string value `${NAME}`, or
//! `${NAME}` anywhere in `metadata`. ConfigMap and Secret data (scripts), and
//! text around a placeholder in other fields (`sh -c 'echo ${HOME}'`) are left
//! alone; Kubernetes' own `$(VAR)` is not a placeholder.

use berth_yaml::{Node, Value};

/// One placeholder left in an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unfilled {
    /// The object (`Deployment/epp in namespace NS`).
    pub object: crate::Place,
    /// The field (`spec.template.spec.containers[0].args[0]`).
    pub field: String,
    /// The placeholder (`${POOL_NAME}`).
    pub placeholder: String,
}

/// The placeholders left in `objects`, in order.
pub fn unfilled_placeholders(objects: &[Node]) -> Vec<Unfilled> {
    let mut out = Vec::new();
    for object in objects {
        let kind = object
            .get("kind")
            .and_then(Node::as_str)
            .unwrap_or_default();
        let name = super::metadata_text(object, "name").unwrap_or_default();
        let namespace = super::metadata_text(object, "namespace");
        let shown = crate::Place::in_(crate::place::File::Rendered {
            object: format!("{kind}/{name}"),
            namespace: namespace.map(str::to_string),
        });
        let Some(entries) = object.as_map() else {
            continue;
        };
        for (key, value) in entries {
            let key = key.as_str().unwrap_or_default();
            if matches!(kind, "ConfigMap" | "Secret")
                && matches!(key, "data" | "stringData" | "binaryData")
            {
                continue;
            }
            walk(value, key, key == "metadata", &mut |field, placeholder| {
                out.push(Unfilled {
                    object: shown.clone(),
                    field,
                    placeholder,
                })
            });
        }
    }
    out
}

fn walk(node: &Node, path: &str, metadata: bool, found: &mut dyn FnMut(String, String)) {
    match &node.value {
        Value::Scalar(s) => {
            if let Some(placeholder) = placeholder_in(&s.text, metadata) {
                found(path.to_string(), placeholder);
            }
        }
        Value::Seq(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, &format!("{path}[{i}]"), metadata, found);
            }
        }
        Value::Map(entries) => {
            for (key, value) in entries {
                let key = key.as_str().unwrap_or("?");
                walk(value, &format!("{path}.{key}"), metadata, found);
            }
        }
    }
}

/// `${NAME}` when `text` is exactly that, or (in metadata) contains it.
fn placeholder_in(text: &str, anywhere: bool) -> Option<String> {
    let is_name = |n: &str| {
        !n.is_empty()
            && n.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    };
    let whole = text.strip_prefix("${").and_then(|t| t.strip_suffix('}'));
    if let Some(name) = whole.filter(|n| is_name(n)) {
        return Some(format!("${{{name}}}"));
    }
    if !anywhere {
        return None;
    }
    let at = text.find("${")?;
    let end = text[at..].find('}')?;
    let name = &text[at + 2..at + end];
    is_name(name).then(|| format!("${{{name}}}"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    #[test]
    fn placeholders_no_one_expands_are_found_and_scripts_are_left_alone() {
        let text = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: epp, namespace: '${NAMESPACE}', labels: {pool: 'pool-${POOL_NAME}'}}
spec:
  template:
    spec:
      containers:
      - name: epp
        args: ['${POOL_NAME}', 'sh -c echo ${HOME}', '$(POD_IP)']
        env: [{name: A, value: '${MODEL_NAME}'}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: script}
data: {run.sh: '${SCRIPT}'}
";
        let docs = berth_yaml::load_all(text, berth_yaml::Limits::default()).unwrap();
        let found: Vec<String> = super::unfilled_placeholders(&docs)
            .into_iter()
            .map(|u| format!("{} {} {}", u.object, u.field, u.placeholder))
            .collect();
        assert_eq!(
            found,
            [
                "Deployment/epp in namespace ${NAMESPACE} metadata.namespace ${NAMESPACE}",
                "Deployment/epp in namespace ${NAMESPACE} metadata.labels.pool ${POOL_NAME}",
                "Deployment/epp in namespace ${NAMESPACE} spec.template.spec.containers[0].args[0] ${POOL_NAME}",
                "Deployment/epp in namespace ${NAMESPACE} spec.template.spec.containers[0].env[0].value ${MODEL_NAME}",
            ]
        );
    }
}
