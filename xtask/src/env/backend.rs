//! One interface for every environment backend. A [`Backend`] is chosen from the flags before anything
//! starts (so caps it cannot apply are known up front); [`Backend::up`] gives an [`Environment`] that
//! owns the running services and brings them down when dropped. The runner asks these two what it needs
//! and never looks at a backend's name.

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use streamlab_record::EnvDescriptor;
use streamlab_record::provenance::EnvInfo;
use streamlab_record::run_spec::{BackendChoice, Need};

use super::health::{self, ServiceDown};
use super::pins::KafkaPin;
use super::{docker, external, native};

pub trait Backend {
    /// `native`, `external`, ...: for messages and records only.
    fn name(&self) -> &'static str;
    /// Whether the broker can be pinned to `cores` CPUs (0 = uncapped); `Err` says why not.
    fn can_cap_broker(&self, cores: usize) -> std::result::Result<(), String>;
    /// Whether this backend starts the broker at the Kafka version a point asks for; `Err` says why not.
    fn can_choose_kafka(&self) -> std::result::Result<(), String> {
        Ok(())
    }
    /// What [`Backend::prepare`] does, for the line that announces it.
    fn prepare_what(&self) -> String;
    /// Fetch and verify what the services need (pinned artifacts), before anything starts.
    fn prepare(&self) -> Result<()>;
    /// Bring up the services `needs` asks for, the broker at `kafka`'s version; they stop when the environment
    /// is dropped.
    fn up(&self, run_id: &str, needs: &[Need], kafka: &'static KafkaPin) -> Result<Box<dyn Environment>>;
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
}

/// The backend the flags ask for; refused with the flag named when the combination makes no sense.
pub fn choose(choice: BackendChoice, bootstrap: Option<&str>, dsn: Option<&str>) -> Result<Box<dyn Backend>> {
    let dsn = dsn.map(external::parse_dsn).transpose()?;
    match (choice, bootstrap) {
        (BackendChoice::External, None) => bail!("--env external needs --bootstrap HOST:PORT"),
        (BackendChoice::External | BackendChoice::Auto, Some(b)) => {
            external::check_bootstrap(b)?;
            Ok(Box::new(external::ExternalBackend { bootstrap: b.to_owned(), dsn }))
        }
        (BackendChoice::Native | BackendChoice::Auto, None) if dsn.is_some() => {
            bail!("--mysql-dsn needs --bootstrap too: the external backend uses both of your services")
        }
        (BackendChoice::Native, None) => Ok(Box::new(native::NativeBackend)),
        (BackendChoice::Docker, None) => Ok(Box::new(docker::DockerBackend)),
        (BackendChoice::Docker, Some(_)) => bail!("--bootstrap points at an external cluster; drop --env docker"),
        // Auto: Docker where an engine answers (the way most users run), else this machine's own services.
        (BackendChoice::Auto, None) => match docker_answers() {
            true => Ok(Box::new(docker::DockerBackend)),
            false => Ok(Box::new(native::NativeBackend)),
        },
        (BackendChoice::Native, Some(_)) => bail!("--bootstrap points at an external cluster; drop --env native"),
    }
}

/// Whether a Docker engine answers here (`STREAMLAB_NO_DOCKER=1` says to leave it alone in `--env auto`).
fn docker_answers() -> bool {
    std::env::var_os("STREAMLAB_NO_DOCKER").is_none_or(|v| v.is_empty() || v == "0")
        && docker::engine::Engine::answers().is_some()
}

/// What provenance says about an environment described by `d`.
pub fn env_info(d: &EnvDescriptor, managed: bool, note: Option<&str>) -> EnvInfo {
    EnvInfo {
        backend: d.backend.clone(),
        managed,
        kafka_version: Some(d.kafka.version.clone()),
        mysql_flavour: d.mysql.as_ref().map(|m| m.flavour.clone()),
        mysql_version: d.mysql.as_ref().map(|m| m.version.clone()),
        cpu_caps: BTreeMap::new(),
        note: note.map(str::to_owned),
        images: Default::default(),
    }
}

/// The database server's version, if the environment has one: `mariadb` or `mysql` -> `VERSION()`.
pub fn server_versions(d: &EnvDescriptor) -> BTreeMap<String, String> {
    d.mysql.iter().map(|m| (m.flavour.clone(), m.version.clone())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_combination_is_refused_before_anything_starts() {
        let name = |c, b, d| choose(c, b, d).map(|b| b.name()).map_err(|e| e.to_string());
        assert_eq!(name(BackendChoice::Docker, None, None).unwrap(), "docker");
        assert!(name(BackendChoice::Docker, Some("127.0.0.1:9092"), None).unwrap_err().contains("drop --env docker"));
        let auto = name(BackendChoice::Auto, None, None).unwrap();
        assert_eq!(auto, if docker_answers() { "docker" } else { "native" });
        let dsn = Some("mysql://u:p@127.0.0.1:3306");
        assert!(name(BackendChoice::Auto, None, dsn).unwrap_err().contains("--mysql-dsn needs --bootstrap"));
        assert_eq!(name(BackendChoice::Auto, Some("127.0.0.1:9092"), dsn).unwrap(), "external");
        assert!(name(BackendChoice::External, None, None).unwrap_err().contains("needs --bootstrap"));
        assert!(name(BackendChoice::Native, Some("127.0.0.1:9092"), None).unwrap_err().contains("drop --env native"));
    }

    #[test]
    fn only_a_backend_that_runs_the_broker_can_cap_it() {
        let external = choose(BackendChoice::Auto, Some("127.0.0.1:9092"), None).unwrap();
        assert!(external.can_cap_broker(1).unwrap_err().contains("cannot cap"));
        assert!(external.can_cap_broker(0).is_ok());
        let native = choose(BackendChoice::Native, None, None).unwrap();
        assert!(native.can_cap_broker(0).is_ok() && native.can_cap_broker(1).is_ok());
        assert!(native.can_cap_broker(4096).unwrap_err().contains("4096 cannot be applied"));
    }
}
