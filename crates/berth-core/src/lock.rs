//! `berth.lock`: the digest each resolved image pointed to when `berth pin` ran,
//! and the digest of each remote Helm chart's archive at its version.
//!
//! A small YAML file meant to be committed and reviewed: one entry per
//! component, sorted by component name, each with the resolved `image`
//! (repository and tag) and its `digest`; then, when berth.yaml renders remote
//! charts, one entry per chart and version, sorted. The same pins give the same
//! bytes, so a re-pin that changes nothing leaves the file unchanged (and a
//! project without remote charts has no `charts:` key at all).
//!
//! ```yaml
//! # berth.lock: image digests pinned by `berth pin`. Commit it; regenerate it with `berth pin`.
//! version: 1
//! images:
//! - component: epp
//!   image: ghcr.io/llm-d/llm-d-inference-scheduler:dev
//!   digest: sha256:0123…
//! charts:
//! - chart: oci://ghcr.io/llm-d/charts/router
//!   version: "0.10.0"
//!   digest: sha256:4567…
//! ```

use berth_ref::{Digest, Reference};
use berth_yaml::{Limits, Node, Pos};

/// Name of the lock file, next to berth.yaml.
pub const LOCK_FILE: &str = "berth.lock";
const HEADER: &str = "# berth.lock: image digests pinned by `berth pin`. Commit it; regenerate it with `berth pin`.\n";
const VERSION: &str = "1";

/// A parsed lock file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lock {
    /// Entries, sorted by component.
    pub entries: Vec<LockEntry>,
    /// Remote charts, sorted by chart, repository and version.
    pub charts: Vec<ChartPin>,
}

/// One remote Helm chart pinned: the digest of its archive (the `.tgz` helm
/// pulls; for an `oci://` chart, the digest of its chart layer) at a version.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ChartPin {
    /// `chart:` as berth.yaml writes it (`oci://HOST/REPO/NAME`, or a name in `repository`).
    pub chart: String,
    /// `repository:`, for a chart named in a chart repository.
    pub repository: Option<String>,
    /// `version:`.
    pub version: String,
    /// The archive's digest.
    pub digest: Digest,
}

/// One pinned image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockEntry {
    /// The component.
    pub component: String,
    /// The member of the component's image family it pins (`None`: the selected
    /// one, or a component without `variants:`).
    pub variant: Option<String>,
    /// The resolved reference that was pinned (no digest).
    pub image: Reference,
    /// Its digest (of the index, or of one platform's manifest with `--platform`).
    pub digest: Digest,
    /// The platform pinned, with `--platform`.
    pub platform: Option<String>,
    /// How its signature was verified, when a `verify:` policy covers it.
    pub verified: Option<Verification>,
}

/// How `berth pin` verified an image's signature (#51): once per digest,
/// recorded so that `--locked` need not ask the registry again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    /// Who signed.
    pub by: VerifiedBy,
    /// The digest of the signature that verified (the `.sig` manifest, or the bundle).
    pub signature: Digest,
    /// The transparency log's index of the entry checked, when one was.
    pub log_index: Option<u64>,
}

/// The signer a verification found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifiedBy {
    /// A public key, by its fingerprint (`sha256:` of its SubjectPublicKeyInfo).
    Key(Digest),
    /// A certificate for this identity from this issuer.
    Certificate {
        /// The certificate's subject alternative name.
        identity: String,
        /// Its OIDC issuer.
        issuer: String,
    },
}

impl ChartPin {
    /// The digest a pin records for a chart archive's bytes (sha256, as OCI
    /// registries name the chart layer).
    pub fn digest_of(archive: &[u8]) -> Digest {
        use sha2::Digest as _;
        Digest::from_sha256(&sha2::Sha256::digest(archive).into())
    }
}

/// A lock file that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LockError {
    /// Not valid YAML.
    #[error("{file}:{source}")]
    Yaml {
        /// The lock file.
        file: String,
        /// Why.
        source: berth_yaml::Error,
    },
    /// Valid YAML, but not a lock file this berth understands.
    #[error("{file}:{pos}: {problem}; regenerate the file with `berth pin`")]
    Invalid {
        /// The lock file.
        file: String,
        /// Where.
        pos: Pos,
        /// What is wrong.
        problem: String,
    },
}

