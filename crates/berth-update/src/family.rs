//! One component's image family as `outdated` reads it: each member's current
//! tag, the newest release its repository has, and the newest version every
//! member that follows the family tag has — the one `update` may move to.

use std::collections::{BTreeMap, HashSet};

use berth_core::project::DEFAULT_VARIANT;
use berth_core::resolve::ResolvedImage;
use berth_ref::version::Scheme;
use berth_ref::Reference;

/// Each repository's tags (`ghcr.io/llm-d/epp` → its tags), or why they could
/// not be read.
pub type Tags = BTreeMap<String, Result<Vec<String>, String>>;

/// One image of a component: the component's own, or a member of its family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member<'r> {
    /// `None` for the component's own image (the family's `default`).
    pub variant: Option<&'r str>,
    /// The image as resolved.
    pub reference: &'r Reference,
    /// The variant's `tagSuffix:` (its tag is the family tag plus it).
    pub suffix: Option<&'r str>,
    /// Whether it keeps a tag of its own (lags on purpose; never moved with the family).
    pub own_tag: bool,
}

impl Member<'_> {
    /// Whether it follows the family's tag: its tag is the default's, plus its suffix.
    pub fn follows(&self) -> bool {
        self.variant.is_some() && !self.own_tag
    }

    /// Its repository, as [`Tags`] keys it.
    pub fn repository(&self) -> String {
        self.reference.repository().to_string()
    }

    /// Its tag for family version `version`.
    pub fn tag_for(&self, version: &str) -> String {
        format!("{version}{}", self.suffix.unwrap_or_default())
    }
}

/// Every image of `image`'s component, its own first: the family's members as
/// resolved (every one moved by the same overrides), or the one image.
pub fn members<'r>(image: &'r ResolvedImage<'_>) -> Vec<Member<'r>> {
    if image.variants.is_empty() {
        return vec![Member {
            variant: None,
            reference: &image.reference,
            suffix: None,
            own_tag: false,
        }];
    }
    (image.variants.iter())
        .map(|resolved| {
            let declared = image.component.variant(&resolved.name);
            Member {
                variant: (resolved.name != DEFAULT_VARIANT).then_some(resolved.name.as_str()),
                reference: &resolved.reference,
                suffix: declared.and_then(|v| v.tag_suffix.as_deref()),
                own_tag: declared.is_some_and(|v| v.own_tag()),
            }
        })
        .collect()
}

/// What `outdated` says of one image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// On the newest release.
    Current,
    /// A newer release exists; `to` is what `update` moves it to (the newest
    /// every member following the family has), `None` when no newer one does.
    Outdated { to: Option<String> },
    /// A member following the family tag whose repository lacks the family's
    /// newest release (`newest` of its row).
    Lacks,
    /// Its tag is no version of the component's scheme (`latest`, `main`): nothing to order.
    Unversioned,
    /// Its repository's tags could not be read; why.
    Unreadable(String),
}

/// One line of `berth outdated`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The component.
    pub component: String,
    /// The family member (`None`: the component's own image).
    pub variant: Option<String>,
    /// Its repository.
    pub repository: String,
    /// The tag it is on (`""` when it has none).
    pub current: String,
    /// The newest release: for a member following the family, the family's
    /// newest with its suffix.
    pub newest: Option<String>,
    /// What that means.
    pub state: State,
    /// Whether it keeps a tag of its own (moved by no family update).
    pub own_tag: bool,
}

/// `outdated`'s rows for one component: its own image, then each member.
pub fn rows(image: &ResolvedImage<'_>, tags: &Tags, pre: bool) -> Vec<Row> {
    let scheme = &image.component.versions;
    let members = members(image);
    let family_current = members[0].reference.tag().map(|t| t.to_string());
    let family_newest = newest_of(&members[0], tags, scheme, pre);
    let target = match &family_newest {
        Ok(Some(_)) => family_target(&members, tags, scheme, pre, None)
            .ok()
            .flatten(),
        _ => None,
    };
    (members.iter())
        .map(|member| {
            let current = member
                .reference
                .tag()
                .map(|t| t.to_string())
                .unwrap_or_default();
            let row = |newest: Option<String>, state: State| Row {
                component: image.component.name.clone(),
                variant: member.variant.map(str::to_string),
                repository: member.repository(),
                current: current.clone(),
                newest,
                state,
                own_tag: member.own_tag,
            };
            if member.follows() {
                let newest = family_newest.clone().ok().flatten();
                let Some(newest) = newest.filter(|_| family_current.is_some()) else {
                    return row(None, State::Unversioned);
                };
                let expected = member.tag_for(&newest);
                return match has(tags, member, &expected) {
                    Ok(true) => row(Some(expected), State::Current),
                    Ok(false) => row(Some(expected), State::Lacks),
                    Err(e) => row(None, State::Unreadable(e)),
                };
            }
            let newest = if member.variant.is_none() {
                family_newest.clone()
            } else {
                newest_of(member, tags, scheme, pre)
            };
            match newest {
                Err(e) => row(None, State::Unreadable(e)),
                Ok(None) => row(None, State::Unversioned),
                Ok(Some(newest)) if scheme.parse(&current).is_none() => {
                    row(Some(newest), State::Unversioned)
                }
                Ok(Some(newest)) if scheme.newer(&[newest.as_str()], &current, true).is_empty() => {
                    row(Some(newest), State::Current)
                }
                Ok(Some(newest)) => {
                    let to = if member.variant.is_none() {
                        target.clone()
                    } else {
                        Some(newest.clone())
                    };
                    row(Some(newest), State::Outdated { to })
                }
            }
        })
        .collect()
}

