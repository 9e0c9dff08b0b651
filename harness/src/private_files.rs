//! Files only the owner may read, for configs that carry a secret (a database password, SASL credentials).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Write `contents` to a new file `dir/name` with mode 0600 (refusing to overwrite one).
pub fn write_private(dir: &Path, name: &str, contents: &[u8]) -> Result<PathBuf> {
    let path = dir.join(name);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    file.write_all(contents).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}
