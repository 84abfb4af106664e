//! Which manifests a first berth.yaml renders: the kustomizations no other one
//! uses (built first by the CLI; those that fail are left out), else the
//! directories of Kubernetes YAML, and the repository's Helm charts.

use std::collections::BTreeSet;

use berth_yaml::Node;

use super::names::profile_name;
use super::{charts, normalize, Chart, Facts, Kustomization, Source};

/// Each chart as a `helm:` source, in `manifests:` and in every profile.
pub(super) fn add_charts(
    facts: &Facts,
    manifests: &mut Vec<Source>,
    profiles: &mut Vec<(String, Vec<Source>)>,
    notes: &mut Vec<String>,
) {
    // A library chart renders nothing by itself: the charts that depend on it do.
    // One helm refuses with its own values would be a profile that fails.
    for (dir, why) in &facts.unrenderable {
        notes.push(format!("left out chart {dir}: `helm template` refuses its own values ({why}); add it by hand as a profile with `values:` that give what it requires, and `helmValues:` for the images it sets"));
    }
    let unrenderable = |c: &Chart| facts.unrenderable.iter().any(|(d, _)| *d == c.dir);
    let charts: Vec<&Chart> = (facts.charts.iter())
        .filter(|c| !c.library && !unrenderable(c))
        .collect();
    let Some(first) = charts.first() else {
        return;
    };
    // Without other manifests the first chart is `manifests:`; with them, or with
    // several charts (a repository's charts are alternatives, such as a router
    // with or without a gateway), each chart is a profile of its own.
    if manifests.is_empty() {
        *manifests = vec![charts::source(first)];
    }
    let alone = profiles.is_empty() && charts.len() == 1 && manifests.len() == 1;
    if !alone {
        // Distinct from the kustomize profiles and from each other (two charts of one name).
        let mut taken: Vec<String> = profiles.iter().map(|(name, _)| name.clone()).collect();
        for chart in &charts {
            let name = profile_name(&charts::release_name(&chart.name), &taken);
            taken.push(name.clone());
            profiles.push((name, vec![charts::source(chart)]));
        }
    }
    let dirs: Vec<&str> = charts.iter().map(|c| c.dir.as_str()).collect();
    notes.push(format!(
        "helm {} (rendered with `helm template`; berth sets the image values each component's `helmValues:` names){}",
        dirs.join(", "),
        if alone { "" } else { "; each chart is a profile: berth render --profile NAME" }
    ));
}

/// The kustomizations that could become `manifests:` or a profile: those no
/// other one uses (leaves), operator-sdk's bundle input (`config/manifests`,
/// which builds only after `make bundle`), scorecard and CR samples left out,
/// in the order init proposes them — overlays and environments first, kustomize
/// components later, CRDs alone (`config/crd`) last. The CLI builds each before
/// init decides ([`Facts::unbuildable`]).
pub fn candidates(facts: &Facts) -> Vec<&Kustomization> {
    let deployable: Vec<&Kustomization> = facts
        .kustomizations
        .iter()
        .filter(|k| !bundle_input(&k.dir))
        .collect();
    let used: Vec<String> = deployable
        .iter()
        .flat_map(|k| {
            k.resources
                .iter()
                .map(move |r| normalize(&format!("{}/{r}", k.dir)))
        })
        .collect();
    // What the Makefile applies is deployed, whether or not an overlay builds on it.
    let applied = applied_by_make(facts);
    let applied_at = |dir: &str| applied.iter().position(|(d, _)| *d == normalize(dir));
    let mut leaves: Vec<&Kustomization> = deployable
        .iter()
        .copied()
        .filter(|k| !used.contains(&normalize(&k.dir)) || applied_at(&k.dir).is_some())
        .collect();
    leaves.sort_by_key(|k| {
        let crds = rank(&k.dir) == 3;
        let applied = applied_at(&k.dir).unwrap_or(usize::MAX);
        (
            crds,
            applied,
            for_development(&k.dir),
            rank(&k.dir),
            k.dir.clone(),
        )
    });
    leaves
}

