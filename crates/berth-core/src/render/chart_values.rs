//! What berth knows of a chart's own values, and two judgements on it: which of berth's image
//! values a chart has a place for (so a profile of two charts does not send one chart's values
//! to the other, whose `values.schema.json` refuses them), and where a chart's own default
//! disagrees with berth.yaml's (a `helm install` of the chart alone runs another image: drift,
//! as a kustomization's `newTag`); and which layer gave a value a warning names
//! ([`ChartValues::origin`]). The CLI reads the files once; this decides.

use berth_yaml::{Node, Pos};

use super::helm::insert;
use super::tag_default::{empty_default, EmptyDefault};
use crate::place::{How, Place, Via};
use crate::project::HelmPart;
use crate::resolve::{Resolution, ResolvedImage};
use crate::warning::{Code, Warning};

/// Which values layer: a file, or a `helm:` entry's `set:` in berth.yaml.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layer {
    /// A values file (the chart's own, a subchart's, a `values:` entry), as shown.
    File(String),
    /// A `helm:` entry's `set:` in berth.yaml (`file`), whose entry is at `pos`.
    Set {
        /// berth.yaml, as shown.
        file: String,
        /// The `helm:` entry.
        pos: Pos,
    },
}

impl Layer {
    /// Where a value found at `pos` of this layer is: the file's line, or the `helm:` entry.
    pub fn place(&self, pos: Pos) -> Place {
        match self {
            Layer::File(file) => Place::file(file).at(pos),
            Layer::Set { file, pos } => Place::file(file).at(*pos),
        }
    }

    /// How a value found at `pos` of this layer, at values path `path`, reached a chart's
    /// output: `from prod.values.yaml:4:14 `decode.image``.
    pub fn via(&self, pos: Pos, path: &str) -> Via {
        let (file, spot, detail) = match self {
            Layer::File(file) => (file, pos, path.to_string()),
            Layer::Set { file, pos } => (file, *pos, format!("set: {path}")),
        };
        Via {
            how: How::From,
            file: file.clone(),
            spot: Some(spot.into()),
            detail: Some(detail),
        }
    }

    /// Whether the layer is a `set:`.
    pub fn is_set(&self) -> bool {
        matches!(self, Layer::Set { .. })
    }
}

impl From<&str> for Layer {
    fn from(file: &str) -> Layer {
        Layer::File(file.to_string())
    }
}

/// A chart's values as berth could read them (a local chart directory).
#[derive(Debug, Clone, Default)]
pub struct ChartValues {
    /// Whether berth opened the chart itself (a local directory); a remote chart or an archive
    /// is not opened, and every image value reaches it.
    pub opened: bool,
    /// The chart's `values.yaml` (its name for messages, its tree), when it has one.
    pub own: Option<(Layer, Node)>,
    /// The chart's `appVersion`: what an empty `tag:` usually stands for.
    pub app_version: Option<String>,
    /// Each dependency's key in the parent's values (its alias, else its name), with its own
    /// `values.yaml` when the subchart is a directory under `charts/`.
    pub dependencies: Vec<(String, Option<(Layer, Node)>)>,
    /// The layers the user gives the chart (`values:` files, `set:`), by name for messages;
    /// they count as places too.
    pub given: Vec<(Layer, Node)>,
    /// Its template files, joined: what an empty value defaults to ([`empty_default`]).
    pub templates: String,
}

impl ChartValues {
    /// The layers in the order helm applies them: the chart's own values.yaml, then the
    /// `values:` files, then `set:`.
    pub fn layers(&self) -> impl DoubleEndedIterator<Item = &(Layer, Node)> {
        self.own.iter().chain(&self.given)
    }

