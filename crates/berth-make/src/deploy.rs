//! The images make deploys: a recipe make runs to deploy (one that runs
//! `kubectl apply`, or a prerequisite of such a target) and that rewrites a
//! kustomization's image first — kubebuilder's `cd config/manager &&
//! $(KUSTOMIZE) edit set image controller=${IMG}`, Kueue's `prepare-manifests`
//! with `controller=$(IMAGE_TAG)`. When that value is not the variable berth
//! hands make, `berth env -- make deploy` deploys another image than berth
//! does, and nothing else would say so.

use std::collections::BTreeSet;

use berth_core::kustomization::Kustomization;
use berth_core::warning::{Code, Warning};
use berth_core::{Component, Place, Project};
use berth_ref::Reference;

use crate::rules::{rules, Rule};
use crate::{Defs, Makefiles, EXPANSION_DEPTH};

/// One `kustomize edit set image NAME=VALUE` in a recipe make runs to deploy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeployEdit {
    /// The target that deploys (`deploy`).
    pub deploy: String,
    /// The target whose recipe holds the line (`prepare-manifests`; `deploy` itself).
    pub target: String,
    /// The kustomization's directory, relative to make's (`config/manager`;
    /// `""`: make's own).
    pub dir: String,
    /// The image name the kustomization's `images:` entry edits (`controller`).
    pub name: String,
    /// The new image as written (`${IMG}`, `$(IMAGE_TAG)`).
    pub value: String,
    /// The recipe line.
    pub at: Place,
}

impl DeployEdit {
    /// The one variable the value is, when it is nothing else (`${IMG}` → `IMG`).
    pub fn variable(&self) -> Option<&str> {
        let inner = (self
            .value
            .strip_prefix("$(")
            .and_then(|v| v.strip_suffix(')')))
        .or_else(|| {
            self.value
                .strip_prefix("${")
                .and_then(|v| v.strip_suffix('}'))
        })?;
        crate::is_make_name(inner).then_some(inner)
    }

    /// The repositories the edit may stand for: what the kustomization's entry
    /// for `name` renames it to (else the name itself), and the value as make
    /// expands it by default, when that is text.
    pub fn repositories(&self, makefiles: &Makefiles, k: Option<&Kustomization>) -> Vec<String> {
        let entry = k.and_then(|k| k.images.iter().find(|i| i.name == self.name));
        let renamed = entry.and_then(|e| e.new_name.clone());
        let defs = Defs::new(&makefiles.vars);
        let expanded = defs.expand(&self.value).ok().filter(|v| !v.contains('$'));
        [renamed.unwrap_or_else(|| self.name.clone())]
            .into_iter()
            .chain(expanded)
            .filter_map(|text| Reference::parse(&text).ok())
            .map(|r| r.repository().to_string())
            .collect()
    }
}

/// Every `kustomize edit set image NAME=VALUE` that a target that deploys
/// runs (in its recipe or a prerequisite's) on a kustomization it then builds
/// or applies (that one, or one it includes), each with the first such target
/// in file order. `kustomization` reads the kustomization of a directory
/// relative to make's; an edit of a kustomization the target does not deploy
/// (Kueue's `prepare-manifests` also edits add-ons `make deploy` leaves out)
/// is not one.
pub fn deploy_edits(
    makefiles: &Makefiles,
    kustomization: &dyn Fn(&str) -> Option<Kustomization>,
) -> Vec<DeployEdit> {
    let defs = Defs::new(&makefiles.vars);
    let rules = rules(&makefiles.texts);
    let mut out: Vec<DeployEdit> = Vec::new();
    let deploying = rules
        .iter()
        .filter(|r| r.lines.iter().any(|(_, l)| applies(l)));
    for deploy in deploying {
        let reached = reached(&defs, &rules, &deploy.target);
        let built: Vec<String> = (reached.iter().flat_map(|r| &r.lines))
            .flat_map(|(_, line)| kustomize_dirs(line))
            .filter_map(|dir| expanded_dir(&defs, Some(dir.to_string())))
            .collect();
        for rule in reached {
            for (n, line) in &rule.lines {
                for (dir, name, value) in image_edits(line) {
                    let Some(dir) = expanded_dir(&defs, dir) else {
                        continue;
                    };
                    let at = Place::file(&rule.file).line(*n);
                    let deployed = built.iter().any(|b| includes(kustomization, b, &dir));
                    if !deployed || out.iter().any(|e| e.at == at && e.name == name) {
                        continue;
                    }
                    out.push(DeployEdit {
                        deploy: deploy.target.clone(),
                        target: rule.target.clone(),
                        dir,
                        name,
                        value,
                        at,
                    });
                }
            }
        }
    }
    out
}

