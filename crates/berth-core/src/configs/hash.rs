//! The name suffix kustomize computes, reproduced exactly, so the same data
//! gets the same name under both tools.
//!
//! kustomize (api/hasher) hashes the Go `encoding/json` encoding of
//! `{"kind","name","data"[,"binaryData"]}` for a ConfigMap and
//! `{"kind","type","name","data"}` for a Secret: keys sorted, strings escaped
//! the Go way (HTML-safe `<`, `>`, `&`; `\b`, `\f` since Go 1.22). The suffix
//! is the first 10 hex digits of the SHA-256, with `0 1 3 a e` replaced by
//! `g h k m t` to avoid words.
//!
//! What it hashes is its own object, so two details of how kustomize builds
//! that object count: base64 values (a Secret's `data`, a ConfigMap's
//! `binaryData`) are written by kyaml's `encodeBase64`, which breaks an encoding
//! of 70 characters or more into 70-character lines, each ending in `\n` (so
//! from 52 bytes of value on); and a generated Secret always has a `data` map,
//! `{}` when empty, where an empty ConfigMap has none (hashed as `""`). berth's
//! own objects carry the unbroken encoding (the API server decodes either).
//!
//! `name` is always `""`: kustomize looks it up as the single field
//! `"metadata/name"`, which never exists, so its suffix depends on the data
//! alone. Verified against `kubectl kustomize` (v5.5) in the CLI tests.

use std::fmt::Write as _;

use sha2::{Digest as _, Sha256};

/// The encoded identity of a generated object, as kustomize hashes it.
pub struct HashInput<'a> {
    /// `ConfigMap` or `Secret`.
    pub kind: &'a str,
    /// Secret type (`Opaque`), or `None` for a ConfigMap.
    pub secret_type: Option<&'a str>,
    /// `data`, sorted by key (base64 values for a Secret).
    pub data: &'a [(String, String)],
    /// `binaryData`, sorted by key (ConfigMaps only).
    pub binary_data: &'a [(String, String)],
}

/// `sha256` hex of the Go JSON encoding.
pub fn content_sha256(input: &HashInput<'_>) -> String {
    berth_ref::lower_hex(&Sha256::digest(go_json(input).as_bytes()))
}

/// A config's name and content hash: `BASE-<suffix>` when `hashed` (kustomize's
/// content-addressed name), else `BASE` as written.
pub fn name_and_hash(base: &str, hashed: bool, input: &HashInput<'_>) -> (String, String) {
    let content_sha256 = content_sha256(input);
    let name = match hashed {
        true => format!("{base}-{}", suffix(&content_sha256)),
        false => base.to_string(),
    };
    (name, content_sha256)
}

/// The 10-character name suffix.
pub fn suffix(sha256_hex: &str) -> String {
    sha256_hex
        .chars()
        .take(10)
        .map(|c| match c {
            '0' => 'g',
            '1' => 'h',
            '3' => 'k',
            'a' => 'm',
            'e' => 't',
            c => c,
        })
        .collect()
}

fn go_json(input: &HashInput<'_>) -> String {
    let secret = input.secret_type.is_some();
    // Top-level keys in Go's sorted order.
    let mut out = String::from("{");
    if !input.binary_data.is_empty() {
        out.push_str("\"binaryData\":");
        go_map(&mut out, input.binary_data, true);
        out.push(',');
    }
    out.push_str("\"data\":");
    if input.data.is_empty() && !secret {
        out.push_str("\"\"");
    } else {
        go_map(&mut out, input.data, secret);
    }
    out.push_str(",\"kind\":");
    go_string(&mut out, input.kind);
    out.push_str(",\"name\":\"\"");
    if let Some(secret_type) = input.secret_type {
        out.push_str(",\"type\":");
        go_string(&mut out, secret_type);
    }
    out.push('}');
    out
}

