//! `caBundles:` of berth.yaml: trust bundles, their sources in files and in
//! the cluster, and how they are injected into containers.

use berth_yaml::{Node, Pos};

use super::{Loader, ProjectError, Spanned};

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

pub(super) const CA_KEYS: &[&str] = &[
    "sources",
    "key",
    "inject",
    "hash",
    "labels",
    "annotations",
    "defaults",
    "formats",
    "password",
];
pub(super) const INJECT_KEYS: &[&str] =
    &["components", "containers", "mountPath", "env", "runtimes"];

/// A CA bundle as any source declares it (berth.yaml's `caBundles:` or a
/// `Berth`'s `spec.caBundles`): the ConfigMap it becomes and who trusts it.
/// Where its certificates come from is the source's business ([`CaBundleSpec`]
/// for berth.yaml's files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustSpec {
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
    /// `defaults:`: the public roots added, when asked.
    pub defaults: Option<Defaults>,
    /// `formats:` beyond PEM, and those its injected runtimes read ([`TrustSpec::inject`]).
    pub formats: crate::configs::ca::Formats,
}

impl TrustSpec {
    /// A bundle named `name` as nothing but its name says: the default key, hashed,
    /// not injected, PEM only, no public roots.
    pub fn new(name: impl Into<String>) -> TrustSpec {
        TrustSpec {
            name: name.into(),
            key: crate::names::DEFAULT_KEY.into(),
            inject: None,
            hash: true,
            labels: Vec::new(),
            annotations: Vec::new(),
            defaults: None,
            formats: crate::configs::ca::Formats::default(),
        }
    }

    /// Injected as `asked` (once the key is known), with the Java stores' password from
    /// `password` (a Secret's `(name, key)`): the paths beside the mount path, and the
    /// forms the runtimes read added to `formats` — the one place either is derived.
    pub fn inject(&mut self, asked: InjectRequest, password: Option<(String, String)>) {
        let (inject, needs) = Inject::new(&self.name, &self.key, asked);
        self.inject = Some(Inject { password, ..inject });
        self.formats.pkcs12 |= needs.pkcs12;
        self.formats.dir |= needs.dir;
    }
}

/// One entry of berth.yaml's `caBundles:`: a [`TrustSpec`] with where it is
/// written and the PEM files or directories it combines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaBundleSpec {
    /// What any source says of a bundle.
    pub spec: TrustSpec,
    /// Where the entry is.
    pub pos: Pos,
    /// `sources:`: PEM files or directories.
    pub sources: Vec<Spanned<String>>,
    /// `sources:` entries `{configMap: NAME, key: KEY}`: read from the cluster
    /// (the workloads' namespace) by the commands that reach one.
    pub cluster_sources: Vec<ClusterSource>,
    /// `password: {config, key}`: the Java stores' password, a Secret config's key.
    pub password: Option<PasswordRef>,
}

/// A key of one of the project's Secret configs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasswordRef {
    /// The config (`secret: true`).
    pub config: String,
    /// Its key.
    pub key: String,
    /// Where `password:` is written.
    pub pos: Pos,
}

/// A CA bundle source in the cluster, and where it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSource {
    /// What is read.
    pub from: ClusterObject,
    /// Where the entry is written.
    pub pos: Pos,
}

/// What a cluster source reads.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum ClusterObject {
    /// `{configMap: NAME, key: KEY}`: a key of a ConfigMap in the workloads'
    /// namespace (OpenShift's injected trusted-CA bundle, a platform's CA).
    ConfigMap {
        /// The ConfigMap.
        name: String,
        /// Its key holding PEM.
        key: String,
    },
    /// `{clusterTrustBundle: {name: NAME}}`: one ClusterTrustBundle.
    TrustBundle {
        /// The object's name.
        name: String,
    },
    /// `{clusterTrustBundle: {signerName: S, labelSelector: {matchLabels}}}`:
    /// every ClusterTrustBundle of a signer (with those labels), as the
    /// kubelet's `clusterTrustBundle` projection reads them.
    Signer {
        /// `spec.signerName`.
        signer_name: String,
        /// `labelSelector.matchLabels`, sorted.
        labels: Vec<(String, String)>,
    },
}

