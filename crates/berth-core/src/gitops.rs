//! GitOps engines apply berth's output, and prune whatever left their output:
//! an old content-addressed config goes the moment its successor is applied,
//! while pods of the old ReplicaSet still use it (argo-cd#1636, flux2#3378).
//! Here: the annotation each engine reads as "never prune this", the labels
//! that let berth find such generations again, and the decision of which of
//! them nothing uses any more — pure, for `berth gc` and the controller.

use std::collections::{BTreeMap, BTreeSet};

use crate::cluster::{CONFIG_LABEL, MANAGED_BY, PROJECT_LABEL};
use crate::configs::Generated;

/// `berth.dev/gitops: <engine>` on generated objects rendered for an engine:
/// what `berth gc` and the controller select the kept generations by.
pub const GITOPS_LABEL: &str = "berth.dev/gitops";

pub use crate::names::Engine;

/// Marks generated objects for `engine`: its keep-me annotations, and berth's
/// labels (managed-by, project, the config's base name, the engine), so the
/// engine applies them, never prunes them, and berth finds them again.
pub fn stamp(generated: &mut [Generated], engine: Engine, project: &str) {
    for g in generated {
        let labels = [
            (MANAGED_BY.0, MANAGED_BY.1),
            (PROJECT_LABEL, project),
            (CONFIG_LABEL, g.base_name.as_str()),
            (GITOPS_LABEL, engine.name()),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        for (key, value) in labels {
            set(&mut g.labels, key, value);
        }
        for (key, value) in engine.annotations() {
            set(&mut g.annotations, key.to_string(), value.to_string());
        }
    }
}

/// Why an object labelled [`GITOPS_LABEL`] is not provably a generation berth
/// rendered, or `None` when it is. `berth gc` and the controller's collector
/// delete only objects for which this is `None`: one label is not proof
/// (sweep 4, Z05: a Helm chart's ConfigMaps and a foreign Secret carried it).
///
/// Proof is the whole of what [`stamp`] writes, written at once: berth's labels
/// (managed-by `berth`, project, config, engine), the engine's keep-me
/// annotations, a name that is the config's base name with berth's content-hash
/// suffix, and one field manager in `managedFields` that owns every one of those
/// labels and annotations — the apply of berth's rendered output, by the
/// engine, kubectl or berth. A label added afterwards (`kubectl label`) is owned
/// by another manager; anything Helm wrote or annotated is Helm's.
pub fn not_berths(metadata: &serde_json::Value) -> Option<String> {
    let labels = |key: &str| {
        metadata
            .pointer(&format!("/labels/{}", key.replace('/', "~1")))
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
    };
    let annotation = |key: &str| {
        metadata
            .pointer(&format!("/annotations/{}", key.replace('/', "~1")))
            .and_then(serde_json::Value::as_str)
    };
    let Ok(Some(engine)) = Engine::parse(labels(GITOPS_LABEL)) else {
        return Some(format!("its `{GITOPS_LABEL}` label names no engine"));
    };
    if labels(MANAGED_BY.0) != MANAGED_BY.1 {
        return Some(format!(
            "it has no `{}={}` label",
            MANAGED_BY.0, MANAGED_BY.1
        ));
    }
    let config = labels(CONFIG_LABEL);
    if labels(PROJECT_LABEL).is_empty() || config.is_empty() {
        return Some(format!(
            "it lacks the `{PROJECT_LABEL}` or `{CONFIG_LABEL}` label"
        ));
    }
    let name = metadata
        .pointer("/name")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default();
    let hashed = name
        .strip_prefix(config)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|suffix| {
            suffix.len() == 10 && suffix.bytes().all(|b| b"2456789bcdfghkmt".contains(&b))
        });
    if name != config && !hashed {
        return Some(format!(
            "its name is not `{config}` with berth's content-hash suffix"
        ));
    }
    for (key, value) in engine.annotations() {
        if annotation(key) != Some(value) {
            return Some(format!(
                "it lacks {}'s `{key}: {value}` annotation",
                engine.name()
            ));
        }
    }
    if annotation("meta.helm.sh/release-name").is_some()
        || annotation("helm.sh/resource-policy").is_some()
    {
        return Some("Helm manages it".into());
    }
    let entries = metadata
        .pointer("/managedFields")
        .and_then(serde_json::Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let manager = |e: &serde_json::Value| {
        e.pointer("/manager")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_ascii_lowercase()
    };
    if entries.iter().any(|e| manager(e).starts_with("helm")) {
        return Some("Helm wrote to it (managedFields)".into());
    }
    let owns = |e: &serde_json::Value, group: &str, key: &str| {
        e.pointer(&format!(
            "/fieldsV1/f:metadata/f:{group}/f:{}",
            key.replace('~', "~0").replace('/', "~1")
        ))
        .is_some()
    };
    let stamped = entries.iter().any(|e| {
        [MANAGED_BY.0, PROJECT_LABEL, CONFIG_LABEL, GITOPS_LABEL]
            .iter()
            .all(|k| owns(e, "labels", k))
            && engine
                .annotations()
                .iter()
                .all(|(k, _)| owns(e, "annotations", k))
    });
    if !stamped {
        return Some(
            "no one field manager wrote berth's labels and annotations together (managedFields): they were added to it, not rendered by berth".into(),
        );
    }
    None
}

fn set(pairs: &mut Vec<(String, String)>, key: String, value: String) {
    match pairs.iter_mut().find(|(k, _)| *k == key) {
        Some(pair) => pair.1 = value,
        None => pairs.push((key, value)),
    }
}

/// One kept generation in the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// `ConfigMap` or `Secret`.
    pub kind: String,
    /// Its namespace.
    pub namespace: String,
    /// Its name (`web-config-7b2fgk9c6h`).
    pub name: String,
    /// `berth.dev/project`.
    pub project: String,
    /// `berth.dev/config`: the base name its generations share.
    pub config: String,
    /// `metadata.creationTimestamp` (RFC 3339, which sorts as time does).
    pub created: String,
}

