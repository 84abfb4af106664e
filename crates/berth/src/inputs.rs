//! Reading render inputs: files, directories, stdin, `kubectl kustomize` and
//! `helm template`.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};
use berth_core::place::File;
use berth_core::render::Input;
use berth_core::{Manifest, ManifestSource, Project};

use crate::fs_source::MAX_FILE;
use crate::text_stream::ReadText;

/// Inputs named on the command line (relative to the current directory), or
/// else `manifests` (the project's `manifests:` or a profile's, relative to
/// berth.yaml). `images` is the values layer each Helm chart gets last.
pub fn gather(
    project: &Project,
    manifests: &[Manifest],
    args: &[String],
    helm: crate::helm::Given<'_>,
) -> Result<Vec<Input>> {
    let sources: Vec<(ManifestSource, String)> = if args.is_empty() {
        if manifests.is_empty() {
            bail!(
                "nothing to render: {} has no `manifests:` and no paths were given; \
                 add `manifests: [deploy/]` or run `berth render FILE...` (`-` for stdin)",
                project.file
            );
        }
        manifests
            .iter()
            .map(|m| {
                (
                    absolute(&project.dir, &m.source),
                    format!("{}:{} (`manifests:`)", project.file, m.pos),
                )
            })
            .collect()
    } else {
        args.iter()
            .map(|a| match a.as_str() {
                "-" => (ManifestSource::Stdin, "the command line".to_string()),
                path => (
                    ManifestSource::Path(PathBuf::from(path)),
                    "the command line".to_string(),
                ),
            })
            .collect()
    };
    let mut inputs = Vec::new();
    let mut stdin_used = false;
    for (source, origin) in sources {
        match source {
            ManifestSource::Stdin if stdin_used => {
                bail!("`-` (standard input) is given twice in {origin}")
            }
            ManifestSource::Stdin => {
                stdin_used = true;
                // Read as it arrives: each document is checked once it is complete.
                inputs.push(Input::stream(
                    File::Name("<stdin>".into()),
                    Box::new(ReadText::new(std::io::stdin().lock(), MAX_FILE)),
                ));
            }
            ManifestSource::Path(path) => {
                if args.is_empty() {
                    crate::fs_source::contained(&project.dir, &path).map_err(|e| {
                        anyhow!("cannot read {} (from {origin}): {e}", shown(&path))
                    })?;
                }
                let root = args.is_empty().then_some(project.dir.as_path());
                read_path(&path, &origin, root, &mut inputs)?
            }
            ManifestSource::Kustomize(dir) => {
                if !dir.is_dir() {
                    let relative = match args.is_empty() {
                        true => format!(" (relative to the directory of {})", project.file),
                        false => String::new(),
                    };
                    bail!(
                        "{origin}: `kustomize: {}` is not a directory; name the directory that holds kustomization.yaml{relative}",
                        shown(&dir)
                    );
                }
                if !is_kustomization(&dir) {
                    bail!(
                        "{origin}: `kustomize: {}` has no kustomization.yaml (nor kustomization.yml, Kustomization); name an overlay's directory, or list plain manifests without `kustomize:`",
                        shown(&dir)
                    );
                }
                if args.is_empty() {
                    crate::fs_source::contained(&project.dir, &dir)
                        .map_err(|e| anyhow!("cannot use {} (from {origin}): {e}", shown(&dir)))?;
                }
                inputs.push(kustomize(&dir).map_err(|e| anyhow!("{origin}: {e}"))?)
            }
            ManifestSource::Helm(chart) => {
                inputs.extend(crate::helm::template(project, &chart, &origin, helm)?)
            }
        }
    }
    Ok(inputs)
}

fn absolute(dir: &Path, source: &ManifestSource) -> ManifestSource {
    match source {
        ManifestSource::Path(p) => ManifestSource::Path(dir.join(p)),
        ManifestSource::Kustomize(p) => ManifestSource::Kustomize(dir.join(p)),
        // Its paths are resolved where it runs (`helm::template`), against the project.
        ManifestSource::Helm(chart) => ManifestSource::Helm(chart.clone()),
        ManifestSource::Stdin => ManifestSource::Stdin,
    }
}

fn input(name: File, bytes: Vec<u8>) -> Result<Input> {
    let text = String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to() as u64;
        anyhow!("{name}: {}", crate::text_stream::not_utf8(offset))
    })?;
    Ok(Input::text(name, text))
}

