//! A helper program run with a deadline and a bound on what it prints:
//! credential helpers and kubeconfig exec plugins wait for keychains, GPG
//! agents and browsers, and a broken one may print forever.

use std::io::{Read, Write};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What a finished program gave back.
#[derive(Debug)]
pub struct RunOutput {
    /// How it exited.
    pub status: ExitStatus,
    /// Standard output (a credential: never show it).
    pub stdout: Vec<u8>,
    /// Standard error.
    pub stderr: Vec<u8>,
}

/// Why a program gave no output.
#[derive(Debug)]
pub enum RunError {
    /// It could not be started (not installed, not executable).
    Spawn(std::io::Error),
    /// It did not finish in time; it was killed.
    TimedOut(Duration),
    /// It printed more than the bound on one stream; it was killed.
    TooMuchOutput {
        /// `stdout` or `stderr`.
        stream: &'static str,
        /// The bound, in bytes.
        limit: u64,
    },
    /// Talking to it failed.
    Io(std::io::Error),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Spawn(e) => write!(f, "cannot run it: {e}"),
            RunError::TimedOut(after) => write!(
                f,
                "it did not finish within {} s and was stopped (is it waiting for a password, a keychain or a browser?)",
                after.as_secs().max(1)
            ),
            RunError::TooMuchOutput { stream, limit } => write!(
                f,
                "it printed more than {} on {stream} and was stopped",
                crate::limits::size(*limit)
            ),
            RunError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RunError::Spawn(e) | RunError::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// Runs `command` with `stdin` as its input, for at most `timeout`, keeping at
/// most `limit` bytes of each output stream. Its own stdin, stdout and stderr
/// are replaced by pipes (a helper never talks to the terminal).
pub fn run(
    command: &mut Command,
    stdin: &[u8],
    timeout: Duration,
    limit: u64,
) -> Result<RunOutput, RunError> {
    let deadline = Instant::now() + timeout;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(RunError::Spawn)?;
    // Written from a thread: a program that never reads must not block us.
    if let Some(mut pipe) = child.stdin.take() {
        let input = stdin.to_vec();
        std::thread::spawn(move || {
            let _ = pipe.write_all(&input); // a program may exit without reading
        });
    }
    let (sender, streams) = mpsc::channel();
    for (name, pipe) in [
        (
            "stdout",
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        ),
        (
            "stderr",
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        ),
    ] {
        let Some(pipe) = pipe else { continue };
        let sender = sender.clone();
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let read = pipe.take(limit.saturating_add(1)).read_to_end(&mut bytes);
            let _ = sender.send((name, read.map(|_| bytes)));
        });
    }
    drop(sender);
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let mut failure = None;
    // Both streams end when the program exits (or closes them), or one overflows.
    for _ in 0..2 {
        let left = deadline.saturating_duration_since(Instant::now());
        match streams.recv_timeout(left) {
            Ok((name, Ok(bytes))) if bytes.len() as u64 > limit => {
                failure = Some(RunError::TooMuchOutput {
                    stream: name,
                    limit,
                });
                break;
            }
            Ok(("stdout", Ok(bytes))) => stdout = bytes,
            Ok((_, Ok(bytes))) => stderr = bytes,
            Ok((_, Err(e))) => {
                failure = Some(RunError::Io(e));
                break;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                failure = Some(RunError::TimedOut(timeout));
                break;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    if let Some(failure) = failure {
        let _ = child.kill();
        let _ = child.wait();
        return Err(failure);
    }
    loop {
        if let Some(status) = child.try_wait().map_err(RunError::Io)? {
            return Ok(RunOutput {
                status,
                stdout,
                stderr,
            });
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(RunError::TimedOut(timeout));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script]);
        c
    }

    #[test]
    fn output_status_and_input_come_back() {
        let out = run(
            &mut sh("cat; echo err >&2; exit 3"),
            b"in",
            Duration::from_secs(10),
            1024,
        )
        .unwrap();
        assert_eq!(out.stdout, b"in");
        assert_eq!(out.stderr, b"err\n");
        assert_eq!(out.status.code(), Some(3));
    }

    #[test]
    fn a_program_that_never_ends_is_stopped_at_the_deadline() {
        // Streams open, then streams closed with the program still running.
        for script in ["exec sleep 3600", "exec >&- 2>&-; exec sleep 3600"] {
            let started = Instant::now();
            let err = run(&mut sh(script), b"", Duration::from_millis(300), 1024).unwrap_err();
            assert!(matches!(err, RunError::TimedOut(_)), "{script}: {err}");
            assert!(started.elapsed() < Duration::from_secs(5), "{script}");
        }
    }

    #[test]
    fn a_program_that_prints_forever_is_stopped_at_the_bound() {
        let err = run(&mut sh("exec yes"), b"", Duration::from_secs(20), 4096).unwrap_err();
        assert_eq!(
            err.to_string(),
            "it printed more than 4 KiB on stdout and was stopped"
        );
    }

    #[test]
    fn a_missing_program_is_a_spawn_error() {
        let err = run(
            &mut Command::new("berth-no-such-program"),
            b"",
            Duration::from_secs(1),
            1,
        )
        .unwrap_err();
        assert!(matches!(err, RunError::Spawn(_)), "{err}");
    }
}
