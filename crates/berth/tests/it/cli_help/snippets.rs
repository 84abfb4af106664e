//! Every snippet of README.md, CONTRIBUTING.md, docs/*.md and examples/*/README.md
//! runs here, or its page says why it cannot (#34 item 7).
//!
//! A fenced block is one of:
//! - ```` ```console ````: commands and their output, run by `docs.rs`;
//! - a block right after `<!-- doc-test: sh -->`: a script that must succeed (bash,
//!   `-e -o pipefail`), run in a copy of the repository's `examples/`, `deploy/` and
//!   `charts/` (an example's README runs in its example's directory) with the built
//!   berth first on PATH;
//! - after `<!-- doc-test: helm -->`: the same with helm (testenv's build) on PATH and a
//!   private HELM_*_HOME (the `test-plane` group: helm is built with the plane);
//! - after `<!-- doc-test: helm3 -->`: the same with Helm 3 (testenv's `helm3`) as `helm`;
//! - after `<!-- doc-test: cluster -->`: the same against the test plane, in a namespace
//!   of its own (`$NS`, and the kubeconfig's default), kubectl and helm on PATH;
//! - after `<!-- doc-test: berth.yaml -->`: a berth.yaml that `berth images` accepts;
//! - after `<!-- doc-test: registry -->`: the same as `sh`, with `$REGISTRY` a local registry
//!   (the `test-registry` group) that holds, under `$REGISTRY/<name>`, every image `berth images
//!   --registry $REGISTRY` lists in the snippet's directory, at its tag and at the next patch
//!   release (`v0.7.0` and `v0.7.1`): nothing can be pulled from public registries here;
//! - after `<!-- doc-test: renovate -->`: a Renovate configuration whose regex manager's
//!   `matchStrings`, run with Node's regex engine as Renovate runs them, find every
//!   component's version in every example's berth.yaml (the `test-tools` group);
//! - after `<!-- not run: REASON -->`: a block this machine cannot run, REASON saying why
//!   (the page's source carries it);
//! - a `yaml` block without a marker: YAML that must parse;
//! - a `text` block with no `$ ` line: output or a file's contents, shown, not run.
//!
//! Anything else (a shell block, or a `$ ` line, without a marker) fails the test.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::super::common::{berth_path, copy_dir, repo_root};

/// How a block is checked.
#[derive(Debug, PartialEq)]
enum Kind {
    Console,
    Sh,
    Helm,
    Helm3,
    Cluster,
    BerthYaml,
    Registry,
    Renovate,
    NotRun(String),
    Yaml,
    Output,
}

struct Block {
    file: PathBuf,
    line: usize,
    kind: Kind,
    body: String,
}

/// The pages whose snippets are checked (docs/cli.md is `--help`, checked by docs.rs).
fn pages() -> Vec<PathBuf> {
    let root = repo_root();
    let mut pages = vec![root.join("README.md"), root.join("CONTRIBUTING.md")];
    let mut more: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md") && !p.ends_with("cli.md"))
        .collect();
    for example in std::fs::read_dir(root.join("examples")).unwrap() {
        let readme = example.unwrap().path().join("README.md");
        if readme.is_file() {
            more.push(readme);
        }
    }
    more.sort();
    pages.extend(more);
    pages
}

