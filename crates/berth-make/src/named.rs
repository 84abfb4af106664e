//! Name-only image variables: KServe's `CONTROLLER_IMG ?= kserve-controller`,
//! which make composes with a registry variable in recipes and definitions
//! (`${KO_DOCKER_REPO}/${CONTROLLER_IMG}`, `…:${TAG}`). The variable names only
//! the repository's last path component, so berth must never read it as a
//! whole reference; it links the variable to the component whose repository
//! ends in that name, compares the two, and tells `berth init` which variable
//! moves the registry and which tag make appends.

use crate::{Defs, MakeVar, Makefiles};
use berth_core::warning::{Code, Warning};
use berth_core::{Place, Project};

/// A Makefile variable holding an image's last path component only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameOnly {
    /// The variable (`CONTROLLER_IMG`).
    pub var: String,
    /// Its value (`kserve-controller`).
    pub name: String,
    /// Where it is defined (`kserve-images.env:6`).
    pub at: Place,
    /// The registry variable make puts before it (`KO_DOCKER_REPO`), the one
    /// most compositions use.
    pub registry: Option<String>,
    /// The tag variable make appends (`TAG`), when any composition has one.
    pub tag: Option<String>,
    /// `file:line` of a build or tag command that names the image with no tag
    /// (`docker build … -t ${KO_DOCKER_REPO}/${CONTROLLER_IMG}`): make builds
    /// `:latest` there, whatever tag berth deploys.
    pub untagged_build: Option<Place>,
}

impl NameOnly {
    /// The component stem of the variable: `CONTROLLER_IMG` → `CONTROLLER`.
    pub fn stem(&self) -> &str {
        ["_IMG", "_IMAGE_NAME", "_IMAGE"]
            .iter()
            .find_map(|suffix| self.var.strip_suffix(suffix))
            .unwrap_or(&self.var)
    }
}

/// The name-only image variables of `vars` (make's kept definitions), with
/// how `texts` (the Makefiles' whole text, as `(file, text)`) compose them.
pub fn name_only(vars: &[MakeVar], texts: &[(String, String)]) -> Vec<NameOnly> {
    let defs = Defs::new(vars);
    let mut out: Vec<NameOnly> = Vec::new();
    for var in vars {
        let image_var = ["_IMG", "_IMAGE_NAME", "_IMAGE"]
            .iter()
            .any(|s| var.name.ends_with(s));
        if !image_var
            || !defs
                .get(&var.name)
                .is_some_and(|kept| std::ptr::eq(kept, var))
        {
            continue;
        }
        let Some(Ok(value)) = defs.value(&var.name) else {
            continue;
        };
        if !is_bare_name(&value) {
            continue;
        }
        let (registry, tag) = composition(&var.name, texts);
        out.push(NameOnly {
            var: var.name.clone(),
            name: value,
            at: var.at.clone(),
            registry,
            tag,
            untagged_build: untagged_build(&var.name, texts),
        });
    }
    out
}

/// A repository's last path component as written alone: lowercase letters,
/// digits, `.`, `_`, `-`; no `/`, `:` or `$`.
fn is_bare_name(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 128
        && value
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && value.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
        })
}

/// How make composes `var`: the registry variable before `/$(var)` most often
/// (the first on a tie), and the tag variable after `$(var):`, if any.
fn composition(var: &str, texts: &[(String, String)]) -> (Option<String>, Option<String>) {
    let mut registries: Vec<(String, usize)> = Vec::new();
    let mut tag = None;
    for (_, text) in texts {
        for spelled in [format!("$({var})"), format!("${{{var}}}")] {
            let mut from = 0;
            while let Some(found) = text[from..].find(&spelled) {
                let start = from + found;
                let end = start + spelled.len();
                if let Some(registry) = text[..start].strip_suffix('/').and_then(last_reference) {
                    match registries.iter_mut().find(|(r, _)| *r == registry) {
                        Some((_, n)) => *n += 1,
                        None => registries.push((registry, 1)),
                    }
                }
                if tag.is_none() {
                    tag = text[end..].strip_prefix(':').and_then(first_reference);
                }
                from = end;
            }
        }
    }
    let registry = registries
        .iter()
        .enumerate()
        .max_by_key(|(i, (_, n))| (*n, std::cmp::Reverse(*i)))
        .map(|(_, (r, _))| r.clone());
    (registry, tag)
}

