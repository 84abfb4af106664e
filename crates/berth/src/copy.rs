//! Copying images between registries for `berth promote` and `berth mirror`:
//! digests preserved, blobs already there not sent again, progress on a
//! terminal, one summary line.

use std::io::IsTerminal;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, Result};
use berth_ref::Reference;
use berth_registry::{copy_attached, copy_image, DockerConfig, Progress, Quiet, Stats};
use indicatif::{ProgressBar, ProgressStyle};

use crate::settings::Registry;

/// Copies each `(component, source, target)` in turn, digests preserved and
/// blobs already there not sent again — with `signatures`, the signatures,
/// attestations and SBOMs attached to each by tag too — then says what it did on
/// stderr (`VERB N image(s) to TO in …`). `berth promote` and `berth mirror` copy here.
pub fn copy_all(
    settings: &Registry,
    copies: &[(String, Reference, Reference)],
    signatures: bool,
    verb: &str,
    to: &str,
) -> Result<()> {
    let started = Instant::now();
    let registry = Arc::new(berth_registry::Registry::new(
        settings.options.clone(),
        DockerConfig::load()?,
    )?);
    let stats = Arc::new(Stats::default());
    let progress: Arc<dyn Progress> = if std::io::stderr().is_terminal() {
        Arc::new(Bar::new())
    } else {
        Arc::new(Quiet)
    };
    let runtime = crate::runtime::get()?;
    let mut attached = 0;
    for (component, source, target) in copies {
        runtime
            .block_on(async {
                let registry = Arc::clone(&registry);
                let copied = copy_image(
                    Arc::clone(&registry),
                    source,
                    target,
                    Arc::clone(&stats),
                    Arc::clone(&progress),
                )
                .await?;
                if signatures {
                    attached += copy_attached(
                        registry,
                        source,
                        target,
                        &copied,
                        Arc::clone(&stats),
                        Arc::clone(&progress),
                    )
                    .await?;
                }
                Ok::<_, berth_registry::RegistryError>(())
            })
            .map_err(|e| anyhow!("component `{component}`: {e}"))?;
    }
    let attached = match (signatures, attached) {
        (false, _) => ", signatures left behind (--no-signatures)".to_string(),
        (true, 0) => String::new(),
        (true, n) => format!(", {n} signature/attestation/SBOM artifact(s) with them"),
    };
    let mb = |n: u64| n as f64 / 1e6;
    say!(
        "{verb} {} image(s) to {to} in {:.2} s: {} blob(s) sent ({:.1} MB), {} already there ({:.1} MB), {} mounted ({:.1} MB), {} manifest(s){attached}",
        copies.len(),
        started.elapsed().as_secs_f64(),
        stats.blobs_sent.load(Ordering::Relaxed),
        mb(stats.bytes_sent.load(Ordering::Relaxed)),
        stats.blobs_present.load(Ordering::Relaxed),
        mb(stats.bytes_present.load(Ordering::Relaxed)),
        stats.blobs_mounted.load(Ordering::Relaxed),
        mb(stats.bytes_mounted.load(Ordering::Relaxed)),
        stats.manifests.load(Ordering::Relaxed),
    );
    Ok(())
}

/// A byte progress bar on stderr, for terminals.
struct Bar(ProgressBar);

impl Bar {
    fn new() -> Bar {
        let bar = ProgressBar::new(0);
        let style =
            ProgressStyle::with_template("{bar:30} {bytes}/{total_bytes} {bytes_per_sec} {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        Bar(bar)
    }
}

impl Progress for Bar {
    fn sent(&self, bytes: u64) {
        self.0.inc(bytes);
    }
    fn expect(&self, size: u64) {
        self.0.inc_length(size);
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}
