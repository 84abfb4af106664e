//! Errors as the controller's log shows them. An API server's or a proxy's
//! answer may echo the request, `Authorization: Bearer …` included, and kube's
//! errors append a `Debug` dump of the whole answer; a pod's log is read by
//! many, so neither is written: the dump is dropped and what the peer said goes
//! through berth's one redaction point, [`berth_core::redact::peer_text`]
//! (credentials masked, control characters dropped, the length cut).

/// `error`'s message, safe for the log: one line, no credentials, no dump, no `"`.
pub(crate) fn error(error: &dyn std::fmt::Display) -> String {
    let text = error.to_string();
    berth_core::redact::peer_text(&without_dumps(&text)).replace('"', "'")
}

/// `text` without the ` (Status { … })` / ` (ErrorResponse { … })` dumps kube's
/// errors append.
fn without_dumps(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = find_dump(rest) {
        out.push_str(&rest[..start]);
        let mut depth = 0usize;
        let mut end = rest.len();
        for (i, c) in rest[start..].char_indices() {
            match c {
                '(' | '{' | '[' => depth += 1,
                ')' | '}' | ']' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = start + i + c.len_utf8();
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Where ` (Name { ` starts: a `Debug` dump of a struct.
fn find_dump(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find(" (") {
        let at = from + i;
        let after = &text[at + 2..];
        let name_len = after
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(after.len());
        if name_len > 0
            && after.starts_with(|c: char| c.is_ascii_uppercase())
            && after[name_len..].starts_with(" {")
        {
            return Some(at);
        }
        from = at + 2;
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn tokens_and_debug_dumps_never_reach_the_log() {
        let kube = "event queue error: failed to perform initial object list: ApiError: Unauthorized: request carried Authorization: Bearer s3cr3t-token: Unauthorized (Status { status: Some(Failure), code: 401, message: \"request carried Authorization: Bearer s3cr3t-token\", reason: \"Unauthorized\" })";
        let logged = super::error(&kube);
        assert!(!logged.contains("s3cr3t"), "{logged}");
        assert!(!logged.contains("Status {"), "{logged}");
        assert!(!logged.contains('"'), "{logged}");
        assert!(
            logged.starts_with("event queue error: failed to perform initial object list: ApiError: Unauthorized: request carried Authorization: Bearer <redacted>"),
            "{logged}"
        );
        assert_eq!(
            super::error(&"plain (not a dump) text"),
            "plain (not a dump) text"
        );
    }
}
