//! File events, debounced: an editor's save (write, rename, chmod) or a branch
//! switch (thousands of events) becomes one batch of distinct paths.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher as _};

use crate::error::SyncError;

/// A batch ends after this long without events...
pub const QUIET: Duration = Duration::from_millis(40);
/// ...or this long after its first event, whichever comes first.
pub const CAP: Duration = Duration::from_millis(500);

/// Watches local roots for changes.
pub struct Watcher {
    _inner: RecommendedWatcher,
    events: Receiver<notify::Result<Event>>,
}

/// One debounced batch.
#[derive(Debug, Default)]
pub struct Batch {
    /// Distinct changed paths.
    pub paths: BTreeSet<PathBuf>,
    /// The OS dropped events (queue overflow): everything must be rescanned.
    pub rescan: bool,
}

impl Watcher {
    /// Starts watching `(path, recursive)` roots.
    pub fn new(roots: &[(PathBuf, bool)]) -> Result<Watcher, SyncError> {
        let (tx, events) = channel();
        let mut inner = notify::recommended_watcher(move |event| {
            let _ = tx.send(event); // the receiver is gone only when berth is exiting
        })?;
        for (path, recursive) in roots {
            let mode = if *recursive {
                RecursiveMode::Recursive
            } else {
                RecursiveMode::NonRecursive
            };
            inner.watch(path, mode)?;
        }
        Ok(Watcher {
            _inner: inner,
            events,
        })
    }

    /// Waits up to `timeout` for a first event, then gathers events until
    /// [`QUIET`] passes without one or [`CAP`] after the first. An empty batch
    /// means the timeout passed.
    pub fn next_batch(&self, timeout: Duration) -> Result<Batch, SyncError> {
        let mut batch = Batch::default();
        let first = match self.events.recv_timeout(timeout) {
            Ok(event) => event,
            Err(RecvTimeoutError::Timeout) => return Ok(batch),
            Err(RecvTimeoutError::Disconnected) => {
                return Err(SyncError::Watch(notify::Error::generic(
                    "the watcher stopped",
                )))
            }
        };
        let started = Instant::now();
        add(&mut batch, first)?;
        loop {
            let left = CAP.saturating_sub(started.elapsed());
            if left.is_zero() {
                break;
            }
            match self.events.recv_timeout(QUIET.min(left)) {
                Ok(event) => add(&mut batch, event)?,
                Err(_) => break,
            }
        }
        Ok(batch)
    }
}

fn add(batch: &mut Batch, event: notify::Result<Event>) -> Result<(), SyncError> {
    let event = event?;
    if event.need_rescan() {
        batch.rescan = true;
    }
    let relevant = match event.kind {
        // Opening or reading changes nothing; closing after a write does.
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    };
    if relevant {
        batch.paths.extend(event.paths);
    }
    Ok(())
}
