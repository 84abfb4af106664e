//! A Makefile's rules as make reads them: each `target: prerequisites` line
//! with the recipe below it, continuation lines joined. One reader for every
//! question berth asks of recipes (which target writes a file, which deploys,
//! what a deploy recipe does to a kustomization).

/// One rule: its first target, the words after its colon and its recipe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rule {
    /// The first target of the rule line (`deploy`).
    pub target: String,
    /// The prerequisites as written (`compile-crd-manifests kustomize
    /// prepare-manifests`); empty for a target-specific variable
    /// (`artifacts: DEST=…`).
    pub prerequisites: Vec<String>,
    /// The file the rule is in, as shown.
    pub file: String,
    /// The recipe's lines (tab removed, continuations joined), each with the
    /// number of its first line in `file`.
    pub lines: Vec<(u32, String)>,
}

/// Every rule of `texts` (`(file, text)`), in the order make reads them. A
/// comment, a blank line or a conditional inside a recipe does not end it.
pub(crate) fn rules(texts: &[(String, String)]) -> Vec<Rule> {
    let mut out: Vec<Rule> = Vec::new();
    for (file, text) in texts {
        let mut open = false;
        for (n, line) in logical_lines(text) {
            if let Some(command) = line.strip_prefix('\t') {
                if let Some(rule) = out.last_mut().filter(|_| open) {
                    rule.lines.push((n, command.to_string()));
                }
                continue;
            }
            let first = line.split_whitespace().next().unwrap_or("");
            let within = line.trim().is_empty()
                || first.starts_with('#')
                || ["ifeq", "ifneq", "ifdef", "ifndef", "else", "endif"].contains(&first);
            match rule_line(&line) {
                Some((target, prerequisites)) => {
                    out.push(Rule {
                        target: target.to_string(),
                        prerequisites,
                        file: file.clone(),
                        lines: Vec::new(),
                    });
                    open = true;
                }
                None => open = open && within,
            }
        }
    }
    out
}

/// `text`'s lines with make's `\` continuations joined, each with the number
/// of its first line (from 1).
pub(crate) fn logical_lines(text: &str) -> Vec<(u32, String)> {
    let mut out: Vec<(u32, String)> = Vec::new();
    let mut open = false;
    for (n, line) in text.lines().enumerate() {
        match (open, out.last_mut()) {
            (true, Some((_, last))) => {
                last.push(' ');
                last.push_str(line.trim());
            }
            _ => out.push((u32::try_from(n + 1).unwrap_or(u32::MAX), line.to_string())),
        }
        open = line.ends_with('\\');
        if let Some((_, last)) = out.last_mut().filter(|_| open) {
            last.pop();
        }
    }
    out
}

/// The first target of a rule line and its prerequisites (`manifests:
/// controller-gen ## …` → `manifests`, `[controller-gen]`).
fn rule_line(line: &str) -> Option<(&str, Vec<String>)> {
    let colon = line.find(':')?;
    let (left, right) = (&line[..colon], &line[colon + 1..]);
    if left.contains(['=', '$', '%']) || right.starts_with('=') || left.starts_with('.') {
        return None;
    }
    let target = left.split_whitespace().next()?;
    let right = right.trim_start_matches(':');
    let right = right.split(['#', ';']).next().unwrap_or("");
    let prerequisites = match right.contains('=') {
        true => Vec::new(),
        false => right.split_whitespace().map(str::to_string).collect(),
    };
    Some((target, prerequisites))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn rules_keep_their_recipes_through_comments_and_conditionals() {
        let text = "X := 1\ndeploy: a b ## Deploy\n\tcd config && \\\n\t  kustomize edit set image c=$(IMG)\n# a comment\nifeq ($(X),1)\n\techo one\nendif\n\nartifacts: DEST=\"$(A)\"\nartifacts: verify\n\techo $(DEST)\nY = 2\n\techo orphan\n.PHONY: deploy\n";
        let rules = rules(&[("Makefile".to_string(), text.to_string())]);
        type Seen<'a> = (&'a str, Vec<&'a str>, Vec<(u32, &'a str)>);
        let seen: Vec<Seen> = rules
            .iter()
            .map(|r| {
                (
                    r.target.as_str(),
                    r.prerequisites.iter().map(String::as_str).collect(),
                    r.lines.iter().map(|(n, l)| (*n, l.as_str())).collect(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                (
                    "deploy",
                    vec!["a", "b"],
                    vec![
                        (3, "cd config &&  kustomize edit set image c=$(IMG)"),
                        (7, "echo one")
                    ]
                ),
                ("artifacts", vec![], vec![]),
                ("artifacts", vec!["verify"], vec![(12, "echo $(DEST)")]),
            ]
        );
    }
}
