//! The native backend: Kafka from pinned jars on the system JDK plus the system's MariaDB/MySQL,
//! each environment in its own directory under target/streamlab/envs/<id>.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use streamlab_record::EnvDescriptor;
use streamlab_record::descriptor::{DESCRIPTOR_FILE, DESCRIPTOR_SCHEMA};
use streamlab_record::provenance::EnvInfo;
use streamlab_record::run_spec::Need;

use super::backend::{self, Backend, Environment};
use super::host::NativeHost;

use super::kafka::{self, KafkaPorts, KafkaStart};
use super::pins::KafkaPin;
use super::process::{self, Lifetime};
use super::{mariadb, pins, ports};
use crate::clock;

pub struct NativeOptions {
    /// Parent of the environment directory.
    pub root: PathBuf,
    /// Environment id; also the directory name.
    pub id: String,
    pub with_mysql: bool,
    /// The Kafka version to run.
    pub kafka: &'static KafkaPin,
    /// Pin the broker to these CPUs.
    pub broker_cpus: Option<Vec<usize>>,
    pub lifetime: Lifetime,
    /// Fixed Kafka ports instead of free ones (tests use this to provoke a bind failure).
    pub kafka_ports: Option<KafkaPorts>,
}

/// The native backend as the lab runner uses it: Kafka (and MariaDB/MySQL if a matrix needs it) under
/// target/streamlab/envs, tied to the runner's life.
pub struct NativeBackend;

impl Backend for NativeBackend {
    fn name(&self) -> &'static str {
        "native"
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

    fn up(&self, run_id: &str, needs: &[Need], kafka: &'static KafkaPin) -> Result<Box<dyn Environment>> {
        let opts = NativeOptions {
            root: crate::paths::envs_dir(),
            // A fresh id per attempt: a resumed run never trips over a killed attempt's storage.
            id: format!("lab-{run_id}-{:04x}", rand::random::<u16>()),
            with_mysql: needs.contains(&Need::Mysql),
            kafka,
            broker_cpus: None,
            lifetime: Lifetime::TiedToParent,
            kafka_ports: None,
        };
        Ok(Box::new(NativeEnv { descriptor: up(&opts)? }))
    }
}

/// A running native environment; stopped and removed when dropped (also on error and Ctrl-C).
pub struct NativeEnv {
    descriptor: EnvDescriptor,
}

impl Environment for NativeEnv {
    fn descriptor(&self) -> &EnvDescriptor {
        &self.descriptor
    }

    fn cap_broker(&self, cores: usize) -> Result<Option<String>> {
        let Some(pid) = self.descriptor.kafka.pid else { return Ok(None) };
        let cpus = super::broker_cpus(cores).map_err(anyhow::Error::msg)?.unwrap_or_default();
        process::set_affinity(pid, &cpus)?;
        Ok(Some(if cpus.is_empty() { "all CPUs".into() } else { format!("CPUs {cpus:?} (affinity)") }))
    }

    fn place_broker(&self, cpus: &[usize]) -> Result<bool> {
        let Some(pid) = self.descriptor.kafka.pid else { return Ok(false) };
        process::set_affinity(pid, cpus)?;
        Ok(true)
    }

    fn service_pids(&self) -> Vec<u32> {
        running_pids(&self.descriptor)
    }

    fn info(&self) -> EnvInfo {
        backend::env_info(&self.descriptor, true, None)
    }

    fn versions(&self) -> BTreeMap<String, String> {
        let mut v = backend::server_versions(&self.descriptor);
        v.insert("kafka".into(), self.descriptor.kafka.version.clone());
        // The JDK the broker runs on ($JAVA_HOME/bin/java, else java on PATH).
        if let Some(java) = crate::tools::first_line_of(&kafka::java().to_string_lossy(), &["-version"]) {
            v.insert("java".into(), java);
        }
        v
    }
}

impl Drop for NativeEnv {
    fn drop(&mut self) {
        if let Err(e) = down(&self.descriptor, false) {
            eprintln!("warning: could not tear down environment {}: {e:#}", self.descriptor.id);
        }
    }
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
    let (classpath, tools_classpath) = classpaths(opts.kafka)?;
    let host = NativeHost { lifetime: opts.lifetime };
    let free = ports::free_loopback_ports(6)?;
    let kafka_ports = opts.kafka_ports.unwrap_or_else(|| KafkaPorts::from_slice(&free));
    let mysql_port = free[5];

    // Every service is spawned from this thread (PR_SET_PDEATHSIG follows the spawning thread);
    // MariaDB starts in ~1 s while the JVM warms up.
    let launched = kafka::launch(
        &host,
        &KafkaStart {
            dir: &dir.join("kafka"),
            env_id: &opts.id,
            ports: kafka_ports,
            cpus: opts.broker_cpus.clone(),
            pin: opts.kafka,
            classpath,
            tools_classpath,
        },
    )?;
    let mysql = match opts.with_mysql.then(|| mariadb::start(&host, &dir.join("mysql"), mysql_port)) {
        Some(Err(e)) => {
            launched.stop();
            return Err(e);
        }
        Some(Ok(m)) => Some(m),
        None => None,
    };
    let kafka = match launched.wait_ready() {
        Ok(k) => k,
        Err(e) => {
            if let Some(m) = &mysql {
                stop_pid(m.pid, dir);
            }
            return Err(e);
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

/// The broker's classpath (`pin`'s jars) and the tools' (the default pin's), each as one java argument.
pub fn classpaths(pin: &KafkaPin) -> Result<(std::ffi::OsString, std::ffi::OsString)> {
    let join = |jars: Vec<PathBuf>| std::env::join_paths(jars).context("a jar path contains ':'");
    Ok((join(pin.classpath()?)?, join(pins::kafka_classpath()?)?))
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
mod tests {
    use std::net::{Ipv4Addr, TcpListener};

    use super::*;

    fn options(root: &Path, with_mysql: bool) -> NativeOptions {
        NativeOptions {
            root: root.to_owned(),
            id: new_id("t-"),
            with_mysql,
            kafka: pins::default_pin(),
            broker_cpus: None,
            lifetime: Lifetime::TiedToParent,
            kafka_ports: None,
        }
    }

    fn harness_binary() -> PathBuf {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map_or_else(|| crate::paths::repo_root().join("target"), PathBuf::from);
        target.join("release").join("harness")
    }

    /// A real client round-trips a record on each of the five listeners.
    fn assert_probe_answers_on_every_listener(env: &EnvDescriptor) {
        let probe = streamlab_process::Cmd::new(harness_binary())
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
        let opts = NativeOptions { kafka: pins::pin("3.9.1").unwrap(), ..options(root.path(), false) };
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
        let opts = NativeOptions { kafka_ports: Some(KafkaPorts::from_slice(&ports)), ..options(root.path(), false) };
        let err = format!("{:#}", up(&opts).unwrap_err());
        assert!(err.contains("last lines of"), "no log tail in: {err}");
        assert!(err.contains("Address already in use"), "the cause is not in the tail: {err}");
        let dir = root.path().join(&opts.id);
        assert!(!dir.exists(), "a failed start left its directory behind");
        assert!(processes_mentioning(&dir).is_empty());
    }
}
