//! `berth env` and a berth its command runs. `berth env` sets every variable
//! berth.yaml names to its answer, and lists the ones that are answers rather
//! than the user's own settings in [`HANDED`]. A berth the command runs takes a
//! listed variable that still has its value as the answer of the berth that ran
//! it, not as an override of its own:
//! - an image variable becomes the image the command's own overrides move
//!   (`berth render --tag web=v3` under `berth env` is `web`'s handed image
//!   at `v3`, not a full override that contradicts the tag);
//! - a tag, repository or registry variable is already in those images, and
//!   is not applied again;
//! - a family's `<NAME>_<VARIANT>_IMAGE` is that member's image, so a
//!   `berth render --profile` that selects another member than `berth env`'s
//!   default gets that member's image; a full override would name the selected
//!   member's, and deploy the default member's image under the other's name.
//!
//! Not listed, so read as before: a variant variable (a selection the command
//! keeps), and a family's image and repository variables when a full or
//! repository override named its selected member: the command, selecting
//! another member, applies the override to that one, as it would alone. A value
//! the command changed is its own.

use berth_ref::Reference;

use super::{Base, Origin, Origins, Resolution, ResolveError, Var, VarSource};
use crate::project::{Component, DEFAULT_VARIANT};

/// The variable in which `berth env` lists, as `NAME=VALUE` words, the
/// variables it set to its answers.
pub const HANDED: &str = "BERTH_HANDED";

/// What [`HANDED`] says, read once per resolution: the variables `berth env`
/// set to its answers, and for each family whose default member's answer no
/// such variable holds (another member was selected, or a full override named
/// the selected one), that answer (`@COMPONENT=REF`).
#[derive(Debug, Default)]
pub(super) struct Handed {
    variables: Vec<(String, String)>,
    defaults: Vec<(String, String)>,
}

impl Handed {
    /// [`HANDED`] from `env`; unset or empty, nothing was handed. A word
    /// without `=` names nothing and is passed over.
    pub(super) fn read(env: &dyn Fn(&str) -> Option<String>) -> Self {
        let mut handed = Handed::default();
        let text = env(HANDED).unwrap_or_default();
        for (name, value) in text.split_whitespace().filter_map(|w| w.split_once('=')) {
            let pair = (name.to_string(), value.to_string());
            match name.strip_prefix('@') {
                Some(component) => handed.defaults.push((component.to_string(), pair.1)),
                None => handed.variables.push(pair),
            }
        }
        handed
    }

    /// Whether `var` (as read) still has the value `berth env` gave it: a word
    /// on a command line is the command's own.
    pub(super) fn still(&self, var: &Var, value: &str) -> bool {
        var.source == VarSource::Environment
            && (self.variables.iter()).any(|(n, v)| *n == var.name && v == value)
    }

    /// The image `berth env` handed for `component` (a family's default member),
    /// as the base the command's own overrides move; `None` when it handed none
    /// (or the command changed the variable that held it), and for a `sameAs`
    /// copy that `berth env` gave its `source`'s image: it follows the source,
    /// as the command's overrides move it.
    pub(super) fn base(
        &self,
        read: &dyn Fn(&str) -> Option<(Var, String)>,
        component: &Component,
        source: Option<&Component>,
    ) -> Result<Option<Base>, ResolveError> {
        let recorded = (self.defaults.iter()).find(|(name, _)| *name == component.name);
        if let Some((_, value)) = recorded.filter(|_| !component.variants.is_empty()) {
            return handed_base(HANDED, value).map(Some);
        }
        let base = self.held(read, &component.env)?;
        if let (Some((own, _)), Some(source)) = (&base, source) {
            if self
                .held(read, &source.env)?
                .is_some_and(|(theirs, _)| theirs == *own)
            {
                return Ok(None);
            }
        }
        Ok(base)
    }

    /// The members of `component`'s family whose image `berth env` handed, each
    /// with it as its base.
    pub(super) fn members(
        &self,
        read: &dyn Fn(&str) -> Option<(Var, String)>,
        component: &Component,
    ) -> Result<Vec<(String, Base)>, ResolveError> {
        let mut out = Vec::new();
        if self.variables.is_empty() {
            return Ok(out);
        }
        for variant in &component.variants {
            if let Some(base) = self.held(read, &variant.variable(&component.name))? {
                out.push((variant.name.clone(), base));
            }
        }
        Ok(out)
    }

    /// The image the variable `var` holds, when `berth env` handed it there and
    /// it is unchanged.
    fn held(
        &self,
        read: &dyn Fn(&str) -> Option<(Var, String)>,
        var: &str,
    ) -> Result<Option<Base>, ResolveError> {
        match read(var).filter(|(var, value)| self.still(var, value)) {
            Some((var, value)) => handed_base(&var.name, &value).map(Some),
            None => Ok(None),
        }
    }
}

/// `value`, handed by `berth env` in `var`, as a base every part of which came from there.
fn handed_base(var: &str, value: &str) -> Result<Base, ResolveError> {
    let origin = Origin::ImageEnv(Var {
        name: var.to_string(),
        source: VarSource::Handed,
    });
    let reference = Reference::parse(value).map_err(|source| ResolveError::Invalid {
        origin: origin.clone(),
        value: value.to_string(),
        source,
    })?;
    let origins = Origins::of(origin, &reference);
    Ok((reference, origins))
}

impl Resolution<'_> {
    /// [`HANDED`] for `variables` (what `berth env` sets, what `berth images
    /// --output shell` exports), when there is one: every one but the variant
    /// variables and, for a family whose selected member a full or repository
    /// override named, its image and repository variables; then the default
    /// member's image of each family whose `<NAME>_IMAGE` does not hold it as such.
    pub fn handed_variable(&self, variables: &[(String, String)]) -> Option<(String, String)> {
        let mut kept: Vec<String> = Vec::new();
        let mut defaults = Vec::new();
        for image in &self.images {
            let component = image.component;
            let Some(selection) = &image.variant else {
                continue;
            };
            kept.push(component.variant_env.clone());
            let overridden = image.variants.iter().any(|m| m.when_selected.is_some());
            if overridden {
                kept.push(component.env.clone());
                kept.extend(component.repository_env.clone());
                // The selected member's variable holds the override too.
                kept.extend(
                    (component.variant(&selection.name))
                        .map(|variant| variant.variable(&component.name)),
                );
            }
            if overridden || selection.name != DEFAULT_VARIANT {
                if let Some(member) = image.member(DEFAULT_VARIANT) {
                    defaults.push(format!("@{}={}", component.name, member.reference));
                }
            }
        }
        let words: Vec<String> = (variables.iter())
            .filter(|(name, _)| !kept.contains(name))
            .map(|(name, value)| format!("{name}={value}"))
            .chain(defaults)
            // A word cannot hold white space; no answer has any (a reference,
            // a tag, a prefix), so this drops nothing berth resolved.
            .filter(|word| !word.contains(char::is_whitespace))
            .collect();
        (!words.is_empty()).then(|| (HANDED.to_string(), words.join(" ")))
    }
}
