//! The `berth` binary: parses flags, calls the core, owns exit codes.

mod cli;
mod commands;
mod output;
mod project_file;

use std::process::ExitCode;

use anyhow::Result;
use berth_core::resolve::{self, Overrides};
use clap::Parser;

use cli::{Cli, Command, ResolveArgs};

/// Exit status for failures other than usage errors (clap exits 2 for those).
const FAILURE: u8 = 1;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(code) => ExitCode::from(code),
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(FAILURE)
        }
    }
}

fn run(cli: &Cli) -> Result<u8> {
    match &cli.command {
        Command::Ref(args) => Ok(if commands::ref_cmd::run(args)? {
            0
        } else {
            FAILURE
        }),
        Command::Images(args) => {
            let project = project_file::load(cli.project.as_deref())?;
            let resolution = resolve::resolve(&project, &overrides(&args.resolve), &env_var)?;
            commands::images::run(args, &resolution)?;
            Ok(0)
        }
        Command::Env(args) => {
            let project = project_file::load(cli.project.as_deref())?;
            let resolution = resolve::resolve(&project, &overrides(&args.resolve), &env_var)?;
            commands::env::run(args, &resolution)
        }
    }
}

fn overrides(args: &ResolveArgs) -> Overrides {
    Overrides {
        images: args.images.clone(),
        tags: args.tags.clone(),
        registry: args.registry.clone(),
    }
}

/// The process environment, as the resolver reads it. A value that is not
/// valid Unicode is passed on lossily, so the resolver rejects it by name.
fn env_var(name: &str) -> Option<String> {
    std::env::var_os(name).map(|v| v.to_string_lossy().into_owned())
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error
        .downcast_ref::<std::io::Error>()
        .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
}
