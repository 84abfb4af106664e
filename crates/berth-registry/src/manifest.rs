//! What a manifest answer must be before its hash is taken as a digest: a
//! registry (or a proxy, or a login page in front of one) that answers a GET of a
//! manifest with something else must never get that something pinned.

use oci_client::manifest::{
    IMAGE_MANIFEST_LIST_MEDIA_TYPE, IMAGE_MANIFEST_MEDIA_TYPE, OCI_IMAGE_INDEX_MEDIA_TYPE,
    OCI_IMAGE_MEDIA_TYPE,
};

/// Every manifest type berth asks for: an OCI index, an OCI manifest, a
/// Docker manifest list and a Docker manifest (registries answer 404 to a HEAD
/// for a type the client did not accept).
pub const MANIFEST_TYPES: [&str; 4] = [
    OCI_IMAGE_INDEX_MEDIA_TYPE,
    OCI_IMAGE_MEDIA_TYPE,
    IMAGE_MANIFEST_LIST_MEDIA_TYPE,
    IMAGE_MANIFEST_MEDIA_TYPE,
];

/// The largest manifest berth reads. distribution refuses to store manifests over
/// 4 MiB; anything larger is not a manifest.
pub const MAX_MANIFEST_BYTES: usize = 4 << 20;

/// Why `body`, served with `content_type`, is not an image manifest or index;
/// `None` when it is one.
pub fn problem(content_type: Option<&str>, body: &[u8]) -> Option<String> {
    let header = content_type
        .map(|t| {
            t.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
        .filter(|t| !t.is_empty());
    if body.is_empty() {
        return Some("an empty body".into());
    }
    let json: serde_json::Value = match serde_json::from_slice(body) {
        Ok(json) => json,
        Err(_) => {
            return Some(match header.as_deref() {
                Some(t) => format!("{} bytes of `{t}` that are not JSON", body.len()),
                None => format!("{} bytes that are not JSON", body.len()),
            })
        }
    };
    let Some(object) = json.as_object() else {
        return Some("JSON that is not an object".into());
    };
    if object.get("schemaVersion").and_then(|v| v.as_u64()) != Some(2) {
        return Some("JSON without `schemaVersion: 2`".into());
    }
    let in_body = object.get("mediaType").and_then(|v| v.as_str());
    // An OCI manifest may omit `mediaType`; the header then says what it is.
    let media_type = match (header.as_deref(), in_body) {
        (Some(h), Some(b)) if h != b && h != "application/json" => {
            return Some(format!("a body of media type `{b}` served as `{h}`"))
        }
        (_, Some(b)) => b.to_string(),
        (Some(h), None) => h.to_string(),
        (None, None) => return Some("a manifest without a media type".into()),
    };
    if !MANIFEST_TYPES.contains(&media_type.as_str()) {
        return Some(format!(
            "media type `{media_type}`, which is not an image manifest or index"
        ));
    }
    let shaped = object.get("manifests").is_some_and(|m| m.is_array())
        || object.get("layers").is_some_and(|l| l.is_array());
    if !shaped {
        return Some(format!(
            "a `{media_type}` with neither `layers` nor `manifests`"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const OCI: &str = "application/vnd.oci.image.manifest.v1+json";
    const MANIFEST: &str = r#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{},"layers":[]}"#;

    #[test]
    fn manifests_and_indexes_pass() {
        assert_eq!(problem(Some(OCI), MANIFEST.as_bytes()), None);
        assert_eq!(problem(None, MANIFEST.as_bytes()), None);
        let bare = r#"{"schemaVersion":2,"manifests":[]}"#;
        assert_eq!(
            problem(
                Some("application/vnd.oci.image.index.v1+json; charset=utf-8"),
                bare.as_bytes()
            ),
            None
        );
    }

    #[test]
    fn everything_else_is_named() {
        let cases: &[(Option<&str>, &[u8], &str)] = &[
            (Some(OCI), b"", "an empty body"),
            (
                Some("text/html"),
                b"<html>login</html>",
                "18 bytes of `text/html` that are not JSON",
            ),
            (None, b"[1]", "JSON that is not an object"),
            (
                Some(OCI),
                br#"{"schemaVersion":1}"#,
                "without `schemaVersion: 2`",
            ),
            (
                None,
                br#"{"schemaVersion":2,"layers":[]}"#,
                "without a media type",
            ),
            (
                Some("application/json"),
                br#"{"schemaVersion":2,"mediaType":"text/plain","layers":[]}"#,
                "media type `text/plain`",
            ),
            (
                Some("text/plain"),
                MANIFEST.as_bytes(),
                "served as `text/plain`",
            ),
            (
                Some(OCI),
                br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json"}"#,
                "neither `layers` nor `manifests`",
            ),
        ];
        for (content_type, body, want) in cases {
            let got = problem(*content_type, body).unwrap_or_default();
            assert!(
                got.contains(want),
                "{content_type:?}: got {got:?}, want {want:?}"
            );
        }
    }
}