/// The kustomization directories the Makefiles apply or build, in the order
/// written, with where: `kubectl apply -k DIR`, `--kustomize DIR`,
/// `kustomize build DIR` (`$(KUSTOMIZE) build $(CONFIG_DIR)/default` too: make's
/// variables expanded as their definitions say). A directory whose variables
/// cannot be expanded is left out.
pub(super) fn applied_by_make(facts: &Facts) -> Vec<(String, String)> {
    let defs = berth_make::Defs::new(&facts.make_vars);
    let mut out: Vec<(String, String)> = Vec::new();
    for (file, text) in &facts.make_texts {
        for (n, line) in text.lines().enumerate() {
            for dir in berth_make::kustomize_dirs(line) {
                // Every variable defined (make would expand an undefined one to nothing).
                let defined = dir.split('$').skip(1).all(|after| {
                    let name = after
                        .trim_start_matches(['(', '{'])
                        .split([')', '}'])
                        .next()
                        .unwrap_or("");
                    defs.get(name).is_some()
                });
                let expanded = defs
                    .expand(dir)
                    .ok()
                    .filter(|d| defined && !d.contains('$'));
                let Some(dir) = expanded else {
                    continue;
                };
                let dir = normalize(dir.trim_end_matches('/'));
                if !dir.is_empty() && !out.iter().any(|(d, _)| *d == dir) {
                    out.push((dir, format!("{file}:{}", n + 1)));
                }
            }
        }
    }
    out
}

/// The kustomizations no other one uses ([`candidates`]) but those that do not
/// build here, each named in `notes` — unless none builds: then all are kept.
fn buildable_leaves<'f>(facts: &'f Facts, notes: &mut Vec<String>) -> Vec<&'f Kustomization> {
    let mut leaves = candidates(facts);
    let unbuilt = |k: &Kustomization| facts.unbuildable.iter().any(|(d, _)| *d == k.dir);
    let none_builds = !leaves.is_empty() && leaves.iter().all(|k| unbuilt(k));
    for (dir, why) in &facts.unbuildable {
        let kept = none_builds && leaves.iter().any(|k| k.dir == *dir);
        notes.push(match kept {
            true => format!("kustomization {dir} does not build here ({why}); kept all the same: no top-level kustomization builds here, and they are what the project deploys (`berth validate` passes once it builds)"),
            false => format!("left out kustomization {dir}: it does not build here ({why})"),
        });
    }
    if !none_builds {
        leaves.retain(|k| !unbuilt(k));
    }
    leaves
}