/// The first `-t`/`--tag` of a build or tag command that names `var`'s image
/// with no tag after it, as `file:line`.
fn untagged_build(var: &str, texts: &[(String, String)]) -> Option<Place> {
    let spelled = [format!("$({var})"), format!("${{{var}}}")];
    built_images(texts)
        .into_iter()
        .find(|(image, _)| spelled.iter().any(|s| image.ends_with(s.as_str())))
        .map(|(_, at)| at)
}

/// The images make builds: the word after each `-t`/`--tag` of a `build`,
/// `buildx build` or `tag` command line (quotes removed), with its `file:line`.
pub fn built_images(texts: &[(String, String)]) -> Vec<(String, Place)> {
    let mut out = Vec::new();
    for (file, text) in texts {
        for (index, line) in text.lines().enumerate() {
            let builds = [" build ", " tag "].iter().any(|verb| line.contains(verb));
            if !builds {
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            for pair in words.windows(2) {
                if pair[0] == "-t" || pair[0] == "--tag" {
                    let image = pair[1].trim_matches(['"', '\'']);
                    let line = u32::try_from(index + 1).unwrap_or(u32::MAX);
                    out.push((image.to_string(), Place::file(file).line(line)));
                }
            }
        }
    }
    out
}

/// The variable `$(NAME)`/`${NAME}` that `text` ends with.
fn last_reference(text: &str) -> Option<String> {
    let close = text.chars().last()?;
    let open = match close {
        ')' => "$(",
        '}' => "${",
        _ => return None,
    };
    let start = text.rfind(open)?;
    let name = &text[start + 2..text.len() - 1];
    super::is_make_name(name).then(|| name.to_string())
}

/// The variable `$(NAME)`/`${NAME}` that `text` starts with.
fn first_reference(text: &str) -> Option<String> {
    let close = match text.get(..2)? {
        "$(" => ')',
        "${" => '}',
        _ => return None,
    };
    let end = text.find(close)?;
    let name = &text[2..end];
    super::is_make_name(name).then(|| name.to_string())
}

/// Where a name-only variable's default is not the last path component of the
/// component it names (`CONTROLLER_IMG` ↔ the component whose `env:` is
/// `CONTROLLER_IMAGE`): make would build and push one image, berth deploy
/// another.
pub fn name_disagreements(project: &Project, named: &[NameOnly]) -> Vec<Warning> {
    let mut out = Vec::new();
    for n in named {
        let Some(c) = component_of(project, n) else {
            continue;
        };
        let repository = c.image.repository().to_string();
        let last = repository.rsplit('/').next().unwrap_or(&repository);
        if last != n.name {
            let composed = composed(n);
            out.push(Warning::at(Code::MakefileDefault, n.at.clone(), format_args!(
                "`{} ?= {}` names the image make builds ({composed}), but component `{}`'s repository is `{repository}` ({}:{}): make would build and push `…/{}` and berth deploy `…/{last}`; make the two names agree",
                n.var, n.name, c.name, project.file, c.image_pos, n.name
            )));
        }
    }
    out
}

/// Where make builds a component's image with no tag while berth.yaml gives
/// the project a shared tag variable (`tag: {env: TAG}`): with `TAG=fix-408`
/// berth deploys `…:fix-408` and make builds `…:latest` (KServe's
/// `docker-build`), and nothing would say so.
pub fn untagged_builds(project: &Project, named: &[NameOnly]) -> Vec<Warning> {
    let Some(shared) = project.tag_env.as_deref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for n in named {
        let (Some(at), Some(c)) = (&n.untagged_build, component_of(project, n)) else {
            continue;
        };
        if !c.follows_tag {
            continue;
        }
        out.push(Warning::at(Code::MakefileDefault, at.clone(), format_args!(
            "this line builds `{}` with no tag, so make makes `…/{}:latest`, but berth deploys component `{}` at the shared tag `{shared}` ({}: `tag.env`) once it is set: append `:$({shared})` to the image here, so `berth env -- make …` builds what berth deploys",
            n.var, n.name, c.name, project.file
        )));
    }
    out
}

/// A variable's value from outside the Makefile (see [`untold_images`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outside {
    /// The value.
    pub value: String,
    /// Whether it is a `NAME=VALUE` word of make's command line.
    pub on_command_line: bool,
}

