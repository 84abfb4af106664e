//! berth's in-cluster controller: `Berth` resources reconciled with the same
//! core as `berth render` and `berth apply`. Sources are ConfigMaps and Secrets
//! in the resource's own namespace, read by name; they become immutable,
//! content-addressed objects, so a changed source rolls exactly the workloads
//! that use it. Only labelled objects are watched, never every ConfigMap.

#![warn(missing_docs)]

/// `eprintln!` that cannot panic: when stderr cannot be written (`2>/dev/full`, a
/// closed pipe) the message is dropped and the exit code still says what happened.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

pub mod controller;
pub mod desired;
pub mod lease;
mod logged;
pub mod serve;
mod status;
pub mod types;

pub use controller::{run, Settings, MANAGER, SOURCE_LABEL};
pub use types::{crd_yaml, Berth, BerthSpec, BerthStatus};
