//! Files others read while we write them: written whole or not at all; and the end of a log, for errors.

use std::io::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

/// Write `bytes` to `path` atomically (its directory created if need be): a temp file in the same directory, synced,
/// then renamed over it, so no reader ever sees a half-written file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).with_context(|| format!("cannot write in {}", dir.display()))?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .with_context(|| format!("writing {}", path.display()))?;
    tmp.persist(path).map_err(|e| e.error).with_context(|| format!("cannot rename into {}", path.display()))?;
    Ok(())
}

/// The last `lines` lines of `text`.
pub fn last_lines(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The last `lines` lines of the file at `path` (empty if it cannot be read; invalid UTF-8 replaced).
pub fn log_tail(path: &Path, lines: usize) -> String {
    last_lines(&String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()), lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_atomic_write_replaces_the_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temp file left behind");
    }

    #[test]
    fn a_tail_is_the_last_lines() {
        assert_eq!(last_lines("a\nb\nc\n", 2), "b\nc");
        assert_eq!(last_lines("a", 5), "a");
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        std::fs::write(&log, b"x\n\xffy\nz\n").unwrap();
        assert_eq!(log_tail(&log, 2), "\u{fffd}y\nz");
        assert_eq!(log_tail(&dir.path().join("missing"), 2), "");
    }
}
