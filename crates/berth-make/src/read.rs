//! Reading a Makefile's variable definitions as make reads them by default:
//! recipes skipped, one branch of each conditional.

use berth_core::Place;

use super::MakeVar;

/// The `NAME ?= value` lines of a Makefile (`?=`, `:=`, `::=`, `=`), with
/// `Makefile:N` as where. Recipe lines are skipped (a tab-indented line is a
/// recipe's after a rule line, a definition inside a top-level `ifeq` block
/// otherwise: opendatahub-operator's `\tCONFIG_DIR=config`). Of an
/// `ifeq … else … endif`, the first branch is read as make's default; the
/// `else` branch adds only names the first did not define. Of an `ifdef X` …
/// `else ifdef Y` … `else` chain, make's default is the first branch whose
/// variable the Makefile defines before it (model-registry's `ifdef IMG` /
/// `IMG := ${IMG}` runs only when the environment sets IMG), and a definition
/// of X in its `else` branches is conditional, as `?=` is.
pub fn make_vars(file: &str, text: &str) -> Vec<MakeVar> {
    let mut out = Vec::new();
    let mut in_recipe = false;
    // The open conditionals, innermost last.
    let mut branches: Vec<Branch> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with('#') || trimmed.is_empty() {
            continue;
        }
        let directive = trimmed.split_whitespace().next().unwrap_or("");
        match directive {
            "ifeq" | "ifneq" | "ifdef" | "ifndef" => {
                let rest = trimmed[directive.len()..].trim();
                // `ifdef IMG` / `IMG := ${IMG}` / `else …`: make's default is the
                // branch whose variable the Makefile itself defines before it.
                let taken = (directive == "ifdef").then(|| defined_before(&out, rest));
                branches.push(Branch {
                    in_else: false,
                    first: Vec::new(),
                    unset: unset_test(directive, rest),
                    taken,
                    decided: taken == Some(true),
                    tested: (directive == "ifdef").then(|| rest.to_string()),
                });
                continue;
            }
            "else" => {
                let rest = trimmed["else".len()..].trim();
                if let Some(open) = branches.last_mut() {
                    open.in_else = true;
                    if open.taken.is_some() {
                        let taken = match rest.strip_prefix("ifdef ") {
                            _ if open.decided => false,
                            Some(name) => defined_before(&out, name.trim()),
                            None => true,
                        };
                        open.taken = Some(taken);
                        open.decided |= taken;
                    }
                }
                continue;
            }
            "endif" => {
                branches.pop();
                continue;
            }
            _ => {}
        }
        if line.starts_with('\t') && in_recipe {
            continue;
        }
        let Some(mut var) = definition(file, n, trimmed) else {
            // A rule line starts a recipe; anything else at the margin ends one.
            if !line.starts_with('\t') {
                in_recipe = is_rule(trimmed);
            }
            continue;
        };
        if !line.starts_with('\t') {
            in_recipe = false;
        }
        if branches.iter().any(|b| b.taken == Some(false)) {
            continue; // not make's default branch
        }
        // `ifdef IMG` … `else` `IMG := …`: set only when the environment does not set it.
        let guarded = branches
            .iter()
            .any(|b| b.in_else && b.tested.as_deref() == Some(var.name.as_str()));
        var.conditional |= guarded;
        if let Some(open) = branches.last_mut().filter(|b| b.taken.is_none()) {
            if open.in_else && open.first.contains(&var.name) {
                continue;
            }
            if !open.in_else {
                open.first.push(var.name.clone());
                var.conditional |= open.unset.as_deref() == Some(var.name.as_str());
            }
        }
        out.push(var);
    }
    out
}

/// An open conditional of a Makefile, as [`make_vars`] reads it.
struct Branch {
    /// In its `else` branch.
    in_else: bool,
    /// The names its first branch defined.
    first: Vec<String>,
    /// The variable its first branch tests to be unset.
    unset: Option<String>,
    /// For an `ifdef` chain, whether the branch now read is make's default
    /// (`None`: another conditional, whose first branch is read as the default).
    taken: Option<bool>,
    /// Whether a branch of the chain was make's default already.
    decided: bool,
    /// The variable an `ifdef` tests: its `else` branches define it only when
    /// nothing else did, as `?=` does.
    tested: Option<String>,
}

/// Whether `name` has a non-empty definition among `vars` (make's `ifdef`).
fn defined_before(vars: &[MakeVar], name: &str) -> bool {
    vars.iter().any(|v| v.name == name && !v.value.is_empty())
}

/// The variable a conditional's first branch runs only when it is unset or
/// empty: `ifndef X`, `ifeq ($(X),)`, `ifeq (,$(X))`, `ifeq "$(X)" ""`,
/// `ifeq ($(origin X),undefined)`.
fn unset_test(directive: &str, rest: &str) -> Option<String> {
    let is_name =
        |n: &str| !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if directive == "ifndef" {
        return Some(rest.to_string()).filter(|n| is_name(n));
    }
    if directive != "ifeq" {
        return None;
    }
    let compact: String = rest.chars().filter(|c| !c.is_whitespace()).collect();
    let reference = |text: &str| -> Option<String> {
        let inner = (text.strip_prefix("$(").and_then(|t| t.strip_suffix(')')))
            .or_else(|| text.strip_prefix("${").and_then(|t| t.strip_suffix('}')))?;
        Some(inner.to_string()).filter(|n| is_name(n))
    };
    let (left, right) = match compact.strip_prefix('(').and_then(|c| c.strip_suffix(')')) {
        Some(inner) => inner.split_once(',')?,
        None => compact.split_once("\"\"").map(|(l, _)| (l, ""))?,
    };
    let left = left.trim_matches('"');
    let right = right.trim_matches('"');
    if let Some(origin) = left
        .strip_prefix("$(origin")
        .and_then(|l| l.strip_suffix(')'))
    {
        return Some(origin.to_string()).filter(|n| right == "undefined" && is_name(n));
    }
    match (left.is_empty(), right.is_empty()) {
        (false, true) => reference(left),
        (true, false) => reference(right),
        _ => None,
    }
}

/// `target: prerequisites` (not `NAME := value`).
fn is_rule(line: &str) -> bool {
    match line.find(':') {
        Some(colon) => !line[..colon].contains('=') && !line[colon + 1..].starts_with('='),
        None => false,
    }
}

/// The definition a line (leading whitespace removed) makes, if it is one.
fn definition(file: &str, n: usize, line: &str) -> Option<MakeVar> {
    let line = line.strip_prefix("export ").unwrap_or(line);
    let eq = line.find('=')?;
    let (left, value) = (&line[..eq], &line[eq + 1..]);
    let name = left.trim_end_matches([':', '?', '+', '!']).trim();
    let valid = !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !left
            .trim_end_matches([':', '?', '+', '!'])
            .trim_end()
            .contains(' ');
    if !valid || left.ends_with('+') {
        return None;
    }
    let value = value.split(" #").next().unwrap_or(value).trim().to_string();
    Some(MakeVar {
        name: name.to_string(),
        value,
        at: Place::file(file).line(u32::try_from(n + 1).unwrap_or(u32::MAX)),
        conditional: left.ends_with('?'),
        op: ["::", ":", "?", "!"]
            .into_iter()
            .find(|suffix| left.ends_with(suffix))
            .map_or("=", |suffix| match suffix {
                "::" => "::=",
                ":" => ":=",
                "?" => "?=",
                _ => "!=",
            }),
    })
}