impl ClusterObject {
    /// How messages name it.
    pub fn describe(&self) -> String {
        match self {
            ClusterObject::ConfigMap { name, key } => format!("configMap `{name}` (key `{key}`)"),
            ClusterObject::TrustBundle { name } => format!("clusterTrustBundle `{name}`"),
            ClusterObject::Signer {
                signer_name,
                labels,
            } => {
                let mut text = format!("the clusterTrustBundles of signer `{signer_name}`");
                if !labels.is_empty() {
                    text.push_str(" labelled ");
                    text.push_str(&Self::selector(labels));
                }
                text
            }
        }
    }

    /// A label selector's text (`a=b,c=d`), as the API takes it.
    pub fn selector(labels: &[(String, String)]) -> String {
        let pairs: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        pairs.join(",")
    }
}

/// berth.yaml's bundle reads as what any source says of it.
impl std::ops::Deref for CaBundleSpec {
    type Target = TrustSpec;
    fn deref(&self) -> &TrustSpec {
        &self.spec
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
    /// The Java stores' password as `(Secret config, key)`: given to the JVM
    /// through a variable from the Secret (`None`: the default, `changeit`).
    pub password: Option<(String, String)>,
}

impl Inject {
    /// The injection `asked` for bundle `bundle` (its data key `key`): its
    /// paths beside the mount path (the default one when not asked), and the
    /// formats the bundle then needs.
    pub fn new(
        bundle: &str,
        key: &str,
        asked: InjectRequest,
    ) -> (Inject, crate::configs::ca::Formats) {
        let InjectRequest {
            components,
            containers,
            mount_path,
            named_env,
            runtimes,
        } = asked;
        let mount_path =
            mount_path.unwrap_or_else(|| crate::names::default_mount_path(bundle, key));
        let (mut env, needs) = runtime_variables(named_env, runtimes);
        let (java, dir) = (needs.pkcs12, needs.dir);
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
            password: None,
            mount_path,
        };
        (inject, needs)
    }
}

/// `inject:` as written (berth.yaml's or a `Berth`'s); made an [`Inject`]
/// once the bundle's key is known ([`Inject::new`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InjectRequest {
    /// The components whose containers get the bundle.
    pub components: Vec<String>,
    /// The containers, by name, that get it.
    pub containers: Vec<String>,
    /// `mountPath:` (`None`: the default beside the bundle's key).
    pub mount_path: Option<String>,
    /// `env:` (`None`: not written).
    pub named_env: Option<Vec<String>>,
    /// `runtimes:` (`None`: not written; with neither, every runtime's variables).
    pub runtimes: Option<Vec<super::Runtime>>,
}

