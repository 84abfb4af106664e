//! `verify:` carried out (#51): at `berth pin`, each pinned digest a policy
//! covers is checked against its cosign signatures (the tag scheme, then
//! sigstore bundles among its referrers) with the policy's key or a certificate
//! it trusts, once per digest, and the lock records how; under `--locked`, a
//! covered pin without that record is refused, with no registry asked.

use std::sync::Arc;

use anyhow::{anyhow, bail, Result};
use berth_core::lock::{Lock, LockEntry, Verification, LOCK_FILE};
use berth_core::Project;
use berth_registry::Registry;

use crate::settings::Registry as RegistrySettings;

mod policy;
use policy::{policies, Policy};

/// The policies covering `entry`'s component.
fn covering<'a, 'p>(
    project: &Project,
    policies: &'a [Policy<'p>],
    entry: &LockEntry,
) -> Vec<&'a Policy<'p>> {
    let Some(component) = project.component(&entry.component) else {
        return Vec::new();
    };
    let covered = project.policies_for(component);
    (policies.iter())
        .filter(|p| covered.iter().any(|c| std::ptr::eq(*c, p.policy)))
        .collect()
}

/// Whether `held` already records a verification of this very pin by `policy`.
fn reusable(held: Option<&Lock>, entry: &LockEntry, policy: &Policy<'_>) -> Option<Verification> {
    let old = held?.entries.iter().find(|o| {
        o.component == entry.component
            && o.variant == entry.variant
            && o.image == entry.image
            && o.digest == entry.digest
    })?;
    let verified = old.verified.clone()?;
    policy.recorded(&verified).then_some(verified)
}

/// Reads every policy's files and refuses one that cannot be checked: called
/// before pinning, so such a policy is said before any registry is asked.
pub fn ready(project: &Project) -> Result<()> {
    policies(project).map(drop)
}

/// Verifies every entry of `lock` a policy covers (`held`: the lock as it was,
/// whose verifications of unchanged digests are kept, never asked again).
pub fn verify_all(
    registry: &Arc<Registry>,
    settings: &RegistrySettings,
    project: &Project,
    lock: &mut Lock,
    held: Option<&Lock>,
) -> Result<()> {
    let policies = policies(project)?;
    if policies.is_empty() {
        return Ok(());
    }
    let mut asked = Vec::new();
    for (index, entry) in lock.entries.iter_mut().enumerate() {
        let Some(first) = covering(project, &policies, entry).first().copied() else {
            continue;
        };
        match reusable(held, entry, first) {
            Some(verified) => entry.verified = Some(verified),
            None => asked.push(index),
        }
    }
    let runtime = crate::runtime::get()?;
    let jobs: Vec<(usize, LockEntry)> = asked
        .iter()
        .map(|&i| (i, lock.entries[i].clone()))
        .collect();
    let results = runtime.block_on(check_all(
        registry,
        project,
        &policies,
        jobs,
        settings.concurrency,
    ));
    let mut failures = Vec::new();
    for (index, result) in results {
        match result {
            Ok(verified) => lock.entries[index].verified = Some(verified),
            Err(why) => failures.push(why),
        }
    }
    match failures.len() {
        0 => Ok(()),
        1 => Err(anyhow!("{}; {LOCK_FILE} is unchanged", failures[0])),
        n => Err(anyhow!(
            "{n} images are not signed as `verify:` requires; {LOCK_FILE} is unchanged:\n  {}",
            failures.join("\n  ")
        )),
    }
}

