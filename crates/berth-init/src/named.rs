//! What init learns from name-only image variables (KServe's
//! `CONTROLLER_IMG ?= kserve-controller`, built as
//! `${KO_DOCKER_REPO}/${CONTROLLER_IMG}:${TAG}`): the registry variable make
//! puts before them, the shared tag variable it appends, and which component
//! each stands for. Such a variable never becomes a component's `env:` — it
//! holds a name, not a reference.

use berth_make::{composed, NameOnly};

/// The registry variable the most name-only variables are composed with, and
/// the note that says so.
pub(super) fn registry(named: &[NameOnly]) -> Option<(String, String)> {
    let mut counts: Vec<(&str, usize, &NameOnly)> = Vec::new();
    for n in named {
        let Some(r) = n.registry.as_deref() else {
            continue;
        };
        match counts.iter_mut().find(|(x, _, _)| *x == r) {
            Some((_, count, _)) => *count += 1,
            None => counts.push((r, 1, n)),
        }
    }
    let (var, _, first) = counts
        .iter()
        .enumerate()
        .max_by_key(|(i, (_, count, _))| (*count, std::cmp::Reverse(*i)))
        .map(|(_, entry)| *entry)?;
    let note = format!(
        "registry: {var} moves the project's images (make builds {}, {})",
        composed(first),
        first.at
    );
    Some((var.to_string(), note))
}

/// An image make builds (`-t $(BUNDLE_IMG)`, with its `file:line`) that
/// names no variable of `vars` (the components' `env:`/`repositoryEnv:`, the
/// name-only variables): a registry variable berth invents would move the
/// components and leave that image behind (the OGX operator's bundle).
pub(super) fn left_behind<'t>(
    built: &'t [(String, berth_core::Place)],
    vars: &[&str],
) -> Option<&'t (String, berth_core::Place)> {
    built.iter().find(|(image, _)| {
        !vars
            .iter()
            .any(|v| image.contains(&format!("$({v})")) || image.contains(&format!("${{{v}}}")))
    })
}

/// The shared tag variable make appends to name-only images (`:${TAG}`), when
/// the Makefile defines it (`TAG ?= latest`), and the note that says so.
pub(super) fn tag(
    named: &[NameOnly],
    defined: &[(String, String, String)],
) -> Option<(String, String)> {
    let n = named.iter().find(|n| n.tag.is_some())?;
    let var = n.tag.as_deref()?;
    let (_, value, at) = defined.iter().find(|(name, _, _)| name == var)?;
    let note = format!(
        "tag: {var} (`{var} ?= {value}`, {at}) is the tag make gives its images ({}); components outside the project's registry keep theirs",
        composed(n)
    );
    Some((var.to_string(), note))
}

/// The name-only variable that stands for repository `repo` (its last path
/// component is the variable's value).
pub(super) fn of_repository<'n>(named: &'n [NameOnly], repo: &str) -> Option<&'n NameOnly> {
    let last = repo.rsplit('/').next().unwrap_or(repo);
    named.iter().find(|n| n.name == last)
}

/// The note for a component found through a name-only variable.
pub(super) fn note(n: &NameOnly, env: &str) -> String {
    let tagless = if n.tag.is_none() {
        ", without a tag"
    } else {
        ""
    };
    format!(
        "; `{} ?= {}` ({}) names its last path component only (make builds {}{tagless}), so berth reads the whole reference from {env} and leaves {} to make",
        n.var,
        n.name,
        n.at,
        composed(n),
        n.var
    )
}

