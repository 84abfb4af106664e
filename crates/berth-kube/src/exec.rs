//! One exec in a pod's container over kube-rs's websocket client, with standard
//! input fed from a channel (the caller may write it from a blocking thread; a
//! bounded channel keeps memory at a few chunks). stdin is never closed before
//! the command ends: berth's update stream is self-delimiting, and on servers
//! without the v5 protocol closing stdin closes the whole connection and loses
//! the output.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::{Api, AttachParams, AttachedProcess};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::connect::Cluster;
use crate::error::{explain, ClusterError};

/// The buffer between berth and kube-rs's WebSocket loop for stdin and stdout.
/// kube-rs's default (1 KiB) sends a frame as one message per KiB; with this,
/// each message is as large as kube-rs's reader takes (4 KiB): fewer messages
/// to frame, encrypt and send. (Each used to wait for the one before it to be
/// acknowledged, until the connection turned Nagle's algorithm off: `client.rs`.)
pub(crate) const STREAM_BUFFER: usize = 64 * 1024;

/// What a command printed and how it ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecOutput {
    /// Exit status (127: it could not start; -1: no status was reported).
    pub status: i32,
    /// Standard output.
    pub stdout: Vec<u8>,
    /// Standard error (and the server's message when the command could not start).
    pub stderr: Vec<u8>,
}

impl Cluster {
    /// Runs `argv` in `container` of `pod`, feeding it what arrives on `stdin`
    /// until the sender is dropped.
    pub async fn exec(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        argv: &[String],
        mut stdin_chunks: mpsc::Receiver<Vec<u8>>,
    ) -> Result<ExecOutput, ClusterError> {
        let mut attached = self.attach(namespace, pod, container, argv, true).await?;
        let (Some(mut stdin), Some(mut stdout), Some(mut stderr), Some(status)) = (
            attached.stdin(),
            attached.stdout(),
            attached.stderr(),
            attached.take_status(),
        ) else {
            return Err(no_streams(pod, namespace));
        };
        let write = async move {
            let mut broken = false;
            while let Some(chunk) = stdin_chunks.recv().await {
                // After a write error keep draining, so the feeding side never blocks.
                if !broken && stdin.write_all(&chunk).await.is_err() {
                    broken = true;
                }
            }
            let _ = stdin.flush().await;
            stdin // kept open until the command ends; see the module comment
        };
        let read_out = async {
            let mut buf = Vec::new();
            stdout.read_to_end(&mut buf).await.map(|_| buf)
        };
        let read_err = async {
            let mut buf = Vec::new();
            stderr.read_to_end(&mut buf).await.map(|_| buf)
        };
        let (_stdin, out, err) = tokio::join!(write, read_out, read_err);
        let status = status.await;
        let _ = attached.join().await;
        let mut output = ExecOutput {
            status: 0,
            stdout: out.unwrap_or_default(),
            stderr: err.unwrap_or_default(),
        };
        output.status = exit_code(status.as_ref(), &mut output.stderr);
        Ok(output)
    }
}

impl Cluster {
    /// Starts `argv` in `container` of `pod` with stdin and stdout attached, and
    /// stderr when asked; each stream's messages up to [`STREAM_BUFFER`] bytes.
    pub(crate) async fn attach(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        argv: &[String],
        stderr: bool,
    ) -> Result<AttachedProcess, ClusterError> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let params = AttachParams::default()
            .container(container)
            .stdin(true)
            .stdout(true)
            .stderr(stderr)
            .max_stdin_buf_size(STREAM_BUFFER)
            .max_stdout_buf_size(STREAM_BUFFER);
        self.timed(
            || format!("exec in pod/{pod} (namespace {namespace})"),
            async {
                Ok(api
                    .exec(pod, argv.iter().map(String::as_str), &params)
                    .await)
            },
        )
        .await?
        .map_err(|e| explain(e, &self.server, "create", "pods/exec", namespace))
    }
}

/// An exec the API server started without the streams berth asked for.
pub(crate) fn no_streams(pod: &str, namespace: &str) -> ClusterError {
    ClusterError::Record {
        action: format!("exec in pod/{pod} (namespace {namespace})"),
        message: "the exec started without its streams".into(),
    }
}

