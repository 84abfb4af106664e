//! The flags of `berth outdated` and `berth update` (#50).

use clap::{Args, ValueEnum};

use super::{RegistryArgs, ResolveArgs};

#[derive(Debug, Args)]
pub struct OutdatedArgs {
    /// The components to look at (default: every one).
    #[arg(value_name = "COMPONENT")]
    pub components: Vec<String>,
    #[command(flatten)]
    pub resolve: ResolveArgs,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Output format.
    #[arg(long, short, value_enum, default_value_t = OutdatedFormat::Table)]
    pub output: OutdatedFormat,
    /// Exit 1 when an image is outdated, a variant lacks the family's newest release, or a
    /// tag pinned in berth.lock was republished (CI: `berth outdated --exit-code`).
    #[arg(long)]
    pub exit_code: bool,
    /// Count pre-releases (`-rc1`, `-beta.2`) as releases.
    #[arg(long)]
    pub pre: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutdatedFormat {
    /// An aligned table for people.
    Table,
    /// A JSON array, one object per image.
    Json,
}

#[derive(Debug, Args)]
pub struct UpdateArgs {
    /// The components to move (default: every outdated one).
    #[arg(value_name = "COMPONENT")]
    pub components: Vec<String>,
    /// Move to this version (a tag of the component's repository that every variant
    /// following the family tag has) instead of the newest; needs one COMPONENT.
    #[arg(long, value_name = "VERSION")]
    pub to: Option<String>,
    /// Print what would change as a unified diff; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Count pre-releases (`-rc1`, `-beta.2`) as releases.
    #[arg(long)]
    pub pre: bool,
    /// Read every project image's tags under PREFIX (a fork or a mirror that holds the same
    /// releases), as `--registry` moves images elsewhere; berth.yaml's tags are what moves, and
    /// berth.lock is left for `berth pin`.
    #[arg(long = "registry", value_name = "PREFIX")]
    pub prefix: Option<String>,
    #[command(flatten)]
    pub registry: RegistryArgs,
}
