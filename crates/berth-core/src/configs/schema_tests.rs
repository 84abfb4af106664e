use std::path::PathBuf;

use crate::configs::test_support::Table;
use crate::configs::{generate, ConfigError};
use crate::project;

const SCHEMA_2020: &str = r#"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["port", "mode"],
  "properties": {
    "port": {"type": "integer", "minimum": 1, "maximum": 65535},
    "mode": {"enum": ["fast", "safe"]},
    "plugins": {"type": "array", "items": {"$ref": "defs/plugin.json"}}
  },
  "additionalProperties": false
}"#;

const PLUGIN: &str = r#"{"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "weight": {"type": "number"}}}"#;

const SCHEMA_7: &str = "$schema: http://json-schema.org/draft-07/schema#\ntype: object\nproperties:\n  level: {type: string, pattern: '^(debug|info)$'}\n";

fn run(config: &str, files: &[(&str, &str)]) -> Result<(), ConfigError> {
    let p = project::parse(
        "berth.yaml",
        PathBuf::from("/p"),
        &format!("name: t\nconfigs:\n  c: {config}\n"),
    )
    .unwrap();
    let table = Table::new(files.iter().copied());
    generate(&p, &p.configs[0], &table).map(|_| ())
}

#[test]
fn valid_files_pass_and_other_files_are_not_checked() {
    let ok = "port: 8080\nmode: fast\nplugins:\n- {name: a, weight: 0.5}\n";
    run(
        "{files: [epp.yaml, notes.txt], schema: s.json}",
        &[
            ("epp.yaml", ok),
            ("notes.txt", "port: not checked"),
            ("s.json", SCHEMA_2020),
            ("defs/plugin.json", PLUGIN),
        ],
    )
    .unwrap();
    run(
        "{files: [a.json], schema: s7.yaml}",
        &[("a.json", "{\"level\": \"debug\"}"), ("s7.yaml", SCHEMA_7)],
    )
    .unwrap();
}

#[test]
fn every_violation_with_file_line_column_and_pointer() {
    let bad = "port: 70000\nmode: turbo\nextra: 1\nplugins:\n  - {weight: heavy}\n";
    let err = run(
        "{files: [epp.yaml], schema: s.json}",
        &[
            ("epp.yaml", bad),
            ("s.json", SCHEMA_2020),
            ("defs/plugin.json", PLUGIN),
        ],
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("configs.c: 5 violation(s) of s.json:"),
        "{text}"
    );
    for want in [
        "epp.yaml:1:7: /port: 70000 is greater than the maximum of 65535",
        "epp.yaml:2:7: /mode: \"turbo\" is not one of",
        "epp.yaml:3:1: (document): Additional properties are not allowed ('extra' was unexpected)",
        "epp.yaml:5:5: /plugins/0: \"name\" is a required property",
        "epp.yaml:5:14: /plugins/0/weight: \"heavy\" is not of type \"number\"",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    let err = run(
        "{files: [a.yaml], schema: s7.yaml}",
        &[("a.yaml", "level: loud\n"), ("s7.yaml", SCHEMA_7)],
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("a.yaml:1:8: /level: \"loud\" does not match"),
        "{err}"
    );
}

#[test]
fn secrets_never_show_values() {
    let err = run(
        "{secret: true, files: [creds.yaml], schema: s7.yaml}",
        &[("creds.yaml", "level: hunter2\n"), ("s7.yaml", SCHEMA_7)],
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("creds.yaml:1:8: /level: does not satisfy `pattern` (value hidden"),
        "{err}"
    );
    assert!(!err.contains("hunter2"), "{err}");
}

#[test]
fn unusable_schemas_are_errors() {
    let cases = [
        (
            vec![("a.yaml", "x: 1")],
            "berth.yaml:3:32: configs.c: schema `s.json`: cannot read",
        ),
        (
            vec![("a.yaml", "x: 1"), ("s.json", "{\"type\": 12}")],
            "not a usable JSON Schema",
        ),
        (
            vec![
                ("a.yaml", "x: 1"),
                ("s.json", "{\"$ref\": \"https://example.com/s.json\"}"),
            ],
            "is remote; berth validates offline",
        ),
        (
            vec![
                ("a.yaml", "x: 1"),
                ("s.json", "{\"$ref\": \"missing.json\"}"),
            ],
            "cannot read `/p/missing.json`",
        ),
        (vec![("a.yaml", "x: [1"), ("s.json", "{}")], "a.yaml:"),
    ];
    for (files, want) in cases {
        let err = run("{files: [a.yaml], schema: s.json}", &files)
            .unwrap_err()
            .to_string();
        assert!(err.contains(want), "\n got: {err}\nwant: {want}");
    }
}

#[test]
fn a_schema_that_is_a_secret_file_is_refused_without_its_content() {
    // `schema:` pointing at the password file by mistake: a YAML scalar.
    let err = run(
        "{files: [a.yaml], schema: password.txt}",
        &[("a.yaml", "x: 1"), ("password.txt", "pl4nted-s3cr3t\n")],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("not a usable JSON Schema (at `"), "{err}");
    assert!(!err.contains("pl4nted"), "the document leaked: {err}");
}

#[test]
fn relative_refs_up_and_down_resolve() {
    let files = [
        ("a.yaml", "port: 8080"),
        ("schemas/root.json", r#"{"$ref": "../defs/port.json"}"#),
        (
            "defs/port.json",
            r#"{"type": "object", "properties": {"port": {"$ref": "./kinds/../kinds/int.json"}}}"#,
        ),
        ("defs/kinds/int.json", r#"{"type": "integer"}"#),
    ];
    run("{files: [a.yaml], schema: schemas/root.json}", &files).unwrap();
    let bad = [("a.yaml", "port: high"), files[1], files[2], files[3]];
    let err = run("{files: [a.yaml], schema: schemas/root.json}", &bad)
        .unwrap_err()
        .to_string();
    assert!(err.contains("a.yaml:1:7: /port"), "{err}");
}