impl Lock {
    /// Parses lock file text.
    pub fn parse(file: &str, src: &str) -> Result<Lock, LockError> {
        let invalid = |pos: Pos, problem: String| LockError::Invalid {
            file: file.to_string(),
            pos,
            problem,
        };
        let docs =
            berth_yaml::load_all(src, Limits::default()).map_err(|source| LockError::Yaml {
                file: file.to_string(),
                source,
            })?;
        if let Some(extra) = docs.iter().skip(1).find(|d| !d.is_null()) {
            return Err(invalid(
                extra.pos,
                "a second YAML document; a lock is one document: run `berth pin` to rewrite it"
                    .into(),
            ));
        }
        let Some(root) = docs.first().filter(|d| !d.is_null()) else {
            return Ok(Lock::default());
        };
        let text = |node: &Node, key: &str| -> Result<String, LockError> {
            node.get(key)
                .and_then(Node::as_str)
                .map(str::to_string)
                .ok_or_else(|| invalid(node.pos, format!("missing `{key}`")))
        };
        for (key, _) in root
            .as_map()
            .ok_or_else(|| invalid(root.pos, "expected a mapping".into()))?
        {
            if !matches!(key.as_str(), Some("version" | "images" | "charts")) {
                return Err(invalid(
                    key.pos,
                    format!("unknown key `{}`", key.as_str().unwrap_or_default()),
                ));
            }
        }
        let version = text(root, "version")?;
        if version != VERSION {
            return Err(invalid(root.pos, format!("lock file version `{version}` is not supported (this berth writes version {VERSION})")));
        }
        // L26 (#46): a mapping where the list belongs was read as no entries at all.
        for key in ["images", "charts"] {
            if let Some(node) = root
                .get(key)
                .filter(|n| n.as_seq().is_none() && !n.is_null())
            {
                return Err(invalid(node.pos, format!("`{key}` must be a list of entries (found {}); run `berth pin` to rewrite the lock", if node.as_map().is_some() { "a mapping" } else { "a scalar" })));
            }
        }
        let mut entries = Vec::new();
        let mut seen: Vec<(String, Pos)> = Vec::new();
        for item in root
            .get("images")
            .and_then(Node::as_seq)
            .unwrap_or_default()
        {
            let entry = parse_entry(item, &invalid)?;
            let (component, variant) = (&entry.component, &entry.variant);
            let key = match &variant {
                Some(variant) => format!("{component}` variant `{variant}"),
                None => component.clone(),
            };
            if let Some((_, first)) = seen.iter().find(|(c, _)| *c == key) {
                return Err(invalid(
                    item.pos,
                    format!("component `{key}` is pinned twice (first at line {}); which digest is meant is ambiguous: keep one entry, or run `berth pin` to rewrite the lock", first.line),
                ));
            }
            seen.push((key, item.pos));
            entries.push(entry);
        }
        let charts = parse_charts(root, &invalid)?;
        Ok(Lock { entries, charts })
    }

    /// The pin of a remote chart at a version.
    pub fn chart(&self, chart: &str, repository: Option<&str>, version: &str) -> Option<&ChartPin> {
        self.charts.iter().find(|c| {
            c.chart == chart && c.repository.as_deref() == repository && c.version == version
        })
    }

    /// The entry pinned for exactly this repository and tag.
    pub fn find(&self, image: &Reference) -> Option<&LockEntry> {
        self.entries
            .iter()
            .find(|e| e.image.repository() == image.repository() && e.image.tag() == image.tag())
    }

    /// The entry of a component, whatever image it pinned.
    pub fn for_component(&self, component: &str) -> Option<&LockEntry> {
        self.entries.iter().find(|e| e.component == component)
    }

