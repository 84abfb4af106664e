//! Writing results: stdout handling and structured formats shared by commands.

use std::io::Write;

use anyhow::{anyhow, Result};

/// `--color`, set once by `main`.
static COLOR: std::sync::OnceLock<crate::cli::ColorChoice> = std::sync::OnceLock::new();

/// Records `--color` for this process.
pub fn set_color(choice: crate::cli::ColorChoice) {
    let _ = COLOR.set(choice);
}

/// Whether stdout gets colour (`--color`, `NO_COLOR`, a terminal).
pub fn colour() -> bool {
    COLOR
        .get()
        .copied()
        .unwrap_or(crate::cli::ColorChoice::Auto)
        .stdout()
}

/// Writes `text` to stdout in one go (a broken pipe is handled in `main`).
pub fn print(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| match e.kind() {
            // `main` ends quietly when the reader went away (`| head`).
            std::io::ErrorKind::BrokenPipe => anyhow::Error::from(e),
            _ => anyhow!("cannot write the output to stdout: {e}"),
        })
}

/// Where messages go when stderr is not where the user looks: Helm 4 runs a
/// post-renderer plugin with its stderr captured and never shown (helm v4.3's
/// `runPostrenderer` keeps it in a buffer; `--debug` does not print it), so a
/// conflict's error or a warning would vanish behind `plugin "berth" exited
/// with error`. Under a Helm plugin (`HELM_PLUGIN_NAME` set), messages go to
/// Helm's own stderr instead (`/proc/<helm>/fd/2`, Linux), else to the
/// terminal (`/dev/tty`), else to stderr as always.
static MESSAGES: std::sync::OnceLock<Option<std::sync::Mutex<std::fs::File>>> =
    std::sync::OnceLock::new();

fn helm_stderr() -> Option<std::fs::File> {
    berth_io::env::var_os("HELM_PLUGIN_NAME")?;
    let append = |path: &str| std::fs::OpenOptions::new().append(true).open(path).ok();
    let helm = format!("/proc/{}/fd/2", std::os::unix::process::parent_id());
    append(&helm).or_else(|| append("/dev/tty"))
}

/// Writes one message line where the user sees it (see [`MESSAGES`]); a
/// message that cannot be written is dropped, and the exit status still says
/// what happened.
pub fn message(text: &str) {
    match MESSAGES.get_or_init(|| helm_stderr().map(std::sync::Mutex::new)) {
        Some(file) => {
            let _ = writeln!(berth_io::locked(file), "{text}");
        }
        None => {
            let _ = writeln!(std::io::stderr().lock(), "{text}");
        }
    }
}

/// The longest line a message keeps; the rest is counted, not shown.
const MAX_MESSAGE_LINE: usize = 2000;

/// A message as stderr shows it: control characters other than newline and tab
/// escaped (`\u{1b}`: an ESC sequence from a file or a peer must not move the
/// cursor, retitle the window or ring the bell), each line cut at
/// [`MAX_MESSAGE_LINE`] characters (a 100 KB value is not repeated whole).
pub fn for_terminal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let count = line.chars().count();
        for c in line.chars().take(MAX_MESSAGE_LINE) {
            if c.is_control() && c != '\t' {
                out.extend(c.escape_default());
            } else {
                out.push(c);
            }
        }
        if count > MAX_MESSAGE_LINE {
            out.push_str(&format!("… ({} more characters)", count - MAX_MESSAGE_LINE));
        }
    }
    out
}

/// Pads cells to aligned columns separated by two spaces.
pub fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if c + 1 < row.len() {
                line.extend(std::iter::repeat_n(
                    ' ',
                    widths[c] - cell.chars().count() + 2,
                ));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// `sync epp-dev (change): 3 written, 1 deleted, 12.4 KiB, 1 step -> 2 containers in 84 ms`.
///
/// Containers can need different updates (a restarted one gets everything again), so
/// the counts are those of the container with the largest update, all from that one
/// container; a failure in any container is counted at the end.
pub fn sync_status_line(report: &berth_sync::Report, dry_run: bool) -> String {
    let largest = report.outcomes.iter().max_by_key(|o| {
        (
            o.update.writes.len() + o.update.deletes.len(),
            o.update.bytes(),
            o.steps.len(),
        )
    });
    let written = largest.map_or(0, |o| o.update.writes.len());
    let deleted = largest.map_or(0, |o| o.update.deletes.len());
    let size = largest.map_or(0, |o| o.update.bytes());
    let steps = largest.map_or(0, |o| o.steps.len());
    let failed = report.outcomes.iter().filter(|o| o.result.is_err()).count();
    let mut line = format!(
        "{}sync {} ({}): {written} written, {deleted} deleted, {}, {steps} step{} -> {} container{} in {} ms",
        if dry_run { "dry run: " } else { "" },
        report.rule,
        report.reason,
        bytes(size),
        if steps == 1 { "" } else { "s" },
        report.outcomes.len(),
        if report.outcomes.len() == 1 { "" } else { "s" },
        report.elapsed.as_millis()
    );
    if failed > 0 {
        line.push_str(&format!(", {failed} failed"));
    }
    for outcome in &report.outcomes {
        if let Some(broken) = &outcome.broke {
            line.push_str(&format!("; {}: {broken}", outcome.container.label));
        }
    }
    line
}

pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    #[test]
    fn messages_cannot_drive_the_terminal_or_flood_it() {
        assert_eq!(
            super::for_terminal("a\u{1b}]0;pwned\u{7}b\n\tc\r"),
            "a\\u{1b}]0;pwned\\u{7}b\n\tc\\r"
        );
        let long = format!("x{}", "y".repeat(100_000));
        let shown = super::for_terminal(&long);
        assert!(
            shown.ends_with("… (98001 more characters)"),
            "{}",
            &shown[shown.len() - 40..]
        );
    }
}
