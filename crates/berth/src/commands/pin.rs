//! `berth pin`: digests for every resolved image, and for every remote Helm
//! chart berth.yaml renders, into berth.lock.

use std::time::Instant;

use anyhow::{anyhow, Result};
use berth_core::lock::LOCK_FILE;
use berth_core::{Project, Resolution};

use crate::pinning::{pin, write_atomic};

use crate::settings::Registry as RegistrySettings;

pub fn run(
    settings: &RegistrySettings,
    project: &Project,
    resolution: &Resolution<'_>,
) -> Result<()> {
    let started = Instant::now();
    crate::signatures::ready(project)?;
    let client = crate::tag_lists::client(settings)?;
    let mut lock = pin(&client, settings, resolution)?;
    let path = project.dir.join(LOCK_FILE);
    // The lock as it was: a digest it verified already is not verified again. One
    // that does not read is written anew.
    let held = std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| berth_core::lock::Lock::parse(LOCK_FILE, &text).ok());
    crate::signatures::verify_all(&client, settings, project, &mut lock, held.as_ref())?;
    lock.charts = crate::helm::charts::pin_all(project)
        .map_err(|e| anyhow!("{e}; berth.lock is unchanged"))?;
    let text = lock.to_yaml();
    let changed = std::fs::read_to_string(&path).map_or(true, |old| old != text);
    if changed {
        write_atomic(&path, &text)?;
    }
    let charts = match lock.charts.len() {
        0 => String::new(),
        n => format!(" and {n} chart(s)"),
    };
    say!(
        "pinned {} image(s){charts} in {:.2} s; {} {}",
        lock.entries.len(),
        started.elapsed().as_secs_f64(),
        LOCK_FILE,
        if changed { "written" } else { "unchanged" }
    );
    Ok(())
}
