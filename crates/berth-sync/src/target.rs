//! Where containers are found and how a command runs in one: the seam between
//! the sync engine and podman/docker or Kubernetes.

use std::io::Write;

use berth_core::project::SyncTarget;
use berth_ref::{Reference, Repository};

use crate::error::SyncError;
use crate::protocol::ExecOutput;

/// A running container a rule may update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Container {
    /// What identifies it to the engine (container ID; `namespace/pod/container`).
    pub id: String,
    /// The container's name (a podman name; the container name in a pod).
    pub name: String,
    /// The image it was started from, as the engine reports it.
    pub image: String,
    /// Changes whenever the container (re)starts: a start time, restart count, or ID.
    pub instance: String,
    /// How status lines and errors name it (`podman:web`, `pod/web-5d9f/app`).
    pub label: String,
}

/// Feeds an exec's standard input.
/// `Send`, so a target may feed it from another thread.
pub type Input<'a> = &'a mut (dyn FnMut(&mut dyn Write) -> std::io::Result<()> + Send);

/// A place with running containers: a container engine or a cluster.
pub trait Target: Send + Sync {
    /// The engine's name for messages (`podman`, `docker`, `kubernetes context kind-dev`).
    fn describe(&self) -> String;
    /// The running containers that could be targets.
    fn list(&self) -> Result<Vec<Container>, SyncError>;
    /// Runs `argv` in `container`, feeding `input` to its standard input.
    fn exec(
        &self,
        container: &Container,
        argv: &[String],
        input: Input<'_>,
    ) -> Result<ExecOutput, SyncError>;
    /// What to do when the container lacks `sh` or `tar`.
    fn fallback_hint(&self) -> String;
    /// Starts `argv` (a [`crate::protocol::session_script`] shell) in `container` and
    /// keeps it open for update after update; `None` when the target has no such
    /// channel (each update is then one exec).
    fn open_shell(
        &self,
        _container: &Container,
        _argv: &[String],
    ) -> Option<Result<Box<dyn Shell>, SyncError>> {
        None
    }
}

/// A warm shell in a container: one frame in, its output and status back.
pub trait Shell: Send {
    /// Writes one frame with `input` and reads until the shell reports the status.
    /// An error means the shell is gone (the container stopped or restarted).
    fn update(&mut self, input: Input<'_>) -> Result<ExecOutput, SyncError>;
}

/// A rule's `target:`, resolved to something that can be tested against a container.
#[derive(Debug, Clone)]
pub enum Selector {
    /// Any of these repositories (a component's), any tag.
    Repositories(Vec<Repository>),
    /// A container name.
    Name(String),
    /// An image: its repository, and its tag/digest when the rule gives one.
    Image(Reference),
}

impl Selector {
    /// Builds a selector; `repositories` are the component's (from the project).
    pub fn new(target: &SyncTarget, repositories: impl FnOnce(&str) -> Vec<Repository>) -> Self {
        match target {
            SyncTarget::Component(name) => Selector::Repositories(repositories(name)),
            SyncTarget::Container(name) => Selector::Name(name.clone()),
            SyncTarget::Image(image) => Selector::Image(image.clone()),
        }
    }

    /// Whether `container` is selected.
    pub fn matches(&self, container: &Container) -> bool {
        match self {
            Selector::Name(name) => container.name == *name,
            Selector::Repositories(repos) => {
                Reference::parse(&container.image).is_ok_and(|r| repos.contains(r.repository()))
            }
            Selector::Image(want) => Reference::parse(&container.image).is_ok_and(|have| {
                have.repository() == want.repository()
                    && want.tag().is_none_or(|t| have.tag() == Some(t))
                    && want.digest().is_none_or(|d| have.digest() == Some(d))
            }),
        }
    }

    /// What the selector looks for, for "no container matches" messages.
    pub fn describe(&self, target: &SyncTarget) -> String {
        match self {
            Selector::Repositories(repos) => {
                let names: Vec<String> = repos.iter().map(ToString::to_string).collect();
                format!("{target} (image repository {})", names.join(" or "))
            }
            _ => target.to_string(),
        }
    }
}
