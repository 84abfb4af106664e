//! The cache of `kubectl kustomize` output: `$XDG_CACHE_HOME/berth/kustomize`
//! (else `~/.cache/berth/kustomize`), one file per build, named by a
//! [`Fingerprint`] of everything the build can read. `BERTH_NO_CACHE` turns it off.
//!
//! What a build reads: kubectl runs kustomize with its default load restrictor
//! (`LoadRestrictionsRootOnly`), so each kustomization reads files only at or
//! below its own directory, plus the kustomizations it names (`resources:`,
//! `bases:`, `components:`, `generators:`, `transformers:`, `validators:`),
//! which may be anywhere. The fingerprint hashes every file below every such
//! directory (symbolic links followed, `.git` skipped), their paths, and the
//! kubectl binary that builds. That is more than a build reads — an unrelated
//! file below an overlay makes a miss, never a stale hit. A build that names
//! something that is not a local file or directory (a remote base, a missing
//! path) is not cached, nor is a failed build, nor a tree over the bounds below.
//!
//! An entry holds the digest of the output on its first line and is checked on
//! every read: a damaged or edited entry is a miss. At most [`ENTRIES`] are
//! kept, the least recently used removed first; only files named as berth names
//! its entries are ever removed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sha2::{Digest as _, Sha256};

/// Entries kept; past this the least recently used go.
const ENTRIES: usize = 256;
/// A tree with more files than this is built every time (hashing it would not pay).
const MAX_FILES: usize = 20_000;
/// Nor one whose files hold more bytes than this.
const MAX_BYTES: u64 = 256 * 1024 * 1024;
/// Nor one naming more kustomizations than this.
const MAX_KUSTOMIZATIONS: usize = 1_000;
/// Bumped when what the key covers changes, so old entries are never read.
const FORMAT: &str = "berth kustomize cache 1";

/// Whether the cache is on (`BERTH_NO_CACHE` unset or empty).
pub fn enabled() -> bool {
    berth_io::env::var_os("BERTH_NO_CACHE").is_none_or(|v| v.is_empty())
}

/// What one build's output depends on, as a hex SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint(String);

impl Fingerprint {
    /// The fingerprint of `kubectl kustomize DIR`, or `None` when that build
    /// cannot be cached (see the module's doc).
    pub fn of(dir: &Path) -> Option<Self> {
        let kubectl = kubectl_identity()?;
        let dir = dir.canonicalize().ok()?;
        let mut inputs = Inputs::default();
        inputs.kustomization(&dir)?;
        let mut hasher = Sha256::new();
        for part in [FORMAT.as_bytes(), kubectl.as_bytes(), path_bytes(&dir)] {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part);
        }
        let mut bytes = 0u64;
        for file in &inputs.files {
            let content = crate::fs_source::read_bounded(file).ok()?;
            bytes += content.len() as u64;
            if bytes > MAX_BYTES {
                return None;
            }
            let name = path_bytes(file);
            hasher.update((name.len() as u64).to_le_bytes());
            hasher.update(name);
            hasher.update((content.len() as u64).to_le_bytes());
            hasher.update(&content);
        }
        Some(Self(hex(&hasher.finalize())))
    }
}

/// The files and kustomizations one build can read.
#[derive(Default)]
struct Inputs {
    kustomizations: BTreeSet<PathBuf>,
    walked: BTreeSet<PathBuf>,
    files: BTreeSet<PathBuf>,
}

impl Inputs {
    /// Adds kustomization `dir` (canonical): its whole tree and the
    /// kustomizations it names. `None`: not cacheable.
    fn kustomization(&mut self, dir: &Path) -> Option<()> {
        if !self.kustomizations.insert(dir.to_path_buf()) {
            return Some(());
        }
        if self.kustomizations.len() > MAX_KUSTOMIZATIONS {
            return None;
        }
        self.tree(dir)?;
        let (_, kustomization) = super::read_kustomization(dir)?;
        // Beyond what builds on: generators', transformers' and validators'
        // configurations may be kustomizations elsewhere too. A remote base
        // does not resolve here: not cacheable.
        for entry in kustomization.bases.iter().chain(&kustomization.plugins) {
            let real = dir.join(entry).canonicalize().ok()?;
            if real.is_dir() {
                self.kustomization(&real)?;
            } else {
                self.files.insert(real);
            }
        }
        Some(())
    }

    /// Adds every file below `dir`, following symbolic links (each directory
    /// once, by its real path), `.git` left out.
    fn tree(&mut self, dir: &Path) -> Option<()> {
        if !self.walked.insert(dir.to_path_buf()) {
            return Some(());
        }
        for entry in std::fs::read_dir(dir).ok()? {
            let path = entry.ok()?.path();
            if path.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            let real = path.canonicalize().ok()?;
            if real.is_dir() {
                self.tree(&real)?;
            } else {
                self.files.insert(real);
                if self.files.len() > MAX_FILES {
                    return None;
                }
            }
        }
        Some(())
    }
}

