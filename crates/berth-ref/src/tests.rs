//! Table-driven tests over the hard cases of the grammar, and properties.

use proptest::prelude::*;

use crate::{lower_hex, Digest, RefError, Reference, RegistryPrefix, Tag};

const H64: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// (input, normalized, familiar) for inputs that must parse.
fn valid_cases() -> Vec<(String, String, String)> {
    let d = format!("sha256:{H64}");
    let mut rows: Vec<(String, String, String)> = [
        ("nginx", "docker.io/library/nginx", "nginx"),
        ("nginx:1.25", "docker.io/library/nginx:1.25", "nginx:1.25"),
        ("library/nginx", "docker.io/library/nginx", "nginx"),
        ("docker.io/nginx", "docker.io/library/nginx", "nginx"),
        ("index.docker.io/nginx", "docker.io/library/nginx", "nginx"),
        (
            "index.docker.io/me/app:v1",
            "docker.io/me/app:v1",
            "me/app:v1",
        ),
        (
            "docker.io/library/a/b",
            "docker.io/library/a/b",
            "library/a/b",
        ),
        ("me/app", "docker.io/me/app", "me/app"),
        // `localhost:5000` alone is repository `localhost` with tag `5000`.
        (
            "localhost:5000",
            "docker.io/library/localhost:5000",
            "localhost:5000",
        ),
        ("localhost/app", "localhost/app", "localhost/app"),
        (
            "localhost:5000/app:dev",
            "localhost:5000/app:dev",
            "localhost:5000/app:dev",
        ),
        (
            "127.0.0.1:5000/a/b/c",
            "127.0.0.1:5000/a/b/c",
            "127.0.0.1:5000/a/b/c",
        ),
        ("[::1]:5000/app", "[::1]:5000/app", "[::1]:5000/app"),
        (
            "[2001:db8::1]/app:v1",
            "[2001:db8::1]/app:v1",
            "[2001:db8::1]/app:v1",
        ),
        // An upper-case first component is a host, not a Hub namespace.
        ("Registry/app", "Registry/app", "Registry/app"),
        (
            "ghcr.io/llm-d/llm-d-inference-scheduler:dev",
            "ghcr.io/llm-d/llm-d-inference-scheduler:dev",
            "ghcr.io/llm-d/llm-d-inference-scheduler:dev",
        ),
        (
            "ab__c-d---e/f_g.h:Tag_1.x-y",
            "docker.io/ab__c-d---e/f_g.h:Tag_1.x-y",
            "ab__c-d---e/f_g.h:Tag_1.x-y",
        ),
        // A dot makes the first component a host, and hosts allow no `_`: see the invalid table.
        ("x:_v", "docker.io/library/x:_v", "x:_v"),
        // Found by the fuzzer: Docker's familiar form is ambiguous here (it reads
        // back as registry `zxer.io`); the normalized form is not.
        (
            "docker.io/zxer.io/zx99",
            "docker.io/zxer.io/zx99",
            "zxer.io/zx99",
        ),
    ]
    .iter()
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    .collect();
    rows.push((
        format!("nginx@{d}"),
        format!("docker.io/library/nginx@{d}"),
        format!("nginx@{d}"),
    ));
    rows.push((
        format!("quay.io/a/b:v1@{d}"),
        format!("quay.io/a/b:v1@{d}"),
        format!("quay.io/a/b:v1@{d}"),
    ));
    let t128 = "t".repeat(128);
    rows.push((
        format!("x:{t128}"),
        format!("docker.io/library/x:{t128}"),
        format!("x:{t128}"),
    ));
    let long_path = format!("h.io/{}", "a".repeat(255));
    rows.push((long_path.clone(), long_path.clone(), long_path));
    rows
}

#[test]
fn valid_references_normalize_and_familiarize() {
    for (input, normalized, familiar) in valid_cases() {
        let r = Reference::parse(&input).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(r.to_string(), normalized, "normalized form of {input}");
        assert_eq!(r.familiar(), familiar, "familiar form of {input}");
        assert_eq!(
            Reference::parse(&normalized).as_ref(),
            Ok(&r),
            "reparse of {input}"
        );
        if r.familiar_roundtrips() {
            assert_eq!(
                Reference::parse(&familiar).as_ref(),
                Ok(&r),
                "familiar reparse of {input}"
            );
        }
    }
}

#[test]
fn parts_are_kept_separately() {
    let r = Reference::parse(&format!("localhost:5000/a/b:v1@sha256:{H64}")).unwrap();
    assert_eq!(r.domain(), "localhost:5000");
    assert_eq!(r.path(), "a/b");
    assert_eq!(r.tag().map(Tag::as_str), Some("v1"));
    assert_eq!(r.digest().map(|d| d.hex()), Some(H64));
    assert_eq!(r.repository().last_component(), "b");
    // No implicit :latest.
    assert_eq!(Reference::parse("nginx").unwrap().tag(), None);
}

