//! How the client authenticates: credentials from the Docker or containers config
//! for a registry, the registry's challenge, and the bearer token its token server
//! hands out (the flow itself is [`crate::token`]).

use super::*;

impl Registry {
    /// Credentials from the Docker config, cached per registry.
    pub(super) fn registry_auth(&self, registry: &str) -> Result<RegistryAuth, RegistryError> {
        let cached = berth_io::locked(&self.credentials).get(registry).cloned();
        if let Some(auth) = cached {
            return Ok(auth);
        }
        let auth = credentials(&self.config, registry, self.options.timeout)?;
        {
            let mut cache = berth_io::locked(&self.credentials);
            remember(&mut cache, registry.to_string(), auth.clone());
        }
        Ok(auth)
    }

    /// What to send as `Authorization` for `operation` on `image`'s repository
    /// (oci-client runs the token flow; tokens are cached per repository).
    pub(super) async fn credential(
        &self,
        image: &Reference,
        operation: RegistryOperation,
    ) -> Result<Credential, RegistryError> {
        let key = (
            image.domain().to_string(),
            image.path().to_string(),
            matches!(operation, RegistryOperation::Push),
        );
        let cached = berth_io::locked(&self.tokens).get(&key).cloned();
        if let Some(found) = cached {
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
        {
            let mut tokens = berth_io::locked(&self.tokens);
            remember(&mut tokens, key, credential.clone());
        }
        Ok(credential)
    }

    /// What `image`'s registry asks for (`GET /v2/` without credentials), once per host.
    pub(super) async fn challenge(&self, image: &Reference) -> Result<Challenge, RegistryError> {
        let host = image.domain().to_string();
        let cached = berth_io::locked(&self.challenges).get(&host).cloned();
        if let Some(found) = cached {
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
        {
            let mut cache = berth_io::locked(&self.challenges);
            cache.insert(host, challenge.clone());
        }
        Ok(challenge)
    }

    /// A token from the token server `realm` for `operation` on `image`'s repository.
    pub(super) async fn token(
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
}

pub(super) fn authorize(
    request: reqwest::RequestBuilder,
    credential: &Credential,
) -> reqwest::RequestBuilder {
    match credential {
        Credential::None => request,
        Credential::Basic(user, password) => request.basic_auth(user, Some(password)),
        Credential::Bearer(token) => request.header(AUTHORIZATION, format!("Bearer {token}")),
    }
}
