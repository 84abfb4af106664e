//! `berth init`: a first berth.yaml from what a repository already says — its
//! kustomizations and YAML manifests, the images their pods run, and the image
//! variables its Makefile defines. Pure: the CLI reads the files and hands
//! them over as [`Facts`]; this decides and explains ([`Plan`]).

use std::collections::BTreeMap;

use berth_ref::Reference;
use berth_yaml::{Limits, Node};

/// A kustomization found in the repository.
#[derive(Debug, Clone)]
pub struct Kustomization {
    /// Its directory, relative to the repository (`config/default`).
    pub dir: String,
    /// Its `resources:`, `bases:` and `components:` entries, as written.
    pub resources: Vec<String>,
    /// Its `images:` entries: `(name, newName, newTag)`.
    pub images: Vec<(String, Option<String>, Option<String>)>,
}

/// A `NAME ?= value` (or `:=`, `=`) line of a Makefile.
#[derive(Debug, Clone)]
pub struct MakeVar {
    /// The variable.
    pub name: String,
    /// Its value as written.
    pub value: String,
    /// `Makefile:3`.
    pub at: String,
}

/// What the CLI found.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// The repository's directory name (the project's name by default).
    pub name: String,
    /// Every kustomization.
    pub kustomizations: Vec<Kustomization>,
    /// YAML files that hold Kubernetes objects: `(relative path, text)`.
    pub manifests: Vec<(String, String)>,
    /// Make variables, in file order.
    pub make_vars: Vec<MakeVar>,
}

/// What `berth init` writes and why.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The berth.yaml text.
    pub yaml: String,
    /// One line per decision.
    pub notes: Vec<String>,
}

/// One project image found.
struct Found {
    reference: Reference,
    at: String,
}

/// `$(VAR)`/`${VAR}` of make, expanded with the variables defined before (once).
fn expand(value: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = value.to_string();
    for _ in 0..4 {
        let mut next = out.clone();
        for (name, v) in vars {
            next = next
                .replace(&format!("$({name})"), v)
                .replace(&format!("${{{name}}}"), v);
        }
        if next == out {
            break;
        }
        out = next;
    }
    out
}

/// A component name from a variable (`EPP_IMAGE` → `epp`) or a repository's
/// last path component.
fn component_name(text: &str) -> String {
    let mut name: String = text
        .trim_end_matches("_IMAGE")
        .trim_end_matches("_IMG")
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    name = name.trim_matches('-').to_string();
    if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        name = format!("c-{name}");
    }
    name
}

/// The `domain/first-path-component` of a reference: what "the project's
/// registry" means (`ghcr.io/llm-d`).
fn owner(reference: &Reference) -> String {
    let path = reference.path();
    let first = path.split('/').next().unwrap_or(path);
    if path.contains('/') {
        format!("{}/{first}", reference.domain())
    } else {
        reference.domain().to_string()
    }
}

