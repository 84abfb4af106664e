//! Kubeconfig files read as kubectl reads them, with bounds kube-rs does not
//! have: each file is a regular file of at most [`berth_io::limits::FILE`]
//! (`KUBECONFIG=/dev/zero` must not fill memory), and the files it names —
//! token, client certificate and key, CA — are read the same way, by berth,
//! before kube-rs sees the config, so every failure names the file and the
//! user or cluster it belongs to. For a run of the CLI, an `exec:` credential
//! plugin is run here too, once, with a deadline and a bound on its output
//! (a plugin waiting for a browser or a GPG unlock never ends).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use base64::Engine as _;
use kube::config::{AuthInfo, Kubeconfig};

use crate::error::ClusterError;

fn fail(message: String) -> ClusterError {
    ClusterError::Config {
        message,
        source: None,
    }
}

/// One kubeconfig file, its relative paths made absolute against its directory
/// (as kubectl and kube-rs do).
pub(crate) fn read(path: &Path) -> Result<Kubeconfig, ClusterError> {
    let shown = path.display();
    let bytes = berth_io::read_file(path, false)
        .map_err(|e| fail(format!("cannot read kubeconfig {shown}: {e}")))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| fail(format!("kubeconfig {shown} is not UTF-8 text")))?;
    parse(
        &text,
        path.parent().unwrap_or(Path::new(".")),
        &shown.to_string(),
    )
}

/// A kubeconfig from its text, relative paths made absolute against `dir`;
/// `shown` names it in messages. The fuzz target's entry.
pub fn parse(text: &str, dir: &Path, shown: &str) -> Result<Kubeconfig, ClusterError> {
    let mut config = Kubeconfig::from_yaml(text).map_err(|e| {
        fail(format!(
            "kubeconfig {shown} is not a valid kubeconfig: {}; the value is not shown (a kubeconfig holds credentials): compare it with `kubectl config view`",
            where_and_what(text, &crate::error::root_cause(&e))
        ))
    })?;
    let absolute = |p: &mut Option<String>| {
        if let Some(value) = p.as_mut() {
            if !value.is_empty() && Path::new(value.as_str()).is_relative() {
                *value = dir.join(&*value).display().to_string();
            }
        }
    };
    for named in &mut config.clusters {
        if let Some(cluster) = named.cluster.as_mut() {
            absolute(&mut cluster.certificate_authority);
        }
    }
    for named in &mut config.auth_infos {
        if let Some(user) = named.auth_info.as_mut() {
            absolute(&mut user.client_certificate);
            absolute(&mut user.client_key);
            absolute(&mut user.token_file);
            if let Some(exec) = user.exec.as_mut() {
                // As client-go: a command with a separator is a path, else looked up on PATH.
                if exec.command.as_deref().is_some_and(|c| c.contains('/')) {
                    absolute(&mut exec.command);
                }
            }
        }
    }
    Ok(config)
}

/// `line 7, column 22 (users[0].user.client-key-data): expected string scalar`
/// from the YAML parser's error, with nothing of the input: serde-saphyr's
/// message quotes the lines around the error, and those hold tokens and keys.
/// The key is found in berth-yaml's own tree at the parser's position; the
/// parser's words are kept only when they quote nothing.
fn where_and_what(text: &str, error: &str) -> String {
    let first = error.lines().next().unwrap_or_default();
    let located = first.find("line ").and_then(|at| {
        let rest = &first[at + 5..];
        let (line, rest) = rest.split_once(" column ")?;
        let (column, what) = rest.split_once(':').unwrap_or((rest, ""));
        Some((
            line.trim().parse::<u32>().ok()?,
            column.trim().parse::<u32>().ok()?,
            what.trim(),
        ))
    });
    let Some((line, column, what)) = located else {
        // No position: the tree's own loader says where, if the YAML is malformed.
        return match berth_yaml::load_all(text, berth_yaml::Limits::default()) {
            Err(e) => format!(
                "line {}, column {}: not valid YAML",
                e.pos().line,
                e.pos().column
            ),
            Ok(_) => "a field has the wrong type or form".into(),
        };
    };
    let safe = !what.is_empty()
        && what.len() <= 120
        && what
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || " ,.-_()".contains(c));
    let what = if safe {
        what
    } else {
        "a value of the wrong type or form"
    };
    let pos = berth_yaml::Pos { line, column };
    let key = berth_yaml::load_all(text, berth_yaml::Limits::default())
        .ok()
        .and_then(|docs| docs.first().and_then(|doc| key_at(doc, pos, String::new())));
    match key {
        Some(key) => format!("line {line}, column {column} (`{key}`): {what}"),
        None => format!("line {line}, column {column}: {what}"),
    }
}