/// `manifests:` (the kustomizations no other one uses, else YAML directories) and,
/// for several such overlays, `profiles:`.
pub(super) fn manifests_and_profiles(
    facts: &Facts,
    notes: &mut Vec<String>,
) -> (Vec<Source>, Vec<(String, Vec<Source>)>) {
    // --- manifests: the kustomizations no other one uses, else YAML directories;
    // one that does not build (it needs the network, a generated file) is left out,
    // unless none builds: then they are what the project deploys, once they build
    // (Kubeflow Trainer's overlays fetch JobSet's release; a machine without the
    // network cannot build them, and its loose YAML is examples, not the project).
    let mut leaves = buildable_leaves(facts, notes);
    if let Some(widest) = widest(facts, &leaves) {
        let chosen = leaves.remove(widest);
        leaves.insert(0, chosen);
    }
    let mut manifests: Vec<Source> = Vec::new();
    let mut profiles: Vec<(String, Vec<Source>)> = Vec::new();
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
                // Examples and development scripts' YAML is no deployment of the project.
                .filter(|d| !["examples", "example", "hack"].contains(&d.as_str()))
                .collect();
            dirs.sort();
            dirs.dedup();
            if dirs.is_empty() {
                // A chart alone is `manifests:` ([`add_charts`]).
                if facts.charts.iter().all(|c| c.library) {
                    notes.push("manifests: none found (no kustomization.yaml, no Helm chart, no YAML with apiVersion and kind); add `manifests:` by hand".into());
                }
            } else {
                notes.push(format!(
                    "manifests: {} (the directories that hold Kubernetes YAML)",
                    dirs.join(", ")
                ));
                manifests = dirs.iter().map(|d| Source::Dir(format!("{d}/"))).collect();
            }
        }
        [one] => {
            notes.push(format!(
                "manifests: kustomize {} ({})",
                one.dir,
                why_first(facts, &one.dir, "the one kustomization no other uses")
            ));
            manifests = vec![Source::Kustomize(one.dir.clone())];
        }
        [first, rest @ ..] => {
            let why = match first.dir == candidates(facts)[0].dir {
                true => format!(
                    "first of {} overlays no other kustomization uses",
                    rest.len() + 1
                ),
                false => format!(
                    "of {} overlays no other kustomization uses, the one that runs the most images",
                    rest.len() + 1
                ),
            };
            notes.push(format!(
                "manifests: kustomize {} ({}); the others are profiles: berth render --profile NAME",
                first.dir,
                why_first(facts, &first.dir, &why)
            ));
            manifests = vec![Source::Kustomize(first.dir.clone())];
            let mut names: Vec<String> = Vec::new();
            let crds = crds_profile(facts, &leaves, notes);
            if let Some((_, dirs)) = &crds {
                leaves.retain(|k| !dirs.contains(&k.dir) || k.dir == first.dir);
            }
            for k in &leaves {
                let base = k.dir.rsplit('/').next().unwrap_or(&k.dir);
                let unique_base = leaves
                    .iter()
                    .filter(|o| o.dir.rsplit('/').next() == Some(base))
                    .count()
                    == 1;
                // Its last directory when no other leaf ends so; else its path, shortened to
                // a DNS label and made distinct (#46 item 5: a long path aborted init).
                let name = profile_name(if unique_base { base } else { &k.dir }, &names);
                names.push(name.clone());
                profiles.push((name, vec![Source::Kustomize(k.dir.clone())]));
            }
            if let Some((together, _)) = crds {
                let name = profile_name("crds", &names);
                let together = together.iter().map(|d| Source::Kustomize(d.clone()));
                profiles.push((name, together.collect()));
            }
        }
    }
    (manifests, profiles)
}

/// Which leaf is `manifests:`: of those as likely as the first to be what the
/// project deploys (not CRDs only, as applied by make, as much for development),
/// the one whose build runs the most distinct images, the earliest of equals.
/// KFP's `base/metadata/overlays/db` (4 images) came before `env/plain` (19):
/// a part of the install is no default for `berth render`.
fn widest(facts: &Facts, leaves: &[&Kustomization]) -> Option<usize> {
    let first = leaves.first()?;
    let applied = applied_by_make(facts);
    let applies = |dir: &str| applied.iter().position(|(d, _)| *d == normalize(dir));
    let class = |k: &Kustomization| (rank(&k.dir) == 3, applies(&k.dir), for_development(&k.dir));
    let images = |k: &Kustomization| {
        let built = facts
            .built
            .as_ref()
            .and_then(|b| b.iter().find(|(d, _)| *d == k.dir));
        built.map_or(0, |(_, yaml)| images_run(yaml))
    };
    let mut best = (0, images(first));
    for (i, k) in leaves.iter().enumerate().skip(1) {
        if class(k) == class(first) && images(k) > best.1 {
            best = (i, images(k));
        }
    }
    Some(best.0)
}

/// How many distinct values of `image:` fields a build's YAML holds.
fn images_run(yaml: &str) -> usize {
    let values: BTreeSet<&str> = yaml
        .lines()
        .filter_map(|l| {
            l.trim_start()
                .trim_start_matches("- ")
                .strip_prefix("image:")
        })
        .map(|v| v.trim().trim_matches(['"', '\'']))
        .filter(|v| !v.is_empty())
        .collect();
    values.len()
}

