//! A local stand-in for the two Kubernetes API endpoints `berth sync` uses:
//! listing pods (by label selector or name) and pod exec over a websocket
//! (the `v4.channel.k8s.io` protocol, which cannot close stdin — the harder
//! case for berth's stream). Each fake pod container is a real podman
//! container: an exec runs `podman exec -i` there, so what berth sends is
//! really unpacked and run.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use super::fake_api::query;

/// A pod the fake API server reports.
#[derive(Clone, Debug)]
pub struct FakePod {
    pub namespace: String,
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// Container name, image, and the podman container that backs it.
    pub containers: Vec<(String, String, String)>,
    pub ready: bool,
}

#[derive(Default)]
struct State {
    pods: Vec<FakePod>,
    /// Answer every request with 403 (RBAC refusal).
    forbid: bool,
}

pub struct FakeKube {
    pub url: String,
    state: Arc<Mutex<State>>,
    _runtime: tokio::runtime::Runtime,
}

type Env = Vec<(&'static str, PathBuf)>;

impl FakeKube {
    /// Starts the server on 127.0.0.1 (a random port); podman runs with `podman_env`.
    pub fn start(podman_env: Env) -> FakeKube {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let shared = state.clone();
        let env = Arc::new(podman_env);
        runtime.spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (state, env) = (shared.clone(), env.clone());
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        handle(req, state.clone(), env.clone())
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .with_upgrades()
                        .await;
                });
            }
        });
        FakeKube {
            url: format!("http://{addr}"),
            state,
            _runtime: runtime,
        }
    }

    pub fn add_pod(&self, pod: FakePod) {
        self.state.lock().unwrap().pods.push(pod);
    }

    pub fn forbid(&self, forbid: bool) {
        self.state.lock().unwrap().forbid = forbid;
    }

    /// Writes a kubeconfig for this server into `dir`.
    pub fn kubeconfig(&self, dir: &Path) -> PathBuf {
        write_kubeconfig(dir, &self.url)
    }
}

/// A kubeconfig pointing at `server`, with namespace `dev` in its context.
pub fn write_kubeconfig(dir: &Path, server: &str) -> PathBuf {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: fake\n\
             clusters: [{{name: fake, cluster: {{server: \"{server}\"}}}}]\n\
             users: [{{name: fake, user: {{}}}}]\n\
             contexts: [{{name: fake, context: {{cluster: fake, user: fake, namespace: dev}}}}]\n"
        ),
    )
    .unwrap();
    path
}

fn json(status: StatusCode, body: serde_json::Value) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

fn status_body(code: u16, reason: &str, message: &str) -> serde_json::Value {
    serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code})
}

fn podman_instance(env: &Env, container: &str) -> String {
    let out = std::process::Command::new("podman")
        .envs(env.iter().cloned())
        .args([
            "inspect",
            "--format",
            "{{.Id}}-{{.State.StartedAt}}",
            container,
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .replace(' ', "_")
}

fn pod_json(pod: &FakePod, env: &Env) -> serde_json::Value {
    let ready = if pod.ready { "True" } else { "False" };
    serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": pod.name, "namespace": pod.namespace, "labels": pod.labels},
        "spec": {"containers": pod.containers.iter().map(|(n, i, _)| serde_json::json!({"name": n, "image": i})).collect::<Vec<_>>()},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": ready}],
            "containerStatuses": pod.containers.iter().map(|(n, i, backing)| serde_json::json!({
                "name": n, "image": i, "imageID": "", "ready": pod.ready, "restartCount": 0,
                "containerID": format!("podman://{}", podman_instance(env, backing)),
            })).collect::<Vec<_>>(),
        }
    })
}