/// The default image of a component make builds under the shared tag
/// (`TAG ?= latest`): `image` with make's tag, when that differs, and the note.
pub(super) fn made_tag(
    n: &NameOnly,
    shared: Option<&(String, String, String)>,
    image: &str,
) -> Option<(String, String)> {
    let (var, value, at) = shared?;
    let reference = berth_ref::Reference::parse(image).ok()?;
    if value.is_empty()
        || value.contains('$')
        || reference.tag().is_some_and(|t| t.to_string() == *value)
    {
        return None;
    }
    let made = berth_ref::Reference::parse(&format!("{}:{value}", reference.repository())).ok()?;
    let note = format!(
        "; the tag is make's `{var} ?= {value}` ({at}), the shared tag of {}",
        n.var
    );
    Some((made.to_string(), note))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::{propose, Chart, Facts, Kustomization};
    use berth_make::make_vars;

    const IMAGES_ENV: &str = "TAG ?= latest\nCONTROLLER_IMG ?= kserve-controller\nHUGGINGFACE_IMG ?= huggingfaceserver\nGRPC_IMG ?= custom-model-grpc\nGRPC_IMG_TAG ?= ${KO_DOCKER_REPO}/${GRPC_IMG}:${TAG}\n";
    const MAKEFILE: &str = "include kserve-images.env\ndeploy:\n\tkubectl apply --server-side=true -k config/crd/full\n\tkubectl apply --server-side=true -k config/default\ndocker-build:\n\tdocker build . -t ${KO_DOCKER_REPO}/${CONTROLLER_IMG}\n\tdocker build . -t ${KO_DOCKER_REPO}/${HUGGINGFACE_IMG}\n";

    fn pod(image: &str) -> String {
        format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  containers: [{{name: c, image: '{image}'}}]\n")
    }

    /// KServe's shape: name-only `*_IMG` variables in an included file, composed
    /// with `${KO_DOCKER_REPO}` and `${TAG}`; the Makefile applies `config/default`,
    /// which overlays build on; a runtime in `:latest` and `:latest-gpu`; a chart
    /// whose values say `{image: kserve/…, tag: ''}` and whose appVersion is not
    /// the tag the manifests carry.
    #[test]
    fn kserves_shape_gets_its_registry_tag_main_manifests_and_variants_right() {
        let k = Kustomization::with;
        let facts = Facts {
            name: "kserve".into(),
            kustomizations: vec![
                k("config/crd/full", &["crd.yaml"]),
                k("config/default", &["manager.yaml", "runtimes.yaml"]),
                k("config/overlays/development", &["../../default"]),
            ],
            manifests: vec![
                (
                    "config/default/manager.yaml".into(),
                    pod("kserve/kserve-controller:latest"),
                ),
                (
                    "config/default/runtimes.yaml".into(),
                    format!(
                        "{}---\n{}",
                        pod("kserve/huggingfaceserver:latest-gpu"),
                        pod("kserve/huggingfaceserver:latest")
                    ),
                ),
            ],
            charts: vec![Chart {
                dir: "charts/kserve".into(),
                name: "kserve".into(),
                app_version: Some("v0.20.0".into()),
                values: Some(
                    "kserve:\n  controller: {image: kserve/kserve-controller, tag: ''}\n".into(),
                ),
                ..Chart::default()
            }],
            make_vars: [
                make_vars("Makefile", MAKEFILE),
                make_vars("kserve-images.env", IMAGES_ENV),
            ]
            .concat(),
            make_texts: vec![
                ("Makefile".into(), MAKEFILE.into()),
                ("kserve-images.env".into(), IMAGES_ENV.into()),
            ],
            ..Facts::default()
        };
        let plan = propose(&facts);
        let yaml = &plan.to_yaml();
        assert!(
            yaml.contains("manifests:\n- kustomize: config/default\n"),
            "{yaml}"
        );
        assert!(
            yaml.contains("  controller:\n    image: docker.io/kserve/kserve-controller:latest\n    helmValues:\n      repository: kserve.controller.image\n      tag: kserve.controller.tag\n"),
            "{yaml}"
        );
        assert!(
            yaml.contains("  huggingface:\n    image: docker.io/kserve/huggingfaceserver:latest\n    tagSuffix: true\n"),
            "{yaml}"
        );
        assert!(
            yaml.contains("registry:\n  env: KO_DOCKER_REPO\ntag:\n  env: TAG\n"),
            "{yaml}"
        );
        // The name-only variable is make's, never the component's `env:`.
        assert!(!yaml.contains("env: CONTROLLER_IMG"), "{yaml}");
        let notes = plan.notes.join("\n");
        for expected in [
            "manifests: kustomize config/default (the Makefile applies it, Makefile:4)",
            "`CONTROLLER_IMG ?= kserve-controller` (kserve-images.env:2) names its last path component only (make builds `${KO_DOCKER_REPO}/${CONTROLLER_IMG}`, without a tag), so berth reads the whole reference from CONTROLLER_IMAGE and leaves CONTROLLER_IMG to make",
            "registry: KO_DOCKER_REPO moves the project's images (make builds `${KO_DOCKER_REPO}/${CONTROLLER_IMG}`, kserve-images.env:2)",
            "tag: TAG (`TAG ?= latest`, kserve-images.env:1) is the tag make gives its images",
        ] {
            assert!(notes.contains(expected), "{expected}\n---\n{notes}");
        }
    }
}
