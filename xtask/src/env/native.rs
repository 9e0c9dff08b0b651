//! The native backend: Kafka from pinned jars on the system JDK plus the system's MariaDB/MySQL, each
//! environment in its own directory under target/streamlab/envs/<id>.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use streamlab_record::EnvDescriptor;
use streamlab_record::descriptor::BackendKind;
use streamlab_record::fault::{FaultRequest, FaultResult};
use streamlab_record::provenance::EnvInfo;

use super::backend::{self, Backend, EnvSpec, Environment};
use super::host::{self, NativeHost};
use super::pins::KafkaPin;
use super::services;
use super::{fault, pins, process};

/// How long a service gets to stop on SIGTERM at `down --keep`.
const STOP_GRACE: Duration = Duration::from_secs(20);

pub struct NativeBackend;

impl Backend for NativeBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Native
    }

    fn can_cap_broker(&self, cores: usize) -> std::result::Result<(), String> {
        super::broker_cpus(cores).map(|_| ())
    }

    fn prepare_what(&self) -> String {
        let cache = crate::paths::cache_dir();
        format!(
            "the pinned Kafka {} jars (downloaded once into {}, every SHA-256 verified)",
            pins::kafka_version(),
            cache.display()
        )
    }

    fn prepare(&self) -> Result<()> {
        pins::kafka_classpath().map(drop)
    }

    /// Start Kafka (and MariaDB/MySQL if asked) and write the descriptor. On failure, nothing is left running
    /// and the directory is gone.
    fn up(&self, spec: &EnvSpec) -> Result<Box<dyn Environment>> {
        let dir = spec.dir();
        std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let started = services::start_services(&NativeHost { lifetime: spec.lifetime }, spec, BackendKind::Native);
        match started {
            Ok(descriptor) => {
                Ok(Box::new(NativeEnv { descriptor: Some(descriptor), kafka: spec.kafka, lifetime: spec.lifetime }))
            }
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                Err(e)
            }
        }
    }

    fn down(&self, env: &EnvDescriptor, keep: bool) -> Result<()> {
        down(env, keep)
    }

    fn running_pids(&self, env: &EnvDescriptor) -> Vec<u32> {
        services::running_pids(env)
    }
}

/// A running native environment; stopped and removed when dropped (also on error and Ctrl-C).
pub struct NativeEnv {
    /// `None` once handed over by [`Environment::keep_running`].
    descriptor: Option<EnvDescriptor>,
    /// The Kafka it runs, and how its services are tied to us: what a broker started again after a fault gets.
    kafka: &'static KafkaPin,
    lifetime: process::Lifetime,
}

impl NativeEnv {
    fn d(&self) -> &EnvDescriptor {
        self.descriptor.as_ref().expect("a kept environment is not used again")
    }
}

impl Environment for NativeEnv {
    fn descriptor(&self) -> &EnvDescriptor {
        self.d()
    }

    fn cap_broker(&self, cores: usize) -> Result<Option<String>> {
        let pids = self.d().kafka.pids();
        if pids.is_empty() {
            return Ok(None);
        }
        let cpus = super::broker_cpus(cores).map_err(anyhow::Error::msg)?.unwrap_or_default();
        for pid in pids {
            process::set_affinity(pid, &cpus)?;
        }
        Ok(Some(if cpus.is_empty() { "all CPUs".into() } else { format!("CPUs {cpus:?} (affinity)") }))
    }

    fn place_broker(&self, cpus: &[usize]) -> Result<bool> {
        let pids = self.d().kafka.pids();
        for &pid in &pids {
            process::set_affinity(pid, cpus)?;
        }
        Ok(!pids.is_empty())
    }

    fn service_pids(&self) -> Vec<u32> {
        services::running_pids(self.d())
    }

    fn info(&self) -> EnvInfo {
        backend::env_info(self.d(), true, None)
    }

