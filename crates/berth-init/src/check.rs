//! `berth init --check`: what init would write now, compared with the berth.yaml
//! a project keeps — a CI guard against drift between the Makefile, the
//! manifests and berth.yaml. Components are matched by repository (names are
//! the user's to choose); manifests and profiles are the user's to curate and
//! are not compared.

use berth_core::Project;

/// The differences that matter, one line each: a default image the repository
/// now says otherwise, a variable init would read that berth.yaml does not
/// name, an image the repository runs that no component claims.
pub fn differences(kept: &Project, proposed: &Project, notes: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for new in &proposed.components {
        let repository = new.image.repository();
        let Some(old) = kept
            .components
            .iter()
            .find(|c| c.repositories.contains(repository) || c.image.repository() == repository)
        else {
            out.push(format!(
                "the repository runs `{}` ({}), which no component of {} claims; add it under `images:` (init would call it `{}`)",
                new.image,
                why(notes, &new.name),
                kept.file,
                new.name
            ));
            continue;
        };
        let at = format!("{}:{}", kept.file, old.image_pos);
        if old.image.tag() != new.image.tag() && old.same_as.is_none() {
            out.push(format!(
                "{at}: component `{}` defaults to `{}`, but the repository now says `{}` ({}); update `images.{}.image`, or the source that moved",
                old.name, old.image, new.image, why(notes, &new.name), old.name
            ));
        }
        for (what, old_var, new_var) in [
            ("env", &old.env, &new.env),
            ("tagEnv", &old.tag_env, &new.tag_env),
        ] {
            let defaulted = *new_var == default_for(&new.name, what);
            if old_var != new_var && !defaulted {
                out.push(format!(
                    "{at}: component `{}` reads `{old_var}`, but the Makefile names its {what} variable `{new_var}` ({}); set `{what}: {new_var}`",
                    old.name, why(notes, &new.name)
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

/// What init noted about component `name` (where its image and variables come from).
fn why(notes: &[String], name: &str) -> String {
    let prefix = format!("component `{name}`: ");
    notes
        .iter()
        .find_map(|n| n.strip_prefix(&prefix))
        .map(|n| {
            n.trim_start_matches(|c: char| c != '(')
                .trim_matches(['(', ')'])
                .to_string()
        })
        .unwrap_or_else(|| "see `berth init` in an empty directory".into())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn project(text: &str) -> Project {
        berth_core::project::parse("berth.yaml", std::path::PathBuf::from("/p"), text).unwrap()
    }

    #[test]
    fn drift_between_the_repository_and_berth_yaml_is_named() {
        let kept = project("name: r\nimages:\n  sidecar: {image: 'ghcr.io/llm-d/sidecar:0.0.5'}\n  epp: {image: 'ghcr.io/llm-d/epp:dev', env: EPP_IMAGE}\n");
        let proposed = project("name: r\nimages:\n  sidecar: {image: 'ghcr.io/llm-d/sidecar:dev', env: SIDECAR_IMAGE, tagEnv: SIDECAR_TAG}\n  epp: {image: 'ghcr.io/llm-d/epp:dev', env: EPP_IMG}\n  coord: {image: 'ghcr.io/llm-d/coord:v1'}\n");
        let notes = vec![
            "component `sidecar`: ghcr.io/llm-d/sidecar:dev (deploy/d.yaml:3:14; SIDECAR_IMAGE from Makefile:2)".to_string(),
        ];
        let got = differences(&kept, &proposed, &notes);
        assert_eq!(got.len(), 3, "{got:#?}");
        assert_eq!(got[0], "berth.yaml:3:20: component `sidecar` defaults to `ghcr.io/llm-d/sidecar:0.0.5`, but the repository now says `ghcr.io/llm-d/sidecar:dev` (deploy/d.yaml:3:14; SIDECAR_IMAGE from Makefile:2); update `images.sidecar.image`, or the source that moved");
        assert!(got[1].starts_with("berth.yaml:4:16: component `epp` reads `EPP_IMAGE`, but the Makefile names its env variable `EPP_IMG`"), "{}", got[1]);
        assert!(
            got[2].starts_with("the repository runs `ghcr.io/llm-d/coord:v1`"),
            "{}",
            got[2]
        );
        // A berth.yaml that agrees: nothing.
        assert!(differences(&proposed, &proposed, &[]).is_empty());
    }
}
