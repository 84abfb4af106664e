//! Promotion: copy an image — index, manifests, config and layer blobs — to
//! another repository with every digest preserved. Blobs the target already
//! has are not sent; on the same registry they are mounted across repositories.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use berth_ref::{Digest, Reference};
use serde_json::Value;
use tokio::sync::Semaphore;

use crate::{Registry, RegistryError};

mod referrers;

/// Blobs copied at once per image.
const BLOB_CONCURRENCY: usize = 4;

/// What a copy did.
#[derive(Debug, Default)]
pub struct Stats {
    /// Blobs streamed to the target.
    pub blobs_sent: AtomicUsize,
    /// Bytes streamed to the target.
    pub bytes_sent: AtomicU64,
    /// Blobs the target already had.
    pub blobs_present: AtomicUsize,
    /// Their bytes (not sent).
    pub bytes_present: AtomicU64,
    /// Blobs mounted from another repository of the same registry.
    pub blobs_mounted: AtomicUsize,
    /// Their bytes (not sent).
    pub bytes_mounted: AtomicU64,
    /// Manifests and indexes pushed.
    pub manifests: AtomicUsize,
}

/// Reports progress: bytes as they stream, and the size of each blob about to be sent.
pub trait Progress: Send + Sync {
    /// `bytes` more bytes were sent.
    fn sent(&self, bytes: u64);
    /// A blob of `size` bytes is about to be sent.
    fn expect(&self, size: u64);
}

/// No progress display.
pub struct Quiet;

impl Progress for Quiet {
    fn sent(&self, _: u64) {}
    fn expect(&self, _: u64) {}
}

/// What [`copy_image`] copied: the top manifest's digest and, for an index, its
/// platform manifests' — what `cosign sign --recursive` signs one by one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copied {
    /// The digest of the manifest or index copied.
    pub digest: Digest,
    /// The digests an index lists (none for a single image).
    pub platforms: Vec<Digest>,
}

/// Copies `source` to `target` (a tag or a digest reference), preserving digests.
pub async fn copy_image(
    registry: Arc<Registry>,
    source: &Reference,
    target: &Reference,
    stats: Arc<Stats>,
    progress: Arc<dyn Progress>,
) -> Result<Copied, RegistryError> {
    let (bytes, digest) = registry.manifest(source).await?;
    copy_fetched(
        &registry,
        source,
        target,
        (&bytes, digest),
        &stats,
        &progress,
    )
    .await
}

/// [`copy_image`] for a manifest already read: its bytes and digest.
async fn copy_fetched(
    registry: &Arc<Registry>,
    source: &Reference,
    target: &Reference,
    (bytes, digest): (&[u8], Digest),
    stats: &Arc<Stats>,
    progress: &Arc<dyn Progress>,
) -> Result<Copied, RegistryError> {
    copy_manifest(registry, source, target, bytes, stats, progress).await?;
    // Children and blobs are in place; now the top manifest, by tag, byte for byte.
    let media_type = media_type(bytes);
    registry.push_manifest(target, bytes, &media_type).await?;
    stats.manifests.fetch_add(1, Ordering::Relaxed);
    let json: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
    // copy_manifest read every listed digest already; one it could not use failed the copy.
    let platforms = (json.get("manifests").and_then(Value::as_array).into_iter())
        .flatten()
        .filter_map(|m| m.get("digest")?.as_str())
        .filter_map(|d| Digest::parse(d).ok())
        .collect();
    Ok(Copied { digest, platforms })
}

/// The tags kept beside an image for its digest `sha256-<hex>`: cosign's
/// signatures, attestations and SBOMs, and the OCI 1.1 referrers tag scheme's
/// index (what cosign 3 and oras write to a registry without the referrers API).
pub const ATTACHED_SUFFIXES: [&str; 4] = [".sig", ".att", ".sbom", ""];

/// Copies, from `source`'s repository to `target`'s, every artifact attached by
/// tag ([`ATTACHED_SUFFIXES`]) or listed by the OCI 1.1 referrers API to the
/// copied image and, for an index, to each of its platform manifests (`cosign sign
/// --recursive`), digests preserved; returns how many there were. `skopeo copy` and `crane copy` leave these behind, and
/// `cosign verify` at the destination then finds nothing.
pub async fn copy_attached(
    registry: Arc<Registry>,
    source: &Reference,
    target: &Reference,
    copied: &Copied,
    stats: Arc<Stats>,
    progress: Arc<dyn Progress>,
) -> Result<usize, RegistryError> {
    let mut count = 0;
    for digest in std::iter::once(&copied.digest).chain(&copied.platforms) {
        count += attached_to(&registry, source, target, digest, &stats, &progress).await?;
    }
    Ok(count)
}

