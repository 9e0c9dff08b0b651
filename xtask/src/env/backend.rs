//! One interface for every environment backend. A [`Backend`] is chosen from the flags before anything
//! starts (so caps it cannot apply are known up front; see [`super::choose`]); [`Backend::up`] gives an
//! [`Environment`] that owns the running services and brings them down when dropped (or is kept running,
//! for `env up`). The runner and the `env` commands ask these two what they need and never look at a
//! backend's name. A new backend is its module and one [`BackendKind`] variant.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Result;
use streamlab_record::EnvDescriptor;
use streamlab_record::descriptor::BackendKind;
use streamlab_record::fault::{FaultRequest, FaultResult};
use streamlab_record::provenance::EnvInfo;
use streamlab_record::run_spec::Need;

use super::health::{self, ServiceDown};
use super::kafka::KafkaPorts;
use super::pins::KafkaPin;
use super::process::Lifetime;

/// The brokers of the cluster a matrix asks for with the `kafka_cluster` need: a 3-voter quorum, and room for
/// replication factor 3 with min.insync.replicas 2.
pub const CLUSTER_BROKERS: usize = 3;

/// The Kafka a task runs against: how many brokers, at which version. Each matrix runs on the shape its seed
/// ran (one broker; the cluster only where a matrix needs `kafka_cluster`), and a run brings up one
/// environment per shape, one after the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvShape {
    pub brokers: usize,
    pub kafka: &'static KafkaPin,
}

impl EnvShape {
    /// The brokers a matrix with these needs runs on.
    pub fn brokers_for(needs: &[Need]) -> usize {
        if needs.contains(&Need::KafkaCluster) { CLUSTER_BROKERS } else { 1 }
    }
}

impl std::fmt::Display for EnvShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.brokers {
            1 => write!(f, "1 broker, Kafka {}", self.kafka.version),
            n => write!(f, "{n} brokers, Kafka {}", self.kafka.version),
        }
    }
}

/// What to bring up: where, with which services and versions, and for how long.
#[derive(Debug, Clone)]
pub struct EnvSpec {
    /// Parent of the environment directory.
    pub root: PathBuf,
    /// Environment id; also the directory name and the label of its processes and containers.
    pub id: String,
    pub with_mysql: bool,
    /// Brokers to run: 1, or a cluster of N KRaft nodes in combined mode (each a broker and a controller voter).
    pub brokers: usize,
    /// The Kafka version to run.
    pub kafka: &'static KafkaPin,
    /// Pin the broker to these CPUs.
    pub broker_cpus: Option<Vec<usize>>,
    /// `Detached` for `env up` by hand (runs until `env down`); lab runs and tests die with xtask.
    pub lifetime: Lifetime,
    /// Fixed Kafka ports instead of free ones (tests use this to provoke a failed start).
    pub kafka_ports: Option<KafkaPorts>,
}

impl EnvSpec {
    /// A lab run's environment of `shape` under target/streamlab/envs, with a database server if the run `needs`
    /// one: a fresh id per attempt (a resumed run never trips over a killed attempt's storage), tied to the
    /// runner's life.
    pub fn for_run(run_id: &str, needs: &[Need], shape: EnvShape) -> EnvSpec {
        EnvSpec {
            id: format!("lab-{run_id}-{:04x}", rand::random::<u16>()),
            with_mysql: needs.contains(&Need::Mysql),
            brokers: shape.brokers,
            ..EnvSpec::new(&format!("lab-{run_id}-"), shape.kafka)
        }
    }

    /// An environment under target/streamlab/envs with a fresh id starting with `prefix`: Kafka only, free
    /// ports, uncapped, tied to this process.
    pub fn new(prefix: &str, kafka: &'static KafkaPin) -> EnvSpec {
        EnvSpec {
            root: crate::paths::envs_dir(),
            id: new_id(prefix),
            with_mysql: false,
            brokers: 1,
            kafka,
            broker_cpus: None,
            lifetime: Lifetime::TiedToParent,
            kafka_ports: None,
        }
    }

    pub fn dir(&self) -> PathBuf {
        self.root.join(&self.id)
    }
}

