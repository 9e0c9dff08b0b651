//! `cargo xtask`: streamlab's whole command surface.

mod cargo;
mod clients;
mod clock;
mod doctor;
mod env;
mod interrupt;
mod javac;
mod lab;
mod paths;
mod provenance;
mod results;
mod site;
mod testcmd;
mod tidy;
mod tools;

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    about = "streamlab: reproducible streaming-data benchmarks",
    version,
    arg_required_else_help = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run benchmark matrices and write results/<run-id>/.
    #[command(subcommand)]
    Lab(LabCommand),
    /// Render results/ into a static site.
    #[command(subcommand)]
    Site(SiteCommand),
    /// Bring an environment up or down by hand, or fetch its pinned artifacts.
    #[command(subcommand)]
    Env(EnvCommand),
    /// What this machine has and lacks, and how to fix it.
    Doctor,
    /// The test command: unit and integration tests against real services.
    Test(testcmd::TestArgs),
}

#[derive(Subcommand)]
enum LabCommand {
    /// Run every matrix (or those named) at a profile.
    Run(Box<lab::RunArgs>),
    /// List matrices, arms and sweeps, as data.
    List(lab::ListArgs),
    /// Compare two runs point by point: ratio of medians, its interval, a rank test and a verdict.
    Compare(lab::compare::CompareArgs),
    /// Every seed's headline claim with its verdict from the committed results: reproduces, does not, cannot tell.
    Verdicts(lab::verdicts::VerdictsArgs),
    /// Bring a results directory's records to this build's schema, once, in place (then commit them).
    Migrate(results::migrate::MigrateArgs),
}

#[derive(Subcommand)]
enum SiteCommand {
    /// Build target/site/ from results/.
    Build(site::BuildArgs),
    /// Validate a built site: HTML validator and headless Chromium.
    Check(site::CheckArgs),
}

#[derive(Subcommand)]
enum EnvCommand {
    /// Start an environment (Kafka + MariaDB), natively or in Docker, and write its descriptor.
    Up(env::UpArgs),
    /// Stop an environment and remove its data.
    Down(env::DownArgs),
    /// Tell which environments are running.
    Status,
    /// Download the pinned Kafka and Kafka Connect jars into the cache and verify every checksum.
    Fetch,
    /// Regenerate the jar locks (env/kafka/jars.lock, env/kafka/<version>/jars.lock, env/connect/<plugin>/jars.lock)
    /// with Maven (maintainers only).
    Lock {
        /// Only this Kafka version's lock.
        #[arg(long, conflicts_with = "connect")]
        kafka: Option<String>,
        /// Only the Kafka Connect plugins' locks.
        #[arg(long)]
        connect: bool,
    },
    /// Have the docker backend's images: pull the pinned ones, or build local equivalents where no registry answers.
    Images,
}

fn main() {
    // Errors are for users: the message chain, no backtrace; Ctrl-C exits 130 like a shell would.
    if let Err(e) = run() {
        eprintln!("error: {e:#}");
        let interrupted = e.downcast_ref::<interrupt::Interrupted>().is_some();
        std::process::exit(if interrupted { 130 } else { 1 });
    }
}

fn run() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("STREAMLAB_LOG").unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        // Colour only on a terminal: a run's output piped into a log stays plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .without_time()
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Lab(LabCommand::Run(args)) => lab::runner::run(*args),
        Command::Lab(LabCommand::List(args)) => lab::list(args),
        Command::Lab(LabCommand::Compare(args)) => lab::compare::compare_cmd(args),
        Command::Lab(LabCommand::Verdicts(args)) => lab::verdicts::verdicts_cmd(args),
        Command::Lab(LabCommand::Migrate(args)) => results::migrate::migrate_cmd(args),
        Command::Site(SiteCommand::Build(args)) => {
            let claims = lab::claim_points::load(&args.claims)?;
            site::build(args, claims)
        }
        Command::Site(SiteCommand::Check(args)) => site::check(args),
        Command::Env(EnvCommand::Up(args)) => env::up(args),
        Command::Env(EnvCommand::Down(args)) => env::down(args),
        Command::Env(EnvCommand::Status) => env::status(),
        Command::Env(EnvCommand::Fetch) => env::pins::fetch_command(),
        Command::Env(EnvCommand::Lock { kafka, connect }) => {
            env::pins::lock_command(match (kafka.as_deref(), connect) {
                (Some(version), _) => env::pins::LockScope::Kafka(version),
                (None, true) => env::pins::LockScope::Connect,
                (None, false) => env::pins::LockScope::All,
            })
        }
        Command::Env(EnvCommand::Images) => env::docker::images::images_command(),
        Command::Doctor => doctor::run(),
        Command::Test(args) => testcmd::run(args),
    }
}