/// The exit code a `Status` on the error channel reports. A command that could
/// not start (no such executable) has no exit code; its message goes to stderr
/// and it counts as 127, like a shell's "not found".
fn exit_code(status: Option<&Status>, stderr: &mut Vec<u8>) -> i32 {
    let Some(status) = status else {
        return -1;
    };
    if status.status.as_deref() == Some("Success") {
        return 0;
    }
    let code = status
        .details
        .as_ref()
        .and_then(|d| d.causes.as_ref())
        .and_then(|causes| {
            causes
                .iter()
                .find(|c| c.reason.as_deref() == Some("ExitCode"))
                .and_then(|c| c.message.as_deref())
                .and_then(|m| m.parse().ok())
        });
    // A runtime that reports a command's end as Go's `exec.ExitError` text
    // ("…: exit status 92", as kwok does) rather than an `ExitCode` cause: the
    // code is the message's last word, and the message (which echoes the whole
    // command line) is left out of stderr, where the command's own words are.
    let code = code.or_else(|| {
        let message = status.message.as_deref()?;
        let (_, last) = message.trim_end().rsplit_once("exit status ")?;
        let code = last.parse().ok()?;
        if stderr.iter().all(u8::is_ascii_whitespace) {
            // The command said nothing: the runtime's first line (cut) is all there is.
            let first: String = message
                .lines()
                .next()
                .unwrap_or_default()
                .chars()
                .take(200)
                .collect();
            stderr.extend_from_slice(format!("(the container runtime: {first})\n").as_bytes());
        }
        Some(code)
    });
    match code {
        Some(code) => code,
        None => {
            let message = status.message.clone().unwrap_or_default();
            stderr.extend_from_slice(message.as_bytes());
            stderr.push(b'\n');
            if message.contains("not found") || message.contains("no such file") {
                127
            } else {
                -1
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{StatusCause, StatusDetails};

    #[test]
    fn exit_codes_from_status() {
        let mut stderr = Vec::new();
        let ok = Status {
            status: Some("Success".into()),
            ..Status::default()
        };
        assert_eq!(exit_code(Some(&ok), &mut stderr), 0);
        let failed = Status {
            status: Some("Failure".into()),
            reason: Some("NonZeroExitCode".into()),
            details: Some(StatusDetails {
                causes: Some(vec![StatusCause {
                    reason: Some("ExitCode".into()),
                    message: Some("94".into()),
                    ..StatusCause::default()
                }]),
                ..StatusDetails::default()
            }),
            ..Status::default()
        };
        assert_eq!(exit_code(Some(&failed), &mut stderr), 94);
        let no_sh = Status {
            status: Some("Failure".into()),
            message: Some("exec: \"sh\": executable file not found in $PATH".into()),
            ..Status::default()
        };
        assert_eq!(exit_code(Some(&no_sh), &mut stderr), 127);
        assert!(String::from_utf8_lossy(&stderr).contains("\"sh\": executable file not found"));
        assert_eq!(exit_code(None, &mut stderr), -1);
        let mut stderr = b"tar: app/a.txt: Cannot open: File exists\n".to_vec();
        let go_exit = Status {
            status: Some("Failure".into()),
            message: Some("Internal error occurred: error executing command in container: cmd wait: sh -c set -u\n...\n: exit status 92".into()),
            ..Status::default()
        };
        assert_eq!(exit_code(Some(&go_exit), &mut stderr), 92);
        assert_eq!(
            String::from_utf8_lossy(&stderr),
            "tar: app/a.txt: Cannot open: File exists\n",
            "the command's own stderr, without the echoed command line"
        );
        let mut silent = Vec::new();
        assert_eq!(exit_code(Some(&go_exit), &mut silent), 92);
        assert_eq!(
            String::from_utf8_lossy(&silent),
            "(the container runtime: Internal error occurred: error executing command in container: cmd wait: sh -c set -u)\n",
            "a silent command still says who reported the failure"
        );
    }
}
