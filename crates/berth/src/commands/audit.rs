//! `berth audit [PATH]`: every hard-coded copy of a component's image outside
//! berth.yaml, berth.lock and the manifests berth renders — the copies that
//! drift (llm-d #408 lived in a Makefile, a pull script and a Go e2e test).
//!
//! The repository is walked with ripgrep's walker (`.gitignore` respected,
//! hidden directories such as `.github/` included, `.git/` skipped), in
//! parallel; a file is read only up to [`MAX_AUDITED`] and parsed line by line
//! only when it holds one of the components' image names.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{anyhow, Result};
use berth_core::scan::Scanner;
use berth_core::{ManifestSource, Project};
use serde_json::json;

use crate::output::print;

mod advice;
use advice::{place, remedy, Place};

/// Files larger than this are skipped (and counted): sources are smaller.
pub const MAX_AUDITED: u64 = 8 * 1024 * 1024;

/// `berth audit`.
pub struct Audit {
    /// Where to look (default: the project's directory).
    pub root: Option<PathBuf>,
    /// Exit 1 when any copy is found.
    pub strict: bool,
    /// A JSON array instead of lines.
    pub json: bool,
    /// `--exclude` globs, beside berth.yaml's `audit.exclude`.
    pub exclude: Vec<String>,
    /// `--all`: search [`ARCHIVE_DIRS`] too.
    pub all: bool,
}

/// Directories skipped unless `--all`: released archives (KServe's `install/`
/// holds every release's manifests), build output, vendored code and test data —
/// copies there are history or fixtures, not defects.
pub const ARCHIVE_DIRS: &[&str] = &["install", "dist", "vendor", "third_party", "testdata"];

/// One hard-coded copy.
struct Copy {
    path: PathBuf,
    line: usize,
    column: usize,
    text: String,
    component: usize,
    /// A shell default of the component's tag variable that disagrees with berth.yaml's
    /// tag (`${WEB_TAG:-v0.9.2}`): the value it gives and berth.yaml's.
    tag_default: Option<(String, String)>,
    /// Code, a comment, a list entry: what the advice says.
    place: Place,
}

/// A component's tag variable and berth.yaml's default tag for it: a script's own default
/// of that variable (`${WEB_TAG:-v0.9.2}`) that says otherwise is a copy that drifted.
struct TagVariable {
    variable: String,
    component: usize,
    tag: String,
}

pub fn run(settings: &Audit, project: &Project) -> Result<u8> {
    let root = settings.root.clone().unwrap_or_else(|| project.dir.clone());
    if !root.is_dir() {
        anyhow::bail!(
            "berth audit {}: not a directory; give the repository's directory",
            root.display()
        );
    }
    // Third-party images (`registry: false`) are not the project's to spell.
    let scanner = Scanner::new(
        project
            .components
            .iter()
            .enumerate()
            .filter(|(_, c)| c.follows_registry)
            .map(|(i, c)| (i, c.repositories.as_slice())),
    );
    let variables: Vec<String> = project
        .variables()
        .into_iter()
        .map(str::to_string)
        .collect();
    let tags = tag_variables(project);
    let excluded: Vec<&String> = project
        .audit_exclude
        .iter()
        .chain(&settings.exclude)
        .collect();
    let filters = Filters {
        skipped: skipped_paths(project),
        overrides: overrides(&root, &excluded)?,
        archives: !settings.all,
    };
    let root_dir = root.canonicalize().unwrap_or_else(|_| root.clone());
    if let Some(cover) =
        (filters.skipped.iter()).find(|s| s.yaml_only && root_dir.starts_with(&s.path))
    {
        say!(
            "berth audit: a `manifests:` entry covers {} (berth renders its YAML files); searching the other files only",
            cover.path.display()
        );
    }
    let Walked {
        mut copies,
        searched,
        large,
        generated,
        mut unreadable,
        archives,
    } = walk(&root, &scanner, (&variables, &tags), &filters)?;
    copies.sort_by(|a, b| (&a.path, a.line, a.column).cmp(&(&b.path, b.line, b.column)));
    unreadable.sort();
    print(&listing(&copies, project, &root, settings.json)?)?;
    for what in &unreadable {
        say!("berth audit: cannot read {what}; it was not searched");
    }
    say!(
        "{}",
        summary(
            &copies,
            searched,
            (large, generated),
            unreadable.len(),
            archives
        )
    );
    let too_large = large;
    // --strict promises "no copy": a file it could not read or did not search may hold one,
    // and a search of nothing proves nothing.
    if settings.strict && searched == 0 {
        say!("berth audit: --strict: no file was searched, so nothing is proven; check the PATH and `audit.exclude`");
    }
    if settings.strict && too_large > 0 {
        say!("berth audit: --strict: {too_large} file(s) over {} MiB were not searched; exclude them (`audit.exclude`) or split them", MAX_AUDITED / 1024 / 1024);
    }
    Ok(u8::from(
        settings.strict
            && (!copies.is_empty() || !unreadable.is_empty() || searched == 0 || too_large > 0),
    ))
}