/// The dotted path of the last key at or before `pos` (`users[0].user.token`).
fn key_at(node: &berth_yaml::Node, pos: berth_yaml::Pos, path: String) -> Option<String> {
    let mut best = None;
    if let Some(entries) = node.as_map() {
        for (key, value) in entries {
            if key.pos > pos {
                break;
            }
            let name = key
                .as_str()
                .map(berth_io::shown)
                .unwrap_or_else(|| "?".into());
            let here = if path.is_empty() {
                name
            } else {
                format!("{path}.{name}")
            };
            best = key_at(value, pos, here.clone()).or(Some(here));
        }
    } else if let Some(items) = node.as_seq() {
        for (i, item) in items.iter().enumerate() {
            if item.pos > pos {
                break;
            }
            best = key_at(item, pos, format!("{path}[{i}]")).or(best);
        }
    }
    best
}

/// The files of a `KUBECONFIG` list, merged (the first to set a value wins);
/// files of the list that do not exist are skipped, as kubectl does, and when
/// none exists every one is named.
pub(crate) fn read_list(list: &std::ffi::OsStr) -> Result<(Kubeconfig, String), ClusterError> {
    let paths: Vec<PathBuf> = std::env::split_paths(list)
        .filter(|p| !p.as_os_str().is_empty())
        .collect();
    let present: Vec<&PathBuf> = paths.iter().filter(|p| p.exists()).collect();
    if present.is_empty() {
        let all: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(fail(format!(
            "KUBECONFIG names {} but {}; point KUBECONFIG at your cluster's kubeconfig, or unset it to use ~/.kube/config",
            all.join(", "),
            if all.len() == 1 { "it does not exist" } else { "none of them exists" }
        )));
    }
    let mut merged: Option<Kubeconfig> = None;
    for path in &present {
        let file = read(path)?;
        merged = Some(match merged {
            None => file,
            Some(m) => m
                .merge(file)
                .map_err(|e| fail(format!("cannot merge kubeconfig {}: {e}", path.display())))?,
        });
    }
    let shown: Vec<String> = present.iter().map(|p| p.display().to_string()).collect();
    Ok((
        merged.unwrap_or_default(),
        format!("kubeconfig {}", shown.join(":")),
    ))
}

/// `~/.kube/config`, when it exists.
pub(crate) fn default_path() -> Option<PathBuf> {
    let home = berth_io::env::var_os("HOME").filter(|h| !h.is_empty())?;
    let path = Path::new(&home).join(".kube").join("config");
    path.exists().then_some(path)
}

/// Prepares the user and cluster of `context` (else the current context) for
/// kube-rs: files they name are read (bounded) into their `*-data` fields, a
/// token file's trailing newline is dropped (as kubectl does), inline data is
/// checked for base64, `proxy-url` is refused, and — when `run_exec` — an exec
/// plugin is run once within `timeout`, its credential taking its place.
pub fn prepare(
    config: &mut Kubeconfig,
    context: Option<&str>,
    timeout: Duration,
    run_exec: bool,
) -> Result<(), ClusterError> {
    let Some(name) = context
        .map(str::to_string)
        .or_else(|| config.current_context.clone())
    else {
        return Ok(()); // kube-rs says that no context is set
    };
    let Some(chosen) = config
        .contexts
        .iter()
        .find(|c| c.name == name)
        .and_then(|c| c.context.clone())
    else {
        return Ok(()); // kube-rs names the missing context
    };
    if let Some(cluster) = config
        .clusters
        .iter_mut()
        .find(|c| c.name == chosen.cluster)
        .and_then(|c| c.cluster.as_mut())
    {
        let what = format!("kubeconfig cluster `{}`", chosen.cluster);
        if cluster.proxy_url.as_deref().is_some_and(|p| !p.is_empty()) {
            return Err(fail(format!(
                "{what} sets `proxy-url`, which berth does not support; remove it (or use a context without a proxy) and reach the API server directly"
            )));
        }
        if let Some(path) = cluster.certificate_authority.take() {
            if cluster.certificate_authority_data.is_none() {
                let bytes = file(&path, &what, "certificate-authority")?;
                cluster.certificate_authority_data = Some(encode(&bytes));
            }
        }
        if let Some(data) = &cluster.certificate_authority_data {
            check_base64(data, &what, "certificate-authority-data")?;
        }
    }
    let Some(user_name) = chosen.user.clone() else {
        return Ok(());
    };
    let Some(user) = config
        .auth_infos
        .iter_mut()
        .find(|u| u.name == user_name)
        .and_then(|u| u.auth_info.as_mut())
    else {
        return Ok(());
    };
    prepare_user(
        user,
        &format!("kubeconfig user `{user_name}`"),
        timeout,
        run_exec,
    )
}

