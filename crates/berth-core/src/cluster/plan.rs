//! The apply plan: rendered objects labelled, namespaced and ordered, with the
//! scope of each kind taken from discovery or from a CRD in the same apply.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use super::label;

/// Identity of an object: what berth prints and looks up by.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectRef {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// The namespace it lives in (`None` for cluster-scoped objects).
    pub namespace: Option<String>,
}

impl ObjectRef {
    /// The API group (`""` for the core group).
    pub fn group(&self) -> &str {
        self.api_version.split_once('/').map_or("", |(g, _)| g)
    }

    /// `Kind/namespace/name` (`Kind/name` when cluster-scoped), as diff headers name it.
    pub fn path(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{}/{ns}/{}", self.kind, self.name),
            None => format!("{}/{}", self.kind, self.name),
        }
    }
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{}/{} (namespace {ns})", self.kind, self.name),
            None => write!(f, "{}/{}", self.kind, self.name),
        }
    }
}

/// What a project wants in the cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct Desired {
    /// The project's name (labels, record names).
    pub project: String,
    /// Rendered objects, in render order.
    pub objects: Vec<Value>,
    /// Generated object name → its base name (`configs:`/`caBundles:` key).
    pub generated: BTreeMap<String, String>,
}

impl Desired {
    /// What an apply sends from one render: the objects as JSON, in render order, and
    /// each generated object's name with its base name. The CLI and the controller
    /// both build it here.
    pub fn from_rendered(
        project: &str,
        objects: &[berth_yaml::Node],
        generated: &[crate::configs::Generated],
    ) -> Desired {
        Desired {
            project: project.to_string(),
            objects: objects.iter().map(berth_yaml::json::to_json).collect(),
            generated: generated
                .iter()
                .map(|g| (g.name.clone(), g.base_name.clone()))
                .collect(),
        }
    }
}

/// One object of the plan: where it goes and what is sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// The object.
    pub object: ObjectRef,
    /// The body sent with server-side apply (labels and namespace set).
    pub body: Value,
    /// When it is applied.
    pub rank: Rank,
}

/// Apply order: each rank is applied after every object of the ranks before it
/// is, the objects of one rank side by side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rank {
    /// Namespaces: what the rest is created in.
    Namespace,
    /// CustomResourceDefinitions: the kinds of objects that come later.
    Definition,
    /// The ConfigMaps and Secrets berth generated: content-addressed and immutable,
    /// there before any workload that mounts them is (so no pod starts without its
    /// config), and first when nothing precedes them (see [`unchecked`]).
    Generated,
    /// Everything else, in render order.
    Rest,
}

/// The objects a new record's apply sends without a dry run first: berth's
/// generated configs, when they are applied before anything else (no Namespace
/// or CRD in the plan). The dry run is there so that a conflict or a refusal
/// changes nothing; these cannot conflict (their names are their content's
/// hash, so an object of that name holds the same data), and a refusal of one
/// stops the apply before any other object, all dry-run, is written. At worst
/// a sibling config is written, which nothing mounts yet.
pub fn unchecked(plan: &[Planned]) -> Vec<bool> {
    let first = plan.first().map(|p| p.rank);
    plan.iter()
        .map(|p| first == Some(Rank::Generated) && p.rank == Rank::Generated)
        .collect()
}

/// A plan that cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// Discovery did not find the kind, and no CRD in this apply defines it.
    #[error("unknown kind `{kind}` (apiVersion `{api_version}`): the cluster does not serve it; install its CRD first, or check the apiVersion")]
    UnknownKind {
        /// `apiVersion` as written.
        api_version: String,
        /// `kind`.
        kind: String,
    },
}

fn text<'v>(v: &'v Value, path: &[&str]) -> Option<&'v str> {
    path.iter()
        .try_fold(v, |v, k| v.get(k))
        .and_then(Value::as_str)
}

/// `(group, kind)` → namespaced, for the kinds CRDs in `objects` define.
fn crd_scopes(objects: &[Value]) -> BTreeMap<(String, String), bool> {
    objects
        .iter()
        .filter(|o| text(o, &["kind"]) == Some("CustomResourceDefinition"))
        .filter_map(|o| {
            Some((
                (
                    text(o, &["spec", "group"])?.to_string(),
                    text(o, &["spec", "names", "kind"])?.to_string(),
                ),
                text(o, &["spec", "scope"]) != Some("Cluster"),
            ))
        })
        .collect()
}

fn identity(object: &Value) -> Option<(&str, &str, &str)> {
    Some((
        text(object, &["apiVersion"])?,
        text(object, &["kind"])?,
        text(object, &["metadata", "name"])?,
    ))
}

