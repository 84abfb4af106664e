//! A registry client: oci-client behind berth's reference type, with
//! credentials, plain-HTTP exceptions, timeouts and retries.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use berth_ref::{Digest, Reference};
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::{
    IMAGE_MANIFEST_LIST_MEDIA_TYPE, IMAGE_MANIFEST_MEDIA_TYPE, OCI_IMAGE_INDEX_MEDIA_TYPE,
    OCI_IMAGE_MEDIA_TYPE,
};
use oci_client::secrets::RegistryAuth;
use oci_client::RegistryOperation;

use crate::error::Status;
use crate::{credentials, DockerConfig, RegistryError};

/// Every manifest type berth asks for: an OCI index, an OCI manifest, a
/// Docker manifest list and a Docker manifest (registries answer 404 to a HEAD
/// for a type the client did not accept).
pub const MANIFEST_TYPES: [&str; 4] = [
    OCI_IMAGE_INDEX_MEDIA_TYPE,
    OCI_IMAGE_MEDIA_TYPE,
    IMAGE_MANIFEST_LIST_MEDIA_TYPE,
    IMAGE_MANIFEST_MEDIA_TYPE,
];

/// How to talk to registries.
#[derive(Debug, Clone)]
pub struct Options {
    /// Hosts (with port) reached over plain HTTP (`--insecure-registry`).
    pub insecure: Vec<String>,
    /// Connect and read timeout per request.
    pub timeout: Duration,
    /// Extra attempts after a 429 or 5xx answer.
    pub retries: u32,
    /// Wait before the first retry; doubled each time.
    pub backoff: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            insecure: Vec::new(),
            timeout: Duration::from_secs(30),
            retries: 3,
            backoff: Duration::from_millis(250),
        }
    }
}

/// A registry client shared by concurrent operations.
pub struct Registry {
    client: oci_client::Client,
    config: DockerConfig,
    options: Options,
    auths: Mutex<HashMap<String, RegistryAuth>>,
}

impl Registry {
    /// A client with these options and Docker credentials.
    pub fn new(options: Options, config: DockerConfig) -> Registry {
        let protocol = if options.insecure.is_empty() {
            ClientProtocol::Https
        } else {
            ClientProtocol::HttpsExcept(options.insecure.clone())
        };
        let client = oci_client::Client::new(ClientConfig {
            protocol,
            // berth always knows a blob's size: one streaming PUT per blob, not a PATCH per chunk.
            use_monolithic_push: true,
            connect_timeout: Some(options.timeout),
            read_timeout: Some(options.timeout),
            ..ClientConfig::default()
        });
        Registry {
            client,
            config,
            options,
            auths: Mutex::new(HashMap::new()),
        }
    }

    fn auth(&self, registry: &str) -> Result<RegistryAuth, RegistryError> {
        if let Ok(cache) = self.auths.lock() {
            if let Some(auth) = cache.get(registry) {
                return Ok(auth.clone());
            }
        }
        let auth = credentials(&self.config, registry)?;
        if let Ok(mut cache) = self.auths.lock() {
            cache.insert(registry.to_string(), auth.clone());
        }
        Ok(auth)
    }

    /// The digest of the manifest (or index) `image` names: one HEAD request.
    pub async fn manifest_digest(&self, image: &Reference) -> Result<Digest, RegistryError> {
        let target = oci_reference(image)?;
        let auth = self.auth(image.domain())?;
        let digest = self
            .retry(image, || self.client.fetch_manifest_digest(&target, &auth))
            .await?;
        parse_digest(image, &digest)
    }

    /// The manifest (or index) `image` names, as bytes, with its digest.
    pub async fn manifest(&self, image: &Reference) -> Result<(Vec<u8>, Digest), RegistryError> {
        let target = oci_reference(image)?;
        let auth = self.auth(image.domain())?;
        let (bytes, digest) = self
            .retry(image, || {
                self.client
                    .pull_manifest_raw(&target, &auth, &MANIFEST_TYPES)
            })
            .await?;
        Ok((bytes.to_vec(), parse_digest(image, &digest)?))
    }

