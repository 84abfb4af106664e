//! `accept:`: warnings acknowledged in berth.yaml, each with its reason.

use super::*;
use crate::warning::{Accept, Code};

/// The keys of an `accept:` entry.
pub(super) const ACCEPT_KEYS: &[&str] = &["warning", "at", "because"];

/// What an unknown code is told: the codes (a test keeps the list whole).
pub(super) const CODES_HELP: &str = "use a code shown in brackets at the end of a warning: drift, copy, unparsed-image, missing-key, unused-path, unreached-override, misspelt-variable, makefile-default, values-override, shared-repository, unmatched-component, unused-config, wrongly-undeployed, certificate, unfilled-placeholder, stale-accept, tag-mirror";

impl Loader<'_> {
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
                pos: format!("{}:{}", self.file, item.pos),
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
