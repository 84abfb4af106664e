//! Makefile variables as berth reads them, without running make: the
//! `NAME ?= value` lines (`?=`, `:=`, `::=`, `=`) and their values expanded
//! lazily, bounded in length and depth. `berth init` proposes berth.yaml from
//! them; `berth validate` compares the Makefile's image defaults with
//! berth.yaml's ([`disagreements`]).

#![warn(missing_docs)]

use std::collections::BTreeMap;

use berth_ref::Reference;

use berth_core::{Place, Project};

mod deploy;
mod named;
mod read;
mod rules;
mod sites;
mod targets;
pub use deploy::{deploy_disagreements, deploy_edits, kustomize_dirs, DeployEdit};
pub use named::{
    built_images, component_of, composed, name_disagreements, name_only, untold_images, NameOnly,
    Outside,
};
pub use read::make_vars;
pub use sites::{tag_sites, TagSite};
pub use targets::target_writing;

/// A `NAME ?= value` (or `:=`, `=`) line of a Makefile.
#[derive(Debug, Clone)]
pub struct MakeVar {
    /// The variable.
    pub name: String,
    /// Its value as written.
    pub value: String,
    /// `Makefile:3`.
    pub at: Place,
    /// `?=`, or a definition guarded by a test that the variable is unset
    /// (`ifeq ($(IMG),)`, `ifndef IMG`): set only when not yet defined, so the
    /// environment and berth's value win over it.
    pub conditional: bool,
    /// The assignment as written (`?=`, `:=`, `::=`, `!=`, `=`), for messages
    /// that quote the line.
    pub op: &'static str,
}

/// A project's Makefiles as read: every variable definition in the order make
/// reads them, and each file's whole text (recipes compose images too).
#[derive(Debug, Clone, Default)]
pub struct Makefiles {
    /// The `NAME ?= value` lines.
    pub vars: Vec<MakeVar>,
    /// `(file, text)`, in the order read.
    pub texts: Vec<(String, String)>,
}

impl Makefiles {
    /// Reads one more file: its variables and its text.
    pub fn add(&mut self, file: &str, text: &str) {
        self.vars.extend(make_vars(file, text));
        self.texts.push((file.to_string(), text.to_string()));
    }

    /// Its name-only image variables ([`name_only`]).
    pub fn name_only(&self) -> Vec<NameOnly> {
        name_only(&self.vars, &self.texts)
    }
}

/// The longest value make expansion may produce; past it a
/// variable is not used (a note says so). Real image references are < 300.
pub const EXPANSION_LIMIT: usize = 4096;

/// How deep `$(A)` → `$(B)` → … may nest before init gives up on a value.
pub const EXPANSION_DEPTH: usize = 16;

/// A Makefile's variables as make sees them once the file is read: `?=` keeps the
/// first definition, `=`/`:=` the last. Values stay as written and are expanded
/// only when init reads them ([`Defs::value`]), so a variable defined later in
/// the file still counts and one nobody reads costs nothing.
#[derive(Debug, Default)]
pub struct Defs<'a> {
    by_name: BTreeMap<&'a str, &'a MakeVar>,
}

/// Why a variable's value could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unexpandable {
    /// It grows past [`EXPANSION_LIMIT`] (an expansion bomb, or a list of files).
    TooLong,
    /// It refers to itself, directly or through others, or nests too deep.
    TooDeep,
}

impl<'a> Defs<'a> {
    /// The definitions make keeps of `vars` (in file order).
    pub fn new(vars: &'a [MakeVar]) -> Self {
        let mut by_name: BTreeMap<&str, &MakeVar> = BTreeMap::new();
        for var in vars {
            if !(var.conditional && by_name.contains_key(var.name.as_str())) {
                by_name.insert(&var.name, var);
            }
        }
        Defs { by_name }
    }

