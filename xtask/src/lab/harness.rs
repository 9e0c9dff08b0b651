//! The harness binary: built by cargo (visibly: the first build compiles librdkafka and spate), then
//! asked for its versions.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use super::runner::phase;
use crate::paths;

/// `cargo build --release -p harness`, with cargo's own progress; returns the binary's path.
pub fn build() -> Result<PathBuf> {
    phase(
        "build",
        "the harness (cargo build --release -p harness); the first build compiles librdkafka and spate and takes \
         several minutes",
    );
    let root = paths::repo_root();
    let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .current_dir(&root)
        .args(["build", "--release", "-p", "harness"])
        .status()
        .context("cannot run cargo")?;
    anyhow::ensure!(status.success(), "building the harness failed ({status})");
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    Ok(target.join("release").join("harness"))
}

/// The versions the harness links (librdkafka, crates), as `harness versions` prints them.
pub fn versions(harness: &Path) -> Option<BTreeMap<String, String>> {
    let out = Command::new(harness).arg("versions").output().ok()?;
    serde_json::from_slice(&out.stdout).ok()
}
