//! What travels over the one exec per update, and how its outcome is read.
//!
//! The container runs a small POSIX `sh` script that reads one stream on
//! stdin: a header line, delete lines (`D<path>`, flushed by `F` in chunks so
//! no argument list grows without bound), then either `T` and a tar archive or
//! `E`; afterwards it runs the update's triggered `run:` steps. The stream is
//! self-delimiting (`T<length>`, cut with `head -c` so tar sees its end), so it
//! works on exec transports that cannot close stdin.

use std::io::{self, Read, Write};

use crate::error::SyncError;
use crate::plan::{Remote, Update};
use crate::tree::Kind;

const MAGIC: &str = "berth-sync-1";
/// Deletes per `rm` invocation, and bytes of paths per chunk: far below ARG_MAX.
const DELETE_CHUNK: usize = 256;
const DELETE_CHUNK_BYTES: usize = 64 * 1024;
/// GNU tar reads whole 10 KiB records; the archive is padded to them.
const RECORD: u64 = 10240;

/// Exit statuses the scripts use for their own failures.
const EXIT_STREAM: i32 = 90;
const EXIT_TAR: i32 = 92;
const EXIT_RM: i32 = 93;
const EXIT_NO_TAR: i32 = 94;
const EXIT_STEP: i32 = 95;

