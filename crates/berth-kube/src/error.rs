//! Cluster failures, typed so a caller can tell a timeout from an RBAC refusal
//! (the controller's status conditions do), each displayed as one line that
//! says what to do. The client error stays attached as the source, as a
//! [`ClientError`]: one short line in a printed chain, never kube's dump.

use berth_io::redact::peer_text;
use std::time::Duration;

use berth_core::cluster::{ObjectRef, PlanError};

/// A failure talking to the cluster.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// No usable kubeconfig or in-cluster configuration.
    #[error("{message}")]
    Config {
        /// What is wrong and how to fix it.
        message: String,
        /// The client's error, when there is one.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The API server did not answer.
    #[error("cannot reach the API server at {server} ({cause}); is the cluster up and the kubeconfig current?")]
    Unreachable {
        /// The server URL from the kubeconfig.
        server: String,
        /// The innermost cause (`Connection refused (os error 111)`).
        cause: String,
        /// The client's error.
        #[source]
        source: ClientError,
    },
    /// RBAC refused a request.
    #[error("{}", forbidden(request, message))]
    Forbidden {
        /// What was refused.
        request: Box<Refused>,
        /// The server's message.
        message: String,
        /// The client's error (the server's answer).
        #[source]
        source: ClientError,
    },
    /// The objects cannot be planned (a kind the cluster does not serve).
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// Server-side apply found fields another manager owns.
    #[error("{object}: apply conflicts with other field managers:\n{}\n  help: these fields were set by someone else; re-run with --force-conflicts to take them over, or remove them from the manifests", conflicts.iter().map(|(field, manager)| format!("  {field} (owned by {manager})")).collect::<Vec<_>>().join("\n"))]
    Conflict {
        /// The object.
        object: Box<ObjectRef>,
        /// `(field path, manager)`.
        conflicts: Vec<(String, String)>,
    },
    /// The object's namespace does not exist (yet).
    #[error("apply {object}: {message}; create the namespace first, or add it to the manifests")]
    NamespaceMissing {
        /// The object.
        object: Box<ObjectRef>,
        /// The server's message.
        message: String,
    },
    /// What was asked for does not exist (404).
    #[error("{action}: not found ({message})")]
    NotFound {
        /// What berth was doing.
        action: String,
        /// The server's message.
        message: String,
        /// The client's error (the server's answer).
        #[source]
        source: ClientError,
    },
    /// The server refused an object as invalid (422, 400).
    #[error("{action}: {message}")]
    Invalid {
        /// What berth was doing.
        action: String,
        /// The server's message (which field, why).
        message: String,
        /// The client's error (the server's answer).
        #[source]
        source: ClientError,
    },
    /// A request got no answer in time.
    #[error("{action}: the API server did not answer within {} s; is it overloaded, or the connection stalled?", after.as_secs())]
    Timeout {
        /// What berth was doing.
        action: String,
        /// How long berth waited.
        after: Duration,
    },
    /// A workload's rollout reported that it will not finish.
    #[error("rollout of {object}: failed: {reason}; nothing was deleted, `berth rollback` re-applies the previous generation")]
    RolloutFailed {
        /// The workload.
        object: Box<ObjectRef>,
        /// The failing condition's reason and message.
        reason: String,
    },
    /// A workload's rollout did not finish within the timeout.
    #[error("rollout of {object}: timed out after {} s: {state}; nothing was deleted", after.as_secs())]
    RolloutTimeout {
        /// The workload.
        object: Box<ObjectRef>,
        /// The timeout.
        after: Duration,
        /// Where the rollout stood.
        state: String,
    },
    /// A CRD applied here did not become Established.
    #[error("{object} is not Established after {} s; check `kubectl describe` for its conditions", after.as_secs())]
    NotEstablished {
        /// The CRD.
        object: Box<ObjectRef>,
        /// How long berth waited.
        after: Duration,
    },
    /// An apply record of that sequence exists already: another apply of the
    /// project recorded it at the same time, or (the controller) a deposed
    /// leader did, or the records listed were not all there were.
    #[error("create {object}: it exists already: another apply of this project recorded the same sequence at the same time (or this controller lost its leadership); nothing was overwritten, run again")]
    RecordExists {
        /// The record Secret.
        object: Box<ObjectRef>,
    },
    /// berth's apply records: too large, unreadable, or nothing to roll back to.
    #[error("{action}: {message}")]
    Record {
        /// What berth was doing.
        action: String,
        /// What is wrong and what to do.
        message: String,
    },
    /// Any other API error.
    #[error("{action}: {message}")]
    Api {
        /// What berth was doing (`patch deployments.apps in namespace dev`).
        action: String,
        /// The HTTP status, when the server answered.
        code: Option<u16>,
        /// The server's message.
        message: String,
        /// The client's error.
        #[source]
        source: ClientError,
    },
}

