//! The pods of a project's rendered workloads as a [`Target`]: the blocking
//! sync engine over berth-kube's async calls, run on the caller's runtime
//! through a [`tokio::runtime::Handle`] (the engine's threads are not the
//! runtime's, so `block_on` there is sound).

use std::io::{self, Write};
use std::sync::Mutex;

use berth_core::render::Workload;
use berth_kube::{Cluster, ClusterError};
use k8s_openapi::api::core::v1::Pod;
use tokio::runtime::Handle;
use tokio::sync::mpsc;

use std::time::Duration;

use berth_kube::{ExecStream, StreamInput};

use crate::protocol::{ExecOutput, FrameOutput};
use crate::target::{Input, Shell};
use crate::{Container, SyncError, Target};

/// Pods of a project's workloads in a cluster.
pub struct KubeTarget {
    runtime: Handle,
    cluster: Cluster,
    workloads: Mutex<Vec<Workload>>,
}

impl KubeTarget {
    /// A target over `cluster`, running its requests on `runtime`.
    pub fn new(runtime: Handle, cluster: Cluster, workloads: Vec<Workload>) -> Self {
        KubeTarget {
            runtime,
            cluster,
            workloads: Mutex::new(workloads),
        }
    }

    /// Replaces the workloads whose pods are listed (`berth dev` after a re-render).
    pub fn set_workloads(&self, workloads: Vec<Workload>) {
        {
            let mut current = berth_io::locked(&self.workloads);
            *current = workloads;
        }
    }
}

/// The containers of `pods` (in `namespace`) a sync may update: those that are
/// ready, in pods that run, are Ready and are not being deleted. Their
/// `instance` changes when the container restarts.
pub fn ready_containers(namespace: &str, pods: &[Pod]) -> Vec<Container> {
    let mut out = Vec::new();
    for pod in pods.iter().filter(|p| berth_kube::is_ready(p)) {
        let Some(pod_name) = pod.metadata.name.as_deref() else {
            continue;
        };
        let statuses = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_deref())
            .unwrap_or_default();
        for container in pod.spec.iter().flat_map(|s| &s.containers) {
            let Some(status) = statuses.iter().find(|s| s.name == container.name) else {
                continue;
            };
            if !status.ready {
                continue;
            }
            out.push(Container {
                id: format!("{namespace}/{pod_name}/{}", container.name),
                name: container.name.clone(),
                image: container.image.clone().unwrap_or_default(),
                instance: format!(
                    "{}/{}",
                    status.container_id.as_deref().unwrap_or_default(),
                    status.restart_count
                ),
                label: format!("pod/{pod_name}/{}", container.name),
            });
        }
    }
    out
}

fn cluster_error(error: ClusterError) -> SyncError {
    SyncError::Cluster {
        source: Box::new(error),
    }
}

fn engine_error(message: impl Into<String>) -> SyncError {
    SyncError::Engine {
        engine: "kubernetes".into(),
        message: message.into(),
    }
}

/// `namespace/pod/container` of a container this target listed.
fn place(container: &Container) -> Result<(&str, &str, &str), SyncError> {
    let mut parts = container.id.splitn(3, '/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(namespace), Some(pod), Some(name)) => Ok((namespace, pod, name)),
        _ => Err(engine_error(format!(
            "`{}` is not a namespace/pod/container ID",
            container.id
        ))),
    }
}

/// How long a frame's reply may take. A step may run long (an `npm install`),
/// so this is generous; it bounds a stream that went silent without closing.
const REPLY_WAIT: Duration = Duration::from_secs(600);

/// A container's [`session_script`](crate::protocol::session_script) shell over
/// one exec stream (see [`berth_kube::ExecStream`]).
struct StreamShell {
    runtime: Handle,
    stream: ExecStream<ExecOutput>,
}

