//! Where a finding or a warning is, as a value (#47 item 4): the file (or a tool's
//! output, or a name), the line and column, the object and the files the value came
//! through. It prints as `file:line:column (Kind/name; from values.yaml:4:14)`, and
//! berth.yaml's `accept: at:` is matched against its fields — never against that
//! text parsed back, so a path with spaces, `(` or `;` is named as written.

use std::fmt;

use berth_yaml::Pos;

/// What holds a place.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum File {
    /// A file, relative to the project directory or as the user gave it.
    Path(String),
    /// `kubectl kustomize DIR`'s output: its lines are in no file.
    Kustomize(String),
    /// `helm template CHART`'s output, cut at one template (`ms/templates/d.yaml`).
    Helm {
        /// The chart as berth.yaml names it (`charts/ms`).
        chart: String,
        /// The template the chart's `# Source:` comment names.
        template: Option<String>,
    },
    /// An object of a render's output, where no file is known (`Deployment/web`).
    Rendered {
        /// `Kind/name`.
        object: String,
        /// Its namespace, when it has one.
        namespace: Option<String>,
    },
    /// Not a file: a variable, a flag, `<stdin>`, a controller's `Berth ns/name spec.workloads`.
    Name(String),
}

impl fmt::Display for File {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            File::Path(path) | File::Name(path) => f.write_str(path),
            File::Kustomize(dir) => write!(f, "kustomize {dir}"),
            File::Rendered {
                object,
                namespace: None,
            } => f.write_str(object),
            File::Rendered {
                object,
                namespace: Some(namespace),
            } => write!(f, "{object} in namespace {namespace}"),
            File::Helm {
                chart,
                template: None,
            } => write!(f, "helm template {chart}"),
            File::Helm {
                chart,
                template: Some(template),
            } => write!(f, "helm template {chart}: {template}"),
        }
    }
}

/// A plain path: what a test or a caller reading one file names.
impl From<&str> for File {
    fn from(path: &str) -> File {
        File::Path(path.to_string())
    }
}

/// A line, and its column where one is known (a Makefile's places have none).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Spot {
    /// Counting from 1.
    pub line: u32,
    /// Counting from 1.
    pub column: Option<u32>,
}

impl From<Pos> for Spot {
    fn from(pos: Pos) -> Spot {
        Spot {
            line: pos.line,
            column: Some(pos.column),
        }
    }
}

impl fmt::Display for Spot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.column {
            Some(column) => write!(f, "{}:{column}", self.line),
            None => write!(f, "{}", self.line),
        }
    }
}

/// How a value reached the place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum How {
    /// The object or value came from this file (a kustomize resource, a chart's values layer).
    From,
    /// This file's edit set it (a kustomization's `images:` entry).
    SetBy,
}

/// A file a value came through: what the user edits when the place is a tool's output.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Via {
    /// From, or set by.
    pub how: How,
    /// The file (or a values layer's name).
    pub file: String,
    /// Where in it.
    pub spot: Option<Spot>,
    /// What there: `newTag: v2`, `decode.containers[0].image`.
    pub detail: Option<String>,
}

impl fmt::Display for Via {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = match self.how {
            How::From => "from",
            How::SetBy => "set by",
        };
        write!(f, "{how} {}", self.file)?;
        if let Some(spot) = self.spot {
            write!(f, ":{spot}")?;
        }
        if let Some(detail) = &self.detail {
            write!(f, " `{detail}`")?;
        }
        Ok(())
    }
}

/// Where a finding or a warning is.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Place {
    /// What holds it.
    pub file: File,
    /// Where in it.
    pub spot: Option<Spot>,
    /// The object (`Deployment/web`), when the place is in one.
    pub object: Option<String>,
    /// The files the value came through, outermost last.
    pub via: Vec<Via>,
    /// What else the place is about, which `accept: at:` may name although the
    /// line does not print it as a place: a family member (`modelserver/rocm`).
    pub subject: Option<String>,
}

impl Place {
    /// A place in `file`, a path.
    pub fn file(file: impl fmt::Display) -> Place {
        Place::in_(File::Path(file.to_string()))
    }

    /// A place that is a name (a variable, a flag): matched only by that name.
    pub fn name(name: impl Into<String>) -> Place {
        Place::in_(File::Name(name.into()))
    }

    /// A place in `file`.
    pub fn in_(file: File) -> Place {
        Place {
            file,
            spot: None,
            object: None,
            via: Vec::new(),
            subject: None,
        }
    }

    /// The same place at `spot` (a [`Pos`], or a line).
    pub fn at(mut self, spot: impl Into<Spot>) -> Place {
        self.spot = Some(spot.into());
        self
    }

