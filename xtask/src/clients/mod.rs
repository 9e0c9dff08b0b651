//! The programs the arms run besides the harness's own crates, each prepared only for a run that has an arm
//! declaring it (`Tool`, in `harness arms --json`): `rdkafka_performance` built against two librdkafka versions,
//! Kafka's Java perf tools on the pinned jars, partitionline-bench in seed 003's profile, the Java ledger-writing
//! producer compiled by javac; and for mysql_cdc (`Need::Connect`) Kafka Connect with the Debezium plugins and, if
//! the user names one, a Redpanda Connect binary. Built or located once per run (cached across runs), described in
//! one tools file whose path the harness gets as `STREAMLAB_TOOLS`.

pub mod connect;
mod java;
pub mod ledger_producer;
mod librdkafka_source;
mod partitionline_bench;
mod rdkafka_performance;
pub mod redpanda_connect;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::Result;
use streamlab_record::run_spec::Need;
use streamlab_record::tools::{CTool, RedpandaConnect, Tool, Tools};

/// Build or locate the programs `wanted` names, and Connect if `needs` has it, and write the tools file to
/// `path`. `redpanda_connect` is the user's binary, checked beforehand ([`redpanda_connect::from_env`]); it is
/// recorded with Connect.
pub fn prepare(
    path: &Path,
    needs: &[Need],
    wanted: &BTreeSet<Tool>,
    redpanda_connect: Option<RedpandaConnect>,
) -> Result<Tools> {
    let mut tools = Tools::default();
    for tool in wanted {
        match tool {
            Tool::RdkafkaPerformance => tools.rdkafka_performance = rdkafka_performance::build_all()?,
            Tool::JavaPerfTools => tools.java = Some(java::locate()?),
            Tool::PartitionlineBench => tools.partitionline_bench = Some(partitionline_bench::build()?),
            Tool::LedgerProducer => tools.ledger_producer = Some(ledger_producer::prepare()?),
        }
    }
    if needs.contains(&Need::Connect) {
        tools.connect = Some(connect::locate()?);
        tools.redpanda_connect = redpanda_connect;
    }
    tools.save(path)?;
    Ok(tools)
}

/// What provenance records of the tools: each build's library version, source, configure flags and compiler;
/// the Java tools' jar and JVM; Kafka Connect, its plugins and Redpanda Connect.
pub fn versions(tools: &Tools) -> BTreeMap<String, String> {
    let mut v = BTreeMap::new();
    for (library, c) in &tools.rdkafka_performance {
        v.insert(CTool::provenance_key(library), c.describe());
    }
    if let Some(j) = &tools.java {
        v.insert("java perf tools".into(), format!("{} on {}", j.kafka_tools, j.java_version));
    }
    if let Some(bench) = &tools.partitionline_bench {
        v.insert("build:partitionline-bench".into(), bench.build.clone());
    }
    if let Some(c) = &tools.connect {
        v.extend(connect::versions(c));
        let redpanda = tools.redpanda_connect.as_ref();
        let described = redpanda
            .map_or(redpanda_connect::NOT_PROVIDED.to_owned(), |r| format!("{} ({})", r.version, r.path.display()));
        v.insert("redpanda connect".into(), described);
    }
    if let Some(l) = &tools.ledger_producer {
        v.insert("java ledger producer".into(), format!("{} on {}; {}", l.kafka_clients, l.java_version, l.build));
    }
    v
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn connect_provenance_says_when_redpanda_connect_was_not_provided() {
        let connect = streamlab_record::tools::ConnectTools {
            java: "java".into(),
            java_version: "openjdk version \"17.0.15\"".into(),
            connect_runtime: "org.apache.kafka:connect-runtime:4.1.0".into(),
            plugins: BTreeMap::new(),
        };
        let mut tools = Tools { connect: Some(connect), ..Tools::default() };
        let v = versions(&tools);
        assert_eq!(v["kafka connect"], "org.apache.kafka:connect-runtime:4.1.0 on openjdk version \"17.0.15\"");
        assert_eq!(v["redpanda connect"], redpanda_connect::NOT_PROVIDED);
        tools.redpanda_connect = Some(RedpandaConnect { path: PathBuf::from("/opt/rpc"), version: "4.99.0".into() });
        assert_eq!(versions(&tools)["redpanda connect"], "4.99.0 (/opt/rpc)");
        assert!(versions(&Tools::default()).is_empty());
    }

    /// The tools file the harness's ignored client tests and manual arm runs use (`STREAMLAB_TOOLS`).
    #[test]
    #[ignore = "builds every tool into the cache (minutes when cold): writes target/streamlab/tools.json"]
    fn writes_the_tools_file_for_manual_runs() {
        let path = crate::paths::repo_root().join("target/streamlab/tools.json");
        let tools = prepare(&path, &[Need::Connect], &Tool::ALL.into(), redpanda_connect::from_env().unwrap()).unwrap();
        let written: Tools = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(written.rdkafka_performance.len(), tools.rdkafka_performance.len());
        let v = versions(&tools);
        assert!(v.keys().any(|k| k == &CTool::provenance_key("2.15.0")), "{v:?}");
        assert!(v.contains_key("kafka connect") && v.contains_key("redpanda connect"), "{v:?}");
        eprintln!("wrote {}", path.display());
    }
}
