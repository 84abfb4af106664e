//! A registry client. berth makes the distribution API requests itself,
//! because it needs their response headers — `Retry-After` to wait as long as
//! the registry asks, `Docker-Content-Digest` — to stream blobs with known
//! sizes, and to bound every answer it reads; oci-client exposes neither
//! headers nor bounds. The token flow is [`crate::token`]; oci-client gives
//! the media types and the credential type.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use berth_ref::{Digest, Reference};
use oci_client::manifest::{
    IMAGE_MANIFEST_LIST_MEDIA_TYPE, IMAGE_MANIFEST_MEDIA_TYPE, OCI_IMAGE_INDEX_MEDIA_TYPE,
    OCI_IMAGE_MEDIA_TYPE,
};
use oci_client::secrets::RegistryAuth;
use oci_client::RegistryOperation;
use reqwest::header::{
    HeaderMap, ACCEPT, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, LOCATION, RETRY_AFTER,
};
use reqwest::{Response, StatusCode};
use sha2::{Digest as _, Sha256};

use crate::error::Status;
use crate::token::Challenge;
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

/// The longest `Retry-After` berth honours; a longer one is reported, not waited for.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// How to talk to registries.
#[derive(Debug, Clone)]
pub struct Options {
    /// Hosts (with port) reached over plain HTTP (`--insecure-registry`).
    pub insecure: Vec<String>,
    /// Connect and read timeout per request.
    pub timeout: Duration,
    /// Extra attempts after a 429 or 5xx answer.
    pub retries: u32,
    /// Wait before the first retry when the registry gives no `Retry-After`; doubled each time.
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

/// Request URL → the URL a redirect sent it to.
type Redirects = std::sync::Arc<Mutex<HashMap<String, String>>>;

/// The `Authorization` a repository needs for an operation.
#[derive(Clone)]
enum Credential {
    None,
    Basic(String, String),
    Bearer(String),
}

/// One failed attempt: worth retrying (after the registry's wait, if it gave one), or final.
enum Attempt {
    Retry {
        wait: Option<Duration>,
        error: RegistryError,
    },
    Fail(RegistryError),
}

impl From<RegistryError> for Attempt {
    fn from(error: RegistryError) -> Self {
        Attempt::Fail(error)
    }
}

/// A registry client shared by concurrent operations.
pub struct Registry {
    http: reqwest::Client,
    /// Request URL → where the registry last redirected it.
    redirects: Redirects,
    config: DockerConfig,
    options: Options,
    credentials: Mutex<HashMap<String, RegistryAuth>>,
    tokens: Mutex<HashMap<(String, String, bool), Credential>>,
    /// Per registry host, what its `/v2/` asks for.
    challenges: Mutex<HashMap<String, Challenge>>,
}

impl Registry {
    /// A client with these options and Docker credentials; an error when the
    /// TLS backend cannot be set up (never a client without its timeouts).
    pub fn new(options: Options, config: DockerConfig) -> Result<Registry, RegistryError> {
        let redirects: Redirects = std::sync::Arc::new(Mutex::new(HashMap::new()));
        let seen = std::sync::Arc::clone(&redirects);
        let policy = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() > 10 {
                return attempt.error("more than 10 redirects");
            }
            if !matches!(attempt.url().scheme(), "http" | "https") {
                let target = berth_io::shown(attempt.url().as_str());
                return attempt.error(format!(
                    "it redirected to `{target}`, which is not an http(s) URL, so berth does not follow it"
                ));
            }
            // Where each request was sent on to, for a failure there to say so.
            if let (Some(first), Ok(mut seen)) = (attempt.previous().first(), seen.lock()) {
                seen.insert(first.to_string(), attempt.url().to_string());
            }
            attempt.follow()
        });
        let http = reqwest::Client::builder()
            .redirect(policy)
            .connect_timeout(options.timeout)
            .read_timeout(options.timeout)
            .user_agent(concat!("berth/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| RegistryError::Client {
                reason: e.to_string(),
                source: std::sync::Arc::new(e),
            })?;
        Ok(Registry {
            http,
            redirects,
            config,
            options,
            credentials: Mutex::new(HashMap::new()),
            tokens: Mutex::new(HashMap::new()),
            challenges: Mutex::new(HashMap::new()),
        })
    }

    /// The digest of the manifest (or index) `image` names: one HEAD request.
    pub async fn manifest_digest(&self, image: &Reference) -> Result<Digest, RegistryError> {
        let url = self.manifest_url(image);
        let accept = MANIFEST_TYPES.join(", ");
        let from_header = self
            .retry(image, || async {
                let response = self
                    .send(image, RegistryOperation::Pull, |c| {
                        c.head(&url).header(ACCEPT, &accept)
                    })
                    .await?;
                let response = self.expect(image, response, &[StatusCode::OK]).await?;
                header_digest(image, response.headers())
            })
            .await?;
        match from_header {
            Some(digest) => Ok(digest),
            // A registry may omit the header on HEAD; the content's hash is the digest.
            None => self.manifest(image).await.map(|(_, digest)| digest),
        }
    }

    /// The manifest (or index) `image` names, as bytes, with its digest.
    pub async fn manifest(&self, image: &Reference) -> Result<(Vec<u8>, Digest), RegistryError> {
        let url = self.manifest_url(image);
        let accept = MANIFEST_TYPES.join(", ");
        self.retry(image, || async {
            let response = self
                .send(image, RegistryOperation::Pull, |c| {
                    c.get(&url).header(ACCEPT, &accept)
                })
                .await?;
            let response = self.expect(image, response, &[StatusCode::OK]).await?;
            let content_type = response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let bytes = self.read_manifest(image, response).await?;
            if let Some(problem) = crate::manifest::problem(content_type.as_deref(), &bytes) {
                return Err(Attempt::Fail(self.other(
                    image,
                    format!("the registry answered with {problem} instead of an image manifest; nothing was pinned (a login page or a proxy in front of the registry answers like this)"),
                )));
            }
            let digest = digest_of(&bytes);
            if let Some(wanted) = image.digest() {
                if wanted != &digest {
                    return Err(Attempt::Fail(self.other(
                        image,
                        format!("the registry served content with digest {digest}, not {wanted}"),
                    )));
                }
            }
            Ok((bytes, digest))
        })
        .await
    }

    /// A manifest body, read as it arrives and refused once it passes
    /// [`crate::manifest::MAX_MANIFEST_BYTES`] (a manifest is small; a body that is not
    /// must not fill memory).
    async fn read_manifest(
        &self,
        image: &Reference,
        mut response: Response,
    ) -> Result<Vec<u8>, Attempt> {
        let limit = crate::manifest::MAX_MANIFEST_BYTES;
        let too_big = || {
            Attempt::Fail(self.other(
                image,
                format!("the registry's answer is larger than {} MiB, so it is not an image manifest; nothing was pinned", limit >> 20),
            ))
        };
        if response.content_length().is_some_and(|n| n > limit as u64) {
            return Err(too_big());
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| self.transport(image, e))?
        {
            if bytes.len() + chunk.len() > limit {
                return Err(too_big());
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    }

    /// A small blob of `image`'s repository (an image config), read with the
    /// manifest bound and checked against its digest.
    pub(crate) async fn small_blob(
        &self,
        image: &Reference,
        digest: &Digest,
    ) -> Result<Vec<u8>, RegistryError> {
        let url = self.url(image, &format!("blobs/{digest}"));
        self.retry(image, || async {
            let response = self
                .send(image, RegistryOperation::Pull, |c| c.get(&url))
                .await?;
            let response = self.expect(image, response, &[StatusCode::OK]).await?;
            let bytes = self.read_manifest(image, response).await?;
            let actual = digest_of(&bytes);
            if &actual != digest {
                return Err(Attempt::Fail(self.other(
                    image,
                    format!("the registry served blob {digest} with content of digest {actual}"),
                )));
            }
            Ok(bytes)
        })
        .await
    }

    /// Whether `target`'s repository already has the blob.
    pub(crate) async fn blob_exists(
        &self,
        target: &Reference,
        digest: &str,
    ) -> Result<bool, RegistryError> {
        let url = self.url(target, &format!("blobs/{digest}"));
        self.retry(target, || async {
            let response = self
                .send(target, RegistryOperation::Pull, |c| c.head(&url))
                .await?;
            match response.status() {
                StatusCode::NOT_FOUND => Ok(false),
                _ => self
                    .expect(target, response, &[StatusCode::OK])
                    .await
                    .map(|_| true),
            }
        })
        .await
    }

    /// Asks the registry to mount a blob from `source`'s repository into
    /// `target`'s (same registry); `false` when it declined.
    pub(crate) async fn mount(
        &self,
        target: &Reference,
        source: &Reference,
        digest: &str,
    ) -> Result<bool, RegistryError> {
        let url = self.url(target, "blobs/uploads/");
        let query = [("mount", digest), ("from", source.path())];
        self.retry(target, || async {
            let response = self
                .send(target, RegistryOperation::Push, |c| {
                    c.post(&url).query(&query).header(CONTENT_LENGTH, 0)
                })
                .await?;
            match response.status() {
                StatusCode::CREATED => Ok(true),
                // 202: the registry opened an upload session instead; the normal upload follows.
                StatusCode::ACCEPTED => Ok(false),
                _ => self.expect(target, response, &[]).await.map(|_| false),
            }
        })
        .await
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
        let from = self.url(source, &format!("blobs/{digest}"));
        let start = self.url(target, "blobs/uploads/");
        self.retry(target, || async {
            let pulled = self
                .send(source, RegistryOperation::Pull, |c| c.get(&from))
                .await?;
            let pulled = self.expect(source, pulled, &[StatusCode::OK]).await?;
            let put_url = self.open_upload(target, &start, digest).await?;
            // The body streams straight from the source; it cannot be replayed, so a
            // retry starts the whole copy again.
            let (tx, rx) = tokio::sync::mpsc::channel::<Result<bytes::Bytes, std::io::Error>>(8);
            let mut body_stream = pulled.bytes_stream();
            let forward = async move {
                while let Some(chunk) = body_stream.next().await {
                    let item = chunk.map_err(std::io::Error::other);
                    if let Ok(bytes) = &item {
                        on_bytes(bytes.len() as u64);
                    }
                    if tx.send(item).await.is_err() {
                        break;
                    }
                }
            };
            let body = reqwest::Body::wrap_stream(futures_util::stream::poll_fn({
                let mut rx = rx;
                move |cx| rx.poll_recv(cx)
            }));
            let credential = self.credential(target, RegistryOperation::Push).await?;
            let request = authorize(self.http.put(&put_url), &credential)
                .header(CONTENT_TYPE, "application/octet-stream")
                .header(CONTENT_LENGTH, size)
                .body(body);
            let (_, sent) = tokio::join!(forward, request.send());
            let sent = sent.map_err(|e| self.transport(target, e))?;
            self.expect(target, sent, &[StatusCode::CREATED])
                .await
                .map(|_| ())
        })
        .await
    }

    /// Opens an upload session for `digest` on `target`'s repository (`start` is its
    /// `blobs/uploads/` URL); the URL to PUT the blob to.
    async fn open_upload(
        &self,
        target: &Reference,
        start: &str,
        digest: &str,
    ) -> Result<String, Attempt> {
        let session = self
            .send(target, RegistryOperation::Push, |c| {
                c.post(start).header(CONTENT_LENGTH, 0)
            })
            .await?;
        let session = self
            .expect(target, session, &[StatusCode::ACCEPTED])
            .await?;
        let location = session
            .headers()
            .get(LOCATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| {
                self.other(
                    target,
                    "the registry opened an upload without a Location".into(),
                )
            })?;
        Ok(upload_url(start, location, digest))
    }

    /// Uploads a blob held in memory (one POST for the session, one PUT with the
    /// bytes), unless the registry has it already.
    pub(crate) async fn push_blob(
        &self,
        target: &Reference,
        bytes: &[u8],
        digest: &str,
    ) -> Result<(), RegistryError> {
        if self.blob_exists(target, digest).await? {
            return Ok(());
        }
        let start = self.url(target, "blobs/uploads/");
        let body = bytes::Bytes::copy_from_slice(bytes);
        self.retry(target, || async {
            let put_url = self.open_upload(target, &start, digest).await?;
            let sent = self
                .send(target, RegistryOperation::Push, |c| {
                    c.put(&put_url)
                        .header(CONTENT_TYPE, "application/octet-stream")
                        .header(CONTENT_LENGTH, body.len())
                        .body(body.clone())
                })
                .await?;
            self.expect(target, sent, &[StatusCode::CREATED])
                .await
                .map(|_| ())
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
        let url = self.manifest_url(target);
        let body = bytes::Bytes::copy_from_slice(bytes);
        self.retry(target, || async {
            let response = self
                .send(target, RegistryOperation::Push, |c| {
                    c.put(&url)
                        .header(CONTENT_TYPE, media_type)
                        .body(body.clone())
                })
                .await?;
            self.expect(target, response, &[StatusCode::CREATED, StatusCode::OK])
                .await
                .map(|_| ())
        })
        .await
    }

    /// `scheme://host/v2/<path>/<rest>`; Docker Hub's API host as oci-client resolves it.
    fn url(&self, image: &Reference, rest: &str) -> String {
        let host = api_host(image.domain());
        let scheme = if self
            .options
            .insecure
            .iter()
            .any(|h| h == image.domain() || h == host)
        {
            "http"
        } else {
            "https"
        };
        format!("{scheme}://{host}/v2/{}/{rest}", image.path())
    }

    /// The manifest endpoint of `image`: by digest when it has one, else by tag.
    fn manifest_url(&self, image: &Reference) -> String {
        self.url(image, &format!("manifests/{}", manifest_ref(image)))
    }

    /// Credentials from the Docker config, cached per registry.
    fn registry_auth(&self, registry: &str) -> Result<RegistryAuth, RegistryError> {
        if let Some(auth) = self
            .credentials
            .lock()
            .ok()
            .and_then(|c| c.get(registry).cloned())
        {
            return Ok(auth);
        }
        let auth = credentials(&self.config, registry, self.options.timeout)?;
        if let Ok(mut cache) = self.credentials.lock() {
            cache.insert(registry.to_string(), auth.clone());
        }
        Ok(auth)
    }

    /// What to send as `Authorization` for `operation` on `image`'s repository
    /// (oci-client runs the token flow; tokens are cached per repository).
    async fn credential(
        &self,
        image: &Reference,
        operation: RegistryOperation,
    ) -> Result<Credential, RegistryError> {
        let key = (
            image.domain().to_string(),
            image.path().to_string(),
            matches!(operation, RegistryOperation::Push),
        );
        if let Some(found) = self.tokens.lock().ok().and_then(|t| t.get(&key).cloned()) {
            return Ok(found);
        }
        let auth = self.registry_auth(image.domain())?;
        let credential = match (self.challenge(image).await?, auth) {
            // An identity token from a helper (`<token>` as user name).
            (_, RegistryAuth::Bearer(token)) => Credential::Bearer(token),
            (Challenge::Bearer { realm, service }, auth) => Credential::Bearer(
                self.token(image, operation, &realm, service.as_deref(), &auth)
                    .await?,
            ),
            (_, RegistryAuth::Basic(user, password)) => Credential::Basic(user, password),
            (_, RegistryAuth::Anonymous) => Credential::None,
        };
        if let Ok(mut tokens) = self.tokens.lock() {
            tokens.insert(key, credential.clone());
        }
        Ok(credential)
    }

    /// What `image`'s registry asks for (`GET /v2/` without credentials), once per host.
    async fn challenge(&self, image: &Reference) -> Result<Challenge, RegistryError> {
        let host = image.domain().to_string();
        if let Some(found) = self
            .challenges
            .lock()
            .ok()
            .and_then(|c| c.get(&host).cloned())
        {
            return Ok(found);
        }
        let url = self.url(image, "");
        let base = &url[..url.find("/v2/").map_or(url.len(), |i| i + 4)];
        let response = self
            .http
            .get(base)
            .send()
            .await
            .map_err(|e| self.transport(image, e))?;
        let status = response.status();
        let challenge = crate::token::challenge_of(&response).ok_or_else(|| {
            self.denied(image, &format!("{status} with no challenge berth can answer (it asks for neither Basic nor Bearer authentication)"))
        })?;
        if let Ok(mut cache) = self.challenges.lock() {
            cache.insert(host, challenge.clone());
        }
        Ok(challenge)
    }

    /// A token from the token server `realm` for `operation` on `image`'s repository.
    async fn token(
        &self,
        image: &Reference,
        operation: RegistryOperation,
        realm: &str,
        service: Option<&str>,
        auth: &RegistryAuth,
    ) -> Result<String, RegistryError> {
        let mut url = reqwest::Url::parse(realm)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| {
                self.other(
                    image,
                    format!(
                        "the registry names `{}` as its token server, which is not an http(s) URL",
                        berth_io::shown(realm)
                    ),
                )
            })?;
        let server = host_of(&url).unwrap_or_default();
        let actions = match operation {
            RegistryOperation::Push => "pull,push",
            RegistryOperation::Pull => "pull",
        };
        {
            let mut query = url.query_pairs_mut();
            if let Some(service) = service {
                query.append_pair("service", service);
            }
            query.append_pair("scope", &format!("repository:{}:{actions}", image.path()));
        }
        let mut request = self.http.get(url);
        if let RegistryAuth::Basic(user, password) = auth {
            request = request.basic_auth(user, Some(password));
        }
        let response = request.send().await.map_err(|e| {
            if e.is_timeout() {
                return self.transport(image, e);
            }
            let mut cause = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(inner) = source {
                cause = inner.to_string();
                source = inner.source();
            }
            self.other(
                image,
                format!("the registry's token server `{server}` (the realm its WWW-Authenticate names) cannot be reached: {cause}"),
            )
        })?;
        let status = response.status();
        // Only the status: a failing token server may echo the request's credentials.
        match status.as_u16() {
            200 => {}
            401 | 403 => {
                return Err(self.denied(
                    image,
                    &format!("its token server `{server}` answered {status}"),
                ))
            }
            _ => {
                return Err(self.other(
                    image,
                    format!("its token server `{server}` answered {status} (what it said is not shown: it may repeat the credentials)"),
                ))
            }
        }
        let body = read_bounded(response, berth_io::limits::TOKEN_BODY)
            .await
            .map_err(|e| self.transport(image, e))?
            .ok_or_else(|| {
                self.other(
                    image,
                    format!(
                        "its token server `{server}` answered more than {}, which is no token",
                        berth_io::limits::size(berth_io::limits::TOKEN_BODY)
                    ),
                )
            })?;
        crate::token::token_of(&body).map_err(|why| {
            self.other(
                image,
                format!("its token server `{server}` gave no token: {why}"),
            )
        })
    }

    /// Sends one request with credentials; a 401 with a cached token refreshes it once.
    async fn send(
        &self,
        image: &Reference,
        operation: RegistryOperation,
        build: impl Fn(&reqwest::Client) -> reqwest::RequestBuilder,
    ) -> Result<Response, Attempt> {
        let credential = self.credential(image, operation).await?;
        let response = authorize(build(&self.http), &credential)
            .send()
            .await
            .map_err(|e| self.transport(image, e))?;
        if response.status() != StatusCode::UNAUTHORIZED || matches!(credential, Credential::None) {
            return Ok(response);
        }
        // An expired token: forget it, authenticate again, try once more.
        let key = (
            image.domain().to_string(),
            image.path().to_string(),
            matches!(operation, RegistryOperation::Push),
        );
        if let Ok(mut tokens) = self.tokens.lock() {
            tokens.remove(&key);
        }
        let credential = self.credential(image, operation).await?;
        Ok(authorize(build(&self.http), &credential)
            .send()
            .await
            .map_err(|e| self.transport(image, e))?)
    }

    /// The response if its status is one of `ok`; otherwise what the status means.
    async fn expect(
        &self,
        image: &Reference,
        response: Response,
        ok: &[StatusCode],
    ) -> Result<Response, Attempt> {
        let status = response.status();
        if ok.contains(&status) {
            return Ok(response);
        }
        if status.is_redirection() {
            // Redirects berth follows were followed; this one leads where it does not go.
            let location = response
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(berth_io::shown);
            let reason = match location {
                Some(location) => format!("{status}: it redirected to `{location}`, which is not an http(s) URL, so berth does not follow it"),
                None => format!("{status} without a Location header, so there is nowhere to follow"),
            };
            return Err(Attempt::Fail(self.other(image, reason)));
        }
        let wait = retry_after(response.headers());
        // An error envelope is small; a bigger answer is not read, only its status shown.
        let body = read_bounded(response, berth_io::limits::ERROR_BODY)
            .await
            .ok()
            .flatten()
            .unwrap_or_default();
        let envelope = match status.as_u16() {
            // What a refusal says may repeat the credentials sent: only its code.
            401 | 403 => envelope_code(&body),
            _ => envelope_message(&String::from_utf8_lossy(&body)),
        };
        let reason = format!(
            "{status}{}",
            envelope.map(|m| format!(": {m}")).unwrap_or_default()
        );
        Err(match status.as_u16() {
            404 => Attempt::Fail(RegistryError::NotFound {
                image: image.to_string(),
                registry: image.domain().to_string(),
            }),
            401 | 403 => Attempt::Fail(self.denied(image, &reason)),
            429 | 500..=599 => Attempt::Retry {
                wait,
                error: self.server(image, 1, reason),
            },
            _ => Attempt::Fail(self.other(image, reason)),
        })
    }

    /// Runs `op`, retrying 429 and 5xx: after `Retry-After` when the registry
    /// gives one (up to [`MAX_RETRY_AFTER`]), else with exponential backoff.
    async fn retry<T, F, Fut>(&self, image: &Reference, op: F) -> Result<T, RegistryError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<T, Attempt>>,
    {
        let mut backoff = self.options.backoff;
        let mut attempt = 1;
        loop {
            match op().await {
                Ok(value) => return Ok(value),
                Err(Attempt::Fail(error)) => return Err(error),
                Err(Attempt::Retry { wait, error }) => {
                    let reason = match &error {
                        RegistryError::Server { reason, .. } => reason.clone(),
                        other => other.to_string(),
                    };
                    if attempt > self.options.retries {
                        return Err(self.server(image, attempt, reason));
                    }
                    let wait = match wait {
                        Some(wait) if wait > MAX_RETRY_AFTER => {
                            return Err(self.server(
                                image,
                                attempt,
                                format!(
                                    "{reason}; it asks to retry after {} s, more than berth waits",
                                    wait.as_secs()
                                ),
                            ))
                        }
                        Some(wait) => wait,
                        None => backoff,
                    };
                    tokio::time::sleep(wait).await;
                    backoff *= 2;
                    attempt += 1;
                }
            }
        }
    }

    fn transport(&self, image: &Reference, error: reqwest::Error) -> RegistryError {
        let registry = image.domain().to_string();
        if error.is_timeout() {
            return RegistryError::Timeout {
                image: image.to_string(),
                registry,
                seconds: self.options.timeout.as_secs(),
                source: Some(std::sync::Arc::new(error)),
            };
        }
        // The innermost cause says it best (connection refused, TLS record errors).
        let mut reason = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(inner) = source {
            reason = inner.to_string();
            source = inner.source();
        }
        // A redirect elsewhere (a blob store, a mirror) that failed: say where it led.
        let redirected = error.url().and_then(|url| {
            let seen = self.redirects.lock().ok()?;
            seen.get(url.as_str()).cloned()
        });
        if let Some(target) = redirected.filter(|_| !reason.contains("redirected to")) {
            let host = reqwest::Url::parse(&target)
                .ok()
                .and_then(|u| host_of(&u))
                .unwrap_or(target);
            reason = format!(
                "{reason} (at `{}`, where the registry redirected)",
                berth_io::shown(&host)
            );
        }
        let unreachable = error.is_connect() || error.is_request();
        let source = Some(std::sync::Arc::new(error));
        if unreachable {
            RegistryError::Unreachable {
                image: image.to_string(),
                registry,
                reason,
                source,
            }
        } else {
            RegistryError::Other {
                image: image.to_string(),
                registry,
                reason,
                source,
            }
        }
    }

    fn server(&self, image: &Reference, attempts: u32, reason: String) -> RegistryError {
        RegistryError::Server {
            image: image.to_string(),
            registry: image.domain().to_string(),
            attempts,
            reason,
        }
    }

    fn denied(&self, image: &Reference, status: &str) -> RegistryError {
        RegistryError::Denied {
            image: image.to_string(),
            registry: image.domain().to_string(),
            status: Status(status.to_string()),
            login: self.config.login_for(image.domain()),
        }
    }

    fn other(&self, image: &Reference, reason: String) -> RegistryError {
        RegistryError::Other {
            image: image.to_string(),
            registry: image.domain().to_string(),
            reason,
            source: None,
        }
    }
}

fn authorize(request: reqwest::RequestBuilder, credential: &Credential) -> reqwest::RequestBuilder {
    match credential {
        Credential::None => request,
        Credential::Basic(user, password) => request.basic_auth(user, Some(password)),
        Credential::Bearer(token) => request.header(AUTHORIZATION, format!("Bearer {token}")),
    }
}

/// The API host of a registry (Docker Hub's is not `docker.io`).
fn api_host(domain: &str) -> &str {
    if domain == "docker.io" {
        "index.docker.io"
    } else {
        domain
    }
}

/// The digest when there is one, else the tag, else `latest`.
fn manifest_ref(image: &Reference) -> String {
    match (image.digest(), image.tag()) {
        (Some(digest), _) => digest.to_string(),
        (None, Some(tag)) => tag.to_string(),
        (None, None) => "latest".into(),
    }
}

/// `host[:port]` of a URL.
fn host_of(url: &reqwest::Url) -> Option<String> {
    let host = url.host_str()?;
    Some(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    })
}

fn digest_of(bytes: &[u8]) -> Digest {
    let hex: String = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    // A SHA-256 hex string is always a valid sha256 digest.
    Digest::parse(&format!("sha256:{hex}"))
        .unwrap_or_else(|_| unreachable!("sha256 hex is a valid digest"))
}

fn header_digest(image: &Reference, headers: &HeaderMap) -> Result<Option<Digest>, Attempt> {
    let values: std::collections::BTreeSet<&str> = headers
        .get_all("Docker-Content-Digest")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(str::trim)
        .collect();
    let fail = |reason: String| {
        Attempt::Fail(RegistryError::Other {
            image: image.to_string(),
            registry: image.domain().to_string(),
            reason,
            source: None,
        })
    };
    let value = match values.len() {
        0 => return Ok(None),
        1 => values.iter().next().copied().unwrap_or_default(),
        _ => {
            let shown: Vec<String> = values.iter().map(|v| berth_io::shown(v)).collect();
            return Err(fail(format!(
                "the registry answered with {} different Docker-Content-Digest headers ({}), so nothing was pinned; a proxy in front of the registry may be adding one",
                values.len(),
                shown.join(", ")
            )));
        }
    };
    Digest::parse(value).map(Some).map_err(|e| {
        fail(format!(
            "the registry answered with an unusable digest `{}`: {e}",
            berth_io::shown(value)
        ))
    })
}

/// `Retry-After`: seconds, or an HTTP date.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// The first message of an OCI error envelope, if the body is one.
/// At most `limit` bytes of `response`'s body, read as they arrive; `None` when
/// there are more.
async fn read_bounded(
    mut response: Response,
    limit: u64,
) -> Result<Option<Vec<u8>>, reqwest::Error> {
    if response.content_length().is_some_and(|n| n > limit) {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if (bytes.len() + chunk.len()) as u64 > limit {
            return Ok(None);
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Some(bytes))
}

/// The `code` of the first error of an OCI error envelope (`UNAUTHORIZED`).
fn envelope_code(body: &[u8]) -> Option<String> {
    let json: serde_json::Value = serde_json::from_slice(body).ok()?;
    let code = json
        .get("errors")?
        .as_array()?
        .first()?
        .get("code")?
        .as_str()?;
    code.bytes()
        .all(|b| b.is_ascii_uppercase() || b == b'_')
        .then(|| code.to_string())
}

fn envelope_message(body: &str) -> Option<String> {
    let json: serde_json::Value = serde_json::from_str(body).ok()?;
    let first = json.get("errors")?.as_array()?.first()?;
    let code = first
        .get("code")
        .and_then(|c| c.as_str())
        .unwrap_or_default();
    let message = first
        .get("message")
        .and_then(|m| m.as_str())
        .unwrap_or_default();
    Some(berth_core::redact::peer_text(
        format!("{code} {message}").trim(),
    ))
}

/// The upload URL from a `Location` (absolute or relative), with the digest added.
fn upload_url(start: &str, location: &str, digest: &str) -> String {
    let absolute = if location.starts_with("http://") || location.starts_with("https://") {
        location.to_string()
    } else {
        let origin_end = start.find("/v2/").unwrap_or(start.len());
        format!("{}{location}", &start[..origin_end])
    };
    let separator = if absolute.contains('?') { '&' } else { '?' };
    format!("{absolute}{separator}digest={digest}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_seconds_and_dates() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, "7".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(7)));
        let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(120));
        headers.insert(RETRY_AFTER, later.parse().unwrap());
        let wait = retry_after(&headers).unwrap();
        assert!(
            wait > Duration::from_secs(100) && wait <= Duration::from_secs(120),
            "{wait:?}"
        );
        headers.insert(RETRY_AFTER, "soon".parse().unwrap());
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn upload_urls() {
        let start = "http://127.0.0.1:5000/v2/a/b/blobs/uploads/";
        assert_eq!(
            upload_url(start, "/v2/a/b/blobs/uploads/u1?_state=x", "sha256:1"),
            "http://127.0.0.1:5000/v2/a/b/blobs/uploads/u1?_state=x&digest=sha256:1"
        );
        assert_eq!(
            upload_url(start, "https://cdn/up/u2", "sha256:2"),
            "https://cdn/up/u2?digest=sha256:2"
        );
    }
}