/// The newest release in `member`'s repository (`None`: no tag reads as a version).
fn newest_of(
    member: &Member<'_>,
    tags: &Tags,
    scheme: &Scheme,
    pre: bool,
) -> Result<Option<String>, String> {
    let list = listed(tags, member)?;
    let current = member
        .reference
        .tag()
        .map(|t| t.to_string())
        .unwrap_or_default();
    let refs: Vec<&str> = list.iter().map(String::as_str).collect();
    Ok(scheme.newest(&refs, &current, pre).map(str::to_string))
}

fn listed<'t>(tags: &'t Tags, member: &Member<'_>) -> Result<&'t Vec<String>, String> {
    match tags.get(&member.repository()) {
        Some(Ok(list)) => Ok(list),
        Some(Err(e)) => Err(e.clone()),
        None => Err(format!("the tags of {} were not read", member.repository())),
    }
}

fn has(tags: &Tags, member: &Member<'_>, tag: &str) -> Result<bool, String> {
    Ok(listed(tags, member)?.iter().any(|t| t == tag))
}

/// Why a family cannot move to a version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// `--to VERSION` that members following the family lack.
    #[error("{version} is not in the repository of variant(s) {}: they follow the family tag, so the family cannot move there; pick a version every variant has (`berth outdated` lists them), or give the variant its own tag in berth.yaml", .missing.join(", "))]
    Lacking {
        /// The version asked for.
        version: String,
        /// The variants without it, with the tag they would need (`xpu (v0.8.0)`).
        missing: Vec<String>,
    },
    /// `--to VERSION` that the component's own repository does not have.
    #[error("{version} is not a tag of {repository}; `berth outdated` lists what there is")]
    Absent {
        /// The version asked for.
        version: String,
        /// The component's repository.
        repository: String,
    },
    /// A repository's tags could not be read.
    #[error("{0}")]
    Unreadable(String),
}

/// The version the family moves to: `to` when given (every following member
/// must have it), else the newest release newer than the current tag that
/// every following member has (`None`: there is none).
pub fn family_target(
    members: &[Member<'_>],
    tags: &Tags,
    scheme: &Scheme,
    pre: bool,
    to: Option<&str>,
) -> Result<Option<String>, TargetError> {
    let own = &members[0];
    let followers: Vec<&Member<'_>> = members.iter().filter(|m| m.follows()).collect();
    let lacking = |version: &str| -> Result<Vec<String>, TargetError> {
        let mut missing = Vec::new();
        for member in &followers {
            let tag = member.tag_for(version);
            if !has(tags, member, &tag).map_err(TargetError::Unreadable)? {
                missing.push(format!("`{}` ({tag})", member.variant.unwrap_or_default()));
            }
        }
        Ok(missing)
    };
    if let Some(version) = to {
        if !has(tags, own, version).map_err(TargetError::Unreadable)? {
            return Err(TargetError::Absent {
                version: version.to_string(),
                repository: own.repository(),
            });
        }
        let missing = lacking(version)?;
        if !missing.is_empty() {
            return Err(TargetError::Lacking {
                version: version.to_string(),
                missing,
            });
        }
        return Ok(Some(version.to_string()));
    }
    let list = listed(tags, own).map_err(TargetError::Unreadable)?;
    let refs: Vec<&str> = list.iter().map(String::as_str).collect();
    let current = own
        .reference
        .tag()
        .map(|t| t.to_string())
        .unwrap_or_default();
    if scheme.parse(&current).is_none() {
        return Ok(None); // `latest`, `main`: nothing is newer by version
    }
    for candidate in scheme.newer(&refs, &current, pre) {
        if lacking(candidate)?.is_empty() {
            return Ok(Some(candidate.to_string()));
        }
    }
    Ok(None)
}

/// The resolved images `outdated` and `update` judge: every component's but a
/// `sameAs` one's, which is another component's image.
pub fn judged<'r, 'p>(resolution: &'r berth_core::Resolution<'p>) -> Vec<&'r ResolvedImage<'p>> {
    (resolution.images.iter())
        .filter(|i| i.component.same_as.is_none())
        .collect()
}

/// Why the components named on a command line cannot be judged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChoiceError {
    /// A name berth.yaml does not have.
    #[error("berth.yaml has no component `{name}`; it has {}", .known.join(", "))]
    Unknown {
        /// The name given.
        name: String,
        /// The components there are.
        known: Vec<String>,
    },
    /// A `sameAs` component, which is another's image.
    #[error(
        "component `{0}` is `sameAs:` another component, whose versions are its own; name that one"
    )]
    SameAs(String),
}

/// The images of the components `names` (every one [`judged`] when none is given), in the
/// order given.
pub fn chosen<'r, 'p>(
    resolution: &'r berth_core::Resolution<'p>,
    names: &[String],
) -> Result<Vec<&'r ResolvedImage<'p>>, ChoiceError> {
    let all = judged(resolution);
    if names.is_empty() {
        return Ok(all);
    }
    let mut out = Vec::new();
    for name in names {
        match all.iter().find(|i| &i.component.name == name) {
            Some(image) => out.push(*image),
            None if resolution.images.iter().any(|i| &i.component.name == name) => {
                return Err(ChoiceError::SameAs(name.clone()))
            }
            None => {
                return Err(ChoiceError::Unknown {
                    name: name.clone(),
                    known: all.iter().map(|i| i.component.name.clone()).collect(),
                })
            }
        }
    }
    Ok(out)
}

/// The repositories whose tags `rows` needs for `images`, each once.
pub fn repositories<'r>(images: impl IntoIterator<Item = &'r ResolvedImage<'r>>) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for image in images {
        for member in members(image) {
            let repository = member.repository();
            if seen.insert(repository.clone()) {
                out.push(repository);
            }
        }
    }
    out
}