    /// The same place at `line`, with no column.
    pub fn line(mut self, line: u32) -> Place {
        self.spot = Some(Spot { line, column: None });
        self
    }

    /// The same place in `object` (`Kind/name`).
    pub fn object(mut self, object: impl Into<String>) -> Place {
        self.object = Some(object.into());
        self
    }

    /// The same place, about `subject` too (`modelserver/rocm`).
    pub fn about(mut self, subject: impl Into<String>) -> Place {
        self.subject = Some(subject.into());
        self
    }

    /// Whether the place is in `file`'s output or text.
    pub fn is_in(&self, file: &File) -> bool {
        match (&self.file, file) {
            // A chart's output: any of its templates.
            (File::Helm { chart, .. }, File::Helm { chart: wanted, .. }) => chart == wanted,
            (mine, wanted) => mine == wanted,
        }
    }

    /// Whether `at` (an `accept:` entry's) names this place: the place as printed, or
    /// its file with its line; its file, a directory above it, or a file it came through
    /// (`from`, `set by`); its object, or the generator that made it; or its name.
    pub fn is_named_by(&self, at: &str) -> bool {
        let at = at.trim_end_matches('/');
        if at.is_empty() {
            return false;
        }
        if self.to_string() == at {
            return true;
        }
        if let Some(spot) = self.spot {
            let line = Spot {
                column: None,
                ..spot
            };
            let shown = self.file.to_string();
            if at == format!("{shown}:{spot}") || at == format!("{shown}:{line}") {
                return true;
            }
        }
        let in_file = match &self.file {
            File::Path(path) | File::Kustomize(path) => within(path, at),
            File::Helm { chart, template } => {
                within(chart, at) || template.as_deref().is_some_and(|t| within(t, at))
            }
            File::Rendered { object, .. } => object == at || generated_by(object, at),
            File::Name(name) => name == at,
        };
        in_file
            || self.subject.as_deref() == Some(at)
            || self.via.iter().any(|via| within(&via.file, at))
            || (self.object.as_deref()).is_some_and(|o| o == at || generated_by(o, at))
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(spot) = self.spot {
            write!(f, ":{spot}")?;
        }
        let parts: Vec<String> = (self.object.iter().cloned())
            .chain(self.via.iter().map(Via::to_string))
            .collect();
        if !parts.is_empty() {
            write!(f, " ({})", parts.join("; "))?;
        }
        Ok(())
    }
}

