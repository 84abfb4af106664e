//! `berth push oci://HOST/REPO:TAG`: the rendered manifests as a Flux OCI
//! artifact (what `flux push artifact` makes), so CI renders and pushes with
//! one binary and Flux's `OCIRepository` pulls it.

use anyhow::{anyhow, bail, Result};
use berth_core::{Project, Resolution};
use berth_ref::Reference;
use berth_registry::artifact::{push_artifact, ArtifactMeta};
use berth_registry::{DockerConfig, Registry};

use crate::commands::render::render_all;
use crate::output::print;
use crate::settings::{Registry as RegistrySettings, Render};

/// What `berth push` sends where.
pub struct Push {
    /// `oci://HOST/REPO:TAG`, as given.
    pub target: String,
    /// `--source URL`.
    pub source: Option<String>,
    /// `--revision REV`.
    pub revision: Option<String>,
    /// What to render.
    pub render: Render,
    /// How to reach the registry.
    pub registry: RegistrySettings,
}

/// The file the manifests are in, inside the artifact.
const FILE: &str = "manifests.yaml";

/// `oci://HOST/REPO:TAG` as a reference with a tag (and no digest: a push names a tag).
fn target(text: &str) -> Result<Reference> {
    let Some(rest) = text.strip_prefix("oci://") else {
        bail!("`{text}`: give the artifact as oci://HOST/REPO:TAG (e.g. oci://registry.example.com/team/shop-manifests:main)");
    };
    let reference = Reference::parse(rest).map_err(|e| anyhow!("`{text}`: {e}"))?;
    if reference.digest().is_some() || reference.tag().is_none() {
        bail!("`{text}`: name a tag to push to (oci://HOST/REPO:TAG); a digest is what the push gives back");
    }
    Ok(reference)
}

/// `SOURCE_DATE_EPOCH` (reproducible builds), else now: the `created` annotation.
fn created() -> String {
    let seconds = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64)
        });
    berth_core::time::rfc3339(seconds)
}

pub fn run(push: &Push, project: &Project, resolution: &Resolution<'_>) -> Result<u8> {
    let reference = target(&push.target)?;
    let rendered = render_all(&push.render, project, resolution)?;
    for warning in
        crate::commands::validate::render_warnings(&rendered.findings, project, resolution)
    {
        say!("warning: {warning}");
    }
    if rendered.objects.is_empty() {
        bail!(
            "nothing to push: {} renders no objects; list them under `manifests:` or pass PATHs",
            project.file
        );
    }
    let files = vec![(FILE.to_string(), rendered.yaml.clone().into_bytes())];
    let meta = ArtifactMeta {
        source: push.source.clone(),
        revision: push.revision.clone(),
        created: created(),
    };
    let registry = Registry::new(push.registry.options.clone(), DockerConfig::load()?)?;
    let digest =
        crate::runtime::get()?.block_on(push_artifact(&registry, &reference, &files, &meta))?;
    say!(
        "pushed {} object(s) ({} bytes of YAML) to {}",
        rendered.objects.len(),
        rendered.yaml.len(),
        push.target
    );
    print(&format!("{}@{digest}\n", push.target))?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn targets_are_oci_urls_with_a_tag() {
        assert_eq!(
            super::target("oci://localhost:5000/team/shop:main")
                .unwrap()
                .to_string(),
            "localhost:5000/team/shop:main"
        );
        for (bad, want) in [
            (
                "localhost:5000/team/shop:main",
                "give the artifact as oci://HOST/REPO:TAG",
            ),
            ("oci://localhost:5000/team/shop", "name a tag to push to"),
            ("oci://Bad Ref", "`oci://Bad Ref`: "),
        ] {
            let message = super::target(bad).unwrap_err().to_string();
            assert!(message.contains(want), "{bad}: {message}");
        }
    }
}