/// The kubectl that builds ([`super::kubectl`]; a bare name is looked up on
/// PATH as `Command` does), as its path, size and modification time: a new
/// kubectl is a new kustomize.
fn kubectl_identity() -> Option<String> {
    let program = super::kubectl();
    let found = if program.components().count() > 1 {
        program
    } else {
        std::env::split_paths(&berth_io::env::var_os("PATH")?)
            .map(|dir| dir.join(&program))
            .find(|p| p.is_file())?
    };
    let path = found.canonicalize().ok()?;
    let meta = std::fs::metadata(&path).ok()?;
    let modified = meta
        .modified()
        .ok()?
        .duration_since(SystemTime::UNIX_EPOCH)
        .ok()?;
    Some(format!(
        "{} {} {}",
        path.display(),
        meta.len(),
        modified.as_nanos()
    ))
}

fn path_bytes(path: &Path) -> &[u8] {
    use std::os::unix::ffi::OsStrExt as _;
    path.as_os_str().as_bytes()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The cache's directory, created when missing, readable by its owner only
/// (an overlay's output is the project's data); `None` when there is no home for it.
fn directory() -> Option<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
    let dir = crate::fs_source::user_cache()?.join("berth/kustomize");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .ok()?;
    if std::fs::metadata(&dir).ok()?.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).ok()?;
    }
    Some(dir)
}

fn entry_path(dir: &Path, fingerprint: &Fingerprint) -> PathBuf {
    dir.join(format!("{}.yaml", fingerprint.0))
}

/// The output kept for `fingerprint`, when its entry is whole.
pub fn load(fingerprint: &Fingerprint) -> Option<Vec<u8>> {
    let path = entry_path(&directory()?, fingerprint);
    let bytes = crate::fs_source::read_bounded(&path).ok()?;
    let (first, output) = split_entry(&bytes)?;
    if first != format!("sha256:{}", hex(&Sha256::digest(output))).as_bytes() {
        return None;
    }
    // Marks the entry used for the least-recently-used order; an entry whose
    // time cannot be set is only removed sooner.
    if let Ok(file) = std::fs::File::options().append(true).open(&path) {
        let _ = file.set_modified(SystemTime::now());
    }
    Some(output.to_vec())
}

fn split_entry(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let newline = bytes.iter().position(|b| *b == b'\n')?;
    Some((&bytes[..newline], &bytes[newline + 1..]))
}

/// Keeps `output` for `fingerprint`, through berth's one writer. A cache that
/// cannot be written costs the next run a build, nothing else: failures are dropped.
pub fn store(fingerprint: &Fingerprint, output: &[u8]) {
    if holds_secret(output) {
        return;
    }
    let Some(dir) = directory() else { return };
    let mut entry = format!("sha256:{}\n", hex(&Sha256::digest(output))).into_bytes();
    entry.extend_from_slice(output);
    let path = entry_path(&dir, fingerprint);
    if berth_io::write_atomic(&dir, &path, &entry, berth_io::WriteMode::Replace).is_ok() {
        prune(&dir);
    }
}

/// Whether the output holds a Secret with values (a `secretGenerator`'s, a
/// file's): those are never copied out of the project, so that build is not kept.
/// A Secret with no `data:` or `stringData:` (KServe's webhook certificate,
/// which cert-manager fills in the cluster) holds nothing to protect. kubectl
/// writes each object's top-level keys unindented, one document after `---`.
fn holds_secret(output: &[u8]) -> bool {
    let (mut secret, mut values) = (false, false);
    for line in output.split(|b| *b == b'\n').map(<[u8]>::trim_ascii_end) {
        if line == b"---" {
            if secret && values {
                return true;
            }
            (secret, values) = (false, false);
        } else if line == b"kind: Secret" {
            secret = true;
        } else if (line.starts_with(b"data:") || line.starts_with(b"stringData:"))
            && !line.ends_with(b"{}")
        {
            values = true;
        }
    }
    secret && values
}

/// Removes the least recently used entries past [`ENTRIES`]; only files named
/// `<64 hex digits>.yaml` are berth's.
fn prune(dir: &Path) {
    let Ok(listing) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<(SystemTime, PathBuf)> = listing
        .filter_map(Result::ok)
        .filter(|e| is_entry_name(&e.file_name().to_string_lossy()))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    if entries.len() <= ENTRIES {
        return;
    }
    entries.sort();
    for (_, path) in &entries[..entries.len() - ENTRIES] {
        // Another berth may have removed it first; either way it is gone.
        let _ = std::fs::remove_file(path);
    }
}