    /// The definition make keeps of `name`.
    pub fn get(&self, name: &str) -> Option<&'a MakeVar> {
        self.by_name.get(name).copied()
    }

    /// `name`'s value with `$(VAR)`/`${VAR}` expanded; an undefined variable is
    /// empty, as in make; `None` when it is not a variable of the Makefile.
    pub fn value(&self, name: &str) -> Option<Result<String, Unexpandable>> {
        let var = self.get(name)?;
        let mut out = String::new();
        Some(
            self.expand_into(var.value.trim(), &mut out, 0)
                .map(|()| out),
        )
    }

    /// `text` with `$(VAR)`/`${VAR}` expanded as [`Defs::value`] does.
    pub fn expand(&self, text: &str) -> Result<String, Unexpandable> {
        let mut out = String::new();
        self.expand_into(text, &mut out, 0).map(|()| out)
    }

    /// The definition that calls `$(shell …)` for `name`'s value: its own, or
    /// that of a variable it refers to (`IMAGE ?= …:$(IMAGE_TAG)`, `IMAGE_TAG ?=
    /// $(VERSION)`, `VERSION := $(shell cat VERSION)`: the last), the first found.
    pub fn computed_by(&self, name: &str) -> Option<&'a MakeVar> {
        let mut var = self.get(name)?;
        for _ in 0..=EXPANSION_DEPTH {
            let value = var.value.as_str();
            if value.contains("$(shell") || value.contains("${shell") {
                return Some(var);
            }
            let referred = value.split('$').skip(1).find_map(|after| {
                let name = after.get(1..)?.split([')', '}']).next()?;
                let computes = |v: &str| v.contains("$(shell") || v.contains("${shell");
                matches!(self.value(name), Some(Ok(v)) if computes(&v)).then(|| self.get(name))?
            });
            var = referred?;
        }
        None
    }

    fn expand_into(&self, text: &str, out: &mut String, depth: usize) -> Result<(), Unexpandable> {
        if depth > EXPANSION_DEPTH {
            return Err(Unexpandable::TooDeep);
        }
        let mut rest = text;
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            let close = match after.chars().next() {
                Some('(') => ')',
                Some('{') => '}',
                _ => {
                    out.push('$');
                    rest = after;
                    continue;
                }
            };
            let Some(end) = after.find(close) else {
                out.push_str(&rest[at..]);
                rest = "";
                break;
            };
            let name = &after[1..end];
            match self.get(name) {
                Some(var) if is_make_name(name) => {
                    self.expand_into(var.value.trim(), out, depth + 1)?
                }
                // A function call (`$(shell …)`) or an unknown name: kept as written
                // when unknown to make's syntax, empty when a plain name (make's rule).
                _ if is_make_name(name) => {}
                _ => out.push_str(&rest[at..at + 2 + end]),
            }
            rest = &after[end + 1..];
            if out.len() > EXPANSION_LIMIT {
                return Err(Unexpandable::TooLong);
            }
        }
        out.push_str(rest);
        if out.len() > EXPANSION_LIMIT {
            return Err(Unexpandable::TooLong);
        }
        Ok(())
    }
}

pub(crate) fn is_make_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The files a Makefile includes by a literal path (`include x.mk`, `-include`,
/// `sinclude`), as written; an include built from a variable or a glob is left out.
pub fn includes(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim_end();
        let rest = ["include ", "-include ", "sinclude "]
            .iter()
            .find_map(|word| line.strip_prefix(word));
        if let Some(rest) = rest {
            // `$(wildcard mk/*.mk)` is the pattern it names; a `*` pattern is kept for the
            // caller to expand in the file name (`mk/*.mk`), anything else computed is not.
            let rest = rest.trim();
            let rest = rest
                .strip_prefix("$(wildcard ")
                .and_then(|r| r.strip_suffix(')'))
                .unwrap_or(rest);
            out.extend(
                rest.split_whitespace()
                    .filter(|p| !p.contains(['$', '?', '[']))
                    .map(str::to_string),
            );
        }
    }
    out
}

