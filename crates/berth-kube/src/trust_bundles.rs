//! Which version of the ClusterTrustBundle API a cluster serves: one discovery
//! for the CLI (a CA bundle's `clusterTrustBundle` source) and the controller
//! (its watch of them), newest version first.

use berth_core::configs::trust_bundles::{KIND, VERSIONS};
use kube::discovery::ApiResource;

use crate::connect::Cluster;
use crate::error::ClusterError;

impl Cluster {
    /// The resource of the newest served version of the ClusterTrustBundle API;
    /// `None` when the cluster serves none (before Kubernetes 1.37 without the
    /// feature gate). Each version's discovery is cached with the others'.
    pub async fn trust_bundle_api(&self) -> Result<Option<ApiResource>, ClusterError> {
        for version in VERSIONS {
            if let Some((resource, _)) = self.resource(version, KIND).await? {
                return Ok(Some(resource));
            }
        }
        Ok(None)
    }
}
