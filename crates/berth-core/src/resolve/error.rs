//! Why a resolution fails, each error saying where and how to fix it.

use super::*;

/// Why resolution failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ResolveError {
    /// A reference, tag or prefix from some source does not parse.
    #[error("{}: {source}", origin.assignment(value))]
    Invalid {
        /// Where the value came from.
        origin: Origin,
        /// The value as given.
        value: String,
        /// Why it is invalid.
        source: RefError,
    },
    /// A full override and a tag override for one component disagree.
    #[error("{0}")]
    Conflict(Box<TagConflict>),
    /// A full override and a repository override for one component disagree.
    #[error("{0}")]
    RepositoryConflict(Box<RepositoryConflict>),
    /// A repository override carries a tag or digest.
    #[error("{}: a repository variable gives the repository only (the tag comes from the default or the tag variable); drop the tag and digest", origin.assignment(value))]
    NotARepository {
        /// Where the value came from.
        origin: Origin,
        /// The value as given.
        value: String,
    },
    /// An image or tag override names a component the project does not have.
    #[error("{source_name}: no component `{name}` in {file}{}", hint(suggestion.as_deref()))]
    UnknownComponent {
        /// The override as its source names it (`--image web=…`).
        source_name: String,
        /// The name given.
        name: String,
        /// The project file.
        file: String,
        /// The closest component name.
        suggestion: Option<String>,
    },
    /// A selection names no variant of the component.
    #[error("{selection}: {problem}")]
    UnknownVariant {
        /// What selected it (`--variant modelserver=rokm`).
        selection: String,
        /// What the component has.
        problem: String,
    },
    /// `--locked`, and berth.lock has no pin for the resolved image.
    #[error(
        "component `{component}`: berth.lock has no digest for `{image}`{}; run `berth pin` to update the lock, or drop --locked",
        pinned.as_deref().map(|p| format!(" (it pins `{p}`)")).unwrap_or_default()
    )]
    NotLocked {
        /// The component.
        component: String,
        /// The resolved reference.
        image: String,
        /// What the lock pins for the component instead, if anything.
        pinned: Option<String>,
    },
    /// A profile selects a family member the overrides cannot give.
    #[error("profile `{profile}` ({at}) selects variant `{variant}`, for which {source}")]
    ProfileSelection {
        /// The profile.
        profile: String,
        /// Where its `variants:` entry is written.
        at: String,
        /// The member it selects.
        variant: String,
        /// Why the overrides cannot give it.
        source: Box<ResolveError>,
    },
    /// One source overrides a component twice.
    #[error("{source_name} is given twice for component `{name}`; keep one")]
    Repeated {
        /// The source (`--image`).
        source_name: String,
        /// The component.
        name: String,
    },
}

/// A full override and a repository override of one component that disagree.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "component `{component}`: {} and {} disagree (the full reference's repository is `{full_repository}`); unset one of them or make them agree",
    full_origin.assignment(full),
    repository_origin.assignment(repository)
)]
pub struct RepositoryConflict {
    /// The component.
    pub component: String,
    /// The full reference's source.
    pub full_origin: Origin,
    /// The full reference as given.
    pub full: String,
    /// Its repository.
    pub full_repository: String,
    /// The repository override's source.
    pub repository_origin: Origin,
    /// The repository as given.
    pub repository: String,
}

/// A full override and a tag override of one component that disagree.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "component `{component}`: {} and {} disagree (the full reference has {}); \
     unset one of them or make them agree",
    full_origin.assignment(full),
    tag_origin.assignment(tag),
    full_tag.as_deref().map(|t| format!("tag `{t}`")).unwrap_or_else(|| "no tag".into())
)]
pub struct TagConflict {
    /// The component.
    pub component: String,
    /// The full reference's source.
    pub full_origin: Origin,
    /// The full reference as given.
    pub full: String,
    /// Its tag, if any.
    pub full_tag: Option<String>,
    /// The tag override's source.
    pub tag_origin: Origin,
    /// The tag override as given.
    pub tag: String,
}
