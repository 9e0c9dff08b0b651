//! Arms: each `(bench, arm)` pair is one measurement program. The runner starts one process per
//! arm x variant x rep; the arm prints one [`streamlab_record::Measurement`] as JSON on stdout and logs on stderr.
//!
//! [`registry`] is the contract with the matrices: every arm, the knobs it reads and their types.
//! `harness arms --json` prints it, and xtask checks every matrix against it before anything starts.
//! Adding an arm is its module, its line in the registry and the matrix TOML; adding a Kafka client is its
//! driver ([`crate::drivers`]), which both Kafka benches run.

pub mod clients;
pub mod durability;
pub mod kafka_sink;
pub mod mysql_cdc;
mod registry;
pub(crate) mod spec;

use anyhow::Result;
use serde::de::DeserializeOwned;
use streamlab_record::EnvDescriptor;

pub use registry::{find, registry, registry_json, run};
pub use spec::{ArmSpec, KnobSpec, KnobType, Runs};

/// Everything an arm gets from the runner.
pub struct ArmContext {
    pub env: EnvDescriptor,
    /// The variant's knobs as the matrix resolved them (only those that apply to this arm).
    pub knobs: serde_json::Map<String, serde_json::Value>,
}

impl ArmContext {
    /// The knobs as the arm's own typed struct (unknown or mistyped knobs are refused by name).
    pub fn knobs<T: DeserializeOwned>(&self) -> Result<T> {
        spec::parse_knobs(&self.knobs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_arm_s_knob_schema_is_read_off_its_struct() {
        for spec in registry() {
            let knobs = spec.knobs();
            assert!(!knobs.is_empty(), "{}/{} reads no knobs", spec.bench, spec.arm);
            let mut names: Vec<&str> = knobs.iter().map(|k| k.name).collect();
            names.dedup();
            assert_eq!(names.len(), knobs.len(), "{}/{}: a knob named twice", spec.bench, spec.arm);
        }
    }

    #[test]
    fn arms_are_registered_once_and_found_by_name() {
        let registry = registry();
        let mut names: Vec<(&str, &str)> = registry.iter().map(|s| (s.bench, s.arm)).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), registry.len(), "an arm is registered twice");
        assert_eq!(find("kafka_sink", "raw").map(|s| s.arm), Some("raw"));
        assert!(find("kafka_sink", "nope").is_none());
    }

    #[test]
    fn the_registry_prints_as_the_json_xtask_reads() {
        let v: serde_json::Value = serde_json::from_str(&registry_json()).unwrap();
        assert_eq!(v["schema"], 2);
        let raw = v["arms"].as_array().unwrap().iter().find(|a| a["arm"] == "raw").unwrap();
        assert_eq!(raw["bench"], "kafka_sink");
        let warmup = raw["knobs"].as_array().unwrap().iter().find(|k| k["name"] == "warmup_s").unwrap();
        assert_eq!((warmup["type"].as_str(), warmup["required"].as_bool()), (Some("float"), Some(true)));
    }

    #[test]
    fn each_arm_declares_the_programs_it_runs_and_a_client_s_depend_on_the_bench() {
        let v: serde_json::Value = serde_json::from_str(&registry_json()).unwrap();
        let tools = |bench: &str, arm: &str| {
            let a = v["arms"].as_array().unwrap().iter().find(|a| a["bench"] == bench && a["arm"] == arm);
            a.unwrap_or_else(|| panic!("no {bench}/{arm}"))["tools"].clone()
        };
        assert_eq!(tools("clients", "c_2_15"), serde_json::json!(["rdkafka_performance"]));
        assert_eq!(tools("clients", "java"), serde_json::json!(["java_perf_tools"]));
        assert_eq!(tools("durability", "java"), serde_json::json!(["ledger_producer"]));
        assert_eq!(tools("clients", "partitionline"), serde_json::json!(["partitionline_bench"]));
        assert_eq!(tools("durability", "partitionline"), serde_json::json!([]), "its ledger runs in the harness");
        assert_eq!(tools("clients", "rdkafka"), serde_json::json!([]));
        assert_eq!(tools("kafka_sink", "raw"), serde_json::json!([]));
    }
}