/// The request RBAC refused, as RBAC names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// `list`, `patch`, `create`...
    pub verb: String,
    /// `pods`, `deployments.apps`...
    pub resource: String,
    /// The namespace (`<cluster>` for cluster-scoped objects).
    pub namespace: String,
    /// The API server's URL, named when no namespace is (K09 of #46: a 403 on discovery
    /// said "`discover` … in namespace `<cluster>`", no RBAC terms and no server).
    pub server: String,
}

/// The client's error behind a [`ClusterError`], kept whole for a caller that
/// needs it ([`ClientError::client`]) and shown as one short line of its own.
/// kube's `Display` of an API answer appends a `Debug` dump of the whole answer
/// (which may echo the request, credentials included), and a chain printed with
/// `{:#}` (`berth dev`'s events, the controller's exit) shows every level: so
/// this level says only the HTTP status or the class of failure (the level above
/// already said the server's words, redacted), and it ends the chain.
pub struct ClientError(Box<kube::Error>);

impl ClientError {
    /// The client's error as kube gave it.
    pub fn client(&self) -> &kube::Error {
        &self.0
    }
}

impl From<kube::Error> for ClientError {
    fn from(error: kube::Error) -> Self {
        ClientError(Box::new(error))
    }
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &*self.0 {
            kube::Error::Api(status) => write!(
                f,
                "the API server answered HTTP {} ({})",
                status.code,
                peer_text(&status.reason)
            ),
            kube::Error::HyperError(_) | kube::Error::Service(_) => {
                f.write_str("the connection failed")
            }
            kube::Error::Auth(_) => f.write_str("authentication failed"),
            kube::Error::SerdeError(_) => f.write_str("the answer could not be decoded"),
            kube::Error::ReadEvents(_) => f.write_str("reading the answer failed"),
            _ => f.write_str("the Kubernetes client failed"),
        }
    }
}

/// As its `Display`: a `{:?}` of a [`ClusterError`] must not dump the answer either.
impl std::fmt::Debug for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClientError({self})")
    }
}

/// The chain ends here: what lies below is kube's own error, reached through
/// [`ClientError::client`], not printed.
impl std::error::Error for ClientError {}

/// What kind of failure a [`ClusterError`] or a client error is: decided once,
/// here, for every caller — the controller's condition reasons and retry policy,
/// the CLI's exit, metrics. Never read from message text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// No usable kubeconfig or in-cluster configuration, or credentials refused (401).
    Config,
    /// The API server did not answer, or not in time.
    Unreachable,
    /// RBAC refused the request (403).
    Forbidden,
    /// The object or namespace asked for does not exist (404).
    NotFound,
    /// The API server refused the object as invalid (400, 422).
    Invalid,
    /// Another field manager owns a field, or the object changed under the request (409).
    Conflict,
    /// A kind the cluster does not serve, or a plan that cannot be made.
    Plan,
    /// A workload's rollout failed or timed out.
    Rollout,
    /// Anything else the API server or berth's records said.
    Other,
}

impl Kind {
    /// Whether the cause may pass without anyone changing anything: a retry soon
    /// makes sense (a timeout, an unreachable server, a conflict with a writer).
    pub fn is_transient(self) -> bool {
        matches!(self, Kind::Unreachable | Kind::Conflict)
    }

    /// The kind of a client error not yet explained into a [`ClusterError`].
    pub fn of_client(error: &kube::Error) -> Kind {
        match error {
            kube::Error::Api(status) => Kind::of_status(status.code),
            kube::Error::Auth(_) => Kind::Config,
            kube::Error::HyperError(_) | kube::Error::Service(_) => Kind::Unreachable,
            _ => Kind::Other,
        }
    }

