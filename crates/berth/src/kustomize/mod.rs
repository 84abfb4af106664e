//! The one way berth runs `kubectl kustomize` (render, validate and init alike):
//! one deadline, one bound on its output, one reading of its errors, and a cache
//! of its output keyed by everything the build reads ([`cache`]), so a tree of
//! overlays whose inputs did not change is not built again (KServe's sixteen
//! builds cost 38 s of kubectl; #46 item 6).

mod cache;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub use cache::Fingerprint;

/// How long one `kubectl kustomize` may take (remote bases are fetched).
pub const TIMEOUT: Duration = Duration::from_secs(120);

/// The kubectl that builds: `BERTH_KUBECTL` when set and not empty, else
/// `kubectl` on PATH (as `BERTH_HELM` names helm).
pub fn kubectl() -> PathBuf {
    berth_io::env::var_os("BERTH_KUBECTL")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("kubectl"), PathBuf::from)
}

/// Why a build gave no output.
#[derive(Debug)]
pub enum Failure {
    /// kubectl is not on PATH (or `BERTH_KUBECTL` names no program).
    NoKubectl,
    /// kubectl ran and refused the kustomization: its message, log prefix removed.
    Refused(String),
    /// kubectl could not be run to the end (the deadline, the output bound, a signal).
    Run(berth_io::RunError),
}

pub use berth_core::kustomization::{is_file_name, Kustomization, FILE_NAMES};

/// Whether `dir` holds a kustomization file.
pub fn is_kustomization(dir: &Path) -> bool {
    FILE_NAMES.iter().any(|name| dir.join(name).is_file())
}

/// The kustomization file of `dir` and what it says, when there is one that
/// reads (bounded) and parses.
pub fn read_kustomization(dir: &Path) -> Option<(PathBuf, Kustomization)> {
    let (file, text) = FILE_NAMES.iter().find_map(|name| {
        let path = dir.join(name);
        let bytes = crate::fs_source::read_bounded(&path).ok()?;
        Some((path, String::from_utf8(bytes).ok()?))
    })?;
    Some((file, Kustomization::parse(&text).ok()?))
}

/// `kubectl kustomize DIR`'s output: from the cache when every input is as it
/// was when that output was made, else built (and kept when the build succeeds).
pub fn build(dir: &Path) -> Result<Vec<u8>, Failure> {
    let fingerprint = cache::enabled().then(|| Fingerprint::of(dir)).flatten();
    if let Some(output) = fingerprint.as_ref().and_then(cache::load) {
        return Ok(output);
    }
    let mut command = Command::new(kubectl());
    command.arg("kustomize").arg(dir);
    let output = berth_io::run(&mut command, b"", TIMEOUT, crate::fs_source::MAX_FILE).map_err(
        |e| match e {
            berth_io::RunError::Spawn(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Failure::NoKubectl
            }
            e => Failure::Run(e),
        },
    )?;
    if !output.status.success() {
        return Err(Failure::Refused(kubectl_error(&String::from_utf8_lossy(
            &output.stderr,
        ))));
    }
    if let Some(fingerprint) = &fingerprint {
        cache::store(fingerprint, &output.stdout);
    }
    Ok(output.stdout)
}

/// kubectl's message without its log prefix: `E1201 12:00:00.0 1 run.go:72]
/// "command failed" err="…"` says only the quoted part to a user.
pub fn kubectl_error(stderr: &str) -> String {
    let stderr = stderr.trim();
    // The multi-line form: `"command failed" err=<` then tab-indented lines, then ` >`.
    if let Some((_, rest)) = stderr.split_once("\"command failed\" err=<") {
        let lines: Vec<&str> = rest
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && *l != ">")
            .collect();
        return lines.join(" ");
    }
    match stderr.split_once("\"command failed\" err=\"") {
        Some((_, rest)) if !stderr.contains('\n') => rest
            .strip_suffix('"')
            .unwrap_or(rest)
            .replace("\\\"", "\"")
            .replace("\\\\", "\\"),
        // kubectl's plain form (no log prefix): its own `error: ` goes, as berth says error once.
        _ => stderr.strip_prefix("error: ").unwrap_or(stderr).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::kubectl_error;

    #[test]
    fn kubectl_errors_lose_the_log_prefix_and_quoting() {
        let stderr = "E1201 12:54:55.262499   14856 run.go:72] \"command failed\" err=\"accumulating resources from 'nope.yaml': \\\"x\\\"\"\n";
        assert_eq!(
            kubectl_error(stderr),
            "accumulating resources from 'nope.yaml': \"x\""
        );
        assert_eq!(kubectl_error("plain text\n"), "plain text");
        let multi = "E1204 17:40:14.33 18470 run.go:72] \"command failed\" err=<\n\taccumulating resources: no such host\n\t: exit status 128\n >\n";
        assert_eq!(
            kubectl_error(multi),
            "accumulating resources: no such host : exit status 128"
        );
        assert_eq!(kubectl_error("two\nlines"), "two\nlines");
    }
}
