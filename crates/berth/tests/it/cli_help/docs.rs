//! What users read is what is tested: every ```console block of README.md and
//! docs/ runs here, and docs/cli.md is the commands' `--help` as generated now.
//!
//! A document's console blocks are one session: `$ CMD` lines run with `sh -c`
//! in a fresh copy of `examples/` (so `cd examples/llm-d` works, later blocks go
//! on from there, and nothing in the checkout is touched), with berth first on PATH and nothing else of the environment; the
//! lines up to the next `$` are its output (stdout and stderr, as a terminal
//! shows them), compared literally. A command with no output lines shown must
//! succeed, its output unchecked. Every other block is checked by `snippets.rs`
//! (run as a script, on the test plane, or marked as not run with the reason).

use std::path::PathBuf;

use super::common::{berth_path, repo_root};

struct Step {
    command: String,
    expected: Vec<String>,
}

fn console_blocks(text: &str) -> Vec<(usize, Vec<Step>)> {
    let mut blocks = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        if line.trim_end() != "```console" {
            continue;
        }
        let mut steps: Vec<Step> = Vec::new();
        for (_, line) in lines.by_ref() {
            if line.starts_with("```") {
                break;
            }
            match line.strip_prefix("$ ") {
                Some(command) => steps.push(Step {
                    command: command.to_string(),
                    expected: Vec::new(),
                }),
                None => steps
                    .last_mut()
                    .expect("a console block starts with `$ `")
                    .expected
                    .push(line.to_string()),
            }
        }
        blocks.push((n + 1, steps));
    }
    blocks
}

fn documents() -> Vec<PathBuf> {
    let root = repo_root();
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

#[test]
fn every_console_block_of_the_docs_runs_as_shown() {
    let root = repo_root();
    let bin = berth_path();
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut ran = 0;
    for file in documents() {
        let text = std::fs::read_to_string(&file).unwrap();
        // One session per document: a later block goes on where the last one was.
        let work = tempfile::tempdir().unwrap();
        super::common::copy_dir(&root.join("examples"), &work.path().join("examples"));
        let mut cwd = work.path().to_path_buf();
        for (line, steps) in console_blocks(&text) {
            for step in steps {
                let place = format!("{}:{line}: `{}`", file.display(), step.command);
                if let Some(dir) = step.command.strip_prefix("cd ") {
                    cwd = cwd.join(dir.trim());
                    continue;
                }
                // The whole pipeline's stderr (`make … | head` complaining of a broken
                // pipe shows), as a terminal would show it.
                let out = std::process::Command::new("bash")
                    .args([
                        "-o",
                        "pipefail",
                        "-c",
                        &format!("{{ {}\n}} 2>&1", step.command),
                    ])
                    .current_dir(&cwd)
                    .env_clear()
                    .env("PATH", &path)
                    .env("HOME", work.path())
                    .output()
                    .unwrap();
                let shown = String::from_utf8_lossy(&out.stdout);
                ran += 1;
                if step.expected.is_empty() {
                    assert!(out.status.success(), "{place} failed:\n{shown}");
                    continue;
                }
                let actual: Vec<&str> = shown.lines().collect();
                assert_eq!(actual, step.expected, "{place}: the docs show other output");
            }
        }
    }
    assert!(
        ran >= 10,
        "only {ran} commands found: is the parser broken?"
    );
}

/// docs/cli.md as the commands' `--help` say it now.
fn cli_reference() -> String {
    let dir = tempfile::tempdir().unwrap();
    let help = |args: &[&str]| {
        let out = super::common::berth(dir.path())
            .args(args)
            .env("COLUMNS", "100")
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let mut out = String::from(
        "# Command reference\n\nGenerated from `berth --help` and each command's `--help` (a test fails when this\nfile is stale; `BERTH_UPDATE_DOCS=1 cargo test -p berth --test it docs::` rewrites it).\n\n",
    );
    out.push_str(&format!("## berth\n\n```text\n{}```\n", help(&["--help"])));
    for command in super::ALL_COMMANDS {
        out.push_str(&format!(
            "\n## berth {command}\n\n```text\n{}```\n",
            help(&[command, "--help"])
        ));
    }
    out
}

#[test]
fn the_cli_reference_is_what_help_says() {
    let path = repo_root().join("docs/cli.md");
    let now = cli_reference();
    if std::env::var_os("BERTH_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &now).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == now,
        "docs/cli.md is stale: run `BERTH_UPDATE_DOCS=1 cargo test -p berth --test it docs::`"
    );
}

#[test]
fn the_readmes_first_berth_yaml_validates() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    // The section's two yaml blocks: berth.yaml, then deploy/web.yaml.
    let section = &readme[readme.find("## A first berth.yaml").expect("the section")..];
    let mut blocks = section
        .split("```yaml\n")
        .skip(1)
        .map(|b| &b[..b.find("```").unwrap()]);
    let (yaml, deployment) = (blocks.next().unwrap(), blocks.next().unwrap());
    let dir = super::common::project(yaml);
    std::fs::create_dir(dir.path().join("deploy")).unwrap();
    std::fs::write(dir.path().join("deploy/web.yaml"), deployment).unwrap();
    let out = super::common::berth(dir.path())
        .arg("render")
        .output()
        .unwrap();
    let rendered = String::from_utf8_lossy(&out.stdout);
    assert!(
        rendered.contains("kind: ConfigMap") && rendered.contains("name: web-config-"),
        "{rendered}"
    );
    let out = super::common::berth(dir.path())
        .args(["validate", "--strict"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = super::common::berth(dir.path())
        .arg("images")
        .env("IMAGE_REGISTRY", "quay.io/me")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "WEB_IMAGE=quay.io/me/web:v1\n"
    );
}