    /// The file's text: deterministic, entries sorted by component.
    pub fn to_yaml(&self) -> String {
        let mut entries: Vec<&LockEntry> = self.entries.iter().collect();
        entries.sort_by(|a, b| (&a.component, &a.variant).cmp(&(&b.component, &b.variant)));
        let mut out = format!("{HEADER}version: {VERSION}\nimages:");
        if entries.is_empty() {
            out.push_str(" []");
        }
        out.push('\n');
        for e in entries {
            out.push_str(&format!("- component: {}\n", e.component));
            if let Some(variant) = &e.variant {
                out.push_str(&format!("  variant: {variant}\n"));
            }
            out.push_str(&format!("  image: {}\n  digest: {}\n", e.image, e.digest));
            if let Some(platform) = &e.platform {
                out.push_str(&format!("  platform: {platform}\n"));
            }
            if let Some(v) = &e.verified {
                out.push_str("  verified:\n");
                match &v.by {
                    VerifiedBy::Key(fingerprint) => {
                        out.push_str(&format!("    key: {fingerprint}\n"))
                    }
                    VerifiedBy::Certificate { identity, issuer } => out.push_str(&format!(
                        "    identity: {}\n    issuer: {}\n",
                        quoted(identity),
                        quoted(issuer)
                    )),
                }
                out.push_str(&format!("    signature: {}\n", v.signature));
                if let Some(index) = v.log_index {
                    out.push_str(&format!("    logIndex: {index}\n"));
                }
            }
        }
        let mut charts: Vec<&ChartPin> = self.charts.iter().collect();
        charts.sort();
        if !charts.is_empty() {
            out.push_str("charts:\n");
        }
        for c in charts {
            out.push_str(&format!("- chart: {}\n", quoted(&c.chart)));
            if let Some(repository) = &c.repository {
                out.push_str(&format!("  repository: {}\n", quoted(repository)));
            }
            out.push_str(&format!(
                "  version: {}\n  digest: {}\n",
                quoted(&c.version),
                c.digest
            ));
        }
        out
    }
}

/// A scalar as YAML reads it back as the same string (a version `1.10` stays text).
fn quoted(text: &str) -> String {
    let mut out = String::new();
    berth_yaml::write_document(&mut out, &Node::string(text, Pos::default()));
    out.trim_end().to_string()
}

/// An entry of the lock: a mapping of `allowed` keys only.
/// One entry of `images:`.
fn parse_entry(
    item: &Node,
    invalid: &dyn Fn(Pos, String) -> LockError,
) -> Result<LockEntry, LockError> {
    known_keys(
        item,
        &[
            "component",
            "variant",
            "image",
            "digest",
            "platform",
            "verified",
        ],
        invalid,
    )?;
    let text = |node: &Node, key: &str| -> Result<String, LockError> {
        node.get(key)
            .and_then(Node::as_str)
            .map(str::to_string)
            .ok_or_else(|| invalid(node.pos, format!("missing `{key}`")))
    };
    let image_text = text(item, "image")?;
    let image = Reference::parse(&image_text)
        .map_err(|e| invalid(item.pos, format!("`image: {image_text}`: {e}")))?;
    let digest_text = text(item, "digest")?;
    let digest =
        Digest::parse(&digest_text).map_err(|e| invalid(item.pos, format!("`digest`: {e}")))?;
    let optional = |key: &str| item.get(key).and_then(Node::as_str).map(str::to_string);
    let verified = match item.get("verified") {
        Some(node) => Some(parse_verification(node, invalid)?),
        None => None,
    };
    Ok(LockEntry {
        component: text(item, "component")?,
        variant: optional("variant"),
        image,
        digest,
        platform: optional("platform"),
        verified,
    })
}

/// An entry's `verified:` (`key:` or `identity:` and `issuer:`, `signature:`, `logIndex:`).
fn parse_verification(
    node: &Node,
    invalid: &dyn Fn(Pos, String) -> LockError,
) -> Result<Verification, LockError> {
    known_keys(
        node,
        &["key", "identity", "issuer", "signature", "logIndex"],
        invalid,
    )?;
    let text = |key: &str| node.get(key).and_then(Node::as_str).map(str::to_string);
    let digest = |key: &str| -> Result<Digest, LockError> {
        let value = text(key).ok_or_else(|| {
            invalid(
                node.pos,
                format!("`verified` has no `{key}`; run `berth pin` to rewrite the lock"),
            )
        })?;
        Digest::parse(&value).map_err(|e| invalid(node.pos, format!("`verified.{key}`: {e}")))
    };
    let by = match (text("identity"), text("issuer")) {
        (Some(identity), Some(issuer)) => VerifiedBy::Certificate { identity, issuer },
        (None, None) => VerifiedBy::Key(digest("key")?),
        _ => return Err(invalid(node.pos, "`verified` names a certificate's `identity` and `issuer` together; run `berth pin` to rewrite the lock".into())),
    };
    let log_index = match node.get("logIndex") {
        None => None,
        Some(n) => Some(
            n.as_str()
                .and_then(|t| t.parse().ok())
                .ok_or_else(|| invalid(n.pos, "`verified.logIndex` is not a number".into()))?,
        ),
    };
    Ok(Verification {
        by,
        signature: digest("signature")?,
        log_index,
    })
}