/// A fresh environment id: UTC time plus a random suffix.
pub fn new_id(prefix: &str) -> String {
    let now = streamlab_process::clock::now_ms() / 1000;
    format!("{prefix}{}-{:04x}", crate::clock::compact_utc(now), rand::random::<u16>())
}

pub trait Backend {
    fn kind(&self) -> BackendKind;
    /// `native`, `external`, ...: for messages and records only.
    fn name(&self) -> &'static str {
        self.kind().name()
    }
    /// Whether the broker can be pinned to `cores` CPUs (0 = uncapped); `Err` says why not.
    fn can_cap_broker(&self, cores: usize) -> std::result::Result<(), String>;
    /// Whether this backend starts the broker at the Kafka version a point asks for; `Err` says why not.
    fn can_choose_kafka(&self) -> std::result::Result<(), String> {
        Ok(())
    }
    /// Whether this backend may kill, stop or restart a broker for a fault a point asks for; `Err` says why not.
    fn can_inject_faults(&self) -> std::result::Result<(), String> {
        Ok(())
    }
    /// What [`Backend::prepare`] does, for the line that announces it.
    fn prepare_what(&self) -> String;
    /// Fetch and verify what the services need (pinned artifacts, images), before anything starts.
    fn prepare(&self) -> Result<()>;
    /// Bring up what `spec` asks for; the services stop when the environment is dropped.
    fn up(&self, spec: &EnvSpec) -> Result<Box<dyn Environment>>;
    /// Stop the services of an environment this backend brought up earlier (`env down`), and remove its
    /// directory unless `keep`.
    fn down(&self, env: &EnvDescriptor, keep: bool) -> Result<()>;
    /// Pids of the environment's services that still run on this machine.
    fn running_pids(&self, env: &EnvDescriptor) -> Vec<u32>;
}

pub trait Environment {
    /// What arms read (written to `<dir>/env.json`).
    fn descriptor(&self) -> &EnvDescriptor;
    /// Pin the broker to `cores` CPUs (0 = all again); returns the cap applied, for provenance, or `None`
    /// if this environment leaves the broker alone.
    fn cap_broker(&self, cores: usize) -> Result<Option<String>>;
    /// Pin the broker to exactly these CPUs, apart from the client; `false` if this environment cannot.
    fn place_broker(&self, cpus: &[usize]) -> Result<bool>;
    /// Pids of the services this environment runs on this machine (none for external services).
    fn service_pids(&self) -> Vec<u32>;
    /// What provenance says about the environment.
    fn info(&self) -> EnvInfo;
    /// Versions observed in the environment: broker, database server, the JDK the broker runs on.
    fn versions(&self) -> BTreeMap<String, String>;
    /// The first service whose process has ended (no network: the runner asks while a task runs).
    fn dead_service(&self) -> Option<ServiceDown> {
        health::dead_process(self.descriptor())
    }
    /// Every service alive and answering, or the first one that is not (the runner asks between tasks).
    fn health(&self) -> Result<(), ServiceDown> {
        health::check(self.descriptor())
    }
    /// Inject a fault on one broker (kill -9, SIGSTOP for a while, a clean restart; see [`super::fault`]); a
    /// broker started again has its new pid in the descriptor. An environment that cannot refuses, saying why.
    fn inject_fault(&mut self, request: &FaultRequest) -> FaultResult {
        let backend = self.descriptor().backend;
        FaultResult::refused(request, format!("the {backend} environment does not inject faults"))
    }
    /// Leave the services running past this value (`env up`); `env down` stops them later.
    fn keep_running(self: Box<Self>) -> EnvDescriptor;
}

/// What provenance says about an environment described by `d`.
pub fn env_info(d: &EnvDescriptor, managed: bool, note: Option<&str>) -> EnvInfo {
    EnvInfo {
        backend: d.backend.name().to_owned(),
        managed,
        kafka_version: Some(d.kafka.version.clone()),
        mysql_flavour: d.mysql.as_ref().map(|m| m.flavour.clone()),
        mysql_version: d.mysql.as_ref().map(|m| m.version.clone()),
        cpu_caps: BTreeMap::new(),
        note: note.map(str::to_owned),
        images: Default::default(),
        cluster: None,
        kafka_sizing: managed.then(|| super::kafka::sizing(d.kafka.broker_count(), d.kafka.start_archive.is_some())),
        kafka_settings: Vec::new(),
    }
}