/// Where a Makefile's defaults and berth.yaml's images disagree: a component's
/// full-reference variable (`EPP_IMAGE ?= $(IMAGE_REGISTRY)/epp:$(EPP_TAG)`),
/// else its tag variable (`EPP_TAG ?= dev`), whose default is not the image
/// berth.yaml gives it. With no variable set, `make` and berth would then build
/// and deploy different images, and nothing would say so. A value make would
/// compute (`$(shell …)`) is not judged.
pub fn disagreements(project: &Project, makefiles: &Makefiles) -> Vec<berth_core::Warning> {
    let defs = Defs::new(&makefiles.vars);
    let mut out = Vec::new();
    let written = |var: &MakeVar| format!("`{} {} {}`", var.name, var.op, var.value);
    for c in &project.components {
        if c.same_as.is_some() {
            continue; // its default is another component's resolved image
        }
        let own = format!("{}:{}", project.file, c.image_pos);
        if let Some(warning) = unconditional(makefiles, c, &own) {
            out.push(warning);
            continue;
        }
        let known = |name: &str| match defs.value(name) {
            Some(Ok(value)) if !value.is_empty() && !value.contains('$') => Some(value),
            _ => None,
        };
        if let (Some(var), Some(value)) = (defs.get(&c.env), known(&c.env)) {
            let Ok(reference) = Reference::parse(&value) else {
                continue;
            };
            let same = reference.repository() == c.image.repository()
                && reference.tag() == c.image.tag()
                && reference.digest() == c.image.digest();
            if !same {
                out.push(berth_core::Warning::at(berth_core::Code::MakefileDefault, var.at.clone(), format_args!(
                    "{} gives component `{}` the image `{reference}` by default, but {own} gives it `{}`: with no variable set, make and berth build and deploy different images; make the two defaults agree",
                    written(var), c.name, c.image
                )));
            }
            continue;
        }
        // A default make computes (`TAG ?= $(shell git describe --tags)`) cannot be compared:
        // say so once, rather than stay silent (#46 item 9).
        let computed = [&c.env, &c.tag_env]
            .into_iter()
            .filter_map(|name| defs.get(name))
            .find(|var| matches!(defs.value(&var.name), Some(Ok(v)) if v.contains("$(shell") || v.contains("${shell")));
        if let Some(var) = computed {
            let shell = defs.computed_by(&var.name).filter(|s| s.name != var.name);
            let through = shell.map_or(String::new(), |s| {
                format!(" (through {}, {})", written(s), s.at)
            });
            out.push(berth_core::Warning::at(berth_core::Code::MakefileDefault, var.at.clone(), format_args!(
                "{} computes component `{}`'s default with `$(shell …)`{through}, so berth cannot compare it with {own}'s `{}`: make run alone may build another image than berth deploys; run make under `berth env --` (berth's value wins over `?=`), or write the default as text",
                written(var), c.name, c.image
            )));
            continue;
        }
        if let (Some(var), Some(tag)) = (defs.get(&c.tag_env), known(&c.tag_env)) {
            if c.image.tag().is_some_and(|t| t.to_string() != tag) {
                out.push(berth_core::Warning::at(berth_core::Code::MakefileDefault, var.at.clone(), format_args!(
                    "{} gives component `{}` the tag `{tag}` by default, but {own} gives it `{}`: with no variable set, make and berth build and deploy different images; make the two defaults agree",
                    written(var), c.name, c.image
                )));
            }
        }
    }
    let named = makefiles.name_only();
    out.extend(name_disagreements(project, &named));
    out.extend(named::untagged_builds(project, &named));
    out
}

