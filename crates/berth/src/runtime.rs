//! The binary's one async runtime, started on first use by the commands that
//! talk to a registry or a cluster (`berth images` and `render` never start it).
//! Two worker threads: `berth sync`'s engine threads call into it with
//! `Handle::block_on`, which needs workers driving the I/O.

use std::sync::OnceLock;

use anyhow::{Context as _, Result};
use tokio::runtime::Runtime;

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

/// The runtime, started if it is not yet.
pub fn get() -> Result<&'static Runtime> {
    if let Some(runtime) = RUNTIME.get() {
        return Ok(runtime);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    Ok(RUNTIME.get_or_init(|| runtime))
}
