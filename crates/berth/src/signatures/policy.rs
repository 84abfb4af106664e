//! A `verify:` policy made ready to check: its key read, or its certificate
//! roots read — from the files berth.yaml names, under the load restrictor.

use anyhow::{anyhow, bail, Result};
use berth_core::lock::{Verification, VerifiedBy};
use berth_core::project::{Roots, Signer, TransparencyLog, VerifyPolicy};
use berth_core::Project;
use berth_sign::{PublicKey, TrustedLog};

/// What a policy checks a signature with.
pub(super) enum Check {
    /// A public key.
    Key(PublicKey),
    /// A certificate for `identity` from `issuer`, chaining to `roots` (DER).
    Certificate {
        identity: String,
        issuer: String,
        roots: Vec<Vec<u8>>,
    },
}

/// A policy with its key or roots read.
pub(super) struct Policy<'p> {
    pub(super) policy: &'p VerifyPolicy,
    pub(super) check: Check,
    /// With `transparencyLog: required`: the logs (trusted_root.json's `tlogs`) one
    /// of which must hold the signature's entry.
    pub(super) logs: Option<Vec<TrustedLog>>,
}

impl Policy<'_> {
    /// What berth.lock records of a verification by this policy.
    pub(super) fn by(&self) -> VerifiedBy {
        match &self.check {
            Check::Key(key) => VerifiedBy::Key(key.fingerprint().clone()),
            Check::Certificate {
                identity, issuer, ..
            } => VerifiedBy::Certificate {
                identity: identity.clone(),
                issuer: issuer.clone(),
            },
        }
    }

    /// Whether `verified` is a verification by this policy (with the log entry
    /// checked, when the policy requires one).
    pub(super) fn recorded(&self, verified: &Verification) -> bool {
        verified.by == self.by() && (self.logs.is_none() || verified.log_index.is_some())
    }

    /// The signer, for messages.
    pub(super) fn describe(&self) -> String {
        match &self.check {
            Check::Key(key) => format!("the key {}", key.fingerprint()),
            Check::Certificate {
                identity, issuer, ..
            } => format!("a certificate for {identity} from {issuer}"),
        }
    }

    /// The key that checks a signature carrying `certificate` (DER) and `chain`: the
    /// policy's own key, or the certificate's once it is trusted; why not, otherwise.
    pub(super) fn key_for(
        &self,
        certificate: Option<&[u8]>,
        chain: &[Vec<u8>],
    ) -> Result<PublicKey, String> {
        match &self.check {
            Check::Key(key) => Ok(key.clone()),
            Check::Certificate {
                identity,
                issuer,
                roots,
            } => {
                let leaf =
                    certificate.ok_or_else(|| "a signature carries no certificate".to_string())?;
                berth_sign::trusted_key(leaf, chain, roots, identity, issuer)
                    .map_err(|e| e.to_string())
            }
        }
    }
}

/// Every policy of the project, its files read; a policy this build cannot
/// check is refused here, before any registry is asked.
pub(super) fn policies(project: &Project) -> Result<Vec<Policy<'_>>> {
    let mut out = Vec::new();
    for (index, policy) in project.verify.iter().enumerate() {
        let at = format!("{}:{}: `verify[{index}]`", project.file, policy.pos);
        let read = |path: &str| -> Result<Vec<u8>> {
            let file = project.dir.join(path);
            crate::fs_source::contained(&project.dir, &file)
                .and_then(|()| crate::fs_source::read_bounded(&file))
                .map_err(|e| anyhow!("{at}: cannot read `{path}`: {e}"))
        };
        let check = match &policy.signer {
            Signer::Key(path) => Check::Key(
                PublicKey::from_pem(&read(path)?)
                    .map_err(|e| anyhow!("{at}: the key `{path}`: {e}"))?,
            ),
            Signer::Certificate {
                identity,
                issuer,
                roots,
            } => {
                let roots = match roots {
                    Roots::Pem(path) => Some(berth_sign::certificates_from_pem(&read(path)?))
                        .filter(|r| !r.is_empty())
                        .ok_or_else(|| anyhow!("{at}: `roots: {path}` holds no PEM certificate"))?,
                    Roots::TrustedRoot(path) => berth_sign::trusted_root_certificates(&read(path)?)
                        .ok_or_else(|| anyhow!("{at}: `trustedRoot: {path}` is not sigstore's trusted_root.json (no certificateAuthorities with certificates)"))?,
                };
                Check::Certificate {
                    identity: identity.clone(),
                    issuer: issuer.clone(),
                    roots,
                }
            }
        };
        let trusted_root = match &policy.signer {
            Signer::Certificate {
                roots: Roots::TrustedRoot(path),
                ..
            } => Some(path),
            Signer::Certificate { .. } => None,
            Signer::Key(_) => policy.trusted_root.as_ref(),
        };
        let logs = match (policy.transparency_log, trusted_root) {
            (TransparencyLog::Optional, _) => None,
            (TransparencyLog::Required, Some(path)) => Some(
                berth_sign::trusted_root_logs(&read(path)?)
                    .filter(|logs| !logs.is_empty())
                    .ok_or_else(|| anyhow!("{at}: `trustedRoot: {path}` names no transparency log (`tlogs` with a public key), which `transparencyLog: required` checks the entry against; add the log, or write `transparencyLog: optional`"))?,
            ),
            (TransparencyLog::Required, None) => bail!("{at}: `transparencyLog: required` checks the signature's log entry against the log's key, which only a `trustedRoot:` (sigstore's trusted_root.json, its `tlogs`) names: beside `key:`, or as `certificate.trustedRoot`; give one, or write `transparencyLog: optional` to verify the signature alone"),
        };
        out.push(Policy {
            policy,
            check,
            logs,
        });
    }
    Ok(out)
}
