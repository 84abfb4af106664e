//! What `berth init` proposes, as values (#47 item 5): decided first ([`crate::propose`]),
//! then written ([`Proposal::to_yaml`]) and explained ([`Proposal::notes`]), and compared
//! with a kept berth.yaml as it is (`init --check`, [`crate::check::differences`]) — never
//! parsed back from the YAML it writes.

use berth_yaml::{Node, Pos};

/// One entry of `manifests:` or of a profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A directory of Kubernetes YAML (`deploy/`).
    Dir(String),
    /// `- kustomize: DIR`.
    Kustomize(String),
    /// `- helm: {chart: DIR, release: NAME}`.
    Helm {
        /// The chart's directory.
        chart: String,
        /// The release name (`None`: helm's default).
        release: Option<String>,
        /// `values:` files, relative to berth.yaml (an accelerator's values file).
        values: Vec<String>,
    },
}

/// A component init proposes under `images:`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Proposed {
    /// Its name (the key under `images:`).
    pub name: String,
    /// Its default image.
    pub image: String,
    /// `env:`, when a Makefile names the variable (else berth's default).
    pub env: Option<String>,
    /// `tagEnv:`, when a Makefile names one.
    pub tag_env: Option<String>,
    /// `repositoryEnv:`, when a Makefile's `*_TAG_BASE` names its repository.
    pub repository_env: Option<String>,
    /// `tagSuffix: true`: tags that add a suffix to its tag are its variants.
    pub tag_suffix: bool,
    /// `helmValues:` as `(part, path)`.
    pub helm_values: Vec<(&'static str, String)>,
    /// `registry: false`: a third-party image the project's registry variable leaves.
    pub third_party: bool,
    /// `relatedImage: true`: an image an operator pulls at run time.
    pub related_image: bool,
    /// `variants:`: the family's other members, in order.
    pub variants: Vec<ProposedVariant>,
    /// Where its image and variables come from, in words.
    pub why: String,
}

/// One entry of a proposed component's `variants:`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProposedVariant {
    /// Its name (after the directory that sets it).
    pub name: String,
    /// `image:`: a repository (follows the family's tag) or a reference with its own tag.
    pub image: String,
    /// `tagSuffix:`, when its tag is the family's plus a suffix.
    pub tag_suffix: Option<String>,
}

/// `operator:`: the container that gets the `RELATED_IMAGE_*` variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProposedOperator {
    /// `Kind/name` of the workload.
    pub workload: String,
    /// The container.
    pub container: String,
}

/// A first berth.yaml, decided.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Proposal {
    /// `name:`.
    pub name: String,
    /// `manifests:` (none found: not written).
    pub manifests: Vec<Source>,
    /// `profiles:`, in order.
    pub profiles: Vec<(String, Vec<Source>)>,
    /// Per profile, the variants its manifests run: `(component, variant)`,
    /// written in the profile's map form.
    pub profile_variants: Vec<(String, Vec<(String, String)>)>,
    /// `images:`, in order.
    pub components: Vec<Proposed>,
    /// `operator:`.
    pub operator: Option<ProposedOperator>,
    /// `registry: {env: VAR}`.
    pub registry: Option<String>,
    /// `tag: {env: VAR}`.
    pub tag: Option<String>,
    /// `imagePaths:` as `(kind, path)`: fields whose text names component images.
    pub image_paths: Vec<(String, String)>,
    /// One line per decision, in the order they were made.
    pub notes: Vec<String>,
}