/// The kustomizations whose build holds CustomResourceDefinitions only, as one
/// profile (#46 item 6: KServe had 12 such profiles of its 29): the first of
/// each set of CRD names, in candidate order; one whose CRDs another already
/// holds (`config/crd/minimal` beside `config/crd/full`) is an alternative,
/// left out with a note. `None` with fewer than two, or when nothing was built.
/// Returns the profile's directories and every CRD-only directory.
fn crds_profile(
    facts: &Facts,
    leaves: &[&Kustomization],
    notes: &mut Vec<String>,
) -> Option<(Vec<String>, Vec<String>)> {
    let built = facts.built.as_ref()?;
    let crd_only: Vec<(&str, BTreeSet<String>)> = leaves
        .iter()
        .filter_map(|k| {
            let (_, yaml) = built.iter().find(|(d, _)| *d == k.dir)?;
            crd_names(yaml).map(|names| (k.dir.as_str(), names))
        })
        .collect();
    if crd_only.len() < 2 {
        return None;
    }
    let mut together: Vec<String> = Vec::new();
    let mut held: BTreeSet<String> = BTreeSet::new();
    for (dir, names) in &crd_only {
        match together.iter().find(|t| crd_only.iter().any(|(d, n)| d == t && !n.is_disjoint(names))) {
            Some(other) => notes.push(format!("left out kustomization {dir}: CRDs only, and CRDs {other} holds too (an alternative: list it by hand in place of {other})")),
            None => {
                together.push(dir.to_string());
                held.extend(names.iter().cloned());
            }
        }
    }
    notes.push(format!(
        "profile crds: the {} kustomizations that hold CustomResourceDefinitions only ({} CRDs): {}",
        together.len(),
        held.len(),
        together.join(", ")
    ));
    let all = crd_only.iter().map(|(d, _)| d.to_string()).collect();
    Some((together, all))
}

/// The names of the CRDs `yaml` holds, when it holds nothing else.
fn crd_names(yaml: &str) -> Option<BTreeSet<String>> {
    let docs = berth_yaml::load_all(yaml, berth_yaml::Limits::default()).ok()?;
    let mut names = BTreeSet::new();
    for doc in docs.iter().filter(|d| !d.is_null()) {
        if doc.get("kind").and_then(Node::as_str) != Some("CustomResourceDefinition") {
            return None;
        }
        let name = doc
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Node::as_str)?;
        names.insert(name.to_string());
    }
    (!names.is_empty()).then_some(names)
}

/// Why `dir` is `manifests:`: the Makefile line that applies it, else `otherwise`.
fn why_first(facts: &Facts, dir: &str, otherwise: &str) -> String {
    match applied_by_make(facts)
        .into_iter()
        .find(|(d, _)| *d == normalize(dir))
    {
        Some((_, at)) => format!("the Makefile applies it, {at}"),
        None => otherwise.to_string(),
    }
}

/// operator-sdk's `config/manifests` (bundle input), `config/scorecard` and
/// `config/samples`: kustomizations a project does not deploy.
pub(super) fn bundle_input(dir: &str) -> bool {
    let dir = normalize(dir);
    ["config/manifests", "config/scorecard", "config/samples"]
        .iter()
        .any(|d| dir == *d || dir.ends_with(&format!("/{d}")))
}

/// Whether a kustomization is for development or tests by its directory's
/// name (`env/dev`, `overlays/test`, `kind`): a release overlay comes first,
/// and its tags are the defaults (KFP's `env/plain` says `2.16.0` where
/// `env/dev` says `master`).
fn for_development(dir: &str) -> bool {
    const DEVELOPMENT: &[&str] = &[
        "dev",
        "development",
        "test",
        "tests",
        "e2e",
        "kind",
        "local",
        "ci",
        "debug",
        "staging",
    ];
    dir.split('/').any(|part| {
        DEVELOPMENT.contains(&part)
            || part
                .split(['-', '_'])
                .any(|word| DEVELOPMENT.contains(&word))
    })
}

/// How likely a kustomization is the one a project deploys, by its directory
/// (lower first): under `overlays/` or `environments/` 0, others 1, under
/// `components/` 2, CRDs alone (`config/crd`, `config/crd/full`, `crds-gateway-api`) 3.
fn rank(dir: &str) -> u8 {
    let parts: Vec<&str> = dir.split('/').collect();
    if parts.iter().any(|p| p.contains("crd")) {
        3
    } else if parts.contains(&"components") {
        2
    } else if parts
        .iter()
        .any(|p| matches!(*p, "overlays" | "environments"))
    {
        0
    } else {
        1
    }
}

