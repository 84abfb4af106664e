use proptest::prelude::*;

use crate::{
    load_all, write_document, write_stream, Documents, Error, Limits, Node, Pos, Scalar, Style,
    Value,
};

/// Compares values and types, ignoring positions and how strings were quoted.
fn same(a: &Node, b: &Node) -> bool {
    if a.tag != b.tag {
        return false;
    }
    match (&a.value, &b.value) {
        (Value::Scalar(x), Value::Scalar(y)) => {
            x.text == y.text && (x.style == Style::Plain) == (y.style == Style::Plain)
        }
        (Value::Seq(x), Value::Seq(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((ka, va), (kb, vb))| same(ka, kb) && same(va, vb))
        }
        _ => false,
    }
}

fn roundtrip(src: &str) -> String {
    let docs = load_all(src, Limits::default()).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let mut out = String::new();
    write_stream(&mut out, &docs);
    let again = load_all(&out, Limits::default()).unwrap_or_else(|e| panic!("{e}\n{out}"));
    assert_eq!(docs.len(), again.len());
    for (a, b) in docs.iter().zip(&again) {
        assert!(
            same(a, b),
            "changed by a round trip:\n{src}\n---- became ----\n{out}"
        );
    }
    out
}

#[test]
fn kubectl_layout_and_types_kept() {
    let src = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 3
  template:
    spec:
      containers:
        - name: app
          image: nginx:1.25
          args: ["--port", "8080", '--x=it''s']
          env:
          - {name: PORT, value: "8080"}
          - name: ON
            value: 'yes'
          - name: EMPTY
            value:
      script: |
        #!/bin/sh
        echo hi
      folded: >-
        a
        b
"#;
    let out = roundtrip(src);
    let want = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: 3
  template:
    spec:
      containers:
      - name: app
        image: nginx:1.25
        args:
        - "--port"
        - "8080"
        - '--x=it''s'
        env:
        - name: PORT
          value: "8080"
        - name: ON
          value: 'yes'
        - name: EMPTY
          value:
      script: |
        #!/bin/sh
        echo hi
      folded: |-
        a b
"#;
    assert_eq!(out, want);
}

#[test]
fn tricky_scalars_roundtrip() {
    roundtrip("a: \"tab\\there\\nnew \\u0001 ctrl\"\nb: '  lead'\nc: \"\\u2028\"\nd: |+\n  keep\n\n\ne: x\n");
    roundtrip("- - a\n  - b\n- []\n- {}\n- !!str 1\n- !custom {a: 1}\n- ~\n- \n- [1, [2]]\n");
    roundtrip("? [a, b]\n: c\n\"key: x\": 1\n'#k': 2\n");
    roundtrip("text: \"line one\\n  indented second\\n\"\nstart: \"\\n  x\"\n");
    roundtrip("unicode: \"h\u{e9}llo \u{4e16}\u{754c} \u{1F600}\"\n");
}

#[test]
fn anchors_expand() {
    let docs = load_all("base: &b {x: 1}\nuse: *b\n", Limits::default()).unwrap();
    assert_eq!(
        docs[0]
            .get("use")
            .and_then(|n| n.get("x"))
            .and_then(Node::as_str),
        Some("1")
    );
}

#[test]
fn positions_are_one_based() {
    let docs = load_all("a:\n  bb: 1\n---\nc: 2\n", Limits::default()).unwrap();
    assert_eq!(docs.len(), 2);
    let bb = &docs[0].get("a").unwrap().as_map().unwrap()[0].0;
    assert_eq!(bb.pos, Pos { line: 2, column: 3 });
    assert_eq!(docs[1].get("c").unwrap().pos, Pos { line: 4, column: 4 });
}

#[test]
fn errors_have_positions() {
    let err = load_all("a: 1\nb: [\n", Limits::default()).unwrap_err();
    assert!(matches!(err, Error::Syntax { .. }), "{err}");
    let err = load_all("a: 1\nb: 2\na: 3\n", Limits::default()).unwrap_err();
    assert_eq!(
        err,
        Error::DuplicateKey {
            pos: Pos { line: 3, column: 1 },
            key: "a".into(),
            first_line: 1
        }
    );
    let many: String = (0..40).map(|i| format!("k{i}: {i}\n")).collect::<String>() + "k7: again\n";
    let err = load_all(&many, Limits::default()).unwrap_err();
    assert!(
        matches!(err, Error::DuplicateKey { first_line: 8, .. }),
        "{err}"
    );
}

