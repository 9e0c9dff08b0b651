//! The durability matrix's Java producer (harness/src/drivers/java/LedgerProducer.java), compiled once
//! against the pinned kafka-clients jar and its dependencies (`crate::javac`).

use anyhow::Result;
use streamlab_record::tools::LedgerProducer;

use crate::env::host::java;
use crate::env::pins::{kafka_artifact_coordinate, kafka_classpath};
use crate::javac::{JavaSource, compiled};
use crate::tools::java_version;

/// The source, relative to the repository.
pub const SOURCE: &str = "harness/src/drivers/java/LedgerProducer.java";
const DRIVER: JavaSource = JavaSource {
    source: SOURCE,
    main_class: "LedgerProducer",
    cache_name: "ledger-producer",
    // Run by the host's own JVM, the one that compiles it.
    release: None,
};

/// Compile (or find the compiled) driver; the tools file describes it.
pub fn prepare() -> Result<LedgerProducer> {
    let jars = kafka_classpath()?;
    let class = compiled(&DRIVER, &jars)?;
    let java = java();
    Ok(LedgerProducer {
        java_version: java_version(&java)?,
        java,
        classpath: std::iter::once(class.dir).chain(jars).collect(),
        main_class: DRIVER.main_class.to_owned(),
        kafka_clients: kafka_artifact_coordinate("kafka-clients")?,
        build: format!("{}; {SOURCE} sha256 {}", class.javac_version, class.source_sha256),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[ignore = "needs a JDK and the pinned jars (fetched if missing): cargo xtask test"]
    fn the_driver_compiles_against_the_pinned_kafka_clients() {
        let tool = prepare().unwrap();
        assert!(tool.classpath[0].join("LedgerProducer.class").is_file(), "{:?}", tool.classpath[0]);
        assert_eq!(tool.kafka_clients, format!("org.apache.kafka:kafka-clients:{}", crate::env::pins::kafka_version()));
        assert!(tool.build.contains("javac") && tool.build.contains("sha256"), "{}", tool.build);
    }
}
