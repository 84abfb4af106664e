//! What a kustomization file says, read once: what it builds on (resource
//! files, other kustomizations, remote bases), its `images:` edits and its
//! generators' names. Pure (text in, model out): the CLI's one kustomize
//! adapter finds and reads the files, and init, audit, the output cache and the
//! attribution of warnings all take this model.

use berth_yaml::{Limits, Node, Pos};

/// The file names kustomize reads a kustomization from, in its order.
pub const FILE_NAMES: [&str; 3] = ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// One kustomization file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Kustomization {
    /// The entries of `resources:`, `bases:` and `components:`, in that order:
    /// resource files, directories of other kustomizations, remote bases.
    pub bases: Vec<String>,
    /// The entries of `generators:`, `transformers:` and `validators:`: their
    /// configurations' files (a string of inline YAML is left out).
    pub plugins: Vec<String>,
    /// `images:`, each with a `name:`.
    pub images: Vec<ImageEdit>,
    /// The names of `configMapGenerator:` (`ConfigMap`) and `secretGenerator:`
    /// (`Secret`) entries, as `(kind, name)`.
    pub generated: Vec<(&'static str, String)>,
}

/// One entry of a kustomization's `images:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageEdit {
    /// `name:`, the image it edits.
    pub name: String,
    /// `newName:`.
    pub new_name: Option<String>,
    /// `newTag:`.
    pub new_tag: Option<String>,
    /// `digest:`.
    pub digest: Option<String>,
    /// Where `newTag:` is written (else the entry).
    pub pos: Pos,
}

/// A kustomization that does not parse as YAML.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Unreadable(#[source] pub berth_yaml::Error);

impl Kustomization {
    /// The kustomization `text` says (its first document); entries that are not
    /// strings, and keys kustomize would refuse, are left for kustomize to judge.
    pub fn parse(text: &str) -> Result<Kustomization, Unreadable> {
        let docs = berth_yaml::load_all(text, Limits::default()).map_err(Unreadable)?;
        Ok(docs.first().map(Kustomization::of).unwrap_or_default())
    }

    /// The kustomization `doc` says.
    pub fn of(doc: &Node) -> Kustomization {
        let images = (doc.get("images").and_then(Node::as_seq).unwrap_or_default())
            .iter()
            .filter_map(|item| {
                let text = |key: &str| item.get(key).and_then(Node::as_str).map(str::to_string);
                Some(ImageEdit {
                    name: text("name")?,
                    new_name: text("newName"),
                    new_tag: text("newTag"),
                    digest: text("digest"),
                    pos: item.get("newTag").map_or(item.pos, |n| n.pos),
                })
            })
            .collect();
        let mut generated = Vec::new();
        for (key, kind) in [
            ("configMapGenerator", "ConfigMap"),
            ("secretGenerator", "Secret"),
        ] {
            for item in doc.get(key).and_then(Node::as_seq).unwrap_or_default() {
                if let Some(name) = item.get("name").and_then(Node::as_str) {
                    generated.push((kind, name.to_string()));
                }
            }
        }
        let plugins = entries(doc, &["generators", "transformers", "validators"])
            .into_iter()
            .filter(|entry| !entry.contains('\n'))
            .collect();
        Kustomization {
            bases: entries(doc, &["resources", "bases", "components"]),
            plugins,
            images,
            generated,
        }
    }

    /// The local entries of [`Kustomization::bases`]: what berth can read.
    pub fn local_bases(&self) -> impl Iterator<Item = &str> {
        (self.bases.iter())
            .map(String::as_str)
            .filter(|entry| !is_remote(entry))
    }
}

/// The string entries of `keys` in `doc`, in order (maps and other values skipped).
fn entries(doc: &Node, keys: &[&str]) -> Vec<String> {
    keys.iter()
        .filter_map(|key| doc.get(key).and_then(Node::as_seq))
        .flatten()
        .filter_map(Node::as_str)
        .map(str::to_string)
        .collect()
}

/// Whether an entry names a remote base, fetched by kustomize: a URL, a
/// `github.com/…` or `git@…` path, or one with a `?ref=`.
pub fn is_remote(entry: &str) -> bool {
    entry.contains("://")
        || entry.starts_with("github.com/")
        || entry.starts_with("git@")
        || entry.contains("?ref=")
}

/// Whether `name` (a file name, or a path ending in one) is a kustomization file's.
pub fn is_file_name(name: &str) -> bool {
    let last = name.rsplit('/').next().unwrap_or(name);
    FILE_NAMES.contains(&last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kustomization_is_read_once_into_what_it_builds_on_and_edits() {
        let k = Kustomization::parse(
            "resources:\n- deployment.yaml\n- ../base\n- github.com/org/repo//config?ref=v1\n\
             components: [../components/gpu]\nbases: [../old]\n\
             generators: [gen.yaml, \"kind: X\\nmetadata: {name: y}\\n\"]\n\
             images:\n- name: web\n  newName: quay.io/me/web\n  newTag: v2\n- newTag: orphan\n\
             - name: db\n  digest: sha256:abc\n\
             configMapGenerator:\n- name: settings\nsecretGenerator:\n- name: creds\n",
        )
        .unwrap();
        assert_eq!(
            k.bases,
            [
                "deployment.yaml",
                "../base",
                "github.com/org/repo//config?ref=v1",
                "../old",
                "../components/gpu"
            ]
        );
        assert_eq!(
            k.local_bases().collect::<Vec<_>>(),
            ["deployment.yaml", "../base", "../old", "../components/gpu"]
        );
        assert_eq!(k.plugins, ["gen.yaml"]);
        assert_eq!(k.images.len(), 2, "an entry without a name edits nothing");
        assert_eq!(k.images[0].new_name.as_deref(), Some("quay.io/me/web"));
        assert_eq!(k.images[0].new_tag.as_deref(), Some("v2"));
        assert_eq!(k.images[0].pos.line, 11, "at its newTag");
        assert_eq!(k.images[1].digest.as_deref(), Some("sha256:abc"));
        assert_eq!(
            k.generated,
            [
                ("ConfigMap", "settings".to_string()),
                ("Secret", "creds".to_string())
            ]
        );
        assert_eq!(Kustomization::parse("").unwrap(), Kustomization::default());
        assert!(Kustomization::parse("resources: [\n").is_err());
    }

    #[test]
    fn remote_bases_and_file_names() {
        for remote in [
            "https://github.com/org/repo",
            "github.com/org/repo/config",
            "git@github.com:org/repo.git",
            "../x?ref=main",
        ] {
            assert!(is_remote(remote), "{remote}");
        }
        assert!(!is_remote("../base"));
        assert!(is_file_name("config/default/kustomization.yaml"));
        assert!(is_file_name("Kustomization"));
        assert!(!is_file_name("kustomize.yaml"));
    }
}