/// Quotes a word for POSIX sh.
pub fn shell_quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:@%+,".contains(&b))
    {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

const PRELUDE: &str = "set -u\n\
    say() { printf 'berth-sync: %s\\n' \"$*\" >&2; }\n\
    uid() { id -u 2>/dev/null || echo unknown; }\n";

/// Checks that tar exists before anything is changed.
fn tar_check() -> String {
    format!("command -v tar >/dev/null 2>&1 || {{ say 'missing tar'; exit {EXIT_NO_TAR}; }}\n")
}

/// Reads delete lines, then the archive (`T<length>`) or `E`, from stdin.
fn apply_body() -> String {
    format!(
        "set --\n\
         while IFS= read -r line; do\n\
         \x20 case \"$line\" in\n\
         \x20   D*) set -- \"$@\" \"${{line#D}}\" ;;\n\
         \x20   F) if [ $# -gt 0 ]; then rm -rf -- \"$@\" || {{ say \"rm-failed uid=$(uid)\"; exit {EXIT_RM}; }}; fi; set -- ;;\n\
         \x20   T*) n=${{line#T}}\n\
         \x20     if command -v head >/dev/null 2>&1; then head -c \"$n\" | tar -xf - -C /; else tar -xf - -C /; fi \\\n\
         \x20       || {{ say \"tar-failed uid=$(uid)\"; exit {EXIT_TAR}; }}\n\
         \x20     break ;;\n\
         \x20   E) break ;;\n\
         \x20 esac\n\
         done\n"
    )
}

fn command_line(argv: &[String]) -> String {
    argv.iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The script run (as `sh -c SCRIPT`) for one update with these `run:` steps.
pub fn update_script(needs_tar: bool, steps: &[&[String]]) -> String {
    let mut s = String::from(PRELUDE);
    s.push_str(&format!(
        "IFS= read -r magic || {{ say 'stream-missing'; exit {EXIT_STREAM}; }}\n\
         [ \"$magic\" = {MAGIC} ] || {{ say 'stream-corrupt'; exit {EXIT_STREAM}; }}\n"
    ));
    if needs_tar {
        s.push_str(&tar_check());
    }
    s.push_str(&apply_body());
    for (index, argv) in steps.iter().enumerate() {
        s.push_str(&format!(
            "{} </dev/null || {{ say \"step-failed {index} $?\"; exit {EXIT_STEP}; }}\n",
            command_line(argv)
        ));
    }
    s
}

/// Marks the end of one update's output in a [`session_script`] shell.
pub const DONE: &str = "@@berth-sync-done ";

/// A shell that applies update after update from one stdin (a warm exec per
/// container while watching): each frame is the magic line, a header
/// (`<needs tar 0|1> <step index>...`, indices into `steps`) and the same
/// stream as [`update_script`] reads; after each, it prints [`DONE`] and the
/// status. stderr is merged into stdout so one stream carries everything in order.
pub fn session_script(steps: &[&[String]]) -> String {
    let mut s = String::from("exec 2>&1\n");
    s.push_str(PRELUDE);
    s.push_str("run_step() {\n  case \"$1\" in\n");
    for (index, argv) in steps.iter().enumerate() {
        s.push_str(&format!("    {index}) {} ;;\n", command_line(argv)));
    }
    s.push_str("    *) return 127 ;;\n  esac\n}\n");
    s.push_str(&format!(
        "while IFS= read -r magic; do\n\
         \x20 [ -z \"$magic\" ] && continue\n\
         \x20 [ \"$magic\" = {MAGIC} ] || {{ printf '\\n{DONE}{EXIT_STREAM}\\n'; exit {EXIT_STREAM}; }}\n\
         \x20 IFS= read -r header\n\
         \x20 (\n\
         \x20   set -- $header; needs_tar=$1; shift; steps=\"$*\"\n\
         \x20   if [ \"$needs_tar\" = 1 ]; then {}\x20   fi\n\
         {}\
         \x20   for i in $steps; do run_step \"$i\" </dev/null || {{ say \"step-failed $i $?\"; exit {EXIT_STEP}; }}; done\n\
         \x20 )\n\
         \x20 printf '\\n{DONE}%s\\n' \"$?\"\n\
         done\n",
        tar_check(),
        apply_body()
    ));
    s
}

/// How much of what a frame's steps print is kept: the tail, which errors quote.
const KEPT_OUTPUT: usize = 256 * 1024;
/// A line longer than this cannot be the [`DONE`] line and goes to the output.
const LONGEST_DONE_LINE: usize = 4096;

/// Reads a [`session_script`] shell's output up to the [`DONE`] line that ends
/// a frame, as it arrives in chunks of any size, in bounded memory (a step that
/// prints without end keeps only the last `KEPT_OUTPUT` bytes, 256 KiB). Empty lines
/// before a frame (keepalives echo nothing, but a step may print them) are output.
#[derive(Debug, Default)]
pub struct FrameOutput {
    line: Vec<u8>,
    output: Vec<u8>,
}

impl FrameOutput {
    /// Takes the next bytes; the frame's status and output once the shell has
    /// reported it (bytes after the DONE line, which the shell never prints, are dropped).
    pub fn feed(&mut self, mut bytes: &[u8]) -> Option<ExecOutput> {
        while !bytes.is_empty() {
            let (part, rest, ended) = match bytes.iter().position(|&b| b == b'\n') {
                Some(at) => (&bytes[..=at], &bytes[at + 1..], true),
                None => (bytes, &[][..], false),
            };
            bytes = rest;
            self.line.extend_from_slice(part);
            if ended {
                if let Some(status) = self.line.strip_prefix(DONE.as_bytes()) {
                    let status = String::from_utf8_lossy(status).trim().parse().unwrap_or(-1);
                    // The shell prints a newline before the marker; it is not output.
                    if self.output.last() == Some(&b'\n') {
                        self.output.pop();
                    }
                    let output = std::mem::take(&mut self.output);
                    self.line.clear();
                    return Some(ExecOutput {
                        status,
                        stdout: output.clone(),
                        stderr: output,
                    });
                }
            }
            if ended || self.line.len() > LONGEST_DONE_LINE {
                self.output.append(&mut self.line);
                if self.output.len() > 2 * KEPT_OUTPUT {
                    self.output.drain(..self.output.len() - KEPT_OUTPUT);
                }
            }
        }
        None
    }
}

/// Counts bytes written, for padding the archive to whole records.
struct Counting<'w> {
    inner: &'w mut dyn Write,
    written: u64,
}

impl Write for Counting<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Writes the update stream: header, deletes, and the archive of the writes.
/// File contents are streamed from disk; a file that shrank is zero-padded and
/// one that grew is cut at its scanned size (the next event resends it).
pub fn write_stream(update: &Update, out: &mut dyn Write) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(256 * 1024, out);
    writeln!(out, "{MAGIC}")?;
    write_body(update, &mut out)
}

