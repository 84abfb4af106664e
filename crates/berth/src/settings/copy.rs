//! `berth promote`'s and `berth mirror`'s settings: both copy the resolved images
//! whole between registries; mirror's prefix parsed, its configuration options.

use std::path::PathBuf;

use anyhow::{anyhow, Result};

use super::Registry;
use crate::cli;

/// `berth mirror`.
pub struct Mirror {
    /// The mirror prefix, parsed.
    pub to: berth_ref::RegistryPrefix,
    /// The output directory.
    pub out: PathBuf,
    /// Write the configurations only.
    pub no_copy: bool,
    /// Leave third-party images out.
    pub project_only: bool,
    /// Copy the attached signatures, attestations and SBOMs too.
    pub signatures: bool,
    /// How to reach the registries.
    pub registry: Registry,
    /// How the configurations are written (the project's name is filled in later).
    pub options: berth_mirror::Options,
}

impl Mirror {
    /// From the flags.
    pub fn resolve(args: &cli::MirrorArgs) -> Result<Self> {
        let (registry, signatures) = copying(&args.copy, "mirror", |_| {
            "the mirror serves the source's digest".to_string()
        })?;
        let to = berth_ref::RegistryPrefix::parse(&args.to).map_err(|e| anyhow!("--to: {e}"))?;
        let policy = match args.mirror_source_policy {
            None => berth_mirror::SourcePolicy::Default,
            Some(cli::SourcePolicyChoice::AllowContactingSource) => {
                berth_mirror::SourcePolicy::AllowContactingSource
            }
            Some(cli::SourcePolicyChoice::NeverContactSource) => {
                berth_mirror::SourcePolicy::NeverContactSource
            }
        };
        let options = berth_mirror::Options {
            project: String::new(),
            policy,
            insecure: registry.options.insecure.clone(),
            skip_verify: args.containerd_skip_verify,
            ca: args.containerd_ca.clone(),
        };
        Ok(Mirror {
            to,
            out: args.out.clone(),
            no_copy: args.no_copy,
            project_only: args.project_only,
            signatures,
            registry,
            options,
        })
    }
}

/// `berth promote`.
pub struct Promote {
    /// The destination prefix, as written.
    pub to: String,
    /// Print the plan only.
    pub dry_run: bool,
    /// Copy the attached signatures, attestations and SBOMs too.
    pub signatures: bool,
    /// How to reach the registries.
    pub registry: Registry,
}

impl Promote {
    /// From the flags.
    pub fn resolve(args: &cli::PromoteArgs) -> Result<Self> {
        let (registry, signatures) = copying(&args.copy, "promote", |platform| {
            format!("the target has the source's digest; drop --platform, and pin one platform afterwards with `berth pin --platform {platform}`")
        })?;
        Ok(Promote {
            to: args.to.clone(),
            dry_run: args.dry_run,
            signatures,
            registry,
        })
    }
}

/// The registries `promote` and `mirror` copy between, and whether what is
/// attached to each image travels with it. Both copy each image whole (every
/// platform of an index), so `--platform` is refused: `so` says what that keeps.
fn copying(
    args: &cli::CopyArgs,
    command: &str,
    so: impl Fn(&str) -> String,
) -> Result<(Registry, bool)> {
    if let Some(platform) = &args.registry.platform {
        anyhow::bail!(
            "--platform {platform} does not apply to `berth {command}`: it copies each image whole (every platform of an index), so {}",
            so(platform)
        );
    }
    Ok((Registry::resolve(&args.registry)?, !args.no_signatures))
}
