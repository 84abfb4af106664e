//! Pinning: one manifest HEAD per image, concurrently with a bounded pool.

use std::str::FromStr;
use std::sync::Arc;

use berth_ref::{Digest, Reference};
use serde_json::Value;
use tokio::sync::Semaphore;

use crate::{Registry, RegistryError};

/// A platform for `--platform os/arch[/variant]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Platform {
    /// `linux`.
    pub os: String,
    /// `amd64`, `arm64`.
    pub architecture: String,
    /// `v8`, if given.
    pub variant: Option<String>,
}

impl FromStr for Platform {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = s.split('/').collect();
        match parts.as_slice() {
            [os, arch] if !os.is_empty() && !arch.is_empty() => Ok(Platform {
                os: os.to_string(),
                architecture: arch.to_string(),
                variant: None,
            }),
            [os, arch, variant] if !os.is_empty() && !arch.is_empty() && !variant.is_empty() => {
                Ok(Platform {
                    os: os.to_string(),
                    architecture: arch.to_string(),
                    variant: Some(variant.to_string()),
                })
            }
            _ => Err(format!(
                "`{s}` is not a platform; write os/arch or os/arch/variant, e.g. linux/arm64"
            )),
        }
    }
}

impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)?;
        if let Some(v) = &self.variant {
            write!(f, "/{v}")?;
        }
        Ok(())
    }
}

/// The digest of one image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pinned {
    /// The image as given.
    pub image: Reference,
    /// Its digest: the index's, or with a platform that platform's manifest.
    pub digest: Digest,
}

/// What to pin of one image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pin {
    /// The digest of what the tag names (an index, or a single manifest).
    Top,
    /// The manifest of this platform (`--platform`): an index's entry, or the
    /// manifest itself when it is of that platform.
    Platform(Platform),
    /// The digest of what the tag names, which must provide this platform (a
    /// variant's `platform:`): an index listing it, or a single manifest of it.
    Providing(Platform),
}

/// Pins every image as asked, at most `concurrency` at a time; results in input order.
pub async fn pin_all(
    registry: Arc<Registry>,
    images: Vec<(Reference, Pin)>,
    concurrency: usize,
) -> Vec<Result<Pinned, RegistryError>> {
    let permits = Arc::new(Semaphore::new(concurrency.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    for (index, (image, pin)) in images.into_iter().enumerate() {
        let registry = Arc::clone(&registry);
        let permits = Arc::clone(&permits);
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await;
            let result = match &pin {
                Pin::Top => registry.manifest_digest(&image).await,
                Pin::Platform(platform) => {
                    (platform_digest(&registry, &image, platform).await).map(|(_, entry)| entry)
                }
                Pin::Providing(platform) => {
                    (platform_digest(&registry, &image, platform).await).map(|(top, _)| top)
                }
            };
            (index, result.map(|digest| Pinned { image, digest }))
        });
    }
    let mut results: Vec<Option<Result<Pinned, RegistryError>>> = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        if let Ok((index, result)) = joined {
            if results.len() <= index {
                results.resize_with(index + 1, || None);
            }
            results[index] = Some(result);
        }
    }
    results
        .into_iter()
        .map(|r| {
            r.unwrap_or_else(|| {
                Err(RegistryError::Other {
                    image: String::new(),
                    registry: String::new(),
                    reason: "a pin task stopped unexpectedly".into(),
                    source: None,
                })
            })
        })
        .collect()
}

/// The platform a single-platform manifest's image config names.
async fn single_platform(
    registry: &Registry,
    image: &Reference,
    manifest: &Value,
) -> Result<Platform, RegistryError> {
    let other = |reason: String| RegistryError::other(image, reason);
    let config = manifest
        .pointer("/config/digest")
        .and_then(Value::as_str)
        .ok_or_else(|| other("its manifest names no config, so its platform is unknown; pin it without --platform".into()))?;
    let config = Digest::parse(config)
        .map_err(|e| other(format!("its manifest names an unusable config digest: {e}")))?;
    let bytes = registry.small_blob(image, &config).await?;
    let json: Value = serde_json::from_slice(&bytes).map_err(|_| {
        other(
            "its image config is not JSON, so its platform is unknown; pin it without --platform"
                .into(),
        )
    })?;
    let field = |k: &str| {
        json.get(k)
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
    };
    match (field("os"), field("architecture")) {
        (Some(os), Some(architecture)) => Ok(Platform {
            os: os.to_string(),
            architecture: architecture.to_string(),
            variant: field("variant").map(str::to_string),
        }),
        _ => Err(other("its config names no os and architecture (it is not a container image), so --platform cannot apply; pin it without --platform".into())),
    }
}

/// The digest the tag names and the one of `platform`'s manifest: the matching
/// entry of an index, or the manifest itself when it is of that platform.
async fn platform_digest(
    registry: &Registry,
    image: &Reference,
    platform: &Platform,
) -> Result<(Digest, Digest), RegistryError> {
    let (bytes, digest) = registry.manifest(image).await?;
    // `manifest` has checked that this is a manifest's JSON.
    let json: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let Some(manifests) = json.get("manifests").and_then(Value::as_array) else {
        // A single-platform manifest: its config says which platform it is.
        let found = single_platform(registry, image, &json).await?;
        let matches = found.os == platform.os
            && found.architecture == platform.architecture
            && platform
                .variant
                .as_ref()
                .is_none_or(|v| found.variant.as_ref() == Some(v));
        return if matches {
            Ok((digest.clone(), digest))
        } else {
            Err(RegistryError::NoPlatform {
                image: image.to_string(),
                platform: platform.to_string(),
                available: format!("{found} only: it is a single-platform image, not an index"),
            })
        };
    };
    let describe = |m: &Value| {
        let p = m.get("platform");
        let field = |k: &str| {
            p.and_then(|p| p.get(k))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        (
            field("os"),
            field("architecture"),
            field("variant"),
            m.get("digest")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        )
    };
    let found = manifests
        .iter()
        .map(describe)
        .find(|(os, arch, variant, _)| {
            os == &platform.os
                && arch == &platform.architecture
                && platform.variant.as_ref().is_none_or(|v| v == variant)
        });
    match found {
        Some((_, _, _, entry)) => match Digest::parse(&entry) {
            Ok(entry) => Ok((digest, entry)),
            Err(e) => Err(RegistryError::other(
                image,
                format!("the index lists an unusable digest `{entry}`: {e}"),
            )),
        },
        None => Err(RegistryError::NoPlatform {
            image: image.to_string(),
            platform: platform.to_string(),
            available: manifests
                .iter()
                .map(describe)
                .map(|(os, arch, variant, _)| {
                    if variant.is_empty() {
                        format!("{os}/{arch}")
                    } else {
                        format!("{os}/{arch}/{variant}")
                    }
                })
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}