/// Whether `path` is `at` or lies in the directory `at`.
fn within(path: &str, at: &str) -> bool {
    path.strip_prefix(at)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Whether the object `made` (`ConfigMap/kserve-inferenceservice-config-7k2h4g6t9m`) is what a
/// kustomize generator named in `at` (`ConfigMap/inferenceservice-config`) made: the
/// generator's name, behind a `namePrefix` and before kustomize's 10-character hash (#46
/// item 7: `accept: at:` the name the user wrote, not the one kustomize computed).
fn generated_by(made: &str, at: &str) -> bool {
    let (Some((kind, name)), Some((wanted_kind, wanted))) =
        (made.split_once('/'), at.split_once('/'))
    else {
        return false;
    };
    let Some((head, hash)) = name.rsplit_once('-') else {
        return false;
    };
    let hashed = hash.len() == 10
        && hash
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    kind == wanted_kind
        && !wanted.is_empty()
        && hashed
        && (head == wanted || head.ends_with(&format!("-{wanted}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(line: u32, column: u32) -> Pos {
        Pos { line, column }
    }

    fn from(file: &str, spot: Option<Spot>, detail: Option<&str>) -> Via {
        Via {
            how: How::From,
            file: file.into(),
            spot,
            detail: detail.map(str::to_string),
        }
    }

    #[test]
    fn a_place_prints_its_file_spot_object_and_vias() {
        let drift = Place::file("charts/ms/templates/decode.yaml")
            .at(pos(15, 18))
            .object("Deployment/ms-decode");
        let mut via = drift.clone();
        via.via.push(from(
            "values.yaml",
            Some(pos(4, 14).into()),
            Some("a.image"),
        ));
        let table: &[(Place, &str)] = &[
            (Place::name("IMAGE_TAG"), "IMAGE_TAG"),
            (Place::file("Makefile").line(3), "Makefile:3"),
            (
                drift,
                "charts/ms/templates/decode.yaml:15:18 (Deployment/ms-decode)",
            ),
            (
                via,
                "charts/ms/templates/decode.yaml:15:18 (Deployment/ms-decode; from values.yaml:4:14 `a.image`)",
            ),
            (
                Place::in_(File::Kustomize("overlay".into())).at(pos(9, 16)),
                "kustomize overlay:9:16",
            ),
            (
                Place::in_(File::Helm {
                    chart: "charts/ms".into(),
                    template: Some("ms/templates/d.yaml".into()),
                }),
                "helm template charts/ms: ms/templates/d.yaml",
            ),
        ];
        for (place, shown) in table {
            assert_eq!(place.to_string(), *shown);
        }
    }

    #[test]
    fn accept_names_a_place_by_its_fields() {
        let mut drift = Place::file("charts/ms/templates/decode.yaml")
            .at(pos(15, 18))
            .object("Deployment/ms-decode");
        drift
            .via
            .push(from("values.yaml", Some(pos(4, 14).into()), None));
        let variable = Place::name("IMAGE_REGISTRY");
        let mut bumped = Place::in_(File::Kustomize("overlay".into()))
            .at(pos(9, 16))
            .object("Deployment/c");
        bumped.via.push(Via {
            how: How::SetBy,
            file: "overlay/kustomization.yaml".into(),
            spot: Some(pos(3, 59).into()),
            detail: Some("newTag: v2".into()),
        });
        let generated = Place::in_(File::Kustomize("config/default".into()))
            .at(pos(40, 3))
            .object("ConfigMap/kserve-inferenceservice-config-7k2h4g6t9m");
        let mut odd = Place::file("my charts (old)/web/templates/d.yaml")
            .at(pos(3, 9))
            .object("Deployment/web");
        odd.via
            .push(from("vals (prod).yaml", Some(pos(2, 7).into()), None));
        let chart = Place::in_(File::Helm {
            chart: "charts/ms".into(),
            template: Some("ms/templates/d.yaml".into()),
        })
        .at(pos(3, 1));
        let make = Place::file("Makefile").line(12);
        let rendered = Place::in_(File::Rendered {
            object: "Deployment/web".into(),
            namespace: Some("shop".into()),
        });
        let table: &[(&Place, &str, bool)] = &[
            (&drift, "charts/ms/templates/decode.yaml", true),
            (&drift, "charts/ms/templates/decode.yaml:15", true),
            (&drift, "charts/ms/templates/decode.yaml:15:18", true),
            (&drift, "charts/ms/templates/decode.yaml:16", false),
            (&drift, "charts/ms", true),
            (&drift, "charts/ms/", true),
            (&drift, "charts/m", false),
            (&drift, "Deployment/ms-decode", true),
            (&drift, "Deployment/ms", false),
            (&drift, "values.yaml", true),
            (&drift, "other.yaml", false),
            (&drift, "", false),
            (&variable, "IMAGE_REGISTRY", true),
            (&variable, "IMAGE", false),
            (&bumped, "overlay", true),
            (&bumped, "overlay/kustomization.yaml", true),
            (&bumped, "Deployment/c", true),
            (&bumped, "kustomize", false),
            (&bumped, "kustomize overlay", false),
            (&bumped, "kustomize overlay:9:16", true),
            // A kustomize generator's ConfigMap by the name the generator gives it (#46 item 7).
            (&generated, "ConfigMap/inferenceservice-config", true),
            (
                &generated,
                "ConfigMap/kserve-inferenceservice-config-7k2h4g6t9m",
                true,
            ),
            (&generated, "ConfigMap/config", true),
            (&generated, "ConfigMap/service-config", false),
            (&generated, "ConfigMap/vice-config", false),
            (&generated, "Secret/inferenceservice-config", false),
            (&generated, "ConfigMap/", false),
            // A path with spaces and parentheses is named as written (#47 item 4).
            (&odd, "my charts (old)/web", true),
            (&odd, "my charts (old)/web/templates/d.yaml", true),
            (&odd, "my charts", false),
            (&odd, "my charts (old)/we", false),
            (&odd, "vals (prod).yaml", true),
            (&odd, "Deployment/web", true),
            (&odd, "(old)", false),
            (&odd, "Deployment/web; from vals (prod).yaml", false),
            // A chart's output is named by the chart or the template.
            (&chart, "charts/ms", true),
            (&chart, "charts", true),
            (&chart, "ms/templates/d.yaml", true),
            (&chart, "ms/templates", true),
            (&chart, "helm template charts/ms", false),
            (&make, "Makefile", true),
            (&make, "Makefile:12", true),
            (&make, "Makefile:1", false),
            (&rendered, "Deployment/web", true),
            (&rendered, "Deployment/web in namespace shop", true),
            (&rendered, "Deployment/we", false),
        ];
        for (place, at, expected) in table {
            assert_eq!(place.is_named_by(at), *expected, "{at} at {place}");
        }
    }
}
