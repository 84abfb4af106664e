//! `manifests: [{helm: …}]` and `images.<c>.helmValues`: a Helm chart as a
//! manifest source, and the chart values that carry a component's image.
//! berth renders the chart with `helm template` and gives it, as its last
//! values layer, the images berth resolved; the CLI runs helm, this file
//! only reads berth.yaml.

use berth_yaml::Node;

use super::{Loader, ProjectError};

/// The keys of a `helm:` entry.
pub(super) const HELM_KEYS: &[&str] = &[
    "chart",
    "version",
    "repository",
    "release",
    "namespace",
    "values",
    "set",
    "includeCrds",
    "plainHttp",
    "kubeVersion",
    "apiVersions",
];

/// The keys of `helmValues:`.
pub(super) const HELM_VALUE_KEYS: &[&str] =
    &["image", "registry", "repository", "name", "tag", "digest"];

/// One `helm:` entry of `manifests:`: what `helm template` renders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelmChart {
    /// `chart:` as written: a directory or `.tgz` (relative to berth.yaml),
    /// `oci://HOST/REPO/NAME`, or a chart `NAME` in `repository:`.
    pub chart: String,
    /// `version:`; required for a remote chart (a moving chart is no source of truth).
    pub version: Option<String>,
    /// `repository:`: the URL of the chart repository that holds `chart`.
    pub repository: Option<String>,
    /// `release:`; the project's name when absent.
    pub release: Option<String>,
    /// `namespace:`; berth.yaml's `namespace:` by default.
    pub namespace: Option<String>,
    /// `values:`: values files relative to berth.yaml, in order (as `-f`).
    pub values: Vec<super::Spanned<String>>,
    /// `set:`: values written inline (typed YAML, as a values file after `values:`),
    /// as the YAML text of the mapping.
    pub set: Option<String>,
    /// `includeCrds:` (default false, as `helm template`).
    pub include_crds: bool,
    /// `plainHttp:` (default false): an `oci://` registry served over HTTP.
    pub plain_http: bool,
    /// `kubeVersion:` for `.Capabilities.KubeVersion`.
    pub kube_version: Option<String>,
    /// `apiVersions:` for `.Capabilities.APIVersions`.
    pub api_versions: Vec<String>,
}

impl HelmChart {
    /// Whether the chart is a local directory or archive (not `oci://` nor in a repository).
    pub fn is_local(&self) -> bool {
        self.repository.is_none() && !self.chart.starts_with("oci://")
    }
}

/// Which part of a resolved image a chart value receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum HelmPart {
    /// The whole reference (`ghcr.io/acme/web:v1@sha256:…`).
    Image,
    /// The registry host (`ghcr.io`); with [`HelmPart::Name`], everything
    /// before the image's last path component (`ghcr.io/kubeflow/katib`).
    Registry,
    /// The repository: the path after the registry when `registry:` is given
    /// too, else the whole name (`ghcr.io/acme/web`).
    Repository,
    /// The image's last path component (`katib-controller`), for a chart that
    /// joins it to a registry prefix another value holds (Kubeflow's katib:
    /// `global.imageRegistry`/`controller.image.repository`).
    Name,
    /// The tag (with `@digest` after it when the chart has no `digest:` value).
    Tag,
    /// The digest (`sha256:…`).
    Digest,
}

impl HelmPart {
    fn parse(key: &str) -> Option<HelmPart> {
        Some(match key {
            "image" => HelmPart::Image,
            "registry" => HelmPart::Registry,
            "repository" => HelmPart::Repository,
            "name" => HelmPart::Name,
            "tag" => HelmPart::Tag,
            "digest" => HelmPart::Digest,
            _ => return None,
        })
    }
}

