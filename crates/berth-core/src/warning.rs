//! Warnings as values: each has a stable [`Code`] (shown at the end of its
//! line, `[drift]`) and the place it is about, so that berth.yaml's `accept:`
//! can acknowledge one warning at one place, and an acknowledgement that no
//! longer matches anything is itself a warning. Every command prints warnings
//! through [`accept`], so an acknowledged warning is silent everywhere and
//! `validate --strict` does not count it.

use std::fmt;

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

/// One warning: its code, the place it is about (`file:line:column (Kind/name)`,
/// `berth.yaml:12`, a variable's name) and its line of text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// What it is about.
    pub code: Code,
    /// Where: what `accept:`'s `at` is matched against.
    pub at: String,
    /// The whole line, the place included, without the code.
    pub text: String,
}

impl Warning {
    /// A warning whose line is `AT: MESSAGE`.
    pub fn at(code: Code, at: impl Into<String>, message: impl fmt::Display) -> Warning {
        let at = at.into();
        let text = format!("{at}: {message}");
        Warning { code, at, text }
    }

    /// A warning about `subject` (a variable, a flag) whose line says so itself.
    pub fn about(code: Code, subject: impl Into<String>, text: impl Into<String>) -> Warning {
        Warning {
            code,
            at: subject.into(),
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

    /// Whether `place` (an `accept:` entry's `at`) names this warning's place:
    /// the same text; a file it names (`deploy/x.yaml` before a line number,
    /// a kustomization's `set by FILE`, a values file's `from FILE`) or a
    /// directory above one (`charts/ms`); or the object in parentheses
    /// (`Deployment/ms-decode`).
    pub fn is_at(&self, place: &str) -> bool {
        let place = place.trim_end_matches('/');
        if place.is_empty() {
            return false;
        }
        if self.at == place {
            return true;
        }
        // A file or a directory above it is the place's text followed by where a path ends:
        // compared as text, so a path with spaces or parentheses is named as written.
        let ends_path = |rest: &str| rest.is_empty() || rest.starts_with([':', '/', ';', ')', ' ']);
        // `kustomize DIR:9:16`: the rendered kustomization's directory.
        let head = self.at.strip_prefix("kustomize ").unwrap_or(&self.at);
        if head.strip_prefix(place).is_some_and(ends_path) {
            return true;
        }
        let named = ["set by ", "from "].iter().any(|lead| {
            let wanted = format!("{lead}{place}");
            (self.at.match_indices(&wanted)).any(|(i, _)| ends_path(&self.at[i + wanted.len()..]))
        });
        if named {
            return true;
        }
        // The object follows the position: the first ` (` after a line or column number.
        let inside = (self.at.match_indices(" ("))
            .find(|(i, _)| self.at[..*i].ends_with(|c: char| c.is_ascii_digit()))
            .map_or("", |(i, _)| &self.at[i + 2..]);
        inside
            .split([';', ')'])
            .map(str::trim)
            .any(|part| part == place || generated_by(part, place))
    }
}

/// Whether the object `part` (`ConfigMap/kserve-inferenceservice-config-7k2h4g6t9m`) is what a
/// kustomize generator named in `place` (`ConfigMap/inferenceservice-config`) made: the
/// generator's name, behind a `namePrefix` and before kustomize's 10-character hash (#46
/// item 7: `accept: at:` the name the user wrote, not the one kustomize computed).
fn generated_by(part: &str, place: &str) -> bool {
    let (Some((kind, name)), Some((wanted_kind, wanted))) =
        (part.split_once('/'), place.split_once('/'))
    else {
        return false;
    };
    let Some((head, hash)) = name.rsplit_once('-') else {
        return false;
    };
    let hashed = hash.len() == 10
        && hash
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    kind == wanted_kind
        && !wanted.is_empty()
        && hashed
        && (head == wanted || head.ends_with(&format!("-{wanted}")))
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
    /// Where the entry is in berth.yaml, `file:line:column`, for the stale warning.
    pub pos: String,
}

impl Accept {
    /// Whether this entry acknowledges `warning`.
    pub fn matches(&self, warning: &Warning) -> bool {
        self.code == warning.code && warning.is_at(&self.at)
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
            pos: "berth.yaml:3:5".into(),
        }
    }

    #[test]
    fn a_place_is_the_whole_location_its_file_a_directory_above_it_or_its_object() {
        let drift = Warning::at(
            Code::Drift,
            "charts/ms/templates/decode.yaml:15:18 (Deployment/ms-decode; from values.yaml:4:14)",
            "image differs",
        );
        let variable = Warning::about(Code::UnreachedOverride, "IMAGE_REGISTRY", "x is set");
        let bumped = Warning::at(
            Code::Drift,
            "kustomize overlay:9:16 (Deployment/c; set by overlay/kustomization.yaml:3:59 `newTag: v2`)",
            "image differs",
        );
        let generated = Warning::at(
            Code::Copy,
            "kustomize config/default:40:3 (ConfigMap/kserve-inferenceservice-config-7k2h4g6t9m)",
            "data key holds an image",
        );
        let odd = Warning::at(
            Code::Drift,
            "my charts (old)/web/templates/d.yaml:3:9 (Deployment/web; from vals (prod).yaml:2:7)",
            "image differs",
        );
        let table: &[(&Warning, &str, bool)] = &[
            (&drift, "charts/ms/templates/decode.yaml", true),
            (&drift, "charts/ms", true),
            (&drift, "charts/ms/", true),
            (&drift, "charts/m", false),
            (&drift, "Deployment/ms-decode", true),
            (&drift, "Deployment/ms", false),
            (&drift, "values.yaml", true),
            (&drift, "other.yaml", false),
            (&drift, "", false),
            (&variable, "IMAGE_REGISTRY", true),
            (&variable, "IMAGE", false),
            (&bumped, "overlay", true),
            (&bumped, "overlay/kustomization.yaml", true),
            (&bumped, "Deployment/c", true),
            (&bumped, "kustomize", false),
            // A kustomize generator's ConfigMap by the name the generator gives it (#46 item 7).
            (&generated, "ConfigMap/inferenceservice-config", true),
            (
                &generated,
                "ConfigMap/kserve-inferenceservice-config-7k2h4g6t9m",
                true,
            ),
            (&generated, "ConfigMap/config", true),
            (&generated, "ConfigMap/service-config", false),
            (&generated, "ConfigMap/vice-config", false),
            (&generated, "Secret/inferenceservice-config", false),
            (&generated, "ConfigMap/", false),
            // A path with spaces and parentheses is named as written (#47 item 4).
            (&odd, "my charts (old)/web", true),
            (&odd, "my charts (old)/web/templates/d.yaml", true),
            (&odd, "my charts", true),
            (&odd, "my charts (old)/we", false),
            (&odd, "vals (prod).yaml", true),
            (&odd, "Deployment/web", true),
            (&odd, "(old)", false),
        ];
        for (warning, place, expected) in table {
            assert_eq!(warning.is_at(place), *expected, "{place} at {}", warning.at);
        }
    }

    #[test]
    fn acknowledged_warnings_are_not_shown_and_unused_entries_are_stale() {
        let warnings = vec![
            Warning::at(
                Code::Copy,
                "deploy/cm.yaml:3:1 (ConfigMap/x)",
                "holds an image",
            ),
            Warning::at(Code::Drift, "deploy/cm.yaml:9:1 (Deployment/y)", "differs"),
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
