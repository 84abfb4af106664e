//! Component names for the images init finds: from a Makefile variable or a repository's last
//! path component, decided for all at once so that none collides with another's name or
//! variables.

/// `text` lower-cased, anything but an ASCII letter or digit as `-`: the first
/// step of every name init makes (components, profiles, releases, labels).
pub(crate) fn dashed(text: &str) -> String {
    (text.chars())
        .map(|c| match c.is_ascii_alphanumeric() {
            true => c.to_ascii_lowercase(),
            false => '-',
        })
        .collect()
}

/// A component name from a variable (`EPP_IMAGE` → `epp`) or a repository's
/// last path component.
pub(super) fn component_name(text: &str) -> String {
    let mut name = dashed(text.trim_end_matches("_IMAGE").trim_end_matches("_IMG"));
    name = name.trim_matches('-').to_string();
    if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        name = format!("c-{name}");
    }
    name
}

/// What a repository's component would like to be called, before names are decided.
pub(super) struct Wanted {
    /// From its Makefile variable (`WEB_IMAGE` → `web`), else its last path component.
    pub(super) name: String,
    /// Who chooses first: 0 a component a Makefile variable names, 1 the project's own
    /// image, 2 a third-party one.
    pub(super) rank: u8,
    /// A third-party image's owner-qualified name (`ghcr.io/other/web` → `other-web`).
    pub(super) owner: Option<String>,
    /// The variables its `env:`/`tagEnv:` take from the Makefile.
    pub(super) claimed: Vec<String>,
}

/// `other-web` for `ghcr.io/other/web`: the path component before the last, and the last.
pub(super) fn repo_owner_name(repo: &str) -> Option<String> {
    let mut parts = repo.rsplit('/');
    let last = parts.next()?;
    let owner = parts
        .next()
        .filter(|o| !o.contains('.') && !o.contains(':'))?;
    Some(component_name(&format!("{owner}-{last}")))
}

/// Every component's name, decided in rank order (a name the Makefile gives is kept; a
/// third-party image that clashes takes its owner's name; then `-2`, `-3`): unique, and no
/// name whose default variables (`<NAME>_IMAGE`, `<NAME>_TAG`) another component's Makefile
/// variables already are, so the berth.yaml init writes always loads (#46, R5).
pub(super) fn assign_names(wanted: &[Wanted]) -> Vec<String> {
    let mut order: Vec<usize> = (0..wanted.len()).collect();
    order.sort_by_key(|&i| wanted[i].rank);
    let mut names: Vec<Option<String>> = vec![None; wanted.len()];
    let mut taken: std::collections::HashSet<String> = std::collections::HashSet::new();
    for &i in &order {
        let w = &wanted[i];
        let others_claim = |name: &str| {
            let defaults = [
                berth_core::project::default_variable(name, "IMAGE"),
                berth_core::project::default_variable(name, "TAG"),
            ];
            wanted
                .iter()
                .enumerate()
                .any(|(j, other)| j != i && other.claimed.iter().any(|v| defaults.contains(v)))
        };
        let free =
            |name: &str| !taken.contains(name) && (!w.claimed.is_empty() || !others_claim(name));
        let mut candidates = vec![w.name.clone()];
        candidates.extend(w.owner.clone());
        let name = candidates.into_iter().find(|c| free(c)).unwrap_or_else(|| {
            (2..)
                .map(|n| format!("{}-{n}", w.name))
                .find(|c| free(c))
                .unwrap_or_default()
        });
        taken.insert(name.clone());
        names[i] = Some(name);
    }
    names.into_iter().map(Option::unwrap_or_default).collect()
}

/// The most characters a profile name has (`--profile NAME`, a DNS label).
const PROFILE_MAX: usize = 63;

