//! Pinned artifacts: env/kafka/jars.lock (group:artifact:version + SHA-256), fetched into the cache and verified.

pub fn fetch_command() -> anyhow::Result<()> {
    anyhow::bail!("env fetch is being written")
}
pub fn lock_command() -> anyhow::Result<()> {
    anyhow::bail!("env lock is being written")
}
