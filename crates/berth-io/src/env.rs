//! Every environment variable berth itself reads, in one table: its name, who
//! reads it and what it does. Reads go through [`var_os`], which (in debug
//! builds) refuses a name the table lacks, so a new variable cannot be read
//! without being listed; docs/environment.md is generated from [`VARIABLES`]
//! and a test keeps them equal. The variables berth.yaml names for images
//! (`<NAME>_IMAGE`, `<NAME>_TAG`, `registry.env`, …) are the project's, read by
//! the resolver by the name berth.yaml gives: they are the one row of kind
//! [`Kind::Project`].

use std::ffi::OsString;

/// Who reads a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Every command.
    Berth,
    /// Commands that reach a cluster.
    Cluster,
    /// Commands that reach a registry.
    Registry,
    /// `berth controller` (set by its Deployment).
    Controller,
    /// Set by a tool that runs berth (Argo CD, a reproducible build).
    Caller,
    /// The variables berth.yaml names for its images.
    Project,
    /// Tests only (debug builds).
    Test,
}

/// One variable.
#[derive(Debug, Clone, Copy)]
pub struct Variable {
    /// Its name (`ARGOCD_ENV_*` stands for a prefix).
    pub name: &'static str,
    /// Who reads it.
    pub kind: Kind,
    /// What it does, one sentence.
    pub meaning: &'static str,
}

/// Every variable berth reads, in the order docs/environment.md lists them.
pub const VARIABLES: &[Variable] = &[
    Variable { name: "BERTH_PROJECT", kind: Kind::Berth, meaning: "The project file, as `--project` gives it; empty means unset." },
    Variable { name: "NO_COLOR", kind: Kind::Berth, meaning: "Set and not empty: no colour in output (`--color auto`), as no-color.org asks." },
    Variable { name: "HOME", kind: Kind::Berth, meaning: "Where `~/.kube/config`, `~/.config/containers/auth.json` and `~/.docker/config.json` are." },
    Variable { name: "<NAME>_IMAGE, <NAME>_TAG, …", kind: Kind::Project, meaning: "The image variables berth.yaml names (`env:`, `tagEnv:`, `repositoryEnv:`, `registry.env`, `tag.env`); their precedence is in docs/berth-yaml.md." },
    Variable { name: "KUBECONFIG", kind: Kind::Cluster, meaning: "The kubeconfig files, as for kubectl (`--kubeconfig` wins); else `~/.kube/config`, else the in-cluster service account." },
    Variable { name: "KUBERNETES_SERVICE_HOST", kind: Kind::Cluster, meaning: "Set inside a pod: a cluster is there (`berth sync --engine auto` picks kubernetes; the in-cluster configuration is used)." },
    Variable { name: "REGISTRY_AUTH_FILE", kind: Kind::Registry, meaning: "podman's credentials file; else `$XDG_RUNTIME_DIR/containers/auth.json`." },
    Variable { name: "XDG_RUNTIME_DIR", kind: Kind::Registry, meaning: "Where podman keeps `containers/auth.json` when REGISTRY_AUTH_FILE is unset." },
    Variable { name: "XDG_CONFIG_HOME", kind: Kind::Registry, meaning: "Where `containers/auth.json` is (default `~/.config`)." },
    Variable { name: "DOCKER_CONFIG", kind: Kind::Registry, meaning: "The directory of Docker's `config.json` (default `~/.docker`)." },
    Variable { name: "XDG_CACHE_HOME", kind: Kind::Berth, meaning: "Where berth keeps the chart archives `berth pin` pulled (`berth/charts` in it; default `~/.cache`), so `--locked` renders them offline, and `kubectl kustomize` output keyed by its inputs (`berth/kustomize`)." },
    Variable { name: "BERTH_NO_CACHE", kind: Kind::Berth, meaning: "Set and not empty: every `kubectl kustomize` build runs, none is read from or kept in berth's cache." },
    Variable { name: "PATH", kind: Kind::Berth, meaning: "Where berth finds kubectl, helm, make and podman; the kubectl that builds is part of the kustomize cache's key." },
    Variable { name: "BERTH_KUBECTL", kind: Kind::Berth, meaning: "The kubectl binary that builds `kustomize:` manifest sources (`kubectl kustomize`; default: `kubectl` on PATH)." },
    Variable { name: "BERTH_HELM", kind: Kind::Berth, meaning: "The helm binary that renders `helm:` manifest sources (default: `helm` on PATH)." },
    Variable { name: "BERTH_SYSTEM_CA_BUNDLE", kind: Kind::Berth, meaning: "The PEM file of public roots a CA bundle with `defaults: system` adds (default: Debian's `/etc/ssl/certs/ca-certificates.crt`)." },
    Variable { name: "COSIGN_PASSWORD", kind: Kind::Caller, meaning: "`berth push --sign-key`: the password of cosign's encrypted private key (empty when unset), as cosign reads it; never shown." },
    Variable { name: "SOURCE_DATE_EPOCH", kind: Kind::Caller, meaning: "`berth push`: the artifact's `created` time, for reproducible pushes." },
    Variable { name: "ARGOCD_APP_NAME", kind: Kind::Caller, meaning: "Set by Argo CD for a plugin: `render` defaults to `--gitops argocd` and messages name the Application." },
    Variable { name: "ARGOCD_ENV_*", kind: Kind::Caller, meaning: "An Argo CD Application's `plugin.env`: `ARGOCD_ENV_EPP_TAG` is read as `EPP_TAG`, ahead of the environment." },
    Variable { name: "BERTH_HANDED", kind: Kind::Caller, meaning: "Set by `berth env` for its command (and exported by `berth images --output shell`): the variables it set to its answers (`NAME=VALUE` words); a berth the command runs applies its own overrides to those answers while they are unchanged (docs/images.md)." },
    Variable { name: "HELM_PLUGIN_NAME", kind: Kind::Caller, meaning: "Set by Helm 4 for a plugin: berth's messages go to Helm's stderr (Helm hides a post-renderer plugin's own)." },
    Variable { name: "POD_NAME", kind: Kind::Controller, meaning: "The controller's identity in its Lease (the downward API sets it; else the host name and process id)." },
    Variable { name: "POD_NAMESPACE", kind: Kind::Controller, meaning: "Where the controller's Lease lives when `--lease-namespace` is not given (else `--namespace`, else `default`)." },
    Variable { name: "BERTH_DEV_FAULT", kind: Kind::Test, meaning: "Debug builds only: `sync` (or `watch`) makes `berth dev`'s sync part (or file watcher) fail, for the tests of a part that dies." },
];

