//! Finds spellings of component images in free text: ConfigMap data and env
//! values at render time, and every file of a repository for `berth audit`.
//!
//! A word is a run of the characters an image reference is made of; it counts
//! when it parses as a reference whose repository is a component's and it is
//! spelt as one (it has a `/`, a `:` tag or an `@` digest, so the bare word
//! `nginx` in prose is not `docker.io/library/nginx`). A tag that is a
//! variable (`repo:$(TAG)`, `repo:${TAG}`, `"repo:" + tag`) is the repository.
//! A reference composed from a variable (`${IMAGE_REGISTRY}/epp:${EPP_TAG}`,
//! `$(REG)/epp`, `$REG/epp`) counts when what follows the variable is a
//! component repository's last path component: the registry prefix berth
//! moves, hard-coded around it.

use std::collections::HashMap;

use crate::{Reference, Repository};

/// A component image spelt in a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spelling<'t> {
    /// The byte offset of the word in the line.
    pub offset: usize,
    /// The word as written (tag and digest included).
    pub text: &'t str,
    /// The index of the component whose repository it is.
    pub component: usize,
}

/// The repositories to look for, by component index.
pub struct Scanner {
    by_repository: HashMap<Repository, usize>,
    /// Each repository's last path component, for composed references.
    by_last: HashMap<String, usize>,
    /// Each repository's last path component: a line without one of these holds
    /// no spelling, which is checked before any word is parsed.
    needles: Vec<String>,
    /// The needles as one automaton: one pass over a file, whatever their
    /// number (`None` only if it could not be built; then each is looked for).
    finder: Option<aho_corasick::AhoCorasick>,
}

impl Scanner {
    /// A scanner for `(component index, its repositories)`; the first component
    /// to claim a repository gets it, as in render.
    pub fn new<'r>(components: impl IntoIterator<Item = (usize, &'r [Repository])>) -> Self {
        let mut by_repository = HashMap::new();
        let mut by_last = HashMap::new();
        let mut needles: Vec<String> = Vec::new();
        for (index, repositories) in components {
            for repository in repositories {
                by_repository.entry(repository.clone()).or_insert(index);
                let needle = repository.last_component().to_string();
                by_last.entry(needle.clone()).or_insert(index);
                if !needles.contains(&needle) {
                    needles.push(needle);
                }
            }
        }
        let finder = aho_corasick::AhoCorasick::new(&needles).ok();
        Scanner {
            by_repository,
            by_last,
            needles,
            finder,
        }
    }

    /// Whether there is nothing to look for.
    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// The last path components searched for (`berth audit` prefilters whole files with them).
    pub fn needles(&self) -> &[String] {
        &self.needles
    }

    /// Whether `text` may hold a spelling (it contains a needle).
    pub fn may_match(&self, text: &str) -> bool {
        self.may_match_bytes(text.as_bytes())
    }

    /// [`Scanner::may_match`] on bytes not yet known to be text.
    pub fn may_match_bytes(&self, bytes: &[u8]) -> bool {
        match &self.finder {
            Some(finder) => finder.is_match(bytes),
            None => self
                .needles
                .iter()
                .any(|n| bytes.windows(n.len()).any(|w| w == n.as_bytes())),
        }
    }

    /// Every spelling of a component image in `line`, in order.
    pub fn line<'t>(&self, line: &'t str) -> Vec<Spelling<'t>> {
        let mut out = Vec::new();
        if !self.may_match(line) {
            return out;
        }
        for (offset, word) in words(line) {
            if let Some(spelling) = self.composed(line, offset, word) {
                out.push(spelling);
                continue;
            }
            let Some((within, text, reference)) = as_reference(word) else {
                continue;
            };
            if let Some(&component) = self.by_repository.get(reference.repository()) {
                out.push(Spelling {
                    offset: offset + within,
                    text,
                    component,
                });
            }
        }
        out
    }
}

