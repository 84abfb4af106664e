//! One exec kept open for request after request (`berth sync` and `berth dev`
//! on Kubernetes): a plain `sh` in the container reads frames from its standard
//! input and answers each on its standard output, so an update costs one write
//! and one reply instead of a new exec (API server → kubelet → runtime set-up).
//!
//! The stream is kube-rs's WebSocket exec, which every supported server (1.30
//! and later) serves. Two tasks drive it, so neither direction can stall the
//! other: a writer feeds stdin and, between frames, a newline every
//! [`KEEPALIVE`] so the kubelet's stream idle timeout (often 5 minutes on
//! hardened nodes) never closes an idle stream (kube-rs's WebSocket pings end at
//! the API server); a reader hands stdout to the caller's parser as it arrives,
//! which keeps what it needs in bounded memory and turns a frame's end into a
//! reply. Dropping the [`ExecStream`] closes the exec.

use std::time::Duration;

use kube::api::AttachedProcess;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::connect::Cluster;
use crate::error::ClusterError;
use crate::exec::no_streams;

/// How long a stream may sit idle before the writer sends a keepalive newline.
pub const KEEPALIVE: Duration = Duration::from_secs(60);

/// What the caller sends down a stream.
#[derive(Debug)]
pub enum StreamInput {
    /// Bytes of the current frame.
    Bytes(Vec<u8>),
    /// The frame is complete: keepalives may follow until the next one.
    FrameEnd,
}

/// An open exec: frames in through [`ExecStream::input`], replies out of
/// [`ExecStream::replies`] (closed when the exec ends or the stream breaks).
pub struct ExecStream<R> {
    /// Where frames are written (bounded: a slow stream slows the writer).
    pub input: mpsc::Sender<StreamInput>,
    /// One reply per frame, as the caller's parser made it.
    pub replies: mpsc::Receiver<R>,
    tasks: [JoinHandle<()>; 2],
}

impl<R> Drop for ExecStream<R> {
    fn drop(&mut self) {
        // The reader owns the exec; aborting it closes the WebSocket.
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Cluster {
    /// Starts `argv` in `container` of `pod` with stdin and stdout attached (no
    /// stderr: the command merges it), and keeps it open. `parse` receives stdout
    /// as it arrives and returns a reply when a frame's answer is complete.
    pub async fn open_stream<R, P>(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        argv: &[String],
        parse: P,
    ) -> Result<ExecStream<R>, ClusterError>
    where
        R: Send + 'static,
        P: FnMut(&[u8]) -> Option<R> + Send + 'static,
    {
        let mut attached = self.attach(namespace, pod, container, argv, false).await?;
        let (Some(stdin), Some(stdout)) = (attached.stdin(), attached.stdout()) else {
            return Err(no_streams(pod, namespace));
        };
        let (input, frames) = mpsc::channel(8);
        let (reply, replies) = mpsc::channel(1);
        let writer = tokio::spawn(write_frames(frames, stdin));
        let reader = tokio::spawn(read_replies(attached, stdout, parse, reply));
        Ok(ExecStream {
            input,
            replies,
            tasks: [writer, reader],
        })
    }
}

/// Feeds stdin until the caller drops its sender or the exec's stdin breaks;
/// between frames, a newline after each [`KEEPALIVE`] of quiet.
async fn write_frames(
    mut frames: mpsc::Receiver<StreamInput>,
    mut stdin: impl tokio::io::AsyncWrite + Unpin,
) {
    let mut in_frame = false;
    loop {
        let next = if in_frame {
            frames.recv().await
        } else {
            match tokio::time::timeout(KEEPALIVE, frames.recv()).await {
                Ok(next) => next,
                Err(_) => {
                    if stdin.write_all(b"\n").await.is_err() || stdin.flush().await.is_err() {
                        return;
                    }
                    continue;
                }
            }
        };
        let written = match next {
            None => return,
            Some(StreamInput::Bytes(bytes)) => {
                in_frame = true;
                stdin.write_all(&bytes).await
            }
            Some(StreamInput::FrameEnd) => {
                in_frame = false;
                stdin.flush().await
            }
        };
        if written.is_err() {
            return; // the exec is gone; the reader sees its end and closes the replies
        }
    }
}

/// Hands stdout to `parse` and sends each reply it makes; ends (closing the
/// replies) when stdout ends, which is when the exec ends or the stream breaks.
async fn read_replies<R, P>(
    attached: AttachedProcess,
    mut stdout: impl tokio::io::AsyncRead + Unpin,
    mut parse: P,
    reply: mpsc::Sender<R>,
) where
    P: FnMut(&[u8]) -> Option<R>,
{
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match stdout.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if let Some(answer) = parse(&buf[..n]) {
                    if reply.send(answer).await.is_err() {
                        break; // the caller dropped the stream
                    }
                }
            }
        }
    }
    attached.abort();
}
