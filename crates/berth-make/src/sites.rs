//! Where a Makefile writes a component's default tag (#50): what `berth update`
//! moves with berth.yaml so that `disagreements` stays quiet afterwards.

use berth_core::place::File;
use berth_core::Component;

use crate::{Defs, MakeVar, Makefiles};

/// How deep `EPP_IMAGE ?= $(BASE):$(EPP_TAG)` → `EPP_TAG ?= v1` is followed.
const MAX_DEPTH: usize = 8;

/// One Makefile line holding a component's default tag as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagSite {
    /// The Makefile, as shown.
    pub file: String,
    /// Its line.
    pub line: usize,
    /// The variable defined there (`WEB_TAG`).
    pub variable: String,
}

/// The lines whose text gives component `c` its default tag `old_tag` in make:
/// the component's full-reference variable when its value is berth.yaml's
/// default, else its tag variable when that is `old_tag`; followed through the
/// variables their values name to the line that writes the tag itself. A
/// default that disagrees already is not moved (validate names it).
pub fn tag_sites(makefiles: &Makefiles, c: &Component, old_tag: &str) -> Vec<TagSite> {
    let defs = Defs::new(&makefiles.vars);
    let known = |name: &str| match defs.value(name) {
        Some(Ok(value)) if !value.contains('$') => Some(value),
        _ => None,
    };
    let agrees = known(&c.env).is_some_and(|value| {
        berth_ref::Reference::parse(&value).is_ok_and(|r| {
            r.repository() == c.image.repository()
                && r.tag().is_some_and(|t| t.as_str() == old_tag)
                && r.digest() == c.image.digest()
        })
    });
    let start = if agrees {
        defs.get(&c.env)
    } else if defs.get(&c.env).is_none() && known(&c.tag_env).as_deref() == Some(old_tag) {
        defs.get(&c.tag_env)
    } else {
        None
    };
    let mut out = Vec::new();
    if let Some(var) = start {
        follow(&defs, var, old_tag, 0, &mut out);
    }
    out
}

/// The line of `var` when its own text holds `old_tag`, else those of the
/// variables its value names whose value holds it.
fn follow(defs: &Defs<'_>, var: &MakeVar, old_tag: &str, depth: usize, out: &mut Vec<TagSite>) {
    if holds(&var.value, old_tag) {
        if let (File::Path(file), Some(spot)) = (&var.at.file, var.at.spot) {
            out.push(TagSite {
                file: file.clone(),
                line: spot.line as usize,
                variable: var.name.clone(),
            });
        }
        return;
    }
    if depth >= MAX_DEPTH {
        return;
    }
    for name in references(&var.value) {
        let Some(inner) = defs.get(name) else {
            continue;
        };
        if matches!(defs.value(name), Some(Ok(v)) if holds(&v, old_tag)) {
            follow(defs, inner, old_tag, depth + 1, out);
        }
    }
}

/// Whether `text` holds `tag` as a whole token.
fn holds(text: &str, tag: &str) -> bool {
    let tag_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
    text.match_indices(tag).any(|(i, _)| {
        !text[..i].chars().next_back().is_some_and(tag_char)
            && !text[i + tag.len()..].chars().next().is_some_and(tag_char)
    })
}

/// The names `$(NAME)` and `${NAME}` of `text`.
fn references(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        rest = &rest[i + 1..];
        let close = match rest.chars().next() {
            Some('(') => ')',
            Some('{') => '}',
            _ => continue,
        };
        if let Some(end) = rest.find(close) {
            out.push(&rest[1..end]);
            rest = &rest[end..];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn component(src: &str) -> berth_core::Project {
        berth_core::project::parse("berth.yaml", "/p".into(), src).unwrap()
    }

    #[test]
    fn the_line_that_writes_the_tag_is_found_through_the_variables() {
        let p = component("name: p\nimages:\n  web:\n    image: quay.io/x/web:v1.3.0\n");
        let web = &p.components[0];
        let mut makefiles = Makefiles::default();
        makefiles.add(
            "Makefile",
            "REG ?= quay.io/x\nWEB_TAG ?= v1.3.0\nWEB_IMAGE ?= $(REG)/web:$(WEB_TAG)\nOTHER ?= v1.3.0\n",
        );
        let sites = tag_sites(&makefiles, web, "v1.3.0");
        assert_eq!(sites.len(), 1);
        assert_eq!((sites[0].line, sites[0].variable.as_str()), (2, "WEB_TAG"));
        // The tag variable alone.
        let mut tag_only = Makefiles::default();
        tag_only.add("Makefile", "# x\nWEB_TAG ?= v1.3.0\n");
        assert_eq!(tag_sites(&tag_only, web, "v1.3.0")[0].line, 2);
        // A default that already disagrees is validate's to name, not update's to move.
        let mut other = Makefiles::default();
        other.add("Makefile", "WEB_TAG ?= v0.9.0\n");
        assert!(tag_sites(&other, web, "v1.3.0").is_empty());
        // The whole reference written out.
        let mut whole = Makefiles::default();
        whole.add("Makefile", "WEB_IMAGE ?= quay.io/x/web:v1.3.0\n");
        assert_eq!(tag_sites(&whole, web, "v1.3.0")[0].variable, "WEB_IMAGE");
    }
}
