//! `berth init --check`: what init would write now, compared with the berth.yaml
//! a project keeps — a CI guard against drift between the Makefile, the
//! manifests and berth.yaml. Components are matched by repository (names are
//! the user's to choose); manifests and profiles are the user's to curate and
//! are not compared.

use berth_core::Project;
use berth_ref::Reference;

use crate::Proposal;

/// The differences that matter, one line each: a default image the repository
/// now says otherwise, a variable init would read that berth.yaml does not
/// name, an image the repository runs that no component claims.
pub fn differences(kept: &Project, proposed: &Proposal) -> Vec<String> {
    let mut out = Vec::new();
    for new in &proposed.components {
        // init writes only references it parsed.
        let Ok(image) = Reference::parse(&new.image) else {
            continue;
        };
        let repository = image.repository();
        let why = &new.why;
        let Some(old) = kept
            .components
            .iter()
            .find(|c| c.repositories.contains(repository) || c.image.repository() == repository)
        else {
            out.push(format!(
                "the repository runs `{image}` ({why}), which no component of {} claims; add it under `images:` (init would call it `{}`)",
                kept.file, new.name
            ));
            continue;
        };
        let at = format!("{}:{}", kept.file, old.image_pos);
        for variant in &new.variants {
            let claimed = Reference::parse(&variant.image)
                .is_ok_and(|r| old.repositories.contains(r.repository()));
            if !claimed {
                out.push(format!(
                    "{at}: the repository runs `{}` as a build of component `{}` ({why}), which its `variants:` do not name; add `{}: {{image: {}}}` under `images.{}.variants`",
                    variant.image, old.name, variant.name, variant.image, old.name
                ));
            }
        }
        if old.image.tag() != image.tag() && old.same_as.is_none() {
            out.push(format!(
                "{at}: component `{}` defaults to `{}`, but the repository now says `{image}` ({why}); update `images.{}.image`, or the source that moved",
                old.name, old.image, old.name
            ));
        }
        // A variable init names from the Makefile; one it leaves to berth's default is no news.
        for (what, old_var, new_var) in [
            ("env", &old.env, &new.env),
            ("tagEnv", &old.tag_env, &new.tag_env),
        ] {
            let Some(new_var) = new_var.as_ref().filter(|v| old_var != *v) else {
                continue;
            };
            if *new_var != default_for(&new.name, what) {
                out.push(format!(
                    "{at}: component `{}` reads `{old_var}`, but the Makefile names its {what} variable `{new_var}` ({why}); set `{what}: {new_var}`",
                    old.name
                ));
            }
        }
    }
    out
}

/// The default variable name init gives a component it named `name`.
fn default_for(name: &str, what: &str) -> String {
    let base = name.to_ascii_uppercase().replace('-', "_");
    match what {
        "env" => format!("{base}_IMAGE"),
        _ => format!("{base}_TAG"),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::Proposed;

    fn project(text: &str) -> Project {
        berth_core::project::parse("berth.yaml", std::path::PathBuf::from("/p"), text).unwrap()
    }

    fn proposed(name: &str, image: &str, env: Option<&str>, tag_env: Option<&str>) -> Proposed {
        Proposed {
            name: name.into(),
            image: image.into(),
            env: env.map(str::to_string),
            tag_env: tag_env.map(str::to_string),
            why: format!("deploy/d.yaml:3:14; {name}"),
            ..Proposed::default()
        }
    }

    #[test]
    fn drift_between_the_repository_and_berth_yaml_is_named() {
        let kept = project("name: r\nimages:\n  sidecar: {image: 'ghcr.io/llm-d/sidecar:0.0.5'}\n  epp: {image: 'ghcr.io/llm-d/epp:dev', env: EPP_IMAGE}\n");
        let components = vec![
            proposed(
                "sidecar",
                "ghcr.io/llm-d/sidecar:dev",
                Some("SIDECAR_IMAGE"),
                Some("SIDECAR_TAG"),
            ),
            proposed("epp", "ghcr.io/llm-d/epp:dev", Some("EPP_IMG"), None),
            proposed("coord", "ghcr.io/llm-d/coord:v1", None, None),
        ];
        let proposal = Proposal {
            name: "r".into(),
            components,
            ..Proposal::default()
        };
        let got = differences(&kept, &proposal);
        assert_eq!(got.len(), 3, "{got:#?}");
        assert_eq!(got[0], "berth.yaml:3:20: component `sidecar` defaults to `ghcr.io/llm-d/sidecar:0.0.5`, but the repository now says `ghcr.io/llm-d/sidecar:dev` (deploy/d.yaml:3:14; sidecar); update `images.sidecar.image`, or the source that moved");
        assert!(got[1].starts_with("berth.yaml:4:16: component `epp` reads `EPP_IMAGE`, but the Makefile names its env variable `EPP_IMG`"), "{}", got[1]);
        assert!(
            got[2].starts_with("the repository runs `ghcr.io/llm-d/coord:v1`"),
            "{}",
            got[2]
        );
        // A berth.yaml that agrees: nothing.
        let agrees = project("name: r\nimages:\n  sidecar: {image: 'ghcr.io/llm-d/sidecar:dev', env: SIDECAR_IMAGE, tagEnv: SIDECAR_TAG}\n  epp: {image: 'ghcr.io/llm-d/epp:dev', env: EPP_IMG}\n  coord: {image: 'ghcr.io/llm-d/coord:v1'}\n");
        assert!(differences(&agrees, &proposal).is_empty());
    }
}
