//! berth-yaml against the YAML test suite (github.com/yaml/yaml-test-suite, its `data` branch):
//! one JSON line per case on standard output, `{"case", "outcome", "detail"}`, where outcome is
//! `equal` (parsed, and every document equals the case's `in.json`), `differs` (parsed to other
//! JSON), `parsed` (no `in.json` to compare with), `refused` (berth-yaml gave an error) or `panic`.
//!
//! `scripts/yaml-test-suite.py SUITE_DIR` runs it and joins libyaml's verdict (PyYAML's C
//! loader) to report the figures docs/reliability.md gives. The suite is not in this repository
//! (it cannot be fetched where the tests run), so this is a measurement, not a test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

fn main() {
    let root = PathBuf::from(
        std::env::args()
            .nth(1)
            .expect("usage: yaml_test_suite SUITE_DIR"),
    );
    let mut cases = Vec::new();
    collect(&root, &mut cases);
    cases.sort();
    std::panic::set_hook(Box::new(|_| {}));
    for dir in cases {
        let name = dir.strip_prefix(&root).unwrap().display().to_string();
        let src = std::fs::read(dir.join("in.yaml")).unwrap();
        let expected = std::fs::read_to_string(dir.join("in.json")).ok();
        let (outcome, detail) = match std::panic::catch_unwind(|| judge(&src, expected.as_deref()))
        {
            Ok(verdict) => verdict,
            Err(_) => ("panic", String::new()),
        };
        println!(
            "{}",
            json!({"case": name, "outcome": outcome, "detail": detail})
        );
    }
}

/// Every directory below `dir` that holds an `in.yaml`.
fn collect(dir: &Path, cases: &mut Vec<PathBuf>) {
    if dir.join("in.yaml").is_file() {
        cases.push(dir.to_path_buf());
    }
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            collect(&entry.path(), cases);
        }
    }
}

fn judge(src: &[u8], expected: Option<&str>) -> (&'static str, String) {
    let Ok(text) = std::str::from_utf8(src) else {
        return ("refused", "not UTF-8".into());
    };
    let docs = match berth_yaml::load_all(text, berth_yaml::Limits::default()) {
        Ok(docs) => docs,
        Err(e) => return ("refused", e.to_string()),
    };
    let got: Vec<Value> = docs.iter().map(berth_yaml::json::to_json).collect();
    let Some(expected) = expected else {
        return ("parsed", String::new());
    };
    let want: Vec<Value> = serde_json::Deserializer::from_str(expected)
        .into_iter::<Value>()
        .map(Result::unwrap)
        .collect();
    // JSON compares numbers by value: the suite writes `450.00` as 450.
    if got
        .iter()
        .map(numbers_as_f64)
        .eq(want.iter().map(numbers_as_f64))
    {
        ("equal", String::new())
    } else {
        ("differs", format!("got {got:?}"))
    }
}

fn numbers_as_f64(value: &Value) -> Value {
    match value {
        Value::Number(n) => json!(n.as_f64()),
        Value::Array(items) => Value::Array(items.iter().map(numbers_as_f64).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), numbers_as_f64(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}