/// Each component's tag variable and its default tag (a script's `${TAG:-v1}`).
fn tag_variables(project: &Project) -> Vec<TagVariable> {
    (project.components.iter().enumerate())
        .filter_map(|(component, c)| {
            Some(TagVariable {
                variable: c.tag_env.clone(),
                component,
                tag: c.image.tag()?.as_str().to_string(),
            })
        })
        .collect()
}

/// audit's last line: the copies, the files searched, and what was not searched.
fn summary(
    copies: &[Copy],
    searched: usize,
    (large, generated): (usize, (usize, usize)),
    unreadable: usize,
    mut archives: Vec<String>,
) -> String {
    let files: std::collections::BTreeSet<&PathBuf> = copies.iter().map(|c| &c.path).collect();
    let large = if large > 0 {
        format!(
            "; {large} file(s) over {} MiB skipped",
            MAX_AUDITED / 1024 / 1024
        )
    } else {
        String::new()
    };
    let large = match generated {
        (0, _) => large,
        (copies, files) => format!("{large}; {copies} more in {files} generated file(s) left out (a `DO NOT EDIT` header: fix what generates them; --all lists them)"),
    };
    let unread = if unreadable == 0 {
        String::new()
    } else {
        format!("; {unreadable} could not be read")
    };
    let archives = if archives.is_empty() {
        String::new()
    } else {
        archives.sort();
        format!(
            "; not searched (released archives, vendored code, test data; --all searches them): {}",
            archives.join(", ")
        )
    };
    format!(
        "berth audit: {} hard-coded cop{} in {} file(s); {searched} file(s) searched{large}{unread}{archives}",
        copies.len(),
        if copies.len() == 1 { "y" } else { "ies" },
        files.len()
    )
}

/// What a walk of the tree found.
struct Walked {
    copies: Vec<Copy>,
    /// Files searched.
    searched: usize,
    /// Files too large to search.
    large: usize,
    /// Copies left out in generated files, and those files.
    generated: (usize, usize),
    /// Files and directories that could not be read: named, never skipped silently.
    unreadable: Vec<String>,
    /// The [`ARCHIVE_DIRS`] directories not searched, relative to the root.
    archives: Vec<String>,
}

/// A place berth renders, left out of the search.
#[derive(Debug, Clone, PartialEq)]
struct Skip {
    path: PathBuf,
    /// Only the YAML files below it (a `manifests:` directory, a kustomization's directory):
    /// a Makefile or script beside them is no manifest, and is searched (#46, R2).
    yaml_only: bool,
}

impl Skip {
    fn covers(&self, file: &Path) -> bool {
        file.starts_with(&self.path) && (!self.yaml_only || is_yaml(file))
    }
}

/// What berth reads as manifests from a directory: `*.yaml`, `*.yml`, kustomize's file names.
fn is_yaml(file: &Path) -> bool {
    let name = file
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    name.ends_with(".yaml") || name.ends_with(".yml") || crate::kustomize::is_file_name(name)
}

/// What a walk leaves out.
struct Filters {
    /// berth.yaml, berth.lock and what berth renders.
    skipped: Vec<Skip>,
    /// `audit.exclude` and `--exclude`, as ignore globs.
    overrides: ignore::overrides::Override,
    /// Whether [`ARCHIVE_DIRS`] are left out.
    archives: bool,
}