/// Whether building the kustomization in `from` reads the one in `to`: it is
/// that one, or one its `resources:`/`components:` reach (local ones, at most
/// [`MAX_KUSTOMIZATIONS`]).
fn includes(kustomization: &dyn Fn(&str) -> Option<Kustomization>, from: &str, to: &str) -> bool {
    let mut queue = vec![from.to_string()];
    let mut visited: BTreeSet<String> = BTreeSet::new();
    while let Some(dir) = queue.pop() {
        if dir == to {
            return true;
        }
        if visited.len() >= MAX_KUSTOMIZATIONS || !visited.insert(dir.clone()) {
            continue;
        }
        let Some(k) = kustomization(&dir) else {
            continue;
        };
        let local = k
            .bases
            .iter()
            .filter(|b| !b.contains("://") && !b.contains("?ref="));
        queue.extend(local.map(|base| joined(&dir, base)));
    }
    false
}

/// How many kustomizations one deploy's tree is followed through.
const MAX_KUSTOMIZATIONS: usize = 512;

/// `base` relative to `dir`, `.` and `..` resolved as far as `dir` goes.
fn joined(dir: &str, base: &str) -> String {
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for part in base.split('/') {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    parts.join("/")
}

/// The kustomization directories a shell line builds or applies, as written:
/// `kubectl apply -k DIR`, `--kustomize DIR`, `--kustomize=DIR`, `kustomize
/// build DIR`, `$(KUSTOMIZE) build DIR`.
pub fn kustomize_dirs(line: &str) -> Vec<&str> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut out = Vec::new();
    for (i, word) in words.iter().enumerate() {
        let dir = match *word {
            "-k" | "--kustomize" => words.get(i + 1).copied(),
            "build" if i > 0 && tool_name(words[i - 1]).ends_with("kustomize") => {
                words.get(i + 1).copied()
            }
            w => w.strip_prefix("--kustomize="),
        };
        out.extend(dir.filter(|d| !d.starts_with('-')));
    }
    out
}

/// The rules of `target` and of every target it needs, as deep as make's
/// expansion goes, each once.
pub(crate) fn reached<'r>(defs: &Defs<'_>, rules: &'r [Rule], target: &str) -> Vec<&'r Rule> {
    let mut names = vec![target.to_string()];
    let mut visited: BTreeSet<String> = BTreeSet::new();
    let mut out = Vec::new();
    for _ in 0..EXPANSION_DEPTH {
        let mut next = Vec::new();
        for name in names.drain(..).filter(|n| visited.insert(n.clone())) {
            for rule in rules.iter().filter(|r| r.target == name) {
                out.push(rule);
                for word in &rule.prerequisites {
                    // A prerequisite that does not expand names no target berth can follow.
                    let expanded = defs.expand(word).unwrap_or_default();
                    next.extend(expanded.split_whitespace().map(str::to_string));
                }
            }
        }
        names = next;
    }
    out
}

/// Whether a recipe line applies objects to a cluster (`kubectl apply`,
/// `$(KUBECTL) create`, `… | oc apply -f -`).
fn applies(line: &str) -> bool {
    segments(line).iter().any(|segment| {
        let words: Vec<&str> = segment.split_whitespace().collect();
        let client = words.iter().position(|w| {
            let name = tool_name(w);
            name.ends_with("kubectl") || name == "oc"
        });
        client.is_some_and(|i| {
            words[i + 1..]
                .iter()
                .any(|w| ["apply", "create"].contains(w))
        })
    })
}

