//! A component's image family as the render pass meets it: which member a
//! field runs, a field that contradicts the selection, and a container that does
//! not request the extended resource the member it runs needs.

use berth_ref::{Reference, Repository};
use berth_yaml::{Node, Pos};

use crate::resolve::ResolvedImage;

/// What the pass knows of a component's family.
pub(super) struct Family {
    /// The members other than the default: a field running one is that member.
    pub(super) members: Vec<Member>,
    /// The member selected (`default` unless something chose another).
    pub(super) selected: String,
    /// The selected member and what selected it, when something did (a field
    /// running another member then contradicts it).
    pub(super) explicit: Option<(String, String)>,
    /// Each member's `resource:`, the default's first.
    resources: Vec<(String, Option<String>)>,
}

impl Family {
    /// The family of a resolved component: `None` without variants or a `resource:`.
    pub(super) fn of(resolved: &ResolvedImage<'_>) -> Option<Family> {
        let component = resolved.component;
        if component.variants.is_empty() && component.resource.is_none() {
            return None;
        }
        let default = (
            crate::project::DEFAULT_VARIANT.to_string(),
            component.resource.clone(),
        );
        let others = (component.variants.iter()).map(|v| (v.name.clone(), v.resource.clone()));
        Some(Family {
            members: members(resolved),
            selected: resolved
                .variant
                .as_ref()
                .map_or(crate::project::DEFAULT_VARIANT.to_string(), |s| {
                    s.name.clone()
                }),
            explicit: (resolved.variant.as_ref())
                .filter(|s| s.by.is_explicit())
                .map(|s| (s.name.clone(), s.to_string())),
            resources: std::iter::once(default).chain(others).collect(),
        })
    }

    /// What `container`, running `member`, lacks: the member's resource it does not
    /// request, or another member's it requests instead.
    pub(super) fn lacking(&self, container: &Node, member: &str) -> Option<Resources> {
        let needs = (self.resources.iter())
            .find(|(name, _)| name == member)
            .and_then(|(_, r)| r.clone());
        let requested = requested(container);
        let others: Vec<String> = (self.resources.iter())
            .filter(|(name, _)| name != member)
            .filter_map(|(_, r)| r.clone())
            .filter(|r| Some(r) != needs.as_ref() && requested.contains(r))
            .collect();
        let missing = needs.as_ref().is_some_and(|r| !requested.contains(r));
        if !missing && others.is_empty() {
            return None;
        }
        Some(Resources {
            pos: container.get("image").map_or(container.pos, |n| n.pos),
            container: (container.get("name").and_then(Node::as_str))
                .unwrap_or("(no name)")
                .to_string(),
            member: member.to_string(),
            needs: needs.filter(|_| missing),
            others,
        })
    }
}

/// The extended resources a container requests or limits.
fn requested(container: &Node) -> Vec<String> {
    let mut out = Vec::new();
    for part in ["limits", "requests"] {
        let entries = (container.get("resources").and_then(|r| r.get(part)))
            .and_then(Node::as_map)
            .unwrap_or_default();
        out.extend(
            entries
                .iter()
                .filter_map(|(k, _)| k.as_str().map(str::to_string)),
        );
    }
    out
}

/// A container that does not request what the member it runs needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resources {
    /// Where its image is.
    pub pos: Pos,
    /// The container's name.
    pub container: String,
    /// The member it runs.
    pub member: String,
    /// The member's resource, when the container requests none of it.
    pub needs: Option<String>,
    /// Other members' resources it requests.
    pub others: Vec<String>,
}

/// A member of a component's image family, as fields are matched against it.
/// What a `[variant-resource]` warning says of `lacking`.
pub(super) fn resources_text(component: &str, lacking: &Resources) -> String {
    let runs = format!(
        "container `{}` runs variant `{}` of component `{component}`",
        lacking.container, lacking.member
    );
    let others = lacking
        .others
        .iter()
        .map(|r| format!("`{r}`"))
        .collect::<Vec<_>>();
    let others = others.join(", ");
    match &lacking.needs {
        Some(needs) if others.is_empty() => format!("{runs}, which needs `{needs}`, but requests none of it: add `{needs}` to its `resources.limits`, or run the variant this node type serves"),
        Some(needs) => format!("{runs}, which needs `{needs}`, but requests {others} (another variant's): request `{needs}`, or select the variant that runs on {others}"),
        None => format!("{runs}, but requests {others}, another variant's resource: select that variant, or drop the request"),
    }
}

pub(super) struct Member {
    /// Its name.
    pub(super) name: String,
    /// Its repository as berth.yaml writes it.
    repository: Repository,
    /// `tagSuffix:`: a field of its repository is this member only with a tag ending so.
    suffix: Option<String>,
    /// Whether the default image has the same repository (then only the suffix tells).
    shares_repository: bool,
    /// What a field running it becomes when nothing selected another member.
    pub(super) reference: Reference,
}

impl Member {
    pub(super) fn runs(&self, own: &Reference) -> bool {
        own.repository() == &self.repository
            && match &self.suffix {
                Some(suffix) => own
                    .tag()
                    .is_some_and(|t| t.as_str().ends_with(suffix.as_str())),
                None => !self.shares_repository,
            }
    }
}

/// A field that runs one member of a family while a flag, variable or profile
/// selected another: neither silently wins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariantConflict {
    /// Where the field is.
    pub pos: Pos,
    /// The field's value.
    pub found: String,
    /// The component.
    pub component: String,
    /// The member the field runs.
    pub runs: String,
    /// The member selected.
    pub selected: String,
    /// What selected it.
    pub by: String,
}

/// A [`VariantConflict`] at its place in the manifests.
#[derive(Debug, Clone, PartialEq)]
pub struct Contradiction {
    /// Where the field is (file:line:column, the object).
    pub at: crate::place::Place,
    /// What disagrees.
    pub conflict: VariantConflict,
}

impl std::fmt::Display for Contradiction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = &self.conflict;
        write!(
            f,
            "{}: `{}` runs variant `{}` of component `{}`, but {} selects `{}`; select `{}` (or drop the selection), or run the default image there so the selection applies",
            self.at,
            berth_io::shown(&c.found),
            c.runs,
            c.component,
            c.by,
            c.selected,
            c.runs
        )
    }
}

/// A family's members but the default, suffixed ones first (they are the more
/// specific match where they share a repository).
pub(super) fn members(resolved: &ResolvedImage<'_>) -> Vec<Member> {
    let component = resolved.component;
    let mut out: Vec<Member> = (component.variants.iter())
        .filter_map(|v| {
            Some(Member {
                name: v.name.clone(),
                repository: v.image.repository().clone(),
                suffix: v.tag_suffix.clone(),
                shares_repository: v.image.repository() == component.image.repository(),
                reference: resolved.member(&v.name)?.reference.clone(),
            })
        })
        .collect();
    out.sort_by_key(|m| m.suffix.is_none());
    out
}
