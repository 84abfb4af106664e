//! `sync:` of berth.yaml: live-update rules for `berth sync`.

use berth_ref::Reference;
use berth_yaml::{Node, Pos};

use super::{Loader, ProjectError, Spanned};

pub(super) const RULE_KEYS: &[&str] = &["name", "target", "paths", "ignore", "run", "initialSync"];
pub(super) const TARGET_KEYS: &[&str] = &["component", "container", "image"];
pub(super) const PATH_KEYS: &[&str] = &["from", "to"];
pub(super) const RUN_KEYS: &[&str] = &["cmd", "trigger"];

/// One entry of `sync:`: which containers get which local files.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncRule {
    /// `name:` (default `sync-<index>`), used in status lines and messages.
    pub name: String,
    /// Where the rule is written.
    pub pos: Pos,
    /// `target:`: exactly one way of selecting containers.
    pub target: SyncTarget,
    /// `paths:`: local sources and their places in the container.
    pub paths: Vec<SyncPath>,
    /// `ignore:`: `.dockerignore`-syntax patterns, relative to the project directory.
    pub ignore: Vec<Spanned<String>>,
    /// `run:`: commands run in the container after an update.
    pub run: Vec<RunStep>,
    /// `initialSync:` (default true): bring a new or restarted container up to date.
    pub initial_sync: bool,
}

/// How a rule selects containers.
#[derive(Debug, Clone, PartialEq)]
pub enum SyncTarget {
    /// Containers running this component's image (any repository it matches).
    Component(String),
    /// Containers with this name.
    Container(String),
    /// Containers running this image: any tag when the reference has none.
    Image(Reference),
}

/// One `paths:` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncPath {
    /// `from:`, relative to the project directory (a directory or a file).
    pub from: String,
    /// `to:`, an absolute, normalised path in the container.
    pub to: String,
    /// `to:` ended in `/`: a file `from` goes inside it rather than becoming it.
    pub into_dir: bool,
    /// Where the entry is written.
    pub pos: Pos,
}

/// One `run:` step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunStep {
    /// `cmd:`, the argv run in the container (no shell unless it names one).
    pub cmd: Vec<String>,
    /// `trigger:`: globs (relative to the project directory) of local files whose
    /// change runs the step; empty = every update.
    pub trigger: Vec<Spanned<String>>,
    /// Where the step is written.
    pub pos: Pos,
}

impl std::fmt::Display for SyncTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SyncTarget::Component(c) => write!(f, "component `{c}`"),
            SyncTarget::Container(c) => write!(f, "container `{c}`"),
            SyncTarget::Image(i) => write!(f, "image `{i}`"),
        }
    }
}

/// `/a/./b//c/` → `/a/b/c`; `None` when a `..` appears or the path is relative.
fn normalise_container_path(path: &str) -> Option<String> {
    if !path.starts_with('/') {
        return None;
    }
    let mut out = String::new();
    for part in path.split('/').filter(|p| !p.is_empty() && *p != ".") {
        if part == ".." {
            return None;
        }
        out.push('/');
        out.push_str(part);
    }
    Some(if out.is_empty() { "/".into() } else { out })
}

