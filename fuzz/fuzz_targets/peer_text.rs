//! Any text from a peer: `peer_text` never panics, stays within its length, and
//! never passes on a token that followed `Bearer`.
#![no_main]

use berth_core::redact::{peer_text, PEER_TEXT_MAX};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let out = peer_text(text);
    assert!(out.chars().count() <= PEER_TEXT_MAX + 40, "{out}");
    let words: Vec<&str> = text.split_whitespace().collect();
    for pair in words.windows(2) {
        // A token that occurs only after `Bearer` (elsewhere it is just text).
        // (Counted after control characters go, as peer_text drops them.)
        let clean: String = text.chars().filter(|c| c.is_whitespace() || !c.is_control()).collect();
        let once = clean.matches(pair[1]).count() == 1;
        if once && pair[0] == "Bearer" && pair[1].len() >= 12 && pair[1].chars().all(|c| c.is_ascii_alphanumeric()) {
            let spaced = format!(" {} ", pair[1]);
            assert!(!format!(" {out} ").contains(&spaced), "{text:?} -> {out:?}");
        }
    }
});