#[test]
fn alias_bombs_are_refused() {
    let mut src = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..9 {
        let p = i - 1;
        src.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    let err = load_all(&src, Limits::default()).unwrap_err();
    assert!(matches!(err, Error::ExcessiveAliasing { .. }), "{err}");
    assert!(err.to_string().contains("alias-expansion bomb"));
}

#[test]
fn oversized_documents_are_refused() {
    let limits = Limits {
        max_document_chars: 100,
        ..Limits::default()
    };
    let src = format!("small: 1\n---\nbig: {}\n", "x".repeat(200));
    let mut docs = crate::Documents::new(&src, limits);
    assert!(docs.next().unwrap().is_ok());
    let err = docs.next().unwrap().unwrap_err();
    assert!(
        matches!(
            err,
            Error::DocumentTooLarge {
                pos: Pos { line: 2, .. },
                ..
            }
        ),
        "{err}"
    );
    assert!(docs.next().is_none());
}

#[test]
fn new_strings_stay_strings() {
    for text in [
        "nginx:1.25",
        "1.2.3.4:5000/app",
        "true",
        "null",
        "",
        "a: b",
        "-x",
    ] {
        let mut out = String::new();
        write_document(
            &mut out,
            &Node {
                pos: Pos::default(),
                tag: None,
                value: Value::Scalar(Scalar::string(text)),
            },
        );
        let back = load_all(&out, Limits::default()).unwrap();
        let s = back[0].as_scalar().unwrap();
        assert_eq!(s.text, text);
        assert!(
            s.style != Style::Plain || crate::scalar::plain_keeps_string(text),
            "{text:?} -> {out}"
        );
    }
}

fn arb_scalar() -> impl Strategy<Value = Node> {
    let style = prop_oneof![
        Just(Style::Plain),
        Just(Style::SingleQuoted),
        Just(Style::DoubleQuoted),
        Just(Style::Literal)
    ];
    ("\\PC{0,12}|[a-z0-9 :#\\-\n'\"]{0,12}", style).prop_map(|(text, style)| {
        // Plain text must be something a parser could have produced as plain.
        let style = if style == Style::Plain && !crate::scalar::is_plain_safe(&text) {
            Style::DoubleQuoted
        } else {
            style
        };
        Node {
            pos: Pos::default(),
            tag: None,
            value: Value::Scalar(Scalar { text, style }),
        }
    })
}

fn arb_node() -> impl Strategy<Value = Node> {
    arb_scalar().prop_recursive(4, 40, 5, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(|items| Node {
                pos: Pos::default(),
                tag: None,
                value: Value::Seq(items)
            }),
            proptest::collection::btree_map("[a-z]{1,6}", inner, 0..5).prop_map(|m| Node {
                pos: Pos::default(),
                tag: None,
                value: Value::Map(
                    m.into_iter()
                        .map(|(k, v)| (Node::string(k, Pos::default()), v))
                        .collect()
                ),
            }),
        ]
    })
}

proptest! {
    /// Whatever the tree, the emitted text loads back to the same values and types.
    #[test]
    fn emit_then_load_is_identity(node in arb_node()) {
        let mut out = String::new();
        write_document(&mut out, &node);
        let back = load_all(&out, Limits::default()).map_err(|e| TestCaseError::fail(format!("{e}\n{out}")))?;
        prop_assert_eq!(back.len(), 1);
        prop_assert!(same(&node, &back[0]), "{:?}\n{}", node, out);
    }

    /// Arbitrary text never panics the loader.
    #[test]
    fn loader_never_panics(src in "\\PC{0,200}|[-:\\[\\]{}&*!|>'\"#?@ \na-c0-9]{0,200}") {
        let _ = load_all(&src, Limits::default());
    }
}

#[test]
fn documents_from_chars_pull_only_what_the_next_document_needs() {
    use std::cell::Cell;
    let pulled = Cell::new(0usize);
    let first = "a: 1\n---\n";
    let endless = first
        .chars()
        .chain(std::iter::repeat("b: 2\n---\n").flat_map(str::chars))
        .inspect(|_| pulled.set(pulled.get() + 1));
    let mut docs = Documents::from_chars(endless, Limits::default());
    let doc = docs.next().unwrap().unwrap();
    assert_eq!(doc.get("a").and_then(Node::as_str), Some("1"));
    // A little lookahead past the first document, not the endless rest.
    assert!(pulled.get() < first.len() + 64, "pulled {}", pulled.get());
    assert!(docs.next().unwrap().is_ok());
}

#[test]
fn documents_from_chars_stop_at_an_error_without_reading_on() {
    let endless = "a: 1\na: 2\n"
        .chars()
        .chain(std::iter::repeat("b: 2\n").flat_map(str::chars));
    let mut docs = Documents::from_chars(endless, Limits::default());
    let error = docs.next().unwrap().unwrap_err();
    assert_eq!(
        error.to_string(),
        "2:1: duplicate key `a` (first at line 1); remove one of them"
    );
    assert!(docs.next().is_none());
}

