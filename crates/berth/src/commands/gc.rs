//! `berth gc`: the config generations a GitOps engine keeps, removed once
//! nothing uses them (berth-core judges, berth-kube lists and deletes).

use anyhow::Result;
use berth_core::gitops::Verdict;
use berth_kube::{Cluster, Connection};

use crate::output::print;

pub fn run(connection: &Connection, keep: usize, dry_run: bool) -> Result<u8> {
    let judged = crate::runtime::get()?.block_on(async {
        let cluster = Cluster::connect(connection).await?;
        let namespace = cluster.namespace.clone();
        let judged = cluster
            .collect_generations(
                &namespace,
                keep,
                dry_run,
                &mut berth_kube::References::default(),
                &mut |_| {},
            )
            .await?;
        Ok::<_, anyhow::Error>((namespace, judged))
    })?;
    let (namespace, collected) = judged;
    for foreign in &collected.foreign {
        say!(
            "left {}/{}: labelled berth.dev/gitops, but not provably berth's: {}",
            foreign.kind,
            foreign.name,
            foreign.why
        );
    }
    let judged = collected.judged;
    if judged.is_empty() {
        say!("no config generations kept for a GitOps engine in namespace `{namespace}` (none is labelled berth.dev/gitops)");
        return Ok(0);
    }
    let mut out = String::new();
    for j in &judged {
        let object = format!("{}/{}", j.kept.kind, j.kept.name);
        let line = match (j.verdict, dry_run) {
            (Verdict::Delete, false) => format!("deleted {object}"),
            (Verdict::Delete, true) => format!("would delete {object} (nothing uses it)"),
            (Verdict::InUse, _) => format!("kept {object}: in use"),
            (Verdict::Newest, _) => format!(
                "kept {object}: among the {keep} newest of `{}`",
                j.kept.config
            ),
        };
        out.push_str(&line);
        out.push('\n');
    }
    print(&out)?;
    Ok(0)
}
