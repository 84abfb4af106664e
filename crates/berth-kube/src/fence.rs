//! The write fence of a leader-elected controller: every write the client
//! sends (any method but GET and HEAD) is refused unless this replica holds its
//! Lease, timed on its own monotonic clock. A leader that was paused (SIGSTOP, a
//! long GC-like stall, a frozen VM) past its renew deadline wakes up with a
//! closed fence, so the reconciles it had in flight cannot write over the new
//! leader's work before it notices that it lost the Lease. The Lease itself is
//! exempt: renewing it is how the fence opens again.

use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Why a write was refused.
#[derive(Debug, thiserror::Error)]
#[error("refused to write {method} {path}: this replica does not hold the leader Lease")]
pub struct NotLeading {
    method: String,
    path: String,
}

/// Shared by the Lease keeper (which opens it until a deadline) and the client
/// (which checks it before every write).
#[derive(Debug, Clone)]
pub struct Fence {
    until: Arc<Mutex<Option<Instant>>>,
    exempt: String,
}

impl Fence {
    /// A closed fence; writes to a path starting with `exempt` (the Leases of the
    /// election's namespace, `/apis/coordination.k8s.io/v1/namespaces/NS/leases`) always pass.
    pub fn new(exempt: impl Into<String>) -> Self {
        Fence {
            until: Arc::new(Mutex::new(None)),
            exempt: exempt.into(),
        }
    }

    /// Writes pass until `deadline`.
    pub fn open_until(&self, deadline: Instant) {
        {
            let mut until = berth_io::locked(&self.until);
            *until = Some(deadline);
        }
    }

    /// Writes are refused from now on.
    pub fn close(&self) {
        {
            let mut until = berth_io::locked(&self.until);
            *until = None;
        }
    }

    /// Whether writes pass now.
    pub fn is_open(&self) -> bool {
        berth_io::locked(&self.until).is_some_and(|until| Instant::now() < until)
    }

    /// The client's check of one request.
    pub(crate) fn check<B>(
        &self,
        request: http::Request<B>,
    ) -> Result<http::Request<B>, NotLeading> {
        let method = request.method();
        let path = request.uri().path();
        if method == http::Method::GET
            || method == http::Method::HEAD
            || path.starts_with(&self.exempt)
            || self.is_open()
        {
            return Ok(request);
        }
        Err(NotLeading {
            method: method.to_string(),
            path: path.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn request(method: http::Method, path: &str) -> http::Request<()> {
        http::Request::builder()
            .method(method)
            .uri(path)
            .body(())
            .unwrap()
    }

    #[test]
    fn writes_pass_only_while_open_and_before_the_deadline() {
        let fence = Fence::new("/apis/coordination.k8s.io/v1/namespaces/ns/leases/l");
        let write = || request(http::Method::PATCH, "/api/v1/namespaces/ns/secrets/s");
        assert!(fence
            .check(request(http::Method::GET, "/api/v1/secrets"))
            .is_ok());
        let refused = fence.check(write()).unwrap_err().to_string();
        assert_eq!(
            refused,
            "refused to write PATCH /api/v1/namespaces/ns/secrets/s: this replica does not hold the leader Lease"
        );
        assert!(fence
            .check(request(
                http::Method::PUT,
                "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l"
            ))
            .is_ok());
        fence.open_until(Instant::now() + Duration::from_secs(60));
        assert!(fence.check(write()).is_ok());
        fence.open_until(Instant::now());
        assert!(fence.check(write()).is_err(), "the deadline passed");
        fence.open_until(Instant::now() + Duration::from_secs(60));
        fence.close();
        assert!(fence.check(write()).is_err());
    }
}