    fn versions(&self) -> BTreeMap<String, String> {
        let mut v = services::server_versions(self.d());
        v.insert("kafka".into(), self.d().kafka.version.clone());
        // The JDK the broker runs on ($JAVA_HOME/bin/java, else java on PATH).
        if let Some(java) = crate::tools::first_line_of(&host::java().to_string_lossy(), &["-version"]) {
            v.insert("java".into(), java);
        }
        v
    }

    fn inject_fault(&mut self, request: &FaultRequest) -> FaultResult {
        let host = NativeHost { lifetime: self.lifetime };
        let d = self.descriptor.as_mut().expect("a kept environment is not used again");
        fault::inject(&host, d, self.kafka, request)
    }

    fn keep_running(mut self: Box<Self>) -> EnvDescriptor {
        self.descriptor.take().expect("kept once")
    }
}

impl Drop for NativeEnv {
    fn drop(&mut self) {
        if let Some(d) = &self.descriptor
            && let Err(e) = down(d, false)
        {
            eprintln!("warning: could not tear down environment {}: {e:#}", d.id);
        }
    }
}

/// Stop every service of the environment; remove its directory unless `keep`.
fn down(env: &EnvDescriptor, keep: bool) -> Result<()> {
    // Services whose data is removed next are killed: nothing of them is kept, and a cluster's brokers shutting
    // down cleanly took 5.9 s here (each waits on a quorum going away with it), one broker 0.4 s. Kept data gets a
    // clean shutdown, the brokers together (one after another, the last would wait out its grace for a quorum
    // already gone), Kafka first: a broker shutting down does not need the database.
    let grace = if keep { STOP_GRACE } else { Duration::ZERO };
    process::terminate_all(&ours(&env.kafka.pids(), &env.dir), grace);
    if let Some(pid) = env.mysql.as_ref().and_then(|m| m.pid) {
        process::terminate_all(&ours(&[pid], &env.dir), grace);
    }
    if !keep {
        std::fs::remove_dir_all(&env.dir).with_context(|| format!("cannot remove {}", env.dir.display()))?;
    }
    Ok(())
}

/// The pids among `pids` that are still this environment's processes.
fn ours(pids: &[u32], dir: &Path) -> Vec<u32> {
    // A service that died on its own is a zombie until we collect it, and a zombie's command line is empty:
    // reap it first, or it would stay until xtask exits (a long run would gather them).
    pids.iter().for_each(|&pid| process::reap(pid));
    pids.iter().copied().filter(|&pid| process::is_ours(pid, &dir.to_string_lossy())).collect()
}

