//! `configs:` and `caBundles:` of berth.yaml: what berth generates.

use berth_yaml::{Node, Pos};

use super::{Loader, ProjectError};

pub(super) const CONFIG_KEYS: &[&str] = &[
    "files",
    "literals",
    "envs",
    "schema",
    "secret",
    "type",
    "immutable",
    "hash",
    "labels",
    "annotations",
];
pub(super) const CA_KEYS: &[&str] = &[
    "sources",
    "key",
    "inject",
    "hash",
    "labels",
    "annotations",
    "defaults",
    "formats",
];
pub(super) const INJECT_KEYS: &[&str] =
    &["components", "containers", "mountPath", "env", "runtimes"];

/// `caBundles.X.defaults`: the public roots added to the bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Defaults {
    /// The store of the machine that renders (Debian's
    /// `/etc/ssl/certs/ca-certificates.crt`, or `BERTH_SYSTEM_CA_BUNDLE`).
    System,
    /// Mozilla's root program, as the `webpki-root-certs` crate berth is built
    /// with carries it: the same on every machine, updated with berth.
    Mozilla,
}

/// A value with the position it was written at, for messages about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spanned<T> {
    /// The value.
    pub value: T,
    /// Where it is written in berth.yaml.
    pub pos: Pos,
}

/// One entry of `configs:`: a content-addressed ConfigMap or Secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigSpec {
    /// The base name; the generated object is `<name>-<suffix>`.
    pub name: String,
    /// Where the entry is.
    pub pos: Pos,
    /// `files:` (`path`, `key=path`, or a directory), as written.
    pub files: Vec<Spanned<String>>,
    /// `literals:` (`KEY=VALUE`), as written.
    pub literals: Vec<Spanned<String>>,
    /// `envs:` (files of `KEY=VALUE` lines), as written.
    pub envs: Vec<Spanned<String>>,
    /// `schema:`: a JSON Schema every YAML/JSON file of the config must meet.
    pub schema: Option<Spanned<String>>,
    /// `secret: true` makes a Secret.
    pub secret: bool,
    /// `type:` of the Secret (default `Opaque`).
    pub secret_type: Option<String>,
    /// `immutable:` (default: the value of `hash`, since a name that does not
    /// change with the content cannot hold immutable data that does).
    pub immutable: bool,
    /// `hash:` (default true): add the content-hash suffix to the name.
    pub hash: bool,
    /// `labels:` put on the generated object (an operator's cache may select by one).
    pub labels: Vec<(String, String)>,
    /// `annotations:` put on the generated object.
    pub annotations: Vec<(String, String)>,
}

/// A CA bundle as any source declares it (berth.yaml's `caBundles:` or a
/// `Berth`'s `spec.caBundles`): the ConfigMap it becomes and who trusts it.
/// Where its certificates come from is the source's business ([`CaBundleSpec`]
/// for berth.yaml's files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleSpec {
    /// The base name.
    pub name: String,
    /// `key:` in the ConfigMap (default `ca-bundle.crt`).
    pub key: String,
    /// `inject:`, if the bundle is mounted into containers.
    pub inject: Option<Inject>,
    /// `hash:` (default true): the name carries the content hash and the object is immutable.
    pub hash: bool,
    /// `labels:` put on the generated ConfigMap.
    pub labels: Vec<(String, String)>,
    /// `annotations:` put on the generated ConfigMap.
    pub annotations: Vec<(String, String)>,
}

/// One entry of berth.yaml's `caBundles:`: a [`BundleSpec`] with where it is
/// written and the PEM files or directories it combines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaBundleSpec {
    /// What any source says of a bundle.
    pub spec: BundleSpec,
    /// Where the entry is.
    pub pos: Pos,
    /// `sources:`: PEM files or directories.
    pub sources: Vec<Spanned<String>>,
    /// `defaults:`: the public roots added, when asked.
    pub defaults: Option<Defaults>,
    /// `formats:` beyond PEM (PKCS#12 also when the `java` runtime is injected).
    pub formats: crate::configs::ca::Formats,
    /// `sources:` entries `{configMap: NAME, key: KEY}`: read from the cluster
    /// (the workloads' namespace) by the commands that reach one.
    pub cluster_sources: Vec<ClusterSource>,
}

