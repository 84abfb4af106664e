//! YAML for berth: one loader and one emitter for berth.yaml and manifests.
//!
//! Why not a serde data format: berth must report `file:line:column` for any
//! node, keep key order, reject duplicate keys and alias-expansion bombs, and
//! write back untouched values with their original type (a quoted `"8080"`
//! stays a string, a plain `8080` an integer). A small tree that keeps each
//! scalar's text and style does all of that; the event parser underneath is
//! `saphyr-parser`.

#![warn(missing_docs)]

mod emit;
pub mod json;
mod load;
mod node;
mod scalar;

pub use emit::{write_document, write_stream};
pub use load::{load_all, Documents, Error, Limits, Replaced};
pub use node::{Node, Pos, Scalar, Style, Value};

#[cfg(test)]
mod tests;
