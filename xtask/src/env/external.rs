//! The external backend: services the user already runs. The lab never starts or stops them;
//! it writes a descriptor so arms find them the same way, and says so in provenance.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use streamlab_record::EnvDescriptor;
use streamlab_record::descriptor::{BackendKind, DESCRIPTOR_SCHEMA, KafkaEnv, Listener, MysqlEnv, PLAINTEXT_LISTENER};
use streamlab_record::fault::{FaultRequest, FaultResult};
use streamlab_record::provenance::EnvInfo;

use super::backend::{Backend, EnvSpec, Environment};
use super::kafka_config::KafkaConfig;
use super::secrets;
use super::services::{server_versions, write_descriptor};

/// A parsed `mysql://user:password@host:port` DSN.
#[derive(Debug, Clone, PartialEq)]
pub struct MysqlDsn {
    pub user: String,
    pub password: String,
    pub host: String,
    pub port: u16,
}

pub fn parse_dsn(dsn: &str) -> Result<MysqlDsn> {
    let usage = "expected --mysql-dsn mysql://USER:PASSWORD@HOST:PORT";
    let rest = dsn.strip_prefix("mysql://").with_context(|| format!("--mysql-dsn {dsn:?}: {usage}"))?;
    let rest = rest.split('/').next().unwrap_or(rest);
    let (auth, addr) = rest.rsplit_once('@').with_context(|| format!("--mysql-dsn: no USER@ part; {usage}"))?;
    let (user, password) = auth.split_once(':').unwrap_or((auth, ""));
    let (host, port) = addr.rsplit_once(':').unwrap_or((addr, "3306"));
    let port = port.parse().with_context(|| format!("--mysql-dsn: port {port:?} is not a number; {usage}"))?;
    if user.is_empty() || host.is_empty() {
        bail!("--mysql-dsn {dsn:?}: {usage}");
    }
    Ok(MysqlDsn { user: user.into(), password: password.into(), host: host.into(), port })
}

/// Why an external cluster gets no faults.
const NOT_OURS_TO_FAULT: &str =
    "an external cluster's brokers are the user's: the lab never kills, stops or restarts what it did not start";

/// Services the user already runs: `--bootstrap` (and how to reach it, `--kafka-config`) and `--mysql-dsn`.
pub struct ExternalBackend {
    pub bootstrap: String,
    pub dsn: Option<MysqlDsn>,
    pub kafka_config: Option<KafkaConfig>,
}

impl Backend for ExternalBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::External
    }

    fn can_cap_broker(&self, cores: usize) -> std::result::Result<(), String> {
        match cores {
            0 => Ok(()),
            _ => Err("external environment: the lab cannot cap the broker's CPUs".to_owned()),
        }
    }

    fn can_choose_kafka(&self) -> std::result::Result<(), String> {
        Err("an external cluster runs whatever Kafka version it runs; the lab cannot start another".into())
    }

    fn can_inject_faults(&self) -> std::result::Result<(), String> {
        Err(NOT_OURS_TO_FAULT.into())
    }

    fn prepare_what(&self) -> String {
        "nothing: the services are yours".to_owned()
    }

    fn prepare(&self) -> Result<()> {
        Ok(())
    }

    /// Only a descriptor of the user's services (and the DSN's password file), in `spec`'s directory.
    fn up(&self, spec: &EnvSpec) -> Result<Box<dyn Environment>> {
        let descriptor =
            describe(&spec.dir(), &spec.id, &self.bootstrap, self.dsn.as_ref(), self.kafka_config.as_ref())?;
        let settings = self.kafka_config.as_ref().map(|c| c.names.clone()).unwrap_or_default();
        Ok(Box::new(ExternalEnv { descriptor, kept: false, settings }))
    }

    /// The services are the user's: only our descriptor goes.
    fn down(&self, env: &EnvDescriptor, keep: bool) -> Result<()> {
        if !keep {
            std::fs::remove_dir_all(&env.dir).with_context(|| format!("cannot remove {}", env.dir.display()))?;
        }
        Ok(())
    }

    fn running_pids(&self, _env: &EnvDescriptor) -> Vec<u32> {
        Vec::new()
    }
}

