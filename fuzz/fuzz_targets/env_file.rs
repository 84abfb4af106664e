//! Any bytes as an env file (a Secret's `envs:`): parsed or refused, never a
//! panic, and a refusal never repeats what follows the first character that is
//! not part of a variable name (that is where a value would be).
#![no_main]

use berth_core::configs::parse_env_file;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Err((line, message)) = parse_env_file(bytes) {
        let Some(raw) = bytes.split(|&b| b == b'\n').nth(line - 1) else {
            panic!("line {line} does not exist");
        };
        let text = String::from_utf8_lossy(raw);
        let text = text.trim_start();
        let name_end = text
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_')))
            .unwrap_or(text.len());
        let rest = &text[name_end..];
        let rest = rest.split('=').next().unwrap_or_default().get(1..).unwrap_or_default();
        // Only tokens no fixed part of the message could contain: letters and digits mixed.
        let telling = rest.len() >= 8
            && !rest.contains(char::is_whitespace)
            && rest.contains(|c: char| c.is_ascii_digit())
            && rest.contains(|c: char| c.is_ascii_lowercase());
        // A token that also occurs in the valid name before it may be shown as that name.
        let shown = &text[..name_end];
        if telling && !shown.contains(rest) {
            assert!(!message.contains(rest), "the message repeats {rest:?}: {message}");
        }
    }
});
