//! The four configurations of a mirror plan, as `(relative path, bytes)`:
//! the same plan in each consumer's words, byte-identical for the same plan.

use std::collections::BTreeMap;

use berth_yaml::{Node, Pos};
use sha2::{Digest as _, Sha256};

use super::Entry;
use berth_core::warning::{Code, Warning};

/// OpenShift's `mirrorSourcePolicy`: may a node fall back to the source?
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SourcePolicy {
    /// Not written: OpenShift's default, `AllowContactingSource`.
    #[default]
    Default,
    /// `AllowContactingSource`.
    AllowContactingSource,
    /// `NeverContactSource`: a disconnected cluster never tries the source.
    NeverContactSource,
}

impl SourcePolicy {
    /// The value as OpenShift spells it, when written.
    fn as_str(self) -> Option<&'static str> {
        match self {
            SourcePolicy::Default => None,
            SourcePolicy::AllowContactingSource => Some("AllowContactingSource"),
            SourcePolicy::NeverContactSource => Some("NeverContactSource"),
        }
    }
}

/// How the configurations are written.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The project's name: object names and the registries.conf file name.
    pub project: String,
    /// IDMS/ITMS `mirrorSourcePolicy`.
    pub policy: SourcePolicy,
    /// Registry hosts served over plain HTTP (`--insecure-registry`), sources and mirrors.
    pub insecure: Vec<String>,
    /// containerd `skip_verify` for the mirror (a self-signed mirror).
    pub skip_verify: bool,
    /// containerd `ca` for the mirror: the CA file's path on the node.
    pub ca: Option<String>,
}

