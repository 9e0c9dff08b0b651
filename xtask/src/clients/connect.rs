//! Kafka Connect for the mysql_cdc matrix: one worker classpath per Debezium plugin (env/connect/<plugin>/),
//! fetched and verified like the broker's jars, on the same JDK as Kafka's Java perf tools. The harness's
//! Debezium arms start `ConnectStandalone` with `java -cp` on the classpath of the plugin they run.

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use streamlab_record::tools::{ConnectPlugin, ConnectTools};

use crate::env::host::java;
use crate::env::pins::connect::{CONNECT_PINS, ConnectPin, connect_runtime_coordinate};
use crate::tools::java_version;

/// The JDK and every plugin's worker classpath (downloaded if missing, verified), with what provenance records.
pub fn locate() -> Result<ConnectTools> {
    let java = java();
    let java_version = java_version(&java)?;
    let mut plugins = BTreeMap::new();
    for pin in CONNECT_PINS {
        let plugin = plugin(pin).with_context(|| format!("Kafka Connect with {}", pin.name))?;
        plugins.insert(pin.name.to_owned(), plugin);
    }
    Ok(ConnectTools { java, java_version, connect_runtime: connect_runtime_coordinate(), plugins })
}

fn plugin(pin: &ConnectPin) -> Result<ConnectPlugin> {
    let classpath = pin.classpath()?;
    let (_, artifact_version) = pin.coordinate.split_once(':').unwrap_or_default();
    let connector_jar = format!("{}.jar", artifact_version.replacen(':', "-", 1));
    if !classpath.iter().any(|jar| jar.file_name().is_some_and(|name| name == connector_jar.as_str())) {
        bail!("the classpath of {} has no {connector_jar}, though its lock names {}", pin.lock_file(), pin.coordinate);
    }
    Ok(ConnectPlugin { coordinate: pin.coordinate.to_owned(), classpath, lock: pin.lock_file() })
}

/// What provenance records: the worker and its JVM, each plugin with its lock's SHA-256.
pub fn versions(tools: &ConnectTools) -> BTreeMap<String, String> {
    let mut v = BTreeMap::new();
    v.insert("kafka connect".into(), format!("{} on {}", tools.connect_runtime, tools.java_version));
    for (name, plugin) in &tools.plugins {
        let pins = CONNECT_PINS.iter().find(|p| p.name == name).map(|p| p.provenance());
        let lock = match pins {
            Some(Ok(pins)) => format!("{} sha256 {}", plugin.lock, pins.lock_sha256),
            _ => plugin.lock.clone(),
        };
        v.insert(
            format!("kafka connect plugin {name}"),
            format!("{} ({} jars, {lock})", plugin.coordinate, plugin.classpath.len()),
        );
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[ignore = "needs a JDK and the pinned Connect jars (fetched if missing, ~100 MB): cargo xtask test"]
    fn locate_yields_complete_classpaths_with_each_connector_jar() {
        let tools = locate().unwrap();
        assert!(tools.java_version.contains("version"), "{}", tools.java_version);
        assert_eq!(tools.connect_runtime, "org.apache.kafka:connect-runtime:4.1.0");
        assert_eq!(tools.plugins.len(), CONNECT_PINS.len());
        for pin in CONNECT_PINS {
            let plugin = &tools.plugins[pin.name];
            assert!(plugin.classpath.iter().all(|jar| jar.is_file()), "{}: every jar is in the cache", pin.name);
            for jar in ["connect-runtime-4.1.0.jar", "connect-json-4.1.0.jar", "log4j-slf4j-impl-2.24.3.jar"] {
                assert!(plugin.classpath.iter().any(|p| p.ends_with(jar)), "{}: {jar}", pin.name);
            }
            let artifact = pin.coordinate.split(':').nth(1).unwrap();
            assert!(plugin.classpath.iter().any(|p| p.ends_with(format!("{artifact}-3.5.0.Final.jar"))));
            assert_eq!(plugin.lock, format!("env/connect/{}/jars.lock", pin.name));
        }
        let v = versions(&tools);
        assert!(v["kafka connect plugin debezium-mariadb"].contains("sha256"), "{v:?}");
    }
}
