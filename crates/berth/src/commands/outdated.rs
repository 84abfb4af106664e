//! `berth outdated`: each component's and variant's tag beside the newest
//! release of its repository, and the tags pinned in berth.lock that were
//! pushed again since. The registries are read here; berth-update decides.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::{anyhow, Result};
use berth_core::lock::{Lock, LOCK_FILE};
use berth_core::{Project, Resolution};
use berth_ref::Digest;
use berth_registry::{Pin, Registry};
use berth_update::{Row, State};
use serde_json::json;

use crate::cli::{OutdatedArgs, OutdatedFormat};
use crate::settings::Registry as RegistrySettings;

/// A tag pinned in berth.lock whose digest the registry no longer gives.
struct Republished {
    locked: Digest,
    now: Digest,
}

pub fn run(
    args: &OutdatedArgs,
    settings: &RegistrySettings,
    project: &Project,
    resolution: &Resolution<'_>,
) -> Result<u8> {
    let (images, registry, tags) =
        crate::tag_lists::chosen_and_tags(resolution, &args.components, settings)?;
    let rows: Vec<Row> = (images.iter())
        .flat_map(|image| berth_update::rows(image, &tags, args.pre))
        .collect();
    let lock = existing_lock(project, args.resolve.locked)?;
    let moved = match &lock {
        Some(lock) => republished(&registry, settings, lock, &rows)?,
        None => BTreeMap::new(),
    };
    let text = match args.output {
        OutdatedFormat::Table => table(&rows, &moved),
        OutdatedFormat::Json => json_rows(&rows, &moved),
    };
    crate::output::print(&text)?;
    let stale = rows
        .iter()
        .any(|r| matches!(r.state, State::Outdated { .. } | State::Lacks));
    Ok(u8::from(args.exit_code && (stale || !moved.is_empty())))
}

/// berth.lock when it exists (required with `--locked`).
fn existing_lock(project: &Project, required: bool) -> Result<Option<Lock>> {
    if required || project.dir.join(LOCK_FILE).exists() {
        crate::project_file::load_lock(project).map(Some)
    } else {
        Ok(None)
    }
}

/// The pins of berth.lock for the images `rows` name whose digest the registry
/// now gives differently, by `(component, repository:tag)`.
fn republished(
    registry: &Arc<Registry>,
    settings: &RegistrySettings,
    lock: &Lock,
    rows: &[Row],
) -> Result<BTreeMap<(String, String), Republished>> {
    let named = |entry: &&berth_core::lock::LockEntry| {
        rows.iter().any(|r| {
            r.component == entry.component
                && entry.image.repository().to_string() == r.repository
                && entry.image.tag().is_some_and(|t| t.as_str() == r.current)
        })
    };
    let entries: Vec<&berth_core::lock::LockEntry> = lock.entries.iter().filter(named).collect();
    let asked = (entries.iter())
        .map(|entry| {
            let pin = match entry.platform.as_deref().map(str::parse) {
                Some(Ok(platform)) => Pin::Platform(platform),
                _ => Pin::Top,
            };
            (entry.image.clone(), pin)
        })
        .collect();
    let now = crate::pinning::pin_each(registry, settings, asked)?;
    let mut out = BTreeMap::new();
    for (entry, result) in entries.into_iter().zip(now) {
        let pinned = result
            .map_err(|e| anyhow!("cannot compare {}'s pin in {LOCK_FILE}: {e}", entry.image))?;
        if pinned.digest != entry.digest {
            let key = (entry.component.clone(), entry.image.to_string());
            out.insert(
                key,
                Republished {
                    locked: entry.digest.clone(),
                    now: pinned.digest,
                },
            );
        }
    }
    Ok(out)
}

fn image_of(row: &Row) -> String {
    format!("{}:{}", row.repository, row.current)
}

fn moved_of<'m>(
    row: &Row,
    moved: &'m BTreeMap<(String, String), Republished>,
) -> Option<&'m Republished> {
    moved.get(&(row.component.clone(), image_of(row)))
}

/// What a row's state means, in words.
fn status(row: &Row) -> String {
    match &row.state {
        State::Current => "up to date".into(),
        State::Outdated { .. } if row.own_tag => {
            "outdated (its own tag: `berth update` leaves it; change it in berth.yaml)".into()
        }
        State::Outdated { to: Some(to) } if Some(to) == row.newest.as_ref() => "outdated".into(),
        State::Outdated { to: Some(to) } => {
            format!(
                "outdated; `berth update` moves the family to {to}, the newest every variant has"
            )
        }
        State::Outdated { to: None } => "outdated; no newer version every variant has".into(),
        State::Lacks => format!(
            "lacks {}: the family cannot move there",
            row.newest.as_deref().unwrap_or_default()
        ),
        State::Unversioned => "not a version: nothing to order".into(),
        State::Unreadable(why) => format!("unknown: {why}"),
    }
}

fn short(digest: &Digest) -> String {
    let text = digest.to_string();
    text.chars().take(19).collect::<String>() + "…"
}

fn table(rows: &[Row], moved: &BTreeMap<(String, String), Republished>) -> String {
    let mut lines = vec![["COMPONENT", "VARIANT", "CURRENT", "NEWEST", "STATUS"]
        .map(String::from)
        .to_vec()];
    for row in rows {
        let mut state = status(row);
        if let Some(m) = moved_of(row, moved) {
            state.push_str(&format!(
                "; republished: {LOCK_FILE} has {}, the registry {}",
                short(&m.locked),
                short(&m.now)
            ));
        }
        lines.push(vec![
            row.component.clone(),
            row.variant.clone().unwrap_or_else(|| "-".into()),
            if row.current.is_empty() {
                "-".into()
            } else {
                row.current.clone()
            },
            row.newest.clone().unwrap_or_else(|| "-".into()),
            state,
        ]);
    }
    crate::output::table(&lines)
}

fn json_rows(rows: &[Row], moved: &BTreeMap<(String, String), Republished>) -> String {
    let items: Vec<serde_json::Value> = (rows.iter())
        .map(|row| {
            let (state, update) = match &row.state {
                State::Current => ("current", None),
                State::Outdated { to } => ("outdated", to.as_deref().filter(|_| !row.own_tag)),
                State::Lacks => ("lacks", None),
                State::Unversioned => ("unversioned", None),
                State::Unreadable(_) => ("unknown", None),
            };
            json!({
                "component": row.component,
                "variant": row.variant,
                "repository": row.repository,
                "current": row.current,
                "newest": row.newest,
                "status": state,
                "update": update,
                "ownTag": row.own_tag,
                "republished": moved_of(row, moved).map(|m| json!({
                    "locked": m.locked.to_string(),
                    "registry": m.now.to_string(),
                })),
            })
        })
        .collect();
    // A `Value` of strings and arrays always serializes.
    let mut text = serde_json::to_string_pretty(&items).unwrap_or_default();
    text.push('\n');
    text
}
