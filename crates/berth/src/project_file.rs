//! Finding and reading berth.yaml: the file-system edge of the project model.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use berth_core::project::{self, PROJECT_FILE};
use berth_core::Project;

/// Loads `--project FILE`, or the nearest `berth.yaml` upward from the current directory.
pub fn load(explicit: Option<&Path>) -> Result<Project> {
    let cwd =
        std::env::current_dir().map_err(|e| anyhow!("cannot read the current directory: {e}"))?;
    let (path, shown) = match explicit {
        Some(path) => (path.to_path_buf(), path.display().to_string()),
        None => discover(&cwd)?,
    };
    // `--project <(…)` may be a pipe; a discovered berth.yaml must be a file.
    let read = if explicit.is_some() {
        crate::fs_source::read_given
    } else {
        crate::fs_source::read_bounded
    };
    let src = read_text(&path, read).map_err(|e| {
        // P22 (#46): a link whose target is missing is no "No such file" of berth.yaml itself.
        match std::fs::read_link(&path) {
            Ok(target) if !path.exists() => anyhow!(
                "{shown} is a symbolic link to `{}`, which does not exist",
                target.display()
            ),
            _ => anyhow!("cannot read {shown}: {e}"),
        }
    })?;
    let absolute = if path.is_absolute() {
        path.clone()
    } else {
        cwd.join(&path)
    };
    let dir = absolute.parent().map(Path::to_path_buf).unwrap_or(cwd);
    Ok(project::parse(&shown, dir, &src)?)
}

/// A text file, bounded and regular (`--project /dev/zero` must not fill memory).
fn read_text(path: &Path, read: fn(&Path) -> std::io::Result<Vec<u8>>) -> std::io::Result<String> {
    let bytes = read(path)?;
    String::from_utf8(bytes).map_err(|e| {
        std::io::Error::other(format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

fn discover(cwd: &Path) -> Result<(PathBuf, String)> {
    for dir in cwd.ancestors() {
        let candidate = dir.join(PROJECT_FILE);
        // Anything named berth.yaml stops the search: a directory, a FIFO or a
        // symlink loop there is reported by the read, not skipped for a parent's file.
        if std::fs::symlink_metadata(&candidate).is_ok() {
            let shown = match candidate.strip_prefix(cwd) {
                Ok(relative) => relative.display().to_string(),
                Err(_) => candidate.display().to_string(),
            };
            return Ok((candidate, shown));
        }
    }
    Err(anyhow!(
        "no {PROJECT_FILE} in {} or any parent directory; run `berth init` to write a first one, or pass --project FILE",
        cwd.display()
    ))
}

/// berth.lock next to berth.yaml, for `--locked`.
pub fn load_lock(project: &Project) -> Result<berth_core::lock::Lock> {
    use berth_core::lock::{Lock, LOCK_FILE};
    let path = project.dir.join(LOCK_FILE);
    let text = match read_text(&path, crate::fs_source::read_bounded) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(anyhow!(
                "--locked needs {} next to {}; run `berth pin` first",
                LOCK_FILE,
                project.file
            ))
        }
        Err(e) => return Err(anyhow!("cannot read {}: {e}", path.display())),
    };
    Ok(Lock::parse(&path.display().to_string(), &text)?)
}

/// The Makefile make would read in the project's directory
/// (GNUmakefile, makefile, Makefile: make's order) and of the files it includes
/// by a literal path, inside the project; a file that cannot be read is left out.
/// An include as the files it names: itself, or for a `*` in its file name (`mk/*.mk`, as
/// `include $(wildcard mk/*.mk)` writes it too) the matching files in that directory, in
/// name order as make's wildcard sorts them (#46 item 9).
pub(crate) fn matching(dir: &Path, include: &str) -> Vec<String> {
    let (parent, pattern) = include.rsplit_once('/').unwrap_or(("", include));
    let Some((head, tail)) = pattern.split_once('*') else {
        return vec![include.to_string()];
    };
    if parent.contains('*') || tail.contains('*') {
        return Vec::new();
    }
    let mut names: Vec<String> = std::fs::read_dir(dir.join(parent))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with(head) && n.ends_with(tail) && n.len() >= head.len() + tail.len())
        .map(|n| {
            if parent.is_empty() {
                n
            } else {
                format!("{parent}/{n}")
            }
        })
        .collect();
    names.sort();
    names
}

pub fn makefiles(project: &Project) -> berth_make::Makefiles {
    let Some(first) = ["GNUmakefile", "makefile", "Makefile"]
        .into_iter()
        .find(|name| project.dir.join(name).is_file())
    else {
        return berth_make::Makefiles::default();
    };
    let mut files = berth_make::Makefiles::default();
    // In the order make reads them (an include's `?=` before a later line's).
    let mut queue = std::collections::VecDeque::from([first.to_string()]);
    let mut seen = Vec::new();
    while let Some(name) = queue.pop_front() {
        if seen.contains(&name) || seen.len() > 64 {
            continue;
        }
        seen.push(name.clone());
        let path = project.dir.join(&name);
        // Only files inside the project, as every file berth reads.
        if crate::fs_source::contained(&project.dir, &path).is_err() {
            continue;
        }
        let Ok(text) = crate::fs_source::read_bounded(&path).map(String::from_utf8) else {
            continue;
        };
        let Ok(text) = text else { continue };
        // berth's own answer (`berth images --output make > .berth-images.mk`, then
        // `include .berth-images.mk`) is no default of the Makefile's.
        let generated = |include: &String| {
            include.contains("berth")
                || text
                    .lines()
                    .any(|l| l.contains("berth") && l.contains(&format!("> {include}")))
        };
        let included = berth_make::includes(&text);
        queue.extend(
            (included.into_iter())
                .filter(|i| !generated(i))
                .flat_map(|i| matching(&project.dir, &i)),
        );
        files.add(&name, &text);
    }
    files
}