impl Loader<'_> {
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
            "a list of files, directories, {configMap, key} and {clusterTrustBundle}",
        )? {
            if item.as_map().is_none() {
                let value = self.string(item, key)?.to_string();
                files.push(Spanned {
                    value,
                    pos: item.pos,
                });
                continue;
            }
            let from = if item.get("clusterTrustBundle").is_some() {
                self.trust_bundle_source(item, key)?
            } else {
                self.config_map_source(item, key)?
            };
            cluster.push(ClusterSource {
                from,
                pos: item.pos,
            });
        }
        Ok((files, cluster))
    }

    /// `{configMap: NAME, key: KEY}`.
    fn config_map_source(&self, item: &Node, key: &str) -> Result<ClusterObject, ProjectError> {
        let mut name = None;
        let mut data_key = None;
        for (k, v) in self.fields(item, key, &["configMap", "key"])? {
            match k.as_str().unwrap_or_default() {
                "configMap" => name = Some(self.string(v, key)?.to_string()),
                "key" => data_key = Some(self.string(v, key)?.to_string()),
                _ => {}
            }
        }
        let name =
            name.ok_or_else(|| self.missing(item.pos, "configMap", format!("`{key}` entry")))?;
        let key = data_key.ok_or_else(|| {
            self.missing(
                item.pos,
                "key",
                format!("`{key}` entry (the ConfigMap's key holding PEM, e.g. `ca-bundle.crt`)"),
            )
        })?;
        Ok(ClusterObject::ConfigMap { name, key })
    }

    /// `{clusterTrustBundle: {name: NAME}}` or `{clusterTrustBundle:
    /// {signerName: S, labelSelector: {matchLabels: {...}}}}`: the fields of
    /// the kubelet's `clusterTrustBundle` projection.
    fn trust_bundle_source(&self, item: &Node, key: &str) -> Result<ClusterObject, ProjectError> {
        let field = format!("{key}[].clusterTrustBundle");
        let (_, spec) = &self.fields(item, key, &["clusterTrustBundle"])?[0];
        let (mut name, mut signer, mut labels) = (None, None, None);
        for (k, v) in self.fields(spec, &field, &["name", "signerName", "labelSelector"])? {
            match k.as_str().unwrap_or_default() {
                "name" => name = Some(self.string(v, &field)?.to_string()),
                "signerName" => signer = Some(self.string(v, &field)?.to_string()),
                "labelSelector" => {
                    let selector = format!("{field}.labelSelector");
                    let (_, matched) = self
                        .fields(v, &selector, &["matchLabels"])?
                        .first()
                        .ok_or_else(|| {
                            self.missing(v.pos, "matchLabels", format!("`{selector}`"))
                        })?;
                    let mut pairs =
                        self.metadata_map(matched, &format!("{selector}.matchLabels"), true)?;
                    pairs.sort();
                    labels = Some(pairs);
                }
                _ => {}
            }
        }
        match (name, signer) {
            (Some(name), None) if labels.is_none() => Ok(ClusterObject::TrustBundle { name }),
            (None, Some(signer_name)) => Ok(ClusterObject::Signer {
                signer_name,
                labels: labels.unwrap_or_default(),
            }),
            _ => Err(self.invalid(
                spec,
                &field,
                &written_keys(spec),
                "name one ClusterTrustBundle with `name:`, or a signer's with `signerName:` (and, optionally, `labelSelector: {matchLabels: {...}}`)",
            )),
        }
    }

    /// `formats: [pem, pkcs12, jks]`, added to `formats`.
    fn formats(
        &self,
        v: &Node,
        field: &str,
        formats: &mut crate::configs::ca::Formats,
    ) -> Result<(), ProjectError> {
        for item in self.strings(v, field)? {
            match item.value.as_str() {
                "pem" => {}
                "pkcs12" => formats.pkcs12 = true,
                "jks" => formats.jks = true,
                other => {
                    return Err(self.invalid(v, field, other, "a format is pem, pkcs12 or jks"))
                }
            }
        }
        Ok(())
    }

    /// `password: {config: NAME, key: KEY}`.
    fn password(&self, v: &Node, field: &str) -> Result<PasswordRef, ProjectError> {
        let fields = self.fields(v, field, &["config", "key"])?;
        let text = |name: &'static str| -> Result<String, ProjectError> {
            let (_, value) = (fields.iter())
                .find(|(k, _)| k.as_str() == Some(name))
                .ok_or_else(|| self.missing(v.pos, name, format!("`{field}` (a key of a `secret: true` config: `{{config: NAME, key: KEY}}`)")))?;
            Ok(self.string(value, field)?.to_string())
        };
        Ok(PasswordRef {
            config: text("config")?,
            key: text("key")?,
            pos: v.pos,
        })
    }

    /// `defaults: system|mozilla`.
    fn defaults(&self, v: &Node, field: &str) -> Result<Defaults, ProjectError> {
        let text = self.string(v, field)?;
        Ok(match text {
            "system" => Defaults::System,
            "mozilla" => Defaults::Mozilla,
            _ => return Err(self.invalid(v, field, text, "use `system` (the public roots of the machine that renders: Debian's /etc/ssl/certs/ca-certificates.crt, or the file BERTH_SYSTEM_CA_BUNDLE names) or `mozilla` (Mozilla's roots as berth is built with them, the same on every machine)")),
        })
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
            let mut bundle = CaBundleSpec {
                spec: TrustSpec::new(name),
                pos: key.pos,
                sources: Vec::new(),
                cluster_sources: Vec::new(),
                password: None,
            };
            let mut entry = None;
            for (k, v) in self.fields(value, &context, CA_KEYS)? {
                let field = format!("{context}.{}", k.as_str().unwrap_or_default());
                match k.as_str().unwrap_or_default() {
                    "sources" => {
                        (bundle.sources, bundle.cluster_sources) = self.ca_sources(v, &field)?
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
                        bundle.spec.key = key.to_string();
                    }
                    "inject" => entry = Some(self.inject(v, &field, components)?),
                    "hash" => bundle.spec.hash = self.bool(v, &field)?,
                    "labels" => bundle.spec.labels = self.metadata_map(v, &field, true)?,
                    "annotations" => {
                        bundle.spec.annotations = self.metadata_map(v, &field, false)?
                    }
                    "formats" => self.formats(v, &field, &mut bundle.spec.formats)?,
                    "password" => bundle.password = Some(self.password(v, &field)?),
                    "defaults" => bundle.spec.defaults = Some(self.defaults(v, &field)?),
                    _ => {}
                }
            }
            if bundle.sources.is_empty() && bundle.cluster_sources.is_empty() {
                return Err(self.missing(
                    key.pos,
                    "sources",
                    format!("CA bundle `{}`", bundle.name),
                ));
            }
            if let Some(entry) = entry {
                // `env:` and `runtimes:` add up; with neither, every runtime's variables.
                let password =
                    (bundle.password.as_ref()).map(|p| (p.config.clone(), p.key.clone()));
                bundle.spec.inject(entry, password);
            }
            out.push(bundle);
        }
        Ok(out)
    }

    fn inject(
        &self,
        node: &Node,
        context: &str,
        components: &[String],
    ) -> Result<InjectRequest, ProjectError> {
        let mut inject = InjectRequest::default();
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
                        let Some(runtime) = super::Runtime::parse(&item.value) else {
                            let hint = super::runtime::ONE_OF;
                            return Err(self.invalid(v, &field, &item.value, hint));
                        };
                        chosen.push(runtime);
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
}

