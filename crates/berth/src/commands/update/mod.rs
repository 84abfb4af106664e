//! `berth update`: moves components to a newer release — berth.yaml's default
//! tag, every copy of it `validate` compares, and berth.lock — changing only the
//! tag's text. The versions are decided in berth-update; the copies are found
//! in [`sites`]; every file is written through berth-io's one writer.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Result};
use berth_core::lock::{Lock, LOCK_FILE};
use berth_core::resolve::Origin;
use berth_core::{Project, Resolution};
use berth_update::{Edit, TargetError};

use crate::cli::{ResolveArgs, UpdateArgs};
use crate::settings::Registry as RegistrySettings;

mod sites;

/// One component moved from one version to another.
struct Move {
    component: String,
    from: String,
    to: String,
    /// Where its copies are, as `(file, line)`.
    sites: Vec<(String, usize)>,
}

pub fn run(
    project: Option<&std::path::Path>,
    args: &UpdateArgs,
    settings: &RegistrySettings,
) -> Result<u8> {
    let resolve = ResolveArgs {
        registry: args.prefix.clone(),
        ..ResolveArgs::default()
    };
    let (moves, edits, mut refused) =
        crate::pipeline::resolved(project, &resolve, |project, resolution| {
            plan(args, settings, project, resolution)
        })?;
    let project_file = crate::project_file::load(project)?;
    let (texts, not_made) = edited(&project_file, &edits)?;
    refused.extend(not_made);
    if args.dry_run {
        crate::output::print(&diff(&texts))?;
    } else {
        for (file, (_, after)) in &texts {
            let path = project_file.dir.join(file);
            berth_io::write_atomic(
                &project_file.dir,
                &path,
                after.as_bytes(),
                berth_io::WriteMode::Replace,
            )
            .map_err(|e| anyhow!("{e}"))?;
        }
        match &args.prefix {
            Some(prefix) if !moves.is_empty() => say!("{LOCK_FILE} is not pinned again: the tags were read under --registry {prefix}; run `berth pin`"),
            _ if !moves.is_empty() => repin(project, settings, &moves)?,
            _ => {}
        }
    }
    for m in &moves {
        let files: Vec<String> = (m.sites.iter())
            .filter(|(file, _)| texts.contains_key(file))
            .map(|(file, line)| format!("{file}:{line}"))
            .collect();
        let verb = if args.dry_run { "would move" } else { "moved" };
        say!(
            "{verb} `{}` {} → {} ({})",
            m.component,
            m.from,
            m.to,
            files.join(", ")
        );
    }
    if moves.is_empty() && refused.is_empty() {
        say!("nothing to update: every component is on the newest release its variants all have");
    }
    for why in &refused {
        crate::output::message(&format!("error: {why}"));
    }
    Ok(u8::from(!refused.is_empty()))
}

type Plan = (Vec<Move>, Vec<Edit>, Vec<String>);

/// Each edited file's text before and after, by file (relative to the project).
type Texts = BTreeMap<String, (String, String)>;

