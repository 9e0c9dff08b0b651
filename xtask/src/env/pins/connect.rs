//! Kafka Connect's pinned jar sets (the mysql_cdc matrix): one lock per connector plugin under
//! env/connect/<plugin>/, each a whole worker classpath — connect-runtime and connect-json at the broker's
//! Kafka version, the log4j2 binding, and one Debezium connector with its dependencies minus its own Kafka jars —
//! so the harness starts `ConnectStandalone` with `java -cp` on it and no plugin.path.

use std::path::PathBuf;

use streamlab_record::provenance::Pins;

use super::fetch::Fetched;
use super::jar_set::JarSet;
use super::{KAFKA_GROUP, KAFKA_VERSION};

/// The worker every plugin runs in; its version is the default broker's.
pub const CONNECT_RUNTIME_ARTIFACT: &str = "connect-runtime";

/// One connector plugin the lab pins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectPin {
    /// The key in the tools file (`debezium-mariadb`); its lock is env/connect/<name>/jars.lock.
    pub name: &'static str,
    /// Relative to the repository: holds pom.xml and jars.lock.
    pub dir: &'static str,
    /// The connector artifact, e.g. `io.debezium:debezium-connector-mariadb:3.5.0.Final`.
    pub coordinate: &'static str,
    /// The class a worker lists under /connector-plugins.
    pub connector_class: &'static str,
}

/// Every Connect plugin the lab pins.
pub const CONNECT_PINS: &[ConnectPin] = &[
    ConnectPin {
        name: "debezium-mariadb",
        dir: "env/connect/debezium-mariadb",
        coordinate: "io.debezium:debezium-connector-mariadb:3.5.0.Final",
        connector_class: "io.debezium.connector.mariadb.MariaDbConnector",
    },
    ConnectPin {
        name: "debezium-jdbc",
        dir: "env/connect/debezium-jdbc",
        coordinate: "io.debezium:debezium-connector-jdbc:3.5.0.Final",
        connector_class: "io.debezium.connector.jdbc.JdbcSinkConnector",
    },
];

/// `org.apache.kafka:connect-runtime:<the default Kafka version>`.
pub fn connect_runtime_coordinate() -> String {
    format!("{KAFKA_GROUP}:{CONNECT_RUNTIME_ARTIFACT}:{KAFKA_VERSION}")
}

impl ConnectPin {
    fn jar_set(&self) -> JarSet {
        JarSet {
            dir: self.dir,
            required: vec![connect_runtime_coordinate(), self.coordinate.to_owned()],
            about: format!(
                "A Kafka Connect worker for {} from Maven Central:\n\
                 connect-runtime and connect-json {KAFKA_VERSION}, the log4j2 SLF4J binding, and the connector with its\n\
                 runtime dependencies (its own org.apache.kafka jars excluded, so the worker's are the only ones).",
                self.coordinate
            ),
        }
    }

    /// `env/connect/<name>/jars.lock`.
    pub fn lock_file(&self) -> String {
        self.jar_set().lock_file()
    }

    /// The worker's classpath: every jar downloaded if missing and verified, in lock order.
    pub fn classpath(&self) -> anyhow::Result<Vec<PathBuf>> {
        Ok(self.fetch()?.jars)
    }

    pub(super) fn fetch(&self) -> anyhow::Result<Fetched> {
        self.jar_set().fetch()
    }

    pub(super) fn regenerate(&self) -> anyhow::Result<usize> {
        Ok(self.jar_set().regenerate()?.jars.len())
    }

    /// The lock as provenance records it.
    pub fn provenance(&self) -> anyhow::Result<Pins> {
        Ok(self.jar_set().load()?.pins(&self.lock_file()))
    }
}

#[cfg(test)]
mod tests {
    use super::super::lock::{Jar, Lock};
    use super::*;

    #[test]
    fn every_connect_lock_pins_the_runtime_and_its_connector_with_one_kafka_version() {
        for pin in CONNECT_PINS {
            let set = pin.jar_set();
            let lock = set.load().unwrap_or_else(|e| panic!("{}: {e:#}", pin.lock_file()));
            let coordinates: Vec<String> = lock.jars.iter().map(Jar::coordinate).collect();
            for expected in [
                format!("org.apache.kafka:connect-runtime:{KAFKA_VERSION}"),
                format!("org.apache.kafka:connect-json:{KAFKA_VERSION}"),
                "org.apache.logging.log4j:log4j-slf4j-impl:2.24.3".to_owned(),
                pin.coordinate.to_owned(),
            ] {
                assert!(coordinates.contains(&expected), "{} pins {expected}", pin.lock_file());
            }
            let kafka: Vec<&Jar> = lock.jars.iter().filter(|j| j.group == KAFKA_GROUP).collect();
            assert!(kafka.iter().all(|j| j.version == KAFKA_VERSION), "{}: {kafka:?}", pin.lock_file());
            assert!(kafka.iter().any(|j| j.artifact == "kafka-clients"), "{}", pin.lock_file());
            assert!(!kafka.iter().any(|j| j.artifact == "kafka_2.13"), "{}: no broker", pin.lock_file());
            // Exactly one SLF4J binding, or the worker picks one at random (or logs nothing).
            let bindings =
                ["log4j-slf4j-impl", "log4j-slf4j2-impl", "slf4j-simple", "slf4j-reload4j", "logback-classic"];
            let found: Vec<&str> =
                lock.jars.iter().map(|j| j.artifact.as_str()).filter(|a| bindings.contains(a)).collect();
            assert_eq!(found, ["log4j-slf4j-impl"], "{}", pin.lock_file());
            assert_eq!(lock.pins(&pin.lock_file()).artifacts.len(), lock.jars.len());
            assert!(pin.connector_class.starts_with("io.debezium.connector."), "{}", pin.connector_class);
        }
        let names: Vec<&str> = CONNECT_PINS.iter().map(|p| p.name).collect();
        assert_eq!(names, ["debezium-mariadb", "debezium-jdbc"], "the keys the harness reads");
        assert!(CONNECT_PINS.iter().all(|p| p.dir == format!("env/connect/{}", p.name)));
        // The worker's log4j2 configuration (INFO to stdout), which the arm names with -Dlog4j2.configurationFile.
        assert!(crate::paths::repo_root().join("env/connect/log4j2.yaml").is_file());
    }

    #[test]
    fn a_connect_lock_at_another_kafka_version_or_without_its_connector_is_refused() {
        let pin = &CONNECT_PINS[0];
        let text = std::fs::read_to_string(pin.jar_set().lock_path()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jars.lock");
        let required = [connect_runtime_coordinate(), pin.coordinate.to_owned()];
        let required: Vec<&str> = required.iter().map(String::as_str).collect();

        let mixed = text.replacen(
            "kafka-clients:4.1.0\"\nfile = \"kafka-clients-4.1.0.jar",
            "kafka-clients:4.1.1\"\nfile = \"kafka-clients-4.1.1.jar",
            1,
        );
        assert_ne!(mixed, text);
        let message = Lock::parse(&mixed, &path).unwrap_err().to_string();
        assert!(message.contains("org.apache.kafka:kafka-clients:4.1.1"), "{message}");

        let other = text.replace("debezium-connector-mariadb", "debezium-connector-mysql");
        let lock = Lock::parse(&other, &path).unwrap();
        let problem = lock.require(&required).unwrap_err();
        assert!(problem.contains(pin.coordinate), "{problem}");
    }
}
