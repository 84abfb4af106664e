//! Values from input as messages show them.
//!
//! It lives in this crate because every crate of berth stands on it (this one
//! depends on nothing) and a reference's errors need it too; `berth_io`
//! re-exports it.

/// `value` as a message shows it: control characters escaped (an ESC sequence
/// must not drive the terminal, a newline must not break the message's line),
/// and at most 200 characters (a 100 KB value is not repeated).
pub fn shown(value: &str) -> String {
    const MAX: usize = 200;
    let mut out = String::new();
    for (i, c) in value.chars().enumerate() {
        if i == MAX {
            out.push_str(&format!("… ({} characters)", value.chars().count()));
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn control_characters_are_escaped_and_long_values_cut() {
        assert_eq!(super::shown("a\u{1b}[2Jb\u{7}\n"), "a\\u{1b}[2Jb\\u{7}\\n");
        let long = "x".repeat(100_000);
        let shown = super::shown(&long);
        assert!(
            shown.ends_with("… (100000 characters)") && shown.len() < 300,
            "{shown}"
        );
    }
}
