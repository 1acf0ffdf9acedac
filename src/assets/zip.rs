//! Deterministic zip archives of directory assets: the same tree always gives the same bytes,
//! so a content-addressed object key never points at two different archives and a rebuilt
//! asset uploads nothing new.
//!
//! Entries are the tree's files (symlinks followed), named by their path relative to the root
//! with `/` separators, in byte order of those names; every entry carries the same fixed
//! modification time (1980-01-01 00:00:00, the earliest a zip can hold) and the file's Unix
//! permission bits (so an executable `bootstrap` stays executable). Directories get no entries
//! of their own.

use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};

use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipWriter};

use super::AssetError;

/// The zip archive of the directory `root`.
pub fn zip_directory(root: &Path) -> Result<Vec<u8>, AssetError> {
    let mut files = Vec::new();
    collect(root, root, &mut files)?;
    files.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));

    let mut writer = ZipWriter::new(Cursor::new(Vec::new()));
    for (name, path) in files {
        let bytes = std::fs::read(&path).map_err(|source| AssetError::Read {
            path: path.clone(),
            source,
        })?;
        let options = SimpleFileOptions::default()
            .compression_method(CompressionMethod::Deflated)
            .last_modified_time(DateTime::DEFAULT)
            .unix_permissions(mode_of(&path));
        writer
            .start_file(name.as_str(), options)
            .and_then(|()| writer.write_all(&bytes).map_err(Into::into))
            .map_err(|e| AssetError::Zip {
                path: root.to_owned(),
                message: format!("{name}: {e}"),
            })?;
    }
    let cursor = writer.finish().map_err(|e| AssetError::Zip {
        path: root.to_owned(),
        message: e.to_string(),
    })?;
    Ok(cursor.into_inner())
}

/// Every file below `dir`: (name relative to `root` with `/` separators, path).
fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) -> Result<(), AssetError> {
    let read_err = |path: &Path| {
        let path = path.to_owned();
        move |source| AssetError::Read { path, source }
    };
    for entry in std::fs::read_dir(dir).map_err(read_err(dir))? {
        let entry = entry.map_err(read_err(dir))?;
        let path = entry.path();
        // `metadata` follows symlinks: a linked file is archived as the file it names.
        let meta = std::fs::metadata(&path).map_err(read_err(&path))?;
        if meta.is_dir() {
            collect(root, &path, out)?;
        } else if meta.is_file() {
            let relative = path.strip_prefix(root).unwrap_or(&path);
            let name = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            out.push((name, path));
        }
    }
    Ok(())
}

#[cfg(unix)]
fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o777)
        .unwrap_or(0o644)
}

#[cfg(not(unix))]
fn mode_of(_path: &Path) -> u32 {
    0o644
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("lib/nested")).unwrap();
        std::fs::write(dir.path().join("index.js"), "exports.handler = 1;\n").unwrap();
        std::fs::write(dir.path().join("lib/a.js"), "a").unwrap();
        std::fs::write(dir.path().join("lib/nested/b.txt"), "b".repeat(5000)).unwrap();
        std::fs::create_dir_all(dir.path().join("empty")).unwrap();
        dir
    }

    #[test]
    fn the_same_tree_zips_to_the_same_bytes() {
        let dir = tree();
        let first = zip_directory(dir.path()).unwrap();
        // Touch the files (new mtimes) and zip again: byte-identical.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        std::fs::write(dir.path().join("lib/a.js"), "a").unwrap();
        let second = zip_directory(dir.path()).unwrap();
        assert_eq!(first, second);

        // The same content in a different directory, files created in another order.
        let other = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(other.path().join("empty")).unwrap();
        std::fs::create_dir_all(other.path().join("lib/nested")).unwrap();
        std::fs::write(other.path().join("lib/nested/b.txt"), "b".repeat(5000)).unwrap();
        std::fs::write(other.path().join("lib/a.js"), "a").unwrap();
        std::fs::write(other.path().join("index.js"), "exports.handler = 1;\n").unwrap();
        assert_eq!(zip_directory(other.path()).unwrap(), first);
    }

    #[test]
    fn entries_are_sorted_relative_files_with_a_fixed_time() {
        let dir = tree();
        let bytes = zip_directory(dir.path()).unwrap();
        let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        let names: Vec<String> = archive
            .file_names()
            .map(|n| n.unwrap().into_owned())
            .collect();
        let mut in_order = Vec::new();
        for i in 0..archive.len() {
            let mut f = archive.by_index(i).unwrap();
            let name = f.name().unwrap().into_owned();
            in_order.push(name.clone());
            assert_eq!(f.last_modified(), Some(DateTime::DEFAULT));
            if name == "lib/nested/b.txt" {
                let mut s = String::new();
                f.read_to_string(&mut s).unwrap();
                assert_eq!(s.len(), 5000);
            }
        }
        assert_eq!(in_order, vec!["index.js", "lib/a.js", "lib/nested/b.txt"]);
        assert_eq!(names.len(), 3);
    }

    #[test]
    fn a_content_change_changes_the_bytes() {
        let dir = tree();
        let first = zip_directory(dir.path()).unwrap();
        std::fs::write(dir.path().join("lib/a.js"), "A").unwrap();
        assert_ne!(zip_directory(dir.path()).unwrap(), first);
    }
}
