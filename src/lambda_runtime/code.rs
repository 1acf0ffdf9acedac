//! The function's code on disk: a directory is used where it is (an asset directory of the
//! cloud assembly), a zip archive (a `.zip` asset, or the bytes the emulator holds) is
//! extracted into a scratch directory removed after the invocation.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::RunnerError;

/// A directory of our own under the system temp dir, removed when dropped.
#[derive(Debug)]
pub struct Scratch {
    path: PathBuf,
}

impl Scratch {
    pub fn new(purpose: &str) -> Result<Scratch, RunnerError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = std::env::temp_dir().join(format!(
            "cdkd-lambda-{purpose}-{}-{n}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&path)
            .map_err(|e| RunnerError::io(format!("creating {}", path.display()), e))?;
        Ok(Scratch { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The task root for `code`, and the scratch directory to drop once the run is over.
pub fn task_root(code: &Path) -> Result<(PathBuf, Option<Scratch>), RunnerError> {
    let meta = std::fs::metadata(code).map_err(|e| RunnerError::Code {
        path: code.to_path_buf(),
        message: format!("cannot be read ({e}); is the path right?"),
    })?;
    if meta.is_dir() {
        let root = code
            .canonicalize()
            .map_err(|e| RunnerError::io(format!("resolving {}", code.display()), e))?;
        return Ok((root, None));
    }
    let bytes = std::fs::read(code).map_err(|e| RunnerError::Code {
        path: code.to_path_buf(),
        message: format!("cannot be read ({e})"),
    })?;
    let scratch = Scratch::new("code")?;
    extract(&bytes, scratch.path()).map_err(|message| RunnerError::Code {
        path: code.to_path_buf(),
        message,
    })?;
    Ok((scratch.path().to_path_buf(), Some(scratch)))
}

/// Extracts the zip archive `bytes` into `dir` (entry names that would leave `dir` are
/// refused by the zip crate).
pub fn extract(bytes: &[u8], dir: &Path) -> Result<(), String> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| format!("is neither a directory nor a zip archive ({e})"))?;
    archive
        .extract(dir)
        .map_err(|e| format!("could not be extracted ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_zip_is_extracted_and_its_scratch_directory_removed_when_dropped() {
        let scratch = Scratch::new("test").unwrap();
        let zip_path = scratch.path().join("code.zip");
        let mut writer = zip::ZipWriter::new(std::fs::File::create(&zip_path).unwrap());
        writer
            .start_file("lib/index.js", zip::write::SimpleFileOptions::default())
            .unwrap();
        writer.write_all(b"exports.handler = 1;").unwrap();
        writer.finish().unwrap();

        let (root, extracted) = task_root(&zip_path).unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("lib/index.js")).unwrap(),
            "exports.handler = 1;"
        );
        drop(extracted);
        assert!(!root.exists());

        let (dir_root, none) = task_root(scratch.path()).unwrap();
        assert!(none.is_none());
        assert_eq!(dir_root, scratch.path().canonicalize().unwrap());
    }

    #[test]
    fn a_file_that_is_not_a_zip_is_an_error_naming_it() {
        let scratch = Scratch::new("test").unwrap();
        let path = scratch.path().join("index.js");
        std::fs::write(&path, "not a zip").unwrap();
        let err = task_root(&path).unwrap_err().to_string();
        assert!(err.contains("index.js") && err.contains("zip"), "{err}");
    }
}