async fn check_all(
    registry: &Arc<Registry>,
    project: &Project,
    policies: &[Policy<'_>],
    jobs: Vec<(usize, LockEntry)>,
    concurrency: usize,
) -> Vec<(usize, Result<Verification, String>)> {
    use futures_util::StreamExt as _;
    futures_util::stream::iter(jobs)
        .map(|(index, entry)| async move {
            let covering = covering(project, policies, &entry);
            (index, check(registry, &covering, &entry).await)
        })
        .buffered(concurrency.max(1))
        .collect()
        .await
}

/// The verification of one pin by every policy covering it (the first is
/// recorded): cosign's tag scheme first, then (only when that did not verify)
/// the sigstore bundles attached as OCI 1.1 referrers, cosign 3's default.
async fn check(
    registry: &Registry,
    covering: &[&Policy<'_>],
    entry: &LockEntry,
) -> Result<Verification, String> {
    let shown = match &entry.variant {
        Some(variant) => format!(
            "component `{}` variant `{variant}` ({}@{})",
            entry.component, entry.image, entry.digest
        ),
        None => format!(
            "component `{}` ({}@{})",
            entry.component, entry.image, entry.digest
        ),
    };
    let tagged = registry
        .cosign_signatures(
            &entry.image,
            &entry.digest,
            &berth_sign::expected_payloads(&entry.image, &entry.digest),
        )
        .await
        .map_err(|e| format!("{shown}: cannot read its signatures: {e}"))?;
    let mut bundles: Option<Vec<berth_registry::Referrer>> = None;
    let mut recorded = None;
    for policy in covering {
        let mut why = None;
        let by_tag = match &policy.logs {
            Some(_) if tagged.is_some() => {
                why = Some(V1_UNCHECKED.to_string());
                None
            }
            _ => (tagged.as_ref()).and_then(|found| by_tag(policy, found, entry, &mut why)),
        };
        let signature = match by_tag {
            Some(manifest) => Some((manifest, None)),
            None => {
                if bundles.is_none() {
                    let found = registry
                        .referrers(&entry.image, &entry.digest, berth_sign::BUNDLE_TYPE)
                        .await
                        .map_err(|e| format!("{shown}: cannot read its referrers: {e}"))?;
                    bundles = Some(found);
                }
                by_bundle(
                    policy,
                    bundles.as_deref().unwrap_or_default(),
                    entry,
                    &mut why,
                )
            }
        };
        let Some((signature, log_index)) = signature else {
            let count = tagged.as_ref().map_or(0, |t| t.layers.len())
                + bundles.as_ref().map_or(0, Vec::len);
            if count == 0 {
                return Err(format!("{shown}: unsigned: its repository has no signature for this digest (neither cosign's `{}-{}.sig` tag nor a sigstore bundle among its referrers); sign it (`cosign sign --key …`) or leave the component out of `verify:`", entry.digest.algorithm().as_str(), entry.digest.hex()));
            }
            let why = why.unwrap_or_else(|| {
                format!(
                    "none of its {count} signature(s) is by {} (`verify:` at {})",
                    policy.describe(),
                    policy.policy.pos
                )
            });
            return Err(format!("{shown}: {why}"));
        };
        recorded.get_or_insert(Verification {
            by: policy.by(),
            signature,
            log_index,
        });
    }
    recorded.ok_or_else(|| format!("{shown}: no policy covers it"))
}

/// The tag-scheme signature manifest one of whose signatures is `policy`'s of the
/// pin; why the last one by its signer did not vouch for it, in `why`.
fn by_tag(
    policy: &Policy<'_>,
    found: &berth_registry::Signatures,
    entry: &LockEntry,
    why: &mut Option<String>,
) -> Option<berth_ref::Digest> {
    let verified = found.layers.iter().any(|layer| {
        let pem = |text: &Option<String>| {
            berth_sign::certificates_from_pem(text.as_deref().unwrap_or_default().as_bytes())
        };
        let (leaf, chain) = (pem(&layer.certificate), pem(&layer.chain));
        let key = match policy.key_for(leaf.first().map(Vec::as_slice), &chain) {
            Ok(key) => key,
            Err(reason) => {
                *why = Some(reason);
                return false;
            }
        };
        let result = berth_sign::verify_layer(
            &key,
            &layer.payload,
            layer.signature.as_deref(),
            &entry.image,
            &entry.digest,
        );
        match result {
            Ok(()) => true,
            Err(berth_sign::LayerError::Payload(e)) => {
                *why = Some(e.to_string());
                false
            }
            Err(_) => false,
        }
    });
    verified.then(|| found.manifest.clone())
}

/// Why a tag-scheme signature cannot meet `transparencyLog: required`.
const V1_UNCHECKED: &str = "its cosign 2 (tag scheme) signature's log entry is Rekor v1's signed entry timestamp, which this berth does not check; `transparencyLog: required` is met by a cosign 3 bundle with a Rekor v2 entry";

/// The referrer whose bundle is `policy`'s key's signature of the pin, with its
/// log entry's index when the policy requires one; why the last one that was by
/// the key did not vouch for it, in `why`.
fn by_bundle(
    policy: &Policy<'_>,
    bundles: &[berth_registry::Referrer],
    entry: &LockEntry,
    why: &mut Option<String>,
) -> Option<(berth_ref::Digest, Option<u64>)> {
    for referrer in bundles {
        for (_, bytes) in referrer
            .layers
            .iter()
            .filter(|(t, _)| t == berth_sign::BUNDLE_TYPE)
        {
            let (leaf, chain) = berth_sign::bundle_certificates(bytes).unzip();
            let key = match policy.key_for(leaf.as_deref(), chain.as_deref().unwrap_or_default()) {
                Ok(key) => key,
                Err(reason) => {
                    *why = Some(reason);
                    continue;
                }
            };
            match berth_sign::verify_bundle(&key, bytes, &entry.digest) {
                Ok(()) => match policy.logs.as_deref() {
                    None => return Some((referrer.manifest.clone(), None)),
                    Some(logs) => match berth_sign::verify_log_entry(bytes, logs) {
                        Ok(index) => return Some((referrer.manifest.clone(), Some(index))),
                        Err(e) => *why = Some(e.to_string()),
                    },
                },
                Err(
                    e @ (berth_sign::BundleError::OtherDigest(_)
                    | berth_sign::BundleError::OtherPredicate(_)),
                ) => *why = Some(e.to_string()),
                Err(_) => {}
            }
        }
    }
    None
}

/// Under `--locked`: every pin a policy covers records a verification by that
/// policy's key or certificate identity; reads only berth.yaml's files.
pub fn check_locked(project: &Project, lock: &Lock) -> Result<()> {
    if project.verify.is_empty() {
        return Ok(());
    }
    let policies = policies(project)?;
    for entry in &lock.entries {
        for policy in covering(project, &policies, entry) {
            if !entry.verified.as_ref().is_some_and(|v| policy.recorded(v)) {
                bail!(
                    "{LOCK_FILE} pins `{}@{}` for component `{}` with no signature verified by {} that `verify:` requires ({}:{}); run `berth pin`, which verifies it",
                    entry.image, entry.digest, entry.component, policy.describe(), project.file, policy.policy.pos
                );
            }
        }
    }
    Ok(())
}
