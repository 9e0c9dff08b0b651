//! Environments: one interface, native/docker/external backends. Native is Kafka from pinned jars + MariaDB.

pub mod pins;

use std::path::PathBuf;

#[derive(clap::Args)]
pub struct UpArgs {
    /// Also start MariaDB/MySQL.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub mysql: bool,
    /// Pin the broker to this many CPUs (0 = all).
    #[arg(long, default_value_t = 0)]
    pub broker_cores: usize,
}

#[derive(clap::Args)]
pub struct DownArgs {
    /// The environment id (default: every environment under target/streamlab/envs).
    pub id: Option<String>,
    /// Keep the data directories.
    #[arg(long)]
    pub keep: bool,
}

pub fn up(_args: UpArgs) -> anyhow::Result<()> {
    anyhow::bail!("env up is being written")
}
pub fn down(_args: DownArgs) -> anyhow::Result<()> {
    anyhow::bail!("env down is being written")
}
pub fn status() -> anyhow::Result<()> {
    anyhow::bail!("env status is being written")
}
#[allow(dead_code)]
fn _dir() -> PathBuf {
    crate::paths::envs_dir()
}
