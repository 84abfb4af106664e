//! berth's cluster edge: connecting as kubectl does, server-side apply with
//! rollout waits and safe clean-up (`berth apply`, `diff`, `rollback`, and the
//! controller), the pods and exec `berth sync` uses, and the log streams and
//! port-forwards of `berth dev`.
//!
//! Async over a [`kube::Client`] with no runtime of its own: the CLI starts one,
//! the controller runs in its own. What to apply, in which order, what to keep
//! and what to roll back to is decided by `berth_core::cluster`; this crate sends
//! the requests, many at a time, each bounded by a timeout.
//!
//! The connection follows kubectl: `--kubeconfig` or `KUBECONFIG` or
//! `~/.kube/config`, else the in-cluster service account; `--context` picks a
//! context; the namespace is `--namespace`, then berth.yaml's `namespace:`,
//! then the context's.

#![warn(missing_docs)]

mod applier;
mod client;
mod connect;
mod deploy;
mod error;
mod exec;
mod exec_stream;
#[cfg(any(test, feature = "test-support"))]
pub mod fake;
pub mod fence;
mod gitops;
pub mod kubeconfig;
mod ops;
mod pods;
mod records;
mod references;
mod remember;
pub mod secret;
mod streams;
mod trust_bundles;

pub use applier::{Applied, Applier};
pub use berth_core::cluster::{Desired, ObjectRef, Settled};
pub use connect::{Cluster, Connection, REQUEST_TIMEOUT};
pub use deploy::{ApplyOptions, Change, Event, RolloutState, CONCURRENCY};
pub use error::{ClientError, ClusterError, Kind, Refused};
pub use exec::ExecOutput;
pub use exec_stream::{ExecStream, StreamInput, KEEPALIVE};
pub use gitops::{Collected, Foreign, Judged};
pub use ops::Shape;
pub use pods::is_ready;
pub use references::References;
pub use remember::{Known, Look, Outcome, Watches};
pub use streams::{LogLines, MAX_LOG_LINE};
