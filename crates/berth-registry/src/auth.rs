//! Credentials from the Docker config, as `docker` itself finds them:
//! `credHelpers` for the registry, then `auths`, then `credsStore`, else anonymous
//! (the registry's bearer-token flow then applies).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use base64::Engine as _;
use oci_client::secrets::RegistryAuth;
use serde_json::Value;

use crate::RegistryError;

/// A loaded Docker config (`$DOCKER_CONFIG/config.json` or `~/.docker/config.json`).
#[derive(Debug, Clone, Default)]
pub struct DockerConfig {
    path: Option<PathBuf>,
    json: Value,
}

impl DockerConfig {
    /// Reads the config the Docker CLI would read; a missing file is an empty config.
    pub fn load() -> Result<DockerConfig, RegistryError> {
        let dir = std::env::var_os("DOCKER_CONFIG")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".docker")));
        match dir {
            Some(dir) => DockerConfig::from_file(&dir.join("config.json")),
            None => Ok(DockerConfig::default()),
        }
    }

    /// Reads a config file; a missing file is an empty config.
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
            path: Some(path.to_path_buf()),
            json,
        })
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
    if let Some(helpers) = config.json.get("credHelpers").and_then(Value::as_object) {
        if let Some(helper) = helpers
            .iter()
            .find(|(k, _)| keys.contains(k) || host_of(k) == registry)
            .and_then(|(_, v)| v.as_str())
        {
            return helper_get(helper, registry, &keys[0], timeout);
        }
    }
    if let Some(auths) = config.json.get("auths").and_then(Value::as_object) {
        let entry = auths
            .iter()
            .find(|(k, _)| keys.contains(k) || host_of(k) == registry)
            .map(|(_, v)| v);
        if let Some(auth) = entry
            .and_then(|e| basic_from_entry(config, e))
            .transpose()?
        {
            return Ok(auth);
        }
    }
    if let Some(store) = config.json.get("credsStore").and_then(Value::as_str) {
        return helper_get(store, registry, &keys[0], timeout);
    }
    Ok(RegistryAuth::Anonymous)
}

fn basic_from_entry(
    config: &DockerConfig,
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
        let said = berth_core::redact::peer_text(stderr.trim());
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
            path: None,
            json: serde_json::from_str(json).unwrap(),
        }
    }

    #[test]
    fn auths_entries() {
        let c = config(
            r#"{"auths": {"https://index.docker.io/v1/": {"auth": "dXNlcjpwYXNz"}, "quay.io": {"username": "u", "password": "p"}}}"#,
        );
        assert_eq!(
            credentials(&c, "docker.io", T).unwrap(),
            RegistryAuth::Basic("user".into(), "pass".into())
        );
        assert_eq!(
            credentials(&c, "quay.io", T).unwrap(),
            RegistryAuth::Basic("u".into(), "p".into())
        );
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
}