/// Decides a first berth.yaml.
pub fn plan(facts: &Facts) -> Plan {
    let mut notes = Vec::new();
    // --- manifests: the kustomizations no other one uses, else YAML directories.
    let used: Vec<String> = facts
        .kustomizations
        .iter()
        .flat_map(|k| {
            k.resources
                .iter()
                .map(move |r| normalize(&format!("{}/{r}", k.dir)))
        })
        .collect();
    let mut leaves: Vec<&Kustomization> = facts
        .kustomizations
        .iter()
        .filter(|k| !used.contains(&normalize(&k.dir)))
        .collect();
    leaves.sort_by(|a, b| a.dir.cmp(&b.dir));
    let mut manifests_yaml = String::new();
    let mut profiles_yaml = String::new();
    let kustomized: Vec<&str> = facts
        .kustomizations
        .iter()
        .map(|k| k.dir.as_str())
        .collect();
    match leaves.as_slice() {
        [] => {
            let mut dirs: Vec<String> = facts
                .manifests
                .iter()
                .map(|(path, _)| top_dir(path))
                .filter(|d| !kustomized.iter().any(|k| d.starts_with(k)))
                .collect();
            dirs.sort();
            dirs.dedup();
            if dirs.is_empty() {
                notes.push("manifests: none found (no kustomization.yaml, no YAML with apiVersion and kind); add `manifests:` by hand".into());
            } else {
                notes.push(format!(
                    "manifests: {} (the directories that hold Kubernetes YAML)",
                    dirs.join(", ")
                ));
                manifests_yaml = format!(
                    "manifests: [{}]\n",
                    dirs.iter()
                        .map(|d| format!("{d}/"))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        [one] => {
            notes.push(format!(
                "manifests: kustomize {} (the one kustomization no other uses)",
                one.dir
            ));
            manifests_yaml = format!("manifests:\n  - kustomize: {}\n", one.dir);
        }
        [first, rest @ ..] => {
            notes.push(format!(
                "manifests: kustomize {} (first of {} overlays no other kustomization uses); the others are profiles: berth render --profile NAME",
                first.dir,
                rest.len() + 1
            ));
            manifests_yaml = format!("manifests:\n  - kustomize: {}\n", first.dir);
            profiles_yaml.push_str("profiles:\n");
            let mut names: Vec<String> = Vec::new();
            for k in &leaves {
                let mut name = component_name(&k.dir.replace('/', "-"));
                name = name.replace(['_', '.'], "-");
                let base = k.dir.rsplit('/').next().unwrap_or(&k.dir);
                let short = component_name(base);
                if !names.contains(&short)
                    && leaves
                        .iter()
                        .filter(|o| o.dir.rsplit('/').next() == Some(base))
                        .count()
                        == 1
                {
                    name = short;
                }
                names.push(name.clone());
                profiles_yaml.push_str(&format!("  {name}:\n    - kustomize: {}\n", k.dir));
            }
        }
    }
    // --- images: pod containers of every manifest, and kustomizations' images: entries.
    let mut vars: BTreeMap<String, String> = BTreeMap::new();
    let mut defined: Vec<(String, String, String)> = Vec::new(); // name, expanded, at
    for var in &facts.make_vars {
        let value = expand(var.value.trim(), &vars);
        vars.insert(var.name.clone(), value.clone());
        defined.push((var.name.clone(), value, var.at.clone()));
    }
    let renamed: BTreeMap<String, (Option<String>, Option<String>)> = facts
        .kustomizations
        .iter()
        .flat_map(|k| {
            k.images
                .iter()
                .map(|(n, nn, nt)| (n.clone(), (nn.clone(), nt.clone())))
        })
        .collect();
    let mut found: Vec<Found> = Vec::new();
    let mut placeholders: Vec<(String, String)> = Vec::new(); // variable, at
    for (path, text) in &facts.manifests {
        let Ok(docs) = berth_yaml::load_all(text, Limits::default()) else {
            notes.push(format!("{path}: not valid YAML, skipped"));
            continue;
        };
        for mut doc in docs {
            let kind = doc
                .get("kind")
                .and_then(Node::as_str)
                .unwrap_or_default()
                .to_string();
            let mut images: Vec<(String, String)> = Vec::new();
            crate::render::pods::for_each_pod(&mut doc, &kind, &mut |mut pod| {
                if let Some(spec) = pod.spec() {
                    crate::render::pods::for_each_container(spec, &mut |container| {
                        if let Some(image) = container.get("image") {
                            if let Some(text) = image.as_str() {
                                images.push((text.to_string(), format!("{path}:{}", image.pos)));
                            }
                        }
                    });
                }
            });
            for (text, at) in images {
                if let Some(var) = text.strip_prefix("${").and_then(|t| t.strip_suffix('}')) {
                    placeholders.push((var.to_string(), at));
                    continue;
                }
                let Ok(mut reference) = Reference::parse(&text) else {
                    continue;
                };
                // kustomize's images: rewrite the name the manifest uses.
                let bare = text.split([':', '@']).next().unwrap_or(&text).to_string();
                if let Some((new_name, new_tag)) = renamed.get(&bare) {
                    let rewritten = format!(
                        "{}:{}",
                        new_name.clone().unwrap_or(bare.clone()),
                        new_tag
                            .clone()
                            .or(reference.tag().map(|t| t.to_string()))
                            .unwrap_or_else(|| "latest".into())
                    );
                    if let Ok(r) = Reference::parse(&rewritten) {
                        reference = r;
                    }
                }
                found.push(Found { reference, at });
            }
        }
    }
    // A placeholder's image comes from the Makefile variable of that name.
    for (var, at) in &placeholders {
        if let Some((_, value, _)) = defined.iter().find(|(n, _, _)| n == var) {
            if let Ok(reference) = Reference::parse(value) {
                found.push(Found {
                    reference,
                    at: at.clone(),
                });
            }
        }
    }
    // --- the project's registry: the owner most images share.
    let mut owners: BTreeMap<String, usize> = BTreeMap::new();
    for f in &found {
        *owners.entry(owner(&f.reference)).or_default() += 1;
    }
    let registry_var = defined
        .iter()
        .find(|(n, _, _)| n == "IMAGE_REGISTRY" || n == "REGISTRY")
        .map(|(n, v, at)| (n.clone(), v.clone(), at.clone()));
    // IMAGE_REGISTRY's value, else the owner of IMAGE_TAG_BASE or IMG (operator-sdk),
    // else the owner most images share.
    let made = ["IMAGE_TAG_BASE", "IMG"].iter().find_map(|name| {
        let (_, value, _) = defined.iter().find(|(n, _, _)| n == name)?;
        Reference::parse(value).ok().map(|r| owner(&r))
    });
    let project_owner = registry_var
        .as_ref()
        .map(|(_, v, _)| v.trim_end_matches('/').to_string())
        .filter(|v| !v.is_empty())
        .or(made)
        .or_else(|| {
            owners
                .iter()
                .max_by_key(|(o, n)| (**n, std::cmp::Reverse((*o).clone())))
                .map(|(o, _)| o.clone())
        });
    // --- components: one per repository, in the order first seen.
    let mut by_repo: Vec<(String, Vec<&Found>)> = Vec::new();
    for f in &found {
        let repo = f.reference.repository().to_string();
        match by_repo.iter_mut().find(|(r, _)| *r == repo) {
            Some((_, all)) => all.push(f),
            None => by_repo.push((repo, vec![f])),
        }
    }
    let mut images_yaml = String::new();
    let mut names: Vec<String> = Vec::new();
    let tag_base = defined.iter().find(|(n, _, _)| n == "IMAGE_TAG_BASE");
    for (repo, all) in &by_repo {
        // The tag most places carry (the first on a tie).
        let mut tags: Vec<(String, usize)> = Vec::new();
        for f in all {
            let t = f.reference.to_string();
            match tags.iter_mut().find(|(x, _)| *x == t) {
                Some((_, n)) => *n += 1,
                None => tags.push((t, 1)),
            }
        }
        let image = tags
            .iter()
            .max_by_key(|(_, n)| *n)
            .map(|(t, _)| t.clone())
            .unwrap_or_default();
        let variable = defined.iter().find(|(n, v, _)| {
            (n.ends_with("_IMAGE") || n == "IMG")
                && Reference::parse(v).is_ok_and(|r| r.repository().to_string() == *repo)
        });
        let mut name = match variable {
            Some((n, _, _)) if n != "IMG" => component_name(n),
            _ => component_name(repo.rsplit('/').next().unwrap_or(repo)),
        };
        while names.contains(&name) {
            name.push_str("-2");
        }
        names.push(name.clone());
        // Not under the project's registry (another registry or organisation).
        let third_party = project_owner
            .as_ref()
            .is_some_and(|o| !repo.starts_with(&format!("{o}/")));
        let mut entry = format!("  {name}:\n    image: {image}\n");
        let mut why = format!("component `{name}`: {image} ({}", all[0].at);
        if let Some((var, _, at)) = variable {
            entry.push_str(&format!("    env: {var}\n"));
            why.push_str(&format!("; {var} from {at}"));
            // The tag variable: what the raw value ends in (`:$(EPP_TAG)`), else NAME_TAG.
            let raw = facts
                .make_vars
                .iter()
                .rev()
                .find(|v| v.name == *var)
                .map(|v| v.value.trim().to_string())
                .unwrap_or_default();
            let from_value = raw
                .rsplit_once(':')
                .map(|(_, t)| {
                    t.trim_start_matches("$(")
                        .trim_start_matches("${")
                        .trim_end_matches([')', '}'])
                        .to_string()
                })
                .filter(|_| raw.ends_with(')') || raw.ends_with('}'))
                .filter(|t| t.ends_with("TAG") || t.ends_with("VERSION"));
            let tag_var =
                from_value.unwrap_or_else(|| format!("{}_TAG", var.trim_end_matches("_IMAGE")));
            if let Some((t, _, at)) = defined.iter().find(|(n, _, _)| *n == tag_var) {
                entry.push_str(&format!("    tagEnv: {t}\n"));
                why.push_str(&format!("; {t} from {at}"));
            }
        }
        if let Some((_, base, at)) = tag_base {
            if Reference::parse(base).is_ok_and(|b| b.repository().to_string() == *repo) {
                entry.push_str("    repositoryEnv: IMAGE_TAG_BASE\n");
                why.push_str(&format!("; IMAGE_TAG_BASE from {at}"));
            }
        }
        if third_party {
            entry.push_str("    registry: false\n");
            why.push_str(
                "; third-party: not under the project's registry, so IMAGE_REGISTRY leaves it",
            );
        }
        why.push(')');
        notes.push(why);
        images_yaml.push_str(&entry);
    }
    if by_repo.is_empty() {
        notes.push("images: none found in the manifests' pods; add `images:` by hand".into());
    }
    // --- the file.
    let mut yaml = String::from("# Written by `berth init`; every key is in docs/berth-yaml.md.\n");
    yaml.push_str(&format!("name: {}\n", project_name(&facts.name)));
    yaml.push_str(&manifests_yaml);
    yaml.push_str(&profiles_yaml);
    if !images_yaml.is_empty() {
        yaml.push_str("images:\n");
        yaml.push_str(&images_yaml);
        let (var, why) = match &registry_var {
            Some((n, _, at)) => (n.clone(), format!("registry: {n} (from {at}) moves the project's images")),
            None => ("IMAGE_REGISTRY".to_string(), "registry: IMAGE_REGISTRY moves the project's images (no registry variable in the Makefile)".to_string()),
        };
        yaml.push_str(&format!("registry:\n  env: {var}\n"));
        notes.push(why);
    }
    Plan { yaml, notes }
}

/// `a/./b/../c` → `a/c`, for comparing kustomization paths.
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

/// The first directory of a relative path (`deploy/a/b.yaml` → `deploy`), or
/// `.` for a file at the top.
fn top_dir(path: &str) -> String {
    match path.split_once('/') {
        Some((dir, _)) => dir.to_string(),
        None => ".".to_string(),
    }
}

/// A DNS label from a directory name.
fn project_name(dir: &str) -> String {
    let name: String = dir
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let name = name.trim_matches('-');
    if name.is_empty() {
        "project".into()
    } else {
        name.chars().take(63).collect()
    }
}

/// The `NAME ?= value` lines of a Makefile (`?=`, `:=`, `::=`, `=`), with
/// `Makefile:N` as where; recipe lines and conditionals are skipped.
pub fn make_vars(file: &str, text: &str) -> Vec<MakeVar> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.starts_with('\t') || line.trim_start().starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some(eq) = line.find('=') else { continue };
        let (left, value) = (&line[..eq], &line[eq + 1..]);
        let name = left.trim_end_matches([':', '?', '+', '!']).trim();
        let valid = !name.is_empty()
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            && !left
                .trim_end_matches([':', '?', '+', '!'])
                .trim_end()
                .contains(' ');
        if valid && !left.ends_with('+') {
            let value = value.split(" #").next().unwrap_or(value).trim().to_string();
            out.push(MakeVar {
                name: name.to_string(),
                value,
                at: format!("{file}:{}", n + 1),
            });
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn make_variables_are_read_and_expanded() {
        let vars = make_vars(
            "Makefile",
            "VERSION ?= 0.0.1\nIMAGE_TAG_BASE ?= example.com/memcached-operator\nIMG ?= $(IMAGE_TAG_BASE):v$(VERSION)\nall:\n\techo IMG=x\nA += b\n",
        );
        let names: Vec<&str> = vars.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["VERSION", "IMAGE_TAG_BASE", "IMG"]);
        let mut map = BTreeMap::new();
        for v in &vars {
            let value = expand(&v.value, &map);
            map.insert(v.name.clone(), value);
        }
        assert_eq!(map["IMG"], "example.com/memcached-operator:v0.0.1");
    }

    #[test]
    fn one_leaf_overlay_is_the_manifests_and_several_are_profiles() {
        let k = |dir: &str, resources: &[&str]| Kustomization {
            dir: dir.into(),
            resources: resources.iter().map(|r| r.to_string()).collect(),
            images: Vec::new(),
        };
        let facts = Facts {
            name: "Katib".into(),
            kustomizations: vec![
                k("base", &["a.yaml"]),
                k("overlays/dev", &["../../base"]),
                k("overlays/release", &["../../base"]),
            ],
            ..Facts::default()
        };
        let plan = plan(&facts);
        assert!(plan.yaml.contains("name: katib\nmanifests:\n  - kustomize: overlays/dev\nprofiles:\n  dev:\n    - kustomize: overlays/dev\n  release:\n    - kustomize: overlays/release\n"), "{}", plan.yaml);
    }
}
