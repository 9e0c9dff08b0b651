//! `partitionline-bench`: one bench loop, built as seed 003 built its benches (the `seed-003` profile). Reads a
//! [`Job`] as JSON on stdin, prints its [`Outcome`] as JSON on stdout; an error goes to stderr with status 1.

use std::io::Read;

use anyhow::{Context, Result};
use streamlab_partitionline::{Job, run};

fn main() {
    if let Err(e) = run_stdin() {
        eprintln!("partitionline-bench: {e:#}");
        std::process::exit(1);
    }
}

fn run_stdin() -> Result<()> {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).context("cannot read the job from stdin")?;
    let job: Job = serde_json::from_str(&input).context("stdin is not a partitionline job")?;
    let outcome = run(&job)?;
    println!("{}", serde_json::to_string(&outcome)?);
    Ok(())
}
