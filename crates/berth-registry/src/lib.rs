//! The registry edge of berth: resolve image tags to digests over the OCI
//! distribution API. berth's own [`berth_ref::Reference`] is converted to the
//! client library's type only here.

#![warn(missing_docs)]

mod auth;
mod client;
mod error;
mod manifest;
mod pin;
mod promote;
mod token;

pub mod artifact;
pub use auth::{credentials, DockerConfig};
pub use client::{
    tags_all, Options, Referrer, Registry, Signature, Signatures, SIGNATURE_ANNOTATION,
};
pub use error::RegistryError;
pub use pin::{pin_all, Pin, Pinned, Platform};
pub use promote::{copy_attached, copy_image, Copied, Progress, Quiet, Stats, ATTACHED_SUFFIXES};