/// One frame for a [`session_script`] shell: `steps` are indices into its steps.
pub fn write_frame(update: &Update, steps: &[usize], out: &mut dyn Write) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(256 * 1024, out);
    writeln!(out, "{MAGIC}")?;
    let indices: Vec<String> = steps.iter().map(ToString::to_string).collect();
    let needs_tar = u8::from(!update.writes.is_empty());
    writeln!(out, "{needs_tar} {}", indices.join(" "))?;
    write_body(update, &mut out)
}

fn write_body(update: &Update, out: &mut io::BufWriter<&mut dyn Write>) -> io::Result<()> {
    let (mut count, mut bytes) = (0, 0);
    for path in &update.deletes {
        writeln!(out, "D{path}")?;
        count += 1;
        bytes += path.len();
        if count >= DELETE_CHUNK || bytes >= DELETE_CHUNK_BYTES {
            writeln!(out, "F")?;
            (count, bytes) = (0, 0);
        }
    }
    writeln!(out, "F")?;
    if update.writes.is_empty() {
        writeln!(out, "E")?;
        return out.flush();
    }
    // The archive's exact length goes first, so the container can cut it off
    // with `head -c` and tar ends without waiting for stdin to close (Kubernetes
    // exec cannot close stdin on every server). A first pass without contents measures it.
    let length = write_archive(update, &mut io::sink(), false)?;
    writeln!(out, "T{length}")?;
    write_archive(update, out, true)?;
    out.flush()
}

/// Writes the tar archive of `update.writes`, padded to whole records; returns its
/// length. Without `contents`, file data are zeros (same length, no reads).
fn write_archive(update: &Update, out: &mut dyn Write, contents: bool) -> io::Result<u64> {
    let mut counting = Counting {
        inner: out,
        written: 0,
    };
    {
        let mut tar = tar::Builder::new(&mut counting);
        tar.mode(tar::HeaderMode::Complete);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        for (path, entry) in &update.writes {
            let name = path.trim_start_matches('/');
            let mut header = tar::Header::new_gnu();
            // Owner 0 with no names: root extracting keeps root (the container
            // user), anyone else extracts as themselves — never a host uid.
            header.set_uid(0);
            header.set_gid(0);
            match &entry.kind {
                Kind::Dir { mode } => {
                    header.set_entry_type(tar::EntryType::Directory);
                    header.set_mode(*mode);
                    header.set_mtime(now);
                    header.set_size(0);
                    tar.append_data(&mut header, name, io::empty())?;
                }
                Kind::Symlink(target) => {
                    header.set_entry_type(tar::EntryType::Symlink);
                    header.set_mode(0o777);
                    header.set_mtime(now);
                    header.set_size(0);
                    tar.append_link(&mut header, name, target)?;
                }
                Kind::File {
                    size,
                    mode,
                    mtime_ns,
                } => {
                    let file: Box<dyn Read> = match std::fs::File::open(&entry.local) {
                        Ok(file) if contents => Box::new(file),
                        Ok(_) => Box::new(io::empty()),
                        // Gone since the scan: sent as zeros (the archive's length is
                        // already announced); its delete comes with the next event.
                        Err(e) if e.kind() == io::ErrorKind::NotFound => Box::new(io::empty()),
                        Err(e) => return Err(e),
                    };
                    header.set_entry_type(tar::EntryType::Regular);
                    header.set_mode(*mode);
                    header.set_mtime(u64::try_from(mtime_ns / 1_000_000_000).unwrap_or(0));
                    header.set_size(*size);
                    let exact = file.take(*size).chain(io::repeat(0)).take(*size);
                    tar.append_data(&mut header, name, exact)?;
                }
            }
        }
        tar.finish()?;
    }
    let pad = (RECORD - counting.written % RECORD) % RECORD;
    io::copy(&mut io::repeat(0).take(pad), &mut counting)?;
    Ok(counting.written)
}