fn group_of(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(g, _)| g)
}

/// The `(apiVersion, kind)` pairs whose scope discovery must tell, in first-seen
/// order: every kind of the objects except those a CRD of the same apply defines.
pub fn kinds_to_discover(desired: &Desired) -> Vec<(String, String)> {
    let defined = crd_scopes(&desired.objects);
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for object in &desired.objects {
        let Some((api_version, kind, _)) = identity(object) else {
            continue;
        };
        if defined.contains_key(&(group_of(api_version).to_string(), kind.to_string())) {
            continue;
        }
        if seen.insert((api_version, kind)) {
            out.push((api_version.to_string(), kind.to_string()));
        }
    }
    out
}

/// Labels, namespaces and orders the objects. `scopes` holds what discovery said
/// of each pair [`kinds_to_discover`] returned (`true`: namespaced); a kind a CRD
/// of this apply defines takes that CRD's scope (matched by group *and* kind).
/// Objects without a namespace get `default_namespace`. Order: by [`Rank`], then
/// render order.
pub fn plan(
    desired: &Desired,
    default_namespace: &str,
    scopes: &BTreeMap<(String, String), bool>,
) -> Result<Vec<Planned>, PlanError> {
    let defined = crd_scopes(&desired.objects);
    let mut out = Vec::new();
    for object in &desired.objects {
        let Some((api_version, kind, name)) = identity(object) else {
            continue; // render guarantees these; a List wrapper has no name
        };
        let (api_version, kind, name) =
            (api_version.to_string(), kind.to_string(), name.to_string());
        let mut body = object.clone();
        let config = desired
            .generated
            .get(&name)
            .filter(|_| matches!(kind.as_str(), "ConfigMap" | "Secret"));
        label(&mut body, &desired.project, config.map(String::as_str));
        let key = (group_of(&api_version).to_string(), kind.clone());
        let namespaced = match defined.get(&key) {
            Some(namespaced) => *namespaced,
            None => *scopes
                .get(&(api_version.clone(), kind.clone()))
                .ok_or_else(|| PlanError::UnknownKind {
                    api_version: api_version.clone(),
                    kind: kind.clone(),
                })?,
        };
        let namespace = if namespaced {
            let ns = text(&body, &["metadata", "namespace"])
                .unwrap_or(default_namespace)
                .to_string();
            body["metadata"]["namespace"] = json!(ns);
            Some(ns)
        } else {
            if let Some(metadata) = body.get_mut("metadata").and_then(Value::as_object_mut) {
                metadata.remove("namespace");
            }
            None
        };
        let rank = match kind.as_str() {
            "Namespace" => Rank::Namespace,
            "CustomResourceDefinition" => Rank::Definition,
            _ if config.is_some() => Rank::Generated,
            _ => Rank::Rest,
        };
        out.push(Planned {
            object: ObjectRef {
                api_version,
                kind,
                name,
                namespace,
            },
            body,
            rank,
        });
    }
    out.sort_by_key(|p| p.rank);
    Ok(out)
}