/// Under `berth env -- make`: a component make builds from parts
/// (`${KO_DOCKER_REPO}/${GRPC_IMG}:${TAG}`) into another image than berth
/// deploys (`deployed`: each component's resolved reference). `outside`
/// reads what make gets from outside the Makefile — its command line's words
/// first, then what `berth env` hands it, then the environment — and whether
/// it is a command-line word (which wins over every line of the Makefile; the
/// environment wins over `?=` lines only). With `--tag
/// grpc=fix` and a shared `TAG` the other components keep at `latest`, make
/// would build `…:latest` while berth deploys `…:fix`: one warning each, before
/// make runs. A part make computes (`$(shell …)`) is not judged, nor an image
/// no recipe of `goals` (make's goals; none: its default goal) builds.
pub fn untold_images(
    project: &Project,
    makefiles: &Makefiles,
    goals: &[String],
    outside: &dyn Fn(&str) -> Option<Outside>,
    deployed: &dyn Fn(&str) -> Option<berth_ref::Reference>,
) -> Vec<Warning> {
    let defs = Defs::new(&makefiles.vars);
    let recipes = goal_recipes(&defs, &makefiles.texts, goals);
    let named = makefiles.name_only();
    // Only the images the goals' recipes (and those of the targets they need) build.
    let named = named.iter().filter(|n| {
        (recipes.iter()).any(|line| line.contains(&n.var) || defs.refers_to(line, &n.var, 0))
    });
    // make's value: a word on its command line, else an unconditional line of
    // the Makefile, else the environment, else the `?=` default; unset is empty.
    let make_value = |var: &str| -> Option<String> {
        let def = defs.get(var);
        let own = || match defs.value(var) {
            Some(Ok(value)) if !value.contains("$(shell") && !value.contains("${shell") => {
                Some(value)
            }
            Some(_) => None,
            None => Some(String::new()),
        };
        match (outside(var), def) {
            (Some(given), Some(d)) if given.on_command_line || d.conditional => Some(given.value),
            (Some(given), None) => Some(given.value),
            _ => own(),
        }
    };
    let mut out = Vec::new();
    for n in named {
        let Some(c) = component_of(project, n) else {
            continue;
        };
        let (Some(berths), Some(made)) = (deployed(&c.name), Made::of(n, &make_value)) else {
            continue;
        };
        // The tag is judged where make appends one (`untagged_builds` says
        // the rest in validate) and berth has one (not a digest alone).
        let tag = berths.tag().map(|t| t.as_str()).filter(|_| n.tag.is_some());
        let same = berth_ref::Reference::parse(&made.image).is_ok_and(|image| {
            image.repository() == berths.repository()
                && tag.is_none_or(|tag| image.tag().is_some_and(|t| t.as_str() == tag))
        });
        if same {
            continue;
        }
        let last = berths.repository().last_component();
        let fix = match made.fix(n, &berths, tag) {
            words if words.is_empty() || made.name != last => format!(
                "make names it `{}` ({}), so give berth an image of that name",
                made.name, n.var
            ),
            words => format!("give make the parts (`make … {words}`)"),
        };
        out.push(Warning::at(Code::MakefileDefault, n.at.clone(), format_args!(
            "make builds component `{}` as {}, which is `{}` here, but berth deploys `{}`: {fix}, so both build and deploy one image",
            c.name, composed(n), made.image, berths.without_digest()
        )));
    }
    out
}

/// The recipe lines `goals` run (none: make's default goal, the first target
/// that does not start with `.`), with those of the targets they need.
fn goal_recipes(defs: &Defs<'_>, texts: &[(String, String)], goals: &[String]) -> Vec<String> {
    let rules = crate::rules::rules(texts);
    let default = (rules.iter())
        .find(|r| !r.target.starts_with('.') && !r.target.contains('%'))
        .map(|r| r.target.clone());
    let goals: Vec<String> = match goals.is_empty() {
        true => default.into_iter().collect(),
        false => goals.to_vec(),
    };
    let mut out = Vec::new();
    for goal in &goals {
        for rule in crate::deploy::reached(defs, &rules, goal) {
            out.extend(rule.lines.iter().map(|(_, line)| line.clone()));
        }
    }
    out
}

