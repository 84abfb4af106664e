//! What stays open while `berth dev` runs: a container's log followed line by
//! line, and connections forwarded to a pod's port. Opening either is bounded
//! by the request timeout; what flows afterwards is not (a quiet log or an idle
//! connection is not a failure), but each log line is: a line that never ends
//! is cut, never held whole.

use std::pin::Pin;

use futures_util::io::{AsyncBufRead, AsyncBufReadExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::connect::Cluster;
use crate::error::{explain, ClusterError};

/// The longest log line kept; the rest of the line is dropped and counted.
pub const MAX_LOG_LINE: usize = 16 * 1024;

/// A followed container log, a line at a time.
pub struct LogLines {
    reader: Pin<Box<dyn AsyncBufRead + Send>>,
    line: Vec<u8>,
    dropped: usize,
    what: String,
}

impl LogLines {
    /// The next line (without its newline; a cut line ends with how much was
    /// dropped), or `None` when the log ends (the container stopped, or the
    /// server closed the stream).
    pub async fn next(&mut self) -> Result<Option<String>, ClusterError> {
        loop {
            let chunk = self
                .reader
                .fill_buf()
                .await
                .map_err(|e| ClusterError::Api {
                    action: self.what.clone(),
                    code: None,
                    message: e.to_string(),
                    source: kube::Error::ReadEvents(e).into(),
                })?;
            if chunk.is_empty() {
                if self.line.is_empty() && self.dropped == 0 {
                    return Ok(None);
                }
                return Ok(Some(self.finish()));
            }
            let (take, end) = match chunk.iter().position(|b| *b == b'\n') {
                Some(i) => (i, Some(i + 1)),
                None => (chunk.len(), None),
            };
            let room = MAX_LOG_LINE.saturating_sub(self.line.len());
            self.line.extend_from_slice(&chunk[..take.min(room)]);
            self.dropped += take.saturating_sub(room);
            let consumed = end.unwrap_or(take);
            self.reader.as_mut().consume(consumed);
            if end.is_some() {
                return Ok(Some(self.finish()));
            }
        }
    }

    fn finish(&mut self) -> String {
        let mut line = String::from_utf8_lossy(&self.line).into_owned();
        if line.ends_with('\r') {
            line.pop();
        }
        if self.dropped > 0 {
            line.push_str(&format!("… ({} more bytes)", self.dropped));
        }
        self.line.clear();
        self.dropped = 0;
        line
    }
}

impl Cluster {
    /// Follows the log of `container` in `pod`: the lines written from
    /// `since_seconds` ago (all when `None`), then every new one.
    pub async fn follow_log(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        since_seconds: Option<i64>,
    ) -> Result<LogLines, ClusterError> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let params = LogParams {
            container: Some(container.to_string()),
            follow: true,
            since_seconds,
            ..LogParams::default()
        };
        let what =
            format!("follow the log of pod/{pod} container {container} (namespace {namespace})");
        let reader = self
            .timed(|| what.clone(), async {
                Ok(api.log_stream(pod, &params).await)
            })
            .await?
            .map_err(|e| explain(e, &self.server, "get", "pods/log", namespace))?;
        Ok(LogLines {
            reader: Box::pin(reader),
            line: Vec::new(),
            dropped: 0,
            what,
        })
    }

    /// Forwards one connection, `local`, to `port` of `pod` until either side
    /// closes it; the bytes sent each way.
    pub async fn forward<S>(
        &self,
        namespace: &str,
        pod: &str,
        port: u16,
        local: &mut S,
    ) -> Result<(u64, u64), ClusterError>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send,
    {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let what = || format!("port-forward to pod/{pod} port {port} (namespace {namespace})");
        let mut forwarder = self
            .timed(what, async { Ok(api.portforward(pod, &[port]).await) })
            .await?
            .map_err(|e| explain(e, &self.server, "create", "pods/portforward", namespace))?;
        let (Some(mut remote), errors) = (forwarder.take_stream(port), forwarder.take_error(port))
        else {
            return Err(ClusterError::Record {
                action: what(),
                message: "the port-forward started without its stream".into(),
            });
        };
        let copied = tokio::io::copy_bidirectional(local, &mut remote).await;
        drop(remote);
        // The pod side's own error (nothing listens on the port), if it sent one.
        let refused = match errors {
            Some(error) => tokio::time::timeout(self.request_timeout, error)
                .await
                .ok()
                .flatten(),
            None => None,
        };
        let _ = forwarder.join().await;
        match (copied, refused) {
            (_, Some(message)) => Err(ClusterError::Api {
                action: what(),
                code: None,
                message: berth_io::redact::peer_text(&message),
                source: kube::Error::ReadEvents(std::io::Error::other(
                    "the pod side of the port-forward failed",
                ))
                .into(),
            }),
            (Ok(bytes), None) => Ok(bytes),
            // The local client went away mid-stream: its business, not a failure of the forward.
            (Err(e), None)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
                ) =>
            {
                Ok((0, 0))
            }
            (Err(e), None) => Err(ClusterError::Api {
                action: what(),
                code: None,
                message: e.to_string(),
                source: kube::Error::ReadEvents(e).into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &'static [u8]) -> LogLines {
        LogLines {
            reader: Box::pin(futures_util::io::Cursor::new(input)),
            line: Vec::new(),
            dropped: 0,
            what: "test".into(),
        }
    }

    #[tokio::test]
    async fn lines_are_split_cut_and_the_last_one_kept_without_a_newline() {
        let mut input = b"one\r\ntwo\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', MAX_LOG_LINE + 5));
        input.extend(b"\nlast");
        let leaked: &'static [u8] = Box::leak(input.into_boxed_slice());
        let mut log = lines(leaked);
        assert_eq!(log.next().await.unwrap().as_deref(), Some("one"));
        assert_eq!(log.next().await.unwrap().as_deref(), Some("two"));
        let long = log.next().await.unwrap().unwrap();
        assert!(
            long.ends_with("x… (5 more bytes)"),
            "{}",
            &long[long.len() - 30..]
        );
        assert_eq!(long.len(), MAX_LOG_LINE + "… (5 more bytes)".len());
        assert_eq!(log.next().await.unwrap().as_deref(), Some("last"));
        assert_eq!(log.next().await.unwrap(), None);
    }
}