/// Whether what `object` needs — its kind's CRD, its Namespace — is itself part
/// of `plan`, so a dry run that reports it missing is expected.
pub fn created_by(plan: &[Planned], object: &ObjectRef) -> bool {
    plan.iter().any(|p| {
        (p.object.kind == "CustomResourceDefinition"
            && text(&p.body, &["spec", "group"]) == Some(object.group())
            && text(&p.body, &["spec", "names", "kind"]) == Some(object.kind.as_str()))
            || (p.object.kind == "Namespace"
                && object.namespace.as_deref() == Some(p.object.name.as_str()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desired(objects: Vec<Value>) -> Desired {
        Desired {
            project: "shop".into(),
            objects,
            generated: BTreeMap::from([("web-config-abc".to_string(), "web-config".to_string())]),
        }
    }

    fn crd(group: &str, kind: &str, scope: &str) -> Value {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": format!("{}s.{group}", kind.to_lowercase())},
               "spec": {"group": group, "scope": scope, "names": {"kind": kind}}})
    }

    #[test]
    fn kinds_defined_here_are_not_discovered() {
        let d = desired(vec![
            json!({"apiVersion": "a.io/v1", "kind": "Widget", "metadata": {"name": "w"}}),
            json!({"apiVersion": "b.io/v1", "kind": "Widget", "metadata": {"name": "w"}}),
            crd("a.io", "Widget", "Cluster"),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "y"}}),
        ]);
        assert_eq!(
            kinds_to_discover(&d),
            [
                ("b.io/v1".to_string(), "Widget".to_string()),
                (
                    "apiextensions.k8s.io/v1".into(),
                    "CustomResourceDefinition".into()
                ),
                ("v1".into(), "ConfigMap".into()),
            ]
        );
    }

    #[test]
    fn scope_comes_from_the_crd_with_the_same_group_and_kind() {
        // Two CRDs define a `Widget`: a.io's is cluster-scoped, b.io's namespaced.
        // The old code read the first CRD with that kind in any group.
        let d = desired(vec![
            crd("a.io", "Widget", "Cluster"),
            crd("b.io", "Widget", "Namespaced"),
            json!({"apiVersion": "b.io/v1", "kind": "Widget", "metadata": {"name": "w"}}),
            json!({"apiVersion": "a.io/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "stray"}}),
        ]);
        let scopes = BTreeMap::from([(
            (
                "apiextensions.k8s.io/v1".to_string(),
                "CustomResourceDefinition".to_string(),
            ),
            false,
        )]);
        let p = plan(&d, "dev", &scopes).unwrap();
        let widgets: Vec<(&str, Option<&str>)> = p
            .iter()
            .filter(|p| p.object.kind == "Widget")
            .map(|p| (p.object.group(), p.object.namespace.as_deref()))
            .collect();
        assert_eq!(widgets, [("b.io", Some("dev")), ("a.io", None)]);
        assert!(
            p[3].body["metadata"].get("namespace").is_none(),
            "cluster-scoped: no namespace sent"
        );
    }

    #[test]
    fn labels_namespaces_and_order() {
        let d = desired(vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-config-abc"}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "own"}}),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "own"}}),
        ]);
        let scopes = BTreeMap::from([
            (("v1".to_string(), "ConfigMap".to_string()), true),
            (("apps/v1".to_string(), "Deployment".to_string()), true),
            (("v1".to_string(), "Namespace".to_string()), false),
        ]);
        let p = plan(&d, "dev", &scopes).unwrap();
        let order: Vec<String> = p.iter().map(|p| p.object.to_string()).collect();
        assert_eq!(
            order,
            [
                "Namespace/own",
                "ConfigMap/web-config-abc (namespace dev)",
                "Deployment/web (namespace own)"
            ]
        );
        assert_eq!(
            p[1].body["metadata"]["labels"]["berth.dev/config"],
            "web-config"
        );
        assert_eq!(p[2].body["metadata"]["labels"]["berth.dev/project"], "shop");
        assert!(p[2].body["metadata"]["labels"]
            .get("berth.dev/config")
            .is_none());
        assert!(created_by(&p, &p[2].object), "its Namespace is in the plan");
        assert!(!created_by(&p, &p[1].object));
    }

    #[test]
    fn generated_configs_go_before_their_workloads_and_skip_the_dry_run_only_when_first() {
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-config-abc"}});
        let users =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-config"}});
        let web =
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}});
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "dev"}});
        let scopes = BTreeMap::from([
            (("v1".to_string(), "ConfigMap".to_string()), true),
            (("apps/v1".to_string(), "Deployment".to_string()), true),
            (("v1".to_string(), "Namespace".to_string()), false),
        ]);
        let cases: [(Vec<Value>, &[&str], &[bool]); 4] = [
            (
                vec![web.clone(), users.clone(), config.clone()],
                &[
                    "ConfigMap/web-config-abc",
                    "Deployment/web",
                    "ConfigMap/web-config",
                ],
                &[true, false, false],
            ),
            (
                vec![web.clone(), ns.clone(), config.clone()],
                &[
                    "Namespace/dev",
                    "ConfigMap/web-config-abc",
                    "Deployment/web",
                ],
                &[false, false, false],
            ),
            (
                vec![web.clone(), users],
                &["Deployment/web", "ConfigMap/web-config"],
                &[false, false],
            ),
            (vec![], &[], &[]),
        ];
        for (objects, order, skipped) in cases {
            let p = plan(&desired(objects), "dev", &scopes).unwrap();
            let names: Vec<String> = p
                .iter()
                .map(|p| format!("{}/{}", p.object.kind, p.object.name))
                .collect();
            assert_eq!(names, order);
            assert_eq!(unchecked(&p), skipped, "{order:?}");
        }
        assert!(Rank::Namespace < Rank::Definition && Rank::Definition < Rank::Generated);
    }

    #[test]
    fn an_undiscovered_kind_is_an_error() {
        let d = desired(vec![
            json!({"apiVersion": "x.io/v1", "kind": "Frob", "metadata": {"name": "f"}}),
        ]);
        assert_eq!(
            plan(&d, "dev", &BTreeMap::new()),
            Err(PlanError::UnknownKind {
                api_version: "x.io/v1".into(),
                kind: "Frob".into()
            })
        );
    }
}
