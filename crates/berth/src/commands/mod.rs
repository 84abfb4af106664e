//! One module per command.

pub mod about;
pub mod audit;
pub mod cluster;
pub mod controller;
pub mod dev;
pub mod env;
pub mod gc;
pub mod images;
pub mod init;
pub mod mirror;
pub mod outdated;
pub mod pin;
pub mod promote;
pub mod push;
pub mod ref_cmd;
pub mod render;
pub mod sync;
pub mod update;
pub mod validate;
