//! `verify:` of berth.yaml: which components' images must carry a signature,
//! and by whom — a cosign public key, or a certificate with an identity and an
//! issuer. `berth pin` verifies once per digest and records how in berth.lock;
//! `--locked` refuses a covered image the lock records no verification for.

use berth_yaml::{Node, Pos};

use super::{Component, Loader, Project, ProjectError};

/// The keys of one `verify:` entry.
pub(crate) const VERIFY_KEYS: &[&str] = &[
    "components",
    "key",
    "certificate",
    "trustedRoot",
    "transparencyLog",
];
/// The keys of `certificate:`.
pub(crate) const CERTIFICATE_KEYS: &[&str] = &["identity", "issuer", "roots", "trustedRoot"];

/// One entry of `verify:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyPolicy {
    /// `components:`; `None`: every component (but those saying `verify: false`).
    pub components: Option<Vec<String>>,
    /// Who must have signed.
    pub signer: Signer,
    /// Whether a transparency-log entry must be checked.
    pub transparency_log: TransparencyLog,
    /// `trustedRoot:` beside `key:`: sigstore's trusted_root.json, whose `tlogs`
    /// a key's log entries are checked against (a certificate names its own).
    pub trusted_root: Option<String>,
    /// Where the entry is written.
    pub pos: Pos,
}

/// Who signs the images of a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signer {
    /// `key:`: a cosign public key file (PEM), relative to berth.yaml.
    Key(String),
    /// `certificate:`: a certificate for this identity from this issuer, chaining to the roots.
    Certificate {
        /// The certificate's subject alternative name (a workflow URL, an e-mail).
        identity: String,
        /// The OIDC issuer recorded in the certificate.
        issuer: String,
        /// `roots:` (PEM) or `trustedRoot:` (sigstore's trusted_root.json).
        roots: Roots,
    },
}

/// Where a certificate must chain to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Roots {
    /// `roots:`: a PEM file of CA certificates.
    Pem(String),
    /// `trustedRoot:`: sigstore's trusted_root.json.
    TrustedRoot(String),
}

/// `transparencyLog:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransparencyLog {
    /// A log entry must be found and checked.
    Required,
    /// A signature without one is accepted (keys: the default; offline checks).
    Optional,
}

impl Project {
    /// The policies that cover `component`: those naming it, and those naming no
    /// components, unless the component says `verify: false`.
    pub fn policies_for<'p>(&'p self, component: &Component) -> Vec<&'p VerifyPolicy> {
        if !component.verify {
            return Vec::new();
        }
        (self.verify.iter())
            .filter(|p| {
                p.components
                    .as_ref()
                    .is_none_or(|names| names.contains(&component.name))
            })
            .collect()
    }
}

impl Loader<'_> {
    /// `verify:`, a list of policies.
    pub(super) fn verify(
        &self,
        node: &Node,
        components: &[String],
    ) -> Result<Vec<VerifyPolicy>, ProjectError> {
        let items = self.list(node, "verify", "a list of signature policies")?;
        (items.iter().enumerate())
            .map(|(index, item)| self.policy(item, &format!("verify[{index}]"), components))
            .collect()
    }

    fn policy(
        &self,
        node: &Node,
        context: &str,
        components: &[String],
    ) -> Result<VerifyPolicy, ProjectError> {
        let entries = self.fields(node, context, VERIFY_KEYS)?;
        let (mut names, mut signer, mut log, mut trusted_root) = (None, None, None, None);
        for (k, v) in entries {
            let field = format!("{context}.{}", k.as_str().unwrap_or_default());
            match k.as_str().unwrap_or_default() {
                "components" => {
                    let mut list = Vec::new();
                    for item in self.strings(v, &field)? {
                        self.known_component(&item.value, item.pos, &field, components)?;
                        list.push(item.value);
                    }
                    names = Some(list);
                }
                "key" => signer = Some(self.signer(signer, v, Signer::Key(self.string(v, &field)?.to_string()))?),
                "certificate" => {
                    let certificate = self.certificate(v, &field)?;
                    signer = Some(self.signer(signer, v, certificate)?);
                }
                "trustedRoot" => trusted_root = Some((self.string(v, &field)?.to_string(), v.pos)),
                "transparencyLog" => {
                    log = Some(match self.string(v, &field)? {
                        "required" => TransparencyLog::Required,
                        "optional" => TransparencyLog::Optional,
                        other => return Err(self.invalid(v, &field, other, "use required or optional: whether a transparency-log entry must be checked (offline checks need optional)")),
                    })
                }
                _ => {}
            }
        }
        let Some(signer) = signer else {
            return Err(ProjectError::Shape {
                file: self.file.to_string(),
                pos: node.pos,
                problem: format!("`{context}` names no signer; give `key:` (a cosign public key file) or `certificate:` (identity, issuer and roots)"),
            });
        };
        // A key is its own trust anchor; a short-lived certificate means something
        // only with the log's record of when it signed.
        let default = match signer {
            Signer::Key(_) => TransparencyLog::Optional,
            Signer::Certificate { .. } => TransparencyLog::Required,
        };
        if let (Some((_, pos)), Signer::Certificate { .. }) = (&trusted_root, &signer) {
            return Err(ProjectError::Shape {
                file: self.file.to_string(),
                pos: *pos,
                problem: format!("`{context}.trustedRoot` goes with `key:`; a certificate names its trust in `certificate.trustedRoot` (or `roots`)"),
            });
        }
        Ok(VerifyPolicy {
            components: names,
            signer,
            transparency_log: log.unwrap_or(default),
            trusted_root: trusted_root.map(|(path, _)| path),
            pos: node.pos,
        })
    }

    /// `signer`, unless the entry has one already (`key:` and `certificate:` both).
    fn signer(
        &self,
        held: Option<Signer>,
        node: &Node,
        signer: Signer,
    ) -> Result<Signer, ProjectError> {
        match held {
            None => Ok(signer),
            Some(_) => Err(ProjectError::Shape {
                file: self.file.to_string(),
                pos: node.pos,
                problem: "a `verify:` entry has either `key:` or `certificate:`, not both; write two entries".into(),
            }),
        }
    }

    fn certificate(&self, node: &Node, context: &str) -> Result<Signer, ProjectError> {
        let entries = self.fields(node, context, CERTIFICATE_KEYS)?;
        let text = |key: &str| -> Result<Option<String>, ProjectError> {
            match entries.iter().find(|(k, _)| k.as_str() == Some(key)) {
                Some((_, v)) => Ok(Some(
                    self.string(v, &format!("{context}.{key}"))?.to_string(),
                )),
                None => Ok(None),
            }
        };
        let roots = match (text("roots")?, text("trustedRoot")?) {
            (Some(pem), None) => Roots::Pem(pem),
            (None, Some(json)) => Roots::TrustedRoot(json),
            _ => {
                return Err(ProjectError::Shape {
                    file: self.file.to_string(),
                    pos: node.pos,
                    problem: format!("`{context}` needs one of `roots:` (a PEM file of CA certificates) or `trustedRoot:` (sigstore's trusted_root.json)"),
                })
            }
        };
        let (Some(identity), Some(issuer)) = (text("identity")?, text("issuer")?) else {
            return Err(ProjectError::Shape {
                file: self.file.to_string(),
                pos: node.pos,
                problem: format!("`{context}` needs `identity:` (the certificate's subject, e.g. a workflow URL) and `issuer:` (the OIDC issuer)"),
            });
        };
        Ok(Signer::Certificate {
            identity,
            issuer,
            roots,
        })
    }
}
