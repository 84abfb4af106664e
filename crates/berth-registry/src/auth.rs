//! Registry credentials as podman, skopeo and docker find them: the
//! containers-auth.json files first (`REGISTRY_AUTH_FILE`, else
//! `$XDG_RUNTIME_DIR/containers/auth.json`; then
//! `$XDG_CONFIG_HOME/containers/auth.json`, by default
//! `~/.config/containers/auth.json`), then Docker's config
//! (`$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`). In each file,
//! `credHelpers` for the registry, then `auths`; the first file with a login
//! for the registry wins; then a `credsStore`; else anonymous (the registry's
//! bearer-token flow then applies). `podman login` writes the first kind,
//! `docker login` the last.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use base64::Engine as _;
use oci_client::secrets::RegistryAuth;
use serde_json::Value;

use crate::RegistryError;

/// The credentials files, in the order they are read.
#[derive(Debug, Clone, Default)]
pub struct DockerConfig {
    files: Vec<AuthFile>,
}

/// One credentials file: containers-auth.json or Docker's config.json (the
/// same `auths` / `credHelpers` / `credsStore` keys).
#[derive(Debug, Clone, Default)]
struct AuthFile {
    path: Option<PathBuf>,
    json: Value,
}

/// Where berth looks, as a message names it.
const LOOKED_IN: &str = "REGISTRY_AUTH_FILE or $XDG_RUNTIME_DIR/containers/auth.json, ~/.config/containers/auth.json, then the Docker config";

