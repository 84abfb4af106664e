//! Every read of an input berth does not control goes through here, with a
//! bound: files named by flags, environment variables and berth.yaml
//! ([`read_file`]), the output of credential helpers and kubeconfig exec
//! plugins ([`run`]), and the sizes HTTP clients accept ([`limits`]). A wrong
//! path (`/dev/zero`, a FIFO), a helper that waits for a keychain that never
//! unlocks or a peer that never stops talking fails with a clear message
//! instead of exhausting memory or hanging.
//!
//! Every file berth writes goes through [`write_atomic`] ([`mod@write`]); every
//! environment variable it reads is listed in [`mod@env`].
//!
//! std only (and libc's flags): no runtime, no network, so the core may use it too.

pub mod env;
pub mod limits;
mod lock;
mod process;
pub mod redact;
pub mod suggest;
pub mod write;

pub use berth_ref::shown;
pub use lock::locked;
pub use process::{run, RunError, RunOutput};
pub use write::{write_atomic, Mode as WriteMode, WriteError};

use std::io::Read;
use std::path::Path;

/// The bytes of the regular file `path`, at most [`limits::FILE`] of them; with
/// `pipes`, a FIFO too (`berth render <(helm template …)`, for paths given on
/// the command line only).
pub fn read_file(path: &Path, pipes: bool) -> std::io::Result<Vec<u8>> {
    read_file_limited(path, pipes, limits::FILE)
}

/// [`read_file`] with another bound (`limit` bytes).
pub fn read_file_limited(path: &Path, pipes: bool, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileTypeExt as _;
    // Looked at before opening: opening a FIFO for reading blocks until a writer comes.
    let metadata = std::fs::metadata(path)?;
    if metadata.is_dir() {
        return Err(std::io::Error::other("it is a directory"));
    }
    let pipe = pipes && metadata.file_type().is_fifo();
    if !metadata.is_file() && !pipe {
        return Err(std::io::Error::other(
            "it is not a regular file (a FIFO, a socket or a device); give a file",
        ));
    }
    read_limited(std::fs::File::open(path)?, limit)
}

/// At most `limit` bytes of `reader`, refused as soon as there are more.
pub fn read_limited(reader: impl Read, limit: u64) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(std::io::Error::other(format!(
            "it is larger than {}",
            limits::size(limit)
        )));
    }
    Ok(bytes)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn devices_fifos_and_directories_are_refused_and_files_are_bounded() {
        let err = read_file(Path::new("/dev/zero"), false).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            read_file(dir.path(), false).unwrap_err().to_string(),
            "it is a directory"
        );
        let file = dir.path().join("f");
        std::fs::write(&file, "12345").unwrap();
        assert_eq!(read_file_limited(&file, false, 5).unwrap(), b"12345");
        assert_eq!(
            read_file_limited(&file, false, 4).unwrap_err().to_string(),
            "it is larger than 4 bytes"
        );
    }
}