/// The exclude globs as the walker's overrides (each an ignore: `!GLOB`).
fn overrides(root: &Path, globs: &[&String]) -> Result<ignore::overrides::Override> {
    let mut builder = ignore::overrides::OverrideBuilder::new(root);
    for glob in globs {
        builder.add(&format!("!{glob}")).map_err(|e| {
            anyhow!(
                "audit exclude `{}`: not a glob ({e}); write gitignore syntax, e.g. `docs/**`",
                berth_io::shown(glob)
            )
        })?;
    }
    builder
        .build()
        .map_err(|e| anyhow!("audit exclude globs: {e}"))
}

/// The parallel walk of `root`: `.gitignore` files of the audited tree count
/// (also outside a git checkout); ripgrep's own `.ignore` files and ignore
/// files above the tree do not: they would hide tracked scripts that hold
/// copies (sweep 4, U13, U14). Archive directories left out are told to `left_out`.
fn walker(
    root: &Path,
    filters: &Filters,
    left_out: std::sync::Arc<Mutex<Vec<String>>>,
) -> ignore::WalkParallel {
    let (skip_archives, base) = (filters.archives, root.to_path_buf());
    ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .ignore(false)
        .parents(false)
        .overrides(filters.overrides.clone())
        .filter_entry(move |e| {
            if e.file_name() == ".git" {
                return false;
            }
            let archive = skip_archives
                && e.file_type().is_some_and(|t| t.is_dir())
                && e.file_name()
                    .to_str()
                    .is_some_and(|n| ARCHIVE_DIRS.contains(&n));
            if archive {
                let shown = e.path().strip_prefix(&base).unwrap_or(e.path());
                berth_io::locked(&left_out)
                    .push(format!("{}/", escaped(&shown.display().to_string())));
            }
            !archive
        })
        .threads(
            std::thread::available_parallelism()
                .map_or(2, |n| n.get())
                .min(8),
        )
        .build_parallel()
}

/// Searches every file below `root` (but `skipped`) on as many threads as there are
/// cores, up to 8.
fn walk(
    root: &Path,
    scanner: &Scanner,
    (variables, tags): (&[String], &[TagVariable]),
    filters: &Filters,
) -> Result<Walked> {
    let skipped = &filters.skipped;
    let archives: std::sync::Arc<Mutex<Vec<String>>> = Default::default();
    let left_out = std::sync::Arc::clone(&archives);
    let found: Mutex<Vec<Copy>> = Mutex::new(Vec::new());
    // Files searched, too large; copies and files generated.
    let counts = Mutex::new((0usize, 0usize, (0usize, 0usize)));
    let skip_generated = filters.archives;
    let unreadable: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let walker = walker(root, filters, left_out);
    walker.run(|| {
        // One buffer per thread, big enough for most sources in one read: a
        // fresh Vec costs several growing reads per file, and reads are the cost.
        let mut buffer = Vec::with_capacity(256 * 1024);
        let (scanner, skipped, found, counts, unreadable) =
            (scanner, skipped, &found, &counts, &unreadable);
        Box::new(move |entry| {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    {
                        let mut u = berth_io::locked(unreadable);
                        u.push(escaped(&e.to_string()));
                    }
                    return ignore::WalkState::Continue;
                }
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return ignore::WalkState::Continue;
            }
            let path = entry.path();
            if skipped.iter().any(|s| s.covers(path)) {
                return ignore::WalkState::Continue;
            }
            let mut copies = Vec::new();
            let searched = search(
                path,
                (scanner, variables, tags),
                &mut buffer,
                &mut copies,
                skip_generated,
            );
            {
                let mut c = berth_io::locked(counts);
                match searched {
                    Searched::Yes => c.0 += 1,
                    Searched::TooLarge => c.1 += 1,
                    Searched::Generated(left_out) => {
                        c.0 += 1;
                        c.2 .0 += left_out;
                        c.2 .1 += 1;
                    }
                    Searched::No => {}
                    Searched::Unreadable(ref why) => {
                        let mut u = berth_io::locked(unreadable);
                        u.push(format!("{}: {why}", escaped(&path.display().to_string())));
                    }
                }
            }
            if !copies.is_empty() {
                {
                    let mut all = berth_io::locked(found);
                    all.extend(copies);
                }
            }
            ignore::WalkState::Continue
        })
    });
    let copies = found
        .into_inner()
        .map_err(|_| anyhow!("berth audit: a search thread failed"))?;
    let (searched, large, generated) = counts.into_inner().unwrap_or_default();
    let archives = berth_io::locked(&archives).clone();
    Ok(Walked {
        copies,
        searched,
        large,
        generated,
        unreadable: unreadable.into_inner().unwrap_or_default(),
        archives,
    })
}