fn is_entry_name(name: &str) -> bool {
    name.strip_suffix(".yaml").is_some_and(|stem| {
        stem.len() == 64 && stem.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    fn inputs(dir: &Path) -> Option<Vec<String>> {
        let root = dir.canonicalize().unwrap();
        let mut inputs = Inputs::default();
        inputs.kustomization(&root.join("overlay"))?;
        Some(
            inputs
                .files
                .iter()
                .map(|f| f.strip_prefix(&root).unwrap().display().to_string())
                .collect(),
        )
    }

    #[test]
    fn a_build_reads_its_tree_and_the_kustomizations_it_names() {
        let dir = tree(&[
            ("overlay/kustomization.yaml", "resources: [../base, extra.yaml]\ncomponents: [../comp]\ntransformers:\n- |\n  apiVersion: builtin\n"),
            ("overlay/extra.yaml", "kind: ConfigMap\n"),
            ("overlay/patches/p.yaml", "x: 1\n"),
            ("base/kustomization.yaml", "resources: [d.yaml]\n"),
            ("base/d.yaml", "kind: Deployment\n"),
            ("comp/kustomization.yaml", "kind: Component\n"),
            ("unrelated/file.yaml", "kind: Secret\n"),
        ]);
        assert_eq!(
            inputs(dir.path()).unwrap(),
            [
                "base/d.yaml",
                "base/kustomization.yaml",
                "comp/kustomization.yaml",
                "overlay/extra.yaml",
                "overlay/kustomization.yaml",
                "overlay/patches/p.yaml"
            ]
        );
    }

    #[test]
    fn a_remote_or_missing_base_is_not_cached() {
        for resources in [
            "https://github.com/kubernetes-sigs/kustomize//examples/multibases?ref=v1.0.6",
            "github.com/org/repo/deploy?ref=main",
            "../missing",
        ] {
            let text = format!("resources: [\"{resources}\"]\n");
            let dir = tree(&[("overlay/kustomization.yaml", text.as_str())]);
            assert_eq!(inputs(dir.path()), None, "{resources}");
        }
    }

    #[test]
    fn a_symbolic_link_is_followed_and_loops_end() {
        let dir = tree(&[
            ("overlay/kustomization.yaml", "resources: [shared/x.yaml]\n"),
            ("elsewhere/x.yaml", "kind: ConfigMap\n"),
        ]);
        let root = dir.path();
        std::os::unix::fs::symlink(root.join("elsewhere"), root.join("overlay/shared")).unwrap();
        std::os::unix::fs::symlink(root.join("overlay"), root.join("overlay/self")).unwrap();
        assert_eq!(
            inputs(root).unwrap(),
            ["elsewhere/x.yaml", "overlay/kustomization.yaml"]
        );
    }

    #[test]
    fn an_output_holding_a_secret_is_not_kept() {
        assert!(holds_secret(
            b"apiVersion: v1\ndata:\n  k: dg==\nkind: Secret\nmetadata:\n  name: x\n"
        ));
        assert!(holds_secret(b"kind: Secret\r\nstringData:\r\n  k: v\r\n"));
        assert!(holds_secret(
            b"kind: ConfigMap\n---\nkind: Secret\ndata:\n  k: dg==\n---\nkind: Service\n"
        ));
        // No values: KServe's webhook certificate Secret, filled in the cluster.
        assert!(!holds_secret(
            b"apiVersion: v1\nkind: Secret\nmetadata:\n  name: cert\n---\ndata:\n  k: v\nkind: ConfigMap\n"
        ));
        assert!(!holds_secret(b"data: {}\nkind: Secret\n"));
        assert!(!holds_secret(b"kind: SecretStore\n"));
        assert!(!holds_secret(
            b"data:\n  k: |\n    kind: Secret is a word\n"
        ));
    }

    #[test]
    fn only_berths_entry_names_are_pruned() {
        assert!(is_entry_name(&format!("{}.yaml", "a".repeat(64))));
        for other in [
            "notes.yaml",
            "A".repeat(64).as_str(),
            &format!("{}.yml", "a".repeat(64)),
        ] {
            assert!(!is_entry_name(other), "{other}");
        }
    }

    #[test]
    fn an_entry_is_its_digest_then_the_output() {
        let output = b"kind: ConfigMap\n";
        let mut entry = format!("sha256:{}\n", hex(&Sha256::digest(output))).into_bytes();
        entry.extend_from_slice(output);
        let (first, rest) = split_entry(&entry).unwrap();
        assert_eq!(rest, output);
        assert!(first.starts_with(b"sha256:"));
    }
}
