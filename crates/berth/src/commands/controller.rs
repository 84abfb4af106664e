//! `berth controller`: the in-cluster controller, and `berth controller crd`.

use anyhow::Result;
use berth_kube::{Cluster, Connection};

use crate::cli::{ControllerArgs, ControllerCommand};
use crate::output::print;

pub fn run(args: &ControllerArgs) -> Result<u8> {
    if let Some(ControllerCommand::Crd) = args.command {
        print(&berth_controller::crd_yaml())?;
        return Ok(0);
    }
    let connection = Connection {
        kubeconfig: args.kubeconfig.clone(),
        context: args.context.clone(),
        namespace: args.namespace.clone(),
        request_timeout: None,
        exec_once: false,
        response_limit: None,
    };
    crate::runtime::get()?.block_on(async {
        let cluster = Cluster::connect(&connection).await?;
        say!(
            "level=info msg=\"berth controller starting\" server={} namespace={}",
            cluster.server,
            args.namespace.as_deref().unwrap_or("<all>")
        );
        let election = args
            .leader_elect
            .then(|| berth_controller::lease::Election {
                namespace: args
                    .lease_namespace
                    .clone()
                    .or_else(|| std::env::var("POD_NAMESPACE").ok())
                    .or_else(|| args.namespace.clone())
                    .unwrap_or_else(|| "default".into()),
                name: args.lease_name.clone(),
                identity: std::env::var("POD_NAME").unwrap_or_else(|_| {
                    let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
                    format!("{}-{}", host.trim(), std::process::id())
                }),
                duration: std::time::Duration::from_secs(args.lease_duration),
            });
        berth_controller::run(
            cluster.client().clone(),
            berth_controller::Settings {
                namespace: args.namespace.clone(),
                server: cluster.server.clone(),
                listen: Some(args.listen),
                election,
                registry: berth_registry::Options {
                    insecure: args.insecure.clone(),
                    ..berth_registry::Options::default()
                },
                docker_config: berth_registry::DockerConfig::load()?,
            },
        )
        .await?;
        Ok(0)
    })
}
