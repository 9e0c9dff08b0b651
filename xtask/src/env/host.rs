//! Where an environment's commands run. Kafka and MariaDB/MySQL build their commands once, as
//! [`Cmd`] values of the workspace's process layer, and hand them to a [`ServiceHost`]: the native host runs them on this
//! machine, the docker host in containers of the pinned images (with the environment's directory mounted at
//! the same path, so every path in a command or config file means the same thing inside and out).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use streamlab_process::{Cmd, Output};
use streamlab_record::EnvDescriptor;
use streamlab_record::descriptor::{BackendKind, DESCRIPTOR_FILE, DESCRIPTOR_SCHEMA};

use super::backend::EnvSpec;
use super::kafka::{self, KafkaPorts, KafkaStart};
use super::mariadb::{self, Server};
use super::pins::KafkaPin;
use super::process::{self, Lifetime};
use streamlab_process::ports;

/// Which service a command belongs to (a container host picks the image by it, and names a service's
/// container by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The single broker, and Kafka's one-shot tools (storage format, readiness probes).
    Kafka,
    /// One node of a cluster, by `node.id`.
    Broker(u32),
    Mysql,
}

impl Role {
    pub fn name(self) -> String {
        match self {
            Role::Kafka => "kafka".into(),
            Role::Broker(id) => format!("kafka-{id}"),
            Role::Mysql => "mysql".into(),
        }
    }
}

/// How long a one-shot command (storage format, a readiness probe, SQL) may run.
pub const ONE_SHOT_TIMEOUT: Duration = Duration::from_secs(300);

pub trait ServiceHost: Sync {
    /// The java that runs the broker and Kafka's tools.
    fn java(&self) -> PathBuf;
    /// The MariaDB/MySQL server this host runs, or why there is none.
    fn mysql_server(&self) -> Result<Server>;
    /// Run `cmd` to its end (with its stdin bytes, if it has any), collecting its output; killed after
    /// [`ONE_SHOT_TIMEOUT`].
    fn output(&self, role: Role, cmd: Cmd) -> Result<Output>;
    /// Start a service whose stdout and stderr are appended to `log`, on `cpus` if given; returns its pid
    /// on this machine.
    fn spawn(&self, role: Role, cmd: Cmd, log: &Path, cpus: Option<&[usize]>) -> Result<u32>;
    /// Stop a service started by [`ServiceHost::spawn`]: SIGTERM, then SIGKILL after `grace`.
    fn stop(&self, role: Role, pid: u32, grace: Duration);
    /// Collect what a service that ended (a fault killed it) left behind, so its role can be spawned again:
    /// its exit status here, its container in docker.
    fn reclaim(&self, role: Role, pid: u32);
}

/// This machine's own JDK and database server.
pub struct NativeHost {
    pub lifetime: Lifetime,
}

impl ServiceHost for NativeHost {
    fn java(&self) -> PathBuf {
        super::kafka::java()
    }

    fn mysql_server(&self) -> Result<Server> {
        super::mariadb::find_server().context(
            "no MariaDB/MySQL server binary (mariadbd or mysqld) found; on Debian/Ubuntu: apt-get install mariadb-server",
        )
    }

    fn output(&self, _role: Role, cmd: Cmd) -> Result<Output> {
        cmd.output(ONE_SHOT_TIMEOUT)
    }

    fn spawn(&self, _role: Role, mut cmd: Cmd, log: &Path, cpus: Option<&[usize]>) -> Result<u32> {
        cmd = cmd.lifetime(self.lifetime).log_to(log);
        if let Some(cpus) = cpus {
            cmd = cmd.cpus(cpus);
        }
        // The pid is tracked through the descriptor and stopped by it (process::terminate also reaps it).
        Ok(cmd.spawn()?.release())
    }

    fn stop(&self, _role: Role, pid: u32, grace: Duration) {
        process::terminate(pid, grace);
    }

    fn reclaim(&self, _role: Role, pid: u32) {
        process::reap(pid);
    }
}