#[test]
fn invalid_references_say_why() {
    let cases: Vec<(String, RefError)> = vec![
        ("".into(), RefError::Empty),
        (H64.into(), RefError::HexIdentifier),
        (
            "Nginx".into(),
            RefError::UppercasePath {
                path: "Nginx".into(),
            },
        ),
        (
            "docker.io/Me/app".into(),
            RefError::UppercasePath {
                path: "Me/app".into(),
            },
        ),
        (
            "ghcr.io/llm-d/App:v1".into(),
            RefError::UppercasePath {
                path: "llm-d/App".into(),
            },
        ),
        (
            "a//b".into(),
            RefError::InvalidPath {
                path: "a//b".into(),
            },
        ),
        ("-a".into(), RefError::InvalidPath { path: "-a".into() }),
        ("a-".into(), RefError::InvalidPath { path: "a-".into() }),
        (
            "a___b".into(),
            RefError::InvalidPath {
                path: "a___b".into(),
            },
        ),
        (
            "a..b".into(),
            RefError::InvalidPath {
                path: "a..b".into(),
            },
        ),
        ("ghcr.io/".into(), RefError::InvalidPath { path: "".into() }),
        (":v1".into(), RefError::InvalidPath { path: "".into() }),
        ("a b".into(), RefError::InvalidPath { path: "a b".into() }),
        ("nginx:".into(), RefError::InvalidTag { tag: "".into() }),
        (
            "nginx:.v1".into(),
            RefError::InvalidTag { tag: ".v1".into() },
        ),
        (
            "nginx:-v1".into(),
            RefError::InvalidTag { tag: "-v1".into() },
        ),
        (
            "nginx:1:2".into(),
            RefError::InvalidTag { tag: "1:2".into() },
        ),
        (
            format!("x:{}", "t".repeat(129)),
            RefError::InvalidTag {
                tag: "t".repeat(129),
            },
        ),
        (
            format!("h.io/{}", "a".repeat(256)),
            RefError::PathTooLong { len: 256 },
        ),
        (
            "host:port/app".into(),
            RefError::InvalidDomain {
                domain: "host:port".into(),
            },
        ),
        (
            "a.b__c/app".into(),
            RefError::InvalidDomain {
                domain: "a.b__c".into(),
            },
        ),
        (
            "-bad.io/app".into(),
            RefError::InvalidDomain {
                domain: "-bad.io".into(),
            },
        ),
        (
            "bad..io/app".into(),
            RefError::InvalidDomain {
                domain: "bad..io".into(),
            },
        ),
        (
            "[::1/app".into(),
            RefError::InvalidDomain {
                domain: "[::1".into(),
            },
        ),
        (
            "[zz::1]:5000/app".into(),
            RefError::InvalidDomain {
                domain: "[zz::1]:5000".into(),
            },
        ),
        (
            "[::1]5000/app".into(),
            RefError::InvalidDomain {
                domain: "[::1]5000".into(),
            },
        ),
        (
            "a@sha256:abc".into(),
            RefError::InvalidDigestHex {
                algorithm: "sha256",
                expected_len: 64,
            },
        ),
        (
            format!("a@sha256:{}", H64.to_uppercase()),
            RefError::InvalidDigestHex {
                algorithm: "sha256",
                expected_len: 64,
            },
        ),
        (
            format!("a@md5:{H64}"),
            RefError::UnsupportedDigestAlgorithm {
                algorithm: "md5".into(),
            },
        ),
        (
            "a@".into(),
            RefError::InvalidDigestFormat { digest: "".into() },
        ),
        (
            format!("a@sha256:{H64}@x"),
            RefError::InvalidDigestHex {
                algorithm: "sha256",
                expected_len: 64,
            },
        ),
    ];
    for (input, want) in cases {
        assert_eq!(Reference::parse(&input), Err(want), "input {input:?}");
    }
}

#[test]
fn error_messages_say_how_to_fix() {
    let msg = Reference::parse("Nginx").unwrap_err().to_string();
    assert!(
        msg.contains("must be lowercase") && msg.contains("`nginx`") && !msg.contains("library/"),
        "{msg}"
    );
    let msg = RegistryPrefix::parse("quay.io/Developer-Username")
        .unwrap_err()
        .to_string();
    assert!(
        msg.ends_with(
            "repository name `Developer-Username` must be lowercase (write `developer-username`)"
        ),
        "no internal `/x`: {msg}"
    );
    let msg = Reference::parse(H64).unwrap_err().to_string();
    assert!(msg.contains("name@sha256:"), "{msg}");
}