fn shown(path: &Path) -> String {
    let cwd = std::env::current_dir().unwrap_or_default();
    path.strip_prefix(&cwd)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Reads `path` (a file, a directory of YAML, a pipe) into `inputs`. `root` is
/// the project's directory for what berth.yaml names: every file found below a
/// directory must resolve inside it too (a link to `~/.kube/config` must not be
/// printed); `None` for paths given on the command line, which berth reads as given.
fn read_path(
    path: &Path,
    origin: &str,
    root: Option<&Path>,
    inputs: &mut Vec<Input>,
) -> Result<()> {
    let given = root.is_none();
    let metadata =
        std::fs::metadata(path).map_err(|e| anyhow!("{} (from {origin}): {e}", shown(path)))?;
    if given && is_pipe(&metadata) {
        // `berth render <(helm template …)`: a pipe, read as it arrives.
        let file =
            std::fs::File::open(path).map_err(|e| anyhow!("cannot read {}: {e}", shown(path)))?;
        inputs.push(Input::stream(
            File::Path(shown(path)),
            Box::new(ReadText::new(file, MAX_FILE)),
        ));
        return Ok(());
    }
    if !metadata.is_dir() {
        let read = if given {
            crate::fs_source::read_given
        } else {
            crate::fs_source::read_bounded
        };
        let bytes = read(path).map_err(|e| anyhow!("cannot read {}: {e}", shown(path)))?;
        inputs.push(input(File::Path(shown(path)), bytes)?);
        return Ok(());
    }
    // A `manifests:` directory means every YAML file below it; one holding a
    // kustomization means kustomize's output, which may be fewer objects: say which.
    if !given && is_kustomization(path) {
        bail!(
            "{origin}: `{}` holds a kustomization.yaml, so reading every YAML file below it would take kustomize's input (patches, the Kustomization) for objects, and its output may be fewer objects; write `- kustomize: {}` to render it with kustomize",
            shown(path),
            shown(path).trim_end_matches('/')
        );
    }
    // A kustomization's directory given on the command line is rendered by kustomize,
    // as a `kustomize:` entry is: its files are kustomize's input, not objects.
    if is_kustomization(path) {
        inputs.push(kustomize(path)?);
        return Ok(());
    }
    let mut files = Vec::new();
    collect_yaml(path, &mut files)?;
    files.sort();
    for file in files {
        if let Some(root) = root {
            crate::fs_source::contained(root, &file)
                .map_err(|e| anyhow!("cannot read {} (below {origin}): {e}", shown(&file)))?;
        }
        let bytes = crate::fs_source::read_bounded(&file)
            .map_err(|e| anyhow!("cannot read {}: {e}", shown(&file)))?;
        inputs.push(input(File::Path(shown(&file)), bytes)?);
    }
    Ok(())
}

/// Every `*.yaml` / `*.yml` below `dir` (symbolic links to directories are not followed).
fn collect_yaml(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| anyhow!("cannot list {}: {e}", shown(dir)))?;
    for entry in entries {
        let entry = entry.map_err(|e| anyhow!("cannot list {}: {e}", shown(dir)))?;
        let path = entry.path();
        let kind = entry
            .file_type()
            .map_err(|e| anyhow!("{}: {e}", shown(&path)))?;
        if kind.is_dir() {
            collect_yaml(&path, out)?;
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml")
        ) {
            out.push(path);
        }
    }
    Ok(())
}

/// What an overlay's output is in places and messages (`kustomize deploy/overlay`).
pub fn kustomize_output(dir: &Path) -> File {
    File::Kustomize(shown(dir))
}

/// `kubectl kustomize DIR`, as one input.
fn kustomize(dir: &Path) -> Result<Input> {
    use crate::kustomize::Failure;
    let stdout = crate::kustomize::build(dir).map_err(|failure| match failure {
        Failure::NoKubectl => {
            let program = crate::kustomize::kubectl();
            let which = match program.components().count() {
                1 => format!("`{}` on PATH", program.display()),
                _ => format!("`{}` (BERTH_KUBECTL)", program.display()),
            };
            anyhow!(
                "`kustomize: {}` needs kubectl, and {which} was not found; install kubectl (or name it with BERTH_KUBECTL), \
                 or render the overlay first (`kubectl kustomize DIR | berth render -`)",
                shown(dir)
            )
        }
        Failure::Refused(why) => anyhow!("kubectl kustomize {} failed: {why}", shown(dir)),
        Failure::Run(e) => anyhow!("kubectl kustomize {}: {e}", shown(dir)),
    })?;
    input(kustomize_output(dir), stdout)
}

fn is_kustomization(dir: &Path) -> bool {
    crate::kustomize::is_kustomization(dir)
}

fn is_pipe(metadata: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt as _;
    metadata.file_type().is_fifo()
}
