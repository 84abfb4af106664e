//! The words berth.yaml and a `Berth` share, which the project loader checks
//! and the generators use: a config key's form, a CA bundle's defaults, the
//! GitOps engines. A leaf: `project` needs them without needing `configs` or
//! `gitops`, which build on `project`.

/// A `gitops:` value that names no engine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is no GitOps engine berth knows; use flux, argocd or none")]
pub struct UnknownEngine(pub String);

/// The engine that applies berth's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// Flux's kustomize-controller.
    Flux,
    /// Argo CD.
    ArgoCd,
}

impl Engine {
    /// `flux`, `argocd`; `none` is no engine.
    pub fn parse(text: &str) -> Result<Option<Engine>, UnknownEngine> {
        match text {
            "flux" => Ok(Some(Engine::Flux)),
            "argocd" => Ok(Some(Engine::ArgoCd)),
            "none" => Ok(None),
            other => Err(UnknownEngine(other.to_string())),
        }
    }

    /// Its name in berth.yaml and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Flux => "flux",
            Engine::ArgoCd => "argocd",
        }
    }

    /// The annotations that make the engine apply an object but never prune it.
    /// Argo CD's second one keeps a pruning-exempt object that left the output
    /// from making the application OutOfSync.
    pub fn annotations(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Engine::Flux => &[("kustomize.toolkit.fluxcd.io/prune", "Disabled")],
            Engine::ArgoCd => &[
                ("argocd.argoproj.io/sync-options", "Prune=false"),
                ("argocd.argoproj.io/compare-options", "IgnoreExtraneous"),
            ],
        }
    }
}

/// The key of a bundle in its generated ConfigMap, unless one is given.
pub const DEFAULT_KEY: &str = "ca-bundle.crt";
/// The variable set to a bundle's path in the container, unless others are given.
pub const DEFAULT_ENV: &str = "SSL_CERT_FILE";

/// Where a bundle is mounted in a container unless a path is given:
/// `/etc/ssl/certs/berth/<bundle>/<key>`, one directory per bundle, so two
/// bundles with the same key never collide. berth.yaml and a `Berth` both use it.
pub fn default_mount_path(bundle: &str, key: &str) -> String {
    format!("/etc/ssl/certs/berth/{bundle}/{key}")
}

/// ConfigMap keys: `[-._a-zA-Z0-9]+`, at most 253, not `.`/`..`, not starting with `..`.
pub fn is_config_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 253
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && key != "."
        && !key.starts_with("..")
}

/// The variables a client reads *instead of* its default store: a bundle set
/// through one of them must carry the public roots too (`defaults:`), or the
/// client can no longer reach public endpoints.
pub const REPLACING_VARIABLES: &[&str] = &[
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
];

/// The variable OpenSSL reads a hashed directory from: set to the directory
/// form of a bundle, never to its PEM file.
pub const CERT_DIR_VARIABLE: &str = "SSL_CERT_DIR";
