//! The one kind of edit `update` makes: in one line of a file, the old tag's
//! text replaced by the new one, every other byte kept (comments, quoting, key
//! order, line endings). A copy whose line does not hold the old tag exactly
//! once, as a whole token, is not guessed at: it is refused and named.

/// One edit: in `file`, on line `line` (1-based) from `column` (1-based, in
/// characters), the token `old` becomes `new`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// The file, as shown (relative to the project).
    pub file: String,
    /// The line.
    pub line: usize,
    /// Where on the line the copy starts; text before it is not searched.
    pub column: usize,
    /// The old tag.
    pub old: String,
    /// The new tag.
    pub new: String,
    /// What the copy is, for messages (`Makefile default `WEB_TAG``).
    pub what: String,
}

/// Why an edit cannot be made safely.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// The file has no such line.
    #[error(
        "{file}:{line}: {what}: the file has no line {line} (did it change since berth read it?)"
    )]
    NoLine {
        /// The file.
        file: String,
        /// The line.
        line: usize,
        /// What the copy is.
        what: String,
    },
    /// The old tag is not on the line, or is there more than once.
    #[error("{file}:{line}:{column}: {what}: `{old}` is written {count} times there, not once as a whole tag; change it to `{new}` by hand")]
    NotOnce {
        /// The file.
        file: String,
        /// The line.
        line: usize,
        /// The column.
        column: usize,
        /// What the copy is.
        what: String,
        /// The old tag.
        old: String,
        /// The new tag.
        new: String,
        /// How often it is there.
        count: usize,
    },
}

/// Whether `c` can be part of a tag (`[A-Za-z0-9_.-]`): a copy is the old tag
/// with none of these on either side.
fn tag_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
}

/// `text` with `edit` made, or why it cannot be.
pub fn replace_token(text: &str, edit: &Edit) -> Result<String, EditError> {
    let no_line = || EditError::NoLine {
        file: edit.file.clone(),
        line: edit.line,
        what: edit.what.clone(),
    };
    let start = line_start(text, edit.line).ok_or_else(no_line)?;
    let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let line = &text[start..end];
    let from = line
        .char_indices()
        .nth(edit.column.saturating_sub(1))
        .map_or(line.len(), |(i, _)| i);
    let found: Vec<usize> = line[from..]
        .match_indices(edit.old.as_str())
        .map(|(i, _)| from + i)
        .filter(|&i| {
            let before = line[..i].chars().next_back();
            let after = line[i + edit.old.len()..].chars().next();
            !before.is_some_and(tag_char) && !after.is_some_and(tag_char)
        })
        .collect();
    match found.as_slice() {
        [at] => {
            let at = start + at;
            let mut out = String::with_capacity(text.len() + edit.new.len());
            out.push_str(&text[..at]);
            out.push_str(&edit.new);
            out.push_str(&text[at + edit.old.len()..]);
            Ok(out)
        }
        _ => Err(EditError::NotOnce {
            file: edit.file.clone(),
            line: edit.line,
            column: edit.column,
            what: edit.what.clone(),
            old: edit.old.clone(),
            new: edit.new.clone(),
            count: found.len(),
        }),
    }
}

/// The byte offset where 1-based line `line` starts.
fn line_start(text: &str, line: usize) -> Option<usize> {
    if line == 0 {
        return None;
    }
    let mut start = 0;
    for _ in 1..line {
        start += text[start..].find('\n')? + 1;
    }
    (start <= text.len()).then_some(start)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(line: usize, column: usize, old: &str, new: &str) -> Edit {
        Edit {
            file: "f".into(),
            line,
            column,
            old: old.into(),
            new: new.into(),
            what: "the copy".into(),
        }
    }

    #[test]
    fn only_the_tag_text_changes() {
        let text = "a: 1\r\n  image: \"quay.io/x/web:v1.3.0\"  # keep v1.3.0 here\r\nz: 2\r\n";
        // Column 3 and on: the comment's `v1.3.0` is a second copy on the line.
        let refused = replace_token(text, &edit(2, 3, "v1.3.0", "v1.10.0")).unwrap_err();
        assert!(refused.to_string().contains("2 times"), "{refused}");
        let text = "a: 1\r\n  image: \"quay.io/x/web:v1.3.0\"  # the web server\r\nz: 2\r\n";
        assert_eq!(
            replace_token(text, &edit(2, 10, "v1.3.0", "v1.10.0")).unwrap(),
            "a: 1\r\n  image: \"quay.io/x/web:v1.10.0\"  # the web server\r\nz: 2\r\n"
        );
        // A longer tag that starts with the old one is no copy of it.
        let text = "WEB_TAG ?= v1.3.0-rc1\n";
        assert!(replace_token(text, &edit(1, 1, "v1.3.0", "v1.10.0")).is_err());
        assert_eq!(
            replace_token("WEB_TAG ?= v1.3.0\n", &edit(1, 1, "v1.3.0", "v1.10.0")).unwrap(),
            "WEB_TAG ?= v1.10.0\n"
        );
        assert!(matches!(
            replace_token("x\n", &edit(7, 1, "a", "b")),
            Err(EditError::NoLine { .. })
        ));
        // A column past a multi-byte character counts characters.
        assert_eq!(
            replace_token("é: web:1\n", &edit(1, 3, "1", "2")).unwrap(),
            "é: web:2\n"
        );
    }
}
