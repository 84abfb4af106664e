use std::path::PathBuf;

use rcgen::{date_time_ymd, CertificateParams, DnType, KeyPair};

use super::*;
use crate::configs::test_support::Table;
use crate::project;

/// 2026-06-01, inside the validity of the "current" test certificates.
const NOW: i64 = 1_780_272_000;

fn cert(cn: &str, from: (i32, u8, u8), until: (i32, u8, u8)) -> (String, String) {
    let mut params = CertificateParams::new(vec![format!("{cn}.example")]).unwrap();
    params.distinguished_name.push(DnType::CommonName, cn);
    params.not_before = date_time_ymd(from.0, from.1, from.2);
    params.not_after = date_time_ymd(until.0, until.1, until.2);
    let key = KeyPair::generate().unwrap();
    (params.self_signed(&key).unwrap().pem(), key.serialize_pem())
}

/// `pem`'s first certificate with the second half of its DER cut off.
fn truncated(pem: &str) -> String {
    let der = berth_trust::pem::decode(pem.as_bytes()).remove(0);
    let b64 = base64::engine::general_purpose::STANDARD.encode(&der[..der.len() / 2]);
    format!("-----BEGIN CERTIFICATE-----\n{b64}\n-----END CERTIFICATE-----\n")
}

/// What the caller supplies: `system`, and no cluster or configs.
fn supplied(system: Option<&SystemStore>) -> Supplied<'_> {
    Supplied {
        system,
        cluster: &[],
        configs: &[],
    }
}

fn build_with(
    sources: &str,
    files: Vec<(&str, String)>,
    strict: bool,
) -> Result<CaBundle, CaError> {
    let p = project::parse(
        "berth.yaml",
        PathBuf::from("/p"),
        &format!("name: t\ncaBundles:\n  corp: {{sources: {sources}}}\n"),
    )
    .unwrap();
    let table = Table::new(files);
    build(&p, &p.ca_bundles[0], &table, NOW, strict, &supplied(None))
}

#[test]
fn validates_deduplicates_and_orders() {
    let (a, _) = cert("alpha", (2024, 1, 1), (2030, 1, 1));
    let (b, _) = cert("beta", (2024, 1, 1), (2030, 1, 1));
    let files = vec![
        ("certs/2.pem", format!("# beta first, with a comment\n{b}")),
        ("certs/1.crt", format!("{a}{b}")),
        (
            "certs/notes.txt",
            "ignored: not a certificate extension".into(),
        ),
        ("vendor.pem", a.clone()),
    ];
    let bundle = build_with("[certs/, vendor.pem]", files.clone(), false).unwrap();
    assert_eq!((bundle.certificates, bundle.duplicates), (2, 2));
    assert!(bundle.warnings.is_empty());
    let pem = &bundle.generated.data[0].1;
    assert_eq!(bundle.generated.data[0].0, "ca-bundle.crt");
    assert_eq!(pem.matches("BEGIN CERTIFICATE").count(), 2);
    assert!(bundle.generated.name.starts_with("corp-"));
    // Order and bytes do not depend on the order of the sources.
    let reordered = build_with("[vendor.pem, certs/]", files, false).unwrap();
    assert_eq!(reordered.generated, bundle.generated);
    // The bundle parses back to the same certificates.
    let back = berth_trust::pem::decode(pem.as_bytes());
    assert_eq!(back.len(), 2);
}

#[test]
fn expired_and_future_certificates_warn_or_fail_when_strict() {
    let (old, _) = cert("old", (2010, 1, 1), (2020, 1, 1));
    let (future, _) = cert("future", (2030, 1, 1), (2040, 1, 1));
    let files = vec![("a.pem", format!("{old}{future}"))];
    let bundle = build_with("[a.pem]", files.clone(), false).unwrap();
    assert_eq!(bundle.warnings.len(), 2);
    assert!(
        bundle.warnings[0].text.contains("`CN=old` is expired on"),
        "{:?}",
        bundle.warnings
    );
    assert!(
        bundle.warnings[1]
            .text
            .contains("`CN=future` is not valid until"),
        "{:?}",
        bundle.warnings
    );
    let err = build_with("[a.pem]", files, true).unwrap_err().to_string();
    assert!(
        err.starts_with("a.pem: certificate `CN=old` is expired")
            && err.contains("remove it from the source or replace it"),
        "{err}"
    );
}

