//! The client tools the clients matrix runs besides the harness's own crates: `rdkafka_performance` built
//! against two librdkafka versions, and Kafka's Java perf tools on the pinned jars. Built or located once
//! per run (cached across runs), described in a tools file whose path the harness gets as `STREAMLAB_TOOLS`.

mod java;
mod librdkafka_source;
mod rdkafka_performance;

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use streamlab_record::tools::{CTool, Tools};

/// Build or locate every client tool and write the tools file to `path`.
pub fn prepare(path: &Path) -> Result<Tools> {
    let tools = Tools {
        rdkafka_performance: rdkafka_performance::build_all()?,
        java: Some(java::locate()?),
        ..Tools::default()
    };
    tools.save(path)?;
    Ok(tools)
}

/// What provenance records of the tools: each build's library version, source, configure flags and compiler;
/// the Java tools' jar and JVM.
pub fn versions(tools: &Tools) -> BTreeMap<String, String> {
    let mut v = BTreeMap::new();
    for (library, c) in &tools.rdkafka_performance {
        v.insert(CTool::provenance_key(library), c.describe());
    }
    if let Some(j) = &tools.java {
        v.insert("java perf tools".into(), format!("{} on {}", j.kafka_tools, j.java_version));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tools file the harness's ignored client tests and manual arm runs use (`STREAMLAB_TOOLS`).
    #[test]
    #[ignore = "builds every client tool into the cache (minutes when cold): writes target/streamlab/tools.json"]
    fn writes_the_tools_file_for_manual_runs() {
        let path = crate::paths::repo_root().join("target/streamlab/tools.json");
        let tools = prepare(&path).unwrap();
        let written: Tools = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(written.rdkafka_performance.len(), tools.rdkafka_performance.len());
        let v = versions(&tools);
        assert!(v.keys().any(|k| k == &CTool::provenance_key("2.15.0")), "{v:?}");
        eprintln!("wrote {}", path.display());
    }
}
