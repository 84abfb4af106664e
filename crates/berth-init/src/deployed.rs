//! The variable make deploys a component's image from, when no variable's
//! value names it: a deploy recipe's `kustomize edit set image NAME=$(VAR)` on
//! the kustomization that renames NAME to the component's repository (Kueue's
//! `prepare-manifests` sets `controller=$(IMAGE_TAG)`, a value make computes
//! from `$(shell git describe)`).

use berth_core::kustomization::{ImageEdit, Kustomization as Read};
use berth_make::Makefiles;
use berth_ref::Reference;

use super::{Facts, Proposed};

/// Gives each component that has no `env:` yet the variable a deploy recipe
/// sets its image from, when exactly one does and no other component has it;
/// says so in `notes`. make may keep its own value over the environment
/// (`IMAGE_TAG := …`): `berth validate` then names that line, which is the
/// disagreement to fix, rather than berth watching another variable.
pub(super) fn link(facts: &Facts, images: &mut [Proposed], notes: &mut Vec<String>) {
    let makefiles = Makefiles {
        vars: facts.make_vars.clone(),
        texts: facts.make_texts.clone(),
    };
    let read = |dir: &str| {
        let k = facts
            .kustomizations
            .iter()
            .find(|k| super::normalize(&k.dir) == dir)?;
        let images = (k.images.iter())
            .map(|(name, new_name, new_tag)| ImageEdit {
                name: name.clone(),
                new_name: new_name.clone(),
                new_tag: new_tag.clone(),
                digest: None,
                pos: berth_yaml::Pos::default(),
            })
            .collect();
        Some(Read {
            bases: k.resources.clone(),
            images,
            ..Read::default()
        })
    };
    let edits = berth_make::deploy_edits(&makefiles, &read);
    let linked: Vec<(String, &berth_make::DeployEdit, &str)> = (edits.iter())
        .filter_map(|e| {
            let var = e.variable()?;
            let repositories = e.repositories(&makefiles, read(&e.dir).as_ref());
            Some(repositories.into_iter().map(move |r| (r, e, var)))
        })
        .flatten()
        .collect();
    let taken: Vec<String> = images.iter().filter_map(|c| c.env.clone()).collect();
    for c in images.iter_mut().filter(|c| c.env.is_none()) {
        let Ok(repository) = Reference::parse(&c.image).map(|r| r.repository().to_string()) else {
            continue;
        };
        let mut vars = linked.iter().filter(|(r, _, _)| *r == repository);
        let Some((_, edit, var)) = vars.next() else {
            continue;
        };
        let several = linked.iter().any(|(r, _, v)| v == var && *r != repository);
        if several || vars.any(|(_, _, v)| v != var) || taken.iter().any(|t| t == var) {
            continue;
        }
        let through = match edit.target == edit.deploy {
            true => String::new(),
            false => format!(" (through `{}`)", edit.target),
        };
        let why = format!(
            "{var}: `make {}`{through} sets its image from it ({})",
            edit.deploy, edit.at
        );
        notes.push(format!("component `{}`: env {why}", c.name));
        c.why.push_str(&format!("; {why}"));
        c.env = Some(var.to_string());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::{propose, Facts, Kustomization};

    /// Kueue's shape: `make deploy` needs `prepare-manifests`, which sets the
    /// manager's image from `$(IMAGE_TAG)` (make's `:=`, computed from
    /// `$(shell git describe)`), and the add-on it also edits is not deployed.
    fn facts(makefile: &str) -> Facts {
        let k = |dir: &str, resources: &[&str], image: Option<&str>| Kustomization {
            dir: dir.into(),
            resources: resources.iter().map(|r| r.to_string()).collect(),
            images: (image.into_iter())
                .map(|i| ("controller".into(), Some(i.into()), Some("main".into())))
                .collect(),
        };
        let manager = |name: &str| {
            format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}}}\nspec:\n  template:\n    spec:\n      containers:\n      - name: manager\n        image: controller:latest\n")
        };
        Facts {
            name: "kq".into(),
            kustomizations: vec![
                k("config/default", &["../manager"], None),
                k("config/manager", &["manager.yaml"], Some("quay.io/kq/kq")),
                k("addon/config", &["manager.yaml"], Some("quay.io/kq/addon")),
            ],
            manifests: vec![
                ("config/manager/manager.yaml".into(), manager("kq")),
                ("addon/config/manager.yaml".into(), manager("addon")),
            ],
            make_vars: crate::make_vars("Makefile", makefile),
            make_texts: vec![("Makefile".into(), makefile.into())],
            ..Facts::default()
        }
    }

    #[test]
    fn the_variable_a_deploy_recipe_sets_the_image_from_is_the_components() {
        let makefile = "GIT_TAG ?= $(shell git describe --tags)\nIMAGE_TAG := quay.io/kq/kq:$(GIT_TAG)\nADDON_TAG := quay.io/kq/addon:$(GIT_TAG)\ndeploy: prepare-manifests\n\tkubectl apply --server-side -k config/default\nprepare-manifests:\n\tcd config/manager && $(KUSTOMIZE) edit set image controller=$(IMAGE_TAG)\n\tcd addon/config && $(KUSTOMIZE) edit set image controller=$(ADDON_TAG)\n";
        let proposal = propose(&facts(makefile));
        let envs: Vec<(&str, Option<&str>)> = (proposal.components.iter())
            .map(|c| (c.name.as_str(), c.env.as_deref()))
            .collect();
        assert_eq!(
            envs,
            [("kq", Some("IMAGE_TAG")), ("addon", None)],
            "{:#?}",
            proposal.notes
        );
        assert!(proposal.notes.contains(&"component `kq`: env IMAGE_TAG: `make deploy` (through `prepare-manifests`) sets its image from it (Makefile:7)".to_string()), "{:#?}", proposal.notes);
        assert!(proposal
            .to_yaml()
            .contains("  kq:\n    image: quay.io/kq/kq:main\n    env: IMAGE_TAG\n"));
        let unlinked = |makefile: &str| {
            let proposal = propose(&facts(makefile));
            proposal.components.iter().all(|c| c.env.is_none())
        };
        // One variable for two components' images stands for neither.
        let shared = makefile.replace("$(ADDON_TAG)", "$(IMAGE_TAG)").replace(
            "-k config/default",
            "-k config/default && kubectl apply -k addon/config",
        );
        assert!(unlinked(&shared));
        // A recipe that only releases (no apply) links nothing.
        let release = makefile.replace(
            "deploy: prepare-manifests\n\tkubectl apply --server-side -k config/default\n",
            "",
        );
        assert!(unlinked(&release));
    }
}