/// The files a plan writes, by path relative to the output directory, and a
/// warning when tag mirrors were needed.
pub fn files(entries: &[Entry], options: &Options) -> (BTreeMap<String, String>, Vec<Warning>) {
    let mut out = BTreeMap::new();
    let mut warnings = Vec::new();
    let (digests, tags): (Vec<&Entry>, Vec<&Entry>) = entries.iter().partition(|e| e.by_digest());
    if !digests.is_empty() {
        out.insert(
            "openshift/imagedigestmirrorset.yaml".to_string(),
            mirror_sets(
                &digests,
                options,
                "ImageDigestMirrorSet",
                "imageDigestMirrors",
            ),
        );
    }
    if !tags.is_empty() {
        out.insert(
            "openshift/imagetagmirrorset.yaml".to_string(),
            mirror_sets(&tags, options, "ImageTagMirrorSet", "imageTagMirrors"),
        );
        let names: Vec<&str> = tags.iter().map(|e| e.component.as_str()).collect();
        warnings.push(Warning::about(
            Code::TagMirror,
            names.join(", "),
            format!(
                "component(s) {} have no digest, so nodes reach their mirror by tag (ImageTagMirrorSet, `pull-from-mirror = \"all\"`): a tag can move on either registry; pin them (`berth pin`, then `berth mirror --locked`) for digest mirrors",
                names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    for (host, text) in containerd_hosts(entries, options) {
        out.insert(format!("containerd/certs.d/{host}/hosts.toml"), text);
    }
    if !entries.is_empty() {
        out.insert(
            format!("registries.conf.d/50-{}.conf", options.project),
            registries_conf(entries, options),
        );
    }
    (out, warnings)
}

/// One object per component, named from its project, component and content:
/// adding a component creates an object and modifies none (modifying a live
/// ImageDigestMirrorSet drains OpenShift's nodes; creating one does not).
fn mirror_sets(entries: &[&Entry], options: &Options, kind: &str, list: &str) -> String {
    let mut text = String::new();
    for entry in entries {
        let source = entry.source.repository().to_string();
        let mirror = entry.mirror.repository().to_string();
        let mut item = map();
        item.push_entry("source", string(&source));
        item.push_entry("mirrors", Node::seq_of([string(&mirror)]));
        if let Some(policy) = options.policy.as_str() {
            item.push_entry("mirrorSourcePolicy", string(policy));
        }
        let mut spec = map();
        spec.push_entry(list, Node::seq_of([item]));
        let mut labels = map();
        labels.push_entry("app.kubernetes.io/managed-by", string("berth"));
        labels.push_entry("berth.dev/project", string(&options.project));
        let mut metadata = map();
        metadata.push_entry("name", string(&object_name(options, entry)));
        metadata.push_entry("labels", labels);
        let mut object = map();
        object.push_entry("apiVersion", string("config.openshift.io/v1"));
        object.push_entry("kind", string(kind));
        object.push_entry("metadata", metadata);
        object.push_entry("spec", spec);
        if !text.is_empty() {
            text.push_str("---\n");
        }
        berth_yaml::write_document(&mut text, &object);
    }
    text
}

/// `PROJECT-COMPONENT-HASH`: a DNS subdomain; the hash covers the source and
/// the mirror, so a changed mirror is a new object, never an edit.
fn object_name(options: &Options, entry: &Entry) -> String {
    let content = format!(
        "{}\n{}\n{}",
        entry.source.repository(),
        entry.mirror.repository(),
        options.policy.as_str().unwrap_or_default()
    );
    let hash: String = Sha256::digest(content.as_bytes())
        .iter()
        .take(4)
        .map(|b| format!("{b:02x}"))
        .collect();
    let clean = |text: &str| -> String {
        text.to_ascii_lowercase()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' {
                    c
                } else {
                    '-'
                }
            })
            .collect::<String>()
            .trim_matches(['-', '.'])
            .to_string()
    };
    let mut base = format!("{}-{}", clean(&options.project), clean(&entry.component));
    base.truncate(240);
    format!("{}-{hash}", base.trim_end_matches(['-', '.']))
}

/// containerd's `certs.d/<host>/hosts.toml`, one per source registry: the
/// registry's repositories are served by the mirror below its prefix
/// (`override_path`, since the path is the mirror's own).
fn containerd_hosts(entries: &[Entry], options: &Options) -> BTreeMap<String, String> {
    let mut by_host: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for entry in entries {
        let host = entry.source.domain().to_string();
        let mirror = mirror_endpoint(entry, options);
        let endpoints = by_host.entry(host).or_default();
        if !endpoints.contains(&mirror) {
            endpoints.push(mirror);
        }
    }
    let mut out = BTreeMap::new();
    for (host, mut endpoints) in by_host {
        endpoints.sort();
        let server = match host.as_str() {
            "docker.io" => "https://registry-1.docker.io".to_string(),
            other => format!("{}://{other}", scheme(other, options)),
        };
        let mut text = format!("server = {}\n", toml_string(&server));
        for endpoint in endpoints {
            text.push_str(&format!("\n[host.{}]\n", toml_string(&endpoint)));
            text.push_str("  capabilities = [\"pull\", \"resolve\"]\n");
            if endpoint.contains("/v2/") {
                text.push_str("  override_path = true\n");
            }
            if options.skip_verify {
                text.push_str("  skip_verify = true\n");
            }
            if let Some(ca) = &options.ca {
                text.push_str(&format!("  ca = {}\n", toml_string(ca)));
            }
        }
        out.insert(host, text);
    }
    out
}

/// The mirror as containerd names an endpoint: `SCHEME://HOST/v2/PATH` when the
/// prefix has a path below the host (with `override_path`), else `SCHEME://HOST`.
fn mirror_endpoint(entry: &Entry, options: &Options) -> String {
    let host = entry.mirror.domain();
    let source_path = entry.source.path();
    let mirror_path = entry.mirror.path();
    let prefix = mirror_path
        .strip_suffix(source_path)
        .unwrap_or(mirror_path)
        .trim_end_matches('/');
    let scheme = scheme(host, options);
    if prefix.is_empty() {
        format!("{scheme}://{host}")
    } else {
        format!("{scheme}://{host}/v2/{prefix}")
    }
}

fn scheme(host: &str, options: &Options) -> &'static str {
    if options.insecure.iter().any(|h| h == host) {
        "http"
    } else {
        "https"
    }
}

/// containers-registries.conf(5) for CRI-O and podman: one `[[registry]]` per
/// source repository (consumers match the longest prefix), its mirror pulled
/// by digest only, or by tag too for a component without a digest.
fn registries_conf(entries: &[Entry], options: &Options) -> String {
    let mut sorted: Vec<&Entry> = entries.iter().collect();
    sorted.sort_by_key(|e| e.source.repository().to_string());
    let mut text = format!(
        "# Written by `berth mirror` for project {}: each repository's mirror.\n",
        toml_string(&options.project)
    );
    for entry in sorted {
        let pull = if entry.by_digest() {
            "digest-only"
        } else {
            "all"
        };
        text.push_str(&format!(
            "\n[[registry]]\nlocation = {}\n",
            toml_string(&entry.source.repository().to_string())
        ));
        if options.insecure.iter().any(|h| h == entry.source.domain()) {
            text.push_str("insecure = true\n");
        }
        text.push_str(&format!(
            "\n[[registry.mirror]]\nlocation = {}\npull-from-mirror = \"{pull}\"\n",
            toml_string(&entry.mirror.repository().to_string())
        ));
        if options.insecure.iter().any(|h| h == entry.mirror.domain()) {
            text.push_str("insecure = true\n");
        }
    }
    text
}

/// A TOML basic string.
fn toml_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn map() -> Node {
    Node::map(Pos::default())
}

fn string(text: &str) -> Node {
    Node::string(text, Pos::default())
}