/// A definition of one of component `c`'s variables that make keeps whatever
/// the environment says (`IMAGE_TAG := …`, not `?=` nor guarded by a test
/// that it is unset): under `berth env -- make`, berth's image never reaches
/// make, which builds or deploys its own. Said once per component, at the
/// first such line.
fn unconditional(
    makefiles: &Makefiles,
    c: &berth_core::Component,
    own: &str,
) -> Option<berth_core::Warning> {
    let names = [Some(&c.env), Some(&c.tag_env), c.repository_env.as_ref()];
    let var = (makefiles.vars.iter())
        .find(|v| !v.conditional && names.iter().flatten().any(|n| **n == v.name))?;
    Some(berth_core::Warning::at(berth_core::Code::MakefileDefault, var.at.clone(), format_args!(
        "this line sets {} (component `{}`'s variable) to `{}` whatever the environment says, so under `berth env -- make` berth's image for it ({own}, or what berth's variables make of it) does not reach make, which builds or deploys its own; write `{} ?= …`, or give it on make's command line (`make … {}=…`)",
        var.name, c.name, var.value, var.name, var.name
    )))
}

/// Under `berth env -- make … NAME=VALUE`: the words that name no variable of
/// berth.yaml but feed, in the Makefile, a variable berth sets (`set`: what
/// `berth env` hands the command) through a `?=` line (`EPP_IMAGE ?=
/// $(EPP_IMAGE_TAG_BASE):$(EPP_TAG)` and `EPP_IMAGE_TAG_BASE=quay.io/me/epp`;
/// `IMG_VERSION ?= $(VERSION)` and `VERSION=1.2`). berth's value reaches make
/// through the environment, which wins over `?=`, so the word would change
/// nothing — one message each, for the caller to refuse the command with.
pub fn shadowed_words(
    project: &Project,
    makefiles: &Makefiles,
    words: &[(String, String)],
    set: &[&str],
    command_line: &str,
) -> Vec<String> {
    let defs = Defs::new(&makefiles.vars);
    let named = makefiles.name_only();
    let read = project.variables();
    let mut out = Vec::new();
    for (name, value) in words {
        if read.contains(&name.as_str()) {
            continue;
        }
        // A name-only variable (`CONTROLLER_IMG=x`): make would build `…/x`,
        // berth deploy the component's own repository.
        let renamed = named.iter().filter(|n| n.var == *name);
        for (n, c) in renamed.filter_map(|n| component_of(project, n).map(|c| (n, c))) {
            out.push(format!(
                "`{name}={value}` ({command_line}) renames the image make builds ({}), but berth deploys component `{}` as `{}`, so make and berth would disagree: give berth the whole image (`{}=…`), or change `images.{}.image` in {}",
                composed(n), c.name, c.image.repository(), c.env, c.name, project.file
            ));
        }
        for &berths in set {
            let Some(var) = defs.get(berths).filter(|v| v.conditional) else {
                continue;
            };
            if !defs.refers_to(&var.value, name, 0) {
                continue;
            }
            let or_declare = match project.components.iter().find(|c| c.env == berths) {
                Some(c) => format!(
                    ", or `repositoryEnv: {name}` on component `{}` in {}",
                    c.name, project.file
                ),
                None => String::new(),
            };
            out.push(format!(
                "`{name}={value}` ({command_line}) feeds the Makefile's `{} {} {}` ({}), but berth sets `{berths}` for the command, which wins over that line, so the word would change nothing: give the override to berth (`{berths}=…`{or_declare})",
                var.name, var.op, var.value, var.at
            ));
        }
    }
    out
}

