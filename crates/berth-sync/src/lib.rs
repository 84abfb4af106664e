//! `berth sync`: local files into running containers, without building,
//! pushing or injecting images and without touching pull policies.
//!
//! The pieces: [`tree`] scans what a rule sends, [`plan`] computes the
//! difference (against the last snapshot, or against a container's content
//! hashes after a restart), [`protocol`] turns it into one exec's stdin
//! stream, [`target`] abstracts where containers run ([`engine`] for
//! podman/docker; [`kube`] for Kubernetes pods, behind the `kube` feature), [`watch`] debounces file
//! events and [`session`] ties them together.

#![warn(missing_docs)]

pub mod engine;
pub mod error;
pub mod ignore;
#[cfg(feature = "kube")]
pub mod kube;
pub mod plan;
pub mod protocol;
pub mod session;
pub mod shells;
pub mod target;
pub mod tree;
pub mod watch;

pub use error::SyncError;
pub use session::{Outcome, Report, Session};
pub use target::{Container, Target};
