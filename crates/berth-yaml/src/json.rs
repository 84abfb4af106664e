//! The one bridge between YAML trees and JSON values: YAML 1.2 core-schema types
//! (what the API server receives from `kubectl apply -f file.yaml`), key order
//! kept both ways, and each value's source position by JSON pointer for
//! messages that point into the file.

use std::collections::HashMap;

use serde_json::{Map, Number, Value};

use crate::{Node, Pos, Scalar, Style, Value as Yaml};

/// Marks the position of a mapping key (rather than its value) in the position table;
/// it cannot occur in a JSON pointer, whose `~` is always escaped.
pub const KEY_MARK: &str = "~k";

/// A JSON-pointer reference token.
pub fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// YAML as JSON (YAML 1.2 core schema types): what the API server receives.
pub fn to_json(node: &Node) -> Value {
    to_json_positions(node, &mut HashMap::new())
}

/// [`to_json`], recording each value's position by JSON pointer, and each
/// mapping key's under the pointer plus [`KEY_MARK`].
pub fn to_json_positions(node: &Node, positions: &mut HashMap<String, Pos>) -> Value {
    walk(node, String::new(), positions)
}

fn walk(node: &Node, pointer: String, positions: &mut HashMap<String, Pos>) -> Value {
    positions.insert(pointer.clone(), node.pos);
    match &node.value {
        Yaml::Scalar(s) => tagged_scalar(s, node.tag.as_deref()),
        Yaml::Seq(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| walk(item, format!("{pointer}/{i}"), positions))
                .collect(),
        ),
        Yaml::Map(entries) => {
            let mut map = Map::new();
            for (k, v) in entries {
                let key = match &k.value {
                    Yaml::Scalar(s) => s.text.clone(),
                    _ => "<non-scalar key>".to_string(),
                };
                let child = format!("{pointer}/{}", escape(&key));
                positions.insert(format!("{child}{KEY_MARK}"), k.pos);
                map.insert(key, walk(v, child, positions));
            }
            Value::Object(map)
        }
    }
}

/// A JSON value as a YAML tree, keeping key order and types (a string that
/// would read back as another type is quoted).
pub fn from_json(value: &Value) -> Node {
    let plain = |text: String| {
        Yaml::Scalar(Scalar {
            text,
            style: Style::Plain,
        })
    };
    let value = match value {
        Value::Null => plain("null".into()),
        Value::Bool(b) => plain(b.to_string()),
        Value::Number(n) => plain(n.to_string()),
        Value::String(s) => Yaml::Scalar(Scalar::string(s.clone())),
        Value::Array(items) => Yaml::Seq(items.iter().map(from_json).collect()),
        Value::Object(map) => Yaml::Map(
            map.iter()
                .map(|(k, v)| (Node::string(k.clone(), Pos::default()), from_json(v)))
                .collect(),
        ),
    };
    Node {
        pos: Pos::default(),
        tag: None,
        value,
    }
}

/// A scalar's JSON value: a plain one by the core schema; a quoted one is a string; a core-schema
/// tag (`!!int "42"`, `!!bool true`) asks for that type, as go-yaml (kubectl, helm) reads it, and
/// a text that is not of the type stays a string.
fn tagged_scalar(s: &Scalar, tag: Option<&str>) -> Value {
    let wanted = match tag {
        None if s.style == Style::Plain => return plain_scalar(&s.text),
        Some("!!int" | "!!float") => Value::is_number,
        Some("!!bool") => Value::is_boolean,
        Some("!!null") => Value::is_null,
        _ => return Value::String(s.text.clone()),
    };
    let value = plain_scalar(&s.text);
    if wanted(&value) {
        value
    } else {
        Value::String(s.text.clone())
    }
}

fn plain_scalar(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    let digits = |s: &str, radix| !s.is_empty() && s.chars().all(|c| c.is_digit(radix));
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    if digits(unsigned, 10) {
        if let Ok(n) = text.parse::<i64>() {
            return Value::Number(n.into());
        }
    }
    if let Some(hex) = text.strip_prefix("0x").filter(|h| digits(h, 16)) {
        if let Ok(n) = i64::from_str_radix(hex, 16) {
            return Value::Number(n.into());
        }
    }
    if let Some(oct) = text.strip_prefix("0o").filter(|o| digits(o, 8)) {
        if let Ok(n) = i64::from_str_radix(oct, 8) {
            return Value::Number(n.into());
        }
    }
    let float_like = unsigned.chars().any(|c| c.is_ascii_digit())
        && unsigned
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+'));
    if float_like {
        if let Some(n) = text.parse::<f64>().ok().and_then(Number::from_f64) {
            return Value::Number(n);
        }
    }
    Value::String(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_yaml_round_trip_with_types_order_and_positions() {
        let src = "b: 1\na: \"8080\"\nc: [true, null, 1.5, x, '~']\nd: {e: 0x1f}\n";
        let doc = crate::load_all(src, crate::Limits::default())
            .unwrap()
            .remove(0);
        let mut positions = HashMap::new();
        let json = to_json_positions(&doc, &mut positions);
        assert_eq!(
            json.to_string(),
            r#"{"b":1,"a":"8080","c":[true,null,1.5,"x","~"],"d":{"e":31}}"#
        );
        assert_eq!(positions["/a"].line, 2);
        assert_eq!(positions[&format!("/d/e{KEY_MARK}")].line, 4);
        let mut text = String::new();
        crate::write_document(&mut text, &from_json(&json));
        let again = crate::load_all(&text, crate::Limits::default())
            .unwrap()
            .remove(0);
        assert_eq!(to_json(&again), json, "{text}");
    }
}