/// [`copy_attached`] for the artifacts attached to one digest.
async fn attached_to(
    registry: &Arc<Registry>,
    source: &Reference,
    target: &Reference,
    digest: &Digest,
    stats: &Arc<Stats>,
    progress: &Arc<dyn Progress>,
) -> Result<usize, RegistryError> {
    let mut copied = 0;
    // What the referrers tag scheme's index listed, carried with it.
    let mut indexed = Vec::new();
    for suffix in ATTACHED_SUFFIXES {
        let tag = format!("{}-{}{suffix}", digest.algorithm().as_str(), digest.hex());
        let tag =
            berth_ref::Tag::parse(&tag).map_err(|e| RegistryError::other(source, e.to_string()))?;
        let (from, to) = (source.with_tag(tag.clone()), target.with_tag(tag));
        match registry.manifest_digest(&from).await {
            Ok(_) => {}
            Err(RegistryError::NotFound { .. }) => continue,
            Err(e) => return Err(e),
        }
        let carried = copy_image(
            Arc::clone(registry),
            &from,
            &to,
            Arc::clone(stats),
            Arc::clone(progress),
        )
        .await?;
        if suffix.is_empty() {
            indexed = carried.platforms;
        }
        copied += 1;
    }
    let ends = Ends { source, target };
    copied += referrers::copy_listed(registry, ends, digest, &indexed, stats, progress).await?;
    Ok(copied)
}

/// Where a copy reads and where it writes.
#[derive(Clone, Copy)]
struct Ends<'a> {
    source: &'a Reference,
    target: &'a Reference,
}

/// The manifest's media type: its own field, or what its shape says.
fn media_type(bytes: &[u8]) -> String {
    let json: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
    if let Some(t) = json.get("mediaType").and_then(Value::as_str) {
        return t.to_string();
    }
    if json.get("manifests").is_some() {
        "application/vnd.oci.image.index.v1+json".into()
    } else {
        "application/vnd.oci.image.manifest.v1+json".into()
    }
}

/// Copies what a manifest refers to: child manifests of an index, or the blobs of an image.
async fn copy_manifest(
    registry: &Arc<Registry>,
    source: &Reference,
    target: &Reference,
    bytes: &[u8],
    stats: &Arc<Stats>,
    progress: &Arc<dyn Progress>,
) -> Result<(), RegistryError> {
    let json: Value = serde_json::from_slice(bytes)
        .map_err(|e| RegistryError::other(source, format!("the manifest is not JSON: {e}")))?;
    let descriptor = |v: &Value| -> Option<(String, u64)> {
        Some((
            v.get("digest")?.as_str()?.to_string(),
            v.get("size")?.as_u64()?,
        ))
    };
    if let Some(children) = json.get("manifests").and_then(Value::as_array) {
        for child in children.iter().filter_map(descriptor) {
            let digest = berth_ref::Digest::parse(&child.0).map_err(|e| {
                RegistryError::other(source, format!("the index lists an unusable digest: {e}"))
            })?;
            let child_source = source.without_digest().with_digest(digest.clone());
            let child_target = target.without_digest().with_digest(digest);
            let (child_bytes, _) = registry.manifest(&child_source).await?;
            Box::pin(copy_manifest(
                registry,
                &child_source,
                &child_target,
                &child_bytes,
                stats,
                progress,
            ))
            .await?;
            registry
                .push_manifest(&child_target, &child_bytes, &media_type(&child_bytes))
                .await?;
            stats.manifests.fetch_add(1, Ordering::Relaxed);
        }
        return Ok(());
    }
    let mut blobs: Vec<(String, u64)> = json
        .get("config")
        .and_then(descriptor)
        .into_iter()
        .collect();
    blobs.extend(
        json.get("layers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(descriptor),
    );
    let permits = Arc::new(Semaphore::new(BLOB_CONCURRENCY));
    let mut tasks = tokio::task::JoinSet::new();
    for (digest, size) in blobs {
        let (registry, stats, progress, permits) = (
            Arc::clone(registry),
            Arc::clone(stats),
            Arc::clone(progress),
            Arc::clone(&permits),
        );
        let (source, target) = (source.clone(), target.clone());
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await;
            let blob = Blob {
                digest: &digest,
                size,
            };
            copy_blob(&registry, &source, &target, blob, &stats, progress.as_ref()).await
        });
    }
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(result) => result?,
            Err(e) => {
                return Err(RegistryError::other(
                    source,
                    format!("a copy task failed: {e}"),
                ))
            }
        }
    }
    Ok(())
}

/// A blob as a manifest names it: its digest and size.
struct Blob<'a> {
    digest: &'a str,
    size: u64,
}

async fn copy_blob(
    registry: &Registry,
    source: &Reference,
    target: &Reference,
    blob: Blob<'_>,
    stats: &Stats,
    progress: &dyn Progress,
) -> Result<(), RegistryError> {
    let Blob { digest, size } = blob;
    if registry.blob_exists(target, digest).await? {
        stats.blobs_present.fetch_add(1, Ordering::Relaxed);
        stats.bytes_present.fetch_add(size, Ordering::Relaxed);
        return Ok(());
    }
    let same_registry = source.domain() == target.domain() && source.path() != target.path();
    if same_registry && registry.mount(target, source, digest).await? {
        stats.blobs_mounted.fetch_add(1, Ordering::Relaxed);
        stats.bytes_mounted.fetch_add(size, Ordering::Relaxed);
        return Ok(());
    }
    progress.expect(size);
    registry
        .copy_blob(source, target, digest, size, &|n| progress.sent(n))
        .await?;
    stats.blobs_sent.fetch_add(1, Ordering::Relaxed);
    stats.bytes_sent.fetch_add(size, Ordering::Relaxed);
    Ok(())
}
