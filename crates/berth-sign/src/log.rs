//! A sigstore bundle's transparency log entry checked offline (#51,
//! `transparencyLog: required`), as Rekor v2 (rekor-tiles) writes it: the
//! entry's body names the very signature the bundle carries, its inclusion
//! proof (RFC 9162, §2.1.3) leads from that body to a tree root, and the log's
//! key signed a checkpoint (C2SP's signed note) stating that root and size.
//! The log's key and origin come from sigstore's trusted_root.json (`tlogs`).
//!
//! Rekor v1 entries (a signed entry timestamp, cosign 2's tag scheme) are not
//! checked here: that log needs Trillian and MySQL, which nothing here runs,
//! and a check that was never run against a real log is not offered.

use base64::Engine as _;
use sha2::{Digest as _, Sha256};

use crate::PublicKey;

/// How a checkpoint's signature line begins: an em dash and a space.
const SIGNATURE_LINE: &str = "\u{2014} ";

/// A log that trusted_root.json names.
#[derive(Debug, Clone)]
pub struct TrustedLog {
    /// The checkpoint origin: its `baseUrl` without the scheme (`log2025-1.rekor.sigstore.dev`).
    pub origin: String,
    /// Its log ID (`logId.keyId`), as bundles name it.
    pub id: Vec<u8>,
    key: PublicKey,
}