impl Scanner {
    /// `word` (at `offset`) as the rest of a reference composed from a variable:
    /// `/NAME…` right after `${VAR}`, `$(VAR)` or `$VAR`, NAME a component
    /// repository's last path component. The spelling runs from the `$`.
    fn composed<'t>(&self, line: &'t str, offset: usize, word: &'t str) -> Option<Spelling<'t>> {
        // `$REG/name`: the word holds the variable's name (`$` ends a word).
        if !word.starts_with('/') && line[..offset].ends_with('$') {
            let slash = word.find('/')?;
            let ident = &word[..slash];
            let valid = !ident.is_empty()
                && ident
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_');
            if !valid {
                return None;
            }
            let inner = self.composed(line, offset + slash, &word[slash..])?;
            return Some(Spelling {
                offset: offset - 1,
                text: &line[offset - 1..inner.offset + inner.text.len()],
                component: inner.component,
            });
        }
        let rest = word.strip_prefix('/')?;
        let name_end = rest.find([':', '@', '/']).unwrap_or(rest.len());
        let name = &rest[..name_end];
        let &component = self.by_last.get(name)?;
        let before = &line[..offset];
        let start = if let Some(head) = before.strip_suffix('}') {
            head.rfind("${")?
        } else if let Some(head) = before.strip_suffix(')') {
            head.rfind("$(")?
        } else {
            let ident = before
                .trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '_')
                .len();
            (ident < before.len() && before[..ident].ends_with('$')).then(|| ident - 1)?
        };
        // A URL's path is no image (`https://dl.k8s.io/…/linux/${TARGETARCH}/kubectl`).
        let token = line[..start]
            .rfind(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`'))
            .map_or(0, |i| i + 1);
        if line[token..start].contains("://") {
            return None;
        }
        let end = offset + 1 + name_end;
        Some(Spelling {
            offset: start,
            text: &line[start..end],
            component,
        })
    }
}

/// Characters of a reference (`$`, braces and parentheses end a word, so
/// `repo:$(TAG)` gives `repo:`).
fn in_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '/' | ':' | '@' | '[' | ']')
}

/// The words of `line` with their byte offsets.
fn words(line: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut start = None;
    let mut out = Vec::new();
    for (i, c) in line.char_indices() {
        match (in_word(c), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, &line[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, &line[s..]));
    }
    out.into_iter()
}

/// A word as a reference, if it is spelt as an image: `:-`/`:=` shell defaults
/// and URLs are not, a trailing `:` (a tag that follows as a variable) is dropped.
/// Returns the offset of the reference in the word, its text and the reference.
fn as_reference(word: &str) -> Option<(usize, &str, Reference)> {
    if word.contains("://") {
        return None;
    }
    // `${IMAGE:-ghcr.io/x:v1}` splits at `{`: the word is `IMAGE:-ghcr.io/x:v1`.
    let text = match word.rfind(":-").or_else(|| word.rfind(":=")) {
        Some(i) => &word[i + 2..],
        None => word,
    };
    let text = text.trim_end_matches([':', '.', '/', '-', '@']);
    let text = text.trim_start_matches(['/', '.', '-', ':', '@']);
    let spelt = text.contains('/') || text.contains(':') || text.contains('@');
    if !spelt {
        return None;
    }
    // `[` and `]` belong to a word for IPv6 hosts (`[::1]:5000/x`); around a
    // reference they are a list's (`images: [ghcr.io/x:v1]`, `["ghcr.io/x:v1"]`).
    let parsed = Reference::parse(text).ok().map(|r| (text, r)).or_else(|| {
        let bare = text
            .trim_start_matches('[')
            .trim_end_matches([']', ',', ':', '.', '/', '-', '@']);
        (bare.len() != text.len())
            .then(|| Reference::parse(bare).ok().map(|r| (bare, r)))
            .flatten()
    });
    parsed.map(|(text, r)| (text.as_ptr() as usize - word.as_ptr() as usize, text, r))
}

/// A shell parameter default in a line: `${NAME:-VALUE}` (also `-`, `:=`, `=`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellDefault<'t> {
    /// The byte offset of the `$`.
    pub offset: usize,
    /// The whole expansion as written.
    pub text: &'t str,
    /// The variable.
    pub variable: &'t str,
    /// The default value (as written; quotes around it kept off).
    pub value: &'t str,
}

/// Every shell parameter default of `line` (`WEB_TAG="${WEB_TAG:-v0.9.2}"`): a script's own
/// default for a variable berth sets, which `berth audit` compares with berth.yaml's.
pub fn shell_defaults(line: &str) -> Vec<ShellDefault<'_>> {
    let mut out = Vec::new();
    let mut rest = 0;
    while let Some(found) = line[rest..].find("${") {
        let offset = rest + found;
        let body_start = offset + 2;
        let name_len = line[body_start..]
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
            .count();
        let after = body_start + name_len;
        let operator = ["}", ":-", ":=", "-", "="]
            .into_iter()
            .find(|op| line[after..].starts_with(op));
        rest = body_start;
        let (Some(op), true) = (operator, name_len > 0) else {
            continue;
        };
        if op == "}" {
            continue;
        }
        let value_start = after + op.len();
        let Some(close) = line[value_start..].find('}') else {
            continue;
        };
        let value = line[value_start..value_start + close].trim_matches(['"', '\'']);
        out.push(ShellDefault {
            offset,
            text: &line[offset..value_start + close + 1],
            variable: &line[body_start..after],
            value,
        });
        rest = value_start + close + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scanner() -> Scanner {
        let epp = Reference::parse("ghcr.io/llm-d/llm-d-inference-scheduler").unwrap();
        let nginx = Reference::parse("nginx").unwrap();
        let repos = [epp.repository().clone()];
        let nginx_repos = [nginx.repository().clone()];
        Scanner::new([(0, &repos[..]), (1, &nginx_repos[..])])
    }

    fn found(line: &str) -> Vec<(&str, usize)> {
        scanner()
            .line(line)
            .into_iter()
            .map(|s| (s.text, s.component))
            .collect()
    }

    #[test]
    fn spellings_in_the_languages_that_hard_code_images() {
        let cases: &[(&str, &[(&str, usize)])] = &[
            (
                "EPP_IMAGE ?= ghcr.io/llm-d/llm-d-inference-scheduler:dev",
                &[("ghcr.io/llm-d/llm-d-inference-scheduler:dev", 0)],
            ),
            (
                "IMG=${IMG:-ghcr.io/llm-d/llm-d-inference-scheduler:v1}",
                &[("ghcr.io/llm-d/llm-d-inference-scheduler:v1", 0)],
            ),
            (
                "  image: \"ghcr.io/llm-d/llm-d-inference-scheduler:$(EPP_TAG)\"",
                &[("ghcr.io/llm-d/llm-d-inference-scheduler", 0)],
            ),
            (
                "epp := \"ghcr.io/llm-d/llm-d-inference-scheduler:\" + tag",
                &[("ghcr.io/llm-d/llm-d-inference-scheduler", 0)],
            ),
            (
                "FROM docker.io/library/nginx:1.25 AS web",
                &[("docker.io/library/nginx:1.25", 1)],
            ),
            ("docker run nginx:1.25", &[("nginx:1.25", 1)]),
            // Sweep 4, U31: next to a list's brackets.
            (
                "images: [ghcr.io/llm-d/llm-d-inference-scheduler:v1]",
                &[("ghcr.io/llm-d/llm-d-inference-scheduler:v1", 0)],
            ),
            ("IMAGES = [nginx:1.25, other]", &[("nginx:1.25", 1)]),
            // Bare words, URLs and other repositories are not spellings of an image.
            ("we serve nginx to users", &[]),
            ("see https://ghcr.io/llm-d/llm-d-inference-scheduler", &[]),
            ("ghcr.io/llm-d/llm-d-inference-scheduler-dev:1", &[]),
            (
                "image = f\"{REGISTRY}/llm-d-inference-scheduler:{TAG}\"",
                &[],
            ),
            // #36 item 5: composed from the registry variable berth moves.
            (
                "docker pull ${IMAGE_REGISTRY}/llm-d-inference-scheduler:${EPP_TAG}",
                &[("${IMAGE_REGISTRY}/llm-d-inference-scheduler", 0)],
            ),
            (
                "EPP ?= $(IMAGE_REGISTRY)/llm-d-inference-scheduler:$(EPP_TAG)",
                &[("$(IMAGE_REGISTRY)/llm-d-inference-scheduler", 0)],
            ),
            (
                "kind load docker-image $REG/llm-d-inference-scheduler",
                &[("$REG/llm-d-inference-scheduler", 0)],
            ),
            // A directory of that name is not an image, nor a file a URL names.
            ("cd $HOME/src/llm-d-inference-scheduler", &[]),
            (
                "curl -LO https://dl.k8s.io/release/v1/bin/linux/${TARGETARCH}/llm-d-inference-scheduler",
                &[],
            ),
            (
                "IMG=\"ghcr.io/${ORG}/llm-d-inference-scheduler\" curl https://x/${ARCH}/y",
                &[("${ORG}/llm-d-inference-scheduler", 0)],
            ),
            ("cat ./llm-d-inference-scheduler/README", &[]),
        ];
        for (line, want) in cases {
            assert_eq!(&found(line), want, "{line}");
        }
    }

    #[test]
    fn shell_defaults_are_found_with_their_variable_and_value() {
        let got: Vec<(usize, &str, &str)> =
            shell_defaults(r#"WEB_TAG="${WEB_TAG:-v0.9.2}" ${A} ${B-x} ${C:="y"} ${ :-z} ${D:-}"#)
                .into_iter()
                .map(|d| (d.offset, d.variable, d.value))
                .collect();
        assert_eq!(
            got,
            [
                (9, "WEB_TAG", "v0.9.2"),
                (34, "B", "x"),
                (41, "C", "y"),
                (59, "D", "")
            ]
        );
    }
}
