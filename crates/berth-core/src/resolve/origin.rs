//! Where each part of a resolved reference came from, and how the caller's
//! override sources are named in messages.

use std::fmt;

/// Where a variable's value was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VarSource {
    /// The process environment.
    Environment,
    /// A command line's `NAME=VALUE` word; the text names the command line.
    CommandLine(String),
    /// The environment, set by the `berth env` that runs this berth, and
    /// unchanged since ([`super::HANDED`]).
    Handed,
}

/// A variable and where its value was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Var {
    /// The variable's name.
    pub name: String,
    /// Where its value came from.
    pub source: VarSource,
}

impl Var {
    /// A variable read from the environment.
    pub fn env(name: &str) -> Self {
        Var {
            name: name.to_string(),
            source: VarSource::Environment,
        }
    }

    pub(super) fn source_text(&self) -> String {
        match &self.source {
            VarSource::Environment => "environment".into(),
            VarSource::CommandLine(name) => name.clone(),
            VarSource::Handed => "set by `berth env`".into(),
        }
    }
}

/// How the caller's override sources are named in messages, so the core never
/// speaks the CLI's language to a controller's users. In each template
/// `{component}` stands for the component's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceNames {
    /// A full reference: `--image {component}=`.
    pub image: String,
    /// A tag: `--tag {component}=`.
    pub tag: String,
    /// A variant: `--variant {component}=`.
    pub variant: String,
    /// The registry prefix: `--registry `.
    pub registry: String,
    /// The lock: `berth.lock (--locked)`.
    pub lock: String,
}

impl Default for SourceNames {
    /// Names that fit any caller.
    fn default() -> Self {
        SourceNames {
            image: "image override {component}=".into(),
            tag: "tag override {component}=".into(),
            variant: "variant override {component}=".into(),
            registry: "registry override ".into(),
            lock: "lock".into(),
        }
    }
}

/// An override as its source names it: a template and the component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Given {
    template: String,
    component: String,
}

impl Given {
    pub(super) fn new(template: &str, component: &str) -> Self {
        Given {
            template: template.to_string(),
            component: component.to_string(),
        }
    }

    pub(super) fn with(&self, value: &str) -> String {
        format!(
            "{}{value}",
            self.template.replace("{component}", &self.component)
        )
        .trim_end()
        .to_string()
    }
}

/// Where a part of a resolved reference came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// `image:` of the component in berth.yaml.
    Project {
        /// The project file (shared: every part of every image names it).
        file: std::sync::Arc<str>,
        /// The component (`epp`), or a family member (`server.variants.rocm`).
        component: std::sync::Arc<str>,
    },
    /// A full-reference override the caller gave.
    Image(Given),
    /// The component's full-reference variable.
    ImageEnv(Var),
    /// The component's repository variable (`repositoryEnv`).
    RepositoryEnv(Var),
    /// The registry override the caller gave.
    Registry(Given),
    /// The `registry.env` variable.
    RegistryEnv(Var),
    /// A tag override the caller gave.
    Tag(Given),
    /// The component's tag variable, or the shared `tag.env`.
    TagEnv(Var),
    /// The lock.
    Lock(Given),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Project { file, component } => write!(f, "{file} (images.{component}.image)"),
            Origin::Image(given) | Origin::Tag(given) => write!(f, "{}", given.with("…")),
            Origin::Registry(given) | Origin::Lock(given) => write!(f, "{}", given.with("")),
            Origin::ImageEnv(var)
            | Origin::RepositoryEnv(var)
            | Origin::RegistryEnv(var)
            | Origin::TagEnv(var) => write!(f, "{} ({})", var.name, var.source_text()),
        }
    }
}

impl Origin {
    /// What a warning about this setting is at, for `accept:`: the variable's
    /// name, else the setting as shown (`--tag epp=…`).
    pub fn subject(&self) -> String {
        match self {
            Origin::ImageEnv(var)
            | Origin::RepositoryEnv(var)
            | Origin::RegistryEnv(var)
            | Origin::TagEnv(var) => var.name.clone(),
            other => other.to_string(),
        }
    }

    /// The setting as the user wrote it: `` `EPP_TAG=b` (environment) ``, `` `--tag epp=b` ``.
    pub fn assignment(&self, value: &str) -> String {
        // A 100 KB value would push the reason off the message's line.
        let value = berth_io::shown(value);
        let value = value.as_str();
        match self {
            Origin::Project { file, component } => {
                format!("`image: {value}` ({file}, images.{component})")
            }
            Origin::Image(given) | Origin::Tag(given) | Origin::Registry(given) => {
                format!("`{}`", given.with(value))
            }
            Origin::ImageEnv(var)
            | Origin::RepositoryEnv(var)
            | Origin::RegistryEnv(var)
            | Origin::TagEnv(var) => format!("`{}={value}` ({})", var.name, var.source_text()),
            Origin::Lock(given) => format!("`{value}` ({})", given.with("")),
        }
    }
}

/// Where each part of a resolved reference came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origins {
    /// The registry host and any path before the last component.
    pub registry: Origin,
    /// The last path component (the image's own name).
    pub name: Origin,
    /// The tag, if there is one.
    pub tag: Option<Origin>,
    /// The digest, if there is one.
    pub digest: Option<Origin>,
}

impl Origins {
    /// Every part of `reference` from `origin` (berth.yaml's `image:`, a full
    /// override, an image `berth env` handed).
    pub fn of(origin: Origin, reference: &berth_ref::Reference) -> Origins {
        Origins {
            registry: origin.clone(),
            name: origin.clone(),
            tag: reference.tag().map(|_| origin.clone()),
            digest: reference.digest().map(|_| origin.clone()),
        }
    }

    /// Whether any part came from somewhere other than berth.yaml's `image:` (a
    /// variable, a flag, the registry prefix, the lock).
    pub fn overridden(&self) -> bool {
        self.parts().any(|o| !matches!(o, Origin::Project { .. }))
    }

    /// The origins of the parts there are, in a reference's order: registry,
    /// name, tag, digest.
    pub fn parts(&self) -> impl Iterator<Item = &Origin> {
        [
            Some(&self.registry),
            Some(&self.name),
            self.tag.as_ref(),
            self.digest.as_ref(),
        ]
        .into_iter()
        .flatten()
    }
}
