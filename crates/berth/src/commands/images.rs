//! `berth images`: print every component's resolved image.

use anyhow::Result;
use berth_core::resolve::{Origin, Resolution, ResolvedImage};
use serde_json::json;

use crate::cli::ImagesFormat;
use crate::output::{print, table};
use crate::settings::Images;

pub fn run(args: &Images, resolution: &Resolution<'_>) -> Result<()> {
    let format = args.output;
    let images = &resolution.images;
    let mut variables = resolution.variables();
    if format == ImagesFormat::Shell {
        // Exported, the images reach every berth the script runs next: it
        // takes them as its base, not as overrides (docs/images.md).
        variables.extend(resolution.handed_variable(&variables));
    }
    // One string, pushed to piece by piece: a Makefile runs this on every call,
    // and a `format!` per line cost more than the rest of the output.
    let lines = |pieces: &dyn Fn(&str, &str, &mut String)| -> String {
        let mut out = String::with_capacity(variables.len() * 80);
        for (var, image) in &variables {
            pieces(var, image, &mut out);
        }
        out
    };
    let text = match format {
        ImagesFormat::Env => lines(&|var, image, out| push_all(out, &[var, "=", image, "\n"])),
        ImagesFormat::Shell => lines(&|var, image, out| {
            push_all(out, &["export ", var, "=", &shell_quote(image), "\n"])
        }),
        ImagesFormat::Make => lines(&|var, image, out| push_all(out, &[var, " := ", image, "\n"])),
        ImagesFormat::Json => {
            let mut s = serde_json::to_string_pretty(&structured(images))?;
            s.push('\n');
            s
        }
        ImagesFormat::Yaml => {
            let mut s = String::new();
            berth_yaml::write_document(&mut s, &berth_yaml::json::from_json(&structured(images)));
            s
        }
        ImagesFormat::List => distinct(resolution)
            .iter()
            .map(|r| format!("{r}\n"))
            .collect(),
        ImagesFormat::Imageset => {
            let additional: Vec<serde_json::Value> = distinct(resolution)
                .iter()
                .map(|r| json!({"name": r}))
                .collect();
            let config = json!({
                "kind": "ImageSetConfiguration",
                "apiVersion": "mirror.openshift.io/v2alpha1",
                "mirror": {"additionalImages": additional},
            });
            let mut s = String::new();
            berth_yaml::write_document(&mut s, &berth_yaml::json::from_json(&config));
            s
        }
        ImagesFormat::Table => {
            let mut rows = vec![vec![
                "COMPONENT".into(),
                "VARIABLE".into(),
                "IMAGE".into(),
                "FROM".into(),
            ]];
            rows.extend(images.iter().map(|i| {
                vec![
                    match &i.variant {
                        Some(selected) => format!("{} ({})", i.component.name, selected.name),
                        None => i.component.name.clone(),
                    },
                    i.component.env.clone(),
                    i.reference.to_string(),
                    summary(i),
                ]
            }));
            let mut s = table(&rows);
            if args.explain {
                s.push('\n');
                s.push_str(&explain(images));
            }
            s
        }
    };
    print(&text)?;
    let machine = matches!(
        format,
        ImagesFormat::Env
            | ImagesFormat::Shell
            | ImagesFormat::Make
            | ImagesFormat::List
            | ImagesFormat::Imageset
    );
    if args.explain && machine {
        say!("{}", explain(images).trim_end_matches('\n'));
    }
    Ok(())
}

/// Every resolved reference once, in file order (a `sameAs` component's copy
/// once, a family's every member).
fn distinct(resolution: &Resolution<'_>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (_, reference) in resolution.every_image() {
        let reference = reference.to_string();
        if !out.contains(&reference) {
            out.push(reference);
        }
    }
    out
}

/// Single quotes for POSIX shells; a `'` inside becomes `'\''`.
fn push_all(out: &mut String, pieces: &[&str]) {
    pieces.iter().for_each(|piece| out.push_str(piece));
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The distinct origins of an image's parts, most specific first.
fn summary(image: &ResolvedImage<'_>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for origin in image.origins.parts() {
        let text = short(origin);
        if !seen.contains(&text) {
            seen.push(text);
        }
    }
    seen.join(" + ")
}

