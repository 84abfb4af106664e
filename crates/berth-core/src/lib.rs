//! berth's pure core: the project model, image resolution and manifest
//! transforms. It reads no files, touches no network and starts no runtime:
//! callers hand it bytes (with the path they came from) and get values back,
//! so the CLI and a future controller share one implementation.

#![warn(missing_docs)]

pub mod cluster;
pub mod configs;
pub mod gitops;
pub mod kinds;
pub mod kustomization;
pub mod lock;
pub mod names;
pub mod place;
pub mod project;
pub mod render;
pub mod resolve;
pub use berth_io::suggest;
pub use berth_ref::scan;
pub use berth_trust::time;
pub mod warning;

pub use place::Place;
pub use project::{Component, Manifest, ManifestSource, Project, ProjectError, PullPolicy};
pub use resolve::{Origin, Overrides, Resolution, ResolveError, ResolvedImage};
pub use warning::{Code, Warning};
