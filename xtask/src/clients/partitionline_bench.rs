//! partitionline's bench loops built as seed 003 built its benches: `partitionline-bench` in the workspace's
//! `seed-003` profile (the crate's own release profile: thin LTO, one codegen unit), for the clients matrix's
//! partitionline arm. Cargo keeps it between runs like any build; a cold one takes about 80 s here.

use std::time::Duration;

use anyhow::{Context, Result};
use streamlab_record::tools::SeedBuild;

use crate::paths;

/// The workspace profile (Cargo.toml) the binary is built in.
pub const PROFILE: &str = "seed-003";
const PACKAGE: &str = "streamlab-partitionline";
const BINARY: &str = "partitionline-bench";

const BUILD_TIMEOUT: Duration = Duration::from_secs(3600);

/// Build (or find up to date) the binary; its path and how it was built.
pub fn build() -> Result<SeedBuild> {
    crate::cargo::cargo()
        .args(["build", "--profile", PROFILE, "-p", PACKAGE, "--bin", BINARY])
        .run(BUILD_TIMEOUT)
        .with_context(|| format!("building {BINARY} in the {PROFILE} profile failed"))?;
    let manifest = paths::repo_root().join("Cargo.toml");
    let build = crate::provenance::build_profile(&manifest, PROFILE)
        .with_context(|| format!("{} has no [profile.{PROFILE}]", manifest.display()))?;
    Ok(SeedBuild { path: paths::target_dir().join(PROFILE).join(BINARY), build })
}