fn kind_of(file: &Path, line: usize, lang: &str, marker: Option<&str>, body: &str) -> Kind {
    let place = format!("{}:{line}", file.display());
    let marker = marker.map(str::trim);
    match marker {
        Some("doc-test: sh") => return Kind::Sh,
        Some("doc-test: helm") => return Kind::Helm,
        Some("doc-test: helm3") => return Kind::Helm3,
        Some("doc-test: cluster") => return Kind::Cluster,
        Some("doc-test: berth.yaml") => return Kind::BerthYaml,
        Some("doc-test: renovate") => return Kind::Renovate,
        Some("doc-test: registry") => return Kind::Registry,
        Some(m) if m.starts_with("not run:") => {
            let reason = m["not run:".len()..].trim();
            assert!(!reason.is_empty(), "{place}: `not run:` without a reason");
            return Kind::NotRun(reason.to_string());
        }
        Some(m) if m.starts_with("doc-test") => panic!("{place}: unknown marker `{m}`"),
        _ => {}
    }
    let has_prompt = body.lines().any(|l| l.starts_with("$ "));
    match lang {
        "console" => Kind::Console,
        "yaml" => Kind::Yaml,
        "text" | "" if !has_prompt => Kind::Output,
        _ => panic!(
            "{place}: a `{lang}` block with neither `<!-- doc-test: sh|helm|helm3|cluster|berth.yaml -->` \
             nor `<!-- not run: REASON -->` on the line before it; every snippet runs in the tests \
             or says why it cannot"
        ),
    }
}

fn blocks() -> Vec<Block> {
    let mut out = Vec::new();
    for file in pages() {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            let Some(lang) = lines[i].strip_prefix("```") else {
                i += 1;
                continue;
            };
            let end = (i + 1..lines.len())
                .find(|&j| lines[j].starts_with("```"))
                .unwrap_or_else(|| panic!("{}:{}: unclosed block", file.display(), i + 1));
            let body = lines[i + 1..end].join("\n") + "\n";
            let marker = lines[..i]
                .iter()
                .rev()
                .find(|l| !l.trim().is_empty())
                .and_then(|l| l.trim().strip_prefix("<!--"))
                .and_then(|l| l.strip_suffix("-->"));
            let kind = kind_of(&file, i + 1, lang.trim(), marker, &body);
            out.push(Block {
                file: file.clone(),
                line: i + 1,
                kind,
                body,
            });
            i = end + 1;
        }
    }
    out
}

/// A copy of what snippets use, and the directory a page's snippets start in.
fn session(page: &Path) -> (tempfile::TempDir, PathBuf) {
    let root = repo_root();
    let dir = tempfile::tempdir().unwrap();
    for part in ["examples", "deploy", "charts"] {
        copy_dir(&root.join(part), &dir.path().join(part));
    }
    let start = match page.strip_prefix(&root) {
        Ok(rel) if rel.starts_with("examples") => dir.path().join(rel.parent().unwrap()),
        _ => dir.path().to_path_buf(),
    };
    (dir, start)
}

