//! berth's trust material, bytes in and entries out: PEM bundles read and
//! checked ([`pem`]), OpenSSL's hashed-directory names ([`rehash`]), the Java
//! truststores ([`truststore`]), Mozilla's roots as berth is built with them,
//! and the timestamps their messages carry ([`time`]). No project model, no
//! I/O: berth-core decides which bundles a project has and where they go; the
//! crypto crates (x509-parser, sha1, webpki-root-certs) are linked here only.

#![warn(missing_docs)]

pub mod pem;
pub mod rehash;
pub mod time;
pub mod truststore;

pub use pem::mozilla_roots;