    fn of_status(code: u16) -> Kind {
        match code {
            401 => Kind::Config,
            403 => Kind::Forbidden,
            404 => Kind::NotFound,
            400 | 422 => Kind::Invalid,
            409 => Kind::Conflict,
            408 | 429 | 500..=599 => Kind::Unreachable,
            _ => Kind::Other,
        }
    }
}

impl ClusterError {
    /// What kind of failure this is (see [`Kind`]).
    pub fn kind(&self) -> Kind {
        match self {
            ClusterError::Config { .. } => Kind::Config,
            ClusterError::Unreachable { .. } | ClusterError::Timeout { .. } => Kind::Unreachable,
            ClusterError::Forbidden { .. } => Kind::Forbidden,
            ClusterError::NotFound { .. } | ClusterError::NamespaceMissing { .. } => Kind::NotFound,
            ClusterError::Invalid { .. } => Kind::Invalid,
            ClusterError::Conflict { .. } | ClusterError::RecordExists { .. } => Kind::Conflict,
            ClusterError::Plan(_) => Kind::Plan,
            ClusterError::RolloutFailed { .. }
            | ClusterError::RolloutTimeout { .. }
            | ClusterError::NotEstablished { .. } => Kind::Rollout,
            ClusterError::Api {
                code: Some(code), ..
            } => Kind::of_status(*code),
            ClusterError::Api { code: None, .. } | ClusterError::Record { .. } => Kind::Other,
        }
    }
}

/// The innermost cause of an error chain, for one-line messages.
pub(crate) fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(next) = current.source() {
        current = next;
    }
    current.to_string()
}

/// Turns a client error from `verb` on `resource` in `namespace` into a [`ClusterError`].
pub(crate) fn explain(
    error: kube::Error,
    server: &str,
    verb: &str,
    resource: &str,
    namespace: &str,
) -> ClusterError {
    let action = if namespace == "<cluster>" {
        // Cluster-scoped objects and discovery: no namespace to name, the server instead.
        format!("{verb} {resource} from {server}")
    } else {
        format!("{verb} {resource} in namespace `{namespace}`")
    };
    match &error {
        // The OwnerReferencesPermissionEnforcement admission plugin (on in
        // OpenShift) refuses an owner reference with blockOwnerDeletion unless the
        // writer may update the owner's finalizers: that, not the verb asked, is
        // the missing permission. Its message is the only place the API says so.
        kube::Error::Api(status)
            if status.code == 403 && status.message.contains("cannot set blockOwnerDeletion") =>
        {
            ClusterError::Forbidden {
                request: Box::new(Refused {
                    verb: "update".into(),
                    resource: "the owner's finalizers (e.g. berths/finalizers)".into(),
                    namespace: namespace.into(),
                    server: server.into(),
                }),
                message: format!(
                    "needed to {verb} {resource} with an owner reference that blocks deletion, under the OwnerReferencesPermissionEnforcement admission plugin; the server said: {}",
                    peer_text(&status.message)
                ),
                source: error.into(),
            }
        }
        kube::Error::Api(status) if status.code == 403 => ClusterError::Forbidden {
            request: Box::new(Refused {
                verb: verb.into(),
                resource: resource.into(),
                namespace: namespace.into(),
                server: server.into(),
            }),
            message: peer_text(&status.message),
            source: error.into(),
        },
        kube::Error::Api(status) if status.code == 404 => ClusterError::NotFound {
            action,
            message: peer_text(&status.message),
            source: error.into(),
        },
        kube::Error::Api(status) if matches!(status.code, 400 | 422) => ClusterError::Invalid {
            action,
            message: peer_text(&status.message),
            source: error.into(),
        },
        kube::Error::Api(status) => ClusterError::Api {
            action,
            code: Some(status.code),
            message: peer_text(&status.message),
            source: error.into(),
        },
        // An answer past berth's bound (http-body-util's `Limited`).
        _ if root_cause(&error) == "length limit exceeded" => ClusterError::Api {
            action,
            code: None,
            message: format!(
                "the answer is larger than {}, berth's bound on one answer; is {server} a Kubernetes API server (a proxy in front of it may be streaming)?",
                berth_io::limits::size(berth_io::limits::API_BODY as u64)
            ),
            source: error.into(),
        },
        // Not JSON: a login page, a proxy's HTML, an empty redirect.
        kube::Error::SerdeError(_) => ClusterError::Api {
            action,
            code: None,
            message: format!(
                "the answer is not the API server's JSON ({}); is {server} the API server itself, not a proxy, a login page or a redirect (berth does not follow redirects)?",
                peer_text(&root_cause(&error))
            ),
            source: error.into(),
        },
        kube::Error::HyperError(_) | kube::Error::Service(_) => ClusterError::Unreachable {
            server: server.into(),
            cause: peer_text(&root_cause(&error)),
            source: error.into(),
        },
        kube::Error::Auth(auth) => ClusterError::Config {
            message: format!("cannot authenticate to {server}: {}", auth_message(auth)),
            source: Some(Box::new(ClientError::from(error))),
        },
        _ => ClusterError::Api {
            action,
            code: None,
            message: peer_text(&root_cause(&error)),
            source: error.into(),
        },
    }
}

