//! The registry token flow (the distribution spec's "token authentication"):
//! ask `/v2/` what it wants; a `Bearer` challenge names a token server (its
//! `realm`), which is asked for a token for one repository and operation,
//! with the Docker config's user and password if there are any.
//!
//! berth runs it itself rather than through oci-client so that every answer is
//! read with a bound ([`berth_io::limits::TOKEN_BODY`]) and only a status is
//! ever shown of what a token server says: a failing one may echo the request,
//! `Authorization` header and all.

use reqwest::header::WWW_AUTHENTICATE;
use reqwest::{Response, StatusCode};

/// What `/v2/` asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Challenge {
    /// Nothing: anonymous access works (200).
    None,
    /// HTTP basic authentication.
    Basic,
    /// A token from `realm`, for `service`.
    Bearer {
        realm: String,
        service: Option<String>,
    },
}

/// Parses a `WWW-Authenticate` value: `Bearer realm="…",service="…",scope="…"`
/// or `Basic realm="…"`.
pub(crate) fn parse_challenge(value: &str) -> Option<Challenge> {
    let (scheme, rest) = value
        .trim()
        .split_once(char::is_whitespace)
        .unwrap_or((value.trim(), ""));
    if scheme.eq_ignore_ascii_case("basic") {
        return Some(Challenge::Basic);
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let mut realm = None;
    let mut service = None;
    for (key, value) in parameters(rest) {
        match key.to_ascii_lowercase().as_str() {
            "realm" => realm = Some(value),
            "service" => service = Some(value),
            _ => {}
        }
    }
    Some(Challenge::Bearer {
        realm: realm?,
        service,
    })
}

/// `key="value", key=value` pairs; quoted values may hold commas.
fn parameters(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = text.trim();
    while let Some((key, after)) = rest.split_once('=') {
        let key = key.trim().trim_start_matches(',').trim().to_string();
        let after = after.trim_start();
        let (value, next) = match after.strip_prefix('"') {
            Some(quoted) => match quoted.find('"') {
                Some(end) => (quoted[..end].to_string(), &quoted[end + 1..]),
                None => (quoted.to_string(), ""),
            },
            None => match after.find(',') {
                Some(end) => (after[..end].trim().to_string(), &after[end..]),
                None => (after.trim().to_string(), ""),
            },
        };
        out.push((key, value));
        rest = next.trim_start().trim_start_matches(',');
    }
    out
}

/// The challenge of a `/v2/` answer.
pub(crate) fn challenge_of(response: &Response) -> Option<Challenge> {
    match response.status() {
        StatusCode::UNAUTHORIZED => response
            .headers()
            .get_all(WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .filter_map(parse_challenge)
            // Bearer first: a registry offering both prefers tokens.
            .min_by_key(|c| !matches!(c, Challenge::Bearer { .. })),
        _ => Some(Challenge::None),
    }
}

/// The token in a token server's answer (`token`, or OAuth2's `access_token`),
/// or why there is none — never the answer itself.
pub(crate) fn token_of(body: &[u8]) -> Result<String, &'static str> {
    let json: serde_json::Value = serde_json::from_slice(body).map_err(|_| {
        "its answer is not JSON (a login page or a proxy in front of it answers like this)"
    })?;
    ["token", "access_token"]
        .iter()
        .find_map(|k| json.get(k).and_then(serde_json::Value::as_str))
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .ok_or("its answer holds no `token`")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn challenges_parse_as_registries_send_them() {
        assert_eq!(
            parse_challenge(
                r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:a/b:pull,push""#
            ),
            Some(Challenge::Bearer {
                realm: "https://auth.docker.io/token".into(),
                service: Some("registry.docker.io".into()),
            })
        );
        assert_eq!(
            parse_challenge("bearer realm=http://127.0.0.1:5000/token"),
            Some(Challenge::Bearer {
                realm: "http://127.0.0.1:5000/token".into(),
                service: None,
            })
        );
        assert_eq!(
            parse_challenge(r#"Basic realm="Registry""#),
            Some(Challenge::Basic)
        );
        assert_eq!(parse_challenge("Bearer service=x"), None, "no realm");
        assert_eq!(parse_challenge("Negotiate"), None);
    }

    #[test]
    fn a_token_answer_gives_its_token_and_nothing_else_is_shown() {
        assert_eq!(
            token_of(br#"{"token":"t1","expires_in":300}"#).unwrap(),
            "t1"
        );
        assert_eq!(token_of(br#"{"access_token":"t2"}"#).unwrap(), "t2");
        assert!(token_of(b"<html>login</html>")
            .unwrap_err()
            .contains("not JSON"));
        assert_eq!(
            token_of(br#"{"token":""}"#).unwrap_err(),
            "its answer holds no `token`"
        );
    }
}
