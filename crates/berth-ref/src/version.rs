//! Tags read as versions (#50): `v1.10.0` after `v1.3.0`, an optional `v`,
//! pre-releases (`-rc1`, `-alpha.2`) before their release and only taken when
//! asked for, and every tag that is no version (`latest`, `main`, `nightly`,
//! `sha-1a2b3c`, a date) left out rather than ordered as text.

use std::cmp::Ordering;

/// A tag that reads as a version: numbers, and an optional pre-release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    /// `1.10.0` → `[1, 10, 0]`; missing trailing parts count as 0.
    numbers: Vec<u64>,
    /// `rc1`, `alpha.2` — split into parts compared as semver compares them.
    pre: Vec<Part>,
}

/// One dot-separated part of a pre-release.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Number(u64),
    Text(String),
}

/// Pre-release words berth knows; a tag whose suffix is anything else (a
/// platform, `-ubuntu2404`, `-gpu`) is another line of builds, not a pre-release.
const PRE_WORDS: &[&str] = &["alpha", "beta", "rc", "pre", "preview", "dev"];

impl Version {
    /// `tag` as a version, or `None` when it is none: one to four numbers after an
    /// optional `v`, then at most a pre-release (`-rc1`, `-rc.1`, `-beta2`).
    pub fn parse(tag: &str) -> Option<Version> {
        let text = tag.strip_prefix('v').unwrap_or(tag);
        let (core, pre) = match text.split_once('-') {
            Some((core, pre)) => (core, Some(pre)),
            None => (text, None),
        };
        let numbers: Vec<u64> = core
            .split('.')
            .map(|n| {
                (!n.is_empty() && n.len() <= 18 && n.bytes().all(|b| b.is_ascii_digit()))
                    .then(|| n.parse().ok())
                    .flatten()
            })
            .collect::<Option<_>>()?;
        // A date (`20260601`) or a commit (`1a2b3c4`) is no release number.
        if !(1..=4).contains(&numbers.len()) || (numbers.len() == 1 && core.len() > 4) {
            return None;
        }
        let pre = match pre {
            None => Vec::new(),
            Some(pre) => pre_release(pre)?,
        };
        Some(Version { numbers, pre })
    }

    /// Whether it is a pre-release (`1.0.0-rc1`).
    pub fn is_pre(&self) -> bool {
        !self.pre.is_empty()
    }

    fn number(&self, i: usize) -> u64 {
        self.numbers.get(i).copied().unwrap_or(0)
    }
}

/// `rc1`, `rc.1`, `beta2`, `alpha.2` as parts; `None` when it starts with no
/// pre-release word.
fn pre_release(text: &str) -> Option<Vec<Part>> {
    let mut parts = Vec::new();
    for piece in text.split('.') {
        let digits = piece
            .bytes()
            .position(|b| b.is_ascii_digit())
            .unwrap_or(piece.len());
        let (word, number) = piece.split_at(digits);
        if !word.is_empty() {
            if !word.bytes().all(|b| b.is_ascii_alphabetic()) {
                return None;
            }
            parts.push(Part::Text(word.to_ascii_lowercase()));
        }
        if !number.is_empty() {
            parts.push(Part::Number(number.parse().ok()?));
        }
    }
    match parts.first() {
        Some(Part::Text(word)) if PRE_WORDS.contains(&word.as_str()) => Some(parts),
        _ => None,
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        let width = self.numbers.len().max(other.numbers.len());
        for i in 0..width {
            match self.number(i).cmp(&other.number(i)) {
                Ordering::Equal => {}
                unequal => return unequal,
            }
        }
        // A release after its pre-releases; pre-releases part by part.
        match (self.pre.is_empty(), other.pre.is_empty()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => self.pre.cmp(&other.pre),
        }
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Part {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Part::Number(a), Part::Number(b)) => a.cmp(b),
            (Part::Text(a), Part::Text(b)) => a.cmp(b),
            // semver: numeric identifiers sort before alphanumeric ones.
            (Part::Number(_), Part::Text(_)) => Ordering::Less,
            (Part::Text(_), Part::Number(_)) => Ordering::Greater,
        }
    }
}