/// What make builds from a name-only variable's parts, as make reads them.
struct Made {
    /// The registry part (empty when unset, or when make puts none).
    registry: String,
    /// The name part (the image's last path component).
    name: String,
    /// The tag part, where make appends one.
    tag: Option<String>,
    /// The whole image (`docker.io/kserve/custom-model-grpc:latest`, `/x:1`).
    image: String,
}

impl Made {
    /// `None` when make computes a part (`$(shell …)`).
    fn of(n: &NameOnly, make_value: &dyn Fn(&str) -> Option<String>) -> Option<Made> {
        let registry = match n.registry.as_deref() {
            Some(var) => make_value(var)?,
            None => String::new(),
        };
        let name = Some(make_value(&n.var)?)
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| n.name.clone());
        let tag = match n.tag.as_deref() {
            Some(var) => Some(make_value(var)?),
            None => None,
        };
        let mut image = match n.registry {
            Some(_) => format!("{registry}/{name}"),
            None => name.clone(),
        };
        if let Some(tag) = &tag {
            image.push(':');
            image.push_str(tag);
        }
        Some(Made {
            registry,
            name,
            tag,
            image,
        })
    }

    /// The make words that give make berth's image: the registry variable
    /// (when make puts one before the name) and the tag variable, those that differ.
    fn fix(&self, n: &NameOnly, berths: &berth_ref::Reference, tag: Option<&str>) -> String {
        let repository = berths.repository().to_string();
        let prefix = repository.rsplit_once('/').map_or("", |(prefix, _)| prefix);
        let mut words = Vec::new();
        if let Some(var) = n.registry.as_deref().filter(|_| self.registry != prefix) {
            words.push(format!("{var}={prefix}"));
        }
        if let (Some(var), Some(tag)) = (n.tag.as_deref(), tag) {
            if self.tag.as_deref() != Some(tag) {
                words.push(format!("{var}={tag}"));
            }
        }
        words.join(" ")
    }
}

/// The component a name-only variable stands for: the one whose `env:` is
/// `<STEM>_IMAGE`, else whose repository ends in the variable's value.
pub fn component_of<'p>(project: &'p Project, n: &NameOnly) -> Option<&'p berth_core::Component> {
    let env = format!("{}_IMAGE", n.stem());
    project
        .components
        .iter()
        .find(|c| c.env == env && c.env != n.var)
        .or_else(|| {
            project.components.iter().find(|c| {
                c.image.repository().to_string().rsplit('/').next() == Some(n.name.as_str())
            })
        })
}

