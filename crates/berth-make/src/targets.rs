//! Which make target writes a file: a kustomization's input that the
//! repository does not hold because make generates it (operator-sdk's
//! `make manifests` writes `config/crd/bases`; opendatahub-operator's
//! `make manager-kustomization` writes `config/manager/kustomization.yaml`).
//! `berth init` names the target instead of kustomize's "must resolve to a file".

use crate::{Defs, MakeVar};

/// The target whose recipe writes `path` (make's variables expanded), judged in
/// three passes: a line that writes it (`output:crd:artifacts:config=PATH`,
/// `> PATH`, `-o PATH`, `mkdir -p PATH`, a `cp`/`mv` to it); else one that names
/// it, or its directory and its file name (`cd config/manager && cp -f
/// kustomization.yaml.in kustomization.yaml`), where it is not read (`kustomize
/// build PATH`); else one that writes into its directory
/// (`output:rbac:artifacts:config=config/rbac` for `config/rbac/role.yaml`). A
/// recipe line that removes (`rm …`) writes nothing.
pub fn target_writing(vars: &[MakeVar], texts: &[(String, String)], path: &str) -> Option<String> {
    let defs = Defs::new(vars);
    let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
    let clean = |word: &str| {
        word.trim_matches(['"', '\'', ';'])
            .trim_end_matches('/')
            .to_string()
    };
    let value = |word: &str| clean(word.rsplit('=').next().unwrap_or(word));
    let writes = |line: &str, wanted: &str| {
        let words: Vec<&str> = line.split_whitespace().collect();
        (0..words.len()).any(|i| {
            let before = if i > 0 { words[i - 1] } else { "" };
            let last_of_copy = ["cp", "mv"].iter().any(|c| line.contains(&format!("{c} ")))
                && words
                    .get(i + 1)
                    .is_none_or(|next| ["&&", ";", "|"].contains(next));
            let output = words[i].contains('=') && value(words[i]) == wanted;
            let positioned = clean(words[i]) == wanted
                && ([">", "-o", "--output", "--output-dir", "-p"].contains(&before)
                    || last_of_copy);
            output || positioned
        })
    };
    let mentions = |line: &str| {
        let words: Vec<&str> = line.split_whitespace().collect();
        let read =
            |i: usize| i > 0 && ["build", "-f", "-k", "cat", "-d", "-e"].contains(&words[i - 1]);
        let names_path = (0..words.len()).any(|i| clean(words[i]) == path && !read(i));
        let names_parts = !dir.is_empty() && line.contains(dir) && words.contains(&name);
        names_path || names_parts
    };
    let lines = recipe_lines(&defs, texts);
    let pick = |test: &dyn Fn(&str) -> bool| lines.iter().find(|(_, line)| test(line));
    pick(&|line| writes(line, path))
        .or_else(|| pick(&mentions))
        .or_else(|| pick(&|line| !dir.is_empty() && writes(line, dir)))
        .map(|(target, _)| target.clone())
}

/// Every recipe line of `texts` that does not remove files, variables
/// expanded, with the target it belongs to.
fn recipe_lines(defs: &Defs<'_>, texts: &[(String, String)]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for rule in crate::rules::rules(texts) {
        for (_, line) in &rule.lines {
            let command = line.trim_start().trim_start_matches(['@', '-', '+']);
            if command.starts_with("rm ") {
                continue;
            }
            if let Ok(expanded) = defs.expand(line) {
                out.push((rule.target.clone(), expanded));
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_target_that_writes_a_generated_input_is_found() {
        let text = "CONFIG_DIR = config\nmanifests: controller-gen ## CRDs\nifneq ($(X), y)\n\techo other\nendif\n\t$(CONTROLLER_GEN) crd output:crd:artifacts:config=$(CONFIG_DIR)/crd/bases\n\nmanager-kustomization: $(CONFIG_DIR)/manager/kustomization.yaml.in\n\tcd $(CONFIG_DIR)/manager \\\n\t\t&& cp -f kustomization.yaml.in kustomization.yaml\ndeploy: prepare\n\tkustomize build $(CONFIG_DIR)/default | kubectl apply -f -\ninstall:\n\tkustomize build $(CONFIG_DIR)/crd/bases | kubectl apply -f -\n";
        let vars = crate::make_vars("Makefile", text);
        let texts = [("Makefile".to_string(), text.to_string())];
        let find = |path: &str| target_writing(&vars, &texts, path);
        assert_eq!(find("config/default"), None, "read, not written");
        assert_eq!(find("config/crd/bases").as_deref(), Some("manifests"));
        assert_eq!(
            find("config/manager/kustomization.yaml").as_deref(),
            Some("manager-kustomization")
        );
        assert_eq!(find("config/rbac/role.yaml"), None);
        // Into the directory, when no recipe names the file; a removal writes nothing.
        let text = format!("clean:\n\trm -rf config/rbac/role.yaml\n{text}gen:\n\tgen rbac output:rbac:artifacts:config=$(CONFIG_DIR)/rbac\n");
        let texts = [("Makefile".to_string(), text)];
        assert_eq!(
            target_writing(&vars, &texts, "config/rbac/role.yaml").as_deref(),
            Some("gen")
        );
    }
}
