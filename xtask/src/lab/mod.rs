//! The lab: matrices as data, a runner that starts one harness process per arm x variant x rep.

#[derive(clap::Args)]
pub struct RunArgs {}
#[derive(clap::Args)]
pub struct ListArgs {}

pub fn run(_args: RunArgs) -> anyhow::Result<()> {
    anyhow::bail!("lab run is being written")
}
pub fn list(_args: ListArgs) -> anyhow::Result<()> {
    anyhow::bail!("lab list is being written")
}
