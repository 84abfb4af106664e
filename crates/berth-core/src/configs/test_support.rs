//! An in-memory project tree for tests of code that reads through [`FileSource`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::FileSource;

/// Files under the project directory `/p`, by relative path.
pub(crate) struct Table(HashMap<PathBuf, Vec<u8>>);

impl Table {
    /// A table of `(relative path, bytes)`.
    pub(crate) fn new<B: AsRef<[u8]>>(
        files: impl IntoIterator<Item = (impl AsRef<Path>, B)>,
    ) -> Table {
        Table(
            files
                .into_iter()
                .map(|(p, b)| (Path::new("/p").join(p), b.as_ref().to_vec()))
                .collect(),
        )
    }
}

impl FileSource for Table {
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        self.0
            .get(path)
            .cloned()
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
    }

    fn list_dir(&self, path: &Path) -> std::io::Result<Option<Vec<PathBuf>>> {
        let inside: Vec<PathBuf> = self
            .0
            .keys()
            .filter(|k| k.parent() == Some(path))
            .cloned()
            .collect();
        Ok((!inside.is_empty()).then_some(inside))
    }
}