/// External services: only a descriptor (and the passwords' files) of ours, removed when dropped.
pub struct ExternalEnv {
    descriptor: EnvDescriptor,
    kept: bool,
    /// The `--kafka-config` settings' names.
    settings: Vec<String>,
}

impl Environment for ExternalEnv {
    fn descriptor(&self) -> &EnvDescriptor {
        &self.descriptor
    }

    fn cap_broker(&self, _cores: usize) -> Result<Option<String>> {
        Ok(None)
    }

    fn place_broker(&self, _cpus: &[usize]) -> Result<bool> {
        Ok(false)
    }

    fn service_pids(&self) -> Vec<u32> {
        Vec::new()
    }

    fn info(&self) -> EnvInfo {
        let note = "external services: the lab neither started nor stopped them and cannot cap their CPUs";
        EnvInfo {
            kafka_settings: self.settings.clone(),
            ..super::backend::env_info(&self.descriptor, false, Some(note))
        }
    }

    fn versions(&self) -> BTreeMap<String, String> {
        server_versions(&self.descriptor)
    }

    fn inject_fault(&mut self, request: &FaultRequest) -> FaultResult {
        FaultResult::refused(request, NOT_OURS_TO_FAULT)
    }

    fn keep_running(mut self: Box<Self>) -> EnvDescriptor {
        self.kept = true;
        self.descriptor.clone()
    }
}

impl Drop for ExternalEnv {
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        if let Err(e) = std::fs::remove_dir_all(&self.descriptor.dir) {
            eprintln!("warning: could not remove {}: {e}", self.descriptor.dir.display());
        }
    }
}

/// Write a descriptor for external services into `dir` (which holds only the secrets' files): the cluster's
/// one listener is PLAINTEXT, or what `kafka_config` says, and every arm uses it.
pub fn describe(
    dir: &Path,
    id: &str,
    bootstrap: &str,
    dsn: Option<&MysqlDsn>,
    kafka_config: Option<&KafkaConfig>,
) -> Result<EnvDescriptor> {
    std::fs::create_dir_all(dir)?;
    let mysql = match dsn {
        Some(d) => Some(MysqlEnv {
            flavour: "unknown".into(),
            version: "unknown".into(),
            host: d.host.clone(),
            port: d.port,
            user: d.user.clone(),
            password_file: secrets::write_secret(&dir.join("mysql.password"), &d.password)?,
            socket: None,
            pid: None,
            log_file: None,
        }),
        None => None,
    };
    let (listener_name, listener) = match kafka_config {
        Some(c) => {
            let password = c.password.as_deref().map(|p| secrets::write_secret(&dir.join("kafka.password"), p));
            (c.listener_name(), c.listener(bootstrap, password.transpose()?))
        }
        None => (
            PLAINTEXT_LISTENER.to_owned(),
            Listener {
                bootstrap: bootstrap.into(),
                security_protocol: "PLAINTEXT".into(),
                sasl_mechanism: None,
                username: None,
                password_file: None,
                ca_file: None,
            },
        ),
    };
    let env = EnvDescriptor {
        schema: DESCRIPTOR_SCHEMA,
        id: id.into(),
        backend: BackendKind::External,
        dir: dir.to_owned(),
        started_ts_ms: streamlab_process::clock::now_ms(),
        kafka: KafkaEnv {
            version: "unknown (external)".into(),
            pid: None,
            default_listener: kafka_config.is_some().then(|| listener_name.clone()),
            listeners: BTreeMap::from([(listener_name, listener)]),
            controller: None,
            cpus: None,
            log_file: None,
            brokers: Vec::new(),
            start_archive: None,
        },
        mysql,
    };
    write_descriptor(&env)?;
    Ok(env)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dsns_parse_or_name_the_flag() {
        let d = parse_dsn("mysql://bench:s3cret@127.0.0.1:3307/db").unwrap();
        assert_eq!(
            d,
            MysqlDsn { user: "bench".into(), password: "s3cret".into(), host: "127.0.0.1".into(), port: 3307 }
        );
        assert!(parse_dsn("postgres://x@y").unwrap_err().to_string().contains("--mysql-dsn"));
        assert!(parse_dsn("mysql://u@h:notaport").unwrap_err().to_string().contains("not a number"));
    }
}
