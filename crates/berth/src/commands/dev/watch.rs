//! Which local changes `berth dev` acts on, and how: a change under a sync
//! rule's source is synced; a change of what the render reads (berth.yaml,
//! manifests, config and CA sources), or of any other file of the project
//! that git does not ignore, renders again — and applies only when the output
//! changed, so an unrelated edit costs one render and nothing in the cluster.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use berth_core::ManifestSource;
use berth_core::Project;
use berth_sync::watch::{Batch, Watcher};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use tokio::sync::mpsc;

/// What a batch of changes asks for.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Wanted {
    /// Paths to hand to the sync session (it keeps those its rules cover).
    pub sync: BTreeSet<PathBuf>,
    /// Render again.
    pub render: bool,
}

/// The project's inputs, for sorting changes.
pub struct Inputs {
    dir: PathBuf,
    /// What the render reads: files, and directories read whole.
    render: Vec<PathBuf>,
    /// Sync rules' local sources (directories and files).
    sync: Vec<PathBuf>,
    ignored: Gitignore,
}

/// A `files:` entry is `path` or `key=path`.
fn file_of(entry: &str) -> &str {
    entry.split_once('=').map_or(entry, |(_, path)| path)
}

impl Inputs {
    /// From berth.yaml, the manifests the render reads (`manifests`, given on the
    /// command line or chosen by profile) and the sync rules' watch roots.
    pub fn new(
        project: &Project,
        project_file: &Path,
        manifests: &[berth_core::Manifest],
        paths: &[String],
        sync_roots: &[(PathBuf, bool)],
    ) -> Inputs {
        let dir = project.dir.clone();
        let mut render = vec![project_file.to_path_buf()];
        for manifest in manifests {
            match &manifest.source {
                ManifestSource::Path(path) | ManifestSource::Kustomize(path) => {
                    render.push(dir.join(path));
                }
                // A local chart's templates and every values file render again on an edit.
                ManifestSource::Helm(chart) => {
                    if chart.is_local() {
                        render.push(dir.join(&chart.chart));
                    }
                    render.extend(chart.values.iter().map(|v| dir.join(&v.value)));
                }
                ManifestSource::Stdin => {}
            }
        }
        render.extend(paths.iter().map(PathBuf::from));
        for config in &project.configs {
            render.extend(config.files.iter().map(|f| dir.join(file_of(&f.value))));
            render.extend(config.envs.iter().map(|f| dir.join(&f.value)));
            render.extend(config.schema.iter().map(|f| dir.join(&f.value)));
        }
        for bundle in &project.ca_bundles {
            render.extend(bundle.sources.iter().map(|s| dir.join(&s.value)));
        }
        let mut builder = GitignoreBuilder::new(&dir);
        // A missing .gitignore is no error; a malformed line is skipped, as git does.
        let _ = builder.add(dir.join(".gitignore"));
        let ignored = builder.build().unwrap_or_else(|_| Gitignore::empty());
        Inputs {
            sync: sync_roots
                .iter()
                .filter(|(root, _)| *root != dir)
                .map(|(root, _)| root.clone())
                .collect(),
            dir,
            render,
            ignored,
        }
    }

    /// What `batch` asks for.
    pub fn sort(&self, batch: &Batch) -> Wanted {
        let mut wanted = Wanted {
            sync: batch.paths.clone(),
            render: batch.rescan,
        };
        for path in &batch.paths {
            if self.render.iter().any(|input| path.starts_with(input)) {
                wanted.render = true;
                continue;
            }
            let synced = self.sync.iter().any(|root| path.starts_with(root));
            let in_git = path.strip_prefix(&self.dir).is_ok_and(|rel| {
                !rel.starts_with(".git")
                    && !self
                        .ignored
                        .matched_path_or_any_parents(path, path.is_dir())
                        .is_ignore()
            });
            wanted.render |= !synced && in_git;
        }
        wanted
    }

