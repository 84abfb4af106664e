use std::path::PathBuf;

use super::test_support::Table;
use super::*;
use crate::project;

fn generate_one(config: &str, files: &[(&str, &[u8])]) -> Result<Generated, ConfigError> {
    let project = project::parse(
        "berth.yaml",
        PathBuf::from("/p"),
        &format!("name: t\nconfigs:\n  c: {config}\n"),
    )
    .unwrap();
    generate(
        &project,
        &project.configs[0],
        &Table::new(files.iter().copied()),
    )
}

fn data(g: &Generated) -> Vec<(&str, &str)> {
    g.data
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

#[test]
fn env_files_then_literals_then_files() {
    let env = b"\xef\xbb\xbf# comment\n\n  LEVEL=debug\r\nEMPTY\nURL=http://x/?a=b\n";
    let g = generate_one(
        "{envs: [app.env], literals: [\"Q='quoted'\", 'D=\"dq\"', \"MIX='x\\\"\", \"EQ=a=b\"], files: [conf/app.yaml, \"renamed.txt=conf/other.txt\", dir]}",
        &[("app.env", env), ("conf/app.yaml", b"a: 1\n"), ("conf/other.txt", b"x"), ("dir/one", b"1"), ("dir/two", b"2")],
    )
    .unwrap();
    assert_eq!(
        data(&g),
        vec![
            ("D", "dq"),
            ("EMPTY", ""),
            ("EQ", "a=b"),
            ("LEVEL", "debug"),
            ("MIX", "'x\""),
            ("Q", "quoted"),
            ("URL", "http://x/?a=b"),
            ("app.yaml", "a: 1\n"),
            ("one", "1"),
            ("renamed.txt", "x"),
            ("two", "2"),
        ]
    );
    assert!(
        g.name.starts_with("c-") && g.name.len() == 12 && g.immutable && g.binary_data.is_empty()
    );
}

#[test]
fn binary_content_and_secrets() {
    let g = generate_one(
        "{files: [blob.bin, text.txt]}",
        &[
            ("blob.bin", &[0xff, 0x00, 0x01]),
            ("text.txt", "h\u{e9}".as_bytes()),
        ],
    )
    .unwrap();
    assert_eq!(
        g.binary_data,
        vec![("blob.bin".to_string(), "/wAB".to_string())]
    );
    assert_eq!(data(&g), vec![("text.txt", "h\u{e9}")]);
    let s = generate_one(
        "{secret: true, literals: [\"password=s3cr3t\"], files: [blob.bin]}",
        &[("blob.bin", &[0xff])],
    )
    .unwrap();
    assert_eq!(s.kind, ConfigKind::Secret);
    assert_eq!(s.secret_type.as_deref(), Some("Opaque"));
    assert_eq!(
        data(&s),
        vec![("blob.bin", "/w=="), ("password", "czNjcjN0")]
    );
}

#[test]
fn same_data_same_name_different_data_different_name() {
    let a = generate_one("{literals: [\"k=v\"]}", &[]).unwrap();
    let b = generate_one("{literals: [\"k=v\"]}", &[]).unwrap();
    let c = generate_one("{literals: [\"k=w\"]}", &[]).unwrap();
    assert_eq!(a.name, b.name);
    assert_ne!(a.name, c.name);
    let unhashed = generate_one("{literals: [\"k=v\"], hash: false}", &[]).unwrap();
    assert_eq!(unhashed.name, "c");
    assert!(!unhashed.immutable);
}

#[test]
fn errors_say_where_and_never_show_values() {
    type Files<'a> = &'a [(&'a str, &'a [u8])];
    let cases: &[(&str, Files, &str)] = &[
        (
            "{files: [missing.txt]}",
            &[],
            "berth.yaml:3:15: configs.c: cannot read `missing.txt`",
        ),
        (
            "{files: [\"${EPP_CONFIG}\"]}",
            &[],
            "does not expand variables: write the path itself",
        ),
        (
            "{envs: [e.env]}",
            &[("e.env", b"OK=1\n1BAD=secret-value\n")],
            "e.env:2: column 1: a variable name cannot start with a digit; write `KEY=VALUE`",
        ),
        (
            "{envs: [e.env]}",
            &[("e.env", b"DB_USER=shop\n=S3CR3T-VALUE-123\n")],
            "e.env:2: column 1: the line starts with `=`: a variable name is missing",
        ),
        (
            "{envs: [e.env]}",
            &[("e.env", b"OK=1\nDB_PASS2 secret-value\n")],
            "e.env:2: column 9: invalid variable name: `DB_PASS2` is followed by a space",
        ),
        (
            "{envs: [e.env]}",
            &[("e.env", b"DB_PASS:secret-value\n")],
            "e.env:1: column 8: invalid variable name: `DB_PASS` is followed by `:`",
        ),
        (
            "{envs: [e.env]}",
            &[("e.env", "K\u{e9}secret-value=1\n".as_bytes())],
            "e.env:1: column 2: invalid variable name: `K` is followed by a character that is not ASCII",
        ),
        (
            "{envs: [e.env]}",
            &[("e.env", b"A=\xff\n")],
            "e.env:1: the line is not valid UTF-8",
        ),
        ("{literals: [\"=v\"]}", &[], "a literal is `KEY=VALUE`"),
        ("{literals: [novalue]}", &[], "a literal is `KEY=VALUE`"),
        ("{literals: [\"bad key=v\"]}", &[], "invalid key `bad key`"),
        ("{literals: [\"..x=v\"]}", &[], "invalid key `..x`"),
        (
            "{literals: [\"k=1\", \"k=2\"]}",
            &[],
            "berth.yaml:3:25: configs.c: key `k` is given twice",
        ),
        ("{files: [\"=a\"]}", &[], "the key is missing"),
        ("{files: [\"k=\"]}", &[], "the path is missing"),
        ("{files: [\"a=b=c\"]}", &[], "cannot contain `=`"),
        (
            "{files: [\"k=dir\"]}",
            &[("dir/x", b"1")],
            "a directory adds each file under its own name",
        ),
    ];
    for (config, files, want) in cases {
        let err = generate_one(config, files).unwrap_err().to_string();
        assert!(err.contains(want), "\n got: {err}\nwant: {want}");
        assert!(!err.contains("secret-value"), "a value leaked: {err}");
    }
}

#[test]
fn generated_object_layout() {
    // `n` is quoted: YAML 1.1 readers (go-yaml v2, used by kubectl) take a bare `n` for false.
    let g = generate_one(
        "{literals: [\"n=8080\", \"t=true\"], files: [f.txt]}",
        &[("f.txt", b"line 1\nline 2\n")],
    )
    .unwrap();
    let mut out = String::new();
    berth_yaml::write_document(&mut out, &g.to_node(Some("ns")));
    assert_eq!(
        out,
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {}\n  namespace: ns\nimmutable: true\ndata:\n  f.txt: |\n    line 1\n    line 2\n  \"n\": \"8080\"\n  t: \"true\"\n", g.name)
    );
}