/// The first directory of a relative path (`deploy/a/b.yaml` → `deploy`), or
/// `.` for a file at the top.
fn top_dir(path: &str) -> String {
    match path.split_once('/') {
        Some((dir, _)) => dir.to_string(),
        None => ".".to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::{propose, Facts, Kustomization, Source};

    /// Kubeflow Trainer offline: both top-level overlays fetch a remote base.
    /// They are still what the project deploys; its examples' and scripts' YAML
    /// is not (it defines one object twice, and validate failed on it).
    #[test]
    fn when_no_top_level_kustomization_builds_they_are_kept_and_loose_yaml_is_not_read() {
        let k = Kustomization::with;
        let job = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n";
        let mut facts = Facts {
            name: "trainer".into(),
            kustomizations: vec![
                k("manifests/base", &["cm.yaml"]),
                k(
                    "manifests/overlays/platform",
                    &["../../base", "https://example.com/x.yaml"],
                ),
            ],
            manifests: vec![
                ("manifests/base/cm.yaml".into(), job.into()),
                ("examples/a.yaml".into(), job.into()),
                ("hack/b.yaml".into(), job.into()),
            ],
            unbuildable: vec![(
                "manifests/overlays/platform".into(),
                "it fetches a remote base".into(),
            )],
            ..Facts::default()
        };
        let proposal = propose(&facts);
        assert_eq!(
            proposal.manifests,
            [Source::Kustomize("manifests/overlays/platform".into())],
            "{:#?}",
            proposal.notes
        );
        // With no kustomization at all, loose YAML is the manifests, but examples' is not.
        facts.kustomizations.clear();
        facts.unbuildable.clear();
        let proposal = propose(&facts);
        assert_eq!(proposal.manifests, [Source::Dir("manifests/".into())]);
    }

    /// Kubeflow Pipelines: `base/metadata/overlays/db` (a part, under `overlays/`)
    /// came before `env/plain` (the install). Of leaves equally likely, the one
    /// whose build runs the most images is `manifests:`; a Makefile's choice and a
    /// development overlay's place stand, and unbuilt leaves keep their order.
    #[test]
    fn of_equally_likely_leaves_the_one_running_the_most_images_is_manifests() {
        let k = Kustomization::with;
        let pod = |images: &[&str]| {
            let containers: Vec<String> =
                images.iter().map(|i| format!("  - image: {i}\n")).collect();
            format!("kind: Pod\nspec:\n  containers:\n{}", containers.concat())
        };
        let leaves = [
            "kfp/base/metadata/overlays/db",
            "kfp/env/dev",
            "kfp/env/plain",
        ];
        let built = vec![
            (leaves[0].to_string(), pod(&["mysql:8", "envoy:1"])),
            (leaves[1].to_string(), pod(&["a:1", "b:1", "c:1", "d:1"])),
            (
                leaves[2].to_string(),
                pod(&["a:1", "b:1", "\"c:1\"", "c:1"]),
            ),
        ];
        let mut facts = Facts {
            name: "pipelines".into(),
            kustomizations: leaves.iter().map(|d| k(d, &[])).collect(),
            built: Some(built),
            ..Facts::default()
        };
        let first = |facts: &Facts| propose(facts).manifests[0].clone();
        assert_eq!(first(&facts), Source::Kustomize(leaves[2].into()));
        let notes = propose(&facts).notes.join("\n");
        assert!(
            notes.contains("the one that runs the most images"),
            "{notes}"
        );
        facts.make_texts = vec![(
            "Makefile".into(),
            "deploy:\n\tkubectl apply -k kfp/base/metadata/overlays/db\n".into(),
        )];
        assert_eq!(first(&facts), Source::Kustomize(leaves[0].into()));
        facts.make_texts.clear();
        facts.built = None;
        assert_eq!(first(&facts), Source::Kustomize(leaves[0].into()));
    }
}
