//! `berth render`: manifests in, manifests out.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};
use berth_core::render::{ObjectInfo, Rendered};
use berth_core::{Project, Resolution};

use crate::output::print;
use crate::pipeline;
use crate::settings::RenderCommand;

/// Marks a directory written by `berth render --out`, so berth replaces only its own output.
const MARKER: &str = ".berth-render";

pub fn run(command: &RenderCommand, project: &Project, resolution: &Resolution<'_>) -> Result<()> {
    let rendered = pipeline::render(&command.render, project, resolution)?;
    pipeline::print_warnings(project, rendered.warnings);
    match &command.out {
        None => print(&rendered.rendered.yaml),
        Some(dir) => write_dir(dir, &rendered.rendered),
    }
}

/// One file per object, written to a temporary sibling directory that then
/// replaces `dir` — so a failure leaves `dir` as it was. Renders into the same
/// directory at once (`make -j`, a CI matrix) take turns: each holds an
/// exclusive lock on the parent directory from the check to the swap, so every
/// run leaves a whole output and no temporary directory behind.
fn write_dir(dir: &Path, rendered: &Rendered) -> Result<()> {
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
            "--out {}: cannot lock its parent directory against another berth render: {e}",
            dir.display()
        )
    })?;
    let result = swap_in(dir, &parent, rendered);
    drop(lock); // unlocks
    result
}

fn swap_in(dir: &Path, parent: &Path, rendered: &Rendered) -> Result<()> {
    check_replaceable(dir)?;
    let base = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let staging = tempdir_in(parent, &format!(".{base}.berth-tmp"))?;
    let write = || -> Result<()> {
        let mut used = std::collections::HashSet::new();
        for (i, object) in rendered.objects.iter().enumerate() {
            let mut name = file_name(i, object);
            while !used.insert(name.clone()) {
                name = format!("{}-{i}.yaml", name.trim_end_matches(".yaml"));
            }
            let bytes = rendered.yaml[object.range.clone()].as_bytes();
            write_new(&staging, &name, bytes)?;
        }
        let mut names: Vec<&String> = used.iter().collect();
        names.sort();
        let mut marker = format!("{MARKER_HEADER}\n");
        for name in names {
            marker.push_str(name);
            marker.push('\n');
        }
        write_new(&staging, MARKER, marker.as_bytes())?;
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

/// A new file in the staging directory berth just made, through the one writer.
fn write_new(staging: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    berth_io::write_atomic(
        staging,
        &staging.join(name),
        bytes,
        berth_io::WriteMode::CreateNew,
    )
    .map_err(std::io::Error::other)
}

/// The marker's first line; the files berth wrote follow, one per line.
const MARKER_HEADER: &str = "written by berth render; replaced on the next run. Files:";

/// `dir` may be replaced: it does not exist, is empty, or holds only what the last
/// `berth render --out` wrote there (its marker lists the files). A file the user
/// added would be lost with the old output, so it stops the render instead.
fn check_replaceable(dir: &Path) -> Result<()> {
    let shown = dir.display();
    let metadata = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => bail!("--out {shown}: {e}"),
    };
    if !metadata.is_dir() {
        bail!("--out {shown}: it exists and is not a directory; --out takes a directory (one file per object); to get one file, redirect stdout");
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
    let marker = match std::fs::read_to_string(dir.join(MARKER)) {
        Ok(text) => text,
        Err(_) => bail!(
            "--out {shown}: the directory exists, is not empty and was not written by berth render; \
             remove it or choose another directory"
        ),
    };
    let mut lines = marker.lines();
    if lines.next() != Some(MARKER_HEADER) {
        // A marker of an earlier berth, which did not list its files.
        return Ok(());
    }
    let written: std::collections::HashSet<&str> = lines.collect();
    let mut foreign: Vec<&String> = entries
        .iter()
        .filter(|name| name.as_str() != MARKER && !written.contains(name.as_str()))
        .collect();
    if foreign.is_empty() {
        return Ok(());
    }
    foreign.sort();
    let more = foreign.len().saturating_sub(5);
    let listed: Vec<String> = foreign.iter().take(5).map(|n| format!("`{n}`")).collect();
    bail!(
        "--out {shown}: it holds {}{} that berth render did not write, and replacing the directory would delete {}; move {} elsewhere, or choose another directory",
        listed.join(", "),
        if more > 0 { format!(" and {more} more") } else { String::new() },
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

/// `0001-deployment-web.yaml`, `0002-service-ns-web.yaml`: stream order kept,
/// so `kubectl apply -f DIR` applies in the same order.
fn file_name(index: usize, object: &ObjectInfo) -> String {
    let mut parts = vec![
        format!("{:04}", index + 1),
        object.kind.to_ascii_lowercase(),
    ];
    parts.extend(object.namespace.iter().cloned());
    parts.extend(object.name.iter().cloned());
    let joined = parts.join("-");
    let safe: String = joined
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{safe}.yaml")
}