/// The script that lists what the container holds below the given roots
/// (passed as `sh -c SCRIPT sh ROOT...`). It always succeeds: a file that goes
/// between `find` naming it and `sha256sum` reading it (the application, or
/// another writer, deleting it meanwhile) makes `find` exit 1, yet the listing
/// is still right without it -- a file that is not listed is sent.
pub const MANIFEST_SCRIPT: &str = r#"command -v find >/dev/null 2>&1 || { echo '#NOFIND'; exit 0; }
hash=sha256sum; command -v sha256sum >/dev/null 2>&1 || hash=
for r in "$@"; do
  [ -e "$r" ] || [ -L "$r" ] || continue
  echo '#D'; find "$r" -type d 2>/dev/null
  echo '#X'; find "$r" -type f -perm -100 2>/dev/null
  echo '#L'; find "$r" -type l 2>/dev/null | while IFS= read -r l; do printf '%s\t%s\n' "$l" "$(readlink "$l")"; done
  echo '#F'
  if [ -n "$hash" ]; then find "$r" -type f -exec sha256sum {} + 2>/dev/null
  else find "$r" -type f 2>/dev/null | while IFS= read -r f; do printf -- '-  %s\n' "$f"; done; fi
done
exit 0
"#;

/// Parses the manifest script's output. `None` when the container has no `find`
/// (every file is then sent).
pub fn parse_manifest(text: &str) -> Option<Remote> {
    let mut remote = Remote::default();
    let mut section = "";
    for line in text.lines() {
        if line == "#NOFIND" {
            return None;
        }
        if let Some(name) = line.strip_prefix('#') {
            section = if matches!(name, "D" | "X" | "L" | "F") {
                name
            } else {
                section
            };
            continue;
        }
        match section {
            "D" => {
                remote.dirs.insert(line.to_string());
            }
            "X" => {
                remote.executable.insert(line.to_string());
            }
            "L" => {
                if let Some((path, target)) = line.split_once('\t') {
                    remote.links.insert(path.to_string(), target.to_string());
                }
            }
            "F" => {
                // `HASH  PATH`; a leading `\` marks an escaped name: never equal, resend.
                if let Some((hash, path)) = line.split_once("  ") {
                    let hash = if hash.len() == 64 { hash } else { "" };
                    remote.files.insert(path.to_string(), hash.to_string());
                }
            }
            _ => {}
        }
    }
    Some(remote)
}

/// What an exec returned.
#[derive(Debug, Clone, Default)]
pub struct ExecOutput {
    /// The exit status (`-1` when killed by a signal).
    pub status: i32,
    /// Standard output.
    pub stdout: Vec<u8>,
    /// Standard error.
    pub stderr: Vec<u8>,
}

/// Turns a failed update exec into the error that says what to do.
pub fn interpret(
    container: &str,
    out: &ExecOutput,
    steps: &[&[String]],
    fallback: &str,
) -> Result<(), SyncError> {
    if out.status == 0 {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let marker = stderr
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("berth-sync: "))
        .unwrap_or_default();
    let uid = marker
        .split_once("uid=")
        .map_or("unknown", |(_, u)| u.trim());
    let problem = stderr
        .lines()
        .find(|l| l.contains("Read-only file system") || l.contains("Permission denied"));
    match out.status {
        EXIT_NO_TAR => Err(SyncError::MissingProgram {
            container: container.into(),
            program: "tar",
            purpose: "unpack the files it sends",
            fallback: fallback.into(),
        }),
        EXIT_STEP => {
            let mut words = marker.split_whitespace().skip(1);
            let index: usize = words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
            let status = words.next().and_then(|w| w.parse().ok()).unwrap_or(-1);
            let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
            output.push_str(
                &stderr
                    .lines()
                    .filter(|l| !l.starts_with("berth-sync: "))
                    .collect::<Vec<_>>()
                    .join("\n"),
            );
            Err(SyncError::StepFailed {
                container: container.into(),
                cmd: steps.get(index).map(|s| s.join(" ")).unwrap_or_default(),
                status,
                output: tail(output.trim(), 20),
            })
        }
        EXIT_TAR | EXIT_RM if problem.is_some() => {
            let line = problem.unwrap_or_default();
            let path = path_in(line);
            if line.contains("Read-only file system") {
                Err(SyncError::ReadOnly {
                    container: container.into(),
                    path,
                })
            } else {
                Err(SyncError::PermissionDenied {
                    container: container.into(),
                    path,
                    uid: uid.to_string(),
                })
            }
        }
        126 | 127 if !stderr.contains("berth-sync: ") && mentions_missing_shell(&stderr) => {
            Err(SyncError::MissingProgram {
                container: container.into(),
                program: "sh",
                purpose: "apply an update in one exec",
                fallback: fallback.into(),
            })
        }
        status => Err(SyncError::Exec {
            container: container.into(),
            status,
            stderr: tail(stderr.trim(), 20),
        }),
    }
}

