//! berth's in-cluster controller: `Berth` resources reconciled with the same
//! core as `berth render` and `berth apply`. Sources are ConfigMaps and Secrets
//! in the resource's own namespace, read by name; they become immutable,
//! content-addressed objects, so a changed source rolls exactly the workloads
//! that use it. Only labelled objects are watched, never every ConfigMap.
//!
//! `runtime` is the process shell (signals, leader election, watches),
//! `reconcile` one reconcile, `sources` the sources it reads and labels,
//! `desired` and `status` the pure decisions, `collector` the clean-up of
//! config generations kept for a GitOps engine.

#![warn(missing_docs)]

mod backoff;
mod caches;
mod collector;
mod context;
pub mod desired;
mod index;
pub mod lease;
mod logged;
pub mod logs;
pub mod owner;
pub mod reason;
mod reconcile;
pub mod requeue;
pub mod runtime;
mod scope;
pub mod serve;
pub mod shutdown;
mod sources;
mod status;
pub mod types;
mod uninstall;
mod workloads;

pub use context::Error;
pub use reason::Reason;
pub use requeue::retry_after;
pub use runtime::{run, Settings};
pub use shutdown::Shutdown;
pub use types::{crd_yaml, Berth, BerthSpec, BerthStatus};
pub use uninstall::{stop, uninstall, Uninstalled};

/// The field manager of everything the controller applies.
pub const MANAGER: &str = "berth-controller";
/// The field manager of the source label (it owns nothing else on a source).
pub const SOURCE_MANAGER: &str = "berth-controller-sources";
/// The label the controller puts on the sources it reads, and watches by.
pub const SOURCE_LABEL: &str = "berth.dev/source";
/// The label on every object the controller applies, and what its owned
/// watches select: objects `berth apply` applied (also `managed-by=berth`)
/// are not streamed to the controller.
pub const CONTROLLER_LABEL: &str = "berth.dev/controller";
/// [`CONTROLLER_LABEL`]'s selector.
pub(crate) const CONTROLLED: &str = "berth.dev/controller=berth-controller";
/// Removes the source labels when a `Berth` goes.
pub(crate) const FINALIZER: &str = "berth.dev/sources";
