//! The client tools the lab builds or pins for the clients matrix, as xtask describes them in the JSON file
//! that `STREAMLAB_TOOLS` names: the `rdkafka_performance` builds (one per librdkafka version) and the Java
//! perf tools' classpath. xtask writes it (xtask/src/clients/), the harness's client arms read it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The environment variable the runner sets to the tools file.
pub const TOOLS_ENV: &str = "STREAMLAB_TOOLS";

/// A program an arm runs that the lab builds or locates before the run: each arm declares its own
/// (`harness arms --json`), and xtask prepares those of the arms a run has, no others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tool {
    /// `rdkafka_performance`, built against each librdkafka version the C tool arms name.
    RdkafkaPerformance,
    /// Kafka's Java perf tools (ProducerPerformance, ConsumerPerformance) on the pinned jars.
    JavaPerfTools,
    /// partitionline's bench loops in seed 003's cargo profile.
    PartitionlineBench,
    /// The Java producer that writes a ledger, compiled by javac.
    LedgerProducer,
}

impl Tool {
    pub const ALL: [Tool; 4] =
        [Tool::RdkafkaPerformance, Tool::JavaPerfTools, Tool::PartitionlineBench, Tool::LedgerProducer];
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Tools {
    /// librdkafka version (`2.12.1`, `2.15.0`) -> its `rdkafka_performance` build.
    #[serde(default)]
    pub rdkafka_performance: BTreeMap<String, CTool>,
    #[serde(default)]
    pub java: Option<JavaTools>,
    /// Kafka Connect and the Debezium plugins (the mysql_cdc matrix).
    #[serde(default)]
    pub connect: Option<ConnectTools>,
    /// A Redpanda Connect binary the user pointed the lab at (never fetched or built by the lab).
    #[serde(default)]
    pub redpanda_connect: Option<RedpandaConnect>,
    /// The durability matrix's Java producer that writes a ledger of every acknowledgement.
    #[serde(default)]
    pub ledger_producer: Option<LedgerProducer>,
    /// partitionline's bench loops as seed 003 built them (the clients matrix's partitionline arm).
    #[serde(default)]
    pub partitionline_bench: Option<SeedBuild>,
}

/// A binary the lab builds in a seed's own cargo profile.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SeedBuild {
    pub path: PathBuf,
    /// The profile and what it sets, e.g. `cargo build --profile seed-003: opt-level 3, lto thin, codegen-units 1,
    /// debug off`.
    pub build: String,
}

/// The Java ledger-writing producer (harness/src/drivers/java/LedgerProducer.java), compiled by the lab.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LedgerProducer {
    pub java: PathBuf,
    /// The directory of the compiled class first, then the pinned jars (kafka-clients and its dependencies).
    pub classpath: Vec<PathBuf>,
    pub main_class: String,
    /// e.g. `org.apache.kafka:kafka-clients:4.1.0`.
    pub kafka_clients: String,
    /// `java -version`'s first line.
    pub java_version: String,
    /// `javac -version` and the source's SHA-256, for provenance.
    pub build: String,
}

/// Kafka Connect on the pinned jars: one classpath per plugin (the worker's jars plus the plugin's), so each
/// worker the lab starts loads exactly one connector family.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConnectTools {
    pub java: PathBuf,
    /// `java -version`'s first line.
    pub java_version: String,
    /// e.g. `org.apache.kafka:connect-runtime:4.1.0`.
    pub connect_runtime: String,
    /// Plugin name (`debezium-mariadb`, `debezium-jdbc`) -> its worker classpath.
    pub plugins: BTreeMap<String, ConnectPlugin>,
}

/// One connector plugin and the classpath a worker running it gets.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConnectPlugin {
    /// e.g. `io.debezium:debezium-connector-mariadb:3.5.0.Final`.
    pub coordinate: String,
    /// Every jar, verified against `lock` (worker and plugin), in lock order.
    pub classpath: Vec<PathBuf>,
    /// The lock that pins them, relative to the repository (e.g. `env/connect/debezium-mariadb/jars.lock`).
    pub lock: String,
}

/// A Redpanda Connect binary the user named (`STREAMLAB_REDPANDA_CONNECT`); the lab only runs it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RedpandaConnect {
    pub path: PathBuf,
    /// `<binary> --version` as it answered.
    pub version: String,
}

/// One `rdkafka_performance` binary and how it was made (for provenance).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CTool {
    pub path: PathBuf,
    /// What the library reports at run time (`rd_kafka_version_str`), e.g. `2.15.0`.
    pub librdkafka_version: String,
    /// Where the library and the tool's source came from, with their hashes (reads after "librdkafka 2.15.0 ").
    pub source: String,
    pub configure: String,
    pub compiler: String,
}

impl CTool {
    /// The provenance key of the build against librdkafka `library` (xtask's run provenance and each record use it).
    pub fn provenance_key(library: &str) -> String {
        format!("rdkafka_performance ({library})")
    }

    /// The provenance value: library version, sources, configure flags, compiler.
    pub fn describe(&self) -> String {
        format!(
            "librdkafka {} {}; configure {}; {}",
            self.librdkafka_version, self.source, self.configure, self.compiler
        )
    }
}

/// Kafka's Java perf tools (ProducerPerformance, ConsumerPerformance) on the pinned jars.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JavaTools {
    pub java: PathBuf,
    pub classpath: Vec<PathBuf>,
    /// e.g. `org.apache.kafka:kafka-tools:4.1.0`.
    pub kafka_tools: String,
    /// `java -version`'s first line.
    pub java_version: String,
}

impl Tools {
    /// The tools file the runner wrote; an arm run by hand without it is told where it comes from.
    pub fn load() -> Result<Tools, String> {
        let path = std::env::var_os(TOOLS_ENV).ok_or_else(|| {
            format!(
                "{TOOLS_ENV} is not set: the clients arms run the tools `cargo xtask lab run` builds and names there"
            )
        })?;
        let path = PathBuf::from(path);
        let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: not a tools file: {e}", path.display()))
    }

    /// Write the tools file (atomically).
    pub fn save(&self, path: &std::path::Path) -> std::io::Result<()> {
        let json = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        crate::jsonl::write_atomic(path, &json).map_err(std::io::Error::other)
    }

    pub fn c_tool(&self, librdkafka: &str) -> Result<&CTool, String> {
        self.rdkafka_performance.get(librdkafka).ok_or_else(|| {
            let built: Vec<_> = self.rdkafka_performance.keys().collect();
            format!("no rdkafka_performance built against librdkafka {librdkafka} (built: {built:?})")
        })
    }

    pub fn connect(&self) -> Result<&ConnectTools, String> {
        self.connect
            .as_ref()
            .ok_or_else(|| "the tools file names no Kafka Connect (the matrix needs \"connect\")".to_owned())
    }

    pub fn ledger_producer(&self) -> Result<&LedgerProducer, String> {
        self.ledger_producer.as_ref().ok_or_else(|| {
            "the tools file names no Java ledger producer (the matrix needs \"ledger_producer\")".to_owned()
        })
    }

    pub fn java(&self) -> Result<&JavaTools, String> {
        self.java.as_ref().ok_or_else(|| "the tools file names no Java tools".to_owned())
    }
}
