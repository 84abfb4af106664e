//! What can go wrong in `berth sync`, each with what to do about it.

use std::path::PathBuf;

/// A sync failure.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// A local file or directory could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The local path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// An `ignore:`/`.dockerignore`/`trigger:` pattern that does not compile.
    #[error("{origin}: invalid {what} pattern `{pattern}`: {reason}")]
    Pattern {
        /// `file:line[:column]` of the pattern.
        origin: String,
        /// `ignore` or `trigger`.
        what: &'static str,
        /// The pattern.
        pattern: String,
        /// Why it is invalid.
        reason: String,
    },
    /// A `paths:` entry whose `from` does not exist.
    #[error("{origin}: sync rule `{rule}`: `from: {from}` does not exist; create it or correct the path (relative to the project directory)")]
    MissingSource {
        /// `file:line:column` of the entry.
        origin: String,
        /// The rule's name.
        rule: String,
        /// `from` as written.
        from: String,
    },
    /// No running container matches a rule.
    #[error("sync rule `{rule}`: no running container matches {looked_for} on {engine}; found {}",
        if found.is_empty() { "no running containers".to_string() } else { found.join(", ") })]
    NoContainers {
        /// The rule's name.
        rule: String,
        /// What it looked for (`component `epp` (ghcr.io/x/epp)`).
        looked_for: String,
        /// The engine or cluster searched.
        engine: String,
        /// What runs there (`name (image)`), for comparison.
        found: Vec<String>,
    },
    /// The container engine or cluster could not be used at all.
    #[error("{engine}: {message}")]
    Engine {
        /// `podman`, `docker`, `kubernetes`.
        engine: String,
        /// What failed and how to fix it.
        message: String,
    },
    /// The cluster refused or failed a request (its typed error is the source:
    /// `berth_kube::ClusterError` tells a timeout from an RBAC refusal).
    #[error("kubernetes: {source}")]
    Cluster {
        /// The cluster layer's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The container lacks a program the update needs.
    #[error("{container}: the container has no `{program}`, which berth sync needs to {purpose}; {fallback}")]
    MissingProgram {
        /// The container.
        container: String,
        /// `sh` or `tar`.
        program: &'static str,
        /// What the program is for.
        purpose: &'static str,
        /// What to do instead.
        fallback: String,
    },
    /// The container user may not write a path.
    #[error("{container}: permission denied writing `{path}` as uid {uid}; make the directory writable by that user (chown it in the image) or sync somewhere it owns")]
    PermissionDenied {
        /// The container.
        container: String,
        /// The path, as the container's tar reported it.
        path: String,
        /// The container user's uid.
        uid: String,
    },
    /// The target directory is on a read-only filesystem.
    #[error("{container}: `{path}` is on a read-only filesystem; sync into a writable volume (emptyDir, a bind mount) or drop `readOnlyRootFilesystem` for development")]
    ReadOnly {
        /// The container.
        container: String,
        /// The path the container reported.
        path: String,
    },
    /// A local path whose container path would leave the rule's `to` directory.
    #[error("{local}: would be written outside `{to}` in the container ({reason}); not sent")]
    Escape {
        /// The local path.
        local: PathBuf,
        /// The rule's `to` directory.
        to: String,
        /// How it escapes.
        reason: String,
    },
    /// A local path the update stream cannot carry.
    #[error("{}: not sent: {reason}", local.display())]
    Unsendable {
        /// The local path.
        local: PathBuf,
        /// Why.
        reason: &'static str,
    },
    /// The update failed in the container for another reason.
    #[error("{container}: update failed (exit {status}): {stderr}")]
    Exec {
        /// The container.
        container: String,
        /// The exit status.
        status: i32,
        /// What the container printed on stderr (trimmed).
        stderr: String,
    },
    /// A `run:` step exited non-zero.
    #[error("{container}: run step `{cmd}` failed with exit {status}{}", if output.is_empty() { String::new() } else { format!(":\n{output}") })]
    StepFailed {
        /// The container.
        container: String,
        /// The step's argv, joined.
        cmd: String,
        /// Its exit status.
        status: i32,
        /// Its output (trimmed).
        output: String,
    },
    /// The thread syncing one container panicked (a bug in berth): reported, never dropped.
    #[error("the sync into {container} stopped unexpectedly ({message}); this is a bug in berth, please report it")]
    Panicked {
        /// The container's label.
        container: String,
        /// The panic's message.
        message: String,
    },
    /// The file watcher failed.
    #[error("watching files: {0}")]
    Watch(#[from] notify::Error),
}

impl SyncError {
    /// Wraps an I/O error with the local path it concerns.
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> SyncError {
        let path = path.into();
        move |source| SyncError::Io { path, source }
    }
}