/// Runs one block as a bash script; panics with its output when it fails.
fn run_script(block: &Block, cwd: &Path, extra_path: &[PathBuf], env: &[(&str, String)]) {
    let mut path: Vec<PathBuf> = vec![berth_path().parent().unwrap().to_path_buf()];
    path.extend(extra_path.iter().cloned());
    path.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let home = tempfile::tempdir().unwrap();
    let out = Command::new("bash")
        .args(["-e", "-o", "pipefail", "-c", &block.body])
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::join_paths(path).unwrap())
        .env("HOME", home.path())
        .envs(env.iter().map(|(k, v)| (*k, v)))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}:{}: the snippet failed ({}):\n{}\n--- stdout\n{}--- stderr\n{}",
        block.file.display(),
        block.line,
        out.status,
        block.body,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_snippet_runs_or_says_why_not() {
    let blocks = blocks();
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    let mut sessions = std::collections::HashMap::new();
    for block in &blocks {
        let kind = match &block.kind {
            Kind::NotRun(_) => "not run".to_string(),
            k => format!("{k:?}"),
        };
        *counts.entry(kind).or_default() += 1;
        match &block.kind {
            Kind::Sh => {
                let (_, cwd) = sessions
                    .entry(block.file.clone())
                    .or_insert_with(|| session(&block.file));
                run_script(block, cwd, &[], &[]);
            }
            Kind::BerthYaml => {
                let dir = super::super::common::project(&block.body);
                let out = super::super::common::berth(dir.path())
                    .arg("images")
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "{}:{}: berth images refuses this berth.yaml: {}",
                    block.file.display(),
                    block.line,
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            Kind::Yaml => {
                if let Err(e) = berth_yaml::load_all(&block.body, berth_yaml::Limits::default()) {
                    panic!("{}:{}: not YAML: {e}", block.file.display(), block.line);
                }
            }
            _ => {}
        }
    }
    eprintln!("snippets by kind: {counts:?}");
    assert!(counts.get("Sh").copied().unwrap_or(0) >= 5, "{counts:?}");
}

/// The next patch release of a version tag (`v0.7.0-arm64` → `v0.7.1-arm64`).
fn next_patch(tag: &str) -> Option<String> {
    let (core, suffix) = tag.split_once('-').map_or((tag, ""), |(c, s)| (c, s));
    let (head, last) = core.rsplit_once('.')?;
    let next: u64 = last.parse::<u64>().ok()? + 1;
    let dash = if suffix.is_empty() { "" } else { "-" };
    Some(format!("{head}.{next}{dash}{suffix}"))
}

/// #50: `berth outdated` and `berth update --dry-run` on the examples, against the tests'
/// registry seeded with each example's images (see `Kind::Registry`).
#[test]
#[cfg_attr(
    not(feature = "test-registry"),
    ignore = "needs test-registry (run scripts/test)"
)]
fn every_registry_snippet_runs_against_the_tests_registry() {
    use super::super::common::registry::{Layout, TestRegistry};
    let registry = TestRegistry::start(None);
    let image = Layout::image("docs", 1, 64);
    let mut ran = 0;
    for block in blocks().iter().filter(|b| b.kind == Kind::Registry) {
        let (_dir, cwd) = session(&block.file);
        let out = super::super::common::berth(&cwd)
            .args(["images", "--output", "list", "--registry", &registry.host])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let prefix = format!("{}/", registry.host);
        for line in String::from_utf8(out.stdout).unwrap().lines() {
            let Some((name, tag)) = line.strip_prefix(&prefix).and_then(|r| r.rsplit_once(':'))
            else {
                continue; // a third-party image (`registry: false`) stays where it is
            };
            registry.push(&image, name, tag);
            if let Some(next) = next_patch(tag) {
                registry.push(&image, name, &next);
            }
        }
        run_script(block, &cwd, &[], &[("REGISTRY", registry.host.clone())]);
        ran += 1;
    }
    assert!(
        ran >= 2,
        "the llm-d and variants examples have registry snippets"
    );
}

/// What Node's regex engine finds with a Renovate block's `matchStrings` in
/// `files`: one `depName:currentValue` per match.
fn renovate_matches(block: &Block, files: &[PathBuf]) -> Vec<String> {
    let config: serde_json::Value = serde_json::from_str(&block.body)
        .unwrap_or_else(|e| panic!("{}:{}: not JSON: {e}", block.file.display(), block.line));
    let patterns = &config["customManagers"][0]["matchStrings"];
    assert!(
        patterns.is_array(),
        "{}:{}: no matchStrings",
        block.file.display(),
        block.line
    );
    let script = "const fs = require('fs');\n\
        const [patterns, ...files] = process.argv.slice(1);\n\
        for (const file of files) {\n\
          const text = fs.readFileSync(file, 'utf8');\n\
          for (const p of JSON.parse(patterns)) {\n\
            for (const m of text.matchAll(new RegExp(p, 'g'))) {\n\
              console.log(`${m.groups.depName}:${m.groups.currentValue}`);\n\
            }\n\
          }\n\
        }\n";
    let out = Command::new("node")
        .args(["-e", script, &patterns.to_string()])
        .args(files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// #50: the documented Renovate configuration finds, in every example's
/// berth.yaml, each component's version and each variant's own tag — and
/// nothing else (a variant following the family tag has none).
#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn the_documented_renovate_regex_finds_every_version_in_the_examples() {
    super::super::common::require_program(super::super::common::Group::Tools, "node");
    let root = repo_root();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path().join("berth.yaml"))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    let mut ran = 0;
    for block in blocks().iter().filter(|b| b.kind == Kind::Renovate) {
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            let project =
                berth_core::project::parse("berth.yaml", file.parent().unwrap().into(), &text)
                    .unwrap();
            let mut want: Vec<String> = Vec::new();
            for c in project.components.iter().filter(|c| c.same_as.is_none()) {
                if c.image.tag().is_some() {
                    want.push(c.image.without_digest().to_string());
                }
                for v in c.variants.iter().filter(|v| v.image.tag().is_some()) {
                    want.push(v.image.without_digest().to_string());
                }
            }
            let mut found: Vec<String> = renovate_matches(block, std::slice::from_ref(file))
                .iter()
                .map(|m| {
                    berth_ref::Reference::parse(m)
                        .unwrap_or_else(|e| panic!("{m}: {e}"))
                        .to_string()
                })
                .collect();
            want.sort();
            found.sort();
            assert_eq!(
                found,
                want,
                "{}: what the Renovate regex finds",
                file.display()
            );
            ran += 1;
        }
    }
    assert!(ran >= 5, "no Renovate block or no example ran");
}