fn prepare_user(
    user: &mut AuthInfo,
    what: &str,
    timeout: Duration,
    run_exec: bool,
) -> Result<(), ClusterError> {
    if let Some(path) = user.token_file.take() {
        // An inline token wins over the file, as in kube-rs and kubectl.
        if user.token.is_none() {
            let bytes = file(&path, what, "tokenFile")?;
            let token = String::from_utf8(bytes)
                .map_err(|_| fail(format!("{what}: tokenFile {path} is not text")))?;
            user.token = Some(token.trim().to_string().into());
        }
    }
    if let Some(path) = user.client_certificate.take() {
        let bytes = file(&path, what, "client-certificate")?;
        user.client_certificate_data = Some(encode(&bytes));
    }
    if let Some(path) = user.client_key.take() {
        let bytes = file(&path, what, "client-key")?;
        user.client_key_data = Some(encode(&bytes).into());
    }
    if let Some(data) = &user.client_certificate_data {
        check_base64(data, what, "client-certificate-data")?;
    }
    if let Some(data) = &user.client_key_data {
        use secrecy::ExposeSecret as _;
        check_base64(data.expose_secret(), what, "client-key-data")?;
    }
    if run_exec {
        if let Some(exec) = user.exec.take() {
            let credential = run_plugin(&exec, what, timeout)?;
            if let Some(token) = credential.token {
                user.token = Some(token.into());
            }
            if let Some(cert) = credential.client_certificate_data {
                user.client_certificate_data = Some(encode(cert.as_bytes()));
            }
            if let Some(key) = credential.client_key_data {
                user.client_key_data = Some(encode(key.as_bytes()).into());
            }
        }
    }
    Ok(())
}

fn encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A file a kubeconfig names, bounded, naming who names it when it fails.
fn file(path: &str, what: &str, field: &str) -> Result<Vec<u8>, ClusterError> {
    berth_io::read_file(Path::new(path), false)
        .map_err(|e| fail(format!("{what}: cannot read its {field} {path}: {e}")))
}

fn check_base64(data: &str, what: &str, field: &str) -> Result<(), ClusterError> {
    let compact: String = data.split_whitespace().collect();
    base64::engine::general_purpose::STANDARD
        .decode(compact.as_bytes())
        .map(drop)
        .map_err(|_| {
            fail(format!(
                "{what}: `{field}` is not base64; it holds the PEM file base64-encoded (`base64 -w0 FILE`), or name the file with `{}` instead",
                field.trim_end_matches("-data")
            ))
        })
}

/// What an exec plugin gives back (`ExecCredential.status`).
struct PluginCredential {
    token: Option<String>,
    client_certificate_data: Option<String>,
    client_key_data: Option<String>,
}