#[test]
fn keys_garbage_and_limits_are_errors() {
    let (good, key) = cert("good", (2024, 1, 1), (2030, 1, 1));
    let cases = vec![
        (
            vec![("a.pem", format!("{good}{key}"))],
            "a.pem: PEM block 2 is a `PRIVATE KEY`: a trust bundle must never contain a key",
        ),
        (
            vec![("a.pem", "just text\n".to_string())],
            "a.pem: no PEM certificate found",
        ),
        (
            vec![(
                "a.pem",
                "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n"
                    .to_string(),
            )],
            "a.pem: PEM block 1 is labelled CERTIFICATE but its content ends early (a truncated copy, or not a certificate at all); re-export it, and check it with `openssl x509 -noout -text`",
        ),
        (
            // A whole DER SEQUENCE { INTEGER 1 }: complete, but no certificate.
            vec![(
                "a.pem",
                "-----BEGIN CERTIFICATE-----\nMAMCAQE=\n-----END CERTIFICATE-----\n".to_string(),
            )],
            "a.pem: PEM block 1 is labelled CERTIFICATE but its content is",
        ),
        (
            vec![("a.pem", truncated(&good))],
            "a.pem: PEM block 1 is labelled CERTIFICATE but its content ends early (a truncated copy, or not a certificate at all)",
        ),
        (
            vec![(
                "a.pem",
                "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n".to_string(),
            )],
            "a.pem: PEM block 1 is malformed",
        ),
        (
            vec![(
                "a.pem",
                "-----BEGIN X509 CRL-----\nAAAA\n-----END X509 CRL-----\n".to_string(),
            )],
            "only CERTIFICATE blocks belong",
        ),
        (
            vec![],
            "berth.yaml:3:20: caBundles.corp: cannot read `a.pem`",
        ),
    ];
    for (files, want) in cases {
        let err = build_with("[a.pem]", files, false).unwrap_err().to_string();
        assert!(err.contains(want), "\n got: {err}\nwant: {want}");
        assert!(
            !err.contains("BEGIN PRIVATE KEY"),
            "never print key material: {err}"
        );
    }
    let big = vec![("a.pem", "x".repeat(MAX_BUNDLE_BYTES + 1))];
    assert!(build_with("[a.pem]", big, false)
        .unwrap_err()
        .to_string()
        .contains("more than 10 MB"));
}

#[test]
fn more_than_a_thousand_certificates_is_an_error() {
    let pem = many(MAX_CERTIFICATES + 1);
    let err = build_with("[a.pem]", vec![("a.pem", pem)], false)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("more than 1000 distinct certificates"),
        "{err}"
    );
}

/// `n` certificates signed by one key (generating `n` keys would only slow the test).
fn many(n: usize) -> String {
    let key = KeyPair::generate().unwrap();
    let mut pem = String::new();
    for i in 0..n {
        let mut params = CertificateParams::new(vec![]).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, format!("c{i}"));
        params.not_before = date_time_ymd(2024, 1, 1);
        params.not_after = date_time_ymd(2030, 1, 1);
        pem.push_str(&params.self_signed(&key).unwrap().pem());
    }
    pem
}

#[test]
fn a_bundle_the_api_server_would_refuse_is_an_error_that_names_its_parts() {
    let shape = |formats| BundleShape {
        name: "corp".into(),
        key: DEFAULT_KEY.into(),
        hash: true,
        formats,
        password: None,
    };
    let sources = vec![("certs/".to_string(), many(900).into_bytes())];
    // The PEM alone fits; with the hashed directory and both stores it does not.
    let pem_only = from_pem(&shape(Formats::default()), &sources, NOW, false).unwrap();
    assert_eq!(pem_only.certificates, 900);
    let all = Formats {
        pkcs12: true,
        jks: true,
        dir: true,
    };
    let err = from_pem(&shape(all), &sources, NOW, false)
        .unwrap_err()
        .to_string();
    for part in [
        "more than the 1 MiB",
        "the PEM file, the hashed directory, the PKCS#12 store, the JKS store",
        "without `openssl` needs no hashed directory",
    ] {
        assert!(err.contains(part), "{part}: {err}");
    }
}

#[test]
fn the_hashed_directory_holds_each_certificate_under_its_openssl_name() {
    let (a, _) = cert("alpha", (2024, 1, 1), (2031, 1, 1));
    let (b, _) = cert("Beta", (2024, 1, 1), (2031, 1, 1));
    let shape = BundleShape {
        name: "corp".into(),
        key: DEFAULT_KEY.into(),
        hash: true,
        formats: Formats {
            dir: true,
            ..Formats::default()
        },
        password: None,
    };
    let sources = vec![("a".to_string(), format!("{a}{b}").into_bytes())];
    let bundle = from_pem(&shape, &sources, NOW, false).unwrap();
    let keys: Vec<&str> = bundle
        .generated
        .data
        .iter()
        .map(|(k, _)| k.as_str())
        .collect();
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "sorted: {keys:?}");
    for (key, value) in &bundle.generated.data {
        if key == DEFAULT_KEY {
            continue;
        }
        let der = berth_trust::pem::decode(value.as_bytes()).remove(0);
        let hash = crate::configs::rehash::subject_hash(&der).unwrap();
        assert_eq!(*key, format!("{hash:08x}.0"));
        assert_eq!(value.matches("BEGIN CERTIFICATE").count(), 1);
    }
}

