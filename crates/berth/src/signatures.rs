//! `verify:` carried out (#51): at `berth pin`, each pinned digest a policy
//! covers is checked against its cosign signatures (the tag scheme) with the
//! policy's key, once per digest, and the lock records how; under `--locked`, a
//! covered pin without that record is refused, with no registry asked.

use std::sync::Arc;

use anyhow::{anyhow, bail, Result};
use berth_core::lock::{Lock, LockEntry, Verification, VerifiedBy, LOCK_FILE};
use berth_core::project::{Signer, TransparencyLog, VerifyPolicy};
use berth_core::Project;
use berth_registry::Registry;
use berth_sign::PublicKey;

use crate::settings::Registry as RegistrySettings;

/// A policy with its key read.
struct Policy<'p> {
    policy: &'p VerifyPolicy,
    key: PublicKey,
}

/// The keys of every policy, read from the files berth.yaml names; a policy
/// this build cannot check yet is refused here, before any registry is asked.
fn policies(project: &Project) -> Result<Vec<Policy<'_>>> {
    let mut out = Vec::new();
    for (index, policy) in project.verify.iter().enumerate() {
        let at = format!("{}:{}: `verify[{index}]`", project.file, policy.pos);
        let path = match &policy.signer {
            Signer::Key(path) => path,
            Signer::Certificate { .. } => bail!("{at}: certificate-based signatures are not verified by this berth yet (#51's next step); verify with a `key:` for now"),
        };
        if policy.transparency_log == TransparencyLog::Required {
            bail!("{at}: `transparencyLog: required` asks for a log entry this berth cannot check yet (#51's next step); write `transparencyLog: optional` to verify the key's signature alone");
        }
        let file = project.dir.join(path);
        let bytes = crate::fs_source::contained(&project.dir, &file)
            .and_then(|()| crate::fs_source::read_bounded(&file))
            .map_err(|e| anyhow!("{at}: cannot read the key `{path}`: {e}"))?;
        let key =
            PublicKey::from_pem(&bytes).map_err(|e| anyhow!("{at}: the key `{path}`: {e}"))?;
        out.push(Policy { policy, key });
    }
    Ok(out)
}

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

/// Whether `held` already records a verification of this very pin by `key`.
fn reusable(held: Option<&Lock>, entry: &LockEntry, key: &PublicKey) -> Option<Verification> {
    let old = held?.entries.iter().find(|o| {
        o.component == entry.component
            && o.variant == entry.variant
            && o.image == entry.image
            && o.digest == entry.digest
    })?;
    let verified = old.verified.clone()?;
    matches!(&verified.by, VerifiedBy::Key(f) if f == key.fingerprint()).then_some(verified)
}

/// Verifies every entry of `lock` a policy covers (`held`: the lock as it was,
/// whose verifications of unchanged digests are kept, never asked again).
pub fn verify_all(
    settings: &RegistrySettings,
    project: &Project,
    lock: &mut Lock,
    held: Option<&Lock>,
) -> Result<()> {
    let policies = policies(project)?;
    if policies.is_empty() {
        return Ok(());
    }
    let registry = crate::tag_lists::client(settings)?;
    let mut asked = Vec::new();
    for (index, entry) in lock.entries.iter_mut().enumerate() {
        let Some(first) = covering(project, &policies, entry).first().copied() else {
            continue;
        };
        match reusable(held, entry, &first.key) {
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
        &registry,
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
        let by_tag = tagged.as_ref().and_then(|found| {
            let verified = found.layers.iter().any(|layer| {
                match berth_sign::verify_layer(
                    &policy.key,
                    &layer.payload,
                    layer.signature.as_deref(),
                    &entry.image,
                    &entry.digest,
                ) {
                    Ok(()) => true,
                    Err(berth_sign::LayerError::Payload(e)) => {
                        why = Some(e.to_string());
                        false
                    }
                    Err(_) => false,
                }
            });
            verified.then(|| found.manifest.clone())
        });
        let signature = match by_tag {
            Some(manifest) => Some(manifest),
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
        let Some(signature) = signature else {
            let count = tagged.as_ref().map_or(0, |t| t.layers.len())
                + bundles.as_ref().map_or(0, Vec::len);
            if count == 0 {
                return Err(format!("{shown}: unsigned: its repository has no signature for this digest (neither cosign's `{}-{}.sig` tag nor a sigstore bundle among its referrers); sign it (`cosign sign --key …`) or leave the component out of `verify:`", entry.digest.algorithm().as_str(), entry.digest.hex()));
            }
            let why = why.unwrap_or_else(|| {
                format!(
                    "none of its {count} signature(s) is by the key {} (`verify:` at {})",
                    policy.key.fingerprint(),
                    policy.policy.pos
                )
            });
            return Err(format!("{shown}: {why}"));
        };
        recorded.get_or_insert(Verification {
            by: VerifiedBy::Key(policy.key.fingerprint().clone()),
            signature,
            log_index: None,
        });
    }
    recorded.ok_or_else(|| format!("{shown}: no policy covers it"))
}

/// The referrer whose bundle is `policy`'s key's signature of the pin; why the
/// last one that was by the key did not vouch for it, in `why`.
fn by_bundle(
    policy: &Policy<'_>,
    bundles: &[berth_registry::Referrer],
    entry: &LockEntry,
    why: &mut Option<String>,
) -> Option<berth_ref::Digest> {
    for referrer in bundles {
        for (_, bytes) in referrer
            .layers
            .iter()
            .filter(|(t, _)| t == berth_sign::BUNDLE_TYPE)
        {
            match berth_sign::verify_bundle(&policy.key, bytes, &entry.digest) {
                Ok(()) => return Some(referrer.manifest.clone()),
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
/// policy's key; reads only the key files.
pub fn check_locked(project: &Project, lock: &Lock) -> Result<()> {
    if project.verify.is_empty() {
        return Ok(());
    }
    let policies = policies(project)?;
    for entry in &lock.entries {
        for policy in covering(project, &policies, entry) {
            let by_key = entry.verified.as_ref().is_some_and(
                |v| matches!(&v.by, VerifiedBy::Key(f) if f == policy.key.fingerprint()),
            );
            if !by_key {
                bail!(
                    "{LOCK_FILE} pins `{}@{}` for component `{}` with no signature verified by the key {} that `verify:` requires ({}:{}); run `berth pin`, which verifies it",
                    entry.image, entry.digest, entry.component, policy.key.fingerprint(), project.file, policy.policy.pos
                );
            }
        }
    }
    Ok(())
}
