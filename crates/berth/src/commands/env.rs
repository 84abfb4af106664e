//! `berth env -- CMD`: run a command with every component's variables set.

use std::io::ErrorKind;
use std::process::Command;

use anyhow::{anyhow, Result};
use berth_core::{Project, Resolution};

use crate::{pipeline, project_file, settings};

/// Exit status when the command is not found, as POSIX shells and env(1) use.
pub const NOT_FOUND: u8 = 127;
/// Exit status when the command exists but cannot be run.
pub const CANNOT_RUN: u8 = 126;

/// Runs the command with `variables` set; returns its exit status (or never
/// returns, on Unix, once the command has replaced this process).
pub fn run(command_line: &[std::ffi::OsString], variables: &[(String, String)]) -> Result<u8> {
    let (program, rest) = command_line.split_first().ok_or_else(|| {
        anyhow!("no command given; write it after `--`, e.g. `berth env -- make deploy`")
    })?;
    let mut command = Command::new(program);
    command.args(rest);
    for (variable, value) in variables {
        command.env(variable, value);
    }
    let shown = program.to_string_lossy();
    let failure = |e: std::io::Error| -> Result<u8> {
        match e.kind() {
            ErrorKind::NotFound => {
                say!("error: berth env: command `{shown}` not found; check its spelling and PATH");
                Ok(NOT_FOUND)
            }
            _ => {
                say!("error: berth env: cannot run `{shown}`: {e}");
                Ok(CANNOT_RUN)
            }
        }
    };
    #[cfg(unix)]
    {
        // Replace this process, as env(1) does: signals, stdio and the exit
        // status then belong to the command itself. `exec` returns only on failure.
        use std::os::unix::process::CommandExt;
        let error = command.exec();
        failure(error)
    }
    #[cfg(not(unix))]
    {
        match command.status() {
            Ok(status) => Ok(status.code().map_or(1, |c| c.clamp(0, 255) as u8)),
            Err(e) => failure(e),
        }
    }
}

/// Under `berth env -- make …`: refuses a make word the Makefile would feed
/// into a variable berth sets (it would change nothing), and warns, before
/// make runs, of each image make's goals would build from parts into another
/// image than berth deploys. `name` names make's command line in messages.
pub fn check_make(
    project: &Project,
    command: &[std::ffi::OsString],
    name: &str,
    resolution: &Resolution<'_>,
    variables: &[(String, String)],
) -> Result<()> {
    if !settings::is_make(command) {
        return Ok(());
    }
    let makefiles = project_file::makefiles(project);
    let words = settings::make_words(command);
    let set: Vec<&str> = variables.iter().map(|(n, _)| n.as_str()).collect();
    let shadowed = berth_make::shadowed_words(project, &makefiles, &words, &set, name);
    if !shadowed.is_empty() {
        anyhow::bail!("{}", shadowed.join("\n"));
    }
    let deployed = |component: &str| {
        (resolution.images.iter())
            .find(|image| image.component.name == component)
            .map(|image| image.reference.clone())
    };
    // What make gets from outside its files: its command line's words,
    // then what berth hands it, then the environment berth runs in.
    let outside = |var: &str| {
        let word = words.iter().rev().find(|(name, _)| name == var);
        let handed = || variables.iter().find(|(name, _)| name == var);
        match word {
            Some((_, value)) => Some((value.clone(), true)),
            None => (handed().map(|(_, value)| value.clone()))
                .or_else(|| std::env::var(var).ok())
                .map(|value| (value, false)),
        }
        .map(|(value, on_command_line)| berth_make::Outside {
            value,
            on_command_line,
        })
    };
    if let Some(goals) = settings::make_goals(command) {
        let untold = berth_make::untold_images(project, &makefiles, &goals, &outside, &deployed);
        pipeline::print_warnings(project, untold);
    }
    Ok(())
}