/// The copies as `file:line:column:` lines, or as JSON.
fn listing(copies: &[Copy], project: &Project, root: &Path, json: bool) -> Result<String> {
    let shown =
        |p: &Path| -> String { escaped(&p.strip_prefix(root).unwrap_or(p).display().to_string()) };
    let mut out = String::new();
    if json {
        let items: Vec<serde_json::Value> = copies
            .iter()
            .map(|c| {
                let component = &project.components[c.component];
                json!({
                    "file": shown(&c.path),
                    "line": c.line,
                    "column": c.column,
                    "component": component.name,
                    "variable": component.env,
                    "image": c.text,
                    "fix": match &c.tag_default {
                        Some(_) => format!("drop the default of `{}` and run it under `berth env --`", component.tag_env),
                        None => remedy(project, &c.path, component, c.place),
                    },
                })
            })
            .collect();
        out = serde_json::to_string_pretty(&items)?;
        out.push('\n');
    } else {
        for c in copies {
            let component = &project.components[c.component];
            let what = match &c.tag_default {
                Some((value, tag)) => format!(
                    "`{}` defaults `{}` to `{}`, but berth.yaml's tag is `{tag}` ({}:{}), so the script runs another image when run alone; drop the default and run it under `berth env --`",
                    c.text, component.tag_env, berth_io::shown(value), project.file, component.image_pos
                ),
                None => format!(
                    "`{}` is a hard-coded copy of its image; {}",
                    c.text,
                    remedy(project, &c.path, component, c.place)
                ),
            };
            out.push_str(&format!(
                "{}:{}:{}: component `{}`: {what}\n",
                shown(&c.path),
                c.line,
                c.column,
                component.name,
            ));
        }
    }
    Ok(out)
}

/// A file name as a line shows it: control characters escaped (a name may hold
/// an escape sequence or a newline), never cut (a path names a file).
fn escaped(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

enum Searched {
    Yes,
    /// Binary: not text to search.
    No,
    TooLarge,
    /// Searched, and generated (a `DO NOT EDIT` header): its copies (how many) are
    /// fixed in its source, so they are left out but counted; `--all` lists them.
    Generated(usize),
    /// Open or read failed (permissions): named, and `--strict` fails.
    Unreadable(String),
}

/// The copies in one file: read (bounded), binary files skipped, lines parsed
/// only when the file holds a component's image name.
fn search(
    path: &Path,
    (scanner, scanner_variables, tags): (&Scanner, &[String], &[TagVariable]),
    bytes: &mut Vec<u8>,
    out: &mut Vec<Copy>,
    skip_generated: bool,
) -> Searched {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) => return Searched::Unreadable(e.to_string()),
    };
    bytes.clear();
    if let Err(e) = file.take(MAX_AUDITED + 1).read_to_end(bytes) {
        return Searched::Unreadable(e.to_string());
    }
    if bytes.len() as u64 > MAX_AUDITED {
        return Searched::TooLarge;
    }
    if bytes[..bytes.len().min(8192)].contains(&0) {
        return Searched::No; // binary
    }
    // Most files hold no image name nor a tag variable: found out on the bytes, before any
    // decoding.
    let names_a_tag = || {
        tags.iter().any(|t| {
            let needle = format!("${{{}", t.variable);
            bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
        })
    };
    if !scanner.may_match_bytes(bytes) && !names_a_tag() {
        return Searched::Yes;
    }
    let text = String::from_utf8_lossy(bytes);
    let makefile = is_makefile(path);
    let mut docstring = false;
    for (n, line) in text.lines().enumerate() {
        let in_docstring = docstring;
        docstring = advice::docstring_after(line, docstring);
        // A Makefile's definition of a variable berth reads (`EPP_IMAGE ?= …`) is
        // make's default, which `berth validate` compares with berth.yaml's.
        if makefile && defines(line, scanner_variables) {
            continue;
        }
        // Columns counted on from the previous copy's: one pass over a line however many
        // copies it holds (a 6 MB line of 300,000 copies was quadratic).
        let (mut counted_to, mut column) = (0, 1);
        for spelling in scanner.line(line) {
            if spelling.offset >= counted_to {
                column += line[counted_to..spelling.offset].chars().count();
            } else {
                column = line[..spelling.offset].chars().count() + 1;
            }
            counted_to = spelling.offset;
            out.push(Copy {
                path: path.to_path_buf(),
                line: n + 1,
                column,
                text: spelling.text.to_string(),
                component: spelling.component,
                tag_default: None,
                place: place(path, line, spelling.offset, in_docstring),
            });
        }
        if tags.is_empty() || !line.contains("${") {
            continue;
        }
        for default in berth_core::scan::shell_defaults(line) {
            let Some(t) = tags.iter().find(|t| t.variable == default.variable) else {
                continue;
            };
            if default.value.is_empty() || default.value == t.tag {
                continue;
            }
            out.push(Copy {
                path: path.to_path_buf(),
                line: n + 1,
                column: line[..default.offset].chars().count() + 1,
                text: default.text.to_string(),
                component: t.component,
                tag_default: Some((default.value.to_string(), t.tag.clone())),
                place: Place::Code,
            });
        }
    }
    if skip_generated && !out.is_empty() && advice::generated(&text) {
        let left_out = out.len();
        out.clear();
        return Searched::Generated(left_out);
    }
    Searched::Yes
}

