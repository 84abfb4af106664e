//! [`Applier`]: one project's apply session. It owns what berth knows of the
//! project between requests (its records, each object's fingerprint, the last
//! look at each rollout) so that callers hold one value instead of threading
//! caches through every call: `berth apply` and `berth rollback` make one per
//! command, `berth dev` one per apply, and the controller one per reconcile,
//! resumed from the [`Known`] it kept from the last.
//!
//! [`Applier::apply`] never waits; [`Applier::observe`] looks once at the
//! rollouts (the controller requeues); [`Applier::wait`] observes until they
//! finish or time out (the CLI). Which path an apply takes is decided by
//! `berth_core::cluster::apply_path`; the requests are `deploy.rs`'s.

use std::time::Duration;

use berth_core::cluster::{Desired, ObjectRef, Settled};

use crate::connect::Cluster;
use crate::deploy::{ApplyOptions, Deployed, Event};
use crate::error::ClusterError;
use crate::remember::{Known, Outcome, Watches};

/// One project's apply session on one cluster.
pub struct Applier<'c> {
    cluster: &'c Cluster,
    options: ApplyOptions,
    /// The caller's watches (the controller's): only with them is what the
    /// session knows trusted without asking, as far as they show that nobody
    /// touched it since.
    watches: Option<&'c dyn Watches>,
    /// What an earlier session knew, until the first apply replaces it.
    resumed: Option<Known>,
    /// The last apply, which `observe` and `wait` follow.
    last: Option<Deployed>,
}

/// What one [`Applier::apply`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The objects, in the order they were applied.
    pub objects: Vec<ObjectRef>,
    /// The sequence number of the apply record that holds them (new, or the
    /// newest one when the objects were those).
    pub sequence: u64,
    /// Which way the apply went: what it asked of the server.
    pub outcome: Outcome,
}

impl<'c> Applier<'c> {
    /// A session that knows nothing yet: its first apply lists the project's
    /// records and reads every object it checks.
    pub fn new(cluster: &'c Cluster, options: ApplyOptions) -> Self {
        Applier {
            cluster,
            options,
            watches: None,
            resumed: None,
            last: None,
        }
    }

    /// A session resumed from what an earlier one knew ([`Applier::known`]),
    /// trusted as far as `watches` show that nobody touched it since.
    pub fn resume(
        cluster: &'c Cluster,
        options: ApplyOptions,
        known: Known,
        watches: &'c dyn Watches,
    ) -> Self {
        Applier {
            watches: Some(watches),
            resumed: Some(known),
            ..Applier::new(cluster, options)
        }
    }

    /// Applies `desired` (a dry run of everything first, unless the session
    /// knows nobody touched it), records it, and returns without waiting.
    pub async fn apply(
        &mut self,
        desired: &Desired,
        events: &mut (dyn FnMut(Event) + Send),
    ) -> Result<Applied, ClusterError> {
        self.apply_as(desired, None, events).await
    }

    /// Applies the objects of the apply record `sequence` again, recorded as a
    /// rollback of it (`berth rollback`).
    pub async fn roll_back(
        &mut self,
        desired: &Desired,
        sequence: u64,
        events: &mut (dyn FnMut(Event) + Send),
    ) -> Result<Applied, ClusterError> {
        self.apply_as(desired, Some(sequence), events).await
    }

    async fn apply_as(
        &mut self,
        desired: &Desired,
        rollback_of: Option<u64>,
        events: &mut (dyn FnMut(Event) + Send),
    ) -> Result<Applied, ClusterError> {
        // What the session knows is replaced by the apply's answer; an error
        // leaves it unknown (the next apply reads everything).
        let known = self.last.take().map(|d| d.known).or(self.resumed.take());
        let known = known.zip(self.watches);
        let deployed = self
            .cluster
            .apply_objects(desired, &self.options, rollback_of, known, events)
            .await?;
        let applied = Applied {
            objects: deployed.objects.iter().map(|p| p.object.clone()).collect(),
            sequence: deployed.record.record.sequence,
            outcome: deployed.outcome,
        };
        self.last = Some(deployed);
        Ok(applied)
    }

    /// One look at the rollouts of the last apply: the record's status set when
    /// it changes, old generations deleted (keeping `keep`) once it succeeds.
    /// Before any apply: rolled out, nothing to look at.
    pub async fn observe(
        &mut self,
        events: &mut (dyn FnMut(Event) + Send),
    ) -> Result<Settled, ClusterError> {
        let Some(deployed) = self.last.as_mut() else {
            return Ok(Settled::RolledOut);
        };
        let observed = self
            .cluster
            .observe(deployed, self.options.keep, self.watches, None, events)
            .await;
        self.remember(observed)
    }

    /// Observes the last apply until every workload has rolled out, one fails,
    /// or `timeout` passes (the record is then marked failed).
    pub async fn wait(
        &mut self,
        timeout: Duration,
        events: &mut (dyn FnMut(Event) + Send),
    ) -> Result<(), ClusterError> {
        let Some(deployed) = self.last.as_mut() else {
            return Ok(());
        };
        let waited = self
            .cluster
            .wait_rollouts(deployed, timeout, self.options.keep, events)
            .await;
        self.remember(waited)
    }

    /// What the session knows now, for the next one to [`Applier::resume`]
    /// from; `None` after an error, or before anything was applied or resumed.
    pub fn known(&self) -> Option<Known> {
        match &self.last {
            Some(last) => Some(last.known.clone()),
            None => self.resumed.clone(),
        }
    }

    /// What this session knows, as [`Applier::known`], moved out of it: what a
    /// long-running caller keeps for the next session without copying the records.
    pub fn into_known(self) -> Option<Known> {
        match self.last {
            Some(last) => Some(last.known),
            None => self.resumed,
        }
    }

    /// Forgets everything after an error: what went wrong may be what it knew.
    fn remember<T>(&mut self, result: Result<T, ClusterError>) -> Result<T, ClusterError> {
        if result.is_err() {
            self.resumed = None;
            self.last = None;
        }
        result
    }
}

#[cfg(test)]
#[path = "applier_tests.rs"]
mod tests;