fn mentions_missing_shell(stderr: &str) -> bool {
    let lower = stderr.to_ascii_lowercase();
    (lower.contains("\"sh\"") || lower.contains("`sh`") || lower.contains("sh:"))
        && (lower.contains("not found") || lower.contains("no such file"))
}

/// The path in a tar/rm error line: quoted (`'app/x'`) as busybox prints it, or
/// `tar: app/x: Cannot open: …` as GNU tar does; made absolute (tar runs in `/`).
fn path_in(line: &str) -> String {
    // The last quoted span: busybox's "can't" has a quote of its own.
    let quoted = line
        .rfind('\'')
        .and_then(|end| line[..end].rfind('\'').map(|start| &line[start + 1..end]));
    let raw = quoted.unwrap_or_else(|| line.split(": ").nth(1).unwrap_or(line).trim());
    if raw.starts_with('/') {
        raw.to_string()
    } else {
        format!("/{raw}")
    }
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("kill"), "kill");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn a_frame_ends_at_its_done_line_however_the_output_is_cut() {
        let reply = format!("tar: x: Cannot open\nstep said hi\n\n{DONE}92\n");
        for size in [1, 2, 7, reply.len()] {
            let mut frame = FrameOutput::default();
            let mut got = None;
            for chunk in reply.as_bytes().chunks(size) {
                assert!(got.is_none(), "nothing after the DONE line");
                got = frame.feed(chunk);
            }
            let out = got.expect("the DONE line ends the frame");
            assert_eq!(out.status, 92);
            assert_eq!(out.stderr, b"tar: x: Cannot open\nstep said hi\n");
        }
    }

    #[test]
    fn a_frame_keeps_the_tail_of_endless_output() {
        let mut frame = FrameOutput::default();
        let line = vec![b'x'; 100_000];
        for _ in 0..20 {
            assert!(frame.feed(&line).is_none(), "a long line is no DONE line");
        }
        assert!(frame.output.len() <= 2 * KEPT_OUTPUT + LONGEST_DONE_LINE);
        let out = frame.feed(format!("\nlast\n{DONE}0\n").as_bytes()).unwrap();
        assert_eq!(out.status, 0);
        assert!(out.stdout.len() <= 2 * KEPT_OUTPUT + LONGEST_DONE_LINE);
        assert!(out.stdout.ends_with(b"xx\nlast"));
    }

    #[test]
    fn manifest_parsing() {
        let text = "#D\n/app\n/app/d\n#X\n/app/run\n#L\n/app/l\t../x\n#F\n\
                    e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  /app/run\n\
                    \\e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  /app/a\\nb\n";
        let remote = parse_manifest(text).unwrap();
        assert!(remote.dirs.contains("/app/d"));
        assert!(remote.executable.contains("/app/run"));
        assert_eq!(remote.links["/app/l"], "../x");
        assert_eq!(remote.files["/app/run"].len(), 64);
        assert_eq!(remote.files["/app/a\\nb"], "");
        assert!(parse_manifest("#NOFIND\n").is_none());
    }

    #[test]
    fn errors_are_read_from_the_container_output() {
        let out = |status, stderr: &str| ExecOutput {
            status,
            stdout: Vec::new(),
            stderr: stderr.as_bytes().to_vec(),
        };
        let msg = |o: &ExecOutput| interpret("c", o, &[], "FALLBACK").unwrap_err().to_string();
        assert!(msg(&out(94, "berth-sync: missing tar\n")).contains("has no `tar`"));
        let denied = msg(&out(
            92,
            "tar: can't open 'app/x': Permission denied\nberth-sync: tar-failed uid=1000\n",
        ));
        assert_eq!(denied, "c: permission denied writing `/app/x` as uid 1000; make the directory writable by that user (chown it in the image) or sync somewhere it owns");
        let gnu = msg(&out(
            92,
            "tar: app/y: Cannot open: Read-only file system\nberth-sync: tar-failed uid=0\n",
        ));
        assert!(
            gnu.starts_with("c: `/app/y` is on a read-only filesystem"),
            "{gnu}"
        );
        let no_sh = msg(&out(
            127,
            "Error: runc: exec failed: exec: \"sh\": executable file not found in $PATH\n",
        ));
        assert!(
            no_sh.contains("has no `sh`") && no_sh.ends_with("FALLBACK"),
            "{no_sh}"
        );
        let steps: Vec<String> = vec!["kill".into(), "-HUP".into(), "1".into()];
        let step = interpret(
            "c",
            &out(95, "boom\nberth-sync: step-failed 0 3\n"),
            &[&steps],
            "",
        )
        .unwrap_err();
        assert_eq!(
            step.to_string(),
            "c: run step `kill -HUP 1` failed with exit 3:\nboom"
        );
        assert!(interpret("c", &out(0, ""), &[], "").is_ok());
    }

    /// The scripts run by the host's `sh` with its `tar` and `head`, extracting
    /// under a temp directory (container paths are absolute; here they point there).
    #[test]
    fn session_shell_applies_frame_after_frame() {
        use crate::tree::{Entry, Kind};
        use std::io::{BufRead, BufReader};
        use std::process::{Command, Stdio};
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let local = root.join("local.txt");
        std::fs::write(&local, "hello").unwrap();
        let target = |name: &str| format!("{}/out/{name}", root.display());
        let file = Entry {
            kind: Kind::File {
                size: 5,
                mode: 0o755,
                mtime_ns: 0,
            },
            local: local.clone(),
            rel: "local.txt".into(),
        };
        let marker = target("step-ran");
        let steps: Vec<Vec<String>> = vec![
            vec!["touch".into(), marker.clone()],
            vec!["sh".into(), "-c".into(), "echo failing; exit 3".into()],
        ];
        let steps: Vec<&[String]> = steps.iter().map(Vec::as_slice).collect();
        let mut child = Command::new("sh")
            .args(["-c", &session_script(&steps)])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut frame = |update: &Update, steps: &[usize]| -> (i32, String) {
            write_frame(update, steps, &mut stdin).unwrap();
            let mut output = String::new();
            loop {
                let mut line = String::new();
                assert!(
                    stdout.read_line(&mut line).unwrap() > 0,
                    "shell ended: {output}"
                );
                if let Some(status) = line.strip_prefix(DONE) {
                    return (status.trim().parse().unwrap(), output);
                }
                output.push_str(&line);
            }
        };
        let write = Update {
            writes: vec![(target("a/b.txt"), file.clone())],
            ..Update::default()
        };
        assert_eq!(frame(&write, &[0]).0, 0);
        assert_eq!(std::fs::read_to_string(target("a/b.txt")).unwrap(), "hello");
        assert!(std::path::Path::new(&marker).exists());
        // Same shell, next frame: a delete and a failing step.
        let delete = Update {
            deletes: vec![target("a")],
            ..Update::default()
        };
        let (status, output) = frame(&delete, &[1]);
        assert_eq!(status, 95, "{output}");
        assert!(
            output.contains("failing") && output.contains("berth-sync: step-failed 1 3"),
            "{output}"
        );
        assert!(!std::path::Path::new(&target("a")).exists());
        drop(stdin);
        assert!(child.wait().unwrap().success());
    }
}
