//! A Flux OCI artifact: rendered manifests as one gzipped tarball layer, as
//! `flux push artifact` makes it, so CI needs no flux CLI and Flux's
//! `OCIRepository` reads it as it reads its own.
//!
//! The tarball is reproducible (sorted paths, mode 0644, owner 0, time 0), so
//! the same manifests give the same layer digest; only the `created`
//! annotation says when.

use std::io::Write as _;

use berth_ref::{Digest, Reference};
use sha2::{Digest as _, Sha256};

use crate::client::Registry;
use crate::error::RegistryError;

/// The config blob's media type Flux expects.
pub const FLUX_CONFIG: &str = "application/vnd.cncf.flux.config.v1+json";
/// The layer's media type Flux expects.
pub const FLUX_CONTENT: &str = "application/vnd.cncf.flux.content.v1.tar+gzip";
const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// What an artifact carries besides its files.
#[derive(Debug, Clone, Default)]
pub struct ArtifactMeta {
    /// `org.opencontainers.image.source`: where the manifests come from (a git URL).
    pub source: Option<String>,
    /// `org.opencontainers.image.revision`: which revision (`main@sha1:…`).
    pub revision: Option<String>,
    /// `org.opencontainers.image.created` (RFC 3339).
    pub created: String,
}

fn sha256(bytes: &[u8]) -> String {
    berth_ref::Digest::from_sha256(&Sha256::digest(bytes).into()).to_string()
}

/// The files as a reproducible gzipped tarball.
pub fn tarball(files: &[(String, Vec<u8>)]) -> std::io::Result<Vec<u8>> {
    let mut sorted: Vec<&(String, Vec<u8>)> = files.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let gzip = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::default());
    let mut archive = tar::Builder::new(gzip);
    for (path, bytes) in sorted {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        header.set_entry_type(tar::EntryType::Regular);
        archive.append_data(&mut header, path, bytes.as_slice())?;
    }
    let mut gzip = archive.into_inner()?;
    gzip.flush()?;
    gzip.finish()
}

/// The artifact's blobs and manifest: `(config, layer, manifest)` bytes.
pub fn artifact(
    files: &[(String, Vec<u8>)],
    meta: &ArtifactMeta,
) -> std::io::Result<(Vec<u8>, Vec<u8>, Vec<u8>)> {
    let config = b"{}".to_vec();
    let layer = tarball(files)?;
    let mut annotations = serde_json::Map::new();
    annotations.insert(
        "org.opencontainers.image.created".into(),
        meta.created.clone().into(),
    );
    if let Some(source) = &meta.source {
        annotations.insert(
            "org.opencontainers.image.source".into(),
            source.clone().into(),
        );
    }
    if let Some(revision) = &meta.revision {
        annotations.insert(
            "org.opencontainers.image.revision".into(),
            revision.clone().into(),
        );
    }
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": FLUX_CONFIG, "digest": sha256(&config), "size": config.len()},
        "layers": [{"mediaType": FLUX_CONTENT, "digest": sha256(&layer), "size": layer.len()}],
        "annotations": annotations,
    });
    let manifest = serde_json::to_vec(&manifest).map_err(std::io::Error::other)?;
    Ok((config, layer, manifest))
}

/// Pushes `files` to `target` (a tag) as a Flux artifact; the manifest's digest.
pub async fn push_artifact(
    registry: &Registry,
    target: &Reference,
    files: &[(String, Vec<u8>)],
    meta: &ArtifactMeta,
) -> Result<Digest, RegistryError> {
    let failed = |reason: String| RegistryError::other(target, reason);
    let (config, layer, manifest) =
        artifact(files, meta).map_err(|e| failed(format!("cannot pack the artifact: {e}")))?;
    registry
        .push_blob(target, &config, &sha256(&config))
        .await?;
    registry.push_blob(target, &layer, &sha256(&layer)).await?;
    registry
        .push_manifest(target, &manifest, OCI_MANIFEST)
        .await?;
    Digest::parse(&sha256(&manifest)).map_err(|e| failed(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_files_make_the_same_layer_whatever_their_order() {
        let a = vec![
            ("b.yaml".to_string(), b"kind: B\n".to_vec()),
            ("a.yaml".to_string(), b"kind: A\n".to_vec()),
        ];
        let mut b = a.clone();
        b.reverse();
        let meta = ArtifactMeta {
            created: "2026-12-02T00:00:00Z".into(),
            ..ArtifactMeta::default()
        };
        let (config, layer, manifest) = artifact(&a, &meta).unwrap();
        assert_eq!(artifact(&b, &meta).unwrap().1, layer);
        assert_eq!(config, b"{}");
        let manifest: serde_json::Value = serde_json::from_slice(&manifest).unwrap();
        assert_eq!(manifest["config"]["mediaType"], FLUX_CONFIG);
        assert_eq!(manifest["layers"][0]["mediaType"], FLUX_CONTENT);
        assert_eq!(manifest["layers"][0]["digest"], sha256(&layer));
        assert_eq!(
            manifest["annotations"]["org.opencontainers.image.created"],
            "2026-12-02T00:00:00Z"
        );
        // What is inside reads back as written, in path order.
        let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(layer.as_slice()));
        let names: Vec<String> = tar
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect();
        assert_eq!(names, ["a.yaml", "b.yaml"]);
    }
}