async fn handle(
    req: Request<Incoming>,
    state: Arc<Mutex<State>>,
    env: Arc<Env>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let path: Vec<String> = req.uri().path().split('/').map(str::to_string).collect();
    let params = query(&req);
    let (forbid, pods) = {
        let s = state.lock().unwrap();
        (s.forbid, s.pods.clone())
    };
    // ["", "api", "v1", "namespaces", NS, "pods", NAME?, "exec"?]
    let ns = path.get(4).cloned().unwrap_or_default();
    if forbid {
        return Ok(json(
            StatusCode::FORBIDDEN,
            status_body(403, "Forbidden", &format!("pods is forbidden: User \"dev\" cannot list resource \"pods\" in API group \"\" in the namespace \"{ns}\"")),
        ));
    }
    match path.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["", "api", "v1", "namespaces", _, "pods"] => {
            let selector: Vec<(String, String)> = params
                .iter()
                .find(|(k, _)| k == "labelSelector")
                .map(|(_, v)| {
                    v.split(',')
                        .filter_map(|kv| kv.split_once('='))
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect()
                })
                .unwrap_or_default();
            let items: Vec<_> = pods
                .iter()
                .filter(|p| p.namespace == ns)
                .filter(|p| selector.iter().all(|(k, v)| p.labels.get(k) == Some(v)))
                .map(|p| pod_json(p, &env))
                .collect();
            Ok(json(
                StatusCode::OK,
                serde_json::json!({"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "1"}, "items": items}),
            ))
        }
        ["", "api", "v1", "namespaces", _, "pods", name] => {
            match pods.iter().find(|p| p.namespace == ns && p.name == name) {
                Some(p) => Ok(json(StatusCode::OK, pod_json(p, &env))),
                None => Ok(json(
                    StatusCode::NOT_FOUND,
                    status_body(404, "NotFound", "pods not found"),
                )),
            }
        }
        ["", "api", "v1", "namespaces", _, "pods", name, "exec"] => {
            let container = params
                .iter()
                .find(|(k, _)| k == "container")
                .map(|(_, v)| v.clone());
            let command: Vec<String> = params
                .iter()
                .filter(|(k, _)| k == "command")
                .map(|(_, v)| v.clone())
                .collect();
            let backing = pods
                .iter()
                .find(|p| p.namespace == ns && p.name == name)
                .and_then(|p| {
                    p.containers
                        .iter()
                        .find(|(n, _, _)| Some(n) == container.as_ref())
                })
                .map(|(_, _, b)| b.clone());
            let Some(backing) = backing else {
                return Ok(json(
                    StatusCode::NOT_FOUND,
                    status_body(404, "NotFound", "no such pod/container"),
                ));
            };
            let key = req
                .headers()
                .get("sec-websocket-key")
                .map(|k| derive_accept_key(k.as_bytes()));
            let Some(accept) = key else {
                return Ok(json(
                    StatusCode::BAD_REQUEST,
                    status_body(400, "BadRequest", "websocket required"),
                ));
            };
            let env = env.clone();
            tokio::spawn(async move {
                if let Ok(upgraded) = hyper::upgrade::on(req).await {
                    let ws = WebSocketStream::from_raw_socket(
                        TokioIo::new(upgraded),
                        Role::Server,
                        None,
                    )
                    .await;
                    run_exec(ws, &backing, &command, &env).await;
                }
            });
            Ok(Response::builder()
                .status(StatusCode::SWITCHING_PROTOCOLS)
                .header("upgrade", "websocket")
                .header("connection", "Upgrade")
                .header("sec-websocket-accept", accept)
                .header("sec-websocket-protocol", "v4.channel.k8s.io")
                .body(Full::new(Bytes::new()))
                .unwrap())
        }
        _ => Ok(json(
            StatusCode::NOT_FOUND,
            status_body(404, "NotFound", "unknown path"),
        )),
    }
}

async fn run_exec<S>(ws: WebSocketStream<S>, backing: &str, command: &[String], env: &Env)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sink, mut source) = ws.split();
    let mut child = tokio::process::Command::new("podman")
        .envs(env.iter().cloned())
        .arg("exec")
        .arg("-i")
        .arg(backing)
        .args(command)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(16);
    // Client -> stdin. v4 has no way to close stdin: it stays open until the command exits.
    let feed = tokio::spawn(async move {
        while let Some(Ok(message)) = source.next().await {
            if let Message::Binary(data) = message {
                if data.first() == Some(&0) {
                    let failed = match stdin.as_mut() {
                        Some(pipe) => pipe.write_all(&data[1..]).await.is_err(),
                        None => false,
                    };
                    if failed {
                        stdin = None;
                    }
                }
            }
        }
    });
    let pump = |mut reader: Box<dyn tokio::io::AsyncRead + Unpin + Send>,
                channel: u8,
                tx: tokio::sync::mpsc::Sender<Vec<u8>>| {
        tokio::spawn(async move {
            let mut buf = vec![0u8; 32 * 1024];
            loop {
                match reader.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        let mut frame = vec![channel];
                        frame.extend_from_slice(&buf[..n]);
                        if tx.send(frame).await.is_err() {
                            return;
                        }
                    }
                }
            }
        })
    };
    let out = pump(Box::new(stdout), 1, tx.clone());
    let err = pump(Box::new(stderr), 2, tx.clone());
    drop(tx);
    let writer = tokio::spawn(async move {
        while let Some(frame) = rx.recv().await {
            if sink.send(Message::binary(frame)).await.is_err() {
                break;
            }
        }
        sink
    });
    let status = child.wait().await.unwrap();
    let _ = out.await;
    let _ = err.await;
    let mut sink = writer.await.unwrap();
    let code = status.code().unwrap_or(-1);
    let body = if code == 0 {
        serde_json::json!({"metadata": {}, "status": "Success"})
    } else {
        serde_json::json!({"metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
            "message": format!("command terminated with non-zero exit code: exit status {code}"),
            "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]}})
    };
    let mut frame = vec![3u8];
    frame.extend_from_slice(body.to_string().as_bytes());
    let _ = sink.send(Message::binary(frame)).await;
    let _ = sink.close().await;
    feed.abort();
}
