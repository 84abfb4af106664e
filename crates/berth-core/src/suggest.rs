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

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn suggestions() {
        let keys = ["image", "env", "tagEnv", "pullPolicy", "match"];
        assert_eq!(closest("imgae", keys), Some("image"));
        assert_eq!(closest("tagenv", keys), Some("tagEnv"));
        assert_eq!(closest("pull_policy", keys), Some("pullPolicy"));
        assert_eq!(closest("replicas", keys), None);
    }
}