impl DockerConfig {
    /// Reads every file podman and docker would read, in their order; a missing
    /// file is skipped.
    pub fn load() -> Result<DockerConfig, RegistryError> {
        let var = |name: &str| {
            berth_io::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let home = var("HOME");
        let mut paths: Vec<PathBuf> = Vec::new();
        match var("REGISTRY_AUTH_FILE") {
            Some(file) => paths.push(file),
            None => paths.extend(var("XDG_RUNTIME_DIR").map(|d| d.join("containers/auth.json"))),
        }
        paths.extend(
            var("XDG_CONFIG_HOME")
                .or_else(|| home.as_ref().map(|h| h.join(".config")))
                .map(|d| d.join("containers/auth.json")),
        );
        paths.extend(
            var("DOCKER_CONFIG")
                .or_else(|| home.as_ref().map(|h| h.join(".docker")))
                .map(|d| d.join("config.json")),
        );
        let mut files = Vec::new();
        for path in paths {
            files.extend(DockerConfig::from_file(&path)?.files);
        }
        Ok(DockerConfig { files })
    }

    /// Reads one credentials file; a missing file is an empty config.
    pub fn from_file(path: &Path) -> Result<DockerConfig, RegistryError> {
        // Bounded, and a regular file only: `DOCKER_CONFIG=/dev/zero` must not fill memory.
        let text = match berth_io::read_file(path, false) {
            Ok(bytes) => String::from_utf8(bytes).map_err(|_| RegistryError::DockerConfig {
                path: path.display().to_string(),
                reason: "it is not UTF-8 text".into(),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(DockerConfig::default())
            }
            Err(e) => {
                return Err(RegistryError::DockerConfig {
                    path: path.display().to_string(),
                    reason: e.to_string(),
                })
            }
        };
        DockerConfig::parse(&text, path)
    }

    /// A config from its text (`path` names it in messages); the fuzz target's entry.
    pub fn parse(text: &str, path: &Path) -> Result<DockerConfig, RegistryError> {
        let json: Value = serde_json::from_str(text).map_err(|e| RegistryError::DockerConfig {
            path: path.display().to_string(),
            // Where, never what: the file holds credentials.
            reason: format!("not valid JSON (line {}, column {})", e.line(), e.column()),
        })?;
        if !json.is_object() {
            return Err(RegistryError::DockerConfig {
                path: path.display().to_string(),
                reason: "not a JSON object (the Docker config is `{\"auths\": {…}}`)".into(),
            });
        }
        Ok(DockerConfig {
            files: vec![AuthFile {
                path: Some(path.to_path_buf()),
                json,
            }],
        })
    }

    /// What a refusal by `registry` should say about the login berth used: the
    /// file the credentials came from, or where it looked and found none.
    pub fn login_for(&self, registry: &str) -> String {
        let keys = config_keys(registry);
        let found = self.files.iter().find(|f| {
            ["credHelpers", "auths"].iter().any(|section| {
                f.json
                    .get(*section)
                    .and_then(Value::as_object)
                    .is_some_and(|m| m.keys().any(|k| keys.contains(k) || host_of(k) == registry))
            })
        });
        match found.and_then(|f| f.path.as_ref()) {
            Some(path) => format!(
                "the credentials for `{registry}` came from {}: check them, or log in again (`podman login {registry}` or `docker login {registry}`)",
                path.display()
            ),
            None if self.files.iter().any(|f| f.json.get("credsStore").is_some()) => format!(
                "berth asked the Docker config's credsStore for `{registry}`: log in again (`docker login {registry}` or `podman login {registry}`)"
            ),
            None => format!(
                "no login for `{registry}` was found ({LOOKED_IN}); log in with `podman login {registry}` or `docker login {registry}`"
            ),
        }
    }
}

/// The key Docker uses for a registry host (Docker Hub has a legacy URL).
fn config_keys(registry: &str) -> Vec<String> {
    if registry == "docker.io"
        || registry == "index.docker.io"
        || registry == "registry-1.docker.io"
    {
        vec![
            "https://index.docker.io/v1/".into(),
            "index.docker.io".into(),
            "docker.io".into(),
        ]
    } else {
        vec![
            registry.to_string(),
            format!("https://{registry}"),
            format!("http://{registry}"),
        ]
    }
}

/// Strips a scheme and path, so `https://host/v1/` matches `host`.
fn host_of(key: &str) -> &str {
    let rest = key.split_once("://").map_or(key, |(_, r)| r);
    rest.split('/').next().unwrap_or(rest)
}

/// Credentials for `registry` (a host, with port if any); a credential helper
/// may take at most `timeout` (and [`berth_io::limits::HELPER_TIMEOUT`]).
pub fn credentials(
    config: &DockerConfig,
    registry: &str,
    timeout: Duration,
) -> Result<RegistryAuth, RegistryError> {
    let keys = config_keys(registry);
    for file in &config.files {
        if let Some(auth) = file_credentials(file, registry, &keys, timeout)? {
            return Ok(auth);
        }
    }
    for file in &config.files {
        if let Some(store) = file.json.get("credsStore").and_then(Value::as_str) {
            return helper_get(store, registry, &keys[0], timeout);
        }
    }
    Ok(RegistryAuth::Anonymous)
}

/// `file`'s login for `registry`: its credential helper, else its `auths` entry.
fn file_credentials(
    file: &AuthFile,
    registry: &str,
    keys: &[String],
    timeout: Duration,
) -> Result<Option<RegistryAuth>, RegistryError> {
    if let Some(helpers) = file.json.get("credHelpers").and_then(Value::as_object) {
        if let Some(helper) = helpers
            .iter()
            .find(|(k, _)| keys.contains(k) || host_of(k) == registry)
            .and_then(|(_, v)| v.as_str())
        {
            match helper_get(helper, registry, &keys[0], timeout)? {
                RegistryAuth::Anonymous => {}
                auth => return Ok(Some(auth)),
            }
        }
    }
    if let Some(auths) = file.json.get("auths").and_then(Value::as_object) {
        let entry = auths
            .iter()
            .find(|(k, _)| keys.contains(k) || host_of(k) == registry)
            .map(|(_, v)| v);
        if let Some(auth) = entry.and_then(|e| basic_from_entry(file, e)).transpose()? {
            return Ok(Some(auth));
        }
    }
    Ok(None)
}

fn basic_from_entry(
    config: &AuthFile,
    entry: &Value,
) -> Option<Result<RegistryAuth, RegistryError>> {
    if let Some(auth) = entry
        .get("auth")
        .and_then(Value::as_str)
        .filter(|a| !a.is_empty())
    {
        let invalid = || RegistryError::DockerConfig {
            path: config
                .path
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            reason: "an `auth` entry is not base64 of `user:password`".into(),
        };
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(auth)
            .map_err(|_| invalid());
        return Some(decoded.and_then(|bytes| {
            let text = String::from_utf8(bytes).map_err(|_| invalid())?;
            let (user, password) = text.split_once(':').ok_or_else(invalid)?;
            Ok(RegistryAuth::Basic(user.to_string(), password.to_string()))
        }));
    }
    let user = entry.get("username").and_then(Value::as_str)?;
    let password = entry
        .get("password")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Some(Ok(RegistryAuth::Basic(
        user.to_string(),
        password.to_string(),
    )))
}

/// `docker-credential-<helper> get`, with the server URL on stdin.
fn helper_get(
    helper: &str,
    registry: &str,
    server: &str,
    timeout: Duration,
) -> Result<RegistryAuth, RegistryError> {
    let program = format!("docker-credential-{helper}");
    let fail = |reason: String| RegistryError::CredentialHelper {
        helper: helper.to_string(),
        registry: registry.to_string(),
        reason,
    };
    // A helper waiting for a keychain or a GPG unlock never ends: bounded in time
    // and in what it prints. Its stdout holds the credential: never shown.
    let output = berth_io::run(
        Command::new(&program).arg("get"),
        server.as_bytes(),
        berth_io::limits::HELPER_TIMEOUT.min(timeout),
        berth_io::limits::HELPER_OUTPUT,
    )
    .map_err(|e| match e {
        berth_io::RunError::Spawn(e) => fail(format!(
            "cannot run `{program}`: {e}; install it or remove it from the Docker config"
        )),
        other => fail(other.to_string()),
    })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        // The helpers' own word for "no credentials for this server" (on stdout).
        if String::from_utf8_lossy(&output.stdout).contains("credentials not found")
            || stderr.contains("credentials not found")
        {
            return Ok(RegistryAuth::Anonymous);
        }
        let status = match output.status.code() {
            Some(code) => format!("exit status {code}"),
            None => "killed by a signal".to_string(),
        };
        let said = berth_io::redact::peer_text(stderr.trim());
        return Err(fail(if said.is_empty() {
            format!("{status} (what it printed on stdout is not shown: it may hold a credential)")
        } else {
            format!("{status}: {said}")
        }));
    }
    let json: Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| fail(format!("printed invalid JSON: {e}")))?;
    let user = json
        .get("Username")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let secret = json
        .get("Secret")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Ok(if user == "<token>" {
        RegistryAuth::Bearer(secret.to_string())
    } else {
        RegistryAuth::Basic(user.to_string(), secret.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(5);

    fn config(json: &str) -> DockerConfig {
        DockerConfig {
            files: vec![AuthFile {
                path: None,
                json: serde_json::from_str(json).unwrap(),
            }],
        }
    }

    fn basic(user: &str, password: &str) -> RegistryAuth {
        RegistryAuth::Basic(user.into(), password.into())
    }

    #[test]
    fn auths_entries() {
        let c = config(
            r#"{"auths": {"https://index.docker.io/v1/": {"auth": "dXNlcjpwYXNz"}, "quay.io": {"username": "u", "password": "p"}}}"#,
        );
        assert_eq!(
            credentials(&c, "docker.io", T).unwrap(),
            basic("user", "pass")
        );
        assert_eq!(credentials(&c, "quay.io", T).unwrap(), basic("u", "p"));
        assert_eq!(
            credentials(&c, "ghcr.io", T).unwrap(),
            RegistryAuth::Anonymous
        );
        let bad = config(r#"{"auths": {"quay.io": {"auth": "!!"}}}"#);
        assert!(credentials(&bad, "quay.io", T)
            .unwrap_err()
            .to_string()
            .contains("not base64"));
    }

    #[test]
    fn helpers_are_named_when_they_fail() {
        let c = config(r#"{"credHelpers": {"ghcr.io": "berth-test-missing-helper"}}"#);
        let err = credentials(&c, "ghcr.io", T).unwrap_err().to_string();
        assert!(err.starts_with("credential helper `docker-credential-berth-test-missing-helper` failed for `ghcr.io`: cannot run"), "{err}");
    }

    /// Sweep 4, item 9: podman's login (containers-auth.json) is read before
    /// Docker's config, and a refusal names the file the credentials came from.
    #[test]
    fn podman_logins_come_first_and_refusals_name_their_file() {
        let dir = tempfile::tempdir().unwrap();
        let podman = dir.path().join("auth.json");
        std::fs::write(
            &podman,
            r#"{"auths": {"quay.io/acme": {"auth": "cG9kOm1hbg=="}}}"#,
        )
        .unwrap();
        let docker = dir.path().join("config.json");
        std::fs::write(&docker, r#"{"auths": {"quay.io": {"auth": "ZG9jOmtlcg=="}, "ghcr.io": {"auth": "ZG9jOmtlcg=="}}}"#).unwrap();
        let mut chain = DockerConfig::from_file(&podman).unwrap();
        chain
            .files
            .extend(DockerConfig::from_file(&docker).unwrap().files);
        assert_eq!(
            credentials(&chain, "quay.io", T).unwrap(),
            basic("pod", "man")
        );
        assert_eq!(
            credentials(&chain, "ghcr.io", T).unwrap(),
            basic("doc", "ker")
        );
        assert!(chain
            .login_for("quay.io")
            .contains(&format!("came from {}", podman.display())));
        assert!(chain
            .login_for("ghcr.io")
            .contains(&format!("came from {}", docker.display())));
        let none = chain.login_for("example.com");
        assert!(
            none.starts_with("no login for `example.com` was found (REGISTRY_AUTH_FILE"),
            "{none}"
        );
    }
}