impl Shell for StreamShell {
    fn update(&mut self, input: Input<'_>) -> Result<ExecOutput, SyncError> {
        let gone = |what: &str| SyncError::Io {
            path: "<exec stream>".into(),
            source: io::Error::new(io::ErrorKind::BrokenPipe, what.to_string()),
        };
        let mut writer = ChannelWriter {
            tx: self.stream.input.clone(),
            wrap: StreamInput::Bytes,
            buf: Vec::new(),
        };
        input(&mut writer)
            .and_then(|()| writer.flush())
            .map_err(SyncError::io("<exec stream>"))?;
        self.stream
            .input
            .blocking_send(StreamInput::FrameEnd)
            .map_err(|_| gone("the exec stream closed"))?;
        let replies = &mut self.stream.replies;
        // The timer is made inside the runtime, whose clock it needs.
        let reply = async { tokio::time::timeout(REPLY_WAIT, replies.recv()).await };
        match self.runtime.block_on(reply) {
            Ok(Some(reply)) => Ok(reply),
            Ok(None) => Err(gone("the exec stream ended")),
            Err(_) => Err(gone("no reply from the exec stream")),
        }
    }
}

/// Sends written bytes to the async side in chunks, each made a message by `wrap`.
struct ChannelWriter<T> {
    tx: mpsc::Sender<T>,
    wrap: fn(Vec<u8>) -> T,
    buf: Vec<u8>,
}

const CHUNK: usize = 64 * 1024;

impl<T> Write for ChannelWriter<T> {
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
        let chunk = (self.wrap)(std::mem::take(&mut self.buf));
        self.tx
            .blocking_send(chunk)
            .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))
    }
}

impl Target for KubeTarget {
    fn describe(&self) -> String {
        self.cluster.describe.clone()
    }

    fn list(&self) -> Result<Vec<Container>, SyncError> {
        let workloads = berth_io::locked(&self.workloads).clone();
        let mut out: Vec<Container> = Vec::new();
        for workload in &workloads {
            let (namespace, pods) = self
                .runtime
                .block_on(self.cluster.pods(workload))
                .map_err(cluster_error)?;
            out.extend(ready_containers(&namespace, &pods));
        }
        out.sort_by(|a, b| a.id.cmp(&b.id));
        out.dedup_by(|a, b| a.id == b.id); // two workloads selecting the same pod
        Ok(out)
    }

    fn exec(
        &self,
        container: &Container,
        argv: &[String],
        input: Input<'_>,
    ) -> Result<ExecOutput, SyncError> {
        let (namespace, pod, name) = place(container)?;
        let (tx, rx) = mpsc::channel::<Vec<u8>>(8);
        std::thread::scope(|scope| {
            // The update stream is written by blocking code reading local files.
            let feeder = scope.spawn(move || {
                let mut writer = ChannelWriter {
                    tx,
                    wrap: |chunk| chunk,
                    buf: Vec::new(),
                };
                input(&mut writer).and_then(|()| writer.flush())
            });
            let result = self
                .runtime
                .block_on(self.cluster.exec(namespace, pod, name, argv, rx));
            let fed = feeder
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the update stream writer panicked")));
            match fed {
                // The command ended before reading everything; its status says why.
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
                Err(e) => return Err(SyncError::io("<update stream>")(e)),
                Ok(()) => {}
            }
            let output = result.map_err(cluster_error)?;
            Ok(ExecOutput {
                status: output.status,
                stdout: output.stdout,
                stderr: output.stderr,
            })
        })
    }

    fn open_shell(
        &self,
        container: &Container,
        argv: &[String],
    ) -> Option<Result<Box<dyn Shell>, SyncError>> {
        let opened = place(container).and_then(|(namespace, pod, name)| {
            let mut frame = FrameOutput::default();
            self.runtime
                .block_on(self.cluster.open_stream(
                    namespace,
                    pod,
                    name,
                    argv,
                    move |bytes: &[u8]| frame.feed(bytes),
                ))
                .map_err(cluster_error)
        });
        Some(opened.map(|stream| {
            Box::new(StreamShell {
                runtime: self.runtime.clone(),
                stream,
            }) as Box<dyn Shell>
        }))
    }

    fn fallback_hint(&self) -> String {
        "add it to the image (busybox provides sh, tar, find and sha256sum), or run a sidecar that \
         has them, share the directory through an emptyDir volume, and sync into the sidecar"
            .into()
    }
}
