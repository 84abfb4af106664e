//! `berth outdated` and `berth update` decide here, without a network or a file
//! system: given each repository's tags, which release a component (and every
//! member of its variant family) is on, which is the newest, which a family can
//! move to together; and, given a file's text and where a copy of the default
//! is written, the edit that moves that copy and nothing else. The CLI reads
//! the registries and the files and writes through berth's one writer.

mod edit;
mod family;
mod stale;
pub use stale::stale_pins;
#[cfg(test)]
mod family_tests;

pub use edit::{replace_token, Edit, EditError};
pub use family::{
    chosen, family_target, judged, members, repositories, rows, ChoiceError, Member, Row, State,
    Tags, TargetError,
};
