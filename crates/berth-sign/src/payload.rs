//! cosign's simple-signing payload: what a tag-scheme signature signs — the
//! image's manifest digest and repository, which must be the ones pinned (a
//! signature copied beside another image, or made for another digest, proves
//! nothing about this one).

use berth_ref::{Digest, Reference};

/// The media type of a simple-signing payload layer.
pub const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";

/// Why a payload does not vouch for an image.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PayloadError {
    /// Not the JSON cosign writes.
    #[error("its payload is not a cosign simple-signing document")]
    Malformed,
    /// It signs another digest.
    #[error("its payload signs digest {found}, not {expected}")]
    OtherDigest {
        /// The digest pinned.
        expected: String,
        /// The digest the payload names.
        found: String,
    },
    /// It names another repository.
    #[error("its payload names repository {found}, not {expected}")]
    OtherRepository {
        /// The repository pinned.
        expected: String,
        /// The one the payload names.
        found: String,
    },
}

/// Whether `payload` (its bytes as signed) names `digest` of `image`'s repository.
pub fn check_payload(
    payload: &[u8],
    image: &Reference,
    digest: &Digest,
) -> Result<(), PayloadError> {
    let value: serde_json::Value =
        serde_json::from_slice(payload).map_err(|_| PayloadError::Malformed)?;
    let critical = &value["critical"];
    if critical["type"].as_str() != Some("cosign container image signature") {
        return Err(PayloadError::Malformed);
    }
    let found = critical["image"]["docker-manifest-digest"]
        .as_str()
        .ok_or(PayloadError::Malformed)?;
    if found != digest.to_string() {
        return Err(PayloadError::OtherDigest {
            expected: digest.to_string(),
            found: berth_ref_shown(found),
        });
    }
    let named = critical["identity"]["docker-reference"]
        .as_str()
        .ok_or(PayloadError::Malformed)?;
    // cosign writes the repository as the user named it (`ghcr.io/x/y`, sometimes
    // with the tag): compared normalized.
    let same = Reference::parse(named).is_ok_and(|r| r.repository() == image.repository());
    if !same {
        return Err(PayloadError::OtherRepository {
            expected: image.repository().to_string(),
            found: berth_ref_shown(named),
        });
    }
    Ok(())
}

/// The payloads cosign writes for `digest` of `image` (Go's `json.Marshal` of its
/// simple-signing struct), for each spelling of the repository cosign may use: a
/// signature layer whose digest is one of these holds exactly these bytes, and
/// need not be fetched.
pub fn expected_payloads(image: &Reference, digest: &Digest) -> Vec<Vec<u8>> {
    let repository = image.repository();
    let mut names = vec![repository.to_string()];
    if repository.domain() == "docker.io" {
        names.push(format!("index.docker.io/{}", repository.path()));
    }
    (names.iter())
        .map(|name| {
            format!(r#"{{"critical":{{"identity":{{"docker-reference":"{name}"}},"image":{{"docker-manifest-digest":"{digest}"}},"type":"cosign container image signature"}},"optional":null}}"#).into_bytes()
        })
        .collect()
}

/// Text from a payload, cut and stripped of control characters for a message.
fn berth_ref_shown(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).take(200).collect()
}
