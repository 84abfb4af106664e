use std::fmt;
use std::str::FromStr;

use crate::{
    Digest, RefError, DEFAULT_DOMAIN, LEGACY_DEFAULT_DOMAIN, MAX_PATH_LEN, MAX_TAG_LEN,
    OFFICIAL_REPO_PREFIX,
};

/// A validated tag (`[\w][\w.-]{0,127}`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tag(String);

impl Tag {
    /// Parses a tag on its own, as given by `--tag` or a tag variable.
    pub fn parse(s: &str) -> Result<Tag, RefError> {
        let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        let bytes = s.as_bytes();
        let valid = matches!(bytes.first(), Some(&b) if word(b))
            && bytes.len() <= MAX_TAG_LEN
            && bytes.iter().all(|&b| word(b) || b == b'.' || b == b'-');
        if valid {
            Ok(Tag(s.to_string()))
        } else {
            Err(RefError::InvalidTag { tag: s.to_string() })
        }
    }

    /// The tag text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A normalized repository: registry domain plus path, without tag or digest.
///
/// Two references name the same repository exactly when their `Repository`
/// values are equal, so `nginx` and `docker.io/library/nginx` match.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Repository {
    domain: String,
    path: String,
}

impl Repository {
    /// The registry host, with port if any (`docker.io`, `localhost:5000`).
    pub fn domain(&self) -> &str {
        &self.domain
    }

    /// The path within the registry (`library/nginx`, `llm-d/epp`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The last path component (`nginx` for `docker.io/library/nginx`).
    pub fn last_component(&self) -> &str {
        // `path` is validated non-empty; rsplit always yields at least one item.
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }
}

impl fmt::Display for Repository {
    // Written piece by piece, not with `write!`: a Makefile prints hundreds of
    // references per call (`berth images --output env`), and the format
    // machinery (padding checks per argument) cost more than the text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.domain)?;
        f.write_str("/")?;
        f.write_str(&self.path)
    }
}

/// A parsed, normalized image reference: `domain/path[:tag][@digest]`.
///
/// Construct it with [`Reference::parse`] (Docker-style normalization) and
/// print it with `Display` (the normalized form, never an implicit `:latest`)
/// or [`Reference::familiar`] (the short form Docker shows).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reference {
    repository: Repository,
    tag: Option<Tag>,
    digest: Option<Digest>,
}

impl Reference {
    /// True when [`Reference::familiar`] parses back to this same reference.
    pub fn familiar_roundtrips(&self) -> bool {
        Reference::parse(&self.familiar()).as_ref() == Ok(self)
    }

    /// Parses and normalizes a reference the way `docker pull` does.
    pub fn parse(s: &str) -> Result<Reference, RefError> {
        Self::parse_as(s, false)
    }

    /// Parses the part after `oci://` as OCI tools read it (Helm, Flux, ORAS):
    /// the first path component is always the registry host, so
    /// `reghost/team/shop:main` is on `reghost`, never normalized to Docker
    /// Hub, and no `library/` is added.
    pub fn parse_oci(s: &str) -> Result<Reference, RefError> {
        Self::parse_as(s, true)
    }

