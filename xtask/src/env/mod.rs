//! Environments: one interface ([`backend::Backend`], [`backend::Environment`]), several backends; every
//! result records which one ran it.
//! - native: Kafka from the pinned Maven jars on the system JDK, MariaDB/MySQL from the system packages;
//! - docker: the same services in containers of pinned images (or local equivalents), host networking;
//! - external: `--bootstrap` / `--mysql-dsn` point at services the user already runs (never started or stopped).

pub mod backend;
pub mod certs;
pub mod docker;
pub mod external;
pub mod health;
pub mod host;
pub mod kafka;
pub mod mariadb;
pub mod native;
pub mod pins;
pub mod ports;
pub mod process;
pub mod secrets;
pub mod templates;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use streamlab_record::EnvDescriptor;
use streamlab_record::descriptor::DESCRIPTOR_FILE;

use crate::paths::envs_dir;

#[derive(clap::Args)]
pub struct UpArgs {
    /// Where the services run: `native` (this machine's JDK and server), `docker`, or `auto` (docker when an
    /// engine answers).
    #[arg(long, default_value = "auto", value_parser = ["auto", "native", "docker"])]
    pub env: String,
    /// Also start MariaDB/MySQL (`--mysql false` for Kafka only).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub mysql: bool,
    /// Pin the broker to this many CPUs, counted from CPU 0 (0 = all).
    #[arg(long, default_value_t = 0)]
    pub broker_cores: usize,
    /// The Kafka version to run (one the lab pins: see env/kafka/).
    #[arg(long, default_value = pins::KAFKA_PINS[0].version)]
    pub kafka: String,
}

#[derive(clap::Args)]
pub struct DownArgs {
    /// The environment id (default: every environment `env up` started; lab runs and tests clean up their own).
    pub id: Option<String>,
    /// Stop the services but keep their data directories.
    #[arg(long)]
    pub keep: bool,
}

/// The first `cores` CPUs this process may use, or `None` (0) for no cap; `Err` names how many there are.
pub fn broker_cpus(cores: usize) -> std::result::Result<Option<Vec<usize>>, String> {
    let allowed = process::allowed_cpus();
    if cores > allowed.len() {
        return Err(format!(
            "this machine lets us use {} CPUs ({allowed:?}); {cores} cannot be applied",
            allowed.len()
        ));
    }
    Ok((cores > 0).then(|| allowed[..cores].to_vec()))
}

/// Id prefix of environments started by `env up` (lab runs use `lab-`, tests `test-`/`t-`).
const HAND_MADE_PREFIX: &str = "env-";

pub fn up(args: UpArgs) -> Result<()> {
    // Ctrl-C while starting stops what was started (the services are detached from our terminal).
    crate::interrupt::install();
    let started = std::time::Instant::now();
    let broker_cpus = broker_cpus(args.broker_cores).map_err(|e| anyhow::anyhow!("--broker-cores: {e}"))?;
    let id = native::new_id(HAND_MADE_PREFIX);
    let kafka = pins::pin(&args.kafka).map_err(|e| anyhow::anyhow!("--kafka: {e}"))?;
    let use_docker = match args.env.as_str() {
        "docker" => true,
        "native" => false,
        _ => docker::engine::Engine::answers().is_some(),
    };
    let env = if use_docker {
        let opts = docker::DockerOptions {
            root: envs_dir(),
            id,
            with_mysql: args.mysql,
            kafka,
            broker_cpus,
            detached: true,
            kafka_ports: None,
        };
        let env = docker::up(&opts)?;
        for image in docker::images_of(&env) {
            println!("image {} ({})", image.reference, image.source);
        }
        let descriptor = env.descriptor().clone();
        // `env up` leaves the containers running until `env down`.
        std::mem::forget(env);
        descriptor
    } else {
        let opts = native::NativeOptions {
            root: envs_dir(),
            id,
            with_mysql: args.mysql,
            kafka,
            broker_cpus,
            lifetime: process::Lifetime::Detached,
            kafka_ports: None,
        };
        native::up(&opts)?
    };
    let path = env.dir.join(DESCRIPTOR_FILE);
    println!("environment {} is ready after {:.1} s", env.id, started.elapsed().as_secs_f64());
    println!("  kafka {} (pid {}, {} backend)", env.kafka.version, env.kafka.pid.unwrap_or(0), env.backend);
    for (name, l) in &env.kafka.listeners {
        println!("    {name:<10} {} {}", l.bootstrap, l.sasl_mechanism.as_deref().unwrap_or(&l.security_protocol));
    }
    if let Some(m) = &env.mysql {
        println!("  {} {} on 127.0.0.1:{} (pid {})", m.flavour, m.version, m.port, m.pid.unwrap_or(0));
    }
    println!("descriptor: {}", path.display());
    println!("stop it with: cargo xtask env down {}", env.id);
    Ok(())
}

pub fn down(args: DownArgs) -> Result<()> {
    let envs = match &args.id {
        Some(id) => vec![load(&envs_dir().join(id)).with_context(|| format!("no environment {id}"))?],
        None => list()?.into_iter().filter(|e| e.id.starts_with(HAND_MADE_PREFIX)).collect(),
    };
    if envs.is_empty() {
        println!("no environment is up");
    }
    for env in envs {
        if env.backend == "docker" {
            docker::down(&env, args.keep)?;
        } else {
            native::down(&env, args.keep)?;
        }
        println!("environment {} is down{}", env.id, if args.keep { " (data kept)" } else { "" });
    }
    Ok(())
}

pub fn status() -> Result<()> {
    let envs = list()?;
    if envs.is_empty() {
        println!("no environment is up (start one with: cargo xtask env up)");
    }
    for env in envs {
        let running = native::running_pids(&env);
        let state = if running.is_empty() { "stopped" } else { "running" };
        println!("{} {state} ({} backend, pids {running:?})", env.id, env.backend);
        println!("  descriptor: {}", env.dir.join(DESCRIPTOR_FILE).display());
        for (name, l) in &env.kafka.listeners {
            println!("  kafka {name:<10} {}", l.bootstrap);
        }
        if let Some(m) = &env.mysql {
            println!("  {} 127.0.0.1:{}", m.flavour, m.port);
        }
    }
    Ok(())
}

fn load(dir: &Path) -> Result<EnvDescriptor> {
    Ok(EnvDescriptor::load(&dir.join(DESCRIPTOR_FILE))?)
}

/// Every environment with a descriptor under target/streamlab/envs.
fn list() -> Result<Vec<EnvDescriptor>> {
    let Ok(entries) = std::fs::read_dir(envs_dir()) else { return Ok(Vec::new()) };
    let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    dirs.sort();
    Ok(dirs.iter().filter(|d| d.join(DESCRIPTOR_FILE).exists()).filter_map(|d| load(d).ok()).collect())
}