#[test]
fn data_from_anywhere_gets_the_name_the_files_give() {
    let from_files = generate_one(
        "{files: [run.yaml], secret: true}",
        &[("run.yaml", b"version: 2\n")],
    )
    .unwrap();
    let shape = ConfigShape {
        name: "c".into(),
        kind: ConfigKind::Secret,
        secret_type: None,
        hash: true,
        immutable: true,
    };
    let from_data =
        from_entries(&shape, [("run.yaml".to_string(), b"version: 2\n".to_vec())]).unwrap();
    assert_eq!(from_data, from_files);
    assert_eq!(
        from_entries(
            &shape,
            [
                ("a".to_string(), Vec::new()),
                ("a".to_string(), b"x".to_vec())
            ]
        ),
        Err((1, EntryError::DuplicateKey("a".into())))
    );
    assert_eq!(
        from_entries(&shape, [("no/slash".to_string(), Vec::new())]),
        Err((0, EntryError::InvalidKey("no/slash".into())))
    );
    // 2 MiB in two files: refused at the second, before anything is built.
    let half = vec![b'x'; 1 << 20];
    let err = from_entries(
        &shape,
        [
            ("a".to_string(), half[..1000].to_vec()),
            ("b".to_string(), half),
        ],
    )
    .unwrap_err();
    assert_eq!(err.0, 1);
    assert!(
        err.1
            .to_string()
            .contains("more than the 1 MiB the API server stores"),
        "{}",
        err.1
    );
}

#[test]
fn labels_and_annotations_go_on_the_object_and_not_into_the_name() {
    let plain = generate_one("{literals: [\"a=b\"]}", &[]).unwrap();
    let labelled = generate_one(
        "{literals: [\"a=b\"], labels: {ogx.io/watch: \"true\"}, annotations: {team: \"platform a\"}}",
        &[],
    )
    .unwrap();
    assert_eq!(
        labelled.name, plain.name,
        "kustomize hashes data, not labels"
    );
    let mut out = String::new();
    berth_yaml::write_document(&mut out, &labelled.to_node(None));
    assert!(
        out.contains(
            "  labels:\n    ogx.io/watch: \"true\"\n  annotations:\n    team: platform a\n"
        ),
        "{out}"
    );
    let err = project::parse(
        "berth.yaml",
        PathBuf::from("/p"),
        "name: t\nconfigs:\n  c: {literals: [\"a=b\"], labels: {x: \"has space\"}}\n",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("a label value is at most 63"), "{err}");
}
