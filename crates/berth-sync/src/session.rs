//! The sync engine: per rule, a snapshot of what was sent, the containers it
//! serves, and the updates that keep them equal to the local tree.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use berth_core::project::{SyncRule, SyncTarget};
use berth_core::Project;
use berth_ref::Repository;
use globset::{GlobBuilder, GlobMatcher};

use crate::error::SyncError;
use crate::ignore::Ignore;
use crate::plan::{against_remote, diff, Merged, Update};
use crate::protocol::{
    interpret, parse_manifest, session_script, update_script, write_frame, write_stream,
    MANIFEST_SCRIPT,
};
use crate::shells::{self, Broken, Shells};
use crate::target::{Container, Selector, Target};
use crate::tree::{hash_file, Entry, Kind, Mapping, Tree};

/// One rule at run time.
struct Rule {
    spec: SyncRule,
    mappings: Vec<Mapping>,
    ignore: Ignore,
    /// Per `run:` step, its trigger globs (empty: every update).
    triggers: Vec<Vec<GlobMatcher>>,
    selector: Selector,
    /// What the containers hold, as far as berth sent it.
    tree: Tree,
    /// Container ID → instance (start time, restarts) last synced.
    instances: BTreeMap<String, String>,
    /// Containers whose catch-up failed, and when to try again (not every poll).
    retry_at: BTreeMap<String, Instant>,
    /// Containers an update failed to reach (the API server away): `tree` has
    /// moved on without them, so the next change or rescan catches each up
    /// against its own files (as a first sync does) instead of sending a diff.
    stale: BTreeSet<String>,
}

/// How long a container whose catch-up failed is left alone before the next try.
const RETRY_AFTER: Duration = Duration::from_secs(10);

/// What happened to one container in one update.
#[derive(Debug)]
pub struct Outcome {
    /// The container.
    pub container: Container,
    /// What was (or, in a dry run, would be) sent.
    pub update: Update,
    /// The `run:` steps that ran (or would run), as joined argv.
    pub steps: Vec<String>,
    /// Whether it worked.
    pub result: Result<(), SyncError>,
    /// The container's warm shell broke on this update (which went over an exec).
    pub broke: Option<Broken>,
}

/// A container thread's outcome; a panic becomes a failed outcome for that
/// container instead of vanishing from the report.
fn joined(container: &Container, result: std::thread::Result<Outcome>) -> Outcome {
    result.unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        Outcome {
            container: container.clone(),
            update: Update::default(),
            steps: Vec::new(),
            result: Err(SyncError::Panicked {
                container: container.label.clone(),
                message,
            }),
            broke: None,
        }
    })
}

/// The outcome of one update of one rule.
#[derive(Debug)]
pub struct Report {
    /// The rule's name.
    pub rule: String,
    /// Why it ran: `initial`, `change`, `restart`.
    pub reason: &'static str,
    /// Per container.
    pub outcomes: Vec<Outcome>,
    /// Wall time from the start of the update to the last container done.
    pub elapsed: Duration,
}

/// The sync engine for a project's rules against one target.
pub struct Session {
    dir: PathBuf,
    rules: Vec<Rule>,
    target: Arc<dyn Target>,
    dry_run: bool,
    hashes: Mutex<HashMap<PathBuf, (u64, i128, String)>>,
    /// Warm shells by rule, container ID and instance (see [`Session::keep_shells`]).
    shells: Shells,
    warm: bool,
    /// Paths skipped as unsafe or unsendable, reported once each.
    pub skipped: Vec<SyncError>,
}

fn compile_glob(origin: String, pattern: &str) -> Result<GlobMatcher, SyncError> {
    GlobBuilder::new(pattern.trim_start_matches("./"))
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| SyncError::Pattern {
            origin,
            what: "trigger",
            pattern: pattern.to_string(),
            reason: e.kind().to_string(),
        })
}