/// A mapping's keys as written (`{name, signerName}`), for a message about
/// which of them may go together.
fn written_keys(node: &Node) -> String {
    let keys: Vec<&str> = (node.as_map().unwrap_or_default().iter())
        .filter_map(|(k, _)| k.as_str())
        .collect();
    format!("{{{}}}", keys.join(", "))
}

/// The variables `inject.env:` and `inject.runtimes:` ask for (they add up;
/// with neither, every runtime's), and the forms of the bundle they need.
fn runtime_variables(
    named_env: Option<Vec<String>>,
    runtimes: Option<Vec<super::Runtime>>,
) -> (Vec<String>, crate::configs::ca::Formats) {
    // Only `env:` written: the variables named, and no runtime's truststore.
    let chosen = match (&named_env, runtimes) {
        (None, None) => super::Runtime::ALL.to_vec(),
        (_, runtimes) => runtimes.unwrap_or_default(),
    };
    let mut env = named_env.unwrap_or_default();
    for variable in super::Runtime::variables_of(&chosen) {
        if !env.contains(&variable) {
            env.push(variable);
        }
    }
    let mut needs = crate::configs::ca::Formats::default();
    for runtime in &chosen {
        let more = runtime.needs();
        needs.pkcs12 |= more.pkcs12;
        needs.dir |= more.dir;
    }
    // `SSL_CERT_DIR` named in `env:` alone asks for the directory too.
    needs.dir |= env.iter().any(|v| v == crate::names::CERT_DIR_VARIABLE);
    (env, needs)
}