/// What moves where, and the edits that move it; what cannot move, and why.
fn plan(
    args: &UpdateArgs,
    settings: &RegistrySettings,
    project: &Project,
    resolution: &Resolution<'_>,
) -> Result<Plan> {
    // The client is for the tags alone: the moved components are pinned later, anew.
    let (images, _, tags) =
        crate::tag_lists::chosen_and_tags(resolution, &args.components, settings)?;
    let (mut moves, mut edits, mut refused) = (Vec::new(), Vec::new(), Vec::new());
    for image in images {
        let c = image.component;
        // A registry prefix (`--registry`, `IMAGE_REGISTRY`) only says where the tags
        // are read (a fork, a mirror); a tag or an image given elsewhere would be moved
        // in berth.yaml from a version it does not hold.
        let elsewhere = |o: &&Origin| {
            !matches!(
                o,
                Origin::Project { .. } | Origin::Registry(_) | Origin::RegistryEnv(_)
            )
        };
        if let Some(origin) = image.origins.parts().find(elsewhere) {
            refused.push(format!("component `{}` resolves to `{}` through {origin}; `berth update` moves berth.yaml's default, so run it without that override", c.name, image.reference));
            continue;
        }
        let Some(from) = c
            .image
            .tag()
            .map(|t| t.to_string())
            .filter(|_| c.image.digest().is_none())
        else {
            refused.push(format!("component `{}`'s default `{}` has no tag to move (or a digest, which `berth pin` keeps in berth.lock instead); write it as `repository:tag`", c.name, c.image));
            continue;
        };
        let members = berth_update::members(image);
        let target =
            berth_update::family_target(&members, &tags, &c.versions, args.pre, args.to.as_deref());
        match target {
            Ok(Some(to)) if to != from => {
                let made = sites::edits(project, c, &from, &to);
                let sites = made.iter().map(|e| (e.file.clone(), e.line)).collect();
                edits.extend(made);
                moves.push(Move {
                    component: c.name.clone(),
                    sites,
                    from,
                    to,
                });
            }
            Ok(_) => {}
            Err(e @ (TargetError::Lacking { .. } | TargetError::Absent { .. })) => {
                refused.push(format!("component `{}`: {e}", c.name));
            }
            Err(TargetError::Unreadable(why)) => bail!("{why}"),
        }
    }
    Ok((moves, edits, refused))
}

/// Each file's text before and after its edits, by file; the edits that could not be made.
fn edited(project: &Project, edits: &[Edit]) -> Result<(Texts, Vec<String>)> {
    let mut texts = Texts::new();
    let mut refused = Vec::new();
    for edit in edits {
        if !texts.contains_key(&edit.file) {
            let path = project.dir.join(&edit.file);
            let bytes = crate::fs_source::read_bounded(&path)
                .map_err(|e| anyhow!("cannot read {}: {e}", edit.file))?;
            let text =
                String::from_utf8(bytes).map_err(|_| anyhow!("{} is not UTF-8 text", edit.file))?;
            texts.insert(edit.file.clone(), (text.clone(), text));
        }
        let Some((_, after)) = texts.get_mut(&edit.file) else {
            continue;
        };
        match berth_update::replace_token(after, edit) {
            Ok(text) => *after = text,
            Err(e) => refused.push(e.to_string()),
        }
    }
    texts.retain(|_, (before, after)| before != after);
    Ok((texts, refused))
}

/// The unified diff of every edited file, as `git diff` shows it.
fn diff(texts: &Texts) -> String {
    let mut out = String::new();
    for (file, (before, after)) in texts {
        let text = similar::TextDiff::from_lines(before, after)
            .unified_diff()
            .context_radius(3)
            .header(&format!("a/{file}"), &format!("b/{file}"))
            .to_string();
        out.push_str(&text);
    }
    out
}

/// berth.lock, when it exists, with the moved components pinned again (read
/// from the berth.yaml just written); every other entry kept as it was.
fn repin(
    project: Option<&std::path::Path>,
    settings: &RegistrySettings,
    moves: &[Move],
) -> Result<()> {
    crate::pipeline::resolved(project, &ResolveArgs::default(), |project, resolution| {
        let path = project.dir.join(LOCK_FILE);
        if !path.exists() {
            return Ok(());
        }
        let old = crate::project_file::load_lock(project)?;
        let moved = |name: &str| moves.iter().any(|m| m.component == name);
        let client = crate::tag_lists::client(settings)?;
        let fresh = crate::pinning::pin_components(&client, settings, resolution, &moved)
            .map_err(|e| anyhow!("{e}; berth.yaml is moved, run `berth pin` to pin it"))?;
        let mut entries = Vec::new();
        for image in &resolution.images {
            let name = image.component.name.as_str();
            let from = if moved(name) {
                &fresh.entries
            } else {
                &old.entries
            };
            entries.extend(from.iter().filter(|e| e.component == name).cloned());
        }
        let known = |name: &str| resolution.images.iter().any(|i| i.component.name == name);
        entries.extend(old.entries.iter().filter(|e| !known(&e.component)).cloned());
        let mut lock = Lock {
            entries,
            charts: old.charts.clone(),
        };
        crate::signatures::verify_all(&client, settings, project, &mut lock, Some(&old))?;
        crate::pinning::write_atomic(&path, &lock.to_yaml())
    })
}