    /// Whether `target`'s repository already has the blob.
    pub(crate) async fn blob_exists(
        &self,
        target: &Reference,
        digest: &str,
    ) -> Result<bool, RegistryError> {
        let oci = oci_reference(target)?;
        self.authorize(target, RegistryOperation::Pull).await?;
        self.retry(target, || self.client.blob_exists(&oci, digest))
            .await
    }

    /// Asks the registry to mount a blob from `source`'s repository into `target`'s
    /// (same registry); `false` when the registry declined.
    pub(crate) async fn mount(
        &self,
        target: &Reference,
        source: &Reference,
        digest: &str,
    ) -> Result<bool, RegistryError> {
        let (to, from) = (oci_reference(target)?, oci_reference(source)?);
        self.authorize(target, RegistryOperation::Push).await?;
        Ok(self.client.mount_blob(&to, &from, digest).await.is_ok())
    }

    /// Streams a blob from `source` to `target`, reporting bytes as they pass.
    pub(crate) async fn copy_blob(
        &self,
        source: &Reference,
        target: &Reference,
        digest: &str,
        size: u64,
        on_bytes: &(dyn Fn(u64) + Send + Sync),
    ) -> Result<(), RegistryError> {
        use futures_util::StreamExt as _;
        let (from, to) = (oci_reference(source)?, oci_reference(target)?);
        self.authorize(source, RegistryOperation::Pull).await?;
        self.authorize(target, RegistryOperation::Push).await?;
        self.retry(target, || async {
            let pulled = self.client.pull_blob_stream(&from, digest).await?;
            let counted = pulled.stream.map(|chunk| {
                chunk
                    .inspect(|bytes| on_bytes(bytes.len() as u64))
                    .map_err(OciDistributionError::IoError)
            });
            // The stream borrows `on_bytes`; oci-client wants 'static, so collect through a channel.
            let (tx, rx) =
                tokio::sync::mpsc::channel::<Result<bytes::Bytes, OciDistributionError>>(4);
            let forward = async move {
                let mut counted = std::pin::pin!(counted);
                while let Some(item) = counted.next().await {
                    if tx.send(item).await.is_err() {
                        break;
                    }
                }
            };
            let receiver = tokio_stream_from(rx);
            let (_, pushed) = tokio::join!(
                forward,
                self.client
                    .push_blob_stream(&to, receiver, digest, Some(size))
            );
            pushed.map(|_| ())
        })
        .await
    }

    /// Pushes a manifest's exact bytes (so its digest is preserved).
    pub(crate) async fn push_manifest(
        &self,
        target: &Reference,
        bytes: &[u8],
        media_type: &str,
    ) -> Result<(), RegistryError> {
        let to = oci_reference(target)?;
        self.authorize(target, RegistryOperation::Push).await?;
        let content_type = reqwest::header::HeaderValue::from_str(media_type).map_err(|e| {
            RegistryError::Other {
                image: target.to_string(),
                registry: target.domain().to_string(),
                reason: format!("unusable media type `{media_type}`: {e}"),
            }
        })?;
        let body = bytes::Bytes::copy_from_slice(bytes);
        self.retry(target, || {
            self.client
                .push_manifest_raw(&to, body.clone(), content_type.clone())
        })
        .await
        .map(|_| ())
    }

    /// Makes sure a token for `operation` on `image`'s repository is cached.
    async fn authorize(
        &self,
        image: &Reference,
        operation: RegistryOperation,
    ) -> Result<(), RegistryError> {
        let oci = oci_reference(image)?;
        let auth = self.auth(image.domain())?;
        self.retry(image, || self.client.auth(&oci, &auth, operation))
            .await
            .map(|_| ())
    }