/// A profile name for `path` (a directory, or a chart's name) that none in `taken` has: its
/// path components joined by `-` (`overlays-prod`), shortened to the last components that fit
/// a DNS label when the whole path is too long (KServe's deep `config/...` paths), then `-2`,
/// `-3` when another profile has it. Never empty, never over 63 characters (#46 item 5).
pub(crate) fn profile_name(path: &str, taken: &[String]) -> String {
    let label = |text: &str| -> String {
        let mapped = dashed(text);
        let mut out = String::new();
        for c in mapped.chars() {
            if c != '-' || !out.ends_with('-') {
                out.push(c);
            }
        }
        out.trim_matches('-').to_string()
    };
    let parts: Vec<String> = path
        .split('/')
        .map(label)
        .filter(|p| !p.is_empty())
        .collect();
    // The whole path when it fits, else the longest run of last components that does.
    let fits = |n: usize| parts[parts.len() - n..].join("-");
    let mut base = (1..=parts.len())
        .rev()
        .map(fits)
        .find(|name| name.len() <= PROFILE_MAX)
        .unwrap_or_default();
    if base.is_empty() {
        base = parts
            .last()
            .map(|p| p.chars().take(PROFILE_MAX).collect())
            .unwrap_or_default();
        base = base.trim_matches('-').to_string();
    }
    if base.is_empty() {
        base = "profile".into();
    }
    if !taken.contains(&base) {
        return base;
    }
    (2..)
        .map(|n| {
            let suffix = format!("-{n}");
            let head: String = base.chars().take(PROFILE_MAX - suffix.len()).collect();
            format!("{}{suffix}", head.trim_end_matches('-'))
        })
        .find(|name| !taken.contains(name))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_names_are_dns_labels_shortened_from_the_end_and_distinct() {
        let long = "config/overlays/test/s3/tls/serving-cert-with-a-very-long-name-indeed/and-more";
        let name = profile_name(long, &[]);
        assert!(name.len() <= 63 && name.ends_with("and-more"), "{name}");
        assert_eq!(
            profile_name("deploy/overlays/prod", &[]),
            "deploy-overlays-prod"
        );
        assert_eq!(profile_name("web", &["web".into()]), "web-2");
        assert_eq!(
            profile_name("web", &["web".into(), "web-2".into()]),
            "web-3"
        );
        assert_eq!(profile_name("A_B/..//C.D", &[]), "a-b-c-d");
        let huge = "x".repeat(100);
        let name = profile_name(&huge, &[huge.chars().take(63).collect()]);
        assert!(name.len() <= 63 && name.ends_with("-2"), "{name}");
    }

    /// R5 (#46): names decided in rank order, owners on a third-party clash, then numbers,
    /// and never a name whose default variables another component's Makefile variables are.
    #[test]
    fn names_are_assigned_by_rank_without_variable_collisions() {
        let w = |name: &str, rank: u8, owner: Option<&str>, claimed: &[&str]| Wanted {
            name: name.into(),
            rank,
            owner: owner.map(str::to_string),
            claimed: claimed.iter().map(|v| v.to_string()).collect(),
        };
        let cases: Vec<(Vec<Wanted>, Vec<&str>)> = vec![
            (
                vec![
                    w("web", 1, None, &[]),
                    w("web", 1, None, &[]),
                    w("web", 1, None, &[]),
                ],
                vec!["web", "web-2", "web-3"],
            ),
            (
                vec![
                    w("web", 2, Some("other-web"), &[]),
                    w("web", 0, None, &["WEB_IMAGE", "WEB_TAG"]),
                ],
                vec!["other-web", "web"],
            ),
            // `api-2`'s defaults would be `API_2_IMAGE`, which the Makefile gives another image.
            (
                vec![
                    w("api-2", 1, None, &[]),
                    w("proxy", 0, None, &["API_2_IMAGE"]),
                ],
                vec!["api-2-2", "proxy"],
            ),
        ];
        for (wanted, names) in cases {
            assert_eq!(assign_names(&wanted), names);
        }
    }
}