    /// The directories to watch: the project directory itself, each of its
    /// subdirectories that git does not ignore (recursively: `target/` or
    /// `node_modules/` cost no watches), and the sync rules' roots.
    pub fn roots(&self, sync_roots: &[(PathBuf, bool)]) -> Vec<(PathBuf, bool)> {
        let mut roots = BTreeSet::from([(self.dir.clone(), false)]);
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for entry in entries.flatten() {
                let path = entry.path();
                let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                if is_dir
                    && entry.file_name() != ".git"
                    && !self.ignored.matched(&path, true).is_ignore()
                {
                    roots.insert((path, true));
                }
            }
        }
        roots.extend(sync_roots.iter().cloned());
        // A root inside a recursive one (or the same directory) is watched already.
        let recursive: Vec<PathBuf> = roots
            .iter()
            .filter(|(_, r)| *r)
            .map(|(p, _)| p.clone())
            .collect();
        roots
            .into_iter()
            .filter(|(p, r)| {
                !recursive
                    .iter()
                    .any(|under| (p != under || !r) && p.starts_with(under))
            })
            .collect()
    }
}

/// A thread that watches `roots` and sends each batch of changes until
/// `stop` is set or nothing receives any more (both end it with `Ok`). A
/// watcher that fails, or panics, ends it with why: the dev loop reports that
/// and stops, instead of no longer seeing edits without a word.
pub fn spawn(
    roots: &[(PathBuf, bool)],
    batches: mpsc::Sender<Batch>,
    stop: Arc<AtomicBool>,
) -> Result<std::thread::JoinHandle<Result<(), String>>, berth_sync::SyncError> {
    let watcher = Watcher::new(roots)?;
    Ok(std::thread::spawn(move || {
        let watched = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            watch_until_stopped(&watcher, &batches, &stop)
        }));
        match watched {
            Ok(result) => result,
            Err(panic) => Err(super::panic_message(panic.as_ref())),
        }
    }))
}

fn watch_until_stopped(
    watcher: &Watcher,
    batches: &mpsc::Sender<Batch>,
    stop: &AtomicBool,
) -> Result<(), String> {
    while !stop.load(Ordering::Relaxed) {
        let batch = watcher
            .next_batch(Duration::from_millis(200))
            .map_err(|e| e.to_string())?;
        if batch.paths.is_empty() && !batch.rescan {
            continue;
        }
        // Debug builds only: the test of a part that dies (tests/it/dev.rs).
        #[cfg(debug_assertions)]
        if berth_io::env::var_os("BERTH_DEV_FAULT").is_some_and(|v| v == "watch") {
            panic!("BERTH_DEV_FAULT=watch asked the file watcher to fail");
        }
        if batches.blocking_send(batch).is_err() {
            return Ok(()); // the loop ended
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_sorted_into_sync_and_render() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(".gitignore"), "bin/\ntarget/\n").unwrap();
        for sub in ["deploy", "bin", "target", "src", "docs"] {
            std::fs::create_dir(root.join(sub)).unwrap();
        }
        let project = berth_core::project::parse(
            "berth.yaml",
            root.to_path_buf(),
            "name: x\nmanifests: [deploy/]\nconfigs:\n  c: {files: [\"k=conf/app.yaml\"]}\n",
        )
        .unwrap();
        let sync_roots = vec![(root.join("bin"), true), (root.to_path_buf(), true)];
        let inputs = Inputs::new(
            &project,
            &root.join("berth.yaml"),
            &project.manifests,
            &[],
            &sync_roots,
        );
        let sort = |paths: &[&str]| {
            let batch = Batch {
                paths: paths.iter().map(|p| root.join(p)).collect(),
                rescan: false,
            };
            inputs.sort(&batch).render
        };
        assert!(sort(&["berth.yaml"]), "berth.yaml");
        assert!(sort(&["deploy/web.yaml"]), "a manifest");
        assert!(sort(&["conf/app.yaml"]), "a config file");
        assert!(
            !sort(&["bin/server"]),
            "a sync source (ignored by git, too)"
        );
        assert!(!sort(&["target/debug/x"]), "ignored by git");
        assert!(!sort(&[".git/index"]), "git's own files");
        assert!(
            sort(&["docs/new.yaml"]),
            "anything else git sees: render and compare"
        );
        let roots = inputs.roots(&sync_roots);
        assert_eq!(
            roots,
            [(root.to_path_buf(), true)],
            "inside a recursive root"
        );
        let project_only = inputs.roots(&[]);
        let names: Vec<String> = project_only
            .iter()
            .map(|(p, r)| {
                format!(
                    "{}{}",
                    p.strip_prefix(root).unwrap().display(),
                    if *r { "/" } else { "" }
                )
            })
            .collect();
        assert_eq!(names, ["", "deploy/", "docs/", "src/"]);
    }
}
