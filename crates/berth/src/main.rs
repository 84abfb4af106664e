//! The `berth` binary: parses flags, calls the core, owns exit codes.

/// `eprintln!` that cannot panic: when stderr cannot be written (`2>/dev/full`, a
/// closed pipe) the message is dropped and the exit code still says what happened.
/// Every message goes through [`output::for_terminal`]: what came from input
/// (a value, a peer's answer) cannot drive the terminal or flood it.
macro_rules! say {
    ($($arg:tt)*) => {{
        let text = crate::output::for_terminal(&format!($($arg)*));
        crate::output::message(&text);
    }};
}

mod cli;
mod commands;
mod copy;
mod fs_source;
mod helm;
mod inputs;
mod kustomize;
mod kustomize_origin;
mod out_dir;
mod output;
mod pinning;
mod pipeline;
mod project_file;
mod runtime;
mod settings;
mod signatures;
mod tag_lists;
mod text_stream;
mod trust_sources;

use std::process::ExitCode;

use anyhow::Result;
use berth_core::{Project, Resolution};
use clap::FromArgMatches as _;

use cli::{Cli, Command, ResolveArgs};

/// Exit status for failures other than usage errors (clap exits 2 for those).
const FAILURE: u8 = 1;

fn main() -> ExitCode {
    // An exported but empty `BERTH_PROJECT=` means unset, as an empty KUBECONFIG
    // does for kubectl (clap would call it a missing value). Single-threaded here.
    if berth_io::env::var_os("BERTH_PROJECT").is_some_and(|v| v.is_empty()) {
        std::env::remove_var("BERTH_PROJECT");
    }
    let mut command = cli::command();
    let matches = command.get_matches_mut();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.format(&mut command).exit());
    if let Some(problem) = cli.usage_problem() {
        command
            .error(clap::error::ErrorKind::ArgumentConflict, problem)
            .exit();
    }
    fs_source::set_restrictor(cli.load_restrictor);
    output::set_color(cli.color);
    match run(&cli) {
        Ok(code) => ExitCode::from(code),
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            say!("error: {error}");
            // `berth diff` exits 1 for "there are differences", so its errors are 2, as kubectl's.
            ExitCode::from(if matches!(cli.command, Command::Diff(_)) {
                2
            } else {
                FAILURE
            })
        }
    }
}

/// `berth env -- CMD`: the command line's variables (make's `NAME=VALUE` words)
/// join the resolution; the command gets every variable berth can answer
/// ([`berth_core::Resolution::command_variables`]); a make word the Makefile
/// would feed into one of them is refused, never overridden silently.
fn env(cli: &Cli, args: &cli::EnvArgs) -> Result<u8> {
    let project = project_file::load(cli.project.as_deref())?;
    let command = settings::env_command(args);
    let lock = pipeline::lock(&args.resolve, &project)?;
    let mut overrides = settings::overrides(&args.resolve, lock);
    (overrides.command_line, overrides.command_line_name) =
        settings::command_line_variables(&project, command);
    let registry_flag = overrides.registry.clone();
    let name = overrides.command_line_name.clone();
    let resolution = pipeline::resolve(&project, overrides)?;
    let variables = resolution.command_variables(&project.catalog(), registry_flag.as_deref());
    commands::env::check_make(&project, command, &name, &resolution, &variables)?;
    commands::env::run(command, &variables)
}

