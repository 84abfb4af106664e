//! Clean-up after a GitOps engine: the config generations rendered for Flux or
//! Argo CD carry their never-prune annotation, so the engine leaves them; berth
//! removes each once nothing in its namespace uses it (berth-core's
//! [`berth_core::gitops::judge`] decides; this file lists and deletes).

use berth_core::cluster::{ObjectRef, CONFIG_LABEL, PROJECT_LABEL};
use berth_core::gitops::{judge, not_berths, Kept, Verdict, GITOPS_LABEL};
use serde_json::Value;

use crate::connect::Cluster;
use crate::error::ClusterError;
use crate::ops::Shape;
use crate::references::References;

/// One kept generation and what becomes of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    /// The generation.
    pub kept: Kept,
    /// Stays (newest, in use) or goes.
    pub verdict: Verdict,
}

/// An object labelled for a GitOps engine that is not provably a generation
/// berth rendered ([`not_berths`]): never deleted, named so the user knows why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreign {
    /// `ConfigMap` or `Secret`.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// What it lacks.
    pub why: String,
}

/// What one look at a namespace found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Collected {
    /// berth's generations and what became of each.
    pub judged: Vec<Judged>,
    /// Objects with the label that berth did not provably make: left alone.
    pub foreign: Vec<Foreign>,
}

fn text(value: &Value, pointer: &str) -> String {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

impl Cluster {
    /// The generations rendered for a GitOps engine in `namespace` (labelled
    /// `berth.dev/gitops` and provably berth's, [`not_berths`]), and the
    /// labelled objects that are not; read as metadata only: a Secret's data is
    /// never fetched.
    pub async fn kept_generations(
        &self,
        namespace: &str,
    ) -> Result<(Vec<Kept>, Vec<Foreign>), ClusterError> {
        let mut out = Vec::new();
        let mut foreign = Vec::new();
        for kind in ["ConfigMap", "Secret"] {
            for item in self
                .list("v1", kind, namespace, GITOPS_LABEL, Shape::Metadata)
                .await?
            {
                let metadata = item.get("metadata").cloned().unwrap_or_default();
                if let Some(why) = not_berths(&metadata) {
                    foreign.push(Foreign {
                        kind: kind.to_string(),
                        name: text(&item, "/metadata/name"),
                        why,
                    });
                    continue;
                }
                let label = |key: &str| {
                    text(
                        &item,
                        &format!("/metadata/labels/{}", key.replace('/', "~1")),
                    )
                };
                out.push(Kept {
                    kind: kind.to_string(),
                    namespace: namespace.to_string(),
                    name: text(&item, "/metadata/name"),
                    project: label(PROJECT_LABEL),
                    config: label(CONFIG_LABEL),
                    created: text(&item, "/metadata/creationTimestamp"),
                });
            }
        }
        Ok((out, foreign))
    }

    /// Judges the kept generations of `namespace` (keeping the `keep` newest of
    /// each config) and, unless `dry_run`, deletes those that go — only objects
    /// provably berth's, never one selected by its label alone. Each deletion
    /// is reported to `deleted` as it happens. `references` keeps what the
    /// namespace's pods and workloads named between looks.
    pub async fn collect_generations(
        &self,
        namespace: &str,
        keep: usize,
        dry_run: bool,
        references: &mut References,
        deleted: &mut (dyn FnMut(&Kept) + Send),
    ) -> Result<Collected, ClusterError> {
        let (kept, foreign) = self.kept_generations(namespace).await?;
        if kept.is_empty() {
            return Ok(Collected {
                judged: Vec::new(),
                foreign,
            });
        }
        let used = self.referenced_in(namespace, references).await?;
        let verdicts = judge(&kept, &used, keep);
        let mut out = Vec::new();
        for (kept, verdict) in kept.into_iter().zip(verdicts) {
            if verdict == Verdict::Delete && !dry_run {
                self.delete(&ObjectRef {
                    api_version: "v1".into(),
                    kind: kept.kind.clone(),
                    name: kept.name.clone(),
                    namespace: Some(kept.namespace.clone()),
                })
                .await?;
                deleted(&kept);
            }
            out.push(Judged { kept, verdict });
        }
        Ok(Collected {
            judged: out,
            foreign,
        })
    }
}