/// Whether `path` is read by make (a Makefile, or a `.mk` file).
fn is_makefile(path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    matches!(name, "Makefile" | "GNUmakefile" | "makefile") || name.ends_with(".mk")
}

/// Whether `line` defines one of `variables` as make writes it
/// (`NAME ?= …`, `NAME := …`, `NAME = …`, `export NAME ?= …`).
fn defines(line: &str, variables: &[String]) -> bool {
    let line = line.trim_start();
    let line = line.strip_prefix("export ").unwrap_or(line).trim_start();
    let end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(line.len());
    let (name, rest) = line.split_at(end);
    let rest = rest.trim_start();
    let assigns = ["?=", ":=", "::=", "="]
        .iter()
        .any(|op| rest.starts_with(op));
    assigns && variables.iter().any(|v| v == name)
}

/// berth.yaml, berth.lock and what berth renders (manifest files and
/// directories, kustomizations and the local resources they name).
fn skipped_paths(project: &Project) -> Vec<Skip> {
    let canonical = |p: PathBuf| p.canonicalize().unwrap_or(p);
    let whole = |path: PathBuf| Skip {
        yaml_only: path.is_dir(),
        path,
    };
    let mut out = vec![
        whole(canonical(
            project.dir.join(berth_core::project::PROJECT_FILE),
        )),
        whole(canonical(project.dir.join("berth.lock"))),
    ];
    let manifests = project
        .manifests
        .iter()
        .chain(project.profiles.iter().flat_map(|p| &p.manifests));
    for manifest in manifests {
        match &manifest.source {
            ManifestSource::Path(p) => out.push(whole(canonical(project.dir.join(p)))),
            ManifestSource::Kustomize(dir) => {
                let mut dirs = Vec::new();
                kustomization(&project.dir.join(dir), &mut dirs, 0);
                out.extend(dirs.into_iter().map(whole));
            }
            // The chart's templates are what berth renders; its values files are
            // copies of images to report, so they are not skipped.
            ManifestSource::Helm(chart) if chart.is_local() => out.push(Skip {
                path: canonical(project.dir.join(&chart.chart)),
                yaml_only: false,
            }),
            ManifestSource::Helm(_) | ManifestSource::Stdin => {}
        }
    }
    // The walker gives paths under the root as given; compare both spellings.
    let dir = canonical(project.dir.clone());
    let more: Vec<Skip> = out
        .iter()
        .filter_map(|s| {
            let path = project.dir.join(s.path.strip_prefix(&dir).ok()?);
            Some(Skip { path, ..s.clone() })
        })
        .collect();
    out.extend(more);
    out
}

/// The files of a kustomization's directory and, recursively, of the local
/// `resources:`, `components:` and `bases:` it names.
fn kustomization(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    if depth > 20 || out.contains(&dir) {
        return;
    }
    out.push(dir.clone());
    let Some((_, read)) = crate::kustomize::read_kustomization(&dir) else {
        return;
    };
    for entry in read.local_bases() {
        let path = dir.join(entry);
        if path.is_dir() {
            kustomization(&path, out, depth + 1);
        } else {
            out.push(path.canonicalize().unwrap_or(path));
        }
    }
}