    /// Where the last layer that spells `image` (the whole reference, or its tag under an
    /// image's `tag:` key) does, and the path: what a warning about the chart's output names
    /// as the value's origin.
    pub fn origin(&self, image: &str) -> Option<(Via, String)> {
        let tag = berth_ref::Reference::parse(image)
            .ok()
            .and_then(|r| r.tag().map(|t| t.to_string()));
        self.layers().rev().find_map(|(name, node)| {
            let (pos, path) = find(node, "", image, tag.as_deref())?;
            Some((name.via(pos, &path), path))
        })
    }

    /// The chart's own values tree and each subchart's, with the key a values path
    /// of the parent reaches it under (`""` for the chart's own): what `[drift]`
    /// compares and `berth update` edits alike.
    pub fn defaults(&self) -> Vec<(&str, &Layer, &Node)> {
        let own = self.own.iter().map(|(layer, tree)| ("", layer, tree));
        let dependencies = (self.dependencies.iter()).filter_map(|(key, values)| {
            values
                .as_ref()
                .map(|(layer, tree)| (key.as_str(), layer, tree))
        });
        own.chain(dependencies).collect()
    }

    /// Whether the chart has a place for the dotted `path`: its own values (or a layer given to
    /// it) hold the path or its parent mapping, or the path is under `global` or a
    /// dependency's key (a subchart's values are its own business).
    pub fn has_place_for(&self, path: &str) -> bool {
        let first = path.split('.').next().unwrap_or_default();
        if first == "global" || self.dependencies.iter().any(|(key, _)| key == first) {
            return true;
        }
        let parent = path.rsplit_once('.').map(|(parent, _)| parent);
        let trees = self.own.iter().chain(&self.given).map(|(_, n)| n);
        trees.into_iter().any(|tree| {
            lookup(tree, path).is_some()
                || parent.is_some_and(|p| lookup(tree, p).is_some_and(|n| n.as_map().is_some()))
        })
    }
}

/// The node at the dotted `path` of a mapping.
pub fn lookup<'n>(node: &'n Node, path: &str) -> Option<&'n Node> {
    path.split('.').try_fold(node, |node, key| node.get(key))
}

/// The node at the parent's values `path` in a tree read under `prefix` (a
/// subchart's key, `""` for the chart's own): `epp.image.tag` is `image.tag` in
/// the `epp` subchart's values, and in no other subchart's.
pub fn lookup_under<'n>(tree: &'n Node, prefix: &str, path: &str) -> Option<&'n Node> {
    let inner = if prefix.is_empty() {
        path
    } else {
        path.strip_prefix(prefix)?.strip_prefix('.')?
    };
    lookup(tree, inner)
}