/// Why a bundle's log entry does not vouch for its signature.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogError {
    /// The bundle carries no entry at all (signed with the log skipped).
    #[error("its bundle carries no transparency log entry (it was signed with the log skipped)")]
    NoEntry,
    /// Entries, none in a log trusted_root.json names.
    #[error("its bundle's log entries are in no log `trustedRoot:` names")]
    UnknownLog,
    /// A Rekor v1 entry: a signed entry timestamp, not an inclusion proof.
    #[error("its log entry is Rekor v1's ({0}), whose signed entry timestamp this berth does not check; only Rekor v2 entries (inclusion proof and checkpoint) are")]
    RekorV1(String),
    /// A field missing or not as the bundle format has it.
    #[error("its log entry is malformed: {0}")]
    Malformed(&'static str),
    /// The entry logs another signature or payload.
    #[error("its log entry records another signature than the bundle's")]
    OtherSignature,
    /// The proof does not lead to the root.
    #[error("its log entry's inclusion proof does not lead to the tree root it states")]
    NotIncluded,
    /// The checkpoint is not the log's, or states another tree.
    #[error("its log entry's checkpoint {0}")]
    Checkpoint(&'static str),
}

/// The logs of sigstore's trusted_root.json (`tlogs`), each with its key.
pub fn trusted_root_logs(json: &[u8]) -> Option<Vec<TrustedLog>> {
    let value: serde_json::Value = serde_json::from_slice(json).ok()?;
    let logs = (value["tlogs"].as_array()?.iter())
        .filter_map(|log| {
            let key = PublicKey::from_spki_der(&b64(&log["publicKey"]["rawBytes"])?).ok()?;
            let base = log["baseUrl"].as_str()?;
            let origin = base.split_once("://").map_or(base, |(_, rest)| rest);
            Some(TrustedLog {
                origin: origin.trim_end_matches('/').to_string(),
                id: b64(&log["logId"]["keyId"])?,
                key,
            })
        })
        .collect();
    Some(logs)
}

/// The index of the entry, in a log of `logs`, that proves `bundle`'s
/// signature was logged; why not, otherwise (the last entry's reason).
pub fn verify_log_entry(bundle: &[u8], logs: &[TrustedLog]) -> Result<u64, LogError> {
    let value: serde_json::Value =
        serde_json::from_slice(bundle).map_err(|_| LogError::Malformed("not JSON"))?;
    let entries = value["verificationMaterial"]["tlogEntries"]
        .as_array()
        .filter(|e| !e.is_empty())
        .ok_or(LogError::NoEntry)?;
    let mut last = LogError::UnknownLog;
    for entry in entries {
        let Some(log) =
            b64(&entry["logId"]["keyId"]).and_then(|id| logs.iter().find(|l| l.id == id))
        else {
            continue;
        };
        match verify_entry(&value, entry, log) {
            Ok(index) => return Ok(index),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// [`verify_log_entry`] for one entry of `log`.
fn verify_entry(
    bundle: &serde_json::Value,
    entry: &serde_json::Value,
    log: &TrustedLog,
) -> Result<u64, LogError> {
    let version = entry["kindVersion"]["version"].as_str().unwrap_or_default();
    let kind = entry["kindVersion"]["kind"].as_str().unwrap_or_default();
    if version != "0.0.2" {
        return Err(LogError::RekorV1(format!("{kind} {version}")));
    }
    let body = b64(&entry["canonicalizedBody"]).ok_or(LogError::Malformed("no body"))?;
    check_body(bundle, kind, &body)?;
    let proof = &entry["inclusionProof"];
    let number = |v: &serde_json::Value| match v {
        serde_json::Value::Null => Some(0),
        v => v.as_str()?.parse::<u64>().ok(),
    };
    let index = number(&proof["logIndex"]).ok_or(LogError::Malformed("logIndex"))?;
    let size = number(&proof["treeSize"]).ok_or(LogError::Malformed("treeSize"))?;
    let root = b64(&proof["rootHash"]).ok_or(LogError::Malformed("rootHash"))?;
    let hashes = (proof["hashes"].as_array().into_iter().flatten())
        .map(b64)
        .collect::<Option<Vec<_>>>()
        .ok_or(LogError::Malformed("hashes"))?;
    if !included(&leaf_hash(&body), index, size, &hashes, &root) {
        return Err(LogError::NotIncluded);
    }
    let note = proof["checkpoint"]["envelope"]
        .as_str()
        .ok_or(LogError::Malformed("no checkpoint"))?;
    check_checkpoint(note, log, size, &root)?;
    Ok(index)
}

/// Whether the entry's body records the bundle's own signature: Rekor v2's
/// `hashedrekord` (the digest of DSSE's pre-authentication encoding, and the
/// signature) or `dsse` (the payload's digest, and the signatures).
fn check_body(bundle: &serde_json::Value, kind: &str, body: &[u8]) -> Result<(), LogError> {
    let body: serde_json::Value =
        serde_json::from_slice(body).map_err(|_| LogError::Malformed("body not JSON"))?;
    let envelope = &bundle["dsseEnvelope"];
    let payload = b64(&envelope["payload"]).ok_or(LogError::Malformed("no DSSE payload"))?;
    let payload_type = envelope["payloadType"].as_str().unwrap_or_default();
    let signatures: Vec<Vec<u8>> = (envelope["signatures"].as_array().into_iter().flatten())
        .filter_map(|s| b64(&s["sig"]))
        .collect();
    let (digest, logged, hashed) = match kind {
        "hashedrekord" => {
            let spec = &body["spec"]["hashedRekordV002"];
            let signed = Sha256::digest(crate::bundle::pae(payload_type, &payload));
            let logged = vec![b64(&spec["signature"]["content"])];
            (&spec["data"]["digest"], logged, signed)
        }
        "dsse" => {
            let spec = &body["spec"]["dsseV002"];
            let logged = (spec["signatures"].as_array().into_iter().flatten())
                .map(|s| b64(&s["content"]))
                .collect();
            (
                &spec["payloadHash"]["digest"],
                logged,
                Sha256::digest(&payload),
            )
        }
        _ => {
            return Err(LogError::Malformed(
                "an entry kind other than hashedrekord or dsse",
            ))
        }
    };
    let same_digest = b64(digest).is_some_and(|d| d == hashed.as_slice());
    let same_signature = logged.iter().flatten().any(|l| signatures.contains(l));
    if same_digest && same_signature {
        Ok(())
    } else {
        Err(LogError::OtherSignature)
    }
}

/// RFC 9162's leaf hash: SHA-256 of 0x00 and the entry.
fn leaf_hash(entry: &[u8]) -> Vec<u8> {
    let mut hasher = Sha256::new();
    hasher.update([0u8]);
    hasher.update(entry);
    hasher.finalize().to_vec()
}

/// SHA-256 of 0x01 and two child hashes.
fn node_hash(left: &[u8], right: &[u8]) -> Vec<u8> {
    let mut hasher = Sha256::new();
    hasher.update([1u8]);
    hasher.update(left);
    hasher.update(right);
    hasher.finalize().to_vec()
}

/// RFC 9162, §2.1.3.2: whether `path` proves leaf `index` of a tree of `size`
/// leaves, whose hash is `leaf`, under `root`.
fn included(leaf: &[u8], index: u64, size: u64, path: &[Vec<u8>], root: &[u8]) -> bool {
    if index >= size {
        return false;
    }
    let (mut f, mut s) = (index, size - 1);
    let mut r = leaf.to_vec();
    for p in path {
        if s == 0 {
            return false;
        }
        if f & 1 == 1 || f == s {
            r = node_hash(p, &r);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        f >>= 1;
        s >>= 1;
    }
    s == 0 && r == root
}

/// Whether `note` is a checkpoint of `log` for a tree of `size` leaves under
/// `root`, signed by the log's key (C2SP signed note: the text, a blank line,
/// then `— <origin> <base64 of key hash and signature>` lines).
fn check_checkpoint(note: &str, log: &TrustedLog, size: u64, root: &[u8]) -> Result<(), LogError> {
    let split = note
        .find("\n\n")
        .ok_or(LogError::Checkpoint("is not a signed note"))?;
    let (text, signatures) = (&note[..=split], &note[split + 2..]);
    let mut lines = text.lines();
    if lines.next() != Some(log.origin.as_str()) {
        return Err(LogError::Checkpoint(
            "is another log's (its origin differs)",
        ));
    }
    let stated_size = lines.next().and_then(|l| l.parse::<u64>().ok());
    let stated_root = lines.next().and_then(base64_std);
    if stated_size != Some(size) || stated_root.as_deref() != Some(root) {
        return Err(LogError::Checkpoint("states another tree than its proof"));
    }
    let key_hash = log.key.note_key_hash(&log.origin);
    let signed = (signatures.lines())
        .filter_map(|line| line.strip_prefix(SIGNATURE_LINE))
        .filter_map(|line| line.split_once(' '))
        .filter(|(name, _)| *name == log.origin)
        .filter_map(|(_, signature)| base64_std(signature))
        .filter(|raw| raw.len() > 4 && raw[..4] == key_hash)
        .any(|raw| log.key.verifies(text.as_bytes(), &raw[4..]));
    if signed {
        Ok(())
    } else {
        Err(LogError::Checkpoint("is not signed by the log's key"))
    }
}

/// Standard base64 text decoded.
fn base64_std(text: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

/// A JSON string's base64 decoded.
fn b64(value: &serde_json::Value) -> Option<Vec<u8>> {
    base64_std(value.as_str()?)
}

#[cfg(test)]
mod tests;
