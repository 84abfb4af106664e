//! "Did you mean" hints for misspelt keys and names.

/// The candidate closest to `input`, if it is close enough to be a likely typo.
pub fn closest<'a>(input: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lowered = input.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| (strsim::osa_distance(&lowered, &c.to_ascii_lowercase()), c))
        .filter(|(distance, c)| *distance <= (c.len().max(input.len()) / 3).max(1))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, c)| c)
}

/// `" (did you mean `x`?)"` or nothing.
pub fn hint(suggestion: Option<&str>) -> String {
    suggestion
        .map(|s| format!("; did you mean `{s}`?"))
        .unwrap_or_default()
}

/// Names in `present` (variables set in the environment or on a command line)
/// that look like a misspelling of one in `read` (the variables berth.yaml
/// names): `(present, meant)`, in `present`'s order. A name berth reads is
/// never one. Near means at most two edits (a swap counts one) and sharing the
/// first `_`-separated word (`EPP_TGA` for `EPP_TAG`), or the last word with a
/// first word that is a prefix of the other's (`EP_TAG` for `EPP_TAG`), so
/// unrelated variables (`CI_TAG`, `GIT_TAG`, `HOME`) stay quiet.
pub fn misspelt_variables<'r>(read: &[&'r str], present: &[&str]) -> Vec<(String, &'r str)> {
    // Words split once, without allocating: this runs on every command, against
    // every variable of the environment.
    let first = |v: &'r str| v.split('_').next().unwrap_or_default();
    let last = |v: &'r str| v.rsplit('_').next().unwrap_or_default();
    let words: Vec<(&str, &str, &str)> = read.iter().map(|r| (*r, first(r), last(r))).collect();
    let known: std::collections::HashSet<&str> = read.iter().copied().collect();
    let mut out = Vec::new();
    for name in present {
        if known.contains(name) || !name.contains('_') {
            continue;
        }
        let a = name.split('_').next().unwrap_or_default();
        let z = name.rsplit('_').next().unwrap_or_default();
        let near = (words.iter())
            .filter(|(_, b, y)| a == *b || (z == *y && (a.starts_with(b) || b.starts_with(a))))
            .map(|(meant, _, _)| (strsim::osa_distance(name, meant), *meant))
            .filter(|(distance, _)| *distance <= 2)
            .min_by_key(|(distance, _)| *distance)
            .map(|(_, meant)| meant);
        if let Some(meant) = near {
            out.push((name.to_string(), meant));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{closest, misspelt_variables};

    #[test]
    fn misspelt_variables_are_near_and_related() {
        let read = ["EPP_IMAGE", "EPP_TAG", "UI_TAG", "IMAGE_REGISTRY"];
        let present = [
            "EPP_TGA",
            "EP_TAG",
            "EPP_TAG",
            "CI_TAG",
            "GIT_TAG",
            "HOME",
            "IMAGE_REGISTRYY",
            "EPP_IMAGES",
            "PATH",
            "EPP_BUILD_ARGS",
        ];
        let got = misspelt_variables(&read, &present);
        assert_eq!(
            got,
            [
                ("EPP_TGA".to_string(), "EPP_TAG"),
                ("EP_TAG".to_string(), "EPP_TAG"),
                ("IMAGE_REGISTRYY".to_string(), "IMAGE_REGISTRY"),
                ("EPP_IMAGES".to_string(), "EPP_IMAGE"),
            ]
        );
    }

    #[test]
    fn suggestions() {
        let keys = ["image", "env", "tagEnv", "pullPolicy", "match"];
        assert_eq!(closest("imgae", keys), Some("image"));
        assert_eq!(closest("tagenv", keys), Some("tagEnv"));
        assert_eq!(closest("pull_policy", keys), Some("pullPolicy"));
        assert_eq!(closest("replicas", keys), None);
    }
}
