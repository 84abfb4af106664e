//! Errors as the controller's log shows them. An API server's or a proxy's
//! answer may echo the request, `Authorization: Bearer …` included, and kube's
//! errors append a `Debug` dump of the whole answer; a pod's log is read by
//! many, so neither is written: the dump is dropped and what the peer said goes
//! through berth's one redaction point, [`berth_io::redact::peer_text`]
//! (credentials masked, control characters dropped, the length cut).

/// `error`'s message, safe for the log: one line, no credentials, no dump, no `"`.
/// The chain is walked level by level (`source()`): each level keeps only its own
/// words (the text of the level below, which it may repeat, is cut out), and an
/// API server's answer (`kube::Error::Api`, whose `Display` appends a `Debug` dump
/// of the whole answer) is told by its code, reason and message alone. Each
/// level's words go through berth's one redaction point.
pub(crate) fn error(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut level = Some(error);
    while let Some(current) = level {
        if let Some(status) = api_status(current) {
            // The reason is the server's words too: redacted like the message.
            parts.push(format!(
                "{} {}: {}",
                status.code,
                berth_io::redact::peer_text(&status.reason),
                berth_io::redact::peer_text(&status.message)
            ));
            break;
        }
        let text = current.to_string();
        let own = match current.source() {
            Some(below) => text.replace(&below.to_string(), ""),
            None => text,
        };
        let own = own_words(&own);
        if !own.is_empty() {
            parts.push(berth_io::redact::peer_text(own));
        }
        level = current.source();
    }
    parts.join(": ").replace('"', "'")
}

/// A level's text with the level below cut out: the separators left at its end
/// go (`error trying to connect: `, `X (`), and a `)` only when it closed the
/// cut-out text (`Connection refused (os error 111)` keeps its own).
fn own_words(text: &str) -> &str {
    let separators = [':', '(', ' '];
    let mut own = text.trim().trim_end_matches(separators);
    loop {
        if let Some(rest) = own.strip_suffix("()") {
            own = rest.trim_end_matches(separators);
        } else if own.ends_with(')') && own.matches('(').count() < own.matches(')').count() {
            own = own[..own.len() - 1].trim_end_matches(separators);
        } else {
            return own.trim();
        }
    }
}

/// What the API server answered, when `error` is its answer.
fn api_status<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a kube::core::Status> {
    match error.downcast_ref::<kube::Error>() {
        Some(kube::Error::Api(status)) => Some(status),
        _ => error.downcast_ref::<kube::core::Status>(),
    }
}

/// A message that is text already (a status condition's), safe for the log.
pub(crate) fn text(message: &str) -> String {
    berth_io::redact::peer_text(message).replace('"', "'")
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
        let mut seen = berth_io::locked(&self.seen);
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
    fn a_levels_own_parentheses_are_kept() {
        assert_eq!(
            super::own_words("Connection refused (os error 111)"),
            "Connection refused (os error 111)"
        );
        assert_eq!(
            super::own_words("client error (Connect): "),
            "client error (Connect)"
        );
        assert_eq!(
            super::own_words("failed to connect ()"),
            "failed to connect"
        );
    }

    #[test]
    fn tokens_and_debug_dumps_never_reach_the_log() {
        // A watch's initial list answered 401 by a server that echoes the request.
        let status = kube::core::Status {
            status: Some(kube::core::response::StatusSummary::Failure),
            code: 401,
            message: "request carried Authorization: Bearer s3cr3t-token".into(),
            reason: "Unauthorized".into(),
            details: None,
            metadata: None,
        };
        let api = kube::Error::Api(Box::new(status));
        let watch = kube::runtime::watcher::Error::InitialListFailed(api);
        let logged = super::error(&watch);
        assert!(!logged.contains("s3cr3t"), "{logged}");
        assert!(!logged.contains("Status {"), "{logged}");
        assert!(!logged.contains('"'), "{logged}");
        assert_eq!(
            logged,
            "failed to perform initial object list: 401 Unauthorized: request carried Authorization: Bearer <redacted>"
        );
        assert_eq!(
            super::text("plain (not a dump) text"),
            "plain (not a dump) text"
        );
        // A hostile server may put the token in `reason` as well.
        let echoed = kube::core::Status {
            status: Some(kube::core::response::StatusSummary::Failure),
            code: 401,
            message: String::new(),
            reason: "Authorization: Bearer s3cr3t-token".into(),
            details: None,
            metadata: None,
        };
        let logged = super::error(&kube::Error::Api(Box::new(echoed)));
        assert!(!logged.contains("s3cr3t"), "{logged}");
    }
}
