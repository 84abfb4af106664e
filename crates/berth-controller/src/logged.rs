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

/// Rate-limits identical log lines: against an API server that answers 401,
/// or one that is down, each watch fails again after every back-off; the first
/// failure is what an operator needs, the thousandth only fills the log. A
/// message seen again within [`Throttle::WINDOW`] is counted instead of logged,
/// and the count is told the next time it is logged.
#[derive(Debug, Default)]
pub(crate) struct Throttle {
    seen: std::sync::Mutex<std::collections::HashMap<String, (std::time::Instant, u64)>>,
}

impl Throttle {
    /// How long an identical message stays quiet after it was logged.
    pub(crate) const WINDOW: std::time::Duration = std::time::Duration::from_secs(60);

    /// At most this many distinct messages are remembered; past it the oldest
    /// go (a bound for a process that lives for weeks).
    const REMEMBERED: usize = 256;

    /// `Some(suppressed)` when `message` should be logged now (with how many
    /// identical ones were left out since it last was), `None` to leave it out.
    pub(crate) fn admit(&self, message: &str) -> Option<u64> {
        let now = std::time::Instant::now();
        // A poisoned lock means a panic while holding it, which this code
        // cannot cause (no call inside can panic): take the map as it is.
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match seen.get_mut(message) {
            Some((last, count)) if now.duration_since(*last) < Self::WINDOW => {
                *count += 1;
                None
            }
            Some((last, count)) => {
                let suppressed = *count;
                (*last, *count) = (now, 0);
                Some(suppressed)
            }
            None => {
                if seen.len() >= Self::REMEMBERED {
                    if let Some(oldest) = seen
                        .iter()
                        .min_by_key(|(_, (t, _))| *t)
                        .map(|(k, _)| k.clone())
                    {
                        seen.remove(&oldest);
                    }
                }
                seen.insert(message.to_string(), (now, 0));
                Some(0)
            }
        }
    }
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
    fn identical_errors_are_logged_once_a_minute_with_a_count() {
        let throttle = super::Throttle::default();
        assert_eq!(throttle.admit("401"), Some(0));
        for _ in 0..1000 {
            assert_eq!(throttle.admit("401"), None);
        }
        assert_eq!(
            throttle.admit("refused"),
            Some(0),
            "another message is logged"
        );
        for i in 0..300 {
            throttle.admit(&format!("m{i}"));
        }
        assert!(throttle.seen.lock().unwrap().len() <= 256);
    }

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
