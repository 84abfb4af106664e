//! `berth ref`: parse and normalize image references.

use anyhow::Result;
use berth_ref::Reference;
use serde_json::json;

use crate::output::print;
use crate::settings::Ref;

/// Returns whether every input was valid.
pub fn run(args: &Ref<'_>) -> Result<bool> {
    let parsed: Vec<(&str, Result<Reference, String>)> = args
        .references
        .iter()
        .map(|input| {
            (
                input.as_str(),
                Reference::parse(input).map_err(|e| e.to_string()),
            )
        })
        .collect();
    let text = match args.json {
        true => {
            let items: Vec<serde_json::Value> =
                parsed.iter().map(|(input, r)| to_json(input, r)).collect();
            let mut s = serde_json::to_string_pretty(&items)?;
            s.push('\n');
            s
        }
        false => parsed
            .iter()
            .map(|(input, r)| match r {
                Ok(r) => format!("{input}: {r}\n"),
                Err(e) => format!("{input}: invalid: {e}\n"),
            })
            .collect(),
    };
    print(&text)?;
    Ok(parsed.iter().all(|(_, r)| r.is_ok()))
}

fn to_json(input: &str, parsed: &Result<Reference, String>) -> serde_json::Value {
    match parsed {
        Ok(r) => json!({
            "input": input,
            "valid": true,
            "domain": r.domain(),
            "path": r.path(),
            "tag": r.tag().map(|t| t.as_str()),
            "digest": r.digest().map(|d| d.to_string()),
            "normalized": r.to_string(),
            "familiar": r.familiar(),
            "error": null,
        }),
        Err(e) => json!({
            "input": input,
            "valid": false,
            "domain": null,
            "path": null,
            "tag": null,
            "digest": null,
            "normalized": null,
            "familiar": null,
            "error": e,
        }),
    }
}
