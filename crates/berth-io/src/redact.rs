//! What berth repeats of what peers say (an API server, a registry, a proxy,
//! a subprocess): credentials masked, control characters dropped, cut to a
//! bound — std only, so every edge crate (registry, kube, controller) redacts
//! through this one place without the project model.

/// The longest text of a peer (an API server, a registry, a proxy in front of
/// either) berth repeats in a message.
pub const PEER_TEXT_MAX: usize = 300;

/// A peer's error text made safe to print: credentials masked (`Bearer …`,
/// `Basic …`, `Authorization:` and `token`/`password` values — a proxy that
/// reflects the request would show berth's own), control characters and runs
/// of white space folded, and the whole cut to [`PEER_TEXT_MAX`] characters.
pub fn peer_text(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    let mut mask_next = false;
    for word in words {
        let clean: String = word.chars().filter(|c| !c.is_control()).collect();
        let lower = clean.to_ascii_lowercase();
        let bare = lower.trim_matches(|c: char| !c.is_ascii_alphanumeric());
        let scheme = matches!(bare, "bearer" | "basic" | "token" | "digest" | "negotiate");
        if mask_next && !scheme {
            out.push("<redacted>".into());
            mask_next = false;
            continue;
        }
        if matches!(bare, "bearer" | "basic")
            || lower.ends_with("authorization:")
            || (mask_next && scheme)
        {
            out.push(clean);
            mask_next = true;
            continue;
        }
        out.push(mask_assignment(&clean));
    }
    let folded = out.join(" ");
    let count = folded.chars().count();
    if count <= PEER_TEXT_MAX {
        return folded;
    }
    let cut: String = folded.chars().take(PEER_TEXT_MAX).collect();
    format!("{cut}… ({} more characters)", count - PEER_TEXT_MAX)
}

/// `text` with credentials masked in place — `Bearer …`/`Basic …` and the
/// values of `token`, `password`, `secret`, `access_token` and `authorization`
/// assignments (`k=v`, `k: v`, `"k":"v"`, JSON-escaped `\"k\":\"v\"`) — and
/// nothing else changed: no folding, no cut, so a JSON log line stays valid
/// JSON. The controller's log writer passes every line through it, including
/// lines kube-runtime writes itself.
pub fn mask_credentials(text: &str) -> String {
    const SCHEMES: [&str; 2] = ["bearer ", "basic "];
    const KEYS: [&str; 5] = [
        "access_token",
        "authorization",
        "password",
        "secret",
        "token",
    ];
    let lower = text.to_ascii_lowercase();
    let bytes = text.as_bytes();
    let is_end = |b: u8| b.is_ascii_whitespace() || b"\"'\\,;&}]".contains(&b);
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let rest = &lower[i..];
        let mut value_at = None;
        if let Some(scheme) = SCHEMES.iter().find(|s| rest.starts_with(**s)) {
            value_at = Some(i + scheme.len());
        } else if let Some(key) = KEYS.iter().find(|k| rest.starts_with(**k)) {
            let mut j = i + key.len();
            let skip = |j: &mut usize, set: &[u8]| {
                while *j < bytes.len() && set.contains(&bytes[*j]) {
                    *j += 1;
                }
            };
            skip(&mut j, b"\"'\\");
            if j < bytes.len() && (bytes[j] == b'=' || bytes[j] == b':') {
                j += 1;
                skip(&mut j, b" \"'\\");
                // `Authorization: Bearer …`: the credential follows the scheme.
                if let Some(scheme) = SCHEMES.iter().find(|s| lower[j..].starts_with(**s)) {
                    j += scheme.len();
                }
                value_at = Some(j);
            }
        }
        match value_at {
            Some(start) if start < bytes.len() && !is_end(bytes[start]) => {
                let mut end = start;
                while end < bytes.len() && !is_end(bytes[end]) {
                    end += 1;
                }
                let value = &text[start..end];
                out.push_str(&text[i..start]);
                // "Bearer <redacted>" and the like stay readable; an already
                // masked value is left as it is.
                out.push_str(if value == "<redacted>" {
                    value
                } else {
                    "<redacted>"
                });
                i = end;
            }
            _ => {
                let c = text[i..].chars().next().unwrap_or(' ');
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    out
}

/// `token=…`, `"password":"…"` and the like, with the value masked.
fn mask_assignment(word: &str) -> String {
    const KEYS: [&str; 5] = [
        "token",
        "password",
        "secret",
        "access_token",
        "authorization",
    ];
    let lower = word.to_ascii_lowercase();
    for key in KEYS {
        let Some(at) = lower.find(key) else { continue };
        let rest = &word[at + key.len()..];
        let value_at = rest
            .char_indices()
            .find(|(_, c)| !matches!(c, '"' | '\'' | ':' | '=' | ' '))
            .map(|(i, _)| i);
        let separated = rest.starts_with(['=', ':', '"', '\'']) && rest.contains(['=', ':']);
        if let (true, Some(i)) = (separated, value_at) {
            return format!("{}{}<redacted>", &word[..at + key.len()], &rest[..i]);
        }
    }
    word.to_string()
}

#[cfg(test)]
mod peer_tests {
    use super::*;

    #[test]
    fn credentials_are_masked_in_place_and_json_stays_json() {
        let line = r#"{"timestamp":"t","level":"WARN","message":"watch","error":"request carried Authorization: Bearer abc.def and token=s3cr3t, \"password\":\"hunter2\"","target":"kube_runtime"}"#;
        let masked = mask_credentials(line);
        assert!(
            !masked.contains("abc.def")
                && !masked.contains("s3cr3t")
                && !masked.contains("hunter2"),
            "{masked}"
        );
        let value: serde_json::Value = serde_json::from_str(&masked).unwrap();
        assert_eq!(
            value["error"],
            "request carried Authorization: Bearer <redacted> and token=<redacted>, \"password\":\"<redacted>\""
        );
        for plain in [
            "the token is missing",
            "stopping signal=\"SIGTERM\"",
            "secrets listed: 3",
            "Bearer <redacted>",
        ] {
            assert_eq!(mask_credentials(plain), plain);
        }
    }

    #[test]
    fn credentials_in_peer_text_are_masked() {
        let cases = [
            (
                "GET /api HTTP/1.1\r\nAuthorization: Bearer abc.def.ghi\r\nHost: x",
                "Authorization: Bearer <redacted> Host: x",
            ),
            (
                "authorization: Basic dXNlcjpwYXNz",
                "authorization: Basic <redacted>",
            ),
            (r#"{"token":"s3cr3t","ok":1}"#, r#"{"token":"<redacted>"#),
            (
                "failed: password=hunter2 rejected",
                "failed: password=<redacted> rejected",
            ),
            ("the token is missing", "the token is missing"),
        ];
        for (input, want) in cases {
            let got = peer_text(input);
            assert!(
                got.starts_with(want) || got.contains(want),
                "{input:?}: {got:?}"
            );
            for secret in ["abc.def.ghi", "dXNlcjpwYXNz", "s3cr3t", "hunter2"] {
                assert!(!got.contains(secret), "{input:?}: {got:?}");
            }
        }
    }

    #[test]
    fn long_text_is_cut_and_control_characters_dropped() {
        let long = "x".repeat(1000);
        let got = peer_text(&long);
        assert!(got.ends_with("… (700 more characters)"), "{got}");
        assert_eq!(peer_text("a\u{1b}[31mred\u{7}"), "a[31mred");
    }
}