fn short(origin: &Origin) -> String {
    match origin {
        Origin::Project { file, .. } => file.to_string(),
        other => other.to_string(),
    }
}

fn explain(images: &[ResolvedImage<'_>]) -> String {
    let mut out = String::new();
    for i in images {
        let r = &i.reference;
        let o = &i.origins;
        let registry = match r.path().rsplit_once('/') {
            Some((prefix, _)) => format!("{}/{prefix}", r.domain()),
            None => r.domain().to_string(),
        };
        let part =
            |name: &str, value: Option<String>, origin: Option<&Origin>| match (value, origin) {
                (Some(value), Some(origin)) => {
                    vec![format!("  {name}"), value, format!("from {origin}")]
                }
                _ => vec![format!("  {name}"), "(none)".into()],
            };
        let rows = vec![
            part("registry", Some(registry), Some(&o.registry)),
            part(
                "name",
                Some(r.repository().last_component().to_string()),
                Some(&o.name),
            ),
            part("tag", r.tag().map(|t| t.to_string()), o.tag.as_ref()),
            part(
                "digest",
                r.digest().map(|d| d.to_string()),
                o.digest.as_ref(),
            ),
        ];
        out.push_str(&format!(
            "{} ({}={}):\n",
            i.component.name, i.component.env, r
        ));
        out.push_str(&table(&rows));
        if let Some(other) = &i.component.same_as {
            out.push_str(&format!(
                "  note: the default is component `{other}`'s resolved image (`sameAs: {other}`)\n"
            ));
        }
        if let Some(note) = &i.ignored {
            out.push_str(&format!("  note: {note}\n"));
        }
        out.push_str(&members(i));
    }
    out
}

/// A family's selection and its other members, each with its variable and
/// what did not reach it (`--explain`).
fn members(i: &ResolvedImage<'_>) -> String {
    let Some(selection) = &i.variant else {
        return String::new();
    };
    let mut out = match selection.by {
        berth_core::resolve::SelectedBy::Default => {
            "  variant: `default` (no flag, variable or profile selects another)\n".to_string()
        }
        _ => format!("  variant: `{}`, selected by {selection}\n", selection.name),
    };
    for v in &i.component.variants {
        let Some(member) = i.member(&v.name).filter(|_| v.name != selection.name) else {
            continue;
        };
        let variable = v.variable(&i.component.name);
        out.push_str(&format!(
            "  variant {} ({variable}={})\n",
            v.name, member.reference
        ));
        if let Some(note) = &member.ignored {
            out.push_str(&format!("    note: {note}\n"));
        }
    }
    out
}

fn structured(images: &[ResolvedImage<'_>]) -> serde_json::Value {
    let origin = |o: Option<&Origin>| o.map(|o| o.to_string());
    images
        .iter()
        .map(|i| {
            let r = &i.reference;
            let mut out = json!({
                "component": i.component.name,
                "variable": i.component.env,
                "image": r.to_string(),
                "domain": r.domain(),
                "path": r.path(),
                "tag": r.tag().map(|t| t.as_str()),
                "digest": r.digest().map(|d| d.to_string()),
                "familiar": r.familiar(),
                "sources": {
                    "registry": origin(Some(&i.origins.registry)),
                    "name": origin(Some(&i.origins.name)),
                    "tag": origin(i.origins.tag.as_ref()),
                    "digest": origin(i.origins.digest.as_ref()),
                },
                "note": i.ignored,
            });
            if let (Some(selected), Some(map)) = (&i.variant, out.as_object_mut()) {
                map.insert("variant".into(), json!(selected.name));
                map.insert("variants".into(), variants(i));
            }
            out
        })
        .collect()
}

/// A family's variants, each with its variable and image (only a family has the key).
fn variants(i: &ResolvedImage<'_>) -> serde_json::Value {
    let members = i.component.variants.iter().filter_map(|v| {
        let member = i.member(&v.name)?;
        let selected = i.variant.as_ref().is_some_and(|s| s.name == v.name);
        let image = if selected {
            &i.reference
        } else {
            &member.reference
        };
        Some(json!({
            "name": v.name,
            "variable": v.variable(&i.component.name),
            "image": image.to_string(),
        }))
    });
    serde_json::Value::Array(members.collect())
}