/// `prefix.key`, or `key` at the top: a values path one level down.
pub fn child_path(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

/// `(dotted path, text)` of every scalar below `node`.
pub fn leaves(node: &Node) -> Vec<(String, String)> {
    fn walk(node: &Node, prefix: &str, out: &mut Vec<(String, String)>) {
        match node.as_map() {
            Some(entries) => {
                for (key, value) in entries {
                    let key = key.as_str().unwrap_or_default();
                    let path = child_path(prefix, key);
                    walk(value, &path, out);
                }
            }
            None => {
                if let Some(text) = node.as_str() {
                    out.push((prefix.to_string(), text.to_string()));
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(node, "", &mut out);
    out
}

/// berth's image values for each chart of one render, in order: each chart gets the paths it
/// has a place for; a chart berth did not open (remote, an archive) gets them all; a path no
/// opened chart has a place for goes to every chart, as a values layer always did (the chart
/// may read it without declaring it). `None` for a chart that gets nothing.
pub fn for_charts(images: &Node, charts: &[&ChartValues]) -> Vec<Option<Node>> {
    let mut out: Vec<Option<Node>> = vec![None; charts.len()];
    for (path, value) in leaves(images) {
        let placed: Vec<bool> = charts
            .iter()
            .map(|c| !c.opened || c.has_place_for(&path))
            .collect();
        let anywhere = charts.iter().zip(&placed).any(|(c, &p)| c.opened && p);
        for (i, &has) in placed.iter().enumerate() {
            if has || !anywhere {
                let layer = out[i].get_or_insert_with(|| Node::map(Pos::default()));
                insert(layer, &path, &value);
            }
        }
    }
    out
}

/// berth's image values for each chart of one render ([`for_charts`]), each chart given the
/// components that belong to it (`belongs`): Kubeflow's katib and model-registry charts both
/// read `ui.image.repository` (and `controller.image.repository`) for their own images, and a
/// project that renders them gives each its own. Two components that give one path different
/// values stay an error in a chart that has a place for both and whose defaults name neither
/// (or that berth cannot read).
pub fn values_for_charts(
    resolution: &Resolution<'_>,
    charts: &[&ChartValues],
) -> Result<Vec<Option<Node>>, super::HelmValuesError> {
    let all: Vec<&ResolvedImage<'_>> = resolution.images.iter().collect();
    let mut out = Vec::with_capacity(charts.len());
    for (i, chart) in charts.iter().enumerate() {
        let kept: Vec<&ResolvedImage<'_>> = all
            .iter()
            .copied()
            .filter(|image| belongs(chart, image, &all))
            .collect();
        // Given with every chart, so a path no opened chart has a place for still goes to all.
        let layer = super::helm::image_values_of(&kept)?;
        out.push(layer.and_then(|n| for_charts(&n, charts).swap_remove(i)));
    }
    Ok(out)
}

/// Whether `image`'s values belong in `chart`: not when the chart's defaults at its image
/// path name another component's image (the katib chart's `controller.image.repository:
/// katib-controller` is not notebook-controller's place), nor when it shares a path with a
/// component the chart's defaults name, or with any other while the chart has no place for
/// its paths. A chart berth cannot read takes everything.
fn belongs(chart: &ChartValues, image: &ResolvedImage<'_>, all: &[&ResolvedImage<'_>]) -> bool {
    if !chart.opened {
        return true;
    }
    let last = |i: &ResolvedImage<'_>| i.reference.repository().last_component().to_string();
    let foreign = defaults_named(chart, image)
        .iter()
        .any(|named| *named != last(image) && all.iter().any(|other| last(other) == *named));
    !foreign && !disowned(chart, image, all)
}

/// The last path components of the images `chart`'s own defaults give `image`'s
/// repository and image paths.
fn defaults_named(chart: &ChartValues, image: &ResolvedImage<'_>) -> Vec<String> {
    let Some((_, tree)) = &chart.own else {
        return Vec::new();
    };
    let paths = image.component.helm_values.iter();
    paths
        .filter(|(part, _)| {
            matches!(
                part,
                HelmPart::Repository | HelmPart::Name | HelmPart::Image
            )
        })
        .filter_map(|(_, path)| lookup(tree, path).and_then(Node::as_str))
        .filter_map(|d| d.split('@').next()?.rsplit('/').next()?.split(':').next())
        .filter(|d| !d.is_empty())
        .map(str::to_string)
        .collect()
}

/// Whether `chart`'s own defaults name `image`'s repository at one of its image paths.
fn claims(chart: &ChartValues, image: &ResolvedImage<'_>) -> bool {
    let last = image.reference.repository().last_component().to_string();
    defaults_named(chart, image).contains(&last)
}

/// Whether `image` gives up its values in `chart`, where another component shares one of its
/// paths: the chart has a place for none of its paths, or the chart's defaults name the other
/// component and not it.
fn disowned(chart: &ChartValues, image: &ResolvedImage<'_>, all: &[&ResolvedImage<'_>]) -> bool {
    let paths = |i: &ResolvedImage<'_>| -> Vec<String> {
        i.component
            .helm_values
            .iter()
            .map(|(_, p)| p.clone())
            .collect()
    };
    let mine = paths(image);
    let sharing = || {
        all.iter().filter(|other| {
            other.component.name != image.component.name
                && paths(other).iter().any(|p| mine.contains(p))
        })
    };
    let placed = mine.iter().any(|p| chart.has_place_for(p));
    (!placed && sharing().next().is_some())
        || (!claims(chart, image) && sharing().any(|other| claims(chart, other)))
}

/// Where a chart's own values (or a subchart's) give a component's `helmValues:` path another
/// value than berth.yaml's default: a `helm install` of the chart alone runs another image than
/// berth deploys. One `[drift]` warning per place, at the values file's line.
pub fn default_drift(chart: &ChartValues, resolution: &Resolution<'_>, file: &str) -> Vec<Warning> {
    let mut out = Vec::new();
    let trees = chart.defaults(); // (prefix, file, values)
    let all: Vec<&ResolvedImage<'_>> = resolution.images.iter().collect();
    for image in all.iter().copied().filter(|i| belongs(chart, i, &all)) {
        let c = image.component;
        let has = |p: HelmPart| c.helm_values.iter().any(|(q, _)| *q == p);
        for (part, path) in &c.helm_values {
            for (prefix, name, tree) in &trees {
                let Some(found) = lookup_under(tree, prefix, path) else {
                    continue;
                };
                let Some(text) = found.as_str() else { continue };
                // A chart composes `registry/repository` (`ghcr.io/llm-d` and `epp`), which
                // berth splits elsewhere (`ghcr.io`, `llm-d/epp`): compared composed, once.
                if *part == HelmPart::Registry && (has(HelmPart::Repository) || has(HelmPart::Name))
                {
                    continue;
                }
                let registry = has(HelmPart::Registry).then(|| {
                    (c.helm_values.iter())
                        .find(|(p, _)| *p == HelmPart::Registry)
                        .and_then(|(_, registry)| lookup_under(tree, prefix, registry))
                        .and_then(|n| n.as_str().map(str::to_string))
                        .filter(|r| !r.is_empty())
                });
                let empty = (text.is_empty() && *part == HelmPart::Tag && prefix.is_empty())
                    .then(|| empty_tag(chart, path, tree))
                    .flatten();
                let Some((shown, same)) = judge(*part, text, c, empty, registry) else {
                    continue;
                };
                if same {
                    continue;
                }
                out.push(Warning::at(Code::Drift, name.place(found.pos), format_args!(
                    "the chart's default for `{path}` is {shown}, but berth.yaml's default for component `{}` is `{}` ({file}:{}), and berth sets `{}`: `helm install` of the chart alone runs another image than berth deploys; make the chart's values agree with berth.yaml (or berth.yaml with the chart)",
                    c.name, c.image, c.image_pos, image.reference
                )));
            }
        }
    }
    out
}

/// What the empty tag at `path` of the chart's values `tree` renders as, per
/// its templates, as a message shows it, with the tag: the appVersion, or
/// another value's; `None` when the templates do not say.
fn empty_tag(chart: &ChartValues, path: &str, tree: &Node) -> Option<(String, String)> {
    match empty_default(&chart.templates, path)? {
        EmptyDefault::AppVersion => {
            let app = chart.app_version.clone()?;
            Some((format!("empty (the chart's appVersion `{app}`)"), app))
        }
        EmptyDefault::Value(other) => {
            let tag = lookup(tree, &other)?.as_str()?.to_string();
            Some((format!("empty (`{other}`: `{tag}`)"), tag))
        }
    }
}

/// How a chart's default `text` at a `part` path reads in a message, and whether
/// it names what component `c`'s image does; `None` when there is nothing to
/// compare (an empty value whose default the templates do not say, a digest,
/// text that is no reference). `empty`: what an empty tag stands for, shown
/// and as a tag. `registry`: the chart's registry value beside a repository
/// path (`Some(None)` when that path is empty), `None` when the component has none.
fn judge(
    part: HelmPart,
    text: &str,
    c: &crate::Component,
    empty: Option<(String, String)>,
    registry: Option<Option<String>>,
) -> Option<(String, bool)> {
    let quoted = |t: &str| format!("`{}`", berth_io_free_shown(t));
    let same_repository = |t: &str| {
        berth_ref::Reference::parse(t)
            .ok()
            .map(|r| r.repository() == c.image.repository())
    };
    Some(match part {
        HelmPart::Tag if text.is_empty() => {
            let ((shown, default), tag) = (empty?, c.image.tag()?);
            (shown, default == tag.as_str())
        }
        _ if text.is_empty() => return None,
        HelmPart::Tag => (quoted(text), text == c.image.tag()?.as_str()),
        HelmPart::Registry => (quoted(text), text == c.image.domain()),
        HelmPart::Name if registry.is_none() => {
            let last = c.image.repository().last_component();
            (quoted(text), text == last)
        }
        HelmPart::Repository | HelmPart::Name => match registry {
            Some(registry) => {
                let composed = match &registry {
                    Some(registry) => format!("{registry}/{text}"),
                    None => text.to_string(),
                };
                let same = same_repository(&composed)?;
                (
                    format!(
                        "`{}` (registry and repository)",
                        berth_io_free_shown(&composed)
                    ),
                    same,
                )
            }
            None => (quoted(text), same_repository(text)?),
        },
        HelmPart::Image => {
            let r = berth_ref::Reference::parse(text).ok()?;
            (
                quoted(text),
                r.repository() == c.image.repository() && r.tag() == c.image.tag(),
            )
        }
        HelmPart::Digest => return None,
    })
}

/// The keys of a `set:` layer that hold a dot, as dotted paths to them: a values layer reads
/// `router.modelServers.matchLabels.app: vllm` as one key of that name (helm's `--set` would
/// read a path), so the chart never sees the value where it looks.
pub fn dotted_keys(layer: &Node) -> Vec<String> {
    fn walk(node: &Node, prefix: &str, out: &mut Vec<String>) {
        for (key, value) in node.as_map().unwrap_or_default() {
            let key = key.as_str().unwrap_or_default();
            let path = child_path(prefix, key);
            if key.contains('.') {
                out.push(path);
            } else {
                walk(value, &path, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(layer, "", &mut out);
    out
}

/// A value from a file, shown in a message: control characters escaped, at most 200 characters.
fn berth_io_free_shown(text: &str) -> String {
    text.chars()
        .take(200)
        .flat_map(char::escape_debug)
        .collect::<String>()
}

#[cfg(test)]
#[path = "chart_values_tests.rs"]
mod tests;

/// The scalar below `node` that is `image`, else a `tag:` that is its tag in a
/// mapping that looks like an image (a `repository:` beside it, or a path
/// naming an image).
fn find(node: &Node, path: &str, image: &str, tag: Option<&str>) -> Option<(Pos, String)> {
    if let Some(items) = node.as_seq() {
        return items
            .iter()
            .enumerate()
            .find_map(|(i, item)| find(item, &format!("{path}[{i}]"), image, tag));
    }
    let entries = node.as_map()?;
    for (key, value) in entries {
        let key = key.as_str().unwrap_or_default();
        let child = child_path(path, key);
        if value.as_str() == Some(image) {
            return Some((value.pos, child));
        }
        let image_like =
            node.get("repository").is_some() || path.to_ascii_lowercase().contains("image");
        if key == "tag" && image_like && tag.is_some() && value.as_str() == tag {
            return Some((value.pos, child));
        }
        if let Some(found) = find(value, &child, image, tag) {
            return Some(found);
        }
    }
    None
}

/// Values layers merged as helm merges them: mappings key by key, anything else replaced.
pub fn merge_values(into: &mut Node, over: &Node) {
    let (Some(entries), Some(overs)) = (into.as_map_mut(), over.as_map()) else {
        *into = over.clone();
        return;
    };
    for (key, value) in overs {
        match entries.iter_mut().find(|(k, _)| k.as_str() == key.as_str()) {
            Some((_, existing)) => merge_values(existing, value),
            None => entries.push((key.clone(), value.clone())),
        }
    }
}
