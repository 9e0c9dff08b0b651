//! The native backend: Kafka from pinned jars on the system JDK plus the system's MariaDB/MySQL,
//! each environment in its own directory under target/streamlab/envs/<id>.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use streamlab_record::EnvDescriptor;
use streamlab_record::descriptor::{DESCRIPTOR_FILE, DESCRIPTOR_SCHEMA};

use super::kafka::{self, KafkaPorts, KafkaStart};
use super::process::{self, Lifetime};
use super::{mariadb, pins, ports};
use crate::clock;

pub struct NativeOptions {
    /// Parent of the environment directory.
    pub root: PathBuf,
    /// Environment id; also the directory name.
    pub id: String,
    pub with_mysql: bool,
    /// Pin the broker to these CPUs.
    pub broker_cpus: Option<Vec<usize>>,
    pub lifetime: Lifetime,
    /// Fixed Kafka ports instead of free ones (tests use this to provoke a bind failure).
    pub kafka_ports: Option<KafkaPorts>,
}

/// A fresh environment id: UTC time plus random suffix.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}{}-{:04x}", clock::compact_utc(clock::now_ms() / 1000), rand::random::<u16>())
}

/// Start Kafka (and MariaDB/MySQL if asked) and write the descriptor. On failure, nothing is left running.
pub fn up(opts: &NativeOptions) -> Result<EnvDescriptor> {
    let dir = opts.root.join(&opts.id);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let result = start_services(opts, &dir);
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}

fn start_services(opts: &NativeOptions, dir: &Path) -> Result<EnvDescriptor> {
    let classpath = pins::kafka_classpath()?;
    let free = ports::free_loopback_ports(6)?;
    let kafka_ports = opts.kafka_ports.unwrap_or_else(|| KafkaPorts::from_slice(&free));
    let mysql_port = free[5];

    // MariaDB starts in ~1 s; do it while the JVM warms up.
    let mysql_dir = dir.join("mysql");
    let lifetime = opts.lifetime;
    let mysql = opts.with_mysql.then(|| std::thread::spawn(move || mariadb::start(&mysql_dir, mysql_port, lifetime)));
    let kafka = kafka::start(&KafkaStart {
        dir: &dir.join("kafka"),
        env_id: &opts.id,
        ports: kafka_ports,
        lifetime: opts.lifetime,
        cpus: opts.broker_cpus.clone(),
        classpath: &classpath,
    });
    let mysql = mysql.map(|h| h.join().expect("the MariaDB start thread panicked")).transpose();

    let (kafka, mysql) = match (kafka, mysql) {
        (Ok(k), Ok(m)) => (k, m),
        (k, m) => {
            // Stop whichever half did start, then report the first failure.
            if let Ok(k) = &k {
                stop_pid(k.pid, dir);
            }
            if let Ok(Some(m)) = &m {
                stop_pid(m.pid, dir);
            }
            return Err(k.err().or(m.err()).expect("one side failed"));
        }
    };
    let descriptor = EnvDescriptor {
        schema: DESCRIPTOR_SCHEMA,
        id: opts.id.clone(),
        backend: "native".into(),
        dir: dir.to_owned(),
        started_ts_ms: clock::now_ms(),
        kafka,
        mysql,
    };
    let json = serde_json::to_vec_pretty(&descriptor)?;
    streamlab_record::jsonl::write_atomic(&dir.join(DESCRIPTOR_FILE), &json)?;
    Ok(descriptor)
}

/// Stop every service of the environment; remove its directory unless `keep`.
pub fn down(env: &EnvDescriptor, keep: bool) -> Result<()> {
    // Kafka first: a broker shutting down does not need the database, and it is the slower one.
    stop_pid(env.kafka.pid, &env.dir);
    if let Some(m) = &env.mysql {
        stop_pid(m.pid, &env.dir);
    }
    if !keep {
        std::fs::remove_dir_all(&env.dir).with_context(|| format!("cannot remove {}", env.dir.display()))?;
    }
    Ok(())
}

fn stop_pid(pid: Option<u32>, dir: &Path) {
    if let Some(pid) = pid
        && process::is_ours(pid, &dir.to_string_lossy())
    {
        process::terminate(pid, Duration::from_secs(20));
    }
}

/// Pids of the environment's services that are still running.
pub fn running_pids(env: &EnvDescriptor) -> Vec<u32> {
    let marker = env.dir.to_string_lossy();
    [env.kafka.pid, env.mysql.as_ref().and_then(|m| m.pid)]
        .into_iter()
        .flatten()
        .filter(|&pid| process::is_alive(pid) && process::is_ours(pid, &marker))
        .collect()
}
