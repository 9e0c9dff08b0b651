//! The results site: a pure function of results/ (see issue 4).

use std::path::PathBuf;

#[derive(clap::Args)]
pub struct BuildArgs {
    /// Results directory to read (default: results/).
    #[arg(long)]
    pub results: Option<PathBuf>,
    /// Output directory (default: target/site/).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn build(_args: BuildArgs) -> anyhow::Result<()> {
    anyhow::bail!("site build is being written (issue 4)")
}

#[derive(clap::Args)]
pub struct CheckArgs {
    /// The built site to check (default: target/site/).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

pub fn check(_args: CheckArgs) -> anyhow::Result<()> {
    anyhow::bail!("site check is being written (issue 4)")
}