/// Runs the command: one arm per command, the one list of all of them, each a
/// few lines that turn its flags into settings and call it (the longer ones below).
fn run(cli: &Cli) -> Result<u8> {
    match &cli.command {
        Command::Ref(args) => Ok(if commands::ref_cmd::run(&args.into())? {
            0
        } else {
            FAILURE
        }),
        Command::Images(args) => with_resolution(cli, &args.resolve, |_, resolution| {
            commands::images::run(&args.into(), resolution).map(|()| 0)
        }),
        Command::Env(args) => env(cli, args),
        Command::Render(args) if args.pin => with_pins(cli, args, |project, resolution| {
            commands::render::run(&settings::render(args)?, project, resolution).map(|()| 0)
        }),
        Command::Render(args) => with_resolution(cli, &args.resolve, |project, resolution| {
            commands::render::run(&settings::render(args)?, project, resolution).map(|()| 0)
        }),
        Command::Promote(args) => {
            let promote = settings::Promote::resolve(args)?;
            with_resolution(cli, &args.copy.resolve, |_, resolution| {
                commands::promote::run(&promote, resolution).map(|()| 0)
            })
        }
        Command::Mirror(args) => {
            let mirror = settings::Mirror::resolve(args)?;
            with_resolution(cli, &args.copy.resolve, |project, resolution| {
                commands::mirror::run(&mirror, project, resolution).map(|()| 0)
            })
        }
        Command::Pin(args) if args.resolve.locked => {
            anyhow::bail!("--locked does not apply to `berth pin`, which writes the lock; run it without --locked")
        }
        Command::Outdated(args) => {
            let registry = settings::Registry::resolve(&args.registry)?;
            // The lock is compared with the registry, not resolved through.
            let resolve = cli::ResolveArgs {
                locked: false,
                ..args.resolve.clone()
            };
            with_resolution(cli, &resolve, |project, resolution| {
                commands::outdated::run(args, &registry, project, resolution)
            })
        }
        Command::Update(args) => {
            let registry = settings::Registry::resolve(&args.registry)?;
            commands::update::run(cli.project.as_deref(), args, &registry)
        }
        Command::Pin(args) => {
            let registry = settings::Registry::resolve(&args.registry)?;
            with_resolution(cli, &args.resolve, |project, resolution| {
                commands::pin::run(&registry, project, resolution).map(|()| 0)
            })
        }
        Command::Apply(args) => {
            with_resolution(cli, &args.target.resolve, |project, resolution| {
                commands::cluster::apply(
                    &settings::Cluster::apply(args, project),
                    project,
                    resolution,
                )
            })
        }
        Command::Diff(args) => with_resolution(cli, &args.target.resolve, |project, resolution| {
            commands::cluster::diff(&settings::Cluster::diff(args, project), project, resolution)
        }),
        Command::Rollback(args) => rollback(cli, args),
        Command::Validate(args) if args.pin => with_pins(cli, args, |project, resolution| {
            commands::validate::run(&settings::validate(args)?, project, resolution).map(|()| 0)
        }),
        Command::Sync(args) => with_resolution(cli, &args.resolve, |project, resolution| {
            commands::sync::run(
                &settings::Sync::resolve(args, project)?,
                project,
                resolution,
            )
        }),
        Command::Dev(args) => dev(cli, args),
        Command::Push(args) => push(cli, args),
        Command::Gc(args) => gc(cli, args),
        Command::Controller(args) => commands::controller::run(args),
        Command::Init(args) if args.check => {
            commands::init::check(args.dir.as_deref(), cli.project.as_deref())
        }
        Command::Init(args) => commands::init::run(args.dir.as_deref(), cli.project.as_deref()),
        Command::Completions(args) => commands::about::completions(args.shell).map(|()| 0),
        Command::Man => commands::about::man().map(|()| 0),
        Command::Schema => commands::about::schema().map(|()| 0),
        Command::Version(args) => commands::about::version(args.output).map(|()| 0),
        Command::Audit(args) => audit(cli, args),
        Command::Validate(args) => with_resolution(cli, &args.resolve, |project, resolution| {
            commands::validate::run(&settings::validate(args)?, project, resolution).map(|()| 0)
        }),
    }
}

fn rollback(cli: &Cli, args: &cli::RollbackArgs) -> Result<u8> {
    let project = project_file::load(cli.project.as_deref())?;
    commands::cluster::rollback(
        &settings::connection(&args.cluster, &project),
        &settings::rollout(&args.rollout),
        &project,
    )
}

fn dev(cli: &Cli, args: &cli::DevArgs) -> Result<u8> {
    let project = project_file::load(cli.project.as_deref())?;
    let settings = settings::Dev::resolve(args, &project)?;
    let source = commands::dev::Source {
        project: cli.project.clone(),
        resolve: args.apply.target.resolve.clone(),
        render: settings.render.clone(),
    };
    commands::dev::run(&settings, source, project)
}

fn push(cli: &Cli, args: &cli::PushArgs) -> Result<u8> {
    if args.render.out.is_some() || args.render.pin {
        anyhow::bail!("--out and --pin do not apply to `berth push`: it renders into the artifact; pin with `berth pin` and push with --locked");
    }
    let push = settings::Push::resolve(args)?;
    with_resolution(cli, &args.render.resolve, |project, resolution| {
        commands::push::run(&push.for_project(project), project, resolution)
    })
}

fn gc(cli: &Cli, args: &cli::GcArgs) -> Result<u8> {
    // berth.yaml is optional: its `namespace:` is a default, as for apply.
    let project = project_file::load(cli.project.as_deref()).ok();
    commands::gc::run(
        &settings::connection_for(&args.cluster, project.as_ref()),
        args.keep as usize,
        args.dry_run,
    )
}

fn audit(cli: &Cli, args: &cli::AuditArgs) -> Result<u8> {
    let project = project_file::load(cli.project.as_deref())?;
    let audit = commands::audit::Audit {
        root: args.path.clone(),
        strict: args.strict,
        json: args.output == cli::RefFormat::Json,
        exclude: args.exclude.clone(),
        all: args.all,
    };
    commands::audit::run(&audit, &project)
}

/// `--pin`: resolves, pins every image on the fly (verifying the signatures `verify:`
/// asks for, as `berth pin` does), then resolves again with the pins as a lock.
fn with_pins(
    cli: &Cli,
    args: &cli::RenderArgs,
    command: impl FnOnce(&Project, &Resolution<'_>) -> Result<u8>,
) -> Result<u8> {
    let project = project_file::load(cli.project.as_deref())?;
    let unpinned = pipeline::resolve(&project, settings::overrides(&args.resolve, None))?;
    let registry = settings::Registry::resolve(&args.registry)?;
    signatures::ready(&project)?;
    let client = tag_lists::client(&registry)?;
    let mut lock = pinning::pin(&client, &registry, &unpinned)?;
    signatures::verify_all(&client, &registry, &project, &mut lock, None)?;
    let pinned = pipeline::resolve(&project, settings::overrides(&args.resolve, Some(lock)))?;
    command(&project, &pinned)
}

/// Loads the project and resolves its images once, for any command that needs them.
fn with_resolution(
    cli: &Cli,
    args: &ResolveArgs,
    command: impl FnOnce(&Project, &Resolution<'_>) -> Result<u8>,
) -> Result<u8> {
    pipeline::resolved(cli.project.as_deref(), args, command)
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error
        .downcast_ref::<std::io::Error>()
        .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
}
