//! A registry client. berth makes the distribution API requests itself,
//! because it needs their response headers — `Retry-After` to wait as long as
//! the registry asks, `Docker-Content-Digest` — to stream blobs with known
//! sizes, and to bound every answer it reads; oci-client exposes neither
//! headers nor bounds. The token flow is [`crate::token`]; oci-client gives
//! the media types and the credential type. Here: the client and its manifest and
//! blob operations; `auth` authenticates, `transport` sends, retries and classifies.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use berth_ref::{Digest, Reference};
use oci_client::secrets::RegistryAuth;
use oci_client::RegistryOperation;
use reqwest::header::{
    HeaderMap, ACCEPT, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, LOCATION, RETRY_AFTER,
};
use reqwest::{Response, StatusCode};
use sha2::{Digest as _, Sha256};

mod auth;
pub(crate) mod referrers;
pub use referrers::Referrer;
mod signatures;
pub use signatures::{Signature, Signatures, SIGNATURE_ANNOTATION};
mod tags;
pub use tags::tags_all;
mod transport;

use auth::authorize;
use transport::host_of;

use crate::error::Status;
use crate::token::Challenge;
use crate::{credentials, DockerConfig, RegistryError};

pub use crate::manifest::MANIFEST_TYPES;

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

/// The most entries a client's caches (redirects, credentials, tokens) keep. A
/// controller's client lives for weeks and meets every repository its Berths
/// name; past this, a cache starts again (each is only a shortcut: a miss asks
/// again).
const CACHE_ENTRIES: usize = 1024;

/// Inserts into a cache bounded by [`CACHE_ENTRIES`].
fn remember<K: std::hash::Hash + Eq, V>(cache: &mut HashMap<K, V>, key: K, value: V) {
    if cache.len() >= CACHE_ENTRIES && !cache.contains_key(&key) {
        cache.clear();
    }
    cache.insert(key, value);
}

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
    /// Registry hosts that answered the referrers API with 404: they have none
    /// (a registry with it never answers 404), so it is not asked again.
    without_referrers: Mutex<HashSet<String>>,
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
            if let Some(first) = attempt.previous().first() {
                let mut seen = berth_io::locked(&seen);
                remember(&mut seen, first.to_string(), attempt.url().to_string());
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
            without_referrers: Mutex::new(HashSet::new()),
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
        response: Response,
    ) -> Result<Vec<u8>, Attempt> {
        let limit = crate::manifest::MAX_MANIFEST_BYTES;
        let too_big = format!("the registry's answer is larger than {} MiB, so it is not an image manifest; nothing was pinned", limit >> 20);
        self.read_bounded(image, response, limit, &too_big).await
    }

    /// A body read as it arrives and refused, saying `too_big`, once it passes `limit`.
    async fn read_bounded(
        &self,
        image: &Reference,
        mut response: Response,
        limit: usize,
        too_big: &str,
    ) -> Result<Vec<u8>, Attempt> {
        let refuse = || Attempt::Fail(self.other(image, too_big.to_string()));
        if response.content_length().is_some_and(|n| n > limit as u64) {
            return Err(refuse());
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| self.transport(image, e))?
        {
            if bytes.len() + chunk.len() > limit {
                return Err(refuse());
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
        let bytes = (self.get_bounded(image, &format!("blobs/{digest}"), None)).await?;
        let actual = digest_of(&bytes);
        if &actual != digest {
            let said = format!("the registry served blob {digest} with content of digest {actual}");
            return Err(self.other(image, said));
        }
        Ok(bytes)
    }

    /// What `image`'s repository serves at `path` (a small blob, a referrers index),
    /// read with the manifest bound.
    pub(crate) async fn get_bounded(
        &self,
        image: &Reference,
        path: &str,
        accept: Option<&str>,
    ) -> Result<Vec<u8>, RegistryError> {
        let url = self.url(image, path);
        self.retry(image, || async {
            let response = self
                .send(image, RegistryOperation::Pull, |c| match accept {
                    Some(accept) => c.get(&url).header(ACCEPT, accept),
                    None => c.get(&url),
                })
                .await?;
            let response = self.expect(image, response, &[StatusCode::OK]).await?;
            self.read_manifest(image, response).await
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
                // A mount the registry does not know how to answer is declined: the blob is
                // copied instead, whose errors name the blob (G80 of #46).
                StatusCode::NOT_FOUND => Ok(false),
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
            let pulled = (self.expect(source, pulled, &[StatusCode::OK]).await).map_err(|e| {
                not_found_as(e, || {
                    self.other(source, format!("its blob {digest} is not in the source registry (the source image is incomplete), so it cannot be copied to {target}"))
                })
            })?;
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
        let session =
            (self.expect(target, session, &[StatusCode::ACCEPTED]).await).map_err(|e| {
                not_found_as(e, || {
                    self.other(
                        target,
                        format!(
                            "the registry refused to start an upload to `{}` (404 Not Found)",
                            target.path()
                        ),
                    )
                })
            })?;
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

fn digest_of(bytes: &[u8]) -> Digest {
    Digest::from_sha256(&Sha256::digest(bytes).into())
}

fn header_digest(image: &Reference, headers: &HeaderMap) -> Result<Option<Digest>, Attempt> {
    let values: std::collections::BTreeSet<&str> = headers
        .get_all("Docker-Content-Digest")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(str::trim)
        .collect();
    let fail = |reason: String| Attempt::Fail(RegistryError::other(image, reason));
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

/// A 404 of an upload or a blob is no "image not found, push it first" (which is pin's
/// wording for a missing tag): `instead` says what was missing (O13, G80 of #46).
fn not_found_as(attempt: Attempt, instead: impl FnOnce() -> RegistryError) -> Attempt {
    match attempt {
        Attempt::Fail(RegistryError::NotFound { .. }) => Attempt::Fail(instead()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::transport::retry_after;
    use super::*;

    /// #34 item 5: a client that lives for weeks keeps its caches bounded.
    #[test]
    fn caches_stay_bounded() {
        let mut cache = HashMap::new();
        for i in 0..5000 {
            remember(&mut cache, format!("https://r/{i}"), String::new());
            assert!(cache.len() <= CACHE_ENTRIES);
        }
        remember(
            &mut cache,
            "https://r/4999".to_string(),
            "again".to_string(),
        );
        assert_eq!(
            cache["https://r/4999"], "again",
            "a known key is replaced, not a reason to clear"
        );
    }

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