/// How make spells the image: `${KO_DOCKER_REPO}/${CONTROLLER_IMG}:${TAG}`.
pub fn composed(n: &NameOnly) -> String {
    let registry = n
        .registry
        .as_ref()
        .map(|r| format!("${{{r}}}/"))
        .unwrap_or_default();
    let tag = n
        .tag
        .as_ref()
        .map(|t| format!(":${{{t}}}"))
        .unwrap_or_default();
    format!("`{registry}${{{}}}{tag}`", n.var)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::make_vars;

    const IMAGES: &str = "TAG ?= latest\nCONTROLLER_IMG ?= kserve-controller\nAGENT_IMG ?= agent\nGRPC_IMG ?= custom-model-grpc\nGRPC_IMG_TAG ?= ${KO_DOCKER_REPO}/${GRPC_IMG}:${TAG}\nFULL_IMG ?= quay.io/x/y:v1\nBASE_IMG ?= $(shell cat base)\n";
    const MAKEFILE: &str = "include kserve-images.env\ndocker-build:\n\t${ENGINE} build . -t ${KO_DOCKER_REPO}/${CONTROLLER_IMG}\n\tdocker push $(KO_DOCKER_REPO)/$(CONTROLLER_IMG)\n\tdocker push other/$(AGENT_IMG)\n";

    fn texts() -> Vec<(String, String)> {
        vec![
            ("kserve-images.env".into(), IMAGES.into()),
            ("Makefile".into(), MAKEFILE.into()),
        ]
    }

    #[test]
    fn bare_names_are_found_with_their_registry_and_tag_variables() {
        let vars = make_vars("kserve-images.env", IMAGES);
        let got = name_only(&vars, &texts());
        let table: Vec<(&str, &str, Option<&str>, Option<&str>)> = got
            .iter()
            .map(|n| {
                (
                    n.var.as_str(),
                    n.name.as_str(),
                    n.registry.as_deref(),
                    n.tag.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            table,
            [
                (
                    "CONTROLLER_IMG",
                    "kserve-controller",
                    Some("KO_DOCKER_REPO"),
                    None
                ),
                ("AGENT_IMG", "agent", None, None),
                (
                    "GRPC_IMG",
                    "custom-model-grpc",
                    Some("KO_DOCKER_REPO"),
                    Some("TAG")
                ),
            ]
        );
        assert_eq!(got[0].stem(), "CONTROLLER");
        assert_eq!(composed(&got[2]), "`${KO_DOCKER_REPO}/${GRPC_IMG}:${TAG}`");
    }

    #[test]
    fn a_name_that_is_not_the_components_repository_is_a_makefile_default_warning() {
        let project = berth_core::project::parse(
            "berth.yaml",
            std::path::PathBuf::from("/p"),
            "name: x\nimages:\n  controller: {image: docker.io/kserve/kserve-controller:latest}\n  agent: {image: docker.io/kserve/kserve-agent:latest}\n",
        )
        .unwrap();
        let vars = make_vars("kserve-images.env", IMAGES);
        let got = name_disagreements(&project, &name_only(&vars, &texts()));
        let lines: Vec<String> = got.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            ["kserve-images.env:3: `AGENT_IMG ?= agent` names the image make builds (`${AGENT_IMG}`), but component `agent`'s repository is `docker.io/kserve/kserve-agent` (berth.yaml:4:18): make would build and push `…/agent` and berth deploy `…/kserve-agent`; make the two names agree [makefile-default]"]
        );
    }

    /// #46 item 9: a shared tag berth deploys that make's build line drops.
    #[test]
    fn a_build_line_without_a_tag_is_said_when_the_project_shares_a_tag() {
        let text = |shared: &str| {
            format!("name: x\n{shared}images:\n  controller: {{image: docker.io/kserve/kserve-controller:latest}}\n  grpc: {{image: docker.io/kserve/custom-model-grpc:latest}}\n  agent: {{image: docker.io/kserve/agent:latest, tag: false}}\n")
        };
        let vars = make_vars("kserve-images.env", IMAGES);
        let mut texts = texts();
        texts[1].1.push_str("\t${ENGINE} build -t \"${KO_DOCKER_REPO}/${AGENT_IMG}\" .\n\tdocker build -t ${KO_DOCKER_REPO}/${GRPC_IMG}:${TAG} .\n");
        let named = name_only(&vars, &texts);
        let shared =
            berth_core::project::parse("berth.yaml", "/p".into(), &text("tag: {env: TAG}\n"))
                .unwrap();
        let lines: Vec<String> = untagged_builds(&shared, &named)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            lines,
            ["Makefile:3: this line builds `CONTROLLER_IMG` with no tag, so make makes `…/kserve-controller:latest`, but berth deploys component `controller` at the shared tag `TAG` (berth.yaml: `tag.env`) once it is set: append `:$(TAG)` to the image here, so `berth env -- make …` builds what berth deploys [makefile-default]"]
        );
        let alone = berth_core::project::parse("berth.yaml", "/p".into(), &text("")).unwrap();
        assert!(untagged_builds(&alone, &named).is_empty());
    }

    #[test]
    fn an_image_make_builds_from_parts_other_than_berths_is_said() {
        let project = berth_core::project::parse(
            "berth.yaml",
            "/p".into(),
            "name: x\ntag: {env: TAG}\nimages:\n  grpc: {image: docker.io/kserve/custom-model-grpc:latest}\n  controller: {image: docker.io/kserve/kserve-controller:latest}\n",
        )
        .unwrap();
        let mut makefiles = Makefiles::default();
        makefiles.add("kserve-images.env", IMAGES);
        makefiles.add("Makefile", &format!("{MAKEFILE}grpc-build:\n\tdocker build -t ${{GRPC_IMG_TAG}} .\nall: docker-build grpc-build\n"));
        // (goals, what make gets from outside, grpc's image, controller's image)
        let lines = |makefiles: &Makefiles,
                     goals: &[&str],
                     outside: &[(&str, &str)],
                     grpc: &str,
                     controller: &str|
         -> Vec<String> {
            let goals: Vec<String> = goals.iter().map(|g| g.to_string()).collect();
            let outside = |var: &str| {
                (outside.iter())
                    .find(|(k, _)| *k == var)
                    .map(|(_, v)| Outside {
                        value: v.to_string(),
                        on_command_line: false,
                    })
            };
            let deployed = |c: &str| {
                berth_ref::Reference::parse(if c == "grpc" { grpc } else { controller }).ok()
            };
            (untold_images(&project, makefiles, &goals, &outside, &deployed).iter())
                .map(ToString::to_string)
                .collect()
        };
        let kserve = [("KO_DOCKER_REPO", "docker.io/kserve")];
        let latest = "docker.io/kserve/kserve-controller:latest";
        let fix = "docker.io/kserve/custom-model-grpc:fix";
        let grpc = ["grpc-build"];
        assert!(lines(&makefiles, &grpc, &[kserve[0], ("TAG", "fix")], fix, latest).is_empty());
        assert!(
            lines(&makefiles, &grpc, &[kserve[0], ("TAG", "latest")], "docker.io/kserve/custom-model-grpc:latest@sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc", latest).is_empty(),
            "the digest is berth's; the tag agrees"
        );
        assert_eq!(
            lines(&makefiles, &grpc, &kserve, fix, latest),
            ["kserve-images.env:4: make builds component `grpc` as `${KO_DOCKER_REPO}/${GRPC_IMG}:${TAG}`, which is `docker.io/kserve/custom-model-grpc:latest` here, but berth deploys `docker.io/kserve/custom-model-grpc:fix`: give make the parts (`make … TAG=fix`), so both build and deploy one image [makefile-default]"]
        );
        // Only what the goals build: `docker-build` builds the controller alone;
        // the default goal is the first target (`docker-build`); `all` needs both.
        assert!(lines(&makefiles, &["docker-build"], &kserve, fix, latest).is_empty());
        assert!(lines(&makefiles, &[], &kserve, fix, latest).is_empty());
        assert_eq!(lines(&makefiles, &["all"], &kserve, fix, latest).len(), 1);
        // make's own default counts: `TAG ?= latest` gives grpc berth's `latest`.
        assert!(lines(
            &makefiles,
            &grpc,
            &kserve,
            "docker.io/kserve/custom-model-grpc:latest",
            latest
        )
        .is_empty());
        // A registry make does not get: `/custom-model-grpc`.
        assert!(lines(&makefiles, &grpc, &[("TAG", "fix")], fix, latest)[0]
            .contains("which is `/custom-model-grpc:fix` here"));
        // Where make appends no tag, the repository is judged: a whole image
        // elsewhere leaves make's registry variable unset.
        let build = ["docker-build"];
        assert!(lines(
            &makefiles,
            &build,
            &kserve,
            fix,
            "docker.io/kserve/kserve-controller:fix"
        )
        .is_empty());
        assert_eq!(
            lines(&makefiles, &build, &[("TAG", "latest")], fix, "quay.io/x/kserve-controller:fix"),
            ["kserve-images.env:2: make builds component `controller` as `${KO_DOCKER_REPO}/${CONTROLLER_IMG}`, which is `/kserve-controller` here, but berth deploys `quay.io/x/kserve-controller:fix`: give make the parts (`make … KO_DOCKER_REPO=quay.io/x`), so both build and deploy one image [makefile-default]"]
        );
        assert!(lines(&makefiles, &build, &[], fix, "quay.io/x/other:fix")[0].contains(": make names it `kserve-controller` (CONTROLLER_IMG), so give berth an image of that name, so both"));
        // A tag make computes is not judged.
        makefiles.add("tag.mk", "TAG := $(shell git describe)\n");
        assert!(lines(&makefiles, &grpc, &kserve, fix, latest).is_empty());
        // An unconditional line wins over the environment, a make word over both.
        makefiles.add("tag.mk", "TAG := latest\n");
        let judged = |on_command_line: bool| {
            let outside = |var: &str| {
                let value = match var {
                    "TAG" => "fix",
                    "KO_DOCKER_REPO" => "docker.io/kserve",
                    _ => return None,
                };
                let value = value.to_string();
                Some(Outside {
                    value,
                    on_command_line,
                })
            };
            let deployed = |_: &str| berth_ref::Reference::parse(fix).ok();
            let goals = ["grpc-build".to_string()];
            untold_images(&project, &makefiles, &goals, &outside, &deployed).len()
        };
        assert_eq!((judged(false), judged(true)), (1, 0));
    }
}
