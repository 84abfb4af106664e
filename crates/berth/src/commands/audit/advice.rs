//! What `berth audit` advises for a copy: how a file of its kind reads the image
//! from berth instead — or, for a copy in a comment or a docstring, that the
//! text should name the variable; for a chart values list entry, why no
//! `helmValues` path can reach it.

use std::path::Path;

use berth_core::{ManifestSource, Project};

/// Where in its file a copy sits, as far as the advice goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    /// Code or data the program reads.
    Code,
    /// A comment (`#`, `//`) or a Python docstring: text for people.
    Comment,
    /// A YAML list entry (`- image: …`, `- ghcr.io/…`).
    ListEntry,
}

/// A file's name and extension (`""` for what it lacks or what is not UTF-8:
/// such a file then reads as a kind of its own, which is what it is).
fn name_and_extension(path: &Path) -> (&str, &str) {
    fn text(part: Option<&std::ffi::OsStr>) -> &str {
        part.and_then(|p| p.to_str()).unwrap_or_default()
    }
    (text(path.file_name()), text(path.extension()))
}

/// Where the copy at byte `offset` of `line` sits; `in_docstring` says whether a
/// Python docstring was open when the line began (kept by the caller).
pub(super) fn place(path: &Path, line: &str, offset: usize, in_docstring: bool) -> Place {
    let (name, ext) = name_and_extension(path);
    let before = &line[..offset.min(line.len())];
    if ext == "py" && (in_docstring || before.contains("\"\"\"") || before.contains("\'\'\'")) {
        return Place::Comment;
    }
    let hash = matches!(
        ext,
        "sh" | "bash" | "zsh" | "py" | "yaml" | "yml" | "mk" | "toml" | "rb" | "pl"
    ) || matches!(
        name,
        "Makefile" | "GNUmakefile" | "makefile" | "Dockerfile" | "Containerfile"
    );
    let slashes = matches!(
        ext,
        "go" | "rs" | "js" | "ts" | "java" | "c" | "cc" | "cpp" | "h" | "kt" | "swift"
    );
    let marker = |m: &str| {
        before.match_indices(m).any(|(at, _)| {
            before[..at]
                .chars()
                .next_back()
                .is_none_or(char::is_whitespace)
        })
    };
    if (hash && marker("#")) || (slashes && marker("//")) {
        return Place::Comment;
    }
    if matches!(ext, "yaml" | "yml") && line.trim_start().starts_with("- ") {
        return Place::ListEntry;
    }
    Place::Code
}

/// Whether a Python docstring is open after `line`, given whether one was
/// before it: each `"""` or `'''` opens or closes one.
pub(super) fn docstring_after(line: &str, open: bool) -> bool {
    let quotes = line.matches("\"\"\"").count() + line.matches("\'\'\'").count();
    open ^ (quotes % 2 == 1)
}

/// How the copy in `path` takes `component`'s image from berth instead: a Helm
/// values file by `helmValues:` (berth sets the chart's value), any other file
/// by its kind ([`fix`]).
pub(super) fn remedy(
    project: &Project,
    path: &Path,
    component: &berth_core::Component,
    place: Place,
) -> String {
    if place == Place::Comment {
        return format!(
            "a comment: write the variable (`${}`, which `berth images` prints) or the component's name, so the text does not go stale",
            component.env
        );
    }
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let values_file = project
        .manifests
        .iter()
        .chain(project.profiles.iter().flat_map(|p| &p.manifests))
        .filter_map(|m| match &m.source {
            ManifestSource::Helm(chart) => Some(chart),
            _ => None,
        })
        .flat_map(|chart| &chart.values)
        .any(|v| canonical(&project.dir.join(&v.value)) == canonical(path));
    if !values_file {
        return fix(path, &component.env);
    }
    let name = &component.name;
    if place == Place::ListEntry {
        return format!("a list entry, which no `helmValues` path can name: berth rewrites the `image:` fields the chart renders from it, so the cluster gets berth's image either way; to have berth set the value too, move the image to a key of its own and name it under `images.{name}.helmValues`");
    }
    if component.helm_values.is_empty() {
        format!("name the chart values that hold it under `images.{name}.helmValues` (e.g. `{{repository: image.repository, tag: image.tag}}`), so berth sets them, and remove it here")
    } else {
        let paths: Vec<&str> = component
            .helm_values
            .iter()
            .map(|(_, p)| p.as_str())
            .collect();
        format!(
            "remove it: berth sets `{}` from `images.{name}.helmValues`",
            paths.join("`, `")
        )
    }
}

