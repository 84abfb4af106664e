//! init's last guard (#46 item 5): what init writes must load. When it does
//! not — a case init's decisions did not foresee — the entry the error points
//! at (a component, a profile, a `manifests:` item, `operator:`) is left out
//! with the reason, and the rest is written: one unusable candidate never costs
//! the user the whole file.

use berth_yaml::{Limits, Node};

/// At most this many entries are left out before init gives up.
const ATTEMPTS: usize = 32;

/// `yaml` (init's plan), or the same with the entries `load` refuses left out,
/// and one note per entry; `Err` with `load`'s message when the error names no
/// entry that can go.
pub fn salvage(
    yaml: &str,
    load: &dyn Fn(&str) -> Result<(), String>,
) -> Result<(String, Vec<String>), String> {
    let header: String = yaml
        .lines()
        .take_while(|l| l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    let mut text = yaml.to_string();
    let mut notes = Vec::new();
    for _ in 0..ATTEMPTS {
        let error = match load(&text) {
            Ok(()) => return Ok((text, notes)),
            Err(error) => error,
        };
        let Some(line) = error_line(&error) else {
            return Err(error);
        };
        let mut docs = berth_yaml::load_all(&text, Limits::default()).map_err(|_| error.clone())?;
        let Some(doc) = docs.first_mut() else {
            return Err(error);
        };
        let Some(removed) = remove_entry_at(doc, line) else {
            return Err(error);
        };
        notes.push(format!(
            "left out {removed}: berth.yaml does not load with it ({error}); add it by hand once that is fixed"
        ));
        text = header.clone();
        berth_yaml::write_document(&mut text, doc);
    }
    load(&text).map(|()| (text, notes))
}

/// The line of `berth.yaml:LINE:COLUMN: …` in a load error.
fn error_line(error: &str) -> Option<u32> {
    let rest = &error[error.find("berth.yaml:")? + "berth.yaml:".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Removes the entry of `images:`, `profiles:` or `manifests:` (or `operator:`
/// whole) that spans `line`, and says what it was.
fn remove_entry_at(doc: &mut Node, line: u32) -> Option<String> {
    let tops = doc.as_map()?;
    let section = tops
        .iter()
        .enumerate()
        .rev()
        .find(|(_, (k, _))| k.pos.line <= line);
    let (index, (key, _)) = section?;
    let section = key.as_str()?.to_string();
    let end = tops.get(index + 1).map_or(u32::MAX, |(k, _)| k.pos.line);
    let value = doc.get_mut(&section)?;
    let within = |start: u32, next: Option<u32>| start <= line && line < next.unwrap_or(end);
    match (section.as_str(), value) {
        ("images" | "profiles", value) => {
            let entries = value.as_map_mut()?;
            let lines: Vec<u32> = entries.iter().map(|(k, _)| k.pos.line).collect();
            let at = (0..lines.len()).find(|&i| within(lines[i], lines.get(i + 1).copied()))?;
            let (name, _) = entries.remove(at);
            let what = if section == "images" {
                "component"
            } else {
                "profile"
            };
            Some(format!("{what} `{}`", name.as_str().unwrap_or_default()))
        }
        ("manifests", value) => {
            let items = value.as_seq_mut()?;
            let lines: Vec<u32> = items.iter().map(|i| i.pos.line).collect();
            let at = (0..lines.len()).find(|&i| within(lines[i], lines.get(i + 1).copied()))?;
            items.remove(at);
            Some(format!("`manifests:` entry {}", at + 1))
        }
        ("operator", _) => {
            doc.as_map_mut()?
                .retain(|(k, _)| k.as_str() != Some("operator"));
            Some("`operator:`".to_string())
        }
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A loader that refuses a component named `bad` and a profile named `worse`,
    /// at their lines, as the project loader does.
    fn load(text: &str) -> Result<(), String> {
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("bad:") || line.trim_start().starts_with("worse:") {
                return Err(format!("berth.yaml:{}:3: no such thing", n + 1));
            }
        }
        Ok(())
    }

    #[test]
    fn what_does_not_load_is_left_out_with_its_reason() {
        let yaml = "# Written by `berth init`.\nname: x\nprofiles:\n  ok:\n  - kustomize: a\n  worse:\n  - kustomize: b\nimages:\n  web:\n    image: ghcr.io/a/web:v1\n  bad:\n    image: ghcr.io/a/bad:v1\n";
        let (text, notes) = salvage(yaml, &load).unwrap();
        assert_eq!(
            text,
            "# Written by `berth init`.\nname: x\nprofiles:\n  ok:\n  - kustomize: a\nimages:\n  web:\n    image: ghcr.io/a/web:v1\n"
        );
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].starts_with("left out profile `worse`: berth.yaml does not load with it (berth.yaml:6:3: no such thing)"), "{notes:?}");
        assert!(
            notes[1].starts_with("left out component `bad`"),
            "{notes:?}"
        );
        // What loads is kept byte for byte; an error at no entry stays an error.
        assert_eq!(
            salvage("name: x\n", &load).unwrap(),
            ("name: x\n".to_string(), vec![])
        );
        let refuse = |_: &str| Err("berth.yaml:1:1: broken".to_string());
        assert!(salvage("name: x\n", &refuse).is_err());
    }
}
