//! `.dockerignore`-syntax patterns: which local paths a rule never sends.
//!
//! Semantics follow Docker's: patterns are relative to the project directory,
//! `*` stays within one path segment, `**` spans any number, a trailing `/`
//! restricts a pattern to directories, `!` re-includes, the last matching
//! pattern wins, and a pattern that matches a directory covers everything below it.

use globset::{GlobBuilder, GlobMatcher};

use crate::error::SyncError;

#[derive(Debug, Clone)]
struct Pattern {
    matcher: GlobMatcher,
    negated: bool,
    dir_only: bool,
}

/// A compiled list of ignore patterns.
#[derive(Debug, Clone, Default)]
pub struct Ignore {
    patterns: Vec<Pattern>,
}

impl Ignore {
    /// Adds patterns; `origin` names where they come from (`berth.yaml:7:13`) for errors.
    pub fn add(&mut self, origin: &str, pattern: &str) -> Result<(), SyncError> {
        let mut text = pattern.trim();
        if text.is_empty() || text.starts_with('#') {
            return Ok(());
        }
        let negated = text.starts_with('!');
        if negated {
            text = text[1..].trim_start();
        }
        let dir_only = text.ends_with('/');
        let cleaned = text.trim_start_matches("./").trim_matches('/');
        if cleaned.is_empty() {
            return Ok(());
        }
        let glob = GlobBuilder::new(cleaned)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| SyncError::Pattern {
                what: "ignore",
                origin: origin.to_string(),
                pattern: pattern.to_string(),
                reason: e.kind().to_string(),
            })?;
        self.patterns.push(Pattern {
            matcher: glob.compile_matcher(),
            negated,
            dir_only,
        });
        Ok(())
    }

    /// Adds every line of a `.dockerignore` file.
    pub fn add_file(&mut self, file: &str, text: &str) -> Result<(), SyncError> {
        for (index, line) in text.lines().enumerate() {
            self.add(&format!("{file}:{}", index + 1), line)?;
        }
        Ok(())
    }

    /// Whether `rel` (a `/`-separated path relative to the project directory) is ignored.
    pub fn is_ignored(&self, rel: &str, is_dir: bool) -> bool {
        let mut ignored = false;
        for pattern in &self.patterns {
            if pattern.matches(rel, is_dir) {
                ignored = !pattern.negated;
            }
        }
        ignored
    }

    /// Whether there are no patterns at all (the common fast path).
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }
}

impl Pattern {
    fn matches(&self, rel: &str, is_dir: bool) -> bool {
        if (is_dir || !self.dir_only) && self.matcher.is_match(rel) {
            return true;
        }
        // A match on any ancestor directory covers this path.
        rel.match_indices('/')
            .any(|(i, _)| self.matcher.is_match(&rel[..i]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ignore(patterns: &[&str]) -> Ignore {
        let mut ig = Ignore::default();
        for p in patterns {
            ig.add("test", p).unwrap();
        }
        ig
    }

    #[test]
    fn docker_semantics() {
        let ig = ignore(&["**/*.swp", ".git/", "build", "*.log", "!keep.log", "tmp/"]);
        assert!(ig.is_ignored("a.swp", false));
        assert!(ig.is_ignored("src/deep/a.swp", false));
        assert!(ig.is_ignored(".git", true));
        assert!(ig.is_ignored(".git/HEAD", false));
        assert!(
            !ig.is_ignored("src/.git", true),
            "anchored to the project directory"
        );
        assert!(ig.is_ignored("build/out/x", false));
        assert!(ig.is_ignored("x.log", false));
        assert!(!ig.is_ignored("keep.log", false), "re-included");
        assert!(
            !ig.is_ignored("src/x.log", false),
            "`*` stays in one segment"
        );
        assert!(!ig.is_ignored("tmp", false), "`tmp/` is for directories");
        assert!(ig.is_ignored("tmp/x", false));
        assert!(!ig.is_ignored("src/main.rs", false));
    }

    #[test]
    fn comments_blanks_and_bad_patterns() {
        let mut ig = Ignore::default();
        ig.add_file(".dockerignore", "# c\n\n./dist/\n").unwrap();
        assert!(ig.is_ignored("dist/a", false));
        let err = ig.add("berth.yaml:3:4", "a[").unwrap_err().to_string();
        assert!(
            err.starts_with("berth.yaml:3:4: invalid ignore pattern `a[`"),
            "{err}"
        );
    }
}