    fn parse_as(s: &str, oci: bool) -> Result<Reference, RefError> {
        if s.is_empty() {
            return Err(RefError::Empty);
        }
        if s.len() == 64
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(RefError::HexIdentifier);
        }
        let (name_and_tag, digest) = match s.split_once('@') {
            Some((name, digest)) => (name, Some(Digest::parse(digest)?)),
            None => (s, None),
        };
        let (domain, remainder) = if oci {
            name_and_tag.split_once('/').ok_or(RefError::Empty)?
        } else {
            split_domain(name_and_tag)
        };
        let (path, tag) = match remainder.split_once(':') {
            Some((path, tag)) => (path, Some(Tag::parse(tag)?)),
            None => (remainder, None),
        };
        validate_domain(domain)?;
        let domain = if domain == LEGACY_DEFAULT_DOMAIN {
            DEFAULT_DOMAIN
        } else {
            domain
        };
        // Checked as written: a message about `Nginx` names `Nginx`, not `library/Nginx`.
        validate_path(path)?;
        let path = if !oci && domain == DEFAULT_DOMAIN && !path.contains('/') && !path.is_empty() {
            format!("{OFFICIAL_REPO_PREFIX}{path}")
        } else {
            path.to_string()
        };
        if path.len() > MAX_PATH_LEN {
            return Err(RefError::PathTooLong { len: path.len() });
        }
        Ok(Reference {
            repository: Repository {
                domain: domain.to_string(),
                path,
            },
            tag,
            digest,
        })
    }

    /// The normalized repository (domain and path).
    pub fn repository(&self) -> &Repository {
        &self.repository
    }

    /// The registry host, with port if any.
    pub fn domain(&self) -> &str {
        &self.repository.domain
    }

    /// The repository path within the registry.
    pub fn path(&self) -> &str {
        &self.repository.path
    }

    /// The tag, if one was written (no implicit `latest`).
    pub fn tag(&self) -> Option<&Tag> {
        self.tag.as_ref()
    }

    /// The digest, if one was written.
    pub fn digest(&self) -> Option<&Digest> {
        self.digest.as_ref()
    }

    /// The same repository with `tag` and no digest: a tag override names
    /// different content, so a digest pinned for the old tag must go.
    pub fn with_tag(&self, tag: Tag) -> Reference {
        Reference {
            repository: self.repository.clone(),
            tag: Some(tag),
            digest: None,
        }
    }

    /// `repository` with this reference's tag and digest (operator-sdk's
    /// `IMAGE_TAG_BASE`: the repository moves, the tag stays).
    pub fn with_repository(&self, repository: &Repository) -> Reference {
        Reference {
            repository: repository.clone(),
            ..self.clone()
        }
    }

    /// The same reference without its digest (the tag is kept).
    pub fn without_digest(&self) -> Reference {
        Reference {
            digest: None,
            ..self.clone()
        }
    }

    /// The same reference with `digest` added (the tag is kept).
    pub fn with_digest(&self, digest: Digest) -> Reference {
        Reference {
            digest: Some(digest),
            ..self.clone()
        }
    }

    /// Replaces everything before the last path component with `prefix`:
    /// `ghcr.io/llm-d/x:t` with `quay.io/me` becomes `quay.io/me/x:t`.
    pub fn with_prefix(&self, prefix: &RegistryPrefix) -> Result<Reference, RefError> {
        // The prefix parsed as a name below it; a valid name's last component
        // is valid below any prefix, so only the length is left to check.
        let path = [prefix.path.as_str(), self.repository.last_component()].concat();
        if path.len() > MAX_PATH_LEN {
            return Err(RefError::PathTooLong { len: path.len() });
        }
        Ok(Reference {
            repository: Repository {
                domain: prefix.domain.clone(),
                path,
            },
            tag: self.tag.clone(),
            digest: self.digest.clone(),
        })
    }

    /// The short form Docker prints: `docker.io/` and `library/` removed.
    ///
    /// Like Docker's `FamiliarString`, this is for display: a Hub path whose
    /// first component looks like a host (`docker.io/example.com/app`) prints as
    /// `example.com/app`, which reads back as another registry. Use `Display`
    /// (the normalized form) wherever the text is parsed again.
    pub fn familiar(&self) -> String {
        let mut out = String::new();
        let Repository { domain, path } = &self.repository;
        if domain == DEFAULT_DOMAIN {
            match path.strip_prefix(OFFICIAL_REPO_PREFIX) {
                Some(rest) if !rest.contains('/') => out.push_str(rest),
                _ => out.push_str(path),
            }
        } else {
            out.push_str(domain);
            out.push('/');
            out.push_str(path);
        }
        self.push_tag_and_digest(&mut out);
        out
    }

    fn push_tag_and_digest(&self, out: &mut String) {
        if let Some(tag) = &self.tag {
            out.push(':');
            out.push_str(tag.as_str());
        }
        if let Some(digest) = &self.digest {
            out.push('@');
            out.push_str(&digest.to_string());
        }
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.repository, f)?;
        if let Some(tag) = &self.tag {
            f.write_str(":")?;
            f.write_str(tag.as_str())?;
        }
        if let Some(digest) = &self.digest {
            f.write_str("@")?;
            fmt::Display::fmt(digest, f)?;
        }
        Ok(())
    }
}

impl FromStr for Reference {
    type Err = RefError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Reference::parse(s)
    }
}

/// A registry prefix such as `quay.io/me` or `localhost:5000`: what replaces
/// everything before an image's last path component.
///
/// It keeps what a name below it normalizes to (its domain, and its path with
/// `library/` where Docker Hub adds it), so that moving a reference under it
/// is two copies, not a parse: a Makefile's `IMAGE_REGISTRY` moves every
/// member of every family on every `berth images` call.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RegistryPrefix {
    text: String,
    domain: String,
    /// The normalized path before the last component, with its trailing `/`
    /// (`me/`, `library/`), or empty.
    path: String,
}

