//! Warnings as values: each has a stable [`Code`] (shown at the end of its
//! line, `[drift]`) and the place it is about, so that berth.yaml's `accept:`
//! can acknowledge one warning at one place, and an acknowledgement that no
//! longer matches anything is itself a warning. Every command prints warnings
//! through [`accept`], so an acknowledged warning is silent everywhere and
//! `validate --strict` does not count it.

use std::fmt;

use crate::place::Place;

/// What a warning is about. The text of each code (`as_str`) is a contract:
/// users write it in berth.yaml's `accept:`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Code {
    /// A manifest's image differs from berth.yaml's default for its component.
    Drift,
    /// A component's image is written where berth does not rewrite it.
    Copy,
    /// An image field berth cannot parse or fill.
    UnparsedImage,
    /// A pod asks a config for a key it does not have.
    MissingKey,
    /// An `imagePaths`/`configPaths` entry reaches nothing.
    UnusedPath,
    /// An override (variable, flag, lock) changes nothing.
    UnreachedOverride,
    /// A set variable that looks like a misspelling of one berth reads.
    MisspeltVariable,
    /// A Makefile default disagrees with berth.yaml's.
    MakefileDefault,
    /// A Helm values file or `set:` gives an image berth sets otherwise.
    ValuesOverride,
    /// Two components claim one repository.
    SharedRepository,
    /// A deployed component matches no image in any render.
    UnmatchedComponent,
    /// A config or CA bundle nothing refers to.
    UnusedConfig,
    /// `deployed: false` on a component whose image the manifests run.
    WronglyUndeployed,
    /// A certificate of a CA bundle expires soon, has expired or is not a CA.
    Certificate,
    /// A placeholder berth does not fill, applied as written.
    UnfilledPlaceholder,
    /// An `accept:` entry that matched no warning.
    StaleAccept,
    /// A mirrored image without a digest, reached by tag.
    TagMirror,
    /// An operator's related images disagree with berth's answer.
    RelatedImage,
    /// A container already sets a CA bundle's variable otherwise.
    TrustVariable,
    /// A bundle without public roots replaces a client's default store.
    PublicRoots,
    /// A CA bundle's cluster source that this command could not read.
    ClusterSource,
    /// A `set:` key with dots, which a values layer reads as one key, not a path.
    DottedKey,
    /// A chart's output writes one mapping key twice; the last value is kept.
    DuplicateKey,
    /// A container runs a family member without requesting its extended resource.
    VariantResource,
    /// A variant keeps a tag of its own that is not the family's.
    VariantLag,
    /// berth.lock pins a tag berth.yaml no longer names.
    LockStale,
}

impl Code {
    /// Every code, in the order the docs list them.
    pub const ALL: &'static [Code] = &[
        Code::Drift,
        Code::Copy,
        Code::UnparsedImage,
        Code::MissingKey,
        Code::UnusedPath,
        Code::UnreachedOverride,
        Code::MisspeltVariable,
        Code::MakefileDefault,
        Code::ValuesOverride,
        Code::SharedRepository,
        Code::UnmatchedComponent,
        Code::UnusedConfig,
        Code::WronglyUndeployed,
        Code::Certificate,
        Code::UnfilledPlaceholder,
        Code::StaleAccept,
        Code::TagMirror,
        Code::RelatedImage,
        Code::TrustVariable,
        Code::PublicRoots,
        Code::ClusterSource,
        Code::DottedKey,
        Code::DuplicateKey,
        Code::VariantResource,
        Code::VariantLag,
        Code::LockStale,
    ];

    /// The code as written in a warning and in `accept:`.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Drift => "drift",
            Code::Copy => "copy",
            Code::UnparsedImage => "unparsed-image",
            Code::MissingKey => "missing-key",
            Code::UnusedPath => "unused-path",
            Code::UnreachedOverride => "unreached-override",
            Code::MisspeltVariable => "misspelt-variable",
            Code::MakefileDefault => "makefile-default",
            Code::ValuesOverride => "values-override",
            Code::SharedRepository => "shared-repository",
            Code::UnmatchedComponent => "unmatched-component",
            Code::UnusedConfig => "unused-config",
            Code::WronglyUndeployed => "wrongly-undeployed",
            Code::Certificate => "certificate",
            Code::UnfilledPlaceholder => "unfilled-placeholder",
            Code::StaleAccept => "stale-accept",
            Code::TagMirror => "tag-mirror",
            Code::RelatedImage => "related-image",
            Code::TrustVariable => "trust-variable",
            Code::PublicRoots => "public-roots",
            Code::ClusterSource => "cluster-source",
            Code::DottedKey => "dotted-key",
            Code::DuplicateKey => "duplicate-key",
            Code::VariantResource => "variant-resource",
            Code::VariantLag => "variant-lag",
            Code::LockStale => "lock-stale",
        }
    }

    /// The code written as `text`, if it is one.
    pub fn parse(text: &str) -> Option<Code> {
        Code::ALL.iter().copied().find(|c| c.as_str() == text)
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One warning: its code, the place it is about and its line of text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// What it is about.
    pub code: Code,
    /// Where: what `accept:`'s `at` is matched against ([`Place::is_named_by`]).
    pub at: Place,
    /// The whole line, the place included, without the code.
    pub text: String,
}