#[test]
fn tag_and_prefix_overrides() {
    let d = format!("sha256:{H64}");
    let r = Reference::parse(&format!("ghcr.io/llm-d/llm-d-inference-scheduler:dev@{d}")).unwrap();
    let tagged = r.with_tag(Tag::parse("my-fix").unwrap());
    assert_eq!(
        tagged.to_string(),
        "ghcr.io/llm-d/llm-d-inference-scheduler:my-fix"
    );
    let prefix = RegistryPrefix::parse("quay.io/developer-username/").unwrap();
    assert_eq!(
        tagged.with_prefix(&prefix).unwrap().to_string(),
        "quay.io/developer-username/llm-d-inference-scheduler:my-fix"
    );
    let local = RegistryPrefix::parse("localhost:5000").unwrap();
    assert_eq!(
        Reference::parse("nginx:1")
            .unwrap()
            .with_prefix(&local)
            .unwrap()
            .to_string(),
        "localhost:5000/nginx:1"
    );
    for bad in [
        "",
        "/",
        "quay.io/Me",
        "quay.io/me:5000",
        "host:port",
        "quay.io/me@x",
    ] {
        assert!(
            matches!(
                RegistryPrefix::parse(bad),
                Err(RefError::InvalidPrefix { .. })
            ),
            "prefix {bad:?} should be invalid"
        );
    }
}

fn component() -> impl Strategy<Value = String> {
    "[a-z0-9]{1,6}((\\.|_|__|-{1,3})[a-z0-9]{1,6}){0,2}"
}

fn reference_string() -> impl Strategy<Value = String> {
    let domain = prop_oneof![
        Just(None),
        Just(Some("localhost".to_string())),
        Just(Some("docker.io".to_string())),
        "[a-z][a-z0-9-]{0,8}[a-z0-9]\\.[a-z]{2,4}".prop_map(Some),
        ("[a-z]{1,6}\\.io", 1u16..65535).prop_map(|(h, p)| Some(format!("{h}:{p}"))),
        "\\[[0-9a-f]{0,4}:[0-9a-f:]{0,8}\\](:[0-9]{1,5})?".prop_map(Some),
    ];
    let path = proptest::collection::vec(component(), 1..4).prop_map(|c| c.join("/"));
    let tag = proptest::option::of("[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}");
    let digest = proptest::option::of("[0-9a-f]{64}");
    // Without a domain, a first component with a dot would itself be a host.
    let tuple = (domain, path, tag, digest)
        .prop_filter("first component would be a host", |(d, p, _, _)| {
            d.is_some() || !p.split('/').next().unwrap_or("").contains('.')
        });
    tuple.prop_map(|(domain, path, tag, digest)| {
        let mut s = domain.map(|d| format!("{d}/")).unwrap_or_default();
        s.push_str(&path);
        if let Some(t) = tag {
            s.push(':');
            s.push_str(&t);
        }
        if let Some(d) = digest {
            s.push_str("@sha256:");
            s.push_str(&d);
        }
        s
    })
}

proptest! {
    /// Display then parse gives the same value, for both printed forms.
    #[test]
    fn display_roundtrips(input in reference_string()) {
        let r = Reference::parse(&input).map_err(|e| TestCaseError::fail(format!("{input}: {e}")))?;
        prop_assert_eq!(Reference::parse(&r.to_string()), Ok(r.clone()));
        if r.familiar_roundtrips() {
            prop_assert_eq!(Reference::parse(&r.familiar()), Ok(r.clone()));
        }
    }

    /// Any string either fails cleanly or parses into a value that roundtrips.
    #[test]
    fn never_panics(input in "\\PC{0,80}|[a-zA-Z0-9:/@._\\[\\]-]{0,80}") {
        if let Ok(r) = Reference::parse(&input) {
            prop_assert_eq!(Reference::parse(&r.to_string()), Ok(r));
        }
    }
}

#[test]
fn a_sha256_output_is_spelled_as_go_digest_spells_it() {
    // sha256 of the empty string.
    let empty: [u8; 32] = [
        0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9,
        0x24, 0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52,
        0xb8, 0x55,
    ];
    let digest = Digest::from_sha256(&empty);
    assert_eq!(
        digest.to_string(),
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert_eq!(Digest::parse(&digest.to_string()).unwrap(), digest);
    assert_eq!(lower_hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
}

/// `with_prefix` moves a reference as parsing the prefix and its last
/// component together would, Docker Hub's `library/` and the length limit
/// included, without parsing each time.
#[test]
fn a_prefix_moves_a_reference_as_parsing_the_joined_name_would() {
    let long = format!("quay.io/{}", "a".repeat(250));
    for prefix in [
        "quay.io/me",
        "docker.io",
        "index.docker.io",
        "docker.io/me",
        "me",
        "me/team",
        "localhost:5000",
        "localhost",
        "reg.example.com:8443/a/b/",
        long.as_str(),
    ] {
        let parsed = RegistryPrefix::parse(prefix).unwrap();
        let digested = format!("quay.io/x/y/z@sha256:{H64}");
        for reference in ["nginx:1", "ghcr.io/acme/web-app:v2", digested.as_str()] {
            let reference = Reference::parse(reference).unwrap();
            let joined = format!(
                "{}/{}",
                prefix.strip_suffix('/').unwrap_or(prefix),
                reference.repository().last_component()
            );
            let expected = Reference::parse(&joined).map(|moved| moved.repository().clone());
            let moved = reference
                .with_prefix(&parsed)
                .map(|r| r.repository().clone());
            assert_eq!(moved, expected, "{prefix} + {reference}");
        }
    }
}
