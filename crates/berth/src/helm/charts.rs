//! Remote charts in berth.lock. `berth pin` pulls each remote chart berth.yaml
//! names (in `manifests:` and in every profile) at its version, records the
//! digest of its archive, and keeps the archive in berth's chart cache. Under
//! `--locked` a remote `helm:` source renders that archive: from the cache when
//! it is there (offline — the registry may be down), else pulled again and
//! checked against the lock, so a chart republished under the same version is
//! refused, never rendered.
//!
//! The cache is `$XDG_CACHE_HOME/berth/charts` (else `~/.cache/berth/charts`),
//! one `sha256-HEX.tgz` per archive; what is read from it is hashed again first,
//! so a damaged or edited file is pulled anew, not rendered.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{anyhow, bail, Result};
use berth_core::lock::ChartPin;
use berth_core::project::HelmChart;
use berth_core::{ManifestSource, Project};
use berth_ref::Digest;

use super::{binary, describe_version, TIMEOUT};

/// Every remote chart of berth.yaml, each pulled once and pinned, in file order.
pub fn pin_all(project: &Project) -> Result<Vec<ChartPin>> {
    let sources = project
        .manifests
        .iter()
        .chain(project.profiles.iter().flat_map(|p| p.manifests.iter()));
    let mut pins: Vec<ChartPin> = Vec::new();
    for manifest in sources {
        let ManifestSource::Helm(chart) = &manifest.source else {
            continue;
        };
        if chart.is_local() {
            continue;
        }
        let origin = format!("{}:{} (`manifests:`)", project.file, manifest.pos);
        let version = version(chart, &origin)?;
        let repository = chart.repository.as_deref();
        if pins.iter().any(|p| {
            p.chart == chart.chart && p.repository.as_deref() == repository && p.version == version
        }) {
            continue;
        }
        let (digest, _) = pull(chart, &origin)?;
        pins.push(ChartPin {
            chart: chart.chart.clone(),
            repository: chart.repository.clone(),
            version: version.to_string(),
            digest,
        });
    }
    Ok(pins)
}

/// Under `--locked`, the archive to render for a remote chart: the one pinned.
pub fn locked_archive(chart: &HelmChart, pins: &[ChartPin], origin: &str) -> Result<PathBuf> {
    let version = version(chart, origin)?;
    let pin = pins
        .iter()
        .find(|p| p.chart == chart.chart && p.repository == chart.repository && p.version == version)
        .ok_or_else(|| {
            anyhow!(
                "{origin}: chart `{}` version `{version}` is not in berth.lock, and `--locked` renders only pinned charts; run `berth pin` to record it",
                chart.chart
            )
        })?;
    if let Some(path) = cached(&pin.digest)? {
        return Ok(path);
    }
    let (digest, path) = pull(chart, origin)?;
    if digest != pin.digest {
        bail!(
            "{origin}: chart `{}` version `{version}` is now {digest}, but berth.lock pinned {}: the chart was published again under the same version; check the change, then run `berth pin` to accept it",
            chart.chart,
            pin.digest
        );
    }
    Ok(path)
}

fn version<'c>(chart: &'c HelmChart, origin: &str) -> Result<&'c str> {
    chart
        .version
        .as_deref()
        .ok_or_else(|| anyhow!("{origin}: a remote chart needs `version:` to be pinned"))
}

/// `helm pull` into a new temporary directory; the archive hashed and kept in
/// the cache. Returns its digest and its path in the cache.
fn pull(chart: &HelmChart, origin: &str) -> Result<(Digest, PathBuf)> {
    let scratch = tempfile::tempdir()?;
    let mut command = Command::new(binary());
    command.args(["pull", &chart.chart, "--destination"]);
    command.arg(scratch.path());
    if let Some(version) = &chart.version {
        command.args(["--version", version]);
    }
    if let Some(repository) = &chart.repository {
        command.args(["--repo", repository]);
    }
    if chart.plain_http {
        command.arg("--plain-http");
    }
    let name = format!("helm pull {}", chart.chart);
    let output = berth_io::run(&mut command, b"", TIMEOUT, 64 * 1024)
        .map_err(|e| anyhow!("{origin}: `{name}`: {e}"))?;
    if !output.status.success() {
        bail!(
            "{origin}: `{name}` failed ({}): {}",
            describe_version(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let archive = only_archive(scratch.path())
        .ok_or_else(|| anyhow!("{origin}: `{name}` wrote no chart archive"))?;
    let bytes = berth_io::read_file(&archive, false)
        .map_err(|e| anyhow!("{origin}: reading what `{name}` pulled: {e}"))?;
    let digest = ChartPin::digest_of(&bytes);
    let path = store(&digest, &bytes)?;
    Ok((digest, path))
}

/// The one `.tgz` in `dir`.
fn only_archive(dir: &Path) -> Option<PathBuf> {
    let mut archives = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "tgz"));
    let first = archives.next()?;
    archives.next().is_none().then_some(first)
}

/// The cache directory (created when missing).
fn cache_dir() -> Result<PathBuf> {
    let base = crate::fs_source::user_cache().ok_or_else(|| {
        anyhow!("neither XDG_CACHE_HOME nor HOME is set: berth has nowhere to keep pinned charts")
    })?;
    let dir = base.join("berth/charts");
    std::fs::create_dir_all(&dir)
        .map_err(|e| anyhow!("cannot create the chart cache `{}`: {e}", dir.display()))?;
    Ok(dir)
}

fn file_name(digest: &Digest) -> String {
    format!("{}-{}.tgz", digest.algorithm().as_str(), digest.hex())
}

/// The cached archive of `digest`, when its bytes still hash to it (a file
/// that does not is removed: the caller pulls it again).
fn cached(digest: &Digest) -> Result<Option<PathBuf>> {
    let path = cache_dir()?.join(file_name(digest));
    let Ok(bytes) = berth_io::read_file(&path, false) else {
        return Ok(None);
    };
    if ChartPin::digest_of(&bytes) == *digest {
        return Ok(Some(path));
    }
    // A damaged entry is worth nothing; if removing it fails, the write after the pull replaces it.
    let _ = std::fs::remove_file(&path);
    Ok(None)
}

/// Keeps `bytes` in the cache under their digest, through berth's one writer.
fn store(digest: &Digest, bytes: &[u8]) -> Result<PathBuf> {
    let dir = cache_dir()?;
    let path = dir.join(file_name(digest));
    berth_io::write_atomic(&dir, &path, bytes, berth_io::WriteMode::Replace)
        .map_err(|e| anyhow!("{e}"))?;
    Ok(path)
}
