//! The one input of a render, whoever asks: the CLI builds it from berth.yaml
//! ([`Spec::from_project`]), the controller from a `Berth` resource. Nothing in
//! it says where it came from but `origin`, for messages.

use berth_yaml::Limits;

use super::{Options, RenderError};
use crate::configs::Generated;
use berth_yaml::Pos;

use crate::project::{ImagePath, Project, PullPolicy, TrustSpec};
use crate::resolve::Resolution;
use crate::suggest::closest;

/// Where a generated object is defined: `berth.yaml:4:3 (`configs.web`)`,
/// `Berth team-a/llama (`spec.configs.web`)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    /// The file or resource.
    pub origin: String,
    /// Where in the file, when it is one.
    pub pos: Option<Pos>,
    /// The entry (`configs.web`, `spec.caBundles.corp`).
    pub field: String,
}

impl std::fmt::Display for Definition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.pos {
            Some(pos) => write!(f, "{}:{pos} (`{}`)", self.origin, self.field),
            None => write!(f, "{} (`{}`)", self.origin, self.field),
        }
    }
}

/// What a render does to manifests.
#[derive(Debug, Clone)]
pub struct Spec<'a> {
    /// Where the spec was written, for messages: `berth.yaml`, `Berth team-a/llama`.
    pub origin: String,
    /// Every component's resolved image, in order.
    pub resolution: &'a Resolution<'a>,
    /// The pull policy to write for each entry of `resolution.images` (`None`:
    /// leave the manifests' own).
    pub pull_policies: Vec<Option<PullPolicy>>,
    /// The generated configs and CA bundles, emitted first, their references rewritten.
    pub generated: &'a [Generated],
    /// Where each of `generated` is defined, for the message when the
    /// manifests hold an object of the same name.
    pub definitions: Vec<Definition>,
    /// The CA bundles and which containers get each (`inject`).
    pub ca_bundles: Vec<&'a TrustSpec>,
    /// Image fields beyond pod specs.
    pub image_paths: &'a [ImagePath],
    /// Fields of custom resources that name a config or CA bundle.
    pub config_paths: &'a [ImagePath],
    /// Rewrite only the images of components an override touched.
    pub only_overridden: bool,
    /// Limits applied to every input document.
    pub limits: Limits,
    /// The container that gets the related images' `RELATED_IMAGE_*` variables.
    pub operator: Option<&'a crate::project::Operator>,
}

impl<'a> Spec<'a> {
    /// A spec with what every render has: the resolution (each component's own
    /// pull policy), the generated objects with where each is defined, the CA
    /// bundles; no field paths, every image rewritten, default limits. The
    /// controller renders a `Berth` with this; berth.yaml adds its own parts.
    pub fn new(
        origin: String,
        resolution: &'a Resolution<'a>,
        generated: &'a [Generated],
        definitions: Vec<Definition>,
        ca_bundles: Vec<&'a TrustSpec>,
    ) -> Spec<'a> {
        Spec {
            origin,
            pull_policies: resolution
                .images
                .iter()
                .map(|i| i.component.pull_policy)
                .collect(),
            resolution,
            generated,
            definitions,
            ca_bundles,
            image_paths: &[],
            config_paths: &[],
            only_overridden: false,
            limits: Limits::default(),
            operator: None,
        }
    }

    /// berth.yaml's spec: its components as `resolution` resolved them, its
    /// generated objects, and the caller's `options` (pull-policy overrides are
    /// checked against the components here).
    pub fn from_project(
        project: &'a Project,
        resolution: &'a Resolution<'a>,
        generated: &'a [Generated],
        options: &Options,
    ) -> Result<Spec<'a>, RenderError> {
        let definitions = generated
            .iter()
            .map(|g| {
                let (section, pos) = match project.configs.iter().find(|c| c.name == g.base_name) {
                    Some(c) => ("configs", c.pos),
                    None => (
                        "caBundles",
                        project
                            .ca_bundles
                            .iter()
                            .find(|b| b.name == g.base_name)
                            .map(|b| b.pos)
                            .unwrap_or_default(),
                    ),
                };
                Definition {
                    origin: project.file.clone(),
                    pos: Some(pos),
                    field: format!("{section}.{}", g.base_name),
                }
            })
            .collect();
        Ok(Spec {
            pull_policies: pull_policies(&project.file, resolution, options)?,
            image_paths: &project.image_paths,
            config_paths: &project.config_paths,
            only_overridden: options.only_overridden,
            limits: options.limits,
            operator: project.operator.as_ref(),
            ..Spec::new(
                project.file.clone(),
                resolution,
                generated,
                definitions,
                project.ca_bundles.iter().map(|b| &b.spec).collect(),
            )
        })
    }
}

/// The policy of each resolved image: an override beats `pullPolicy:`.
pub(super) fn pull_policies(
    origin: &str,
    resolution: &Resolution<'_>,
    options: &Options,
) -> Result<Vec<Option<PullPolicy>>, RenderError> {
    let mut policies: Vec<Option<PullPolicy>> = resolution
        .images
        .iter()
        .map(|i| i.component.pull_policy)
        .collect();
    let template = if options.pull_policy_source.is_empty() {
        "pull policy override {component}="
    } else {
        options.pull_policy_source.as_str()
    };
    for (name, value) in &options.pull_policies {
        let source_name = template.replace("{component}", name);
        let index = resolution
            .images
            .iter()
            .position(|i| &i.component.name == name)
            .ok_or_else(|| RenderError::UnknownComponent {
                source_name: source_name.clone(),
                name: name.clone(),
                file: origin.to_string(),
                suggestion: closest(
                    name,
                    resolution.images.iter().map(|i| i.component.name.as_str()),
                )
                .map(str::to_string),
            })?;
        let policy = PullPolicy::parse(value).ok_or_else(|| RenderError::InvalidPullPolicy {
            source_name: source_name.clone(),
            name: name.clone(),
            value: value.clone(),
        })?;
        policies[index] = Some(policy);
    }
    Ok(policies)
}
