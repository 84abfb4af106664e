//! `berth controller`: the in-cluster controller, and `berth controller crd`.

use anyhow::Result;
use berth_kube::{Cluster, Connection};

use crate::cli::{ControllerArgs, ControllerCommand, LogFormat};
use crate::output::print;

/// This replica's name: the pod's (`POD_NAME`, from the downward API), else host and pid.
fn identity() -> String {
    berth_io::env::var("POD_NAME").unwrap_or_else(|| {
        let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
        format!("{}-{}", host.trim(), std::process::id())
    })
}

pub fn run(args: &ControllerArgs) -> Result<u8> {
    match args.command {
        Some(ControllerCommand::Crd) => {
            print(&berth_controller::crd_yaml())?;
            return Ok(0);
        }
        Some(ControllerCommand::Uninstall(ref release)) => return uninstall(args, release),
        None => {}
    }
    berth_controller::logs::init(match args.log_format {
        LogFormat::Text => berth_controller::logs::Format::Text,
        LogFormat::Json => berth_controller::logs::Format::Json,
    });
    // Every line of a controller's run goes through its log formatter and
    // redaction, the one that ends it too: a failure is logged, not printed.
    let runtime = berth_controller::runtime::async_runtime()
        .map_err(|e| anyhow::anyhow!("cannot start the controller's async runtime: {e}"))?;
    let outcome = runtime.block_on(async {
        // First: SIGTERM and SIGINT are caught from here on, whatever comes next.
        let shutdown = berth_controller::Shutdown::install()?;
        let election = args
            .leader_elect
            .then(|| berth_controller::lease::Election {
                namespace: args
                    .lease_namespace
                    .clone()
                    .or_else(|| berth_io::env::var("POD_NAMESPACE"))
                    .or_else(|| args.namespace.clone())
                    .unwrap_or_else(|| "default".into()),
                name: args.lease_name.clone(),
                identity: identity(),
                duration: std::time::Duration::from_secs(args.lease_duration),
            });
        let fence = election
            .as_ref()
            .map(|e| berth_kube::fence::Fence::new(e.path()));
        let cluster = Cluster::connect(&connection(args, fence.clone())).await?;
        berth_controller::run(
            cluster.client().clone(),
            berth_controller::Settings {
                namespace: args.namespace.clone(),
                server: cluster.server.clone(),
                listen: Some(args.listen),
                election,
                fence,
                instance: Some(identity()),
                registry: berth_registry::Options {
                    insecure: args.insecure.clone(),
                    ..berth_registry::Options::default()
                },
                docker_config: berth_registry::DockerConfig::load()?,
                gitops_keep: args.gitops_keep as usize,
                concurrency: args.concurrency,
                cluster_trust_bundles: args.cluster_trust_bundles,
            },
            shutdown,
        )
        .await?;
        Ok::<_, anyhow::Error>(())
    });
    // What is still running (a watch's request, a blocked read) is not waited for.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match outcome {
        Ok(()) => Ok(0),
        Err(e) => {
            let causes: Vec<String> = e.chain().map(|c| c.to_string()).collect();
            berth_controller::logs::exiting(&causes.join(": "));
            Ok(1)
        }
    }
}

/// How the controller and its subcommands reach the cluster: kubectl's flags,
/// requests bounded by kube's own timeouts (a controller's watches are long),
/// writes through `fence` when it leads.
fn connection(args: &ControllerArgs, fence: Option<berth_kube::fence::Fence>) -> Connection {
    Connection {
        kubeconfig: args.kubeconfig.clone(),
        context: args.context.clone(),
        namespace: args.namespace.clone(),
        request_timeout: None,
        exec_once: false,
        response_limit: None,
        write_fence: fence,
    }
}

/// `berth controller uninstall`.
fn uninstall(args: &ControllerArgs, release: &crate::cli::UninstallArgs) -> Result<u8> {
    let stop = match &release.stop {
        None => None,
        Some(text) => match text.split_once('/') {
            Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
                Some((ns.to_string(), name.to_string()))
            }
            _ => {
                say!("error: --stop `{}`: give the controller's Deployment as NAMESPACE/NAME (e.g. berth-system/berth-controller)", berth_io::shown(text));
                return Ok(2);
            }
        },
    };
    let done = crate::runtime::get()?.block_on(async {
        let cluster = Cluster::connect(&connection(args, None)).await?;
        if let Some((namespace, name)) = &stop {
            berth_controller::stop(
                cluster.client(),
                namespace,
                name,
                std::time::Duration::from_secs(60),
            )
            .await?;
            say!("stopped the controller: deployment {namespace}/{name} has no pods");
        }
        Ok::<_, anyhow::Error>(
            berth_controller::uninstall(cluster.client(), &args.namespace).await?,
        )
    })?;
    let mut out = String::new();
    for line in &done.finalizers {
        out.push_str(&format!("removed the finalizer of {line}\n"));
    }
    for line in &done.sources {
        out.push_str(&format!("unlabelled source {line}\n"));
    }
    print(&out)?;
    if done.finalizers.is_empty() && done.sources.is_empty() {
        say!("nothing to release: no Berth carries the controller's finalizer and no source its label");
    }
    Ok(0)
}
