//! `berth init [DIR]`: reads a repository (ripgrep's walker, `.gitignore`
//! respected) for its kustomizations, Kubernetes YAML and Makefile variables,
//! lets the core decide a first berth.yaml (`berth_core::init`), writes it
//! without ever replacing one, and says what it decided and why.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};
use berth_core::init::{Facts, Kustomization};
use berth_yaml::{Limits, Node};

/// `berth init`.
pub fn run(dir: Option<&Path>) -> Result<u8> {
    let root = dir
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    if !root.is_dir() {
        bail!(
            "berth init {}: not a directory; give the repository's directory",
            root.display()
        );
    }
    let target = root.join(berth_core::project::PROJECT_FILE);
    if target.exists() {
        bail!(
            "{} already exists; berth init never replaces it (remove it first to start over, or edit it)",
            target.display()
        );
    }
    let facts = gather(&root)?;
    let plan = berth_core::init::plan(&facts);
    // Written beside, then moved: a failure never leaves half a file.
    let staging = root.join(".berth.yaml.init-tmp");
    std::fs::write(&staging, &plan.yaml)
        .and_then(|()| std::fs::hard_link(&staging, &target))
        .map_err(|e| {
            let _ = std::fs::remove_file(&staging);
            anyhow!("cannot write {}: {e}", target.display())
        })?;
    let _ = std::fs::remove_file(&staging);
    for note in &plan.notes {
        say!("berth init: {note}");
    }
    say!(
        "berth init: wrote {}; check it with `berth validate`, and run `berth audit` for hard-coded copies of these images",
        target.display()
    );
    Ok(0)
}

/// The facts: kustomizations, Kubernetes YAML, Makefile variables.
fn gather(root: &Path) -> Result<Facts> {
    let name = root
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "project".into());
    let mut facts = Facts {
        name,
        ..Facts::default()
    };
    let mut paths: Vec<PathBuf> = Vec::new();
    for entry in ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build()
    {
        let entry =
            entry.map_err(|e| anyhow!("berth init: cannot walk {}: {e}", root.display()))?;
        if entry.file_type().is_some_and(|t| t.is_file()) {
            paths.push(entry.into_path());
        }
    }
    paths.sort();
    for path in paths {
        let relative = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .replace('\\', "/");
        let file = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let read = || -> Option<String> {
            crate::fs_source::read_bounded(&path)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
        };
        if matches!(
            file.as_str(),
            "kustomization.yaml" | "kustomization.yml" | "Kustomization"
        ) {
            if let Some(text) = read() {
                let dir = Path::new(&relative)
                    .parent()
                    .map(|p| p.to_string_lossy().into_owned())
                    .filter(|d| !d.is_empty())
                    .unwrap_or_else(|| ".".into());
                facts.kustomizations.push(kustomization(dir, &text));
            }
        } else if file == "Makefile" || file == "GNUmakefile" || file.ends_with(".mk") {
            if let Some(text) = read() {
                facts
                    .make_vars
                    .extend(berth_core::init::make_vars(&relative, &text));
            }
        } else if (file.ends_with(".yaml") || file.ends_with(".yml")) && relative != "berth.yaml" {
            if let Some(text) = read() {
                if text.contains("apiVersion:") && text.contains("kind:") {
                    facts.manifests.push((relative, text));
                }
            }
        }
    }
    Ok(facts)
}

fn kustomization(dir: String, text: &str) -> Kustomization {
    let mut out = Kustomization {
        dir,
        resources: Vec::new(),
        images: Vec::new(),
    };
    let Ok(docs) = berth_yaml::load_all(text, Limits::default()) else {
        return out;
    };
    let Some(doc) = docs.first() else { return out };
    for key in ["resources", "bases", "components"] {
        if let Some(items) = doc.get(key).and_then(Node::as_seq) {
            out.resources
                .extend(items.iter().filter_map(Node::as_str).map(str::to_string));
        }
    }
    if let Some(items) = doc.get("images").and_then(Node::as_seq) {
        for item in items {
            let text = |k: &str| item.get(k).and_then(Node::as_str).map(str::to_string);
            if let Some(name) = text("name") {
                out.images.push((name, text("newName"), text("newTag")));
            }
        }
    }
    out
}