/// How a file of this kind reads the image from berth instead.
pub(super) fn fix(path: &Path, variable: &str) -> String {
    let (name, ext) = name_and_extension(path);
    // GitHub reads workflows and actions only; other files under `.github/` (a CI
    // job's kustomization, scripts) are read by what the job runs.
    let parts: Vec<&std::ffi::OsStr> = path.components().map(|c| c.as_os_str()).collect();
    let in_workflow = parts
        .windows(2)
        .any(|w| w[0] == ".github" && (w[1] == "workflows" || w[1] == "actions"))
        || name == ".gitlab-ci.yml";
    match (name, ext) {
        ("Makefile" | "GNUmakefile" | "makefile", _) | (_, "mk") => format!(
            "use `$({variable})` (include `berth images --output make`, or run make under `berth env --`)"
        ),
        ("Dockerfile" | "Containerfile", _) | (_, "dockerfile" | "containerfile") => format!(
            "declare `ARG {variable}` and use `${{{variable}}}`, built with `--build-arg {variable}=\"$({variable})\"` under `berth env --`"
        ),
        (_, "go") if name.ends_with("_test.go") => format!(
            "a test: if it pins this image on purpose, add `'**/*_test.go'` to berth.yaml's `audit.exclude`; otherwise read `os.Getenv(\"{variable}\")`, run under `berth env -- go test`"
        ),
        (_, "go") => format!("read `os.Getenv(\"{variable}\")`, run under `berth env --`"),
        (_, "py") => format!("read `os.environ[\"{variable}\"]`, run under `berth env --`"),
        (_, "rs") => format!("read `std::env::var(\"{variable}\")`, run under `berth env --`"),
        (_, "yaml" | "yml") if in_workflow => format!(
            "use `${{{{ env.{variable} }}}}` after a step running `berth images --output env >> \"$GITHUB_ENV\"`"
        ),
        (name, _) if crate::kustomize::is_file_name(name) => format!(
            "a kustomization berth.yaml does not render: list its directory under `manifests:` (`- kustomize: DIR`) so berth resolves the image there, or drop its `newTag`/`newName` for `{variable}`"
        ),
        (_, "yaml" | "yml") => format!(
            "a YAML file no `manifests:` entry renders: if a chart reads it as values, list it under the `helm:` entry's `values:` so berth sets it through `helmValues`; if a kustomization reads it, list that; if a program reads it, have it take `{variable}` from its environment"
        ),
        (_, "sh" | "bash" | "zsh") => format!("use `\"${variable}\"`, run under `berth env --`"),
        (_, "md" | "markdown" | "rst" | "adoc") => format!(
            "documentation: write the variable (`${variable}`, which `berth images` prints) or name the component, so the page does not go stale"
        ),
        _ => format!("read `{variable}` from the environment under `berth env --`"),
    }
}

/// Whether a file says it is generated: a comment in its first 40 lines with
/// `DO NOT EDIT` (Go's `// Code generated … DO NOT EDIT.`, KServe's install
/// scripts' `# DO NOT EDIT MANUALLY`) or `@generated`. A copy there is fixed in
/// what generates it, which audit searches.
pub(super) fn generated(text: &str) -> bool {
    text.lines().take(40).any(|line| {
        let line = line.trim_start();
        let comment = ["#", "//", "/*", "*", "--", "<!--", ";"]
            .iter()
            .any(|c| line.starts_with(c));
        let upper = line.to_ascii_uppercase();
        comment && (upper.contains("DO NOT EDIT") || line.contains("@generated"))
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn generated_files_say_so_in_a_comment_near_the_top() {
        let cases = [
            (
                "// Code generated by controller-gen. DO NOT EDIT.\npackage v1\n",
                true,
            ),
            (
                "#!/bin/bash\n# AUTO-GENERATED from: x.definition\n# DO NOT EDIT MANUALLY\n",
                true,
            ),
            ("/*\n * @generated by protoc\n */\n", true),
            ("# Makefile\nIMG ?= x\n", false),
            // Prose that says it, not a comment, and a header past line 40.
            ("Do not edit the image below.\n", false),
            (&format!("{}# DO NOT EDIT\n", "x\n".repeat(40)), false),
        ];
        for (text, want) in cases {
            assert_eq!(super::generated(text), want, "{text:?}");
        }
    }
}
