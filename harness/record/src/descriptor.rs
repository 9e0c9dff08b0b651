//! The environment descriptor: written by `xtask env up` as `<env dir>/env.json`, read by every harness arm.
//!
//! Credentials are files next to the descriptor; the descriptor holds their paths, never the secrets,
//! so it can be logged and a record can never leak one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub const DESCRIPTOR_SCHEMA: u32 = 1;
pub const DESCRIPTOR_FILE: &str = "env.json";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvDescriptor {
    pub schema: u32,
    /// Unique per environment; used to label processes and containers.
    pub id: String,
    /// Which backend brought the environment up (or wrote the descriptor of services it does not run).
    pub backend: BackendKind,
    pub dir: PathBuf,
    pub started_ts_ms: u64,
    pub kafka: KafkaEnv,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mysql: Option<MysqlEnv>,
}

/// The environment backends (xtask/src/env): one variant each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// This machine's JDK and database server.
    Native,
    /// Containers of pinned (or locally built) images on the host's network.
    Docker,
    /// Services the user runs; the lab never starts or stops them.
    External,
}

impl BackendKind {
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Native => "native",
            BackendKind::Docker => "docker",
            BackendKind::External => "external",
        }
    }
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The listener every environment the lab starts has, and the default where none is set.
pub const PLAINTEXT_LISTENER: &str = "plaintext";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KafkaEnv {
    /// Broker version as the broker reported it (or its jar manifest).
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Client listeners by name: `plaintext`, `ssl`, `scram256`, `scram512`, `oauth`.
    pub listeners: BTreeMap<String, Listener>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<String>,
    /// CPUs the broker is pinned to, if capped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<Vec<usize>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_file: Option<PathBuf>,
    /// Every broker of a cluster, each with its own process, listeners and log directory; empty for the
    /// single-broker environment (the broker above). The listeners above then bootstrap from every broker.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub brokers: Vec<BrokerEnv>,
    /// The listener arms use when a point names none: `plaintext` unless set (an external cluster reached through
    /// `--kafka-config` has only the listener that file describes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_listener: Option<String>,
    /// The class-data sharing archive of Kafka's classes every broker started from, when they did (native lab
    /// environments, as Apache Kafka's image starts its broker); a fault's restart starts without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_archive: Option<PathBuf>,
}

impl KafkaEnv {
    /// Every broker process of the environment (one for a single broker, all of a cluster's).
    pub fn pids(&self) -> Vec<u32> {
        if self.brokers.is_empty() {
            self.pid.into_iter().collect()
        } else {
            self.brokers.iter().filter_map(|b| b.pid).collect()
        }
    }

    /// How many brokers the environment runs.
    pub fn broker_count(&self) -> usize {
        self.brokers.len().max(1)
    }
}

/// One broker of a cluster (KRaft combined mode: each is also a controller and quorum voter).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrokerEnv {
    /// `node.id`.
    pub node_id: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// This broker's own listeners (the environment's listeners bootstrap from all of them).
    pub listeners: BTreeMap<String, Listener>,
    /// Its controller listener, `127.0.0.1:port`.
    pub controller: String,
    /// Its `log.dirs`: where its partitions' segments live.
    pub data_dir: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_file: Option<PathBuf>,
    /// `server.properties` it was started with (a restart uses it again).
    pub properties: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Listener {
    /// `host:port`, always loopback for native environments.
    pub bootstrap: String,
    /// Kafka `security.protocol`: PLAINTEXT, SSL, SASL_PLAINTEXT.
    pub security_protocol: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sasl_mechanism: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_file: Option<PathBuf>,
    /// PEM CA certificate that signed the broker's certificate (SSL listeners).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
}

impl Listener {
    /// The listener's password, read from its owner-only file; `None` for a listener without one.
    pub fn password(&self) -> Result<Option<String>, DescriptorError> {
        self.password_file.as_deref().map(read_secret).transpose()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MysqlEnv {
    /// `mariadb` or `mysql`.
    pub flavour: String,
    /// `SELECT VERSION()` as the server answered.
    pub version: String,
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password_file: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_file: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum DescriptorError {
    #[error("cannot read env descriptor {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("env descriptor {path} is not valid: {source}")]
    Parse { path: PathBuf, source: serde_json::Error },
    #[error("env descriptor {path} has schema {found}, this build reads schema {DESCRIPTOR_SCHEMA}")]
    Schema { path: PathBuf, found: u32 },
    #[error("cannot read secret {path}: {source}")]
    Secret { path: PathBuf, source: std::io::Error },
}

impl EnvDescriptor {
    pub fn load(path: &Path) -> Result<Self, DescriptorError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| DescriptorError::Io { path: path.to_owned(), source })?;
        let d: EnvDescriptor =
            serde_json::from_str(&text).map_err(|source| DescriptorError::Parse { path: path.to_owned(), source })?;
        if d.schema != DESCRIPTOR_SCHEMA {
            return Err(DescriptorError::Schema { path: path.to_owned(), found: d.schema });
        }
        Ok(d)
    }

    pub fn listener(&self, name: &str) -> Option<&Listener> {
        self.kafka.listeners.get(name)
    }

    /// The name of the listener arms use when a point names none.
    pub fn default_listener(&self) -> &str {
        self.kafka.default_listener.as_deref().unwrap_or(PLAINTEXT_LISTENER)
    }
}

/// Read a secret file, trimming the trailing newline.
pub fn read_secret(path: &Path) -> Result<String, DescriptorError> {
    std::fs::read_to_string(path)
        .map(|s| s.trim_end().to_owned())
        .map_err(|source| DescriptorError::Secret { path: path.to_owned(), source })
}