/// Runs an exec plugin as client-go does (its `args` and `env`, the
/// `KUBERNETES_EXEC_INFO` it reads), not interactively, within `timeout`.
fn run_plugin(
    exec: &kube::config::ExecConfig,
    what: &str,
    timeout: Duration,
) -> Result<PluginCredential, ClusterError> {
    let Some(program) = exec.command.as_deref().filter(|c| !c.is_empty()) else {
        return Err(fail(format!("{what}: its `exec:` names no `command`")));
    };
    let plugin = format!("{what}: credential plugin `{}`", berth_io::shown(program));
    let mut command = Command::new(program);
    command.args(exec.args.iter().flatten());
    for pair in exec.env.iter().flatten() {
        if let (Some(name), Some(value)) = (pair.get("name"), pair.get("value")) {
            command.env(name, value);
        }
    }
    let api_version = exec
        .api_version
        .clone()
        .unwrap_or_else(|| "client.authentication.k8s.io/v1".into());
    let info = serde_json::json!({
        "apiVersion": api_version,
        "kind": "ExecCredential",
        "spec": {"interactive": false},
    });
    command.env("KUBERNETES_EXEC_INFO", info.to_string());
    for name in exec.drop_env.iter().flatten() {
        command.env_remove(name);
    }
    let timeout = timeout.min(berth_io::limits::HELPER_TIMEOUT);
    let output = berth_io::run(&mut command, b"", timeout, berth_io::limits::HELPER_OUTPUT)
        .map_err(|e| match e {
            berth_io::RunError::Spawn(e) => {
                let hint = exec
                    .install_hint
                    .as_deref()
                    .map(|h| format!(" ({})", berth_io::shown(h.trim())))
                    .unwrap_or_default();
                fail(format!(
                    "{plugin} cannot be run: {e}; install it or fix the kubeconfig{hint}"
                ))
            }
            other => fail(format!("{plugin}: {other}")),
        })?;
    if !output.status.success() {
        let status = output.status.code().map_or_else(
            || "was killed by a signal".into(),
            |c| format!("exited {c}"),
        );
        let said = berth_io::redact::peer_text(String::from_utf8_lossy(&output.stderr).trim());
        let said = if said.is_empty() {
            String::new()
        } else {
            format!(": {said}")
        };
        return Err(fail(format!(
            "{plugin} {status}{said}; check the kubeconfig user (what it printed on stdout is not shown)"
        )));
    }
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).map_err(|_| {
        fail(format!(
            "{plugin} printed something that is not an ExecCredential JSON object"
        ))
    })?;
    let status = json.get("status");
    let text = |key: &str| {
        status
            .and_then(|s| s.get(key))
            .and_then(serde_json::Value::as_str)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let credential = PluginCredential {
        token: text("token"),
        client_certificate_data: text("clientCertificateData"),
        client_key_data: text("clientKeyData"),
    };
    if credential.token.is_none() && credential.client_certificate_data.is_none() {
        return Err(fail(format!(
            "{plugin} gave an ExecCredential without a token or client certificate"
        )));
    }
    Ok(credential)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    /// Sweep 4, K98/K99/K99b: every malformed form, with a secret planted in every
    /// field near the error; no message holds any of them.
    #[test]
    #[allow(clippy::useless_format)] // one shape for every form of the table
    fn k98_k99_no_secret_of_a_malformed_kubeconfig_reaches_its_message() {
        const SECRETS: [&str; 5] = [
            "TOKENSECRET",
            "KEYSECRET",
            "PASSSECRET",
            "CERTSECRET",
            "CASECRET",
        ];
        let user = "    token: TOKENSECRET\n    client-key-data: KEYSECRET\n    password: PASSSECRET\n    client-certificate-data: CERTSECRET\n";
        let cluster = "- name: c\n  cluster:\n    server: https://127.0.0.1:1\n    certificate-authority-data: CASECRET\n";
        let forms = [
            // Wrong types, at and around every secret field.
            format!("users:\n- name: a\n  user:\n{user}    exec: TOKENSECRET\n"),
            format!("users:\n- name: a\n  user:\n{user}    username: [TOKENSECRET]\n"),
            format!("users:\n- name: a\n  user:\n    token: [TOKENSECRET]\n    client-key-data: KEYSECRET\n"),
            format!("users:\n- name: a\n  user:\n    client-key-data: {{x: KEYSECRET}}\n    password: PASSSECRET\n"),
            format!("users:\n- name: a\n  user: {{token: TOKENSECRET, password: {{x: PASSSECRET}}}}\n"),
            "users: TOKENSECRET KEYSECRET PASSSECRET\n".to_string(),
            format!("clusters:\n{cluster}  extra: [CASECRET]\nusers: TOKENSECRET\n"),
            // Broken YAML next to the secrets.
            format!("users:\n- name: a\n  user:\n{user}  bad: x\n bad: KEYSECRET\n"),
            format!("users:\n- name: a\n  user:\n{user}    token: \"TOKENSECRET\n"),
            format!("users:\n- name: a\n  user:\n{user}    : : PASSSECRET\n"),
            format!("clusters:\n{cluster}users:\n- name: a\n  user:\n{user}\t- KEYSECRET\n"),
            format!("users:\n- name: a\n  user:\n{user}    token: TOKENSECRET\n"),
            format!("users:\n- name: a\n  user: &a\n{user}    x: *b\n"),
        ];
        for form in &forms {
            let Err(e) = super::parse(form, std::path::Path::new("/k"), "/k/config") else {
                continue;
            };
            let message = format!("{e} {e:?}");
            for secret in SECRETS {
                assert!(
                    !message.contains(secret),
                    "{secret} in: {message}\nfrom:\n{form}"
                );
            }
            assert!(message.contains("line "), "{message}");
        }
        let e = super::parse(&forms[2], std::path::Path::new("/k"), "/k/config").unwrap_err();
        assert_eq!(
            e.to_string(),
            "kubeconfig /k/config is not a valid kubeconfig: line 4, column 12 (`users[0].user.token`): expected string scalar; the value is not shown (a kubeconfig holds credentials): compare it with `kubectl config view`"
        );
    }
}
