//! `cargo xtask doctor`: what this machine has and lacks.

pub fn run() -> anyhow::Result<()> {
    anyhow::bail!("doctor is being written")
}
