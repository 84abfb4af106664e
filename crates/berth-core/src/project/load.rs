//! Reading berth.yaml's tree into a [`Project`]: the top-level keys, manifests,
//! paths and the checks across them. Components, configs, sync rules and `dev:`
//! are read by the `impl Loader` blocks of their own files.

use super::*;
use std::collections::HashMap;

impl Loader<'_> {
    /// The one document of berth.yaml (an empty file is an empty mapping).
    fn root(&self, src: &str) -> Result<Node, ProjectError> {
        let file = self.file.to_string();
        let mut docs =
            berth_yaml::load_all(src, Limits::default()).map_err(|source| ProjectError::Yaml {
                file: file.clone(),
                source,
            })?;
        if let Some(extra) = docs.iter().skip(1).find(|d| !d.is_null()) {
            return Err(ProjectError::ExtraDocument {
                file,
                pos: extra.pos,
            });
        }
        let root = match docs.len() {
            0 => Node::map(Pos { line: 1, column: 1 }),
            _ => docs.swap_remove(0),
        };
        Ok(if root.is_null() {
            Node::map(root.pos)
        } else {
            root
        })
    }

    /// `name:`: it names the apply records (`berth-NAME-rN`, a Secret) and a label value.
    fn project_name(&self, value: &Node) -> Result<String, ProjectError> {
        let name = self.string(value, "name")?;
        self.dns_label(value, "name", name, 53, "lowercase letters, digits and `-`, starting and ending with a letter or digit, at most 53 characters (it names the apply records, `berth-NAME-rN`)")?;
        Ok(name.to_string())
    }

    /// `namespace:`.
    fn namespace(&self, value: &Node) -> Result<String, ProjectError> {
        let namespace = self.string(value, "namespace")?;
        self.dns_label(value, "namespace", namespace, 63, "a Kubernetes namespace name: lowercase letters, digits and `-`, starting and ending with a letter or digit, at most 63 characters")?;
        Ok(namespace.to_string())
    }

    pub(super) fn project(&self, dir: PathBuf, src: &str) -> Result<Project, ProjectError> {
        let file = self.file.to_string();
        let root = self.root(src)?;
        self.plain(&root)?;
        let entries = self.fields(&root, "the project", TOP_KEYS)?;
        let mut ca_node = None;
        let mut sync_node = None;
        let mut verify_node = None;
        let mut dev_node = None;
        let mut tag_node = None;
        let mut project = Project {
            file,
            dir,
            name: String::new(),
            namespace: None,
            manifests: Vec::new(),
            components: Vec::new(),
            registry_env: None,
            tag_env: None,
            profiles: Vec::new(),
            image_paths: Vec::new(),
            config_paths: Vec::new(),
            configs: Vec::new(),
            ca_bundles: Vec::new(),
            sync: Vec::new(),
            dev: Dev::default(),
            gitops: None,
            audit_exclude: Vec::new(),
            accepts: Vec::new(),
            operator: None,
            verify: Vec::new(),
        };
        for (key, value) in entries {
            match key.as_str().unwrap_or_default() {
                "name" => project.name = self.project_name(value)?,
                "namespace" => project.namespace = Some(self.namespace(value)?),
                "manifests" => project.manifests = self.manifests(value)?,
                "images" => project.components = self.components(value)?,
                "registry" => project.registry_env = self.registry(value)?,
                "tag" => tag_node = Some(value),
                "profiles" => project.profiles = self.profiles(value)?,
                "imagePaths" => project.image_paths = self.field_paths(value, "imagePaths")?,
                "configPaths" => project.config_paths = self.field_paths(value, "configPaths")?,
                "configs" => project.configs = self.configs(value)?,
                "caBundles" => ca_node = Some(value),
                "sync" => sync_node = Some(value),
                "verify" => verify_node = Some(value),
                "dev" => dev_node = Some(value),
                "audit" => {
                    for (key, item) in self.fields(value, "audit", super::AUDIT_KEYS)? {
                        if key.as_str() == Some("exclude") {
                            let globs = self.strings(item, "audit.exclude")?;
                            project.audit_exclude = globs.into_iter().map(|g| g.value).collect();
                        }
                    }
                }
                "accept" => project.accepts = self.accepts(value)?,
                "operator" => project.operator = Some(self.operator(value)?),
                "gitops" => {
                    let text = self.string(value, "gitops")?;
                    project.gitops = Some(crate::names::Engine::parse(text).map_err(|_| {
                        self.invalid(
                            value,
                            "gitops",
                            text,
                            "use flux, argocd or none: the engine that applies the rendered output",
                        )
                    })?);
                }
                _ => {} // `fields` admitted only the keys above
            }
        }
        if project.name.is_empty() {
            return Err(self.missing(root.pos, "name", "the project"));
        }
        // After `images:`, whatever the key order: both name components.
        let names: Vec<String> = project.components.iter().map(|c| c.name.clone()).collect();
        if let Some(node) = ca_node {
            project.ca_bundles = self.ca_bundles(node, &names)?;
        }
        if let Some(node) = sync_node {
            project.sync = self.sync_rules(node, &names)?;
        }
        if let Some(node) = dev_node {
            project.dev = self.dev(node, &names)?;
        }
        project.verify =
            (verify_node.map(|n| self.verify(n, &names)).transpose()?).unwrap_or_default();
        let mut tag_pos = root.pos;
        if let Some(node) = tag_node {
            project.tag_env = self.shared_tag(node)?;
            tag_pos = node.pos;
        }
        self.check_same_as(&mut project)?;
        self.check_profile_variants(&project)?;
        self.check_variables(&project, tag_pos)?;
        self.check_generated_names(&project)?;
        Ok(project)
    }

    /// The entries of a mapping whose keys must all be in `allowed`.
    pub(super) fn fields<'n>(
        &self,
        node: &'n Node,
        context: &str,
        allowed: &'static [&'static str],
    ) -> Result<&'n [(Node, Node)], ProjectError> {
        let entries = node
            .as_map()
            .ok_or_else(|| self.wrong(node, context, "a mapping"))?;
        for (key, _) in entries {
            let name = key.as_str().unwrap_or_default();
            if allowed.contains(&name) {
                continue;
            }
            return Err(ProjectError::UnknownKey {
                file: self.file.to_string(),
                pos: key.pos,
                key: name.to_string(),
                context: context.to_string(),
                suggestion: closest(name, allowed.iter().copied()).map(str::to_string),
                expected: allowed,
            });
        }
        Ok(entries)
    }

    /// berth.yaml is plain YAML: every key is text (P83: `? [a, b]` was read as an empty key)
    /// and no node carries a tag other than the core schema's (P47: `!foo shop` was read as
    /// `shop`, the tag dropped).
    fn plain(&self, root: &Node) -> Result<(), ProjectError> {
        let shape = |pos: Pos, problem: String| ProjectError::Shape {
            file: self.file.to_string(),
            pos,
            problem,
        };
        let mut stack = vec![root];
        while let Some(node) = stack.pop() {
            if let Some(tag) = node.tag.as_deref() {
                let core = [
                    "!!str", "!!int", "!!float", "!!bool", "!!null", "!!map", "!!seq",
                ];
                if !core.contains(&tag) {
                    let tag: String = tag.chars().take(100).flat_map(char::escape_debug).collect();
                    return Err(shape(
                        node.pos,
                        format!(
                            "unknown YAML tag `{tag}`; berth.yaml uses plain YAML (remove the tag)"
                        ),
                    ));
                }
            }
            match &node.value {
                berth_yaml::Value::Map(entries) => {
                    for (key, value) in entries {
                        let found = match &key.value {
                            berth_yaml::Value::Scalar(_) => None,
                            berth_yaml::Value::Seq(_) => Some("a sequence"),
                            berth_yaml::Value::Map(_) => Some("a mapping"),
                        };
                        if let Some(found) = found {
                            return Err(shape(key.pos, format!("a key must be a plain string (found {found}); write the key as text")));
                        }
                        stack.push(key);
                        stack.push(value);
                    }
                }
                berth_yaml::Value::Seq(items) => stack.extend(items),
                berth_yaml::Value::Scalar(_) => {}
            }
        }
        Ok(())
    }

    pub(super) fn wrong(&self, node: &Node, key: &str, expected: &'static str) -> ProjectError {
        ProjectError::WrongType {
            file: self.file.to_string(),
            pos: node.pos,
            key: key.to_string(),
            expected,
        }
    }

    pub(super) fn string<'n>(&self, node: &'n Node, key: &str) -> Result<&'n str, ProjectError> {
        node.as_str()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| self.wrong(node, key, "a non-empty string"))
    }

    pub(super) fn variable(&self, node: &Node, key: &str) -> Result<String, ProjectError> {
        let value = self.string(node, key)?;
        if !is_variable_name(value) {
            return Err(self.invalid(
                node,
                key,
                value,
                "a variable name is letters, digits and `_`, not starting with a digit",
            ));
        }
        Ok(value.to_string())
    }

    pub(super) fn invalid(
        &self,
        node: &Node,
        key: &str,
        value: &str,
        reason: &'static str,
    ) -> ProjectError {
        ProjectError::InvalidValue {
            file: self.file.to_string(),
            pos: node.pos,
            key: key.to_string(),
            value: berth_io::shown(value),
            reason,
        }
    }

    /// `name`, written at `pos` under `key`, must be a component (a key of `images:`).
    pub(super) fn known_component(
        &self,
        name: &str,
        pos: Pos,
        key: &str,
        components: &[String],
    ) -> Result<(), ProjectError> {
        if components.iter().any(|c| c == name) {
            return Ok(());
        }
        Err(ProjectError::UnknownKey {
            file: self.file.to_string(),
            pos,
            suggestion: closest(name, components.iter().map(String::as_str)).map(str::to_string),
            key: name.to_string(),
            context: format!(
                "{key} (components are the keys of `images:`{})",
                if components.is_empty() {
                    ", and berth.yaml has none"
                } else {
                    ""
                }
            ),
            expected: &[],
        })
    }

    pub(super) fn reference(&self, node: &Node, key: &str) -> Result<Reference, ProjectError> {
        Reference::parse(self.string(node, key)?).map_err(|source| ProjectError::InvalidImage {
            file: self.file.to_string(),
            pos: node.pos,
            key: key.to_string(),
            source,
        })
    }

    /// `key` is required at `pos` and absent; `context` says where.
    pub(super) fn missing(
        &self,
        pos: Pos,
        key: &'static str,
        context: impl Into<String>,
    ) -> ProjectError {
        ProjectError::Missing {
            file: self.file.to_string(),
            pos,
            key,
            context: context.into(),
        }
    }

    /// Refuses an entry that has none of the keys it needs one of (`absent`):
    /// `key` is the first of them.
    pub(super) fn needs_one(
        &self,
        absent: bool,
        pos: Pos,
        key: &'static str,
        context: impl Into<String>,
    ) -> Result<(), ProjectError> {
        if absent {
            Err(self.missing(pos, key, context))
        } else {
            Ok(())
        }
    }

    /// Refuses `text`, written at `node` under `key`, unless it is a DNS label
    /// of at most `max` characters; `reason` says what a right one is.
    pub(super) fn dns_label(
        &self,
        node: &Node,
        key: &str,
        text: &str,
        max: usize,
        reason: &'static str,
    ) -> Result<(), ProjectError> {
        if super::is_dns_label(text, max) {
            Ok(())
        } else {
            Err(self.invalid(node, key, text, reason))
        }
    }

    /// The entries of a mapping section (`images:`, `configs:`, …); none when null.
    pub(super) fn mapping<'n>(
        &self,
        node: &'n Node,
        key: &str,
        expected: &'static str,
    ) -> Result<&'n [(Node, Node)], ProjectError> {
        if node.is_null() {
            return Ok(&[]);
        }
        node.as_map().ok_or_else(|| self.wrong(node, key, expected))
    }

    pub(super) fn list<'n>(
        &self,
        node: &'n Node,
        key: &str,
        expected: &'static str,
    ) -> Result<&'n [Node], ProjectError> {
        if node.is_null() {
            return Ok(&[]);
        }
        node.as_seq().ok_or_else(|| self.wrong(node, key, expected))
    }

    pub(super) fn registry(&self, node: &Node) -> Result<Option<String>, ProjectError> {
        // `registry: {}` says nothing: a registry override without its variable is a mistake.
        self.env_only(
            node,
            "registry",
            REGISTRY_KEYS,
            "`registry:` (the registry override variable; remove `registry:` for none)",
        )
    }

    /// A mapping whose one key is `env:` (`registry:`, `tag:`); `None` for `~`, an
    /// error naming `missing` for a mapping without it.
    pub(super) fn env_only(
        &self,
        node: &Node,
        key: &str,
        keys: &'static [&'static str],
        missing: &str,
    ) -> Result<Option<String>, ProjectError> {
        if node.is_null() {
            return Ok(None);
        }
        let mut env = None;
        for (k, v) in self.fields(node, key, keys)? {
            if k.as_str() == Some("env") {
                env = Some(self.variable(v, &format!("{key}.env"))?);
            }
        }
        match env {
            Some(env) => Ok(Some(env)),
            None => Err(self.missing(node.pos, "env", missing)),
        }
    }

    pub(super) fn manifests(&self, node: &Node) -> Result<Vec<Manifest>, ProjectError> {
        let expected = "a list of paths, `-`, `kustomize: DIR` or `helm: {chart: …}` entries";
        let mut out = Vec::new();
        for item in self.list(node, "manifests", expected)? {
            if item.as_map().is_some() {
                for (key, value) in
                    self.fields(item, "a manifests entry", &["kustomize", "helm"])?
                {
                    let source = match key.as_str() {
                        Some("helm") => ManifestSource::Helm(Box::new(self.helm(value)?)),
                        _ => ManifestSource::Kustomize(PathBuf::from(
                            self.string(value, "manifests[].kustomize")?,
                        )),
                    };
                    out.push(Manifest {
                        source,
                        pos: value.pos,
                    });
                }
                continue;
            }
            let source = match self.string(item, "manifests[]")? {
                "-" => ManifestSource::Stdin,
                path => ManifestSource::Path(PathBuf::from(path)),
            };
            out.push(Manifest {
                source,
                pos: item.pos,
            });
        }
        Ok(out)
    }

    /// `imagePaths:` or `configPaths:` (`section`): `{kind, apiVersion?, path}` entries.
    pub(super) fn field_paths(
        &self,
        node: &Node,
        section: &str,
    ) -> Result<Vec<ImagePath>, ProjectError> {
        let mut out = Vec::new();
        for item in self.list(node, section, "a list of {kind, path} entries")? {
            let context = format!("a {section} entry");
            let allowed = match section {
                "configPaths" => CONFIG_PATH_KEYS,
                _ => IMAGE_PATH_KEYS,
            };
            let entries = self.fields(item, &context, allowed)?;
            let (mut kind, mut api_version, mut path, mut key_path) = (None, None, None, None);
            for (k, v) in entries {
                match k.as_str().unwrap_or_default() {
                    "kind" => {
                        kind = Some(self.string(v, &format!("{section}[].kind"))?.to_string())
                    }
                    "apiVersion" => {
                        api_version = Some(
                            self.string(v, &format!("{section}[].apiVersion"))?
                                .to_string(),
                        )
                    }
                    "path" => {
                        let key = format!("{section}[].path");
                        let text = self.string(v, &key)?;
                        let parsed = parse_field_path(text).ok_or_else(|| {
                            self.invalid(v, &key, text, "a dotted field path such as `spec.server.image`; `[]` walks a list (`spec.images[].ref`); a key with dots is quoted (`data[\"config.yaml\"]`)")
                        })?;
                        if matches!(parsed.first(), Some(PathSegment::Key(k)) if k == "metadata") {
                            return Err(self.invalid(v, &key, text, "a path under `metadata` would rename or relabel the object itself; point at the field of the spec that names the image or config"));
                        }
                        path = Some((parsed, text.to_string()));
                    }
                    "key" => {
                        let key = format!("{section}[].key");
                        let text = self.string(v, &key)?;
                        key_path = Some(parse_field_path(text).ok_or_else(|| {
                            self.invalid(v, &key, text, "a dotted field path such as `spec.overrideConfig.key`, beside the name `path:` gives")
                        })?);
                    }
                    _ => {}
                }
            }
            let missing = |key| self.missing(item.pos, key, context.clone());
            let (path, text) = path.ok_or_else(|| missing("path"))?;
            out.push(ImagePath {
                kind: kind.ok_or_else(|| missing("kind"))?,
                api_version,
                path,
                key: key_path,
                text,
                pos: item.pos,
            });
        }
        Ok(out)
    }

    /// Two users of one variable are an error (`tag_pos`: where `tag:` is written).
    pub(super) fn check_variables(
        &self,
        project: &Project,
        tag_pos: Pos,
    ) -> Result<(), ProjectError> {
        // Who uses each variable first, by name: one look-up per use, so 10,000 components
        // cost 10,000 look-ups, not their square.
        let mut users: HashMap<&str, String> = HashMap::new();
        let mut uses: Vec<(&str, String, Pos)> = Vec::new();
        if let Some(var) = &project.registry_env {
            uses.push((var, "`registry.env`".into(), tag_pos));
        }
        if let Some(var) = &project.tag_env {
            uses.push((var, "`tag.env`".into(), tag_pos));
        }
        for c in &project.components {
            let roles = [
                Some((&c.env, "env")),
                Some((&c.tag_env, "tagEnv")),
                c.repository_env.as_ref().map(|v| (v, "repositoryEnv")),
                (!c.variants.is_empty()).then_some((&c.variant_env, "variantEnv")),
            ];
            for (var, role) in roles.into_iter().flatten() {
                uses.push((var, format!("`images.{}.{role}`", c.name), c.image_pos));
            }
        }
        for (var, who, pos) in uses {
            if let Some(first) = users.get(var) {
                return Err(ProjectError::DuplicateVariable {
                    file: self.file.to_string(),
                    pos,
                    var: var.to_string(),
                    first: first.clone(),
                    second: who,
                });
            }
            users.insert(var, who);
        }
        Ok(())
    }
}

/// `parent.child`, the key a message names: built with `push_str`, as the
/// loader makes one per field of every component and variant and `format!`
/// costs several times as much (`scripts/bench-variants.py`).
pub(super) fn child_key(parent: &str, child: &str) -> String {
    let mut key = String::with_capacity(parent.len() + 1 + child.len());
    key.push_str(parent);
    key.push('.');
    key.push_str(child);
    key
}
