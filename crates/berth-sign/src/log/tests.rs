//! A bundle cosign 3 wrote with a real Rekor v2 (rekor-tiles v2.3.0, POSIX
//! storage, origin `rekor.test`; entry 5 of a tree of 6, so the proof has two
//! hashes), the trusted root naming that log's key, and each way to spoil them.

use serde_json::Value;

use super::*;

const BUNDLE: &[u8] = include_bytes!("../../testdata/rekor-v2-bundle.json");
const ROOT: &[u8] = include_bytes!("../../testdata/rekor-v2-trusted-root.json");

fn logs() -> Vec<TrustedLog> {
    trusted_root_logs(ROOT).unwrap()
}

/// The bundle with `edit` applied to its first log entry.
fn spoiled(edit: impl Fn(&mut Value)) -> Vec<u8> {
    let mut bundle: Value = serde_json::from_slice(BUNDLE).unwrap();
    edit(&mut bundle["verificationMaterial"]["tlogEntries"][0]);
    serde_json::to_vec(&bundle).unwrap()
}

fn b64_of(bytes: &[u8]) -> Value {
    Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
}

#[test]
fn a_rekor_v2_entry_is_checked_to_its_signed_checkpoint() {
    let logs = logs();
    assert_eq!(logs.len(), 1);
    assert_eq!(logs[0].origin, "rekor.test");
    assert_eq!(verify_log_entry(BUNDLE, &logs), Ok(5));

    let checkpoint = |edit: &dyn Fn(&str) -> String| {
        spoiled(|e| {
            let note = e["inclusionProof"]["checkpoint"]["envelope"]
                .as_str()
                .unwrap();
            e["inclusionProof"]["checkpoint"]["envelope"] = Value::String(edit(note));
        })
    };
    let cases: Vec<(&str, Vec<u8>, LogError)> = vec![
        (
            "an entry naming no log",
            spoiled(|e| *e = Value::Null),
            LogError::UnknownLog,
        ),
        (
            "another log",
            spoiled(|e| e["logId"]["keyId"] = b64_of(&[7; 32])),
            LogError::UnknownLog,
        ),
        (
            "Rekor v1",
            spoiled(|e| e["kindVersion"]["version"] = "0.0.1".into()),
            LogError::RekorV1("hashedrekord 0.0.1".into()),
        ),
        (
            "another signature logged",
            spoiled(|e| {
                let body = b64(&e["canonicalizedBody"]).unwrap();
                let text = String::from_utf8(body)
                    .unwrap()
                    .replacen("MEUCI", "MEYCI", 1);
                e["canonicalizedBody"] = b64_of(text.as_bytes());
            }),
            LogError::OtherSignature,
        ),
        (
            "a proof hash changed",
            spoiled(|e| e["inclusionProof"]["hashes"][0] = b64_of(&[0; 32])),
            LogError::NotIncluded,
        ),
        (
            "another index",
            spoiled(|e| e["inclusionProof"]["logIndex"] = "4".into()),
            LogError::NotIncluded,
        ),
        (
            "another origin",
            checkpoint(&|n| n.replace("rekor.test", "rekor.other")),
            LogError::Checkpoint("is another log's (its origin differs)"),
        ),
        (
            "another size",
            checkpoint(&|n| n.replacen("\n6\n", "\n7\n", 1)),
            LogError::Checkpoint("states another tree than its proof"),
        ),
        (
            "unsigned",
            checkpoint(&|n| n[..n.find("\n\n").unwrap() + 2].to_string()),
            LogError::Checkpoint("is not signed by the log's key"),
        ),
    ];
    for (what, bundle, expected) in cases {
        assert_eq!(verify_log_entry(&bundle, &logs), Err(expected), "{what}");
    }
    let mut none: Value = serde_json::from_slice(BUNDLE).unwrap();
    none["verificationMaterial"]["tlogEntries"] = Value::Array(Vec::new());
    let none = serde_json::to_vec(&none).unwrap();
    assert_eq!(verify_log_entry(&none, &logs), Err(LogError::NoEntry));
}

#[test]
fn inclusion_proofs_follow_rfc_9162() {
    // A tree of three leaves: root = H(H(l0, l1), l2).
    let leaves: Vec<Vec<u8>> = ["a", "b", "c"]
        .iter()
        .map(|l| leaf_hash(l.as_bytes()))
        .collect();
    let left = node_hash(&leaves[0], &leaves[1]);
    let root = node_hash(&left, &leaves[2]);
    let cases: [(u64, Vec<Vec<u8>>, bool); 5] = [
        (0, vec![leaves[1].clone(), leaves[2].clone()], true),
        (1, vec![leaves[0].clone(), leaves[2].clone()], true),
        (2, vec![left.clone()], true),
        (2, vec![left.clone(), leaves[0].clone()], false),
        (3, vec![left.clone()], false),
    ];
    for (index, path, expected) in cases {
        let leaf = leaves.get(index as usize).cloned().unwrap_or_default();
        assert_eq!(
            included(&leaf, index, 3, &path, &root),
            expected,
            "leaf {index}"
        );
    }
}
