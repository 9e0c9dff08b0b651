//! The harness binary: built by cargo (visibly: the first build compiles librdkafka and spate), then
//! asked for its versions.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use streamlab_process::Cmd;
use streamlab_record::provenance::{CalibrationResult, ClusterInfo};

use super::ui::phase;
use crate::paths;

/// A cold build compiles librdkafka, spate and partitionline: tens of minutes on a small machine.
const BUILD_TIMEOUT: Duration = Duration::from_secs(3 * 3600);

/// `cargo build --release --workspace`, with cargo's own progress; returns the harness binary's path. The whole
/// workspace, not `-p harness`: cargo then unifies the dependencies' features as the test command's build does,
/// and neither build redoes the other's work.
pub fn build() -> Result<PathBuf> {
    phase(
        "build",
        "the harness (cargo build --release --workspace); the first build compiles librdkafka and spate and takes \
         several minutes",
    );
    cargo().args(["build", "--release", "--workspace"]).run(BUILD_TIMEOUT).context("building the harness failed")?;
    Ok(paths::harness_binary())
}

/// Cargo, at the repository's root, as a shell would start it. `cargo run` and `cargo test` give xtask the
/// variables cargo sets for a package (CARGO_MANIFEST_DIR, CARGO_PKG_NAME, ...), which ring's build script
/// tracks: passed on, every build from a new clone or after a plain `cargo build` would compile ring, rustls,
/// partitionline and the harness again.
pub fn cargo() -> Cmd {
    let mut cmd = Cmd::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())).current_dir(paths::repo_root());
    for (key, _) in std::env::vars_os() {
        if key.to_str().is_some_and(is_set_by_cargo_for_a_package) {
            cmd = cmd.env_remove(key);
        }
    }
    cmd
}

/// The variables cargo sets for the package it runs or tests (not the user's own CARGO_HOME, CARGO_TARGET_DIR, ...).
fn is_set_by_cargo_for_a_package(key: &str) -> bool {
    ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_BIN_"].iter().any(|p| key.starts_with(p))
        || ["CARGO_CRATE_NAME", "CARGO_PRIMARY_PACKAGE", "CARGO_TARGET_TMPDIR", "OUT_DIR"].contains(&key)
}

/// The versions the harness links (librdkafka, crates), as `harness versions` prints them.
pub fn versions(harness: &Path) -> Option<BTreeMap<String, String>> {
    let out = Cmd::new(harness).arg("versions").output(Duration::from_secs(60)).ok()?;
    serde_json::from_str(&out.stdout).ok()
}

/// A cluster the lab did not start, as its metadata describes it (`harness cluster`): its brokers are the user's,
/// so provenance says how many there were. An answer that does not come is an error naming the environment.
pub fn cluster(harness: &Path, descriptor: &Path) -> Result<ClusterInfo> {
    let out = Cmd::new(harness)
        .args(["cluster", "--env"])
        .arg(descriptor)
        .output(Duration::from_secs(90))
        .with_context(|| format!("asking the cluster of {} for its metadata", descriptor.display()))?;
    anyhow::ensure!(out.status.success(), "the cluster's metadata request failed:\n{}", out.tail(10));
    serde_json::from_str(&out.stdout).context("harness cluster printed no cluster description")
}

/// The machine's own noise now (`harness calibrate`: a fixed CPU loop and a fixed loopback produce).
pub fn calibrate(harness: &Path, descriptor: &Path) -> Result<CalibrationResult> {
    let out = Cmd::new(harness)
        .args(["calibrate", "--env"])
        .arg(descriptor)
        .output(Duration::from_secs(180))
        .context("running the calibration")?;
    anyhow::ensure!(out.status.success(), "the calibration failed:\n{}", out.tail(10));
    serde_json::from_str(&out.stdout).context("harness calibrate printed no calibration")
}

#[cfg(test)]
mod tests {
    use super::is_set_by_cargo_for_a_package as dropped;

    #[test]
    fn nested_cargo_loses_the_package_variables_and_keeps_the_users() {
        for key in ["CARGO_MANIFEST_DIR", "CARGO_PKG_NAME", "CARGO_PKG_VERSION_MAJOR", "CARGO_BIN_EXE_xtask", "OUT_DIR"]
        {
            assert!(dropped(key), "{key}");
        }
        for key in ["CARGO_HOME", "CARGO_TARGET_DIR", "CARGO", "RUSTFLAGS", "CARGO_PROFILE_RELEASE_DEBUG"] {
            assert!(!dropped(key), "{key}");
        }
    }
}
