//! Image references: one parser for the whole of berth.
//!
//! The grammar and normalization follow the reference implementation,
//! `github.com/distribution/reference` (`ParseNormalizedNamed`), because every
//! registry client and container engine users meet agrees with it:
//!
//! ```text
//! reference  := name [ ":" tag ] [ "@" digest ]
//! name       := [domain "/"] path
//! domain     := host [":" port]          host: DNS name, IPv4, or [IPv6]
//! path       := component ("/" component)*   lowercase, at most 255 characters
//! component  := [a-z0-9]+ ((\.|_|__|-+) [a-z0-9]+)*
//! tag        := [\w][\w.-]{0,127}
//! digest     := ("sha256" | "sha384" | "sha512") ":" lowercase hex of exact length
//! ```
//!
//! Unlike many client libraries, a [`Reference`] keeps whether a tag was given
//! (no implicit `:latest`), because pull-policy rules depend on it.
//! This crate has no dependencies and does no I/O.

#![warn(missing_docs)]

mod digest;
mod error;
mod name;
pub mod scan;
mod shown;
pub mod version;

pub use digest::{lower_hex, Algorithm, Digest};
pub use error::RefError;
pub use name::{Reference, RegistryPrefix, Repository, Tag};
pub use shown::shown;

/// The registry Docker uses for names without a registry host.
pub const DEFAULT_DOMAIN: &str = "docker.io";
/// Docker Hub's legacy host, normalized to [`DEFAULT_DOMAIN`].
pub const LEGACY_DEFAULT_DOMAIN: &str = "index.docker.io";
/// The namespace of Docker Hub's official images.
pub const OFFICIAL_REPO_PREFIX: &str = "library/";
/// Longest repository path accepted (path only, without the domain).
pub const MAX_PATH_LEN: usize = 255;
/// Longest tag accepted.
pub const MAX_TAG_LEN: usize = 128;

#[cfg(test)]
mod tests;