impl Loader<'_> {
    pub(super) fn sync_rules(
        &self,
        node: &Node,
        components: &[String],
    ) -> Result<Vec<SyncRule>, ProjectError> {
        let mut rules: Vec<SyncRule> = Vec::new();
        for (index, item) in self
            .list(node, "sync", "a list of sync rules")?
            .iter()
            .enumerate()
        {
            let rule = self.sync_rule(item, index, components)?;
            if rules.iter().any(|r| r.name == rule.name) {
                return Err(self.invalid(
                    item,
                    "sync.name",
                    &rule.name,
                    "two sync rules share this name; names must be distinct",
                ));
            }
            rules.push(rule);
        }
        Ok(rules)
    }

    fn sync_rule(
        &self,
        node: &Node,
        index: usize,
        components: &[String],
    ) -> Result<SyncRule, ProjectError> {
        let entries = self.fields(node, &format!("sync[{index}]"), RULE_KEYS)?;
        let name = match entries.iter().find(|(k, _)| k.as_str() == Some("name")) {
            Some((_, v)) => self.string(v, &format!("sync[{index}].name"))?.to_string(),
            None => format!("sync-{index}"),
        };
        let context = format!("sync rule `{name}`");
        let mut rule = SyncRule {
            name: name.clone(),
            pos: node.pos,
            target: SyncTarget::Container(String::new()),
            paths: Vec::new(),
            ignore: Vec::new(),
            run: Vec::new(),
            initial_sync: true,
        };
        let mut target = None;
        for (k, v) in entries {
            let key = k.as_str().unwrap_or_default();
            let field = format!("sync.{name}.{key}");
            match key {
                "target" => target = Some(self.sync_target(v, &field, components)?),
                "paths" => {
                    for item in self.list(v, &field, "a list of {from, to} entries")? {
                        rule.paths.push(self.sync_path(item, &field)?);
                    }
                }
                "ignore" => rule.ignore = self.strings(v, &field)?,
                "run" => {
                    for item in self.list(v, &field, "a list of {cmd, trigger} steps")? {
                        rule.run.push(self.run_step(item, &field)?);
                    }
                }
                "initialSync" => rule.initial_sync = self.bool(v, &field)?,
                _ => {}
            }
        }
        rule.target = target.ok_or_else(|| self.missing(node.pos, "target", context.clone()))?;
        self.needs_one(
            rule.paths.is_empty() && rule.run.is_empty(),
            node.pos,
            "paths",
            format!("{context} (it has neither `paths:` nor `run:`)"),
        )?;
        Ok(rule)
    }

    fn sync_target(
        &self,
        node: &Node,
        field: &str,
        components: &[String],
    ) -> Result<SyncTarget, ProjectError> {
        let entries = self.fields(node, field, TARGET_KEYS)?;
        let [(key, value)] = entries else {
            return Err(self.wrong(
                node,
                field,
                "a mapping with exactly one of `component`, `container` or `image`",
            ));
        };
        let sub = format!("{field}.{}", key.as_str().unwrap_or_default());
        Ok(match key.as_str().unwrap_or_default() {
            "component" => {
                let name = self.string(value, &sub)?;
                self.known_component(name, value.pos, &sub, components)?;
                SyncTarget::Component(name.to_string())
            }
            "container" => SyncTarget::Container(self.string(value, &sub)?.to_string()),
            _ => SyncTarget::Image(self.reference(value, &sub)?),
        })
    }

    /// A path's text, refused with a control character in it (`expected` says
    /// what a right one is).
    fn path_text<'n>(
        &self,
        v: &'n Node,
        sub: &str,
        expected: &'static str,
    ) -> Result<&'n str, ProjectError> {
        let raw = self.string(v, sub)?;
        if raw.chars().any(char::is_control) {
            return Err(self.invalid(v, sub, raw, expected));
        }
        Ok(raw)
    }

    fn sync_path(&self, node: &Node, field: &str) -> Result<SyncPath, ProjectError> {
        let (mut from, mut to, mut into_dir) = (None, None, false);
        for (k, v) in self.fields(node, field, PATH_KEYS)? {
            let sub = format!("{field}.{}", k.as_str().unwrap_or_default());
            match k.as_str().unwrap_or_default() {
                "from" => {
                    from = Some(
                        self.path_text(
                            v,
                            &sub,
                            "a path without newlines or other control characters",
                        )?
                        .to_string(),
                    )
                }
                _ => {
                    let raw = self.path_text(
                        v,
                        &sub,
                        "a container path without newlines or other control characters",
                    )?;
                    into_dir = raw.ends_with('/');
                    let path = normalise_container_path(raw).filter(|p| p != "/");
                    to = Some(path.ok_or_else(|| {
                        self.invalid(
                            v,
                            &sub,
                            raw,
                            "an absolute path in the container, below `/`, without `..`",
                        )
                    })?);
                }
            }
        }
        let missing = |key| self.missing(node.pos, key, format!("`{field}` entry"));
        Ok(SyncPath {
            from: from.ok_or_else(|| missing("from"))?,
            to: to.ok_or_else(|| missing("to"))?,
            into_dir,
            pos: node.pos,
        })
    }

    fn run_step(&self, node: &Node, field: &str) -> Result<RunStep, ProjectError> {
        let mut step = RunStep {
            cmd: Vec::new(),
            trigger: Vec::new(),
            pos: node.pos,
        };
        for (k, v) in self.fields(node, field, RUN_KEYS)? {
            let sub = format!("{field}.{}", k.as_str().unwrap_or_default());
            match k.as_str().unwrap_or_default() {
                "cmd" => {
                    let items = self.list(v, &sub, "a list of strings (the argv)")?;
                    for item in items {
                        // An empty argument is legitimate in an argv; only the type matters.
                        let arg = item
                            .as_str()
                            .ok_or_else(|| self.wrong(item, &sub, "a string"))?;
                        step.cmd.push(arg.to_string());
                    }
                }
                _ => step.trigger = self.strings(v, &sub)?,
            }
        }
        if step.cmd.first().is_none_or(|c| c.is_empty()) {
            return Err(self.missing(
                node.pos,
                "cmd",
                format!("`{field}` step (an argv such as [\"kill\", \"-HUP\", \"1\"])"),
            ));
        }
        Ok(step)
    }
}

#[cfg(test)]
mod tests {
    use super::normalise_container_path as norm;

    #[test]
    fn container_paths_are_normalised_and_confined() {
        assert_eq!(norm("/app/bin/").as_deref(), Some("/app/bin"));
        assert_eq!(norm("/app//./x").as_deref(), Some("/app/x"));
        assert_eq!(norm("/").as_deref(), Some("/"));
        assert_eq!(norm("app"), None);
        assert_eq!(norm("/app/../etc"), None);
    }
}
