//! What happens in `berth dev`'s loop, as values: every part reports an
//! [`Event`]; `events` writes them for people or tools, `status` keeps the
//! status lines from them.

use berth_core::cluster::ObjectRef;

/// The part of the loop an error came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Loading berth.yaml, resolving, rendering.
    Render,
    /// Applying and recording.
    Apply,
    /// Waiting for the rollout.
    Rollout,
    /// Listing the project's pods.
    Pods,
    /// Syncing files into containers.
    Sync,
    /// Following a log.
    Logs,
    /// A port-forward.
    Forward,
    /// Watching the project's files.
    Watch,
}

impl Stage {
    pub(super) fn name(self) -> &'static str {
        match self {
            Stage::Render => "render",
            Stage::Apply => "apply",
            Stage::Rollout => "rollout",
            Stage::Pods => "pods",
            Stage::Sync => "sync",
            Stage::Logs => "logs",
            Stage::Forward => "forward",
            Stage::Watch => "watch",
        }
    }
}

/// One container's part of a sync.
#[derive(Debug, Clone)]
pub struct SyncedContainer {
    /// `namespace/pod/container`.
    pub id: String,
    /// Files and directories written.
    pub written: usize,
    /// Paths deleted.
    pub deleted: usize,
    /// Bytes of file content sent.
    pub bytes: u64,
    /// The `run:` steps that ran.
    pub steps: Vec<String>,
}

/// Something that happened in the loop.
#[derive(Debug, Clone)]
pub enum Event {
    /// The project was rendered.
    Rendered {
        /// Objects rendered.
        objects: usize,
        /// Names of the generated configs and CA bundles.
        generated: Vec<String>,
        /// What `berth render` would warn about.
        warnings: Vec<String>,
        /// The output differs from what was applied last (so it is applied).
        changed: bool,
    },
    /// An object was applied (or found as the newest record has it).
    Applied {
        /// The object.
        object: ObjectRef,
        /// The apply record's sequence (`berth-<project>-r<N>`).
        generation: u64,
        /// Nothing changed since that record: only drift was applied.
        unchanged: bool,
    },
    /// Where a workload's rollout stands, when it changes.
    Rollout {
        /// The workload.
        object: ObjectRef,
        /// As `kubectl rollout status` would say it.
        state: String,
    },
    /// An old generation of a generated config or CA bundle was deleted after
    /// the rollout that stopped using it succeeded.
    Deleted {
        /// The object.
        object: ObjectRef,
    },
    /// A workload finished its rollout.
    Ready {
        /// The workload.
        object: ObjectRef,
        /// The apply record it rolled out.
        generation: u64,
    },
    /// Files went into containers.
    Synced {
        /// The sync rule.
        rule: String,
        /// `initial`, `change`, `restart`.
        reason: &'static str,
        /// Wall time of the update.
        ms: u128,
        /// Each container that was updated successfully.
        containers: Vec<SyncedContainer>,
        /// The one-line summary `berth sync` prints.
        line: String,
    },
    /// A line of a container's log.
    Log {
        /// The pod's namespace.
        namespace: String,
        /// The pod.
        pod: String,
        /// The container.
        container: String,
        /// The line.
        text: String,
    },
    /// A forward's target changed.
    Forward {
        /// The component it reaches.
        component: String,
        /// The port on 127.0.0.1.
        local: u16,
        /// The port in the pod.
        port: u16,
        /// `(namespace, pod)` it now reaches; `None`: no ready pod yet.
        pod: Option<(String, String)>,
    },
    /// Something failed; the loop goes on.
    Error {
        /// Where.
        stage: Stage,
        /// What, where and how to fix it.
        message: String,
    },
    /// `berth dev` stopped.
    Stopped {
        /// The signal that stopped it (`SIGINT`, `SIGTERM`), or `None` (`--once`).
        signal: Option<&'static str>,
    },
}