/// kubectl and helm read a repeated key as its last value; berth's manifests do too
/// (`last_key_wins`), berth's own files do not.
#[test]
fn a_repeated_key_keeps_its_last_value_when_asked() {
    let limits = Limits {
        last_key_wins: true,
        ..Limits::default()
    };
    let docs = load_all("labels:\n  a: 1\n  b: 2\n  a: 3\n", limits).unwrap();
    let labels = docs[0].get("labels").unwrap();
    let pairs: Vec<(&str, &str)> = labels
        .as_map()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.as_str().unwrap(), v.as_str().unwrap()))
        .collect();
    assert_eq!(pairs, [("a", "3"), ("b", "2")]);
    assert!(load_all("a: 1\na: 2\n", Limits::default()).is_err());

    // Each replacement is told, once, with both places, across documents.
    let mut docs = crate::Documents::new("labels:\n  a: 1\n  a: 3\n---\nb: 1\nb: 2\n", limits);
    assert_eq!(docs.by_ref().count(), 2);
    let replaced: Vec<(String, String, String)> = docs
        .take_replaced()
        .into_iter()
        .map(|r| (r.key, r.first.to_string(), r.last.to_string()))
        .collect();
    assert_eq!(
        replaced,
        [
            ("a".into(), "2:3".into(), "3:3".into()),
            ("b".into(), "5:1".into(), "6:1".into())
        ]
    );
    assert!(docs.take_replaced().is_empty());
    // The same value twice loses nothing, and is not told.
    let mut docs = crate::Documents::new("a: {x: [1]}\nb: 2\na: {x: [\"1\"]}\n", limits);
    assert_eq!(docs.by_ref().count(), 1);
    assert!(docs.take_replaced().is_empty());
}

#[test]
fn columns_count_characters_on_directive_lines_too() {
    // saphyr's string input counts bytes there; berth reads every text as characters.
    let error = load_all("%éb\0\n", Limits::default()).unwrap_err();
    assert_eq!(error.pos(), Pos { line: 1, column: 4 });
}

/// A flow collection's closing bracket at (or left of) its key's indentation, as charts and
/// manifests write it and libyaml, go-yaml and PyYAML read it (the vendored parser's patch).
#[test]
fn a_closing_bracket_may_stand_at_the_keys_indentation() {
    let cases = [
        (
            "args: [\n  \"--a\",\n  \"--b\"\n]\nimage: x\n",
            r#"{"args":["--a","--b"],"image":"x"}"#,
        ),
        (
            "spec:\n  containers:\n  - name: x\n    args: [\n      \"--a\",\n    ]\n    image: y\n",
            r#"{"spec":{"containers":[{"name":"x","args":["--a"],"image":"y"}]}}"#,
        ),
        (
            "a:\n  b: {\n    c: 1,\n  }\n  d: [\n   [1]\n]\n",
            r#"{"a":{"b":{"c":1},"d":[[1]]}}"#,
        ),
        ("x:\n  y: [1,\n    2\n]\n", r#"{"x":{"y":[1,2]}}"#),
    ];
    for (src, want) in cases {
        let docs = load_all(src, Limits::default()).unwrap_or_else(|e| panic!("{e}\n{src}"));
        assert_eq!(crate::json::to_json(&docs[0]).to_string(), want, "{src}");
        roundtrip(src);
    }
}

/// Content inside a flow collection keeps the indentation rule (the YAML test suite's 9C9N):
/// only the closing bracket is exempt.
#[test]
fn under_indented_flow_content_is_still_refused() {
    for src in ["flow: [a,\nb,\nc]\n", "k:\n  v: [\n  \"a\"\n  ]\n"] {
        let err = load_all(src, Limits::default()).expect_err(src);
        assert!(err.to_string().contains("indentation"), "{src}: {err}");
    }
}

/// A core-schema tag gives the type go-yaml gives (`!!int "42"` is 42); a text that is not of
/// that type, and any other tag, stays a string.
#[test]
fn core_schema_tags_give_their_type() {
    let src = "a: !!int \"42\"\nb: !!bool true\nc: !!float '1.5'\nd: !!null ''\ne: !!str 7\nf: !!int x\ng: !foo 3\n";
    let docs = load_all(src, Limits::default()).unwrap();
    assert_eq!(
        crate::json::to_json(&docs[0]).to_string(),
        r#"{"a":42,"b":true,"c":1.5,"d":null,"e":"7","f":"x","g":"3"}"#
    );
}
