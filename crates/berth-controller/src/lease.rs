//! Leader election through a `coordination.k8s.io/v1` Lease, as
//! client-go's leaderelection does it: the holder renews `renewTime` every
//! third of the lease duration; another replica takes the Lease once it has not
//! been renewed for a whole duration. Writes are replaces with the Lease's
//! `resourceVersion`, so two replicas can never both win. A leader that cannot
//! renew in time stops leading (the caller exits, as controller-runtime does).

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};
use kube::Client;

/// Who competes for which Lease.
#[derive(Debug, Clone)]
pub struct Election {
    /// The Lease's namespace.
    pub namespace: String,
    /// The Lease's name.
    pub name: String,
    /// This replica (the pod name, or host and pid).
    pub identity: String,
    /// How long a Lease holds without renewal.
    pub duration: Duration,
}

fn now() -> MicroTime {
    MicroTime(k8s_openapi::jiff::Timestamp::now())
}

/// Whether `lease` was last renewed longer than its duration ago.
fn expired(lease: &Lease, now: &MicroTime) -> bool {
    let Some(spec) = &lease.spec else { return true };
    let (Some(renewed), Some(seconds)) = (&spec.renew_time, spec.lease_duration_seconds) else {
        return true;
    };
    now.0.as_second() - renewed.0.as_second() > i64::from(seconds)
}

impl Election {
    fn spec(&self, transitions: i32, acquired: Option<MicroTime>) -> LeaseSpec {
        let now = now();
        LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(i32::try_from(self.duration.as_secs()).unwrap_or(15)),
            acquire_time: Some(acquired.unwrap_or_else(|| now.clone())),
            renew_time: Some(now),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }
    }

    /// One attempt to hold the Lease: true when this replica holds it afterwards.
    pub async fn try_hold(&self, client: &Client) -> Result<bool, kube::Error> {
        let api: Api<Lease> = Api::namespaced(client.clone(), &self.namespace);
        match api.get_opt(&self.name).await? {
            None => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.name.clone()),
                        namespace: Some(self.namespace.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(self.spec(0, None)),
                };
                match api.create(&PostParams::default(), &lease).await {
                    Ok(_) => Ok(true),
                    Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                    Err(e) => Err(e),
                }
            }
            Some(mut lease) => {
                let spec = lease.spec.clone().unwrap_or_default();
                let mine = spec.holder_identity.as_deref() == Some(self.identity.as_str());
                if !mine && !expired(&lease, &now()) {
                    return Ok(false);
                }
                let transitions = spec.lease_transitions.unwrap_or(0) + i32::from(!mine);
                let acquired = if mine {
                    spec.acquire_time.clone()
                } else {
                    None
                };
                lease.spec = Some(self.spec(transitions, acquired));
                // The resourceVersion read above makes this a compare-and-swap.
                match api
                    .replace(&self.name, &PostParams::default(), &lease)
                    .await
                {
                    Ok(_) => Ok(true),
                    Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// Waits until this replica holds the Lease.
    pub async fn acquire(&self, client: &Client) {
        let mut waited = false;
        loop {
            match self.try_hold(client).await {
                Ok(true) => return,
                Ok(false) if !waited => {
                    say!(
                        "level=info msg=\"waiting for leadership\" lease={}/{}",
                        self.namespace,
                        self.name
                    );
                    waited = true;
                }
                Ok(false) => {}
                Err(e) => say!(
                    "level=warn msg=\"lease\" error=\"{}\"",
                    crate::logged::error(&e)
                ),
            }
            tokio::time::sleep(self.duration / 3).await;
        }
    }

    /// Renews the Lease every third of its duration; returns when it could not be
    /// renewed within the duration (leadership lost).
    pub async fn keep(&self, client: &Client) {
        let mut last = std::time::Instant::now();
        loop {
            tokio::time::sleep(self.duration / 3).await;
            match self.try_hold(client).await {
                Ok(true) => last = std::time::Instant::now(),
                Ok(false) => return,
                Err(e) => say!(
                    "level=warn msg=\"lease renewal\" error=\"{}\"",
                    crate::logged::error(&e)
                ),
            }
            if last.elapsed() > self.duration {
                return;
            }
        }
    }
}