/// Whether `name` is in [`VARIABLES`] (or under the `ARGOCD_ENV_` prefix).
pub fn listed(name: &str) -> bool {
    name.starts_with("ARGOCD_ENV_") || VARIABLES.iter().any(|v| v.name == name)
}

/// The variable `name`, which must be listed: a name missing from the table is
/// a bug, caught in debug builds (tests) so the table and the docs stay whole.
pub fn var_os(name: &str) -> Option<OsString> {
    debug_assert!(
        listed(name),
        "environment variable {name} is not in berth_io::env::VARIABLES"
    );
    std::env::var_os(name)
}

/// [`var_os`] as text, when it is valid Unicode.
pub fn var(name: &str) -> Option<String> {
    var_os(name).and_then(|v| v.into_string().ok())
}

/// docs/environment.md, from [`VARIABLES`].
pub fn reference() -> String {
    let mut out = String::from(
        "# Environment variables\n\nEvery variable berth reads (generated from `berth_io::env::VARIABLES`; a test fails\nwhen this file is stale, `BERTH_UPDATE_DOCS=1 cargo test -p berth-io` rewrites it).\n\n| variable | read by | what it does |\n|---|---|---|\n",
    );
    for v in VARIABLES {
        let who = match v.kind {
            Kind::Berth => "every command",
            Kind::Cluster => "cluster commands",
            Kind::Registry => "registry commands",
            Kind::Controller => "`berth controller`",
            Kind::Caller => "what runs berth",
            Kind::Project => "the resolver",
            Kind::Test => "tests",
        };
        out.push_str(&format!("| `{}` | {who} | {} |\n", v.name, v.meaning));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    fn repo() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// docs/environment.md is the table (`BERTH_UPDATE_DOCS=1` rewrites it).
    #[test]
    fn the_docs_list_every_variable() {
        let path = repo().join("docs/environment.md");
        let now = super::reference();
        if std::env::var_os("BERTH_UPDATE_DOCS").is_some() {
            std::fs::write(&path, &now).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == now,
            "docs/environment.md is stale: run `BERTH_UPDATE_DOCS=1 cargo test -p berth-io`"
        );
    }

    /// Product code reads the environment only through this table: a
    /// `std::env::var` by name elsewhere would be a variable the docs do not list.
    #[test]
    fn product_code_reads_variables_only_through_the_table() {
        let mut files = Vec::new();
        for crate_dir in std::fs::read_dir(repo().join("crates")).unwrap() {
            let src = crate_dir.unwrap().path().join("src");
            if src.is_dir() {
                rust_files(&src, &mut files);
            }
        }
        let mut stray = Vec::new();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            // Test modules may set and read what they like.
            let product = text.split("#[cfg(test)]").next().unwrap_or_default();
            if file.ends_with("berth-io/src/env.rs") || file.to_string_lossy().contains("tests") {
                continue;
            }
            for (n, line) in product.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                if code.contains("env::var(\"") || code.contains("env::var_os(\"") {
                    let named = code.contains("berth_io::env::var");
                    let name = code
                        .split("var_os(\"")
                        .nth(1)
                        .or_else(|| code.split("var(\"").nth(1))
                        .and_then(|rest| rest.split('"').next())
                        .unwrap_or_default();
                    // A message quoting Rust code (audit's advice) is not a read.
                    if code.contains("format!(") {
                        continue;
                    }
                    if !named || !super::listed(name) {
                        stray.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                    }
                }
            }
        }
        assert!(
            stray.is_empty(),
            "environment read outside berth_io::env:\n{}",
            stray.join("\n")
        );
    }
}
