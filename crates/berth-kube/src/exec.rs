//! One exec in a pod's container: the blocking `Target::exec` over kube-rs's
//! async websocket client.
//!
//! stdin is fed from a plain thread (the update stream is written by blocking
//! code reading local files) through a bounded channel, so memory stays at a
//! few chunks. stdin is never closed before the command ends: berth's update
//! stream is self-delimiting, and on servers without the v5 protocol closing
//! stdin closes the whole connection and loses the output.

use std::io::{self, Write};

use berth_sync::protocol::ExecOutput;
use berth_sync::target::Input;
use berth_sync::{Container, SyncError};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::{Api, AttachParams};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::error::explain;
use crate::target::KubeTarget;

/// Sends written bytes to the async side in chunks.
struct ChannelWriter {
    tx: mpsc::Sender<Vec<u8>>,
    buf: Vec<u8>,
}

const CHUNK: usize = 64 * 1024;

impl Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.flush()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::take(&mut self.buf);
        self.tx
            .blocking_send(chunk)
            .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))
    }
}

fn engine_error(message: impl Into<String>) -> SyncError {
    SyncError::Engine {
        engine: "kubernetes".into(),
        message: message.into(),
    }
}

pub(crate) fn exec(
    target: &KubeTarget,
    container: &Container,
    argv: &[String],
    input: Input<'_>,
) -> Result<ExecOutput, SyncError> {
    let mut parts = container.id.splitn(3, '/');
    let (Some(namespace), Some(pod), Some(name)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(engine_error(format!(
            "`{}` is not a namespace/pod/container ID",
            container.id
        )));
    };
    let (tx, rx) = mpsc::channel::<Vec<u8>>(8);
    std::thread::scope(|scope| {
        let feeder = scope.spawn(move || {
            let mut writer = ChannelWriter {
                tx,
                buf: Vec::new(),
            };
            input(&mut writer).and_then(|()| writer.flush())
        });
        let result = target
            .cluster
            .runtime
            .block_on(run(target, namespace, pod, name, argv, rx));
        let fed = feeder
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the update stream writer panicked")));
        match fed {
            // The command ended before reading everything; its status says why.
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
            Err(e) => return Err(SyncError::io("<update stream>")(e)),
            Ok(()) => {}
        }
        result
    })
}

async fn run(
    target: &KubeTarget,
    namespace: &str,
    pod: &str,
    container: &str,
    argv: &[String],
    mut rx: mpsc::Receiver<Vec<u8>>,
) -> Result<ExecOutput, SyncError> {
    let api: Api<Pod> = Api::namespaced(target.cluster.client.clone(), namespace);
    let params = AttachParams::default()
        .container(container)
        .stdin(true)
        .stdout(true)
        .stderr(true);
    let mut attached = api
        .exec(pod, argv.iter().map(String::as_str), &params)
        .await
        .map_err(|e| SyncError::from(explain(e, "create", "pods/exec", namespace)))?;
    let (Some(mut stdin), Some(mut stdout), Some(mut stderr), Some(status)) = (
        attached.stdin(),
        attached.stdout(),
        attached.stderr(),
        attached.take_status(),
    ) else {
        return Err(engine_error("exec started without its streams"));
    };
    let write = async move {
        let mut broken = false;
        while let Some(chunk) = rx.recv().await {
            // After a write error keep draining, so the feeding thread never blocks.
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
    }
}