impl Session {
    /// Prepares `rules` (all of the project's when empty) against `target`.
    /// `resolved` gives each component's resolved image repository (an override
    /// may point elsewhere than berth.yaml): a component target matches it too.
    /// Reads `.dockerignore` from the project directory when present.
    pub fn new(
        project: &Project,
        resolved: &[(String, Repository)],
        only: &[String],
        target: Arc<dyn Target>,
        dry_run: bool,
    ) -> Result<Session, SyncError> {
        let dir = project.dir.clone();
        let dockerignore = dir.join(".dockerignore");
        let dockerignore_text = match std::fs::read_to_string(&dockerignore) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(SyncError::io(&dockerignore)(e)),
        };
        let mut rules = Vec::new();
        for spec in &project.sync {
            if !only.is_empty() && !only.contains(&spec.name) {
                continue;
            }
            let mut ignore = Ignore::default();
            if let Some(text) = &dockerignore_text {
                ignore.add_file(".dockerignore", text)?;
            }
            for pattern in &spec.ignore {
                ignore.add(&format!("{}:{}", project.file, pattern.pos), &pattern.value)?;
            }
            let mappings = spec
                .paths
                .iter()
                .map(|p| {
                    Mapping::new(&dir, &p.from, &p.to, p.into_dir).map_err(|e| match e {
                        SyncError::Io { source, .. }
                            if source.kind() == std::io::ErrorKind::NotFound =>
                        {
                            SyncError::MissingSource {
                                origin: format!("{}:{}", project.file, p.pos),
                                rule: spec.name.clone(),
                                from: p.from.clone(),
                            }
                        }
                        e => e,
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            let triggers = spec
                .run
                .iter()
                .map(|step| {
                    step.trigger
                        .iter()
                        .map(|t| compile_glob(format!("{}:{}", project.file, t.pos), &t.value))
                        .collect::<Result<Vec<_>, _>>()
                })
                .collect::<Result<Vec<_>, _>>()?;
            let selector = Selector::new(&spec.target, |name| {
                let mut repos: Vec<Repository> = project
                    .component(name)
                    .map(|c| c.repositories.clone())
                    .unwrap_or_default();
                for (_, repo) in resolved.iter().filter(|(c, _)| c == name) {
                    if !repos.contains(repo) {
                        repos.push(repo.clone());
                    }
                }
                repos
            });
            rules.push(Rule {
                spec: spec.clone(),
                mappings,
                ignore,
                triggers,
                selector,
                tree: Tree::new(),
                instances: BTreeMap::new(),
                retry_at: BTreeMap::new(),
                stale: BTreeSet::new(),
            });
        }
        Ok(Session {
            dir,
            rules,
            target,
            dry_run,
            hashes: Mutex::new(HashMap::new()),
            shells: Shells::default(),
            warm: false,
            skipped: Vec::new(),
        })
    }

    /// Local directories (and files' parents) to watch, and the project directory
    /// when a step's trigger may name files outside every `paths:` entry.
    pub fn watch_roots(&self) -> Vec<(PathBuf, bool)> {
        let mut roots = BTreeSet::new();
        for rule in &self.rules {
            for m in &rule.mappings {
                match (m.is_dir, m.local.parent()) {
                    (true, _) => roots.insert((m.local.clone(), true)),
                    (false, Some(parent)) => roots.insert((parent.to_path_buf(), false)),
                    (false, None) => false,
                };
            }
            if rule.triggers.iter().any(|t| !t.is_empty()) {
                roots.insert((self.dir.clone(), true));
            }
        }
        roots.into_iter().collect()
    }

    /// Scans every rule's local tree (the snapshot initial syncs compare against).
    pub fn scan(&mut self) -> Result<(), SyncError> {
        for rule in &mut self.rules {
            let mut tree = Tree::new();
            for m in &rule.mappings {
                m.scan(&m.local, &rule.ignore, &mut tree, &mut self.skipped)?;
            }
            rule.tree = tree;
        }
        Ok(())
    }

    /// Lists the target's containers and, per rule, the ones it selects. With
    /// `require`, a rule that selects none is an error saying what runs instead.
    pub fn containers(&self, require: bool) -> Result<Vec<Vec<Container>>, SyncError> {
        self.select(&self.target.list()?, require)
    }

    /// The target, for listing its containers from another thread while watching.
    pub fn target(&self) -> Arc<dyn Target> {
        Arc::clone(&self.target)
    }

    /// Per rule, the containers of `all` it selects (see [`Session::containers`]).
    pub fn select(
        &self,
        all: &[Container],
        require: bool,
    ) -> Result<Vec<Vec<Container>>, SyncError> {
        let mut out = Vec::new();
        for rule in &self.rules {
            let selected: Vec<Container> = all
                .iter()
                .filter(|c| rule.selector.matches(c))
                .cloned()
                .collect();
            if require && selected.is_empty() {
                return Err(SyncError::NoContainers {
                    rule: rule.spec.name.clone(),
                    looked_for: rule.selector.describe(&rule.spec.target),
                    engine: self.target.describe(),
                    found: all
                        .iter()
                        .map(|c| format!("{} ({})", c.label, c.image))
                        .collect(),
                });
            }
            out.push(selected);
        }
        Ok(out)
    }

    /// Brings each selected container up to date by content hash (initial sync,
    /// `--once`). Containers already synced at their current instance are skipped
    /// unless `force`.
    pub fn sync_containers(
        &mut self,
        containers: &[Vec<Container>],
        force: bool,
        reason: &'static str,
    ) -> Vec<Report> {
        let mut reports = Vec::new();
        for (index, selected) in containers.iter().enumerate() {
            let rule = &self.rules[index];
            let now = Instant::now();
            let fresh: Vec<&Container> = selected
                .iter()
                .filter(|c| {
                    force
                        || rule.instances.get(&c.id) != Some(&c.instance)
                        || rule.stale.contains(&c.id)
                })
                .filter(|c| force || rule.retry_at.get(&c.id).is_none_or(|at| *at <= now))
                .collect();
            // Forget containers that are gone, and shells of instances that ended.
            let live: BTreeSet<&String> = selected.iter().map(|c| &c.id).collect();
            let current: BTreeSet<String> = selected
                .iter()
                .map(|c| shells::key(&rule.spec.name, c))
                .collect();
            self.shells.retain(&rule.spec.name, &current);
            let instances = rule
                .instances
                .iter()
                .filter(|(id, _)| live.contains(id))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if fresh.is_empty() {
                self.rules[index].instances = instances;
                continue;
            }
            let started = Instant::now();
            let rule = &self.rules[index];
            // A first sync (or a container an update failed to reach) compares the
            // container's files with the project's.
            let outcomes: Vec<Outcome> = std::thread::scope(|scope| {
                let handles: Vec<_> = fresh
                    .iter()
                    .filter(|c| force || rule.spec.initial_sync || rule.stale.contains(&c.id))
                    .map(|c| (*c, scope.spawn(|| self.full_sync(rule, c))))
                    .collect();
                handles
                    .into_iter()
                    .map(|(c, h)| joined(c, h.join()))
                    .collect()
            });
            let mut instances: BTreeMap<String, String> = instances;
            let mut retry_at: BTreeMap<String, Instant> = rule
                .retry_at
                .iter()
                .filter(|(id, _)| live.contains(id))
                .map(|(k, v)| (k.clone(), *v))
                .collect();
            let mut caught_up: Vec<String> = Vec::new();
            for outcome in &outcomes {
                let id = outcome.container.id.clone();
                match outcome.result {
                    Ok(()) => {
                        retry_at.remove(&id);
                        caught_up.push(id.clone());
                        instances.insert(id, outcome.container.instance.clone());
                    }
                    Err(_) => {
                        retry_at.insert(id, Instant::now() + RETRY_AFTER);
                    }
                }
            }
            if !(force || rule.spec.initial_sync) {
                for c in &fresh {
                    instances.insert(c.id.clone(), c.instance.clone());
                }
            }
            let rule = &mut self.rules[index];
            rule.retry_at = retry_at;
            rule.instances = instances;
            for id in caught_up {
                rule.stale.remove(&id);
            }
            if self.rules[index].mappings.is_empty() {
                continue; // an exec-only rule has nothing to catch up on
            }
            reports.push(Report {
                rule: self.rules[index].spec.name.clone(),
                reason,
                outcomes,
                elapsed: started.elapsed(),
            });
        }
        reports
    }

    fn full_sync(&self, rule: &Rule, container: &Container) -> Outcome {
        let planned = (|| {
            if rule.mappings.is_empty() {
                return Ok(Update::default());
            }
            let mut argv: Vec<String> = vec![
                "sh".into(),
                "-c".into(),
                MANIFEST_SCRIPT.into(),
                "sh".into(),
            ];
            argv.extend(rule.mappings.iter().map(|m| m.to.clone()));
            let out = self.target.exec(container, &argv, &mut |_| Ok(()))?;
            interpret(&container.label, &out, &[], &self.target.fallback_hint())?;
            let text = String::from_utf8_lossy(&out.stdout);
            match parse_manifest(&text) {
                Some(remote) => {
                    against_remote(&rule.tree, &remote, &rule.mappings, &rule.ignore, |e| {
                        self.hash(e)
                    })
                }
                None => Ok(Update {
                    writes: rule
                        .tree
                        .iter()
                        .map(|(p, e)| (p.clone(), e.clone()))
                        .collect(),
                    changed: rule.tree.values().map(|e| e.rel.clone()).collect(),
                    deletes: Vec::new(),
                }),
            }
        })();
        match planned {
            Ok(update) => self.send(rule, container, update),
            Err(e) => Outcome {
                container: container.clone(),
                update: Update::default(),
                steps: Vec::new(),
                result: Err(e),
                broke: None,
            },
        }
    }

    fn hash(&self, entry: &Entry) -> Result<String, SyncError> {
        let Kind::File { size, mtime_ns, .. } = entry.kind else {
            return Ok(String::new());
        };
        {
            let cache = berth_io::locked(&self.hashes);
            if let Some((s, m, h)) = cache.get(&entry.local) {
                if *s == size && *m == mtime_ns {
                    return Ok(h.clone());
                }
            }
        }
        let hex = berth_ref::lower_hex(&hash_file(&entry.local)?);
        {
            let mut cache = berth_io::locked(&self.hashes);
            cache.insert(entry.local.clone(), (size, mtime_ns, hex.clone()));
        }
        Ok(hex)
    }

    /// The steps an update runs: a step without `trigger:` runs when the update sends
    /// something; one with triggers when a changed local path (sent or not) matches.
    fn triggered(&self, rule: &Rule, update: &Update) -> Vec<usize> {
        rule.triggers
            .iter()
            .enumerate()
            .filter(|(_, globs)| match globs.is_empty() {
                true => !update.is_empty(),
                false => update
                    .changed
                    .iter()
                    .any(|c| globs.iter().any(|g| g.is_match(c))),
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// Sends one update (and its triggered steps) to one container in one exec.
    fn send(&self, rule: &Rule, container: &Container, update: Update) -> Outcome {
        let indices = self.triggered(rule, &update);
        let steps: Vec<&[String]> = indices
            .iter()
            .map(|&i| rule.spec.run[i].cmd.as_slice())
            .collect();
        let step_names = steps.iter().map(|s| s.join(" ")).collect();
        let mut broke = None;
        let mut warm = || match self.send_warm(rule, container, &update, &indices) {
            Ok(sent) => sent,
            Err(broken) => {
                broke = Some(broken);
                None
            }
        };
        let result = if self.dry_run || (update.is_empty() && steps.is_empty()) {
            Ok(())
        } else if let Some(result) = self.warm.then(&mut warm).flatten() {
            result
        } else {
            let script = update_script(!update.writes.is_empty(), &steps);
            let argv = vec!["sh".to_string(), "-c".to_string(), script];
            self.target
                .exec(container, &argv, &mut |w| write_stream(&update, w))
                .and_then(|out| {
                    interpret(&container.label, &out, &steps, &self.target.fallback_hint())
                })
        };
        Outcome {
            container: container.clone(),
            update,
            steps: step_names,
            result,
            broke,
        }
    }

    /// Sends an update over the container's warm shell (see [`Shells`]).
    /// `Ok(None)` when there is no shell to use and `Err` when it broke now: the
    /// caller falls back to an exec.
    fn send_warm(
        &self,
        rule: &Rule,
        container: &Container,
        update: &Update,
        indices: &[usize],
    ) -> Result<Option<Result<(), SyncError>>, Broken> {
        let all: Vec<&[String]> = rule.spec.run.iter().map(|s| s.cmd.as_slice()).collect();
        let out = self.shells.send(
            &*self.target,
            container,
            &shells::key(&rule.spec.name, container),
            || vec!["sh".into(), "-c".into(), session_script(&all)],
            &mut |w| write_frame(update, indices, w),
        )?;
        let Some(out) = out else {
            return Ok(None);
        };
        Ok(Some(interpret(
            &container.label,
            &out,
            &all,
            &self.target.fallback_hint(),
        )))
    }

    /// Keeps a warm shell per container for updates while watching (podman and
    /// docker keep an `exec -i`, Kubernetes an exec stream), instead of one exec
    /// per update.
    pub fn keep_shells(&mut self, warm: bool) {
        self.warm = warm;
    }

    /// Applies changed local paths: rescans them, and sends each rule's
    /// difference to its containers in parallel.
    pub fn on_changes(
        &mut self,
        paths: &BTreeSet<PathBuf>,
        containers: &[Vec<Container>],
    ) -> Result<Vec<Report>, SyncError> {
        let mut reports = Vec::new();
        for (index, targets) in containers.iter().enumerate().take(self.rules.len()) {
            let started = Instant::now();
            let update = self.rescan(index, paths)?;
            let this = &*self;
            let rule = &this.rules[index];
            let behind = targets.iter().any(|c| rule.stale.contains(&c.id));
            if update.is_empty() && this.triggered(rule, &update).is_empty() && !behind {
                continue;
            }
            let outcomes: Vec<Outcome> = std::thread::scope(|scope| {
                let handles: Vec<_> = targets
                    .iter()
                    .map(|c| {
                        let update = update.clone();
                        let catch_up = rule.stale.contains(&c.id);
                        (
                            c,
                            scope.spawn(move || match catch_up {
                                true => this.full_sync(rule, c),
                                false => this.send(rule, c, update),
                            }),
                        )
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|(c, h)| joined(c, h.join()))
                    .collect()
            });
            let reason = if update.is_empty() && behind {
                "retry"
            } else {
                "change"
            };
            let stale = &mut self.rules[index].stale;
            for outcome in &outcomes {
                match outcome.result {
                    Ok(()) => stale.remove(&outcome.container.id),
                    Err(_) => stale.insert(outcome.container.id.clone()),
                };
            }
            reports.push(Report {
                rule: self.rules[index].spec.name.clone(),
                reason,
                outcomes,
                elapsed: started.elapsed(),
            });
        }
        Ok(reports)
    }

    /// Rescans `paths` for rule `index`, updating its snapshot; returns the difference.
    fn rescan(&mut self, index: usize, paths: &BTreeSet<PathBuf>) -> Result<Update, SyncError> {
        let mut merged = Merged::default();
        let rule = &mut self.rules[index];
        for m in &rule.mappings {
            let mut last: Option<PathBuf> = None;
            // Sorted by component, so a directory directly precedes what is below it.
            for path in paths {
                // The path itself, or the whole mapping when a parent of it changed.
                let start = if path.starts_with(&m.local) {
                    path.clone()
                } else if m.local.starts_with(path) {
                    m.local.clone()
                } else {
                    continue;
                };
                if last.as_ref().is_some_and(|l| start.starts_with(l)) {
                    continue; // rescanned with its directory
                }
                last = Some(start.clone());
                let Some((scope, _)) = m.place(&start) else {
                    continue;
                };
                let mut sub = Tree::new();
                m.scan(&start, &rule.ignore, &mut sub, &mut self.skipped)?;
                let part = diff(&rule.tree, &sub, &scope);
                let stale: Vec<String> = rule
                    .tree
                    .range(scope.clone()..)
                    .take_while(|(k, _)| k.starts_with(&scope))
                    .filter(|(k, _)| k.len() == scope.len() || k.as_bytes()[scope.len()] == b'/')
                    .map(|(k, _)| k.clone())
                    .collect();
                for k in stale {
                    rule.tree.remove(&k);
                }
                rule.tree.extend(sub);
                merged.add(part);
            }
        }
        let mut update = merged.into_update();
        // Triggers may name files outside `paths:` (exec-only steps).
        for path in paths {
            if let Some(rel) = relative(&self.dir, path) {
                if !rule.ignore.is_ignored(&rel, path.is_dir()) {
                    update.changed.push(rel);
                }
            }
        }
        Ok(update)
    }

    /// Whether an update failed to reach a container that has not been caught up
    /// since: a caller keeps trying (the API server may be back).
    pub fn behind(&self) -> bool {
        self.rules.iter().any(|r| !r.stale.is_empty())
    }

    /// Rescans everything (after the watcher lost events) as one change.
    pub fn rescan_all(&mut self, containers: &[Vec<Container>]) -> Result<Vec<Report>, SyncError> {
        let roots: BTreeSet<PathBuf> = self
            .rules
            .iter()
            .flat_map(|r| r.mappings.iter().map(|m| m.local.clone()))
            .collect();
        self.on_changes(&roots, containers)
    }

    /// Each rule's name and target, for messages.
    pub fn targets(&self) -> Vec<(String, SyncTarget)> {
        self.rules
            .iter()
            .map(|r| (r.spec.name.clone(), r.spec.target.clone()))
            .collect()
    }
}

fn relative(dir: &Path, path: &Path) -> Option<String> {
    path.strip_prefix(dir).ok()?.to_str().map(str::to_string)
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
