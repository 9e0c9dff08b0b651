//! The client tools the clients matrix runs besides the harness's own crates: `rdkafka_performance` built
//! against two librdkafka versions, and Kafka's Java perf tools on the pinned jars. Built or located once
//! per run (cached across runs), described in a tools file whose path the harness gets as `STREAMLAB_TOOLS`.

mod java;

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use streamlab_record::tools::Tools;

/// Build or locate every client tool and write the tools file to `path`.
pub fn prepare(path: &Path) -> Result<Tools> {
    let tools = Tools { java: Some(java::locate()?), ..Tools::default() };
    tools.save(path)?;
    Ok(tools)
}

/// What provenance records of the tools: each build's library version, source, configure flags and compiler;
/// the Java tools' jar and JVM.
pub fn versions(tools: &Tools) -> BTreeMap<String, String> {
    let mut v = BTreeMap::new();
    for (library, c) in &tools.rdkafka_performance {
        v.insert(
            format!("rdkafka_performance ({library})"),
            format!("librdkafka {} from {}; configure {}; {}", c.librdkafka_version, c.source, c.configure, c.compiler),
        );
    }
    if let Some(j) = &tools.java {
        v.insert("java perf tools".into(), format!("{} on {}", j.kafka_tools, j.java_version));
    }
    v
}
