use std::fmt;

/// Why a string is not a valid image reference.
///
/// Each message says what is wrong and, where it helps, how to write it
/// instead. The offending input itself is not repeated: callers name it
/// together with its source (a flag, a variable, a file position).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefError {
    /// The input was empty.
    Empty,
    /// A bare 64-character hex string, which Docker reserves for image IDs.
    HexIdentifier,
    /// The registry host (or port) is malformed.
    InvalidDomain {
        /// The host part as written.
        domain: String,
    },
    /// The repository path contains upper-case letters.
    UppercasePath {
        /// The repository path as written (after Docker Hub normalization).
        path: String,
    },
    /// The repository path is empty or has a malformed component.
    InvalidPath {
        /// The repository path as written.
        path: String,
    },
    /// The repository path is longer than [`crate::MAX_PATH_LEN`].
    PathTooLong {
        /// Length of the path in bytes.
        len: usize,
    },
    /// The tag does not match `[\w][\w.-]{0,127}`.
    InvalidTag {
        /// The tag as written.
        tag: String,
    },
    /// The digest is not `algorithm:hex`.
    InvalidDigestFormat {
        /// The digest as written.
        digest: String,
    },
    /// The digest algorithm is well-formed but not one of sha256, sha384, sha512.
    UnsupportedDigestAlgorithm {
        /// The algorithm as written.
        algorithm: String,
    },
    /// The digest's hex part has the wrong length or is not lowercase hex.
    InvalidDigestHex {
        /// The algorithm the hex belongs to.
        algorithm: &'static str,
        /// The required number of hex characters.
        expected_len: usize,
    },
    /// A registry prefix (for `--registry` / `IMAGE_REGISTRY`) is malformed.
    InvalidPrefix {
        /// The prefix as written.
        prefix: String,
        /// Why it is not a valid prefix.
        reason: Box<RefError>,
    },
}

impl fmt::Display for RefError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RefError::Empty => write!(f, "empty image reference"),
            RefError::HexIdentifier => write!(
                f,
                "a 64-character hex string is an image ID, not a repository name; \
                 to refer to content by hash write `name@sha256:<hex>`"
            ),
            RefError::InvalidDomain { domain } => write!(
                f,
                "invalid registry host `{}`: expected a DNS name, an IPv4 address or \
                 a bracketed IPv6 address, optionally followed by `:port`",
                crate::shown(domain)
            ),
            RefError::UppercasePath { path } => write!(
                f,
                "repository name `{}` must be lowercase (write `{}`)",
                crate::shown(path),
                crate::shown(&path.to_ascii_lowercase())
            ),
            RefError::InvalidPath { path } if path.is_empty() => {
                write!(f, "missing repository name")
            }
            RefError::InvalidPath { path } => write!(
                f,
                "invalid repository name `{}`: each `/`-separated component must be \
                 lowercase letters and digits, joined by `.`, `_`, `__` or dashes",
                crate::shown(path)
            ),
            RefError::PathTooLong { len } => write!(
                f,
                "repository name is {len} characters long; at most {} are allowed",
                crate::MAX_PATH_LEN
            ),
            RefError::InvalidTag { tag } => write!(
                f,
                "invalid tag `{}`: a tag is 1 to {} letters, digits, `_`, `.` or `-`, \
                 and may not start with `.` or `-`",
                crate::shown(tag),
                crate::MAX_TAG_LEN
            ),
            RefError::InvalidDigestFormat { digest } => write!(
                f,
                "invalid digest `{}`: expected `sha256:` followed by 64 lowercase hex characters",
                crate::shown(digest)
            ),
            RefError::UnsupportedDigestAlgorithm { algorithm } => write!(
                f,
                "unsupported digest algorithm `{}`: use sha256, sha384 or sha512",
                crate::shown(algorithm)
            ),
            RefError::InvalidDigestHex {
                algorithm,
                expected_len,
            } => write!(
                f,
                "invalid {algorithm} digest: expected exactly {expected_len} lowercase hex characters"
            ),
            RefError::InvalidPrefix { prefix, reason } => write!(
                f,
                "invalid registry prefix `{}` (expected a host with an optional path, \
                 like `quay.io/me`): {reason}",
                crate::shown(prefix)
            ),
        }
    }
}

impl std::error::Error for RefError {}