/// A CA bundle source in the cluster: a ConfigMap's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSource {
    /// The ConfigMap.
    pub config_map: String,
    /// Its key holding PEM.
    pub key: String,
    /// Where the entry is written.
    pub pos: Pos,
}

/// berth.yaml's bundle reads as what any source says of it.
impl std::ops::Deref for CaBundleSpec {
    type Target = BundleSpec;
    fn deref(&self) -> &BundleSpec {
        &self.spec
    }
}

impl std::ops::DerefMut for CaBundleSpec {
    fn deref_mut(&mut self) -> &mut BundleSpec {
        &mut self.spec
    }
}

/// `inject:` of a CA bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inject {
    /// Containers running these components' images.
    pub components: Vec<String>,
    /// Containers with these names.
    pub containers: Vec<String>,
    /// Where the bundle file appears in the container.
    pub mount_path: String,
    /// Variables set to `mount_path` (default `SSL_CERT_FILE`).
    pub env: Vec<String>,
    /// The `java` runtime: where the PKCS#12 truststore is mounted, for
    /// `JAVA_TOOL_OPTIONS` (appended to, never replaced).
    pub truststore: Option<String>,
    /// The `openssl` runtime (or `SSL_CERT_DIR` in `env:`): where the hashed
    /// directory is mounted, for `SSL_CERT_DIR`.
    pub cert_dir: Option<String>,
}

impl Inject {
    /// An injection of `components` and `containers` as `env:` and `runtimes:`
    /// ask (`None`: not written), its paths beside `mount_path` (the default
    /// one when `None`), and the formats the bundle then needs.
    pub fn new(
        bundle: &str,
        key: &str,
        components: Vec<String>,
        containers: Vec<String>,
        mount_path: Option<String>,
        named_env: Option<Vec<String>>,
        runtimes: Option<Vec<String>>,
    ) -> (Inject, crate::configs::ca::Formats) {
        let mount_path =
            mount_path.unwrap_or_else(|| crate::names::default_mount_path(bundle, key));
        let (mut env, java) = runtime_variables(named_env, runtimes);
        let dir = env.iter().any(|v| v == crate::names::CERT_DIR_VARIABLE);
        env.retain(|v| v != crate::names::CERT_DIR_VARIABLE);
        // Beside the PEM file: the same directory.
        let beside = mount_path
            .rsplit_once('/')
            .map_or("", |(d, _)| d)
            .to_string();
        let inject = Inject {
            components,
            containers,
            env,
            truststore: java.then(|| format!("{beside}/{}", crate::configs::ca::PKCS12_KEY)),
            cert_dir: dir.then(|| format!("{beside}/certs")),
            mount_path,
        };
        let formats = crate::configs::ca::Formats {
            pkcs12: java,
            jks: false,
            dir,
        };
        (inject, formats)
    }
}

/// `inject:` as written; made an [`Inject`] once the bundle's key is known.
#[derive(Default)]
struct InjectEntry {
    components: Vec<String>,
    containers: Vec<String>,
    mount_path: Option<String>,
    named_env: Option<Vec<String>>,
    runtimes: Option<Vec<String>>,
}

/// Kubernetes object names: lowercase DNS subdomain; room is left for the suffix.
fn is_object_name(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric())
}