#[test]
fn bundles_from_bytes_name_their_sources_and_the_first_expiry() {
    let (a, _) = cert("alpha", (2024, 1, 1), (2031, 1, 1));
    let (b, key) = cert("beta", (2024, 1, 1), (2029, 3, 1));
    let shape = BundleShape {
        name: "trusted-ca".into(),
        key: "ca-bundle.crt".into(),
        hash: true,
        formats: Default::default(),
        password: None,
    };
    let sources = vec![
        (
            "configMap/platform-ca key ca-bundle.crt".to_string(),
            format!("{a}{b}").into_bytes(),
        ),
        ("inline".to_string(), b.clone().into_bytes()),
    ];
    let bundle = from_pem(&shape, &sources, NOW, false).unwrap();
    assert_eq!((bundle.certificates, bundle.duplicates), (2, 1));
    assert_eq!(
        bundle.first_expiry,
        Some(1_867_017_600),
        "2029-03-01, beta's"
    );
    // The same certificates from files give the same object, name included.
    let from_files = build_with(
        "[a.pem, b.pem]",
        vec![("a.pem", a.clone()), ("b.pem", b.clone())],
        false,
    )
    .unwrap();
    assert_eq!(
        from_files.generated.data, bundle.generated.data,
        "the same PEM whatever the source"
    );
    let unhashed = from_pem(
        &BundleShape {
            hash: false,
            ..shape.clone()
        },
        &sources,
        NOW,
        false,
    )
    .unwrap();
    assert_eq!(unhashed.generated.name, "trusted-ca");
    let with_key = vec![("inline".to_string(), format!("{a}{key}").into_bytes())];
    let err = from_pem(&shape, &with_key, NOW, false).unwrap_err();
    assert!(
        matches!(&err, PemError::Content { source_name, fault: PemFault::PrivateKey, problem } if source_name == "inline" && problem.contains("must never contain a key")),
        "{err}"
    );
}

#[test]
fn a_bundle_with_hash_false_keeps_its_name_and_carries_labels() {
    let (good, _) = cert("good", (2024, 1, 1), (2030, 1, 1));
    let p = project::parse(
        "berth.yaml",
        PathBuf::from("/p"),
        "name: t\ncaBundles:\n  corp: {sources: [a.pem], hash: false, labels: {ogx.io/watch: \"true\"}}\n",
    )
    .unwrap();
    let table = Table::new(vec![("a.pem", good)]);
    let bundle = build(&p, &p.ca_bundles[0], &table, NOW, false, &supplied(None)).unwrap();
    assert_eq!(bundle.generated.name, "corp");
    assert!(
        !bundle.generated.immutable,
        "a fixed name must stay updatable"
    );
    assert_eq!(
        bundle.generated.labels,
        [("ogx.io/watch".to_string(), "true".to_string())]
    );
}

/// `defaults:` adds the public roots: Mozilla's (built in, the same everywhere,
/// every one current at `NOW`, so `--strict` passes) or the machine's store the
/// caller read; `system` without a store is an error that says how to get one.
#[test]
fn defaults_add_the_public_roots() {
    let (corp, _) = cert("Corp Root", (2024, 1, 1), (2030, 1, 1));
    let bundle = |defaults: &str, system: Option<&SystemStore>| {
        let p = project::parse(
            "berth.yaml",
            PathBuf::from("/p"),
            &format!(
                "name: t\ncaBundles:\n  corp: {{sources: [corp.pem], defaults: {defaults}}}\n"
            ),
        )
        .unwrap();
        let table = Table::new(vec![("corp.pem", corp.clone())]);
        build(&p, &p.ca_bundles[0], &table, NOW, true, &supplied(system))
    };
    let mozilla = bundle("mozilla", None).unwrap();
    assert!(mozilla.certificates > 100, "{}", mozilla.certificates);
    assert_eq!(
        mozilla.certificates,
        berth_trust::pem::decode(&mozilla_roots().1).len() + 1
    );
    let (public, _) = cert("Stand-in Public Root", (2024, 1, 1), (2030, 1, 1));
    let store = SystemStore {
        shown: "/etc/ssl/certs/ca-certificates.crt".into(),
        bytes: public.into_bytes(),
    };
    assert_eq!(bundle("system", Some(&store)).unwrap().certificates, 2);
    let missing = bundle("system", None).unwrap_err().to_string();
    assert!(missing.contains("BERTH_SYSTEM_CA_BUNDLE"), "{missing}");
}
