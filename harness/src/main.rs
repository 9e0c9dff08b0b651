//! `harness`: one benchmark arm per process. Started by `cargo xtask lab run`, never by hand in normal use.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use harness::arms::{self, ArmContext};
use streamlab_record::EnvDescriptor;

#[derive(Parser)]
#[command(name = "harness", about = "streamlab benchmark arms (started by `cargo xtask lab run`)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one arm once and print its measurement as one JSON line on stdout.
    Run {
        #[arg(long)]
        bench: String,
        #[arg(long)]
        arm: String,
        /// The env descriptor (env.json) written by `cargo xtask env up`.
        #[arg(long)]
        env: PathBuf,
        /// The variant's knobs as a JSON object.
        #[arg(long)]
        knobs: String,
    },
    /// Produce and consume one record on every listener of the environment.
    Probe {
        #[arg(long)]
        env: PathBuf,
    },
    /// Print the client library versions this build links, as JSON.
    Versions,
}

fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("STREAMLAB_LOG").unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::Run { bench, arm, env, knobs } => {
            let env = EnvDescriptor::load(&env)?;
            let knobs = serde_json::from_str(&knobs).context("--knobs is not a JSON object")?;
            let measurement = arms::run(&bench, &arm, &ArmContext { env, knobs })?;
            println!("{}", serde_json::to_string(&measurement)?);
        }
        Command::Probe { env } => {
            let env = EnvDescriptor::load(&env)?;
            let report = harness::probe::probe_all(&env)?;
            println!("{}", serde_json::to_string(&report)?);
        }
        Command::Versions => println!("{}", serde_json::to_string(&harness::versions::client_versions())?),
    }
    Ok(())
}