impl Loader<'_> {
    /// A `helm:` entry.
    pub(super) fn helm(&self, node: &Node) -> Result<HelmChart, ProjectError> {
        let context = "manifests[].helm";
        let mut chart = HelmChart {
            chart: String::new(),
            version: None,
            repository: None,
            release: None,
            namespace: None,
            values: Vec::new(),
            set: None,
            include_crds: false,
            plain_http: false,
            kube_version: None,
            api_versions: Vec::new(),
        };
        for (k, v) in self.fields(node, context, HELM_KEYS)? {
            let field = format!("{context}.{}", k.as_str().unwrap_or_default());
            let text = || self.string(v, &field).map(str::to_string);
            match k.as_str().unwrap_or_default() {
                "chart" => chart.chart = text()?,
                "version" => chart.version = Some(text()?),
                "repository" => chart.repository = Some(text()?),
                "release" => chart.release = Some(text()?),
                "namespace" => chart.namespace = Some(text()?),
                "values" => chart.values = self.strings(v, &field)?,
                "set" => {
                    if v.as_map().is_none() {
                        return Err(self.wrong(
                            v,
                            "manifests[].helm.set",
                            "a mapping of chart values",
                        ));
                    }
                    let mut yaml = String::new();
                    berth_yaml::write_document(&mut yaml, v);
                    chart.set = Some(yaml);
                }
                "includeCrds" => chart.include_crds = self.bool(v, &field)?,
                "plainHttp" => chart.plain_http = self.bool(v, &field)?,
                "kubeVersion" => chart.kube_version = Some(text()?),
                "apiVersions" => {
                    let listed = self.strings(v, &field)?;
                    chart.api_versions = listed.into_iter().map(|s| s.value).collect();
                }
                _ => {}
            }
        }
        if chart.chart.is_empty() {
            return Err(self.missing(node.pos, "chart", "a `helm:` entry"));
        }
        if !chart.is_local() && chart.version.is_none() {
            return Err(self.invalid(
                node,
                "manifests[].helm.version",
                &chart.chart,
                "a remote chart needs `version:` (the chart version to render), so every render is of the same chart",
            ));
        }
        if let Some(release) = &chart.release {
            self.dns_label(
                node,
                "manifests[].helm.release",
                release,
                53,
                "a release name is lowercase letters, digits and `-`, at most 53 characters (Helm's rule)",
            )?;
        }
        Ok(chart)
    }

    /// `helmValues: {repository: image.repository, tag: image.tag}`: the chart
    /// values that carry a component's image, each a dotted path of mapping keys.
    pub(super) fn helm_values(
        &self,
        node: &Node,
        context: &str,
    ) -> Result<Vec<(HelmPart, String)>, ProjectError> {
        let mut out = Vec::new();
        for (k, v) in self.fields(node, context, HELM_VALUE_KEYS)? {
            let key = k.as_str().unwrap_or_default();
            let field = format!("{context}.{key}");
            // One path, or a list of them: a chart may repeat an image under several keys.
            let paths = match v.as_seq() {
                Some([]) => {
                    return Err(self.wrong(v, &field, "a values path, or a non-empty list of them"))
                }
                Some(items) => items,
                None => std::slice::from_ref(v),
            };
            for v in paths {
                let path = self.string(v, &field)?;
                let valid = !path.is_empty()
                    && path
                        .split('.')
                        .all(|s| !s.is_empty() && !s.contains(['[', ']', '=', ',']));
                if !valid {
                    return Err(self.invalid(
                        v,
                        &field,
                        path,
                        "a values path is mapping keys joined by `.` (`image.tag`); list indexes are not supported (a values layer replaces a list whole)",
                    ));
                }
                if let Some(part) = HelmPart::parse(key) {
                    out.push((part, path.to_string()));
                }
            }
        }
        let has = |p: HelmPart| out.iter().any(|(q, _)| *q == p);
        if has(HelmPart::Image) && out.iter().any(|(p, _)| *p != HelmPart::Image) {
            return Err(self.invalid(
                node,
                context,
                "image",
                "`image:` is the whole reference; give it alone, or the parts (`registry:`, `repository:`, `tag:`, `digest:`) without it",
            ));
        }
        if has(HelmPart::Name) && has(HelmPart::Repository) {
            return Err(self.invalid(
                node,
                context,
                "name",
                "`name:` is the repository's last path component and `registry:` the rest; give `repository:` or `name:`, not both",
            ));
        }
        if out.is_empty() {
            return Err(self.missing(
                node.pos,
                "repository",
                format!("`{context}` (name the values that hold the image)"),
            ));
        }
        Ok(out)
    }
}
