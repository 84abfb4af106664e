//! The back-off of every watch the controller runs.
//!
//! kube-runtime's `StreamBackoff` resets its back-off on any `Ok` item, and a watcher yields
//! `Ok(Event::Init)` before each list it starts, so against an API server that refuses the
//! list (a 403) the back-off was reset before every attempt and never grew: the GitOps
//! collector retried every 0.8–1.6 s forever (R1/KC08 of #46). Here a reset counts only once
//! the watch has gone [`WatchBackoff::HEALTHY`] without a failure.

use std::time::{Duration, Instant};

/// Doubling from `first` to `max`, reset only after a healthy stretch.
#[derive(Debug, Clone)]
pub(crate) struct WatchBackoff {
    first: Duration,
    max: Duration,
    next: Duration,
    last_failure: Option<Instant>,
}

impl WatchBackoff {
    /// How long a watch must go without a failure before its back-off starts small again.
    pub(crate) const HEALTHY: Duration = Duration::from_secs(30);

    /// The controller's merged watches: 100 ms doubling to 2 s. kube-runtime's default
    /// (0.8 s to 30 s) is shared by all of them, so the burst of errors an API server restart
    /// causes stopped every watch for minutes; short and capped instead.
    pub(crate) fn controller() -> WatchBackoff {
        WatchBackoff::new(Duration::from_millis(100), Duration::from_secs(2))
    }

    /// The GitOps collector's watches: 0.8 s doubling to 30 s, as client-go's.
    pub(crate) fn collector() -> WatchBackoff {
        WatchBackoff::new(Duration::from_millis(800), Duration::from_secs(30))
    }

    fn new(first: Duration, max: Duration) -> WatchBackoff {
        WatchBackoff {
            first,
            max,
            next: first,
            last_failure: None,
        }
    }
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let now = self.next;
        self.next = (self.next * 2).min(self.max);
        self.last_failure = Some(Instant::now());
        Some(now)
    }
}

impl kube::runtime::utils::Backoff for WatchBackoff {
    fn reset(&mut self) {
        // The `Init` a watcher yields before each list is no sign of health.
        if self
            .last_failure
            .is_none_or(|at| at.elapsed() >= Self::HEALTHY)
        {
            self.next = self.first;
            self.last_failure = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::utils::Backoff as _;

    #[test]
    fn a_reset_right_after_a_failure_does_not_shrink_the_back_off() {
        let mut backoff = WatchBackoff::collector();
        let mut waits = Vec::new();
        for _ in 0..6 {
            waits.push(backoff.next().unwrap_or_default().as_millis());
            backoff.reset(); // the watcher's `Init` before the next list
        }
        assert_eq!(waits, [800, 1600, 3200, 6400, 12800, 25600]);
        assert_eq!(backoff.next(), Some(Duration::from_secs(30)));
        let mut fresh = WatchBackoff::controller();
        fresh.reset();
        assert_eq!(fresh.next(), Some(Duration::from_millis(100)));
    }
}