/// Why a kept generation stays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Among the `keep` newest of its config.
    Newest,
    /// A pod, a workload's template or a ReplicaSet with replicas uses it.
    InUse,
    /// Nothing uses it and it is older than the `keep` newest: delete it.
    Delete,
}

/// For each of `kept`, whether it goes: a generation goes when it is not
/// among the `keep` newest of its (namespace, project, config) and nothing in
/// `used` (`(kind, namespace, name)` of what live pods, workload templates and
/// ReplicaSets that still have replicas reference) uses it — so an old
/// generation stays while its ReplicaSet still runs pods, and goes once the
/// rollout that replaced it has finished. `keep` is at least 1.
pub fn judge(
    kept: &[Kept],
    used: &BTreeSet<(String, String, String)>,
    keep: usize,
) -> Vec<Verdict> {
    let keep = keep.max(1);
    let mut groups: BTreeMap<(&str, &str, &str), Vec<usize>> = BTreeMap::new();
    for (i, k) in kept.iter().enumerate() {
        groups
            .entry((&k.namespace, &k.project, &k.config))
            .or_default()
            .push(i);
    }
    let mut verdicts = vec![Verdict::Newest; kept.len()];
    for indices in groups.values_mut() {
        // Newest first; the name breaks ties, so the same input gives the same answer.
        indices.sort_by(|&a, &b| {
            (&kept[b].created, &kept[b].name).cmp(&(&kept[a].created, &kept[a].name))
        });
        for (rank, &i) in indices.iter().enumerate() {
            let k = &kept[i];
            let key = (k.kind.clone(), k.namespace.clone(), k.name.clone());
            verdicts[i] = if rank < keep {
                Verdict::Newest
            } else if used.contains(&key) {
                Verdict::InUse
            } else {
                Verdict::Delete
            };
        }
    }
    verdicts
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// Metadata as berth render stamps it for Flux and the engine applies it.
    fn stamped() -> serde_json::Value {
        json!({
            "name": "web-config-7b2fgk9c6h",
            "labels": {"app.kubernetes.io/managed-by": "berth", "berth.dev/project": "shop",
                       "berth.dev/config": "web-config", "berth.dev/gitops": "flux"},
            "annotations": {"kustomize.toolkit.fluxcd.io/prune": "Disabled"},
            "managedFields": [{"manager": "kustomize-controller", "operation": "Apply", "fieldsV1": {"f:metadata": {
                "f:labels": {"f:app.kubernetes.io/managed-by": {}, "f:berth.dev/project": {},
                             "f:berth.dev/config": {}, "f:berth.dev/gitops": {}},
                "f:annotations": {"f:kustomize.toolkit.fluxcd.io/prune": {}}}}}]
        })
    }

    /// Sweep 4, Z05: what one label does not prove.
    #[test]
    fn z05_only_what_berth_rendered_is_provably_berths() {
        assert_eq!(super::not_berths(&stamped()), None);
        let mut unhashed = stamped();
        unhashed["name"] = json!("web-config");
        assert_eq!(
            super::not_berths(&unhashed),
            None,
            "hash: false keeps the base name"
        );
        type Change = Box<dyn Fn(&mut serde_json::Value)>;
        let cases: Vec<(&str, Change, &str)> = vec![
            (
                "label only",
                Box::new(|m| *m = json!({"name": "x", "labels": {"berth.dev/gitops": "flux"}})),
                "no `app.kubernetes.io/managed-by=berth` label",
            ),
            (
                "Helm's managed-by",
                Box::new(|m| m["labels"]["app.kubernetes.io/managed-by"] = json!("Helm")),
                "no `app.kubernetes.io/managed-by=berth` label",
            ),
            (
                "no project",
                Box::new(|m| m["labels"]["berth.dev/project"] = json!("")),
                "lacks the `berth.dev/project`",
            ),
            (
                "another name",
                Box::new(|m| m["name"] = json!("web-config-prod")),
                "with berth's content-hash suffix",
            ),
            (
                "another config's name",
                Box::new(|m| m["name"] = json!("other-7b2fgk9c6h")),
                "with berth's content-hash suffix",
            ),
            (
                "unknown engine",
                Box::new(|m| m["labels"]["berth.dev/gitops"] = json!("true")),
                "names no engine",
            ),
            (
                "no keep-me",
                Box::new(|m| m["annotations"] = json!({})),
                "lacks flux's",
            ),
            (
                "Helm release",
                Box::new(|m| m["annotations"]["meta.helm.sh/release-name"] = json!("r")),
                "Helm manages it",
            ),
            (
                "Helm wrote",
                Box::new(|m| m["managedFields"][0]["manager"] = json!("helm")),
                "Helm wrote to it",
            ),
            (
                "labelled later",
                Box::new(|m| {
                    m["managedFields"] = json!([
                        {"manager": "kubectl-create", "fieldsV1": {"f:metadata": {"f:labels": {"f:app.kubernetes.io/managed-by": {}, "f:berth.dev/project": {}, "f:berth.dev/config": {}}, "f:annotations": {"f:kustomize.toolkit.fluxcd.io/prune": {}}}}},
                        {"manager": "kubectl-label", "fieldsV1": {"f:metadata": {"f:labels": {"f:berth.dev/gitops": {}}}}}
                    ])
                }),
                "no one field manager wrote",
            ),
            (
                "no managedFields",
                Box::new(|m| m["managedFields"] = json!([])),
                "no one field manager wrote",
            ),
        ];
        for (case, change, want) in cases {
            let mut m = stamped();
            change(&mut m);
            let why = super::not_berths(&m).unwrap_or_else(|| panic!("{case}: accepted"));
            assert!(why.contains(want), "{case}: {why}");
        }
    }

    use super::*;

    fn kept(name: &str, created: &str) -> Kept {
        Kept {
            kind: "ConfigMap".into(),
            namespace: "dev".into(),
            name: name.into(),
            project: "shop".into(),
            config: "web-config".into(),
            created: created.into(),
        }
    }

    #[test]
    fn old_generations_go_once_nothing_uses_them_and_the_newest_stay() {
        let generations = [
            kept("web-config-a", "2026-12-01T10:00:00Z"),
            kept("web-config-b", "2026-12-01T11:00:00Z"),
            kept("web-config-c", "2026-12-01T12:00:00Z"),
            kept("web-config-d", "2026-12-01T13:00:00Z"),
        ];
        let used = BTreeSet::from([(
            "ConfigMap".to_string(),
            "dev".to_string(),
            "web-config-b".to_string(),
        )]);
        assert_eq!(
            judge(&generations, &used, 2),
            [
                Verdict::Delete,
                Verdict::InUse,
                Verdict::Newest,
                Verdict::Newest
            ]
        );
        // keep 1: the newest only; and keep 0 means 1 (the current generation is never deleted).
        assert_eq!(
            judge(&generations, &BTreeSet::new(), 0)[2..],
            [Verdict::Delete, Verdict::Newest]
        );
        // Another config, or the same name in another namespace, is judged on its own.
        let mut other = kept("db-config-x", "2026-12-01T09:00:00Z");
        other.config = "db-config".into();
        assert_eq!(judge(&[other], &BTreeSet::new(), 1), [Verdict::Newest]);
    }

    #[test]
    fn stamping_adds_the_engines_annotations_and_berths_labels() {
        let shape = crate::configs::ConfigShape {
            name: "web-config".into(),
            kind: crate::configs::ConfigKind::ConfigMap,
            secret_type: None,
            hash: true,
            immutable: true,
        };
        let mut generated =
            vec![crate::configs::from_entries(&shape, [("A".to_string(), b"1".to_vec())]).unwrap()];
        generated[0].labels.push(("team".into(), "a".into()));
        stamp(&mut generated, Engine::ArgoCd, "shop");
        let g = &generated[0];
        assert_eq!(
            g.labels,
            [
                ("team", "a"),
                ("app.kubernetes.io/managed-by", "berth"),
                ("berth.dev/project", "shop"),
                ("berth.dev/config", "web-config"),
                ("berth.dev/gitops", "argocd")
            ]
            .map(|(k, v)| (k.to_string(), v.to_string()))
        );
        assert_eq!(
            g.annotations,
            [
                ("argocd.argoproj.io/sync-options", "Prune=false"),
                ("argocd.argoproj.io/compare-options", "IgnoreExtraneous")
            ]
            .map(|(k, v)| (k.to_string(), v.to_string()))
        );
        assert_eq!(Engine::parse("flux"), Ok(Some(Engine::Flux)));
        assert_eq!(Engine::parse("none"), Ok(None));
        assert!(Engine::parse("Flux")
            .unwrap_err()
            .to_string()
            .contains("use flux, argocd or none"));
    }
}
