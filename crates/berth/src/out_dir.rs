//! The one way berth replaces a directory of output (`berth render --out`,
//! `berth mirror --out`): every file written through berth's one writer into
//! a temporary sibling directory, which then replaces the target — so a
//! failure leaves the target as it was. Runs into the same directory at once
//! (`make -j`, a CI matrix) take turns: each holds an exclusive lock on the
//! parent directory from the check to the swap, so every run leaves a whole
//! output and no temporary directory behind. A marker file lists what berth
//! wrote; a directory holding anything else is never replaced.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};

/// Which command's output a directory is.
pub struct Kind {
    /// `berth render`, for messages and the marker.
    pub command: &'static str,
    /// The marker's file name (`.berth-render`).
    pub marker: &'static str,
    /// What `--out` takes, said when it names a file (`a directory (one file per object)`).
    pub takes: &'static str,
}

impl Kind {
    /// The marker's first line; the files berth wrote follow, one per line.
    fn header(&self) -> String {
        format!(
            "written by {}; replaced on the next run. Files:",
            self.command
        )
    }
}

/// Replaces `dir` with `files` (paths relative to it, `/`-separated).
pub fn replace(dir: &Path, kind: &Kind, files: &[(String, &[u8])]) -> Result<()> {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let lock = std::fs::File::open(&parent).map_err(|e| {
        anyhow!(
            "--out {}: cannot open its parent directory: {e}",
            dir.display()
        )
    })?;
    lock.lock().map_err(|e| {
        anyhow!(
            "--out {}: cannot lock its parent directory against another {}: {e}",
            dir.display(),
            kind.command
        )
    })?;
    let result = swap_in(dir, &parent, kind, files);
    drop(lock); // unlocks
    result
}

fn swap_in(dir: &Path, parent: &Path, kind: &Kind, files: &[(String, &[u8])]) -> Result<()> {
    check_replaceable(dir, kind)?;
    // M47 (#46): a file name no file system takes is named before anything is written (it was
    // "File name too long" on a temporary path, cut from the message).
    for (name, _) in files {
        if let Some(long) = Path::new(name).iter().find(|part| part.len() > 255) {
            let long = long.to_string_lossy();
            let shown: String = long.chars().take(60).collect();
            bail!(
                "--out {}: cannot write `{shown}…` ({} characters): its file name would be {} bytes, longer than file systems allow (255); shorten the object's `metadata.name` (the API server takes at most 253 characters)",
                dir.display(),
                long.chars().count(),
                long.len()
            );
        }
    }
    let base = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let staging = tempdir_in(parent, &format!(".{base}.berth-tmp"))?;
    let write = || -> Result<()> {
        let mut names: Vec<&str> = Vec::new();
        for (name, bytes) in files {
            write_new(&staging, name, bytes)?;
            names.push(name);
        }
        names.sort();
        let mut marker = format!("{}\n", kind.header());
        for name in names {
            marker.push_str(name);
            marker.push('\n');
        }
        write_new(&staging, kind.marker, marker.as_bytes())?;
        Ok(())
    };
    if let Err(e) = write() {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(anyhow!("cannot write {}: {e}", staging.display()));
    }
    let old = parent.join(format!(".{base}.berth-old-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&old);
    if dir.exists() {
        if let Err(e) = std::fs::rename(dir, &old) {
            let _ = std::fs::remove_dir_all(&staging); // it may hold a rendered Secret
            bail!(
                "cannot replace {}: {e}; it is left as it was",
                dir.display()
            );
        }
    }
    if let Err(e) = std::fs::rename(&staging, dir) {
        let _ = std::fs::rename(&old, dir); // put the previous output back
        let _ = std::fs::remove_dir_all(&staging);
        return Err(anyhow!(
            "cannot move the output into {}: {e}; it is left as it was",
            dir.display()
        ));
    }
    let _ = std::fs::remove_dir_all(&old);
    Ok(())
}

/// A new file in the staging directory berth just made (its directories made
/// first), through the one writer.
fn write_new(staging: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = Path::new(name)
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
    {
        std::fs::create_dir_all(staging.join(dir))?;
    }
    berth_io::write_atomic(
        staging,
        &staging.join(name),
        bytes,
        berth_io::WriteMode::CreateNew,
    )
    .map_err(std::io::Error::other)
}

/// `dir` may be replaced: it does not exist, is empty, or holds only what the last
/// run of the same command wrote there (its marker lists the files). A file the
/// user added would be lost with the old output, so it stops the command instead.
fn check_replaceable(dir: &Path, kind: &Kind) -> Result<()> {
    let shown = dir.display();
    let metadata = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => bail!("--out {shown}: {e}"),
    };
    if !metadata.is_dir() {
        bail!(
            "--out {shown}: it exists and is not a directory; --out takes {}",
            kind.takes
        );
    }
    let entries: Vec<String> = std::fs::read_dir(dir)
        .and_then(|it| {
            it.map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
                .collect()
        })
        .map_err(|e| anyhow!("--out {shown}: cannot list it: {e}"))?;
    if entries.is_empty() {
        return Ok(());
    }
    let marker = match std::fs::read_to_string(dir.join(kind.marker)) {
        Ok(text) => text,
        Err(_) => bail!(
            "--out {shown}: the directory exists, is not empty and was not written by {}; \
             remove it or choose another directory",
            kind.command
        ),
    };
    let mut lines = marker.lines();
    if lines.next() != Some(kind.header().as_str()) {
        // A marker of an earlier berth, which did not list its files.
        return Ok(());
    }
    // What berth wrote, by the entry of `dir` it is under (`openshift/x.yaml`: `openshift`).
    let written: std::collections::HashSet<&str> = lines
        .map(|line| line.split('/').next().unwrap_or(line))
        .collect();
    let mut foreign: Vec<&String> = entries
        .iter()
        .filter(|name| name.as_str() != kind.marker && !written.contains(name.as_str()))
        .collect();
    if foreign.is_empty() {
        return Ok(());
    }
    foreign.sort();
    let more = foreign.len().saturating_sub(5);
    let listed: Vec<String> = foreign.iter().take(5).map(|n| format!("`{n}`")).collect();
    bail!(
        "--out {shown}: it holds {}{} that {} did not write, and replacing the directory would delete {}; move {} elsewhere, or choose another directory",
        listed.join(", "),
        if more > 0 { format!(" and {more} more") } else { String::new() },
        kind.command,
        if foreign.len() == 1 { "it" } else { "them" },
        if foreign.len() == 1 { "it" } else { "them" },
    )
}

fn tempdir_in(parent: &Path, prefix: &str) -> Result<PathBuf> {
    for attempt in 0..100u32 {
        let candidate = parent.join(format!("{prefix}-{}-{attempt}", std::process::id()));
        match std::fs::create_dir(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(anyhow!(
                    "cannot create a directory in {}: {e}",
                    parent.display()
                ))
            }
        }
    }
    bail!(
        "cannot create a temporary directory in {}",
        parent.display()
    )
}