/// Pids of every process whose command line mentions `dir` (a leak check for tests).
#[cfg(test)]
pub fn processes_mentioning(dir: &Path) -> Vec<u32> {
    let marker = dir.to_string_lossy();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != std::process::id() && process::is_alive(pid) && process::is_ours(pid, &marker))
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use std::net::{Ipv4Addr, TcpListener};

    use streamlab_record::descriptor::DESCRIPTOR_FILE;

    use super::*;
    use crate::env::kafka::KafkaPorts;
    use crate::env::mariadb;
    use crate::env::services::running_pids;
    use streamlab_process::ports;

    fn options(root: &Path, with_mysql: bool) -> EnvSpec {
        EnvSpec { root: root.to_owned(), with_mysql, ..EnvSpec::new("t-", pins::default_pin()) }
    }

    /// Up, and handed over to the test (which calls `down` itself).
    fn up(spec: &EnvSpec) -> Result<EnvDescriptor> {
        NativeBackend.up(spec).map(|env| env.keep_running())
    }

    /// A real client round-trips a record on each of the five listeners.
    pub(crate) fn assert_probe_answers_on_every_listener(env: &EnvDescriptor) {
        let probe = streamlab_process::Cmd::new(crate::paths::harness_binary())
            .args(["probe", "--env"])
            .arg(env.dir.join(DESCRIPTOR_FILE))
            .output(Duration::from_secs(120))
            .unwrap();
        assert!(probe.status.success(), "probe failed: {}", probe.stderr);
        let report: std::collections::BTreeMap<String, String> = serde_json::from_str(&probe.stdout).unwrap();
        assert_eq!(report.len(), 5);
        assert!(report.values().all(|v| v == "ok"), "{report:?}");
    }

    #[test]
    #[ignore = "starts Kafka and MariaDB: cargo xtask test"]
    fn an_environment_comes_up_serves_every_listener_and_goes_down_without_leftovers() {
        let root = tempfile::tempdir().unwrap();
        let started = std::time::Instant::now();
        let env = up(&options(root.path(), true)).unwrap();
        eprintln!("environment ready after {:.1} s", started.elapsed().as_secs_f64());
        assert_eq!(env.kafka.version, "4.1.0");
        assert_eq!(env.kafka.listeners.len(), 5);
        // The broker started from the class archive (dumped by a broker of its own on a cold cache) and mapped it.
        let archive = env.kafka.start_archive.as_ref().expect("a native broker starts from the class archive");
        assert!(crate::env::class_archive::mapped_by(env.kafka.pid.unwrap(), archive), "{}", archive.display());

        // A real client round-trips a record on each of the five listeners.
        assert_probe_answers_on_every_listener(&env);

        let m = env.mysql.as_ref().unwrap();
        assert_eq!(m.flavour, "mariadb");
        let password = streamlab_record::descriptor::read_secret(&m.password_file).unwrap();
        let row =
            mariadb::query_tcp_with("mariadb", m.port, &password, "SELECT 1, @@binlog_format, @@binlog_row_image")
                .unwrap();
        assert_eq!(row.trim(), "1\tROW\tFULL");
        assert!(mariadb::query_tcp_with("mariadb", m.port, "wrong", "SELECT 1").is_err(), "a wrong password got in");

        down(&env, false).unwrap();
        assert!(running_pids(&env).is_empty());
        assert!(processes_mentioning(&env.dir).is_empty(), "processes left: {:?}", processes_mentioning(&env.dir));
        assert!(!env.dir.exists(), "the environment directory was not removed");
    }

    #[test]
    #[ignore = "starts Kafka: cargo xtask test"]
    fn a_kafka_3_9_1_broker_comes_up_from_its_own_pins_and_serves_every_listener() {
        let root = tempfile::tempdir().unwrap();
        let opts = EnvSpec { kafka: pins::pin("3.9.1").unwrap(), ..options(root.path(), false) };
        let env = up(&opts).unwrap();
        assert_eq!(env.kafka.version, "3.9.1", "the broker logs the version it runs");
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", env.kafka.pid.unwrap())).unwrap();
        let cmdline = String::from_utf8_lossy(&cmdline);
        assert!(cmdline.contains("kafka_2.13-3.9.1.jar") && !cmdline.contains("kafka_2.13-4.1.0.jar"), "{cmdline}");
        assert_probe_answers_on_every_listener(&env);
        down(&env, false).unwrap();
        assert!(processes_mentioning(&env.dir).is_empty());
    }

    #[test]
    #[ignore = "starts Kafka: cargo xtask test"]
    fn a_broker_that_cannot_start_fails_with_the_tail_of_its_log() {
        let root = tempfile::tempdir().unwrap();
        // Hold the port the broker is told to use.
        let held = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let mut ports = ports::free_loopback_ports(5).unwrap();
        ports[0] = held.local_addr().unwrap().port();
        let opts = EnvSpec { kafka_ports: Some(KafkaPorts::from_slice(&ports)), ..options(root.path(), false) };
        let err = format!("{:#}", up(&opts).unwrap_err());
        assert!(err.contains("last lines of"), "no log tail in: {err}");
        assert!(err.contains("Address already in use"), "the cause is not in the tail: {err}");
        assert!(super::services::is_port_taken(&anyhow::anyhow!(err.clone())), "a start on free ports would retry");
        let dir = root.path().join(&opts.id);
        assert!(!dir.exists(), "a failed start left its directory behind");
        assert!(processes_mentioning(&dir).is_empty());
    }
}