/// `(dir as written, name, value)` of each `kustomize edit set image NAME=VALUE`
/// of one recipe line, the directory being the one its `cd` moved to (`None`:
/// make's own). A subshell's `cd` (`(cd dir && …)`) ends with it.
fn image_edits(line: &str) -> Vec<(Option<String>, String, String)> {
    let mut out = Vec::new();
    let mut dir: Option<String> = None;
    let mut outer: Vec<Option<String>> = Vec::new();
    for segment in segments(line) {
        let mut segment = segment.trim();
        while let Some(inner) = segment.strip_prefix('(') {
            outer.push(dir.clone());
            segment = inner.trim_start();
        }
        // The `)`s that close a subshell, not a `$(VAR)`.
        let closes = segment
            .matches(')')
            .count()
            .saturating_sub(segment.matches('(').count());
        let mut inner = segment;
        for _ in 0..closes {
            inner = inner.trim_end().strip_suffix(')').unwrap_or(inner);
        }
        let words: Vec<&str> = inner.split_whitespace().collect();
        match words.as_slice() {
            ["cd" | "pushd", to, ..] => dir = Some(to.trim_matches(['"', '\'']).to_string()),
            _ => {
                let edit = words.windows(4).position(|w| {
                    tool_name(w[0]).ends_with("kustomize") && w[1..] == ["edit", "set", "image"]
                });
                // No `edit set image` here: no arguments to read.
                let args = edit.map(|i| &words[i + 4..]).unwrap_or_default();
                for arg in args.iter().filter(|a| !a.starts_with('-')) {
                    if let Some((name, value)) = arg.split_once('=') {
                        let value = value.trim_matches(['"', '\'']);
                        out.push((dir.clone(), name.to_string(), value.to_string()));
                    }
                }
            }
        }
        for _ in 0..closes {
            // A `)` with no `(` before it on the line: the shell is back in make's directory.
            dir = outer.pop().unwrap_or_default();
        }
    }
    out
}

/// A shell line cut at `&&`, `||`, `;` and `|`.
fn segments(line: &str) -> Vec<&str> {
    line.split("&&")
        .flat_map(|s| s.split("||"))
        .flat_map(|s| s.split([';', '|']))
        .collect()
}

/// A command word's program name: `$(KUSTOMIZE)` → `kustomize`,
/// `bin/kubectl` → `kubectl`.
fn tool_name(word: &str) -> String {
    let word = word.trim_start_matches("$(").trim_start_matches("${");
    let word = word.trim_end_matches([')', '}']).to_ascii_lowercase();
    // `rsplit` yields at least one piece; the default is never taken.
    word.rsplit('/').next().unwrap_or_default().to_string()
}

/// The directory a `cd` names, make's variables expanded and `./` dropped;
/// `None` when the shell computes it.
fn expanded_dir(defs: &Defs<'_>, dir: Option<String>) -> Option<String> {
    let Some(dir) = dir else {
        return Some(String::new());
    };
    let dir = defs.expand(&dir).ok().filter(|d| !d.contains('$'))?;
    Some(joined("", &dir))
}

/// Where a recipe make runs to deploy sets a component's image in a
/// kustomization to something berth does not hand make: `berth env -- make
/// deploy` would deploy that instead of berth's image. `kustomization` reads
/// the kustomization of a directory (relative to the project's). A value that
/// names the component's variable (directly or through the Makefile's) agrees;
/// a literal that is berth.yaml's default is a hard-coded copy, `berth audit`'s.
pub fn deploy_disagreements(
    project: &Project,
    makefiles: &Makefiles,
    kustomization: &dyn Fn(&str) -> Option<Kustomization>,
) -> Vec<Warning> {
    let defs = Defs::new(&makefiles.vars);
    let mut out = Vec::new();
    for edit in deploy_edits(makefiles, kustomization) {
        let k = kustomization(&edit.dir);
        let Some(c) = edited_component(project, &edit.repositories(makefiles, k.as_ref())) else {
            continue;
        };
        let handed = std::iter::once(c.env.clone())
            .chain(c.variants.iter().map(|v| v.variable(&c.name)))
            .any(|var| defs.refers_to(&edit.value, &var, 0));
        let literal = Reference::parse(&edit.value).ok();
        let copy = literal.as_ref().is_some_and(|r| {
            r.repository() == c.image.repository()
                && r.tag() == c.image.tag()
                && r.digest() == c.image.digest()
        });
        if handed || copy || c.same_as.is_some() {
            continue;
        }
        out.push(warning(project, c, &edit, literal.is_some()));
    }
    out
}