/// How long a service gets to stop on SIGTERM when a start failed half-way.
const FAILED_START_GRACE: Duration = Duration::from_secs(5);

/// Start Kafka (and MariaDB/MySQL if `spec` asks) on `host` in `spec`'s directory, wait until every listener
/// answers, and write the descriptor. On failure, what started is stopped again (the caller removes the
/// directory and anything else of its own).
pub fn start_services(host: &dyn ServiceHost, spec: &EnvSpec, kind: BackendKind) -> Result<EnvDescriptor> {
    let dir = spec.dir();
    let classpath = broker_classpath(spec.kafka)?;
    let probe_classpath = kafka::probe_classpath()?;
    let brokers = spec.brokers.max(1);
    let free = ports::free_loopback_ports(5 * brokers + 1)?;
    let mut kafka_ports: Vec<KafkaPorts> = free.chunks(5).take(brokers).map(KafkaPorts::from_slice).collect();
    if let Some(fixed) = spec.kafka_ports {
        kafka_ports[0] = fixed;
    }
    let mysql_port = free[5 * brokers];
    // Every service is spawned from this thread (PR_SET_PDEATHSIG follows the spawning thread); MariaDB
    // starts in ~1 s while the JVM warms up.
    let launched = kafka::launch(
        host,
        &KafkaStart {
            dir: &dir.join("kafka"),
            env_id: &spec.id,
            ports: kafka_ports,
            cpus: spec.broker_cpus.clone(),
            pin: spec.kafka,
            classpath,
            probe_classpath,
        },
    )?;
    let mysql = match spec.with_mysql.then(|| mariadb::start(host, &dir.join("mysql"), mysql_port)).transpose() {
        Ok(m) => m,
        Err(e) => {
            launched.stop();
            return Err(e);
        }
    };
    let kafka = match launched.wait_ready() {
        Ok(k) => k,
        Err(e) => {
            if let Some(pid) = mysql.as_ref().and_then(|m| m.pid) {
                host.stop(Role::Mysql, pid, FAILED_START_GRACE);
            }
            return Err(e);
        }
    };
    let descriptor = EnvDescriptor {
        schema: DESCRIPTOR_SCHEMA,
        id: spec.id.clone(),
        backend: kind,
        dir: dir.clone(),
        started_ts_ms: crate::clock::now_ms(),
        kafka,
        mysql,
    };
    write_descriptor(&descriptor)?;
    Ok(descriptor)
}

/// `<dir>/env.json`, atomically: arms may read it the moment it exists.
pub fn write_descriptor(d: &EnvDescriptor) -> Result<()> {
    streamlab_process::files::write_atomic(&d.dir.join(DESCRIPTOR_FILE), &serde_json::to_vec_pretty(d)?)
}

/// The broker's classpath (`pin`'s jars), as one java argument.
pub fn broker_classpath(pin: &KafkaPin) -> Result<OsString> {
    std::env::join_paths(pin.classpath()?).context("a jar path contains ':'")
}

/// Pids of the environment's services that still run here (a pid is the service's only while its command
/// line names the environment's directory).
pub fn running_pids(env: &EnvDescriptor) -> Vec<u32> {
    let marker = env.dir.to_string_lossy();
    service_pids(env).into_iter().filter(|&pid| process::is_alive(pid) && process::is_ours(pid, &marker)).collect()
}

/// Every service pid the descriptor names: each broker, then the database server.
pub fn service_pids(env: &EnvDescriptor) -> Vec<u32> {
    env.kafka.pids().into_iter().chain(env.mysql.as_ref().and_then(|m| m.pid)).collect()
}

/// The database server's version, if the environment has one: `mariadb` or `mysql` -> `VERSION()`.
pub fn server_versions(d: &EnvDescriptor) -> BTreeMap<String, String> {
    d.mysql.iter().map(|m| (m.flavour.clone(), m.version.clone())).collect()
}
