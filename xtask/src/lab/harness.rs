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
    crate::cargo::cargo()
        .args(["build", "--release", "--workspace"])
        .run(BUILD_TIMEOUT)
        .context("building the harness failed")?;
    Ok(paths::harness_binary())
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

/// `harness warm-up` on a fresh environment (`quick`: the quick profile's tenth of it): what it did, in words.
pub fn warm_up(harness: &Path, descriptor: &Path, quick: bool) -> Result<String> {
    let out = Cmd::new(harness)
        .args(["warm-up", "--env"])
        .arg(descriptor)
        .args(quick.then_some("--quick"))
        .output(Duration::from_secs(120))
        .context("running the warm-up")?;
    anyhow::ensure!(out.status.success(), "the warm-up failed:\n{}", out.tail(10));
    let did: serde_json::Value =
        serde_json::from_str(&out.stdout).context("harness warm-up printed nothing to read")?;
    let number = |key: &str| did[key].as_f64().unwrap_or(f64::NAN);
    Ok(format!(
        "warmed up: a bulk produce at {:.0} records/s, then {:.0} one-record round trips (the last thousand's median \
         {:.0} µs)",
        number("bulk_records_per_s"),
        number("round_trips"),
        number("round_trip_p50_us")
    ))
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