impl Warning {
    /// A warning whose line is `AT: MESSAGE`.
    pub fn at(code: Code, at: Place, message: impl fmt::Display) -> Warning {
        let text = format!("{at}: {message}");
        Warning { code, at, text }
    }

    /// A warning about `subject` (a variable, a flag) whose line says so itself.
    pub fn about(code: Code, subject: impl Into<String>, text: impl Into<String>) -> Warning {
        Warning {
            code,
            at: Place::name(subject),
            text: text.into(),
        }
    }

    /// The same warning with `prefix` before its line (`profile `x`: `).
    pub fn prefixed(mut self, prefix: &str) -> Warning {
        if !prefix.is_empty() {
            self.text.insert_str(0, prefix);
        }
        self
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} [{}]", self.text, self.code)
    }
}

/// One entry of berth.yaml's `accept:`: a warning acknowledged at one place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accept {
    /// The warning's code.
    pub code: Code,
    /// The place: a file, a directory, an object (`Kind/name`) or a variable.
    pub at: String,
    /// Why it is right as it is (required: the next reader needs it).
    pub because: String,
    /// Where the entry is in berth.yaml, for the stale warning.
    pub pos: Place,
}

impl Accept {
    /// Whether this entry acknowledges `warning`.
    pub fn matches(&self, warning: &Warning) -> bool {
        self.code == warning.code && warning.at.is_named_by(&self.at)
    }
}

/// What [`accept`] kept: the warnings to show, how many were acknowledged,
/// and which entries matched (by index into the entries).
#[derive(Debug, Default)]
pub struct Filtered {
    /// The warnings no entry acknowledges.
    pub shown: Vec<Warning>,
    /// How many warnings entries acknowledged.
    pub accepted: usize,
    /// For each entry, whether it matched a warning.
    pub used: Vec<bool>,
}

/// Splits `warnings` into those to show and those `entries` acknowledge.
pub fn accept(entries: &[Accept], warnings: Vec<Warning>) -> Filtered {
    let mut out = Filtered {
        used: vec![false; entries.len()],
        ..Filtered::default()
    };
    for warning in warnings {
        let mut matched = false;
        for (entry, used) in entries.iter().zip(out.used.iter_mut()) {
            if entry.matches(&warning) {
                *used = true;
                matched = true;
            }
        }
        if matched {
            out.accepted += 1;
        } else {
            out.shown.push(warning);
        }
    }
    out
}

/// The entries that acknowledged nothing (`used[i]` false): each a warning, so
/// that an acknowledgement does not outlive the problem it was written for.
/// Only meaningful where every warning of the project was produced (`validate`
/// over every manifest set).
pub fn stale(entries: &[Accept], used: &[bool]) -> Vec<Warning> {
    entries
        .iter()
        .zip(used)
        .filter(|(_, used)| !**used)
        .map(|(entry, _)| {
            Warning::at(
                Code::StaleAccept,
                entry.pos.clone(),
                format_args!(
                    "`accept: {{warning: {}, at: {}}}` acknowledges a warning that no longer occurs; remove the entry",
                    entry.code, entry.at
                ),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept_entry(code: Code, at: &str) -> Accept {
        Accept {
            code,
            at: at.into(),
            because: "reviewed".into(),
            pos: Place::file("berth.yaml").at(berth_yaml::Pos { line: 3, column: 5 }),
        }
    }

    #[test]
    fn acknowledged_warnings_are_not_shown_and_unused_entries_are_stale() {
        let warnings = vec![
            Warning::at(
                Code::Copy,
                Place::file("deploy/cm.yaml").line(3).object("ConfigMap/x"),
                "holds an image",
            ),
            Warning::at(
                Code::Drift,
                Place::file("deploy/cm.yaml").line(9).object("Deployment/y"),
                "differs",
            ),
        ];
        let entries = [
            accept_entry(Code::Copy, "ConfigMap/x"),
            accept_entry(Code::Copy, "ConfigMap/gone"),
        ];
        let filtered = accept(&entries, warnings);
        assert_eq!(filtered.accepted, 1);
        assert_eq!(filtered.shown.len(), 1);
        assert_eq!(filtered.shown[0].code, Code::Drift);
        let stale = stale(&entries, &filtered.used);
        assert_eq!(stale.len(), 1);
        assert_eq!(
            stale[0].to_string(),
            "berth.yaml:3:5: `accept: {warning: copy, at: ConfigMap/gone}` acknowledges a warning that no longer occurs; remove the entry [stale-accept]"
        );
    }

    #[test]
    fn every_code_reads_back() {
        for code in Code::ALL {
            assert_eq!(Code::parse(code.as_str()), Some(*code));
        }
        assert_eq!(Code::parse("drfit"), None);
    }
}
