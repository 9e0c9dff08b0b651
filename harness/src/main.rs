//! `harness`: one benchmark arm per process. Started by `cargo xtask lab run`, never by hand in normal use.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use harness::arms::{self, ArmContext};
use streamlab_record::EnvDescriptor;
use streamlab_record::arms::{NOT_RUNNABLE_EXIT, NotRunnable};

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
    /// The cluster as its metadata describes it (broker ids, the broker that answered), as JSON: what provenance records of a
    /// cluster the lab did not start.
    Cluster {
        #[arg(long)]
        env: PathBuf,
    },
    /// The machine's own noise: a fixed CPU loop and a fixed loopback produce, as JSON (a run's start and end).
    Calibrate {
        #[arg(long)]
        env: PathBuf,
    },
    /// A fresh environment's warm-up before its first task: a bulk produce, then one-record round trips; as JSON.
    WarmUp {
        #[arg(long)]
        env: PathBuf,
        /// The quick profile's short warm-up (a tenth of the round trips).
        #[arg(long)]
        quick: bool,
    },
    /// The paced workload's end-to-end consumer: read `topic` from offset 0 until `records` distinct stamped records
    /// came; prints `ready` once reading, then its receipts as JSON.
    PacedConsume {
        #[arg(long)]
        env: PathBuf,
        #[arg(long)]
        topic: String,
        #[arg(long)]
        partitions: i32,
        #[arg(long)]
        records: u64,
    },
    /// Print the client library versions this build links, as JSON.
    Versions,
    /// The arms this harness can run and the knobs each reads (the contract xtask checks matrices against).
    Arms {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

fn main() {
    // The runner takes a failed arm's reason from this last line: the message chain, never a backtrace.
    if let Err(e) = run() {
        // A point the client cannot run is not a failure: the runner records it as not run, with this reason.
        if let Some(not_runnable) = e.downcast_ref::<NotRunnable>() {
            eprintln!("{}", not_runnable.line());
            std::process::exit(NOT_RUNNABLE_EXIT);
        }
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("STREAMLAB_LOG").unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        // The lab writes stderr to a log file, whose tail goes into failed records and onto the site: no colour.
        .with_ansi(std::io::stderr().is_terminal())
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
        Command::Cluster { env } => {
            let env = EnvDescriptor::load(&env)?;
            println!("{}", serde_json::to_string(&harness::probe::cluster(&env)?)?);
        }
        Command::Calibrate { env } => {
            let env = EnvDescriptor::load(&env)?;
            println!("{}", serde_json::to_string(&harness::calibrate::calibrate(&env)?)?);
        }
        Command::WarmUp { env, quick } => {
            use harness::warm_up::RoundTrips;
            let env = EnvDescriptor::load(&env)?;
            let round_trips = if quick { RoundTrips::QUICK } else { RoundTrips::MEASURING };
            println!("{}", serde_json::to_string(&harness::warm_up::warm_up(&env, round_trips)?)?);
        }
        Command::PacedConsume { env, topic, partitions, records } => {
            use std::io::Write;
            let env = EnvDescriptor::load(&env)?;
            let ready = || {
                println!("ready");
                let _ = std::io::stdout().flush();
            };
            let receipts = harness::arms::clients::paced::consume(&env, &topic, partitions, records, ready)?;
            println!("{}", serde_json::to_string(&receipts)?);
        }
        Command::Versions => println!("{}", serde_json::to_string(&harness::versions::client_versions())?),
        Command::Arms { json: true } => println!("{}", arms::registry_json()),
        Command::Arms { json: false } => {
            for spec in arms::registry() {
                let knobs: Vec<String> = spec
                    .knobs()
                    .iter()
                    .map(|k| format!("{}:{:?}{}", k.name, k.ty, if k.required { "" } else { "?" }))
                    .collect();
                println!("{}/{}: {}", spec.bench, spec.arm, knobs.join(" "));
            }
        }
    }
    Ok(())
}
