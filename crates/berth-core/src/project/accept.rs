//! `accept:` (warnings acknowledged in berth.yaml, each with its reason) and
//! `operator:`/`relatedImage:` (what an operator pulls at run time).

use super::*;
use crate::warning::{Accept, Code};

/// The keys of `operator:`.
pub(super) const OPERATOR_KEYS: &[&str] = &["workload", "container"];

/// The keys of an `accept:` entry.
pub(super) const ACCEPT_KEYS: &[&str] = &["warning", "at", "because"];

/// What an unknown code is told: the codes (a test keeps the list whole).
pub(super) const CODES_HELP: &str = "use a code shown in brackets at the end of a warning: drift, copy, unparsed-image, missing-key, unused-path, unreached-override, misspelt-variable, makefile-default, values-override, shared-repository, unmatched-component, unused-config, wrongly-undeployed, certificate, unfilled-placeholder, stale-accept, tag-mirror, related-image, trust-variable, public-roots, cluster-source, dotted-key, duplicate-key, variant-resource, variant-lag, lock-stale";

impl Loader<'_> {
    /// `operator: {workload: Kind/NAME, container: NAME}`.
    pub(super) fn operator(&self, node: &Node) -> Result<super::Operator, ProjectError> {
        let mut workload = None;
        let mut container = None;
        for (key, value) in self.fields(node, "operator", OPERATOR_KEYS)? {
            match key.as_str().unwrap_or_default() {
                "workload" => {
                    let text = self.string(value, "operator.workload")?;
                    let (kind, name) = text.split_once('/').filter(|(k, n)| !k.is_empty() && !n.is_empty() && !n.contains('/')).ok_or_else(|| {
                        self.invalid(value, "operator.workload", text, "write the workload as `Kind/name`, e.g. `Deployment/ogx-operator-controller-manager`")
                    })?;
                    workload = Some((kind.to_string(), name.to_string()));
                }
                "container" => {
                    container = Some(self.string(value, "operator.container")?.to_string())
                }
                _ => {} // `fields` admitted only the keys above
            }
        }
        let (kind, name) =
            workload.ok_or_else(|| self.missing(node.pos, "workload", "`operator:`"))?;
        let container =
            container.ok_or_else(|| self.missing(node.pos, "container", "`operator:`"))?;
        Ok(super::Operator {
            kind,
            name,
            container,
            at: crate::place::Place::file(self.file).at(node.pos),
        })
    }

    /// `relatedImage: true` (the component's name) or `relatedImage: NAME`.
    pub(super) fn related_image(
        &self,
        node: &Node,
        key: &str,
        component: &str,
    ) -> Result<Option<String>, ProjectError> {
        let name = match node.as_str() {
            Some("true") | Some("false") | None => {
                return Ok(self.bool(node, key)?.then(|| component.to_string()))
            }
            Some(text) => text,
        };
        let valid = !name.is_empty()
            && name.len() <= 63
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
        if !valid {
            return Err(self.invalid(node, key, name, "`true`, or a name of letters, digits, `-`, `_` and `.` (at most 63): the variable is `RELATED_IMAGE_` and the name in upper case, `-` and `.` as `_`"));
        }
        Ok(Some(name.to_string()))
    }

    /// `accept: [{warning: CODE, at: PLACE, because: TEXT}]`: all three required,
    /// the reason so that the next reader knows why the warning is right to ignore.
    pub(super) fn accepts(&self, node: &Node) -> Result<Vec<Accept>, ProjectError> {
        let mut out = Vec::new();
        for item in self.list(node, "accept", "a list of {warning, at, because}")? {
            let mut code = None;
            let mut at = None;
            let mut because = None;
            for (key, value) in self.fields(item, "accept[]", ACCEPT_KEYS)? {
                match key.as_str().unwrap_or_default() {
                    "warning" => {
                        let text = self.string(value, "accept[].warning")?;
                        let parsed = Code::parse(text).ok_or_else(|| {
                            self.invalid(value, "accept[].warning", text, CODES_HELP)
                        })?;
                        code = Some(parsed);
                    }
                    "at" => at = Some(self.string(value, "accept[].at")?.to_string()),
                    "because" => {
                        because = Some(self.string(value, "accept[].because")?.to_string())
                    }
                    _ => {} // `fields` admitted only the keys above
                }
            }
            let code =
                code.ok_or_else(|| self.missing(item.pos, "warning", "an `accept:` entry"))?;
            let at = at.ok_or_else(|| self.missing(item.pos, "at", "an `accept:` entry (the file, directory, object `Kind/name` or variable the warning is about)"))?;
            let because = because.ok_or_else(|| {
                self.missing(
                    item.pos,
                    "because",
                    "an `accept:` entry (why the warning is right to ignore)",
                )
            })?;
            out.push(Accept {
                code,
                at,
                because,
                pos: crate::place::Place::file(self.file).at(item.pos),
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_help_names_every_code() {
        let listed: Vec<&str> = CODES_HELP
            .split_once(": ")
            .map(|(_, list)| list.split(", ").collect())
            .unwrap_or_default();
        let all: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(listed, all);
    }
}