#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn every_helm_and_cluster_snippet_runs_on_the_test_plane() {
    let plane = super::super::common::testenv::plane();
    let tools = plane.kubectl.parent().unwrap().to_path_buf();
    let helm_dir = plane.helm().parent().unwrap().to_path_buf();
    // Helm 3 answers to `helm` in a directory of its own, ahead of Helm 4's.
    let helm3_dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(plane.helm3(), helm3_dir.path().join("helm")).unwrap();
    let mut ran = 0;
    let mut sessions = std::collections::HashMap::new();
    for block in blocks() {
        if !matches!(block.kind, Kind::Helm | Kind::Helm3 | Kind::Cluster) {
            continue;
        }
        let (_, cwd) = sessions
            .entry(block.file.clone())
            .or_insert_with(|| session(&block.file));
        let helm_home = tempfile::tempdir().unwrap();
        let mut env = vec![
            (
                "HELM_DATA_HOME",
                helm_home.path().join("data").display().to_string(),
            ),
            (
                "HELM_CONFIG_HOME",
                helm_home.path().join("config").display().to_string(),
            ),
            (
                "HELM_CACHE_HOME",
                helm_home.path().join("cache").display().to_string(),
            ),
        ];
        let ns = (block.kind == Kind::Cluster).then(|| plane.namespace("doc"));
        if let Some(ns) = &ns {
            env.push(("KUBECONFIG", ns.kubeconfig.display().to_string()));
            env.push(("NS", ns.name.clone()));
        }
        let mut path = vec![tools.clone(), helm_dir.clone()];
        if block.kind == Kind::Helm3 {
            path.insert(0, helm3_dir.path().to_path_buf());
        }
        run_script(&block, cwd, &path, &env);
        ran += 1;
    }
    assert!(ran >= 1, "no helm or cluster snippet found");
}

/// A page that names a source or test file (`crates/…/x.rs`, `tests/it/x.rs`,
/// `scripts/x`) names one that exists: docs that point at the test covering a
/// claim must not point at nothing.
#[test]
fn every_file_the_docs_name_exists() {
    let root = repo_root();
    let mut missing = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for word in text.split(|c: char| c.is_whitespace() || "`()[],;:'\"".contains(c)) {
            let word = word.trim_end_matches('.');
            let named = (word.starts_with("crates/") && word.ends_with(".rs"))
                || (word.starts_with("tests/it/") && word.ends_with(".rs"))
                || (word.starts_with("scripts/") && !word.contains('*'));
            if !named {
                continue;
            }
            // From the root, the CLI crate, the page's directory, or an example (whose
            // pages and snippets run in it).
            let examples = std::fs::read_dir(root.join("examples")).unwrap();
            let found = root.join(word).exists()
                || root.join("crates/berth").join(word).exists()
                || page.parent().is_some_and(|dir| dir.join(word).exists())
                || examples.flatten().any(|e| e.path().join(word).exists());
            if !found {
                missing.push(format!("{}: {word}", page.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "named but missing:\n{}",
        missing.join("\n")
    );
}