/// The component whose repositories hold one of `repositories`.
fn edited_component<'p>(project: &'p Project, repositories: &[String]) -> Option<&'p Component> {
    project
        .components
        .iter()
        .find(|c| (c.repositories.iter()).any(|r| repositories.iter().any(|x| *x == r.to_string())))
}

fn warning(project: &Project, c: &Component, edit: &DeployEdit, literal: bool) -> Warning {
    let through = match edit.target == edit.deploy {
        true => String::new(),
        false => format!(" (through `{}`)", edit.target),
    };
    let kustomization = match edit.dir.as_str() {
        "" => "the kustomization".to_string(),
        dir => format!("{dir}'s kustomization"),
    };
    let (what, fix) = match (literal, edit.variable()) {
        (false, Some(var)) => (
            format!("which is not the variable berth hands make (`{}`)", c.env),
            format!(
                "write `$({})` there, or name make's variable in berth.yaml (`env: {var}` on component `{}`)",
                c.env, c.name
            ),
        ),
        (false, None) => (
            format!("which is not the variable berth hands make (`{}`)", c.env),
            format!("write `$({})` there", c.env),
        ),
        (true, _) => ("a fixed image".to_string(), format!("write `$({})` there", c.env)),
    };
    Warning::at(Code::MakefileDefault, edit.at.clone(), format_args!(
        "`make {}`{through} sets component `{}`'s image in {kustomization} to `{}`, {what}: under `berth env -- make {}` make deploys that, not berth's image for it (`{}` by default, {}:{}); {fix}",
        edit.deploy, c.name, edit.value, edit.deploy, c.image, project.file, c.image_pos
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn makefiles(text: &str) -> Makefiles {
        let mut files = Makefiles::default();
        files.add("Makefile", text);
        files
    }

    /// The warnings for `makefile` against a project with one component `op`
    /// (`quay.io/acme/op:v1`, variables as `extra` says), whose
    /// `config/manager` kustomization renames `controller` to its repository.
    fn judged(extra: &str, makefile: &str) -> Vec<String> {
        let project = berth_core::project::parse(
            "berth.yaml",
            std::path::PathBuf::from("/p"),
            &format!("name: x\nimages:\n  op: {{image: quay.io/acme/op:v1{extra}}}\n"),
        )
        .unwrap();
        let kustomization = |dir: &str| match dir {
            "config/default" => Some(Kustomization::parse("resources:\n- ../manager\n").unwrap()),
            "config/manager" => Some(
                Kustomization::parse(
                    "images:\n- name: controller\n  newName: quay.io/acme/op\n  newTag: v1\n",
                )
                .unwrap(),
            ),
            _ => None,
        };
        deploy_disagreements(&project, &makefiles(makefile), &kustomization)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_deploy_recipe_that_sets_the_image_from_berths_variable_agrees() {
        // kubebuilder's scaffold, with berth.yaml's `env: IMG`.
        let scaffold = "IMG ?= controller:latest\ndeploy: manifests kustomize ## Deploy\n\tcd config/manager && $(KUSTOMIZE) edit set image controller=${IMG}\n\t$(KUSTOMIZE) build config/default | $(KUBECTL) apply -f -\n";
        assert_eq!(judged(", env: IMG", scaffold), Vec::<String>::new());
        // Through a variable of the Makefile that names berth's.
        let through = scaffold.replace("${IMG}", "$(DEPLOY_IMG)") + "DEPLOY_IMG ?= $(IMG)\n";
        assert_eq!(judged(", env: IMG", &through), Vec::<String>::new());
        // A release target that writes a literal deploys nothing.
        let release = "release:\n\tcd config/manager && $(KUSTOMIZE) edit set image controller=quay.io/acme/op:v$(VERSION)\n";
        assert_eq!(judged("", release), Vec::<String>::new());
        // A literal that is berth.yaml's default is a hard-coded copy (audit's).
        let literal = scaffold.replace("${IMG}", "quay.io/acme/op:v1");
        assert_eq!(judged("", &literal), Vec::<String>::new());
    }

    /// Kueue's shape: `deploy` needs `prepare-manifests`, which writes
    /// `$(IMAGE_TAG)` (make's own `:=` variable) into the kustomization.
    #[test]
    fn a_deploy_recipe_that_sets_the_image_from_another_variable_is_named() {
        let kueue = "IMAGE_TAG := quay.io/acme/op:$(GIT_TAG)\ndeploy: crds prepare-manifests\n\tkubectl apply --server-side -k config/default\nprepare-manifests:\n\tcd config/manager && $(KUSTOMIZE) edit set image controller=$(IMAGE_TAG)\n";
        assert_eq!(
            judged("", kueue),
            ["Makefile:5: `make deploy` (through `prepare-manifests`) sets component `op`'s image in config/manager's kustomization to `$(IMAGE_TAG)`, which is not the variable berth hands make (`OP_IMAGE`): under `berth env -- make deploy` make deploys that, not berth's image for it (`quay.io/acme/op:v1` by default, berth.yaml:3:15); write `$(OP_IMAGE)` there, or name make's variable in berth.yaml (`env: IMAGE_TAG` on component `op`) [makefile-default]"]
        );
        // Named in berth.yaml, it agrees here (the `:=` line is `disagreements`' to name).
        assert_eq!(judged(", env: IMAGE_TAG", kueue), Vec::<String>::new());
        // A literal in a deploy recipe that is not berth's image.
        let pinned = kueue.replace("$(IMAGE_TAG)", "quay.io/acme/op:v0");
        assert_eq!(
            judged("", &pinned),
            ["Makefile:5: `make deploy` (through `prepare-manifests`) sets component `op`'s image in config/manager's kustomization to `quay.io/acme/op:v0`, a fixed image: under `berth env -- make deploy` make deploys that, not berth's image for it (`quay.io/acme/op:v1` by default, berth.yaml:3:15); write `$(OP_IMAGE)` there [makefile-default]"]
        );
    }

    #[test]
    fn edits_of_what_a_deploy_builds_are_read_with_their_directories() {
        let text = "DIR = config\ndeploy: a\n\t$(KUSTOMIZE) build $(DIR)/ | oc apply -f -\na: b\nb:\n\t(cd $(DIR)/one && kustomize edit set image x=$(V) y=w:1) && bin/kustomize edit set image z=$(Z)\n\tcd ./shared && kustomize edit set image s=$(S)\n\tcd $(DIR)/addon && kustomize edit set image a=$(A)\n\tcd $$(mktemp -d) && kustomize edit set image q=$(Q)\nunused:\n\tkustomize edit set image u=$(U)\n";
        let kustomization = |dir: &str| match dir {
            "config" => Some(
                Kustomization::parse("resources:\n- one\n- ../shared\n- https://github.com/x/y\n")
                    .unwrap(),
            ),
            "config/one" | "config/addon" | "shared" | "" => Some(Kustomization::default()),
            _ => None,
        };
        let edits: Vec<(String, String, String, String, String)> =
            deploy_edits(&makefiles(text), &kustomization)
                .into_iter()
                .map(|e| (e.deploy, e.target, e.dir, e.name, e.value))
                .collect();
        let row = |dir: &str, name: &str, value: &str| {
            (
                "deploy".into(),
                "b".into(),
                dir.into(),
                name.into(),
                value.into(),
            )
        };
        // make's own kustomization (`z`) and the add-on are not what `deploy` builds.
        assert_eq!(
            edits,
            [
                row("config/one", "x", "$(V)"),
                row("config/one", "y", "w:1"),
                row("shared", "s", "$(S)")
            ]
        );
        assert!(!applies("kubectl get pods | kustomize build x"));
        assert!(applies(
            "$(KUSTOMIZE) build config/default | $(KUBECTL) apply --server-side -f -"
        ));
        assert_eq!(
            kustomize_dirs("kubectl apply -k a && kubectl apply --kustomize=b -f c; kustomize build --enable-helm d"),
            ["a", "b"]
        );
    }
}
