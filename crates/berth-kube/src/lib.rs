//! berth's cluster edge: connecting as kubectl does, server-side apply with
//! rollout waits and safe clean-up (`berth apply`, `diff`, `rollback`), and the
//! pods of a project's workloads as a [`berth_sync::Target`] (exec over
//! kube-rs's websocket client).
//!
//! The connection follows kubectl: `--kubeconfig` or `KUBECONFIG` or
//! `~/.kube/config`, else the in-cluster service account; `--context` picks a
//! context; the namespace is `--namespace`, then berth.yaml's `namespace:`,
//! then the context's.

#![warn(missing_docs)]

mod connect;
mod deploy;
mod error;
mod exec;
mod ops;
mod records;
mod target;

pub use connect::{Cluster, Connection};
pub use deploy::{ApplyOptions, Change, Desired, Event};
pub use error::ClusterError;
pub use ops::ObjectRef;
pub use target::KubeTarget;
