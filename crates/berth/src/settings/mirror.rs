//! `berth mirror`'s settings: the prefix parsed, the configuration options.

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
        let (registry, signatures) = super::copying(&args.copy, "mirror", |_| {
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
