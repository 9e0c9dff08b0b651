//! Kafka's Java perf tools (ProducerPerformance, ConsumerPerformance) as the clients matrix runs them: the
//! kafka-tools jar the broker's lock already pins, with its dependencies, on the system JDK. Nothing is built;
//! locating them fetches (and verifies) the pinned jars if the cache lacks them.

use anyhow::{Result, bail};
use streamlab_record::tools::JavaTools;

use crate::env::host::java;
use crate::env::pins::{kafka_artifact_coordinate, kafka_classpath};
use crate::tools::java_version;

/// The artifact that holds `org.apache.kafka.tools.ProducerPerformance` and `ConsumerPerformance`.
const KAFKA_TOOLS_ARTIFACT: &str = "kafka-tools";

/// The JDK and the pinned jar set, with the versions provenance records.
pub fn locate() -> Result<JavaTools> {
    let kafka_tools = kafka_artifact_coordinate(KAFKA_TOOLS_ARTIFACT)?;
    let classpath = kafka_classpath()?;
    let tools_jar = format!("{KAFKA_TOOLS_ARTIFACT}-{}.jar", coordinate_version(&kafka_tools));
    if !classpath.iter().any(|jar| jar.file_name().is_some_and(|name| name == tools_jar.as_str())) {
        bail!("the pinned classpath has no {tools_jar}, though the lock names {kafka_tools}");
    }
    let java = java();
    let java_version = java_version(&java)?;
    Ok(JavaTools { java, classpath, kafka_tools, java_version })
}

fn coordinate_version(coordinate: &str) -> &str {
    coordinate.rsplit(':').next().unwrap_or(coordinate)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::pins::kafka_version;

    #[test]
    fn the_lock_pins_kafka_tools_at_the_pinned_kafka_version() {
        let coordinate = kafka_artifact_coordinate(KAFKA_TOOLS_ARTIFACT).unwrap();
        assert_eq!(coordinate, format!("org.apache.kafka:kafka-tools:{}", kafka_version()));
        assert_eq!(coordinate_version(&coordinate), kafka_version());
    }

    #[test]
    #[ignore = "needs a JDK and the pinned jars (fetched if missing): cargo xtask test"]
    fn locate_finds_the_jdk_and_the_tools_jar() {
        let tools = locate().unwrap();
        assert!(tools.java_version.contains("version"), "{}", tools.java_version);
        assert!(tools.classpath.iter().all(|jar| jar.is_file()), "every jar is in the cache");
        assert!(tools.classpath.iter().any(|jar| jar.ends_with(format!("kafka-tools-{}.jar", kafka_version()))));
    }
}