impl RegistryPrefix {
    /// Parses a prefix; one trailing `/` is allowed and dropped.
    pub fn parse(s: &str) -> Result<RegistryPrefix, RefError> {
        let trimmed = s.strip_suffix('/').unwrap_or(s);
        let invalid = |reason| RefError::InvalidPrefix {
            prefix: s.to_string(),
            reason: Box::new(reason),
        };
        if trimmed.is_empty() {
            return Err(invalid(RefError::Empty));
        }
        // A prefix is valid when a name below it is: one grammar, one parser. Its
        // errors name the prefix's own path, not the probe's `/x`.
        let probe = Reference::parse(&format!("{trimmed}/x")).map_err(|e| {
            invalid(match e {
                RefError::UppercasePath { path } => RefError::UppercasePath {
                    path: path.strip_suffix("/x").unwrap_or(&path).to_string(),
                },
                RefError::InvalidPath { path } => RefError::InvalidPath {
                    path: path.strip_suffix("/x").unwrap_or(&path).to_string(),
                },
                other => other,
            })
        })?;
        if probe.tag.is_some() || probe.digest.is_some() {
            return Err(invalid(RefError::InvalidPath {
                path: trimmed.to_string(),
            }));
        }
        let Repository { domain, mut path } = probe.repository;
        path.truncate(path.len() - 1); // the probe's `x`
        Ok(RegistryPrefix {
            text: trimmed.to_string(),
            domain,
            path,
        })
    }

    /// The prefix as given, without a trailing `/`.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for RegistryPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Splits off the registry host the way Docker does: the first component is a
/// host iff it is `localhost`, contains `.` or `:`, or has an upper-case letter.
fn split_domain(name: &str) -> (&str, &str) {
    match name.split_once('/') {
        Some((first, rest))
            if first == "localhost"
                || first.contains(['.', ':'])
                || first.bytes().any(|b| b.is_ascii_uppercase()) =>
        {
            (first, rest)
        }
        _ => (DEFAULT_DOMAIN, name),
    }
}

fn validate_domain(domain: &str) -> Result<(), RefError> {
    let invalid = || RefError::InvalidDomain {
        domain: domain.to_string(),
    };
    let (host, port) = if let Some(rest) = domain.strip_prefix('[') {
        let (ipv6, after) = rest.split_once(']').ok_or_else(invalid)?;
        let hex_or_colon = |b: u8| b.is_ascii_hexdigit() || b == b':';
        if ipv6.is_empty() || !ipv6.bytes().all(hex_or_colon) {
            return Err(invalid());
        }
        match after {
            "" => (None, None),
            _ => (None, Some(after.strip_prefix(':').ok_or_else(invalid)?)),
        }
    } else {
        match domain.split_once(':') {
            Some((host, port)) => (Some(host), Some(port)),
            None => (Some(domain), None),
        }
    };
    if let Some(host) = host {
        let component_ok = |c: &str| {
            !c.is_empty()
                && !c.starts_with('-')
                && !c.ends_with('-')
                && c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        };
        if !host.split('.').all(component_ok) {
            return Err(invalid());
        }
    }
    if let Some(port) = port {
        if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid());
        }
    }
    Ok(())
}

fn validate_path(path: &str) -> Result<(), RefError> {
    if path.bytes().any(|b| b.is_ascii_uppercase()) {
        let lowered = path.to_ascii_lowercase();
        if path_grammar_ok(&lowered) {
            return Err(RefError::UppercasePath {
                path: path.to_string(),
            });
        }
    }
    if !path_grammar_ok(path) {
        return Err(RefError::InvalidPath {
            path: path.to_string(),
        });
    }
    if path.len() > MAX_PATH_LEN {
        return Err(RefError::PathTooLong { len: path.len() });
    }
    Ok(())
}

fn path_grammar_ok(path: &str) -> bool {
    path.split('/').all(component_ok)
}

/// `[a-z0-9]+ ((\.|_|__|-+) [a-z0-9]+)*`
fn component_ok(component: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = component.as_bytes();
    let mut i = 0;
    loop {
        let start = i;
        while i < bytes.len() && alnum(bytes[i]) {
            i += 1;
        }
        if i == start {
            return false; // empty run: leading, trailing or doubled separator
        }
        if i == bytes.len() {
            return true;
        }
        let sep_start = i;
        match bytes[i] {
            b'.' => i += 1,
            b'_' => {
                i += 1;
                if i < bytes.len() && bytes[i] == b'_' {
                    i += 1;
                }
            }
            b'-' => {
                while i < bytes.len() && bytes[i] == b'-' {
                    i += 1;
                }
            }
            _ => return false,
        }
        debug_assert!(i > sep_start);
    }
}