/// What went wrong authenticating, without what a credential plugin printed on
/// standard output (its credential) or a dump of the process: the exit status
/// and the plugin's own words on stderr.
pub(crate) fn auth_message(error: &kube::client::AuthError) -> String {
    use kube::client::AuthError;
    let fix = "check the kubeconfig's user (token, certificate or credential plugin)";
    match error {
        AuthError::AuthExecRun { out, .. } => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let said: String = stderr.trim().chars().take(500).collect();
            let status = out
                .status
                .code()
                .map_or_else(|| "was killed by a signal".to_string(), |c| format!("exited {c}"));
            if said.is_empty() {
                format!("the kubeconfig user's credential plugin {status}; {fix}")
            } else {
                format!("the kubeconfig user's credential plugin {status}: {said}; {fix}")
            }
        }
        AuthError::AuthExecParse(_) => format!(
            "the kubeconfig user's credential plugin printed something that is not an ExecCredential; {fix}"
        ),
        AuthError::AuthExecStart(e) => {
            format!("the kubeconfig user's credential plugin cannot be started ({e}); is it installed and on PATH?")
        }
        // The other variants describe themselves without credentials.
        other => format!("{other}; {fix}"),
    }
}

/// A 403 as RBAC says it: the verb and resource in a namespace; for discovery and
/// cluster-scoped objects, the server that refused and a hint at the credentials (a server
/// that refuses discovery usually does not accept who is asking).
fn forbidden(request: &Refused, message: &str) -> String {
    let Refused {
        verb,
        resource,
        namespace,
        server,
    } = request;
    if namespace == "<cluster>" && verb == "discover" {
        return format!(
            "forbidden: the API server {server} refused to list {resource} ({message}); the kubeconfig's credentials are not accepted there, or RBAC lets them read nothing: check the user and context"
        );
    }
    if namespace == "<cluster>" {
        return format!("forbidden: RBAC does not allow `{verb}` on `{resource}` (cluster-wide) at {server} ({message})");
    }
    format!("forbidden: RBAC does not allow `{verb}` on `{resource}` in namespace `{namespace}` ({message})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_credential_plugin_never_shows_its_output() {
        use std::os::unix::process::ExitStatusExt;
        let error = kube::client::AuthError::AuthExecRun {
            cmd: "KUBERNETES_EXEC_INFO=... \"sh\" \"-c\" \"echo token\"".into(),
            out: Box::new(std::process::Output {
                status: std::process::ExitStatus::from_raw(3 << 8),
                stdout: b"{\"token\": \"s3cr3t\"}".to_vec(),
                stderr: b"login expired\n".to_vec(),
            }),
        };
        let message = auth_message(&error);
        assert_eq!(message, "the kubeconfig user's credential plugin exited 3: login expired; check the kubeconfig's user (token, certificate or credential plugin)");
        assert!(!message.contains("s3cr3t") && !message.contains("Output"));
    }

    /// #47 item 6: every answer the server gave stays attached as the source, and
    /// the whole chain, printed as `{:#}` prints it, is lines of words: no `Debug`
    /// dump of the answer, no credential it echoed, the server's words once.
    #[test]
    fn a_printed_chain_has_the_status_but_no_dump_and_no_credential() {
        let answer = |code: u16, reason: &str| {
            kube::Error::Api(Box::new(kube::core::Status {
                code,
                reason: reason.into(),
                message: "denied: Authorization: Bearer s3cr3t-token".into(),
                ..kube::core::Status::default()
            }))
        };
        for (code, reason, kind) in [
            (403, "Forbidden", Kind::Forbidden),
            (404, "NotFound", Kind::NotFound),
            (422, "Invalid", Kind::Invalid),
            (500, "InternalError", Kind::Unreachable),
        ] {
            let error = explain(
                answer(code, reason),
                "https://api:6443",
                "patch",
                "pods",
                "dev",
            );
            assert_eq!(error.kind(), kind);
            let mut chain = vec![error.to_string()];
            let mut level = std::error::Error::source(&error);
            while let Some(below) = level {
                chain.push(below.to_string());
                level = below.source();
            }
            let printed = chain.join(": ");
            assert_eq!(chain.len(), 2, "{printed}");
            assert!(
                printed.ends_with(&format!(": the API server answered HTTP {code} ({reason})")),
                "{printed}"
            );
            assert!(
                !printed.contains("Status {") && !printed.contains("s3cr3t"),
                "{printed}"
            );
            assert!(!format!("{error:?}").contains("s3cr3t"), "{error:?}");
            let source =
                std::error::Error::source(&error).and_then(|s| s.downcast_ref::<ClientError>());
            assert!(
                matches!(source.map(ClientError::client), Some(kube::Error::Api(s)) if s.code == code)
            );
        }
    }

    /// #34 item 4: one classification, by type and status code, never by text.
    #[test]
    fn every_failure_has_one_kind() {
        let api = |code: Option<u16>| ClusterError::Api {
            action: "get".into(),
            code,
            message: "m".into(),
            source: kube::Error::LinesCodecMaxLineLengthExceeded.into(),
        };
        let status = |code: u16| {
            kube::Error::Api(Box::new(kube::core::Status {
                code,
                ..kube::core::Status::default()
            }))
        };
        let object = || {
            Box::new(ObjectRef {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                namespace: Some("n".into()),
                name: "web".into(),
            })
        };
        let table: Vec<(ClusterError, Kind)> = vec![
            (
                ClusterError::Config {
                    message: "m".into(),
                    source: None,
                },
                Kind::Config,
            ),
            (
                ClusterError::Timeout {
                    action: "a".into(),
                    after: Duration::from_secs(1),
                },
                Kind::Unreachable,
            ),
            (
                ClusterError::Forbidden {
                    request: Box::new(Refused {
                        verb: "v".into(),
                        resource: "r".into(),
                        namespace: "n".into(),
                        server: "s".into(),
                    }),
                    message: "m".into(),
                    source: status(403).into(),
                },
                Kind::Forbidden,
            ),
            (
                ClusterError::NotFound {
                    action: "a".into(),
                    message: "m".into(),
                    source: status(404).into(),
                },
                Kind::NotFound,
            ),
            (
                ClusterError::Invalid {
                    action: "a".into(),
                    message: "m".into(),
                    source: status(422).into(),
                },
                Kind::Invalid,
            ),
            (
                ClusterError::RecordExists { object: object() },
                Kind::Conflict,
            ),
            (
                ClusterError::RolloutFailed {
                    object: object(),
                    reason: "r".into(),
                },
                Kind::Rollout,
            ),
            (
                ClusterError::Record {
                    action: "a".into(),
                    message: "m".into(),
                },
                Kind::Other,
            ),
            (api(Some(401)), Kind::Config),
            (api(Some(409)), Kind::Conflict),
            (api(Some(429)), Kind::Unreachable),
            (api(Some(503)), Kind::Unreachable),
            (api(Some(418)), Kind::Other),
            (api(None), Kind::Other),
        ];
        for (error, kind) in table {
            assert_eq!(error.kind(), kind, "{error}");
        }
        assert!(Kind::Unreachable.is_transient() && Kind::Conflict.is_transient());
        assert!(!Kind::Forbidden.is_transient() && !Kind::Config.is_transient());
    }
}
