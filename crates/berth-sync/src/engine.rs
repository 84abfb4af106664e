//! Local containers through the podman or docker CLI.
//!
//! The CLI is the stable interface both engines share (and it honours the
//! user's configuration: `CONTAINERS_CONF`, rootless storage, `DOCKER_HOST`,
//! contexts), so berth drives it rather than a socket API.

use std::io::{Read, Write};
use std::process::{Command, Stdio};

use crate::error::SyncError;
use crate::protocol::ExecOutput;
use crate::protocol::FrameOutput;
use crate::target::{Container, Input, Shell, Target};

/// A `podman exec -i CONTAINER sh -c SESSION_SCRIPT` kept open while watching.
struct EngineShell {
    child: std::process::Child,
    stdin: std::io::BufWriter<std::process::ChildStdin>,
    stdout: std::process::ChildStdout,
}

impl Shell for EngineShell {
    fn update(&mut self, input: Input<'_>) -> Result<ExecOutput, SyncError> {
        let gone = |e: std::io::Error| SyncError::Io {
            path: "<container shell>".into(),
            source: e,
        };
        input(&mut self.stdin)
            .and_then(|()| self.stdin.flush())
            .map_err(gone)?;
        let mut frame = FrameOutput::default();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = self.stdout.read(&mut buf).map_err(gone)?;
            if n == 0 {
                return Err(gone(std::io::ErrorKind::UnexpectedEof.into()));
            }
            if let Some(output) = frame.feed(&buf[..n]) {
                return Ok(output);
            }
        }
    }
}

impl Drop for EngineShell {
    fn drop(&mut self) {
        // Closing stdin ends the shell's read loop; kill covers a hung step.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// podman or docker.
#[derive(Debug, Clone)]
pub struct Engine {
    program: String,
}

impl Engine {
    /// An engine driven by `program` (`podman`, `docker`, or a path to either).
    pub fn new(program: impl Into<String>) -> Self {
        Engine {
            program: program.into(),
        }
    }

    /// The first of podman and docker that is installed and answers, for `--engine auto`.
    pub fn detect() -> Option<Self> {
        ["podman", "docker"].into_iter().map(Engine::new).find(|e| {
            Command::new(&e.program)
                .args(["ps", "-q"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.stdin(Stdio::null());
        cmd
    }

    /// `ENGINE exec -i ID ARGV…` with stdin and stdout piped.
    fn exec_command(&self, container: &Container, argv: &[String], stderr: Stdio) -> Command {
        let mut cmd = self.command();
        cmd.args(["exec", "-i", &container.id])
            .args(argv)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr);
        cmd
    }

    fn engine_error(&self, message: impl Into<String>) -> SyncError {
        SyncError::Engine {
            engine: self.program.clone(),
            message: message.into(),
        }
    }

    fn run(&self, args: &[&str]) -> Result<String, SyncError> {
        let out = self.command().args(args).output().map_err(|e| {
            self.engine_error(if e.kind() == std::io::ErrorKind::NotFound {
                format!("`{}` is not installed or not on PATH; install it or pick another engine with --engine", self.program)
            } else {
                format!("cannot run `{}`: {e}", self.program)
            })
        })?;
        if !out.status.success() {
            return Err(self.engine_error(format!(
                "`{} {}` failed: {}; is the engine running and reachable?",
                self.program,
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

impl Target for Engine {
    fn describe(&self) -> String {
        self.program.clone()
    }

    fn list(&self) -> Result<Vec<Container>, SyncError> {
        let ids = self.run(&["ps", "-q", "--no-trunc"])?;
        let ids: Vec<&str> = ids.split_whitespace().collect();
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut args = vec![
            "inspect",
            "--format",
            "{{.Id}}\t{{.Name}}\t{{.Config.Image}}\t{{.State.StartedAt}}\t{{.RestartCount}}",
        ];
        args.extend(&ids);
        let mut out = Vec::new();
        // A container that stopped between `ps` and `inspect` makes inspect fail; list again then.
        let text = match self.run(&args) {
            Ok(text) => text,
            Err(_) => self.run(&args).unwrap_or_default(),
        };
        for line in text.lines() {
            let fields: Vec<&str> = line.split('\t').collect();
            let [id, name, image, started, restarts] = fields[..] else {
                continue;
            };
            let name = name.trim_start_matches('/');
            out.push(Container {
                id: id.to_string(),
                name: name.to_string(),
                image: image.to_string(),
                instance: format!("{id}/{started}/{restarts}"),
                label: format!("{}:{name}", self.program),
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    fn exec(
        &self,
        container: &Container,
        argv: &[String],
        input: Input<'_>,
    ) -> Result<ExecOutput, SyncError> {
        let mut child = self
            .exec_command(container, argv, Stdio::piped())
            .spawn()
            .map_err(|e| self.engine_error(format!("cannot run `{}`: {e}", self.program)))?;
        let (Some(mut stdin), Some(mut stdout), Some(mut stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(self.engine_error("exec started without pipes"));
        };
        // Drain output concurrently: a step that prints a lot must not block the stream.
        let out_thread = std::thread::spawn(move || {
            let mut buf = Vec::new();
            stdout.read_to_end(&mut buf).map(|_| buf)
        });
        let err_thread = std::thread::spawn(move || {
            let mut buf = Vec::new();
            stderr.read_to_end(&mut buf).map(|_| buf)
        });
        let fed = input(&mut stdin).and_then(|()| stdin.flush());
        drop(stdin);
        let status = child
            .wait()
            .map_err(|e| self.engine_error(format!("waiting for exec: {e}")))?;
        let stdout = out_thread
            .join()
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        let stderr = err_thread
            .join()
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        match fed {
            // The script exited early (it says why on stderr); the status tells.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            Err(e) => return Err(SyncError::io("<update stream>")(e)),
            Ok(()) => {}
        }
        Ok(ExecOutput {
            status: status.code().unwrap_or(-1),
            stdout,
            stderr,
        })
    }

    fn open_shell(
        &self,
        container: &Container,
        argv: &[String],
    ) -> Option<Result<Box<dyn Shell>, SyncError>> {
        let spawned = self.exec_command(container, argv, Stdio::null()).spawn();
        Some(match spawned {
            Ok(mut child) => match (child.stdin.take(), child.stdout.take()) {
                (Some(stdin), Some(stdout)) => Ok(Box::new(EngineShell {
                    child,
                    stdin: std::io::BufWriter::new(stdin),
                    stdout,
                }) as Box<dyn Shell>),
                _ => Err(self.engine_error("exec started without pipes")),
            },
            Err(e) => Err(self.engine_error(format!("cannot run `{}`: {e}", self.program))),
        })
    }

    fn fallback_hint(&self) -> String {
        format!(
            "add it to the image (busybox provides sh, tar, find and sha256sum), or copy files without it using `{} cp LOCAL CONTAINER:PATH`",
            self.program
        )
    }
}