fn known_keys(
    item: &Node,
    allowed: &[&str],
    invalid: &dyn Fn(Pos, String) -> LockError,
) -> Result<(), LockError> {
    let entries = item
        .as_map()
        .ok_or_else(|| invalid(item.pos, "an entry must be a mapping".into()))?;
    for (key, _) in entries {
        let name = key.as_str().unwrap_or_default();
        if !allowed.contains(&name) {
            return Err(invalid(key.pos, format!("unknown key `{name}`")));
        }
    }
    Ok(())
}

/// `charts:`: each entry's keys checked, a chart and version pinned once.
fn parse_charts(
    root: &Node,
    invalid: &dyn Fn(Pos, String) -> LockError,
) -> Result<Vec<ChartPin>, LockError> {
    let mut charts: Vec<ChartPin> = Vec::new();
    for item in root
        .get("charts")
        .and_then(Node::as_seq)
        .unwrap_or_default()
    {
        known_keys(item, &["chart", "repository", "version", "digest"], invalid)?;
        let text = |key: &str| item.get(key).and_then(Node::as_str).map(str::to_string);
        let required =
            |key: &str| text(key).ok_or_else(|| invalid(item.pos, format!("missing `{key}`")));
        let (chart, version, digest_text) = (
            required("chart")?,
            required("version")?,
            required("digest")?,
        );
        let digest =
            Digest::parse(&digest_text).map_err(|e| invalid(item.pos, format!("`digest`: {e}")))?;
        let pin = ChartPin {
            chart,
            repository: text("repository"),
            version,
            digest,
        };
        if charts.iter().any(|c| {
            (&c.chart, &c.repository, &c.version) == (&pin.chart, &pin.repository, &pin.version)
        }) {
            return Err(invalid(item.pos, format!("chart `{}` version `{}` is pinned twice; keep one entry, or run `berth pin` to rewrite the lock", pin.chart, pin.version)));
        }
        charts.push(pin);
    }
    Ok(charts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(component: &str, image: &str, hex: char) -> LockEntry {
        LockEntry {
            component: component.into(),
            variant: None,
            image: Reference::parse(image).unwrap(),
            digest: Digest::parse(&format!("sha256:{}", hex.to_string().repeat(64))).unwrap(),
            platform: None,
            verified: None,
        }
    }

    #[test]
    fn roundtrips_and_is_sorted() {
        let lock = Lock {
            entries: vec![
                entry("sidecar", "ghcr.io/a/s:v1", 'b'),
                entry("epp", "ghcr.io/a/e:dev", 'a'),
            ],
            charts: vec![],
        };
        let text = lock.to_yaml();
        assert!(text.starts_with("# berth.lock"));
        assert!(text.find("component: epp").unwrap() < text.find("component: sidecar").unwrap());
        let back = Lock::parse("berth.lock", &text).unwrap();
        assert_eq!(back.entries.len(), 2);
        assert_eq!(back.to_yaml(), text);
        assert!(back
            .find(&Reference::parse("ghcr.io/a/e:dev").unwrap())
            .is_some());
        assert!(back
            .find(&Reference::parse("ghcr.io/a/e:other").unwrap())
            .is_none());
    }

    #[test]
    fn charts_roundtrip_sorted_and_typed_as_text() {
        let pin = |chart: &str, repository: Option<&str>, version: &str, hex: char| ChartPin {
            chart: chart.into(),
            repository: repository.map(str::to_string),
            version: version.into(),
            digest: Digest::parse(&format!("sha256:{}", hex.to_string().repeat(64))).unwrap(),
        };
        let lock = Lock {
            entries: vec![entry("epp", "ghcr.io/a/e:dev", 'a')],
            charts: vec![
                pin("router", Some("https://charts.example/"), "1.10", 'c'),
                pin("oci://ghcr.io/a/charts/router", None, "0.10.0", 'b'),
            ],
        };
        let text = lock.to_yaml();
        assert!(
            text.ends_with(&format!(
                "charts:\n- chart: oci://ghcr.io/a/charts/router\n  version: \"0.10.0\"\n  digest: sha256:{b}\n- chart: router\n  repository: https://charts.example/\n  version: \"1.10\"\n  digest: sha256:{c}\n",
                b = "b".repeat(64),
                c = "c".repeat(64)
            )),
            "{text}"
        );
        let back = Lock::parse("berth.lock", &text).unwrap();
        assert_eq!(back.to_yaml(), text);
        assert!(back
            .chart("router", Some("https://charts.example/"), "1.10")
            .is_some());
        assert!(back.chart("router", None, "1.10").is_none());
        // A lock without remote charts has no `charts:` key: old locks keep their bytes.
        let images_only = Lock {
            charts: vec![],
            ..lock
        };
        assert!(!images_only.to_yaml().contains("charts"));
    }

    #[test]
    fn bad_files_say_where() {
        let cases = [
            (
                "version: 2\nimages: []\n",
                "berth.lock:1:1: lock file version `2` is not supported",
            ),
            (
                "version: 1\nimagez: []\n",
                "berth.lock:2:1: unknown key `imagez`",
            ),
            (
                "version: 1\nimages:\n- {component: a, image: Bad, digest: sha256:x}\n",
                "berth.lock:3:3: `image: Bad`",
            ),
            (
                "version: 1\nimages:\n- {component: a, image: b}\n",
                "berth.lock:3:3: missing `digest`",
            ),
            ("version: [\n", "berth.lock:"),
            (
                "version: 1\nimages:\n- {component: a, image: b:v1, digest: 'sha256:1111111111111111111111111111111111111111111111111111111111111111'}\n- {component: a, image: b:v1, digest: 'sha256:2222222222222222222222222222222222222222222222222222222222222222'}\n",
                "berth.lock:4:3: component `a` is pinned twice (first at line 3)",
            ),
            (
                "version: 1\nimages: []\ncharts:\n- {chart: oci://h/c, version: 1.0.0}\n",
                "berth.lock:4:3: missing `digest`",
            ),
            (
                "version: 1\nimages: []\ncharts:\n- {chart: oci://h/c, version: 1.0.0, digest: sha256:x, tag: v}\n",
                "berth.lock:4:56: unknown key `tag`",
            ),
            (
                "version: 1\nimages: []\n---\nversion: 1\n",
                "berth.lock:4:1: a second YAML document",
            ),
        ];
        for (src, want) in cases {
            let err = Lock::parse("berth.lock", src).unwrap_err().to_string();
            assert!(err.starts_with(want), "\n got: {err}\nwant: {want}");
        }
    }

    #[test]
    fn a_verification_round_trips_and_a_half_one_is_refused() {
        let mut lock = Lock {
            entries: vec![
                entry("epp", "ghcr.io/a/epp:v1", 'a'),
                entry("sim", "ghcr.io/a/sim:v1", 'b'),
            ],
            charts: Vec::new(),
        };
        let digest =
            |c: char| Digest::parse(&format!("sha256:{}", c.to_string().repeat(64))).unwrap();
        lock.entries[0].verified = Some(Verification {
            by: VerifiedBy::Key(digest('c')),
            signature: digest('d'),
            log_index: None,
        });
        lock.entries[1].verified = Some(Verification {
            by: VerifiedBy::Certificate {
                identity: "https://github.com/x/y/.github/workflows/release.yml@refs/tags/v1"
                    .into(),
                issuer: "https://token.actions.githubusercontent.com".into(),
            },
            signature: digest('e'),
            log_index: Some(42),
        });
        let text = lock.to_yaml();
        assert!(text.contains("  verified:\n    key: sha256:cccc"), "{text}");
        assert_eq!(Lock::parse("berth.lock", &text).unwrap(), lock, "{text}");
        let half = text.replace("    issuer: ", "    issuerx: ");
        assert!(Lock::parse("berth.lock", &half).is_err());
        let no_signature = text.replacen("    signature: sha256:dddd", "    other: sha256:dddd", 1);
        let error = Lock::parse("berth.lock", &no_signature)
            .unwrap_err()
            .to_string();
        assert!(error.contains("unknown key `other`"), "{error}");
    }
}