impl PartialOrd for Part {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// How a component's tags read as versions: the common scheme
/// ([`Version::parse`]), or its own (`versions: {pattern: REGEX}`, #50) for a
/// line of builds such as `v1.2.3-ubuntu2404`.
#[derive(Debug, Clone, Default)]
pub enum Scheme {
    /// `v1.2.3`, `1.2`, `1.0.0-rc1`.
    #[default]
    Standard,
    /// A regular expression the whole tag matches, one capture group per number.
    Pattern(Pattern),
}

/// `versions.pattern`: a regular expression over the whole tag whose capture
/// groups are the version's numbers, most significant first.
#[derive(Debug, Clone)]
pub struct Pattern {
    regex: regex::Regex,
    source: String,
}

/// Capture groups a pattern may have: the numbers of a version.
const MAX_GROUPS: usize = 4;

impl Pattern {
    /// `source` as a pattern: it must compile (Rust's `regex` syntax, linear
    /// time: no look-around or back-references) and have 1 to 4 capture groups.
    pub fn new(source: &str) -> Result<Pattern, String> {
        let regex = regex::RegexBuilder::new(&format!("^(?:{source})$"))
            .size_limit(1 << 20)
            .build()
            .map_err(|e| match e {
                regex::Error::Syntax(text) => text
                    .lines()
                    .last()
                    .unwrap_or("a syntax error")
                    .trim_start_matches("error: ")
                    .to_string(),
                other => other.to_string(),
            })?;
        let groups = regex.captures_len() - 1;
        if !(1..=MAX_GROUPS).contains(&groups) {
            return Err(format!(
                "it has {groups} capture group(s); write one `(\\d+)` per number of the version, 1 to {MAX_GROUPS}, e.g. `v(\\d+)\\.(\\d+)\\.(\\d+)-ubuntu2404`, and `(?:…)` for a group that is no number"
            ));
        }
        Ok(Pattern {
            regex,
            source: source.to_string(),
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Eq for Pattern {}

impl PartialEq for Scheme {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Scheme::Standard, Scheme::Standard) => true,
            (Scheme::Pattern(a), Scheme::Pattern(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Scheme {}

impl Scheme {
    /// `tag` as a version of this scheme.
    pub fn parse(&self, tag: &str) -> Option<Version> {
        match self {
            Scheme::Standard => Version::parse(tag),
            Scheme::Pattern(pattern) => {
                let captures = pattern.regex.captures(tag)?;
                let numbers = (captures.iter().skip(1))
                    .map(|group| {
                        let text = group?.as_str();
                        (!text.is_empty() && text.len() <= 18)
                            .then(|| text.parse::<u64>().ok())
                            .flatten()
                    })
                    .collect::<Option<Vec<u64>>>()?;
                Some(Version {
                    numbers,
                    pre: Vec::new(),
                })
            }
        }
    }

    /// Every version of `tags` newer than `current`, newest first, one tag per
    /// version: releases only, unless `pre` is asked or `current` is itself a
    /// pre-release. Of two spellings of one version (`1.2` and `1.2.0`, `v1.2.0`)
    /// the one written like `current` wins, then the first. When `current` is no
    /// version of the scheme, every version is newer.
    pub fn newer<'t>(&self, tags: &[&'t str], current: &str, pre: bool) -> Vec<&'t str> {
        let current_version = self.parse(current);
        let pre = pre || current_version.as_ref().is_some_and(Version::is_pre);
        let same_spelling = |tag: &str| tag.starts_with('v') == current.starts_with('v');
        let mut found: Vec<(Version, &str)> = (tags.iter())
            .filter_map(|tag| Some((self.parse(tag)?, *tag)))
            .filter(|(v, _)| (pre || !v.is_pre()) && current_version.as_ref().is_none_or(|c| v > c))
            .collect();
        // Newest first; within one version, the preferred spelling first, then list order.
        found.sort_by(|(a, a_tag), (b, b_tag)| {
            b.cmp(a)
                .then_with(|| same_spelling(b_tag).cmp(&same_spelling(a_tag)))
        });
        found.dedup_by(|later, earlier| later.0 == earlier.0);
        found.into_iter().map(|(_, tag)| tag).collect()
    }

    /// The newest of `tags` by version, whether or not it is newer than `current`
    /// (see [`Scheme::newer`] for which tags count).
    pub fn newest<'t>(&self, tags: &[&'t str], current: &str, pre: bool) -> Option<&'t str> {
        let current_version = self.parse(current);
        let pre = pre || current_version.as_ref().is_some_and(Version::is_pre);
        let same_spelling = |tag: &str| tag.starts_with('v') == current.starts_with('v');
        let mut best: Option<(Version, &str)> = None;
        for tag in tags {
            let Some(version) = self.parse(tag).filter(|v| pre || !v.is_pre()) else {
                continue;
            };
            let better = match &best {
                None => true,
                Some((held, held_tag)) => match version.cmp(held) {
                    Ordering::Greater => true,
                    Ordering::Equal => same_spelling(tag) && !same_spelling(held_tag),
                    Ordering::Less => false,
                },
            };
            if better {
                best = Some((version, tag));
            }
        }
        best.map(|(_, tag)| tag)
    }
}

/// The newest of `tags` by the common scheme ([`Scheme::newest`]).
pub fn newest<'t>(tags: &[&'t str], current: &str, pre: bool) -> Option<&'t str> {
    Scheme::Standard.newest(tags, current, pre)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_order_as_versions_and_non_versions_are_none() {
        let ordered = [
            "0.9",
            "v1.0.0-alpha",
            "v1.0.0-alpha.2",
            "v1.0.0-beta",
            "1.0.0-rc1",
            "1.0.0-rc.2",
            "v1.0.0",
            "v1.2",
            "v1.3.0",
            "v1.10.0",
            "2.0.0.1",
            "10.0.0",
        ];
        for pair in ordered.windows(2) {
            let (a, b) = (
                Version::parse(pair[0]).unwrap(),
                Version::parse(pair[1]).unwrap(),
            );
            assert!(a < b, "{} < {}", pair[0], pair[1]);
        }
        assert_eq!(
            Version::parse("v1.2"),
            Version::parse("1.2.0").map(|mut v| {
                v.numbers.truncate(2);
                v
            })
        );
        assert_eq!(
            Version::parse("1.2")
                .unwrap()
                .cmp(&Version::parse("1.2.0").unwrap()),
            Ordering::Equal
        );
        for none in [
            "latest",
            "main",
            "nightly",
            "dev",
            "sha-1a2b3c4",
            "1a2b3c4",
            "20260601",
            "v1.2.x",
            "1.2.3-ubuntu2404",
            "1.2.3-gpu",
            "",
            "v",
            "1..2",
            "1.2.3.4.5",
            "1.2.3-rc1-extra!",
        ] {
            assert_eq!(Version::parse(none), None, "{none}");
        }
        assert!(Version::parse("1.0.0-rc1").unwrap().is_pre());
        assert!(!Version::parse("1.0.0").unwrap().is_pre());
    }

    #[test]
    fn the_newest_is_a_release_unless_asked_or_already_on_a_pre_release() {
        let tags = [
            "latest",
            "v1.3.0",
            "v1.10.0",
            "v1.9.2",
            "v1.11.0-rc1",
            "main",
            "sha-abc1234",
        ];
        assert_eq!(newest(&tags, "v1.3.0", false), Some("v1.10.0"));
        assert_eq!(newest(&tags, "v1.3.0", true), Some("v1.11.0-rc1"));
        assert_eq!(newest(&tags, "v1.10.0-rc2", false), Some("v1.11.0-rc1"));
        assert_eq!(newest(&["latest", "main"], "v1.0.0", false), None);
        // Two spellings of one version: the one written like the current tag.
        assert_eq!(
            newest(&["1.4.0", "v1.4.0"], "v1.3.0", false),
            Some("v1.4.0")
        );
        assert_eq!(newest(&["v1.4.0", "1.4.0"], "1.3.0", false), Some("1.4.0"));
        // Linear in the tags: 100,000 of them at once.
        let many: Vec<String> = (0..100_000)
            .map(|i| format!("v{}.{}.{}", i / 1000, i % 1000 / 10, i % 10))
            .collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        let started = std::time::Instant::now();
        assert_eq!(newest(&refs, "v0.0.1", false), Some("v99.99.9"));
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn a_pattern_reads_a_line_of_builds_by_its_groups() {
        let scheme = Scheme::Pattern(Pattern::new(r"v(\d+)\.(\d+)\.(\d+)-ubuntu2404").unwrap());
        let tags = [
            "v0.9.0-ubuntu2404",
            "v0.10.0-ubuntu2404",
            "v0.11.0",
            "v0.10.1-ubuntu2204",
            "latest",
            "xv0.12.0-ubuntu2404",
        ];
        assert_eq!(
            scheme.newest(&tags, "v0.9.0-ubuntu2404", false),
            Some("v0.10.0-ubuntu2404")
        );
        assert_eq!(
            scheme.newer(&tags, "v0.9.0-ubuntu2404", false),
            ["v0.10.0-ubuntu2404"]
        );
        assert_eq!(scheme.parse("v0.11.0"), None, "anchored at both ends");
        for (bad, says) in [
            ("v(", "unclosed group"),
            ("latest", "0 capture group"),
            ("(a)(b)(c)(d)(e)", "5 capture group"),
        ] {
            let error = Pattern::new(bad).unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }

    #[test]
    fn newer_lists_each_version_once_newest_first() {
        let tags = [
            "v1.2.0",
            "v1.10.0",
            "1.10.0",
            "v1.3.0",
            "v2.0.0-rc1",
            "latest",
            "sha-3f2a9c1",
            "v1.1.0",
        ];
        let scheme = Scheme::Standard;
        assert_eq!(scheme.newer(&tags, "v1.2.0", false), ["v1.10.0", "v1.3.0"]);
        assert_eq!(
            scheme.newer(&tags, "v1.2.0", true),
            ["v2.0.0-rc1", "v1.10.0", "v1.3.0"]
        );
        assert_eq!(scheme.newer(&tags, "1.2.0", false), ["1.10.0", "v1.3.0"]);
        assert_eq!(
            scheme.newer(&tags, "latest", false).len(),
            4,
            "every release is newer than no version"
        );
    }
}