impl Defs<'_> {
    /// Whether `text` refers to variable `name`, directly or through the
    /// variables it names (as deep as expansion goes).
    pub(crate) fn refers_to(&self, text: &str, name: &str, depth: usize) -> bool {
        if depth > EXPANSION_DEPTH {
            return false;
        }
        let mut rest = text;
        while let Some(at) = rest.find('$') {
            let after = &rest[at + 1..];
            let close = match after.chars().next() {
                Some('(') => ')',
                Some('{') => '}',
                _ => {
                    rest = after;
                    continue;
                }
            };
            let Some(end) = after.find(close) else { break };
            let inner = &after[1..end];
            if inner == name {
                return true;
            }
            if let Some(var) = self.get(inner) {
                if self.refers_to(&var.value, name, depth + 1) {
                    return true;
                }
            }
            rest = &after[end + 1..];
        }
        false
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// opendatahub-operator's shape: definitions tab-indented inside a
    /// top-level `ifeq`, the first branch make's default; recipes skipped.
    #[test]
    fn definitions_in_conditionals_are_read_and_recipes_are_not() {
        let text = "PLATFORM ?= odh\nifeq ($(PLATFORM), odh)\n\tCONFIG_DIR=config\n\tONLY_ODH=1\nelse\n\tCONFIG_DIR=config/rhoai\n\tONLY_RHOAI=1\nendif\ndeploy: prepare\n\tIMG=recipe $(KUSTOMIZE) build $(CONFIG_DIR)/default\nAFTER = $(CONFIG_DIR)/x\n";
        fn pairs(vars: &[MakeVar]) -> Vec<(&str, &str)> {
            vars.iter()
                .map(|v| (v.name.as_str(), v.value.as_str()))
                .collect()
        }
        let vars = make_vars("Makefile", text);
        assert_eq!(
            pairs(&vars),
            [
                ("PLATFORM", "odh"),
                ("CONFIG_DIR", "config"),
                ("ONLY_ODH", "1"),
                ("ONLY_RHOAI", "1"),
                ("AFTER", "$(CONFIG_DIR)/x")
            ]
        );
        let defs = Defs::new(&vars);
        assert_eq!(
            defs.expand("$(CONFIG_DIR)/default").unwrap(),
            "config/default"
        );
        // model-registry: `ifdef IMG` runs only when the environment sets IMG; make's
        // default is the first branch of the chain whose variable the file defines.
        let chain = "IMG_REGISTRY ?= ghcr.io\nifdef IMG\n\tIMG := ${IMG}\nelse ifdef IMG_REGISTRY\n    IMG := ${IMG_REGISTRY}/kubeflow/hub\nelse\n    IMG := kubeflow/hub\nendif\nifdef NOPE\nA = 1\nelse ifdef ALSO_NOPE\nA = 2\nelse\nA = 3\nendif\n";
        let vars = make_vars("Makefile", chain);
        assert_eq!(
            pairs(&vars),
            [
                ("IMG_REGISTRY", "ghcr.io"),
                ("IMG", "${IMG_REGISTRY}/kubeflow/hub"),
                ("A", "3")
            ]
        );
        // …and that definition is made only when the environment does not set IMG.
        assert!(vars[1].conditional && !vars[2].conditional, "{vars:?}");
    }

    /// One Makefile, read as the CLI reads a project's.
    fn files(text: &str) -> Makefiles {
        let mut files = Makefiles::default();
        files.add("Makefile", text);
        files
    }

    #[test]
    fn makefile_defaults_that_disagree_with_berth_yaml_are_named() {
        let project = berth_core::project::parse(
            "berth.yaml",
            std::path::PathBuf::from("/p"),
            "name: x\nimages:\n  epp: {image: ghcr.io/llm-d/epp:dev}\n  sidecar: {image: ghcr.io/llm-d/disagg-sidecar:0.0.5}\n  sim: {image: ghcr.io/llm-d/sim:v1}\n  shelled: {image: ghcr.io/llm-d/shelled:v1}\n",
        )
        .unwrap();
        let makefile = "IMAGE_REGISTRY ?= ghcr.io/llm-d\nEPP_TAG ?= dev\nEPP_IMAGE ?= $(IMAGE_REGISTRY)/epp:$(EPP_TAG)\nSIDECAR_TAG ?= dev\nSIM_IMAGE = ghcr.io/llm-d/sim:v1\nSHELLED_TAG ?= $(shell git describe)\ninclude hack/tools.mk\n-include $(X).mk\n";
        let got: Vec<String> = disagreements(&project, &files(makefile))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            got,
            [
                "Makefile:4: `SIDECAR_TAG ?= dev` gives component `sidecar` the tag `dev` by default, but berth.yaml:4:20 gives it `ghcr.io/llm-d/disagg-sidecar:0.0.5`: with no variable set, make and berth build and deploy different images; make the two defaults agree [makefile-default]",
                "Makefile:5: this line sets SIM_IMAGE (component `sim`'s variable) to `ghcr.io/llm-d/sim:v1` whatever the environment says, so under `berth env -- make` berth's image for it (berth.yaml:5:16, or what berth's variables make of it) does not reach make, which builds or deploys its own; write `SIM_IMAGE ?= …`, or give it on make's command line (`make … SIM_IMAGE=…`) [makefile-default]",
                // #46 item 9: a computed default is said, not passed over in silence.
                "Makefile:6: `SHELLED_TAG ?= $(shell git describe)` computes component `shelled`'s default with `$(shell …)`, so berth cannot compare it with berth.yaml:6:20's `ghcr.io/llm-d/shelled:v1`: make run alone may build another image than berth deploys; run make under `berth env --` (berth's value wins over `?=`), or write the default as text [makefile-default]",
            ]
        );
        assert_eq!(includes(makefile), ["hack/tools.mk"]);
        assert_eq!(
            includes("include mk/*.mk\n-include $(wildcard x/*.mk)\n"),
            ["mk/*.mk", "x/*.mk"]
        );
        // Computed further down (spark-operator): the definition that calls the shell is named.
        let chain = "VERSION := $(shell cat VERSION | sed \"s/^v//\")\nSHELLED_TAG ?= $(VERSION)\n";
        let got = disagreements(&project, &files(chain));
        assert!(got[0].text.starts_with("Makefile:2: `SHELLED_TAG ?= $(VERSION)` computes component `shelled`'s default with `$(shell …)` (through `VERSION := $(shell cat VERSION | sed \"s/^v//\")`, Makefile:1), "), "{got:?}");
        let got = disagreements(&project, &files("EPP_IMAGE ?= quay.io/me/epp:dev\n"));
        assert!(got[0].text.starts_with("Makefile:1: `EPP_IMAGE ?= quay.io/me/epp:dev` gives component `epp` the image `quay.io/me/epp:dev` by default, but berth.yaml:3:16 gives it `ghcr.io/llm-d/epp:dev`"), "{got:?}");
    }

    /// A component variable make sets whatever the environment says is named
    /// (kueue: `IMAGE_TAG := $(IMAGE_REPO):$(GIT_TAG)`); one set only when unset
    /// — `?=`, or `=` under a test that it is unset, as opendatahub-operator
    /// writes `IMAGE_TAG_BASE` — is not.
    #[test]
    fn a_component_variable_the_environment_cannot_reach_is_named() {
        let project = berth_core::project::parse(
            "berth.yaml",
            std::path::PathBuf::from("/p"),
            "name: x\nimages:\n  op: {image: quay.io/acme/op:latest, env: IMG, tagEnv: IMG_TAG, repositoryEnv: IMAGE_TAG_BASE}\n  kq: {image: quay.io/acme/kq:main, env: IMAGE_TAG}\n",
        )
        .unwrap();
        let guarded = "ifeq ($(IMAGE_TAG_BASE), )\n\tIMAGE_TAG_BASE = quay.io/acme/op\nendif\nifndef IMG_TAG\nIMG_TAG = latest\nendif\nifeq (,$(IMG))\n\tIMG ?= $(IMAGE_TAG_BASE):$(IMG_TAG)\nendif\n";
        let got = disagreements(&project, &files(guarded));
        assert!(got.is_empty(), "{got:?}");
        // A guarded line is quoted as written, not as `?=`.
        let read = make_vars("Makefile", guarded);
        let ops: Vec<(&str, &str)> = read.iter().map(|v| (v.name.as_str(), v.op)).collect();
        assert_eq!(
            ops,
            [("IMAGE_TAG_BASE", "="), ("IMG_TAG", "="), ("IMG", "?=")]
        );
        let vars = make_vars("Makefile", "ifeq ($(origin X),undefined)\nX = 1\nelse\nY = 2\nendif\nifeq \"$(Z)\" \"\"\nZ = 3\nendif\nifeq ($(W),x)\nW = 4\nendif\n");
        let conditional: Vec<(&str, bool)> = (vars.iter())
            .map(|v| (v.name.as_str(), v.conditional))
            .collect();
        assert_eq!(
            conditional,
            [("X", true), ("Y", false), ("Z", true), ("W", false)]
        );
        let got = disagreements(
            &project,
            &files(&format!(
                "{guarded}IMAGE_TAG := quay.io/acme/kq:$(GIT_TAG)\n"
            )),
        );
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].text.starts_with("Makefile:10: this line sets IMAGE_TAG (component `kq`'s variable) to `quay.io/acme/kq:$(GIT_TAG)` whatever the environment says"), "{got:?}");
    }

    #[test]
    fn a_make_word_berths_variable_would_shadow_is_named() {
        let project = berth_core::project::parse(
            "berth.yaml",
            std::path::PathBuf::from("/p"),
            "name: x\nimages:\n  epp: {image: ghcr.io/llm-d/epp:dev}\n",
        )
        .unwrap();
        let vars = files(
            "BASE = $(EPP_IMAGE_TAG_BASE)\nEPP_IMAGE_TAG_BASE ?= ghcr.io/llm-d/epp\nEPP_IMAGE ?= $(BASE):$(EPP_TAG)\n",
        );
        let word = |n: &str, v: &str| (n.to_string(), v.to_string());
        let got = shadowed_words(
            &project,
            &vars,
            &[
                word("EPP_IMAGE_TAG_BASE", "quay.io/me/epp"),
                word("EPP_TAG", "x"),
                word("V", "1"),
            ],
            &["EPP_IMAGE", "EPP_TAG"],
            "command line of `make`",
        );
        assert_eq!(
            got,
            ["`EPP_IMAGE_TAG_BASE=quay.io/me/epp` (command line of `make`) feeds the Makefile's `EPP_IMAGE ?= $(BASE):$(EPP_TAG)` (Makefile:3), but berth sets `EPP_IMAGE` for the command, which wins over that line, so the word would change nothing: give the override to berth (`EPP_IMAGE=…`, or `repositoryEnv: EPP_IMAGE_TAG_BASE` on component `epp` in berth.yaml)"]
        );
        // KServe's shape: a name-only variable renames what make builds.
        let named = files("CONTROLLER_IMG ?= kserve-controller\nbuild:\n\tdocker build -t ${KO_DOCKER_REPO}/${CONTROLLER_IMG} .\n");
        let project = berth_core::project::parse(
            "berth.yaml",
            std::path::PathBuf::from("/p"),
            "name: x\nimages:\n  controller: {image: docker.io/kserve/kserve-controller:latest}\n",
        )
        .unwrap();
        let got = shadowed_words(
            &project,
            &named,
            &[word("CONTROLLER_IMG", "ctl")],
            &["CONTROLLER_IMAGE"],
            "command line of `make`",
        );
        assert_eq!(
            got,
            ["`CONTROLLER_IMG=ctl` (command line of `make`) renames the image make builds (`${KO_DOCKER_REPO}/${CONTROLLER_IMG}`), but berth deploys component `controller` as `docker.io/kserve/kserve-controller`, so make and berth would disagree: give berth the whole image (`CONTROLLER_IMAGE=…`), or change `images.controller.image` in berth.yaml"]
        );
    }
}