/// A base64 value as kyaml's `encodeBase64` writes it: 70-character lines, each
/// ending in `\n`, once the encoding has 70 characters or more.
fn kyaml_base64(encoded: &str) -> std::borrow::Cow<'_, str> {
    const LINE: usize = 70;
    if encoded.len() < LINE {
        return encoded.into();
    }
    let mut out = String::with_capacity(encoded.len() + encoded.len() / LINE + 1);
    for chunk in encoded.as_bytes().chunks(LINE) {
        // base64 is ASCII, so every chunk boundary is a char boundary.
        out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        out.push('\n');
    }
    out.into()
}

fn go_map(out: &mut String, entries: &[(String, String)], base64: bool) {
    debug_assert!(
        entries.windows(2).all(|w| w[0].0 < w[1].0),
        "sorted, unique keys"
    );
    out.push('{');
    for (i, (k, v)) in entries.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        go_string(out, k);
        out.push(':');
        if base64 {
            go_string(out, &kyaml_base64(v));
        } else {
            go_string(out, v);
        }
    }
    out.push('}');
}

/// A string as Go's `encoding/json` writes it with HTML escaping on.
fn go_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn go_encoding_escapes_like_encoding_json() {
        let data = pairs(&[("a", "<x> & \"y\" \\ \n\t\u{1}\u{8}\u{c}\u{7f}\u{2028}é")]);
        let json = go_json(&HashInput {
            kind: "ConfigMap",
            secret_type: None,
            data: &data,
            binary_data: &[],
        });
        assert_eq!(
            json,
            "{\"data\":{\"a\":\"\\u003cx\\u003e \\u0026 \\\"y\\\" \\\\ \\n\\t\\u0001\\b\\f\u{7f}\\u2028é\"},\"kind\":\"ConfigMap\",\"name\":\"\"}"
        );
        let empty = go_json(&HashInput {
            kind: "Secret",
            secret_type: Some("Opaque"),
            data: &[],
            binary_data: &[],
        });
        assert_eq!(
            empty, "{\"data\":{},\"kind\":\"Secret\",\"name\":\"\",\"type\":\"Opaque\"}",
            "a generated Secret always has a data map"
        );
        let empty_map = go_json(&HashInput {
            kind: "ConfigMap",
            secret_type: None,
            data: &[],
            binary_data: &[],
        });
        assert_eq!(
            empty_map,
            "{\"data\":\"\",\"kind\":\"ConfigMap\",\"name\":\"\"}"
        );
    }

    #[test]
    fn long_base64_values_are_hashed_in_70_character_lines() {
        assert_eq!(kyaml_base64(&"a".repeat(68)), "a".repeat(68));
        assert_eq!(
            kyaml_base64(&"a".repeat(72)),
            format!("{}\n{}\n", "a".repeat(70), "aa")
        );
        assert_eq!(
            kyaml_base64(&"b".repeat(140)),
            format!("{0}\n{0}\n", "b".repeat(70))
        );
    }

    #[test]
    fn suffix_avoids_words() {
        assert_eq!(suffix("0123456789abcdef"), "gh2k456789");
        assert_eq!(suffix("abcdeabcde0"), "mbcdtmbcdt");
    }
}

#[cfg(test)]
mod kustomize_values {
    use super::*;

    /// Suffixes `kubectl kustomize` (v5.5) printed for these generators.
    #[test]
    fn known_suffixes() {
        let data = vec![("a".to_string(), "b".to_string())];
        let hex = content_sha256(&HashInput {
            kind: "ConfigMap",
            secret_type: None,
            data: &data,
            binary_data: &[],
        });
        assert_eq!(suffix(&hex), "4h2mbtbbt6");
        let data = vec![("password".to_string(), "czNjcjN0".to_string())];
        let hex = content_sha256(&HashInput {
            kind: "Secret",
            secret_type: Some("Opaque"),
            data: &data,
            binary_data: &[],
        });
        assert_eq!(suffix(&hex), "25k92892fb");
    }
}
