//! How the client sends: one request with its credential, the expected status
//! or a classified failure, retries with back-off and `Retry-After`, and the
//! registry's error envelope read for the message.

use super::*;

impl Registry {
    /// Sends one request with credentials; a 401 with a cached token refreshes it once.
    pub(super) async fn send(
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
        {
            let mut tokens = berth_io::locked(&self.tokens);
            tokens.remove(&key);
        }
        let credential = self.credential(image, operation).await?;
        Ok(authorize(build(&self.http), &credential)
            .send()
            .await
            .map_err(|e| self.transport(image, e))?)
    }

    /// The response if its status is one of `ok`; otherwise what the status means.
    pub(super) async fn expect(
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
    pub(super) async fn retry<T, F, Fut>(
        &self,
        image: &Reference,
        op: F,
    ) -> Result<T, RegistryError>
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

    pub(super) fn transport(&self, image: &Reference, error: reqwest::Error) -> RegistryError {
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
            let seen = berth_io::locked(&self.redirects);
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

    pub(super) fn server(&self, image: &Reference, attempts: u32, reason: String) -> RegistryError {
        RegistryError::Server {
            image: image.to_string(),
            registry: image.domain().to_string(),
            attempts,
            reason,
        }
    }

    pub(super) fn denied(&self, image: &Reference, status: &str) -> RegistryError {
        RegistryError::Denied {
            image: image.to_string(),
            registry: image.domain().to_string(),
            status: Status(status.to_string()),
            login: self.config.login_for(image.domain()),
        }
    }

    pub(super) fn other(&self, image: &Reference, reason: String) -> RegistryError {
        RegistryError::other(image, reason)
    }
}

/// `Retry-After`: seconds, or an HTTP date.
pub(super) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
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

/// The `code` of the first error of an OCI error envelope (`UNAUTHORIZED`).
pub(super) fn envelope_code(body: &[u8]) -> Option<String> {
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

pub(super) fn envelope_message(body: &str) -> Option<String> {
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
    Some(berth_io::redact::peer_text(
        format!("{code} {message}").trim(),
    ))
}

/// `host[:port]` of a URL.
pub(super) fn host_of(url: &reqwest::Url) -> Option<String> {
    let host = url.host_str()?;
    Some(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    })
}
