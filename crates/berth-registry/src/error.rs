use std::fmt;
use std::sync::Arc;

/// A registry operation that failed, naming the image and the registry. The
/// transport's error, where there is one, is kept as the source (shared, so the
/// error stays cheap to clone for results handed to several callers).
#[derive(Debug, Clone, thiserror::Error)]
pub enum RegistryError {
    /// The registry could not be reached.
    #[error(
        "{image}: cannot reach registry `{registry}`: {reason}; check that it is up{}",
        plain_http_hint(registry)
    )]
    Unreachable {
        /// The image.
        image: String,
        /// The registry host.
        registry: String,
        /// The transport's explanation (its innermost cause).
        reason: String,
        /// The transport's error.
        #[source]
        source: Option<Arc<reqwest::Error>>,
    },
    /// The registry took too long.
    #[error("{image}: registry `{registry}` did not answer within {seconds} s")]
    Timeout {
        /// The image.
        image: String,
        /// The registry host.
        registry: String,
        /// The timeout.
        seconds: u64,
        /// The transport's error.
        #[source]
        source: Option<Arc<reqwest::Error>>,
    },
    /// Unknown repository or tag.
    #[error("{image}: not found in registry `{registry}` (unknown repository or tag); check the name and tag, or push the image first")]
    NotFound {
        /// The image.
        image: String,
        /// The registry host.
        registry: String,
    },
    /// Credentials missing or refused.
    #[error("{image}: registry `{registry}` refused access ({status}); {login}")]
    Denied {
        /// The image.
        image: String,
        /// The registry host.
        registry: String,
        /// 401 or 403, with the registry's word.
        status: Status,
        /// Which login was sent, from which file, or where none was found.
        login: String,
    },
    /// A server error that did not recover after retries.
    #[error("{image}: registry `{registry}` failed after {attempts} attempts: {reason}")]
    Server {
        /// The image.
        image: String,
        /// The registry host.
        registry: String,
        /// Attempts made.
        attempts: u32,
        /// The last error.
        reason: String,
    },
    /// A credential helper failed.
    #[error("credential helper `docker-credential-{helper}` failed for `{registry}`: {reason}")]
    CredentialHelper {
        /// The helper's name.
        helper: String,
        /// The registry host.
        registry: String,
        /// What went wrong.
        reason: String,
    },
    /// The Docker config file cannot be used.
    #[error("{path}: {reason}")]
    DockerConfig {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// `--platform` names a platform the image index does not have.
    #[error("{image}: no manifest for platform `{platform}` in its index (it has: {available})")]
    NoPlatform {
        /// The image.
        image: String,
        /// The requested platform.
        platform: String,
        /// The platforms present.
        available: String,
    },
    /// The HTTP client could not be built (the TLS backend failed to start).
    #[error("cannot set up the registry client: {reason}")]
    Client {
        /// The client's explanation.
        reason: String,
        /// The client's error.
        #[source]
        source: Arc<reqwest::Error>,
    },
    /// Anything else the registry answered.
    #[error("{image}: registry `{registry}`: {reason}")]
    Other {
        /// The image.
        image: String,
        /// The registry host.
        registry: String,
        /// The client's explanation.
        reason: String,
        /// The transport's error, when it came from there.
        #[source]
        source: Option<Arc<reqwest::Error>>,
    },
}

/// An HTTP status for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status(pub String);

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn plain_http_hint(registry: &str) -> String {
    let local = registry.starts_with("localhost")
        || registry.starts_with("127.")
        || registry.starts_with("[::1]");
    if local {
        format!(" (a plain-HTTP registry needs `--insecure-registry {registry}`)")
    } else {
        String::new()
    }
}

impl RegistryError {
    /// [`RegistryError::Other`] about `image`, with no transport error behind it.
    pub(crate) fn other(image: &berth_ref::Reference, reason: impl Into<String>) -> RegistryError {
        RegistryError::Other {
            image: image.to_string(),
            registry: image.domain().to_string(),
            reason: reason.into(),
            source: None,
        }
    }
}
