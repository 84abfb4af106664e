//! Which scalar styles can carry a given text unchanged.

/// Characters YAML allows unescaped in quoted and block scalars.
pub(crate) fn is_printable(c: char) -> bool {
    match c {
        '\t' | '\n' => true,
        '\u{20}'..='\u{7e}' => true,
        '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{feff}' => false,
        '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..='\u{10ffff}' => true,
        _ => false,
    }
}

/// True when `s` can be written as a plain scalar in block context and read
/// back as the same text. Conservative: when in doubt, quote.
pub(crate) fn is_plain_safe(s: &str) -> bool {
    let bytes = s.as_bytes();
    let Some(&first) = bytes.first() else {
        return false;
    };
    let second = bytes.get(1).copied();
    let indicator = matches!(
        first,
        b',' | b'['
            | b']'
            | b'{'
            | b'}'
            | b'#'
            | b'&'
            | b'*'
            | b'!'
            | b'|'
            | b'>'
            | b'\''
            | b'"'
            | b'%'
            | b'@'
            | b'`'
    );
    let dash_like = matches!(first, b'-' | b'?' | b':') && matches!(second, None | Some(b' '));
    if indicator || dash_like || s.starts_with("---") || s.starts_with("...") {
        return false;
    }
    if s.starts_with(' ') || s.ends_with(' ') || s.ends_with(':') {
        return false;
    }
    if s.contains(": ") || s.contains(" #") {
        return false;
    }
    s.chars().all(|c| c != '\t' && c != '\n' && is_printable(c))
}

/// True when the plain text `s` would be read back as a string (not null,
/// bool or number) under YAML 1.2 core and YAML 1.1 (which Go's YAML, and so
/// kubectl, still partly uses): `yes`, `on`, `1e3`, `0x1f`, `.inf` all quoted.
pub(crate) fn plain_keeps_string(s: &str) -> bool {
    if !is_plain_safe(s) {
        return false;
    }
    let lower = s.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "~" | "null" | "true" | "false" | "yes" | "no" | "y" | "n" | "on" | "off"
    ) {
        return false;
    }
    let body = lower.trim_start_matches(['+', '-']);
    let numeric_start = body.starts_with(|c: char| c.is_ascii_digit())
        || (body.starts_with('.') && body[1..].starts_with(|c: char| c.is_ascii_digit()));
    !(numeric_start || body == ".inf" || body == ".nan")
}

/// True when a literal block (`|`) can carry `s` exactly.
pub(crate) fn is_literal_safe(s: &str) -> bool {
    let first_content = s.split('\n').find(|line| !line.is_empty());
    match first_content {
        None => false,
        Some(line) if line.starts_with([' ', '\t']) => false,
        Some(_) => s.chars().all(is_printable),
    }
}

/// True when single quotes can carry `s` exactly.
pub(crate) fn is_single_quote_safe(s: &str) -> bool {
    s.chars().all(|c| c != '\n' && is_printable(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_strings() {
        for s in [
            "nginx",
            "docker.io/library/nginx:1.25",
            "a: b".replace(": ", ":").as_str(),
            "-x",
            "a b",
        ] {
            assert!(plain_keeps_string(s), "{s}");
        }
        for s in [
            "", "yes", "On", "NULL", "~", "123", "-1", "+.5", "1e3", "0x1f", ".inf", "-.NaN",
            "a: b", "a #b", "- a", "#x", "*x", "x:", " x", "x ", "---", "a\tb", "'q'",
        ] {
            assert!(!plain_keeps_string(s), "{s:?}");
        }
    }

    #[test]
    fn literal_and_single() {
        assert!(is_literal_safe("a\nb\n"));
        assert!(is_literal_safe("\n\nx"));
        assert!(!is_literal_safe(" a\nb"));
        assert!(!is_literal_safe("\n\n"));
        assert!(!is_literal_safe("a\r\nb"));
        assert!(is_single_quote_safe("it's"));
        assert!(!is_single_quote_safe("a\nb"));
    }
}
