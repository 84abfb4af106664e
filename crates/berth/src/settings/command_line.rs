//! The command `berth env` runs, read as its program reads it: make's (and
//! env's) `NAME=VALUE` words, and make's goals.

use std::ffi::OsString;

use berth_core::Project;

/// The `NAME=VALUE` words of the command `berth env` runs that set one of the
/// project's variables (make's `make test EPP_TAG=x`, `env EPP_TAG=x cmd`), and how
/// messages name them: `command line of `make``. make gives its command-line
/// variables precedence over the environment, so the resolution must see them.
///
/// Only words the program really takes as variables count: make's (and
/// gmake's) `NAME=VALUE` arguments, and env's leading assignments (then the
/// command env runs, looked at the same way). `docker run X=y`, `helm --set
/// X=y` or `sh -c 'X=y'` set no variable of the program's environment.
pub fn command_line_variables(
    project: &Project,
    command: &[OsString],
) -> (Vec<(String, String)>, String) {
    let variables = project.variables();
    let words = assignments(command)
        .into_iter()
        .filter(|(name, _)| variables.contains(&name.as_str()))
        .collect();
    let program = command
        .first()
        .map(|p| {
            std::path::Path::new(p)
                .file_name()
                .unwrap_or(p)
                .to_string_lossy()
                .into_owned()
        })
        .unwrap_or_default();
    (words, format!("command line of `{program}`"))
}

/// The `NAME=VALUE` words of a `make` (or `gmake`) command line, every one;
/// none for another program.
pub fn make_words(command: &[OsString]) -> Vec<(String, String)> {
    if is_make(command) {
        assignments(command)
    } else {
        Vec::new()
    }
}

/// The goals of a make command line (none: make's default goal); `None` when
/// make reads other files or another directory (`-f`, `-C`), whose targets
/// berth does not know. Options and `NAME=VALUE` words are not goals.
pub fn make_goals(command: &[OsString]) -> Option<Vec<String>> {
    let mut goals = Vec::new();
    let mut words = command
        .iter()
        .skip(1)
        .map(|w| w.to_string_lossy())
        .peekable();
    while let Some(word) = words.next() {
        let elsewhere = ["-f", "-C", "--file", "--makefile", "--directory"];
        if elsewhere
            .iter()
            .any(|o| word == *o || word.starts_with(&format!("{o}=")))
        {
            return None;
        }
        if word.starts_with("-f") || word.starts_with("-C") {
            return None; // `-fother.mk`, `-Cdir`
        }
        if matches!(
            word.as_ref(),
            "-I" | "-o" | "-W" | "--include-dir" | "--old-file" | "--what-if"
        ) {
            words.next(); // the option's argument
        } else if word == "-j" || word == "-l" {
            // An optional count: a number after it is not a goal.
            words.next_if(|n| n.parse::<f64>().is_ok());
        } else if !word.starts_with('-') && !word.contains('=') {
            goals.push(word.into_owned());
        }
    }
    Some(goals)
}

/// Whether `command` runs GNU make (`make`, `gmake`, by any path).
pub fn is_make(command: &[OsString]) -> bool {
    command.first().is_some_and(|p| {
        let name = std::path::Path::new(p).file_name().unwrap_or(p);
        name == "make" || name == "gmake"
    })
}

/// The `NAME=VALUE` words `command` gives its program as variables.
pub(super) fn assignments(command: &[OsString]) -> Vec<(String, String)> {
    let Some(program) = command.first() else {
        return Vec::new();
    };
    let program = std::path::Path::new(program)
        .file_name()
        .unwrap_or(program)
        .to_string_lossy()
        .into_owned();
    let assignment = |word: &OsString| -> Option<(String, String)> {
        let (name, value) = word.to_str()?.split_once('=')?;
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        valid.then(|| (name.to_string(), value.to_string()))
    };
    match program.as_str() {
        "make" | "gmake" => command[1..].iter().filter_map(assignment).collect(),
        "env" => {
            let mut out = Vec::new();
            let mut rest = command[1..].iter().enumerate();
            while let Some((i, word)) = rest.next() {
                let text = word.to_string_lossy();
                if matches!(
                    text.as_ref(),
                    "-u" | "--unset" | "-C" | "--chdir" | "-S" | "--split-string"
                ) {
                    rest.next(); // the option's argument
                } else if text.starts_with('-') {
                    // -i, --ignore-environment, --unset=NAME, -0 …
                } else if let Some(pair) = assignment(word) {
                    out.push(pair);
                } else {
                    // The command env runs, with its own words.
                    out.extend(assignments(&command[i + 1..]));
                    break;
                }
            }
            out
        }
        _ => Vec::new(),
    }
}
