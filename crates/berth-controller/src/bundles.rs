//! The CA bundles of a `Berth`: each source's PEM (inline, a ConfigMap's
//! key, watched ClusterTrustBundles), built by berth-core into the bundle's
//! ConfigMap, with the injection rules berth.yaml's bundles have.

use berth_core::configs::trust_bundles::{self, TrustBundle};
use berth_core::configs::truststore::Password;
use berth_core::configs::{ca, Generated};
use berth_core::project::{ClusterObject, Defaults, InjectRequest, TrustSpec};

use super::{problem, read, rfc3339, Problem, SourceKind, Sources};
use crate::reason::Reason;
use crate::types::{Berth, BundleStatus};

/// The CA bundles of `spec.caBundles` with their injection rules (their
/// sources are read apart, from the cluster).
pub(super) fn bundle_specs(berth: &Berth) -> Vec<TrustSpec> {
    (berth.spec.ca_bundles.iter())
        .map(|(name, spec)| bundle_spec(name, spec))
        .collect()
}

/// One bundle as the core takes it: the forms its ConfigMap holds are those `formats` names
/// and those its runtimes read (berth.yaml's rules, through the same [`TrustSpec::inject`]).
fn bundle_spec(bundle: &str, spec: &crate::types::CaBundleSpec) -> TrustSpec {
    let mut trust = TrustSpec::new(bundle);
    if let Some(key) = &spec.key {
        trust.key = key.clone();
    }
    trust.formats.pkcs12 = spec.formats.contains(&crate::types::CaFormat::Pkcs12);
    trust.formats.jks = spec.formats.contains(&crate::types::CaFormat::Jks);
    trust.defaults = spec.defaults.map(|d| match d {
        crate::types::DefaultRoots::Mozilla => Defaults::Mozilla,
    });
    if let Some(i) = &spec.inject {
        let named_env = (!i.env.is_empty()).then(|| i.env.clone());
        let runtimes = (i.runtimes.as_ref()).map(|r| r.iter().map(|&r| r.into()).collect());
        let asked = InjectRequest {
            components: i.components.clone(),
            containers: i.containers.clone(),
            mount_path: i.mount_path.clone(),
            named_env,
            runtimes,
        };
        let password = (spec.password.as_ref()).map(|r| (r.name.clone(), r.key.clone()));
        trust.inject(asked, password);
    }
    trust
}

/// One CA source's PEM, named for messages: inline, a ConfigMap's key, or
/// ClusterTrustBundles (from the controller's watch; `None`: not watched).
fn source_pem(
    field: &str,
    source: &crate::types::CaSource,
    sources: &Sources,
    trust: Option<&[TrustBundle]>,
) -> Result<(String, Vec<u8>), Problem> {
    match (
        &source.config_map,
        &source.inline,
        &source.cluster_trust_bundle,
    ) {
        (Some(r), None, None) => Ok((
            format!("configMap/{} key {}", r.name, r.key),
            read(
                sources,
                SourceKind::ConfigMap,
                r,
                &format!("{field}.configMap"),
            )?
            .to_vec(),
        )),
        (None, Some(text), None) => Ok((format!("{field}.inline"), text.clone().into_bytes())),
        (None, None, Some(r)) => {
            let from = trust_bundle_source(r);
            let field = format!("{field}.clusterTrustBundle");
            let Some(bundles) = trust else {
                return Err(problem(Reason::SourceMissing, format!("{field}: this controller does not read ClusterTrustBundles; run it with `--cluster-trust-bundles` (the chart's `clusterTrustBundles.read: true`, which grants get, list and watch on them), or use a `configMap` source")));
            };
            let pem = trust_bundles::pem(&from, bundles).ok_or_else(|| {
                problem(
                    Reason::SourceMissing,
                    format!("{field}: {}", from.missing()),
                )
            })?;
            Ok((from.describe(), pem.into_bytes()))
        }
        _ => Err(problem(
            Reason::InvalidSpec,
            format!("{field}: set exactly one of inline, configMap, clusterTrustBundle"),
        )),
    }
}

/// The core's form of a `clusterTrustBundle` source (the CRD's rules leave
/// `name` or `signerName`; a spec that has neither names the signer `""`).
pub(crate) fn trust_bundle_source(r: &crate::types::TrustBundleRef) -> ClusterObject {
    match (&r.name, &r.signer_name) {
        (Some(name), _) => ClusterObject::TrustBundle { name: name.clone() },
        (None, signer) => ClusterObject::Signer {
            signer_name: signer.clone().unwrap_or_default(),
            labels: (r.label_selector.iter())
                .flat_map(|s| s.match_labels.iter().map(|(k, v)| (k.clone(), v.clone())))
                .collect(),
        },
    }
}

/// The Java stores' password from the Secret `password` names (`None`:
/// the default); its value is never in a message.
fn password(
    field: &str,
    spec: &crate::types::CaBundleSpec,
    sources: &Sources,
) -> Result<Option<Password>, Problem> {
    let Some(r) = &spec.password else {
        return Ok(None);
    };
    let field = format!("{field}.password");
    let bytes = read(sources, SourceKind::Secret, r, &field)?;
    let password = Password::new(bytes).map_err(|why| {
        let message = format!(
            "{field}: the value of secret `{}` key `{}` cannot be a truststore password: {why}",
            r.name, r.key
        );
        problem(Reason::InvalidSpec, message)
    })?;
    Ok(Some(password))
}

pub(super) fn build_bundles(
    berth: &Berth,
    sources: &Sources,
    trust: Option<&[TrustBundle]>,
    now: i64,
) -> Result<(Vec<Generated>, Vec<BundleStatus>), Problem> {
    let mut generated = Vec::new();
    let mut status = Vec::new();
    for (name, spec) in &berth.spec.ca_bundles {
        let field = format!("spec.caBundles.{name}");
        let mut pem = Vec::new();
        for (i, source) in spec.sources.iter().enumerate() {
            let field = format!("{field}.sources[{i}]");
            pem.push(source_pem(&field, source, sources, trust)?);
        }
        let trust = bundle_spec(name, spec);
        let password = password(&field, spec, sources)?;
        // No system store: a Berth's `defaults:` are Mozilla's roots, the same everywhere.
        let bundle = ca::assemble(&trust, pem, None, password, now, true).map_err(|e| {
            let reason = match &e {
                ca::Refused::Pem(ca::PemError::Content {
                    fault: ca::PemFault::PrivateKey,
                    ..
                }) => Reason::PrivateKeyInSource,
                ca::Refused::Pem(ca::PemError::Content {
                    fault: ca::PemFault::Expired | ca::PemFault::NotYetValid,
                    ..
                }) => Reason::ExpiredCertificate,
                _ => Reason::InvalidCertificate,
            };
            problem(reason, format!("{field}: {e}"))
        })?;
        status.push(BundleStatus {
            name: name.clone(),
            certificates: bundle.certificates as u32,
            object: bundle.generated.name.clone(),
            first_expiry: bundle.first_expiry.map(rfc3339),
        });
        generated.push(bundle.generated);
    }
    Ok((generated, status))
}