impl Proposal {
    /// The berth.yaml text, through berth-yaml's emitter: names from directories and
    /// Makefiles are quoted where YAML needs it, so none can add a key.
    pub fn to_yaml(&self) -> String {
        let mut doc = Node::map(Pos::default());
        doc.push_entry("name", text(&self.name));
        if !self.manifests.is_empty() {
            doc.push_entry("manifests", sources(&self.manifests));
        }
        if !self.profiles.is_empty() {
            let profiles = (self.profiles.iter()).map(|(name, list)| {
                let selected = (self.profile_variants.iter()).find(|(p, _)| p == name);
                let node = match selected {
                    Some((_, variants)) if !variants.is_empty() => {
                        let chosen = (variants.iter()).map(|(c, v)| (c.as_str(), text(v)));
                        Node::map_of([
                            ("manifests", sources(list)),
                            ("variants", Node::map_of(chosen)),
                        ])
                    }
                    _ => sources(list),
                };
                (name.as_str(), node)
            });
            doc.push_entry("profiles", Node::map_of(profiles));
        }
        if !self.components.is_empty() {
            let images = (self.components.iter()).map(|c| (c.name.as_str(), component(c)));
            doc.push_entry("images", Node::map_of(images));
            if let Some(operator) = &self.operator {
                let entry = Node::map_of([
                    ("workload", text(&operator.workload)),
                    ("container", text(&operator.container)),
                ]);
                doc.push_entry("operator", entry);
            }
            if let Some(var) = &self.registry {
                doc.push_entry("registry", Node::map_of([("env", text(var))]));
            }
            if let Some(var) = &self.tag {
                doc.push_entry("tag", Node::map_of([("env", text(var))]));
            }
            if !self.image_paths.is_empty() {
                let entries = (self.image_paths.iter())
                    .map(|(kind, path)| Node::map_of([("kind", text(kind)), ("path", text(path))]));
                doc.push_entry("imagePaths", Node::seq_of(entries));
            }
        }
        let mut yaml =
            String::from("# Written by `berth init`; every key is in docs/berth-yaml.md.\n");
        berth_yaml::write_document(&mut yaml, &doc);
        yaml
    }

    /// Why each choice was made, one line each, in order.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The component named `name`, if proposed.
    pub fn component(&self, name: &str) -> Option<&Proposed> {
        self.components.iter().find(|c| c.name == name)
    }
}

/// A string node (quoted by the emitter where plain text would not stay a string).
fn text(value: &str) -> Node {
    Node::string(value, Pos::default())
}

/// A plain `true`/`false`, whose YAML type is meant.
fn flag(value: bool) -> Node {
    Node::plain(if value { "true" } else { "false" }, Pos::default())
}

fn sources(list: &[Source]) -> Node {
    Node::seq_of(list.iter().map(|source| match source {
        Source::Dir(dir) => text(dir),
        Source::Kustomize(dir) => Node::map_of([("kustomize", text(dir))]),
        Source::Helm {
            chart,
            release,
            values,
        } => {
            let mut helm = Node::map_of([("chart", text(chart))]);
            if let Some(release) = release {
                helm.push_entry("release", text(release));
            }
            if !values.is_empty() {
                helm.push_entry("values", Node::seq_of(values.iter().map(|v| text(v))));
            }
            Node::map_of([("helm", helm)])
        }
    }))
}

/// One component's entry, its keys in the order docs/berth-yaml.md lists them.
fn component(c: &Proposed) -> Node {
    let mut entry = Node::map_of([("image", text(&c.image))]);
    let variables = [
        ("env", &c.env),
        ("tagEnv", &c.tag_env),
        ("repositoryEnv", &c.repository_env),
    ];
    for (key, value) in variables {
        if let Some(value) = value {
            entry.push_entry(key, text(value));
        }
    }
    if c.tag_suffix {
        entry.push_entry("tagSuffix", flag(true));
    }
    if !c.helm_values.is_empty() {
        let values = (c.helm_values.iter()).map(|(part, path)| (*part, text(path)));
        entry.push_entry("helmValues", Node::map_of(values));
    }
    if c.third_party {
        entry.push_entry("registry", flag(false));
    }
    if c.related_image {
        entry.push_entry("relatedImage", flag(true));
    }
    if !c.variants.is_empty() {
        let variants = c.variants.iter().map(|v| {
            let mut node = Node::map_of([("image", text(&v.image))]);
            if let Some(suffix) = &v.tag_suffix {
                node.push_entry("tagSuffix", text(suffix));
            }
            (v.name.as_str(), node)
        });
        entry.push_entry("variants", Node::map_of(variants));
    }
    entry
}
