//! Environments: one interface ([`backend::Backend`], [`backend::Environment`]), several backends; every
//! result records which one ran it.
//! - native: Kafka from the pinned Maven jars on the system JDK, MariaDB/MySQL from the system packages;
//! - docker: the same services in containers of pinned images (or local equivalents), host networking;
//! - external: `--bootstrap` / `--mysql-dsn` point at services the user already runs (never started or stopped).

pub mod backend;
pub mod certs;
pub mod class_archive;
pub mod disk;
pub mod docker;
pub mod external;
pub mod fault;
pub mod health;
pub mod host;
pub mod kafka;
pub mod kafka_config;
pub mod listener_probe;
pub mod mariadb;
pub mod native;
pub mod pins;
pub mod process;
pub mod secrets;
pub mod services;
pub mod templates;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use streamlab_record::EnvDescriptor;
use streamlab_record::descriptor::{BackendKind, DESCRIPTOR_FILE};
use streamlab_record::run_spec::BackendChoice;

use self::backend::{Backend, EnvSpec};
use crate::paths::envs_dir;

#[derive(clap::Args)]
pub struct UpArgs {
    /// Where the services run: `native` (this machine's JDK and server), `docker`, or `auto` (docker when an
    /// engine answers, else native).
    #[arg(long, default_value = "auto", value_parser = parse_local_backend)]
    pub env: BackendChoice,
    /// Also start MariaDB/MySQL (`--mysql false` for Kafka only).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub mysql: bool,
    /// Pin the broker to this many CPUs, counted from CPU 0 (0 = all).
    #[arg(long, default_value_t = 0)]
    pub broker_cores: usize,
    /// Brokers to run: 1, or a cluster of N KRaft nodes in combined mode (every node a broker and a voter of
    /// the controller quorum; internal topics at replication factor min(N, 3)).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=9))]
    pub brokers: u16,
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

/// `auto`, `native` or `docker`: the backends that start services (`external` has nothing to start).
fn parse_local_backend(s: &str) -> std::result::Result<BackendChoice, String> {
    match s.parse::<BackendChoice>() {
        Ok(BackendChoice::External) => Err("env up starts services; an external cluster is yours to start".into()),
        other => other.map_err(|e| e.to_string()),
    }
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

/// The backend the flags ask for; refused with the flag named when the combination makes no sense (a
/// `--kafka-config` file is read and checked here, before anything is provisioned).
pub fn choose(
    choice: BackendChoice,
    bootstrap: Option<&str>,
    dsn: Option<&str>,
    kafka_config: Option<&Path>,
) -> Result<Box<dyn Backend>> {
    let dsn = dsn.map(external::parse_dsn).transpose()?;
    let kafka_config = kafka_config.map(kafka_config::KafkaConfig::read).transpose()?;
    if let Some(c) = &kafka_config {
        if matches!(choice, BackendChoice::Native | BackendChoice::Docker) {
            bail!("--kafka-config describes a cluster you run; drop --env {choice}");
        }
        if let (Some(flag), Some(file)) = (bootstrap, &c.bootstrap)
            && flag != file
        {
            bail!("--bootstrap {flag} and bootstrap.servers={file} in {} disagree; give one", c.file.display());
        }
    }
    let bootstrap = bootstrap.map(str::to_owned).or_else(|| kafka_config.as_ref().and_then(|c| c.bootstrap.clone()));
    match (choice, bootstrap.as_deref()) {
        (BackendChoice::External, None) => {
            bail!("--env external needs --bootstrap HOST:PORT (or bootstrap.servers in --kafka-config)")
        }
        (BackendChoice::External | BackendChoice::Auto, Some(b)) => {
            kafka_config::check_bootstrap(b)?;
            Ok(Box::new(external::ExternalBackend { bootstrap: b.to_owned(), dsn, kafka_config }))
        }
        (BackendChoice::Auto, None) if kafka_config.is_some() => {
            bail!("--kafka-config needs the cluster's address: --bootstrap HOST:PORT or bootstrap.servers in the file")
        }
        (BackendChoice::Native | BackendChoice::Auto, None) if dsn.is_some() => {
            bail!("--mysql-dsn needs --bootstrap too: the external backend uses both of your services")
        }
        (BackendChoice::Native, None) => Ok(backend_of(BackendKind::Native)),
        (BackendChoice::Docker, None) => Ok(backend_of(BackendKind::Docker)),
        (BackendChoice::Docker, Some(_)) => bail!("--bootstrap points at an external cluster; drop --env docker"),
        // Auto: Docker where an engine answers (the way most users run), else this machine's own services.
        (BackendChoice::Auto, None) => {
            Ok(backend_of(if docker_answers() { BackendKind::Docker } else { BackendKind::Native }))
        }
        (BackendChoice::Native, Some(_)) => bail!("--bootstrap points at an external cluster; drop --env native"),
    }
}

/// The backend of an environment by its kind (what `env down` and `env status` read from a descriptor). The
/// external backend's services are the user's: it only ever removes the lab's descriptor.
pub fn backend_of(kind: BackendKind) -> Box<dyn Backend> {
    match kind {
        BackendKind::Native => Box::new(native::NativeBackend),
        BackendKind::Docker => Box::new(docker::DockerBackend),
        BackendKind::External => {
            Box::new(external::ExternalBackend { bootstrap: String::new(), dsn: None, kafka_config: None })
        }
    }
}

/// Whether a Docker engine answers here (`STREAMLAB_NO_DOCKER=1` says to leave it alone in `--env auto`).
fn docker_answers() -> bool {
    std::env::var_os("STREAMLAB_NO_DOCKER").is_none_or(|v| v.is_empty() || v == "0")
        && docker::engine::Engine::answers().is_some()
}

pub fn up(args: UpArgs) -> Result<()> {
    // Ctrl-C while starting stops what was started (the services are detached from our terminal).
    crate::interrupt::install();
    let started = std::time::Instant::now();
    let broker_cpus = broker_cpus(args.broker_cores).map_err(|e| anyhow::anyhow!("--broker-cores: {e}"))?;
    let kafka = pins::pin(&args.kafka).map_err(|e| anyhow::anyhow!("--kafka: {e}"))?;
    let backend = choose(args.env, None, None, None)?;
    disk::ensure_free(&crate::paths::envs_dir(), disk::RUN_NEEDS_BYTES)?;
    let spec = EnvSpec {
        with_mysql: args.mysql,
        brokers: usize::from(args.brokers),
        broker_cpus,
        lifetime: process::Lifetime::Detached,
        ..EnvSpec::new(HAND_MADE_PREFIX, kafka)
    };
    let env = backend.up(&spec)?;
    for image in env.info().images.values() {
        println!("image {} ({})", image.reference, image.source);
    }
    // `env up` leaves the services running until `env down`.
    let env = env.keep_running();
    let path = env.dir.join(DESCRIPTOR_FILE);
    println!("environment {} is ready after {:.1} s", env.id, started.elapsed().as_secs_f64());
    let brokers = env.kafka.broker_count();
    println!(
        "  kafka {} ({brokers} broker(s), pids {:?}, {} backend)",
        env.kafka.version,
        env.kafka.pids(),
        env.backend
    );
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
        backend_of(env.backend).down(&env, args.keep)?;
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
        let running = backend_of(env.backend).running_pids(&env);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_combination_is_refused_before_anything_starts() {
        let name = |c, b, d| choose(c, b, d, None).map(|b| b.name()).map_err(|e| e.to_string());
        assert_eq!(name(BackendChoice::Docker, None, None).unwrap(), "docker");
        assert_eq!(name(BackendChoice::Native, None, None).unwrap(), "native");
        assert!(name(BackendChoice::Docker, Some("127.0.0.1:9092"), None).unwrap_err().contains("drop --env docker"));
        assert!(["docker", "native"].contains(&name(BackendChoice::Auto, None, None).unwrap()));
        let dsn = Some("mysql://u:p@127.0.0.1:3306");
        assert!(name(BackendChoice::Auto, None, dsn).unwrap_err().contains("--mysql-dsn needs --bootstrap"));
        assert_eq!(name(BackendChoice::Auto, Some("127.0.0.1:9092"), dsn).unwrap(), "external");
        assert!(name(BackendChoice::External, None, None).unwrap_err().contains("needs --bootstrap"));
        assert!(name(BackendChoice::Native, Some("127.0.0.1:9092"), None).unwrap_err().contains("drop --env native"));
        assert!(name(BackendChoice::Auto, Some("no-port"), None).unwrap_err().contains("--bootstrap"));
    }

    #[test]
    fn only_a_backend_that_runs_the_broker_can_cap_it() {
        let external = choose(BackendChoice::Auto, Some("127.0.0.1:9092"), None, None).unwrap();
        assert!(external.can_cap_broker(1).unwrap_err().contains("cannot cap"));
        assert!(external.can_cap_broker(0).is_ok());
        let native = choose(BackendChoice::Native, None, None, None).unwrap();
        assert!(native.can_cap_broker(0).is_ok() && native.can_cap_broker(1).is_ok());
        assert!(native.can_cap_broker(4096).unwrap_err().contains("4096 cannot be applied"));
    }

    #[test]
    fn every_backend_kind_has_its_backend() {
        for kind in [BackendKind::Native, BackendKind::Docker, BackendKind::External] {
            assert_eq!(backend_of(kind).kind(), kind);
        }
    }

    #[test]
    fn env_up_refuses_the_external_backend_by_name() {
        assert!(parse_local_backend("external").unwrap_err().contains("yours to start"));
        assert_eq!(parse_local_backend("docker"), Ok(BackendChoice::Docker));
        assert!(parse_local_backend("podman").is_err());
    }
}
