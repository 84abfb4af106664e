//! The Kubernetes kinds berth knows to run pods, spelled once: where each keeps
//! its pod template, which have a rollout berth waits for, and their API group.
//! Every list of workload kinds in berth (the pod walker, the rollout observer,
//! the controller's check of a Berth's workloads, the GitOps collector's readers)
//! is a question asked of this enum.

/// A kind that runs pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WorkloadKind {
    /// `v1` Pod.
    Pod,
    /// `v1` PodTemplate.
    PodTemplate,
    /// `apps/v1` Deployment.
    Deployment,
    /// `apps/v1` ReplicaSet.
    ReplicaSet,
    /// `apps/v1` StatefulSet.
    StatefulSet,
    /// `apps/v1` DaemonSet.
    DaemonSet,
    /// `batch/v1` Job.
    Job,
    /// `batch/v1` CronJob.
    CronJob,
    /// `v1` ReplicationController.
    ReplicationController,
}

impl WorkloadKind {
    /// Every kind, in this order.
    pub const ALL: [WorkloadKind; 9] = [
        WorkloadKind::Pod,
        WorkloadKind::PodTemplate,
        WorkloadKind::Deployment,
        WorkloadKind::ReplicaSet,
        WorkloadKind::StatefulSet,
        WorkloadKind::DaemonSet,
        WorkloadKind::Job,
        WorkloadKind::CronJob,
        WorkloadKind::ReplicationController,
    ];

    /// The kinds a rollout is waited for, and that a `Berth` manages.
    pub const ROLLED_OUT: [WorkloadKind; 4] = [
        WorkloadKind::Deployment,
        WorkloadKind::StatefulSet,
        WorkloadKind::DaemonSet,
        WorkloadKind::Job,
    ];

    /// The kind named `kind` (any API version), if it runs pods.
    pub fn parse(kind: &str) -> Option<WorkloadKind> {
        WorkloadKind::ALL.into_iter().find(|k| k.as_str() == kind)
    }

    /// As manifests spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkloadKind::Pod => "Pod",
            WorkloadKind::PodTemplate => "PodTemplate",
            WorkloadKind::Deployment => "Deployment",
            WorkloadKind::ReplicaSet => "ReplicaSet",
            WorkloadKind::StatefulSet => "StatefulSet",
            WorkloadKind::DaemonSet => "DaemonSet",
            WorkloadKind::Job => "Job",
            WorkloadKind::CronJob => "CronJob",
            WorkloadKind::ReplicationController => "ReplicationController",
        }
    }

    /// Its `apiVersion`.
    pub fn api_version(self) -> &'static str {
        match self {
            WorkloadKind::Pod | WorkloadKind::PodTemplate | WorkloadKind::ReplicationController => {
                "v1"
            }
            WorkloadKind::Deployment
            | WorkloadKind::ReplicaSet
            | WorkloadKind::StatefulSet
            | WorkloadKind::DaemonSet => "apps/v1",
            WorkloadKind::Job | WorkloadKind::CronJob => "batch/v1",
        }
    }

    /// Where its pod template sits (a Pod is its own).
    pub fn template_path(self) -> &'static [&'static str] {
        match self {
            WorkloadKind::Pod => &[],
            WorkloadKind::PodTemplate => &["template"],
            WorkloadKind::CronJob => &["spec", "jobTemplate", "spec", "template"],
            _ => &["spec", "template"],
        }
    }

    /// Whether berth waits for its rollout (and a `Berth` may manage it).
    pub fn has_rollout(self) -> bool {
        WorkloadKind::ROLLED_OUT.contains(&self)
    }
}

impl std::fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::WorkloadKind;

    #[test]
    fn every_kind_reads_back_and_knows_its_group_and_template() {
        for kind in WorkloadKind::ALL {
            assert_eq!(WorkloadKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(WorkloadKind::parse("Service"), None);
        assert_eq!(
            WorkloadKind::parse("deployment"),
            None,
            "kinds are case-sensitive"
        );
        let table = [
            ("Deployment", "apps/v1", &["spec", "template"][..], true),
            (
                "CronJob",
                "batch/v1",
                &["spec", "jobTemplate", "spec", "template"][..],
                false,
            ),
            ("Pod", "v1", &[][..], false),
            ("Job", "batch/v1", &["spec", "template"][..], true),
            ("ReplicaSet", "apps/v1", &["spec", "template"][..], false),
        ];
        for (name, api, path, rollout) in table {
            let kind = WorkloadKind::parse(name).unwrap();
            assert_eq!(
                (kind.api_version(), kind.template_path(), kind.has_rollout()),
                (api, path, rollout),
                "{name}"
            );
        }
    }
}
