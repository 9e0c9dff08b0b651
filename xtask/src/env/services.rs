//! An environment's services on a [`ServiceHost`]: Kafka (from its class archive on this machine) and
//! MariaDB/MySQL started and waited for, the descriptor written, and what of them still runs.

use std::collections::BTreeMap;
use std::ffi::OsString;

use anyhow::{Context, Result};
use streamlab_process::ports;
use streamlab_record::EnvDescriptor;
use streamlab_record::descriptor::{BackendKind, DESCRIPTOR_FILE, DESCRIPTOR_SCHEMA};

use super::backend::EnvSpec;
use super::class_archive;
use super::host::{Role, ServiceHost};
use super::kafka::{self, Archive, KafkaPorts, KafkaStart};
use super::mariadb;
use super::pins::KafkaPin;
use super::process;

/// How long a service gets to stop on SIGTERM when a start failed half-way.
const FAILED_START_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// How many times the services start on fresh ports when one found its port taken.
const BIND_ATTEMPTS: u32 = 3;

/// Start Kafka (and MariaDB/MySQL if `spec` asks) on `host` in `spec`'s directory, wait until every listener
/// answers, and write the descriptor. On failure, what started is stopped again (the caller removes the
/// directory and anything else of its own).
///
/// A free port can be taken between our choosing it and the service binding it: another environment or a Kafka
/// Connect worker choosing ports at the same moment binds it first. That start fails on "Address already in use"
/// and the services start again, from empty directories, on ports chosen afresh (not when the caller fixed them).
pub fn start_services(host: &dyn ServiceHost, spec: &EnvSpec, kind: BackendKind) -> Result<EnvDescriptor> {
    let start = || start_once(host, spec, kind);
    if spec.kafka_ports.is_some() {
        return start();
    }
    again_if_port_taken(start, || {
        for service in ["kafka", "mysql"] {
            let _ = std::fs::remove_dir_all(spec.dir().join(service));
        }
    })
}

/// `start`, and up to [`BIND_ATTEMPTS`] in all while it fails on a port taken, with `clean` before each retry.
fn again_if_port_taken<T>(mut start: impl FnMut() -> Result<T>, mut clean: impl FnMut()) -> Result<T> {
    let mut attempt = 1;
    loop {
        match start() {
            Err(e) if attempt < BIND_ATTEMPTS && is_port_taken(&e) => {
                tracing::warn!("a service found its port taken; starting again on fresh ports: {e:#}");
                clean();
                attempt += 1;
            }
            started => return started,
        }
    }
}

/// Whether a start failed because a port it was given was bound by someone else first.
pub(super) fn is_port_taken(e: &anyhow::Error) -> bool {
    format!("{e:#}").contains("Address already in use")
}

fn start_once(host: &dyn ServiceHost, spec: &EnvSpec, kind: BackendKind) -> Result<EnvDescriptor> {
    let dir = spec.dir();
    let classpath = broker_classpath(spec.kafka)?;
    let probe_classpath = super::listener_probe::probe_classpath()?;
    let brokers = spec.brokers.max(1);
    let free = ports::free_loopback_ports(5 * brokers + 1)?;
    let mut kafka_ports: Vec<KafkaPorts> = free.chunks(5).take(brokers).map(KafkaPorts::from_slice).collect();
    if let Some(fixed) = spec.kafka_ports {
        kafka_ports[0] = fixed;
    }
    let mysql_port = free[5 * brokers];
    // Every service is spawned from this thread (PR_SET_PDEATHSIG follows the spawning thread); MariaDB
    // starts in ~1 s while the JVM warms up.
    let mut start = KafkaStart {
        dir: &dir.join("kafka"),
        env_id: &spec.id,
        ports: kafka_ports,
        cpus: spec.broker_cpus.clone(),
        pin: spec.kafka,
        classpath,
        probe_classpath,
        archive: None,
    };
    // Native brokers only: a container's JVM is the image's, and its cache mount is read-only.
    if kind == BackendKind::Native {
        start.archive = class_archive::for_brokers(host, &start).map(Archive::Use);
    }
    let launched = kafka::launch(host, &start)?;
    let mysql = match spec.with_mysql.then(|| mariadb::start(host, &dir.join("mysql"), mysql_port)).transpose() {
        Ok(m) => m,
        Err(e) => {
            launched.stop();
            return Err(e);
        }
    };
    let mut kafka = match launched.wait_ready() {
        Ok(k) => k,
        Err(e) => {
            if let Some(pid) = mysql.as_ref().and_then(|m| m.pid) {
                host.stop(Role::Mysql, pid, FAILED_START_GRACE);
            }
            return Err(e);
        }
    };
    if let Some(Archive::Use(archive)) = start.archive {
        kafka.start_archive = class_archive::taken(archive, &kafka.pids());
    }
    let descriptor = EnvDescriptor {
        schema: DESCRIPTOR_SCHEMA,
        id: spec.id.clone(),
        backend: kind,
        dir: dir.clone(),
        started_ts_ms: streamlab_process::clock::now_ms(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_that_found_its_port_taken_runs_again_and_any_other_failure_does_not() {
        let (mut starts, mut cleans) = (0, 0);
        let taken = again_if_port_taken(
            || {
                starts += 1;
                match starts {
                    1 => anyhow::bail!("broker 2 exited before it was ready; Address already in use"),
                    _ => Ok(starts),
                }
            },
            || cleans += 1,
        );
        assert_eq!((taken.unwrap(), cleans), (2, 1), "the second start, after one clean");

        // A start that always fails the same way: how many times it ran, and its error.
        let failing = |why: &'static str| {
            let mut starts = 0;
            let e = again_if_port_taken::<()>(|| (starts += 1, Err(anyhow::anyhow!(why))).1, || {}).unwrap_err();
            (starts, e.to_string())
        };
        assert_eq!(failing("Address already in use").0, BIND_ATTEMPTS, "bounded");
        assert_eq!(failing("listener ssl did not answer"), (1, "listener ssl did not answer".into()));
    }
}