impl Loader<'_> {
    pub(super) fn bool(&self, node: &Node, key: &str) -> Result<bool, ProjectError> {
        match node
            .as_scalar()
            .filter(|s| s.style == berth_yaml::Style::Plain)
            .map(|s| s.text.as_str())
        {
            Some("true") => Ok(true),
            Some("false") => Ok(false),
            _ => Err(self.wrong(node, key, "`true` or `false`")),
        }
    }

    pub(super) fn strings(
        &self,
        node: &Node,
        key: &str,
    ) -> Result<Vec<Spanned<String>>, ProjectError> {
        self.list(node, key, "a list of strings")?
            .iter()
            .map(|item| {
                Ok(Spanned {
                    value: self.string(item, key)?.to_string(),
                    pos: item.pos,
                })
            })
            .collect()
    }

    /// A CA bundle's `sources:`: files and directories as strings, cluster
    /// ConfigMaps as `{configMap: NAME, key: KEY}`.
    fn ca_sources(
        &self,
        node: &Node,
        key: &str,
    ) -> Result<(Vec<Spanned<String>>, Vec<ClusterSource>), ProjectError> {
        let mut files = Vec::new();
        let mut cluster = Vec::new();
        for item in self.list(
            node,
            key,
            "a list of files, directories and {configMap, key}",
        )? {
            if item.as_map().is_none() {
                let value = self.string(item, key)?.to_string();
                files.push(Spanned {
                    value,
                    pos: item.pos,
                });
                continue;
            }
            let mut name = None;
            let mut data_key = None;
            for (k, v) in self.fields(item, key, &["configMap", "key"])? {
                match k.as_str().unwrap_or_default() {
                    "configMap" => name = Some(self.string(v, key)?.to_string()),
                    "key" => data_key = Some(self.string(v, key)?.to_string()),
                    _ => {}
                }
            }
            let config_map =
                name.ok_or_else(|| self.missing(item.pos, "configMap", format!("`{key}` entry")))?;
            let data_key = data_key.ok_or_else(|| {
                self.missing(
                    item.pos,
                    "key",
                    format!(
                        "`{key}` entry (the ConfigMap's key holding PEM, e.g. `ca-bundle.crt`)"
                    ),
                )
            })?;
            cluster.push(ClusterSource {
                config_map,
                key: data_key,
                pos: item.pos,
            });
        }
        Ok((files, cluster))
    }

    fn entry_name(&self, key: &Node, section: &str, max: usize) -> Result<String, ProjectError> {
        let name = self.string(key, section)?;
        if !is_object_name(name, max) {
            return Err(ProjectError::InvalidValue {
                file: self.file.to_string(),
                pos: key.pos,
                key: section.to_string(),
                value: name.to_string(),
                reason: "a name is lowercase letters, digits, `-` and `.`, starting and ending with a letter or digit, \
                         short enough for the 11-character hash suffix",
            });
        }
        Ok(name.to_string())
    }

    /// The entries of a section of named objects, each name checked (at most
    /// `max` characters).
    fn named<'n>(
        &self,
        node: &'n Node,
        section: &str,
        expected: &'static str,
        max: usize,
    ) -> Result<Vec<(String, &'n Node, &'n Node)>, ProjectError> {
        self.mapping(node, section, expected)?
            .iter()
            .map(|(key, value)| Ok((self.entry_name(key, section, max)?, key, value)))
            .collect()
    }

    pub(super) fn configs(&self, node: &Node) -> Result<Vec<ConfigSpec>, ProjectError> {
        let mut out = Vec::new();
        // 253 characters for an object name, minus `-` and the 10-character suffix.
        for (name, key, value) in self.named(node, "configs", "a mapping of config names", 242)? {
            let context = format!("configs.{name}");
            let mut spec = ConfigSpec {
                name,
                pos: key.pos,
                files: Vec::new(),
                literals: Vec::new(),
                envs: Vec::new(),
                schema: None,
                secret: false,
                secret_type: None,
                immutable: true,
                hash: true,
                labels: Vec::new(),
                annotations: Vec::new(),
            };
            let mut immutable = None;
            for (k, v) in self.fields(value, &context, CONFIG_KEYS)? {
                let field = format!("{context}.{}", k.as_str().unwrap_or_default());
                match k.as_str().unwrap_or_default() {
                    "files" => spec.files = self.strings(v, &field)?,
                    "literals" => spec.literals = self.strings(v, &field)?,
                    "envs" => spec.envs = self.strings(v, &field)?,
                    "schema" => {
                        spec.schema = Some(Spanned {
                            value: self.string(v, &field)?.to_string(),
                            pos: v.pos,
                        })
                    }
                    "secret" => spec.secret = self.bool(v, &field)?,
                    "type" => spec.secret_type = Some(self.string(v, &field)?.to_string()),
                    "immutable" => immutable = Some(self.bool(v, &field)?),
                    "hash" => spec.hash = self.bool(v, &field)?,
                    "labels" => spec.labels = self.metadata_map(v, &field, true)?,
                    "annotations" => spec.annotations = self.metadata_map(v, &field, false)?,
                    _ => {}
                }
            }
            spec.immutable = immutable.unwrap_or(spec.hash);
            if spec.secret_type.is_some() && !spec.secret {
                return Err(self.invalid(
                    value,
                    &format!("{context}.type"),
                    spec.secret_type.as_deref().unwrap_or_default(),
                    "`type:` applies to Secrets; add `secret: true` or remove it",
                ));
            }
            out.push(spec);
        }
        Ok(out)
    }

    pub(super) fn ca_bundles(
        &self,
        node: &Node,
        components: &[String],
    ) -> Result<Vec<CaBundleSpec>, ProjectError> {
        let mut out = Vec::new();
        // Also a volume name: a DNS label of at most 63 characters.
        for (name, key, value) in self.named(node, "caBundles", "a mapping of bundle names", 63)? {
            let context = format!("caBundles.{name}");
            let mut spec = CaBundleSpec {
                spec: BundleSpec {
                    name,
                    key: crate::names::DEFAULT_KEY.into(),
                    inject: None,
                    hash: true,
                    labels: Vec::new(),
                    annotations: Vec::new(),
                },
                pos: key.pos,
                sources: Vec::new(),
                defaults: None,
                formats: crate::configs::ca::Formats::default(),
                cluster_sources: Vec::new(),
            };
            let mut entry = None;
            for (k, v) in self.fields(value, &context, CA_KEYS)? {
                let field = format!("{context}.{}", k.as_str().unwrap_or_default());
                match k.as_str().unwrap_or_default() {
                    "sources" => {
                        (spec.sources, spec.cluster_sources) = self.ca_sources(v, &field)?
                    }
                    "key" => {
                        let key = self.string(v, &field)?;
                        if !crate::names::is_config_key(key) {
                            return Err(self.invalid(
                                v,
                                &field,
                                key,
                                "a key is letters, digits, `-`, `_` and `.`",
                            ));
                        }
                        spec.key = key.to_string();
                    }
                    "inject" => entry = Some(self.inject(v, &field, components)?),
                    "hash" => spec.hash = self.bool(v, &field)?,
                    "labels" => spec.labels = self.metadata_map(v, &field, true)?,
                    "annotations" => spec.annotations = self.metadata_map(v, &field, false)?,
                    "formats" => {
                        for item in self.strings(v, &field)? {
                            match item.value.as_str() {
                                "pem" => {}
                                "pkcs12" => spec.formats.pkcs12 = true,
                                "jks" => spec.formats.jks = true,
                                other => {
                                    return Err(self.invalid(
                                        v,
                                        &field,
                                        other,
                                        "a format is pem, pkcs12 or jks",
                                    ))
                                }
                            }
                        }
                    }
                    "defaults" => {
                        let text = self.string(v, &field)?;
                        spec.defaults = Some(match text {
                            "system" => Defaults::System,
                            "mozilla" => Defaults::Mozilla,
                            _ => return Err(self.invalid(v, &field, text, "use `system` (the public roots of the machine that renders: Debian's /etc/ssl/certs/ca-certificates.crt, or the file BERTH_SYSTEM_CA_BUNDLE names) or `mozilla` (Mozilla's roots as berth is built with them, the same on every machine)")),
                        });
                    }
                    _ => {}
                }
            }
            if spec.sources.is_empty() && spec.cluster_sources.is_empty() {
                return Err(self.missing(key.pos, "sources", format!("CA bundle `{}`", spec.name)));
            }
            if let Some(entry) = entry {
                // `env:` and `runtimes:` add up; with neither, every runtime's variables.
                let (inject, needs) = Inject::new(
                    &spec.name,
                    &spec.key,
                    entry.components,
                    entry.containers,
                    entry.mount_path,
                    entry.named_env,
                    entry.runtimes,
                );
                spec.inject = Some(inject);
                spec.formats.pkcs12 |= needs.pkcs12;
                spec.formats.dir |= needs.dir;
            }
            out.push(spec);
        }
        Ok(out)
    }

    /// `labels:` or `annotations:`: a mapping of text to text; label values are
    /// checked as the API server would (at most 63 characters of `[A-Za-z0-9._-]`).
    fn metadata_map(
        &self,
        node: &Node,
        context: &str,
        labels: bool,
    ) -> Result<Vec<(String, String)>, ProjectError> {
        let entries = node.as_map().ok_or_else(|| ProjectError::WrongType {
            file: self.file.to_string(),
            pos: node.pos,
            key: context.to_string(),
            expected: "a mapping of names to text",
        })?;
        let mut out = Vec::new();
        for (k, v) in entries {
            let name = self.string(k, context)?;
            let value = self.string(v, &format!("{context}.{name}"))?;
            if let Some(problem) = qualified_name_problem(name) {
                return Err(self.invalid(k, context, name, problem));
            }
            if name == "app.kubernetes.io/managed-by"
                || name
                    .split_once('/')
                    .is_some_and(|(prefix, _)| prefix == "berth.dev")
            {
                return Err(self.invalid(
                    k,
                    context,
                    name,
                    "berth sets this key itself (`app.kubernetes.io/managed-by` and every `berth.dev/` key): clean-up and rollback find their objects by them; use a key of your own",
                ));
            }
            let value_ok = !labels
                || (value.len() <= 63
                    && value
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')));
            if !value_ok {
                return Err(self.invalid(
                    v,
                    &format!("{context}.{name}"),
                    value,
                    "a label value is at most 63 letters, digits, `-`, `_` and `.`",
                ));
            }
            out.push((name.to_string(), value.to_string()));
        }
        // The API server refuses an object whose annotations total more than 256 KiB.
        let total: usize = out.iter().map(|(k, v)| k.len() + v.len()).sum();
        if !labels && total > ANNOTATIONS_MAX {
            return Err(self.invalid(
                node,
                context,
                &format!("({total} bytes)"),
                "the API server refuses annotations that total more than 256 KiB; keep large data in the config itself",
            ));
        }
        Ok(out)
    }

    fn inject(
        &self,
        node: &Node,
        context: &str,
        components: &[String],
    ) -> Result<InjectEntry, ProjectError> {
        let mut inject = InjectEntry::default();
        for (k, v) in self.fields(node, context, INJECT_KEYS)? {
            let field = format!("{context}.{}", k.as_str().unwrap_or_default());
            match k.as_str().unwrap_or_default() {
                "components" => {
                    for item in self.strings(v, &field)? {
                        self.known_component(&item.value, item.pos, &field, components)?;
                        inject.components.push(item.value);
                    }
                }
                "containers" => {
                    inject.containers = self
                        .strings(v, &field)?
                        .into_iter()
                        .map(|s| s.value)
                        .collect()
                }
                "mountPath" => {
                    let path = self.string(v, &field)?;
                    if !path.starts_with('/') || path.ends_with('/') {
                        return Err(self.invalid(v, &field, path, "an absolute file path in the container, e.g. `/etc/ssl/certs/berth/ca-bundle.crt`"));
                    }
                    inject.mount_path = Some(path.to_string());
                }
                "env" => {
                    let mut named = Vec::new();
                    for item in self.list(v, &field, "a list of variable names")? {
                        named.push(self.variable(item, &field)?);
                    }
                    inject.named_env = Some(named);
                }
                "runtimes" => {
                    let mut chosen = Vec::new();
                    for item in self.strings(v, &field)? {
                        if item.value != "java"
                            && !crate::names::RUNTIMES.iter().any(|(r, _)| *r == item.value)
                        {
                            return Err(self.invalid(
                                v,
                                &field,
                                &item.value,
                                "a runtime is one of openssl, python, node, go, curl, java",
                            ));
                        }
                        chosen.push(item.value);
                    }
                    inject.runtimes = Some(chosen);
                }
                _ => {}
            }
        }
        self.needs_one(
            inject.components.is_empty() && inject.containers.is_empty(),
            node.pos,
            "components",
            format!("`{context}` (name `components:` or `containers:`)"),
        )?;
        Ok(inject)
    }

    pub(super) fn check_generated_names(
        &self,
        project: &super::Project,
    ) -> Result<(), ProjectError> {
        let mut seen: Vec<(&str, &'static str)> = Vec::new();
        let all = project
            .configs
            .iter()
            .map(|c| (c.name.as_str(), c.pos, "configs"))
            .chain(
                project
                    .ca_bundles
                    .iter()
                    .map(|b| (b.name.as_str(), b.pos, "caBundles")),
            );
        for (name, pos, section) in all {
            if let Some((_, first)) = seen.iter().find(|(n, _)| *n == name) {
                return Err(ProjectError::DuplicateName {
                    file: self.file.to_string(),
                    pos,
                    name: name.to_string(),
                    first,
                    second: section,
                });
            }
            seen.push((name, section));
        }
        Ok(())
    }
}

/// The most the API server accepts for all of an object's annotations together.
const ANNOTATIONS_MAX: usize = 256 * 1024;

/// Why `key` is not a Kubernetes label or annotation key (`[prefix/]name`: the
/// prefix a lowercase DNS subdomain of at most 253 characters, the name at most
/// 63 letters, digits, `-`, `_` and `.`, starting and ending alphanumeric).
fn qualified_name_problem(key: &str) -> Option<&'static str> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        let subdomain = !prefix.is_empty()
            && prefix.len() <= 253
            && prefix.split('.').all(|label| {
                !label.is_empty()
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            });
        if !subdomain {
            return Some(
                "the prefix before `/` is not a lowercase DNS subdomain (such as `example.com`); the API server refuses it",
            );
        }
    }
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    (!ok).then_some(
        "a key is `[prefix/]name`: a name of at most 63 letters, digits, `-`, `_` and `.` that starts and ends with a letter or digit, after an optional lowercase DNS prefix",
    )
}

/// The variables `inject.env:` and `inject.runtimes:` ask for (they add up;
/// with neither, every runtime's), and whether the `java` runtime is among them.
fn runtime_variables(
    named_env: Option<Vec<String>>,
    runtimes: Option<Vec<String>>,
) -> (Vec<String>, bool) {
    // Java reads a truststore, not a variable naming a PEM file.
    let java = match (&named_env, &runtimes) {
        (None, None) => true,
        (_, Some(chosen)) => chosen.iter().any(|r| r == "java"),
        (Some(_), None) => false,
    };
    let env = match (named_env, runtimes) {
        (None, None) => {
            crate::names::runtime_variables(crate::names::RUNTIMES.iter().map(|(r, _)| *r))
        }
        (env, runtimes) => {
            let mut all = env.unwrap_or_default();
            let chosen = runtimes.iter().flatten().map(String::as_str);
            for variable in crate::names::runtime_variables(chosen) {
                if !all.contains(&variable) {
                    all.push(variable);
                }
            }
            all
        }
    };
    (env, java)
}
