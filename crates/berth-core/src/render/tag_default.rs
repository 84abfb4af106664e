//! What an empty `tag:` in a chart's values stands for, read from how its
//! templates use the value: `helm create`'s `{{ .Values.image.tag | default
//! .Chart.AppVersion }}` is the appVersion, Kubeflow's katib `(.Values.controller.image.tag
//! | default .Values.global.imageTag)` and KServe's `| default .Values.kserve.version` are
//! another value. Judging an empty tag as the appVersion where the chart
//! defaults it to another value cried wolf (`[drift]` on every katib image).

/// What the templates default the value at a path to, when it is empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmptyDefault {
    /// `.Chart.AppVersion`.
    AppVersion,
    /// Another value, by its dotted path (`global.imageTag`).
    Value(String),
}

/// How `templates` (the chart's template files, joined) default the value at
/// `path` when it is empty: the one default every use that gives one names;
/// `None` when no use gives one, or uses disagree.
pub fn empty_default(templates: &str, path: &str) -> Option<EmptyDefault> {
    let needle = format!(".Values.{path}");
    let mut found: Option<EmptyDefault> = None;
    let mut start = 0;
    while let Some(at) = templates[start..].find(&needle) {
        let begin = start + at;
        let end = begin + needle.len();
        start = end;
        let continues = templates[end..]
            .chars()
            .next()
            .is_some_and(|ch| ch.is_alphanumeric() || ch == '_' || ch == '.');
        if continues {
            continue; // `.Values.image.tagSuffix`: another value
        }
        let default = piped(&templates[end..]).or_else(|| prefixed(&templates[..begin]));
        let Some(default) = default else { continue };
        match &found {
            Some(other) if *other != default => return None,
            _ => found = Some(default),
        }
    }
    found
}

/// `| default X` right after a use.
fn piped(after: &str) -> Option<EmptyDefault> {
    let rest = after.trim_start().strip_prefix('|')?.trim_start();
    let rest = rest.strip_prefix("default")?;
    token(rest)
}

/// `default X ` right before a use (the function form: `default X .Values.p`).
fn prefixed(before: &str) -> Option<EmptyDefault> {
    let before = before.trim_end();
    let (head, argument) = before.rsplit_once(char::is_whitespace)?;
    let head = head.trim_end();
    head.strip_suffix("default")
        .filter(|h| h.is_empty() || h.ends_with(|c: char| !c.is_alphanumeric()))?;
    token(&format!(" {argument}"))
}

/// The default's argument: `.Chart.AppVersion` or `.Values.PATH`.
fn token(rest: &str) -> Option<EmptyDefault> {
    if !rest.starts_with(char::is_whitespace) {
        return None; // `defaultX`
    }
    let rest = rest.trim_start().trim_start_matches('(');
    let word: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || matches!(c, '.' | '_'))
        .collect();
    match word.as_str() {
        ".Chart.AppVersion" => Some(EmptyDefault::AppVersion),
        _ => word
            .strip_prefix(".Values.")
            .filter(|p| !p.is_empty())
            .map(|p| EmptyDefault::Value(p.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_each_template_form_gives() {
        let cases: &[(&str, &str, Option<EmptyDefault>)] = &[
            (
                "image: \"{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}\"",
                "image.tag",
                Some(EmptyDefault::AppVersion),
            ),
            (
                "{{ include \"katib.image\" (dict \"tag\" (.Values.controller.image.tag | default .Values.global.imageTag) \"global\" .Values.global) }}",
                "controller.image.tag",
                Some(EmptyDefault::Value("global.imageTag".into())),
            ),
            (
                "{{ default .Chart.AppVersion .Values.image.tag }}",
                "image.tag",
                Some(EmptyDefault::AppVersion),
            ),
            (
                "{{ .Values.image.tag }}",
                "image.tag",
                None,
            ),
            (
                "{{ .Values.image.tagSuffix | default .Chart.AppVersion }}",
                "image.tag",
                None,
            ),
            (
                "{{ .Values.image.tag | default .Chart.AppVersion }} {{ .Values.image.tag | default .Values.v }}",
                "image.tag",
                None,
            ),
        ];
        for (templates, path, want) in cases {
            assert_eq!(empty_default(templates, path), *want, "{templates}");
        }
    }
}