    /// Runs `op`, retrying 429 and 5xx answers with exponential backoff.
    async fn retry<T, F, Fut>(&self, image: &Reference, op: F) -> Result<T, RegistryError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<T, OciDistributionError>>,
    {
        let mut wait = self.options.backoff;
        let mut attempt = 1;
        loop {
            match op().await {
                Ok(value) => return Ok(value),
                Err(error) if attempt <= self.options.retries && retryable(&error) => {
                    tokio::time::sleep(wait).await;
                    wait *= 2;
                    attempt += 1;
                }
                Err(error) => return Err(classify(image, error, attempt, self.options.timeout)),
            }
        }
    }
}

fn parse_digest(image: &Reference, text: &str) -> Result<Digest, RegistryError> {
    Digest::parse(text).map_err(|e| RegistryError::Other {
        image: image.to_string(),
        registry: image.domain().to_string(),
        reason: format!("the registry answered with an unusable digest `{text}`: {e}"),
    })
}

/// berth's reference as the client library's, through its canonical text.
fn oci_reference(image: &Reference) -> Result<oci_client::Reference, RegistryError> {
    image
        .to_string()
        .parse()
        .map_err(|e: oci_client::ParseError| RegistryError::Other {
            image: image.to_string(),
            registry: image.domain().to_string(),
            reason: format!("the OCI client cannot address this reference: {e}"),
        })
}

fn status_of(error: &OciDistributionError) -> Option<u16> {
    match error {
        OciDistributionError::ServerError { code, .. } => Some(*code),
        OciDistributionError::RequestError(e) => e.status().map(|s| s.as_u16()),
        _ => None,
    }
}

fn retryable(error: &OciDistributionError) -> bool {
    status_of(error).is_some_and(|code| code == 429 || code >= 500)
}

fn classify(
    image: &Reference,
    error: OciDistributionError,
    attempts: u32,
    timeout: Duration,
) -> RegistryError {
    let name = image.to_string();
    let registry = image.domain().to_string();
    let denied = |status: &str| RegistryError::Denied {
        image: name.clone(),
        registry: registry.clone(),
        status: Status(status.to_string()),
    };
    match &error {
        OciDistributionError::RequestError(e) if e.is_timeout() => {
            return RegistryError::Timeout {
                image: name,
                registry,
                seconds: timeout.as_secs(),
            }
        }
        OciDistributionError::RequestError(e) if e.is_connect() => {
            let mut reason = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(inner) = source {
                reason = inner.to_string();
                source = inner.source();
            }
            return RegistryError::Unreachable {
                image: name,
                registry,
                reason,
            };
        }
        OciDistributionError::UnauthorizedError { .. }
        | OciDistributionError::AuthenticationFailure(_) => return denied("401 Unauthorized"),
        OciDistributionError::ImageManifestNotFoundError(_) => {
            return RegistryError::NotFound {
                image: name,
                registry,
            }
        }
        OciDistributionError::RegistryError { envelope, .. } => {
            let codes: Vec<&OciErrorCode> = envelope.errors.iter().map(|e| &e.code).collect();
            if codes
                .iter()
                .any(|c| matches!(c, OciErrorCode::ManifestUnknown | OciErrorCode::NameUnknown))
            {
                return RegistryError::NotFound {
                    image: name,
                    registry,
                };
            }
            if codes
                .iter()
                .any(|c| matches!(c, OciErrorCode::Unauthorized))
            {
                return denied("401 Unauthorized");
            }
            if codes.iter().any(|c| matches!(c, OciErrorCode::Denied)) {
                return denied("403 Forbidden");
            }
        }
        _ => {}
    }
    match status_of(&error) {
        Some(404) => RegistryError::NotFound {
            image: name,
            registry,
        },
        Some(401) => denied("401 Unauthorized"),
        Some(403) => denied("403 Forbidden"),
        Some(code) if code == 429 || code >= 500 => RegistryError::Server {
            image: name,
            registry,
            attempts,
            reason: error.to_string(),
        },
        _ => RegistryError::Other {
            image: name,
            registry,
            reason: error.to_string(),
        },
    }
}

/// A stream over a channel's receiver.
fn tokio_stream_from<T: Send + 'static>(
    mut rx: tokio::sync::mpsc::Receiver<T>,
) -> impl futures_util::Stream<Item = T> + Send + 'static {
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}
