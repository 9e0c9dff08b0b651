//! Arms: each `(bench, arm)` pair is one measurement program. The runner starts one process per
//! arm x variant x rep; the arm prints one [`Measurement`] as JSON on stdout and logs on stderr.
//!
//! [`REGISTRY`] is the contract with the matrices: every arm, the knobs it reads and their types.
//! `harness arms --json` prints it, and xtask checks every matrix against it before anything starts.
//! Adding an arm is its module, one line in [`REGISTRY`] and the matrix TOML.

pub mod clients;
pub mod durability;
pub mod kafka_sink;
pub mod mysql_cdc;
mod spec;

use anyhow::{Result, bail};
use serde::de::DeserializeOwned;
use streamlab_record::{EnvDescriptor, Measurement};

pub use spec::{ArmSpec, KnobSpec, KnobType, registry_json};

/// Every arm the harness can run.
pub const REGISTRY: &[&ArmSpec] = &[
    &kafka_sink::raw::ARM,
    &kafka_sink::framework::ARM,
    &clients::rdkafka_arm::ARM,
    &clients::c_tool::ARM_2_12,
    &clients::c_tool::ARM_2_15,
    &clients::java::ARM,
    &clients::partitionline::ARM,
    &mysql_cdc::debezium::SOURCE_ARM,
    &mysql_cdc::debezium::SINK_ARM,
    &mysql_cdc::rust_arm::ARM,
    &mysql_cdc::redpanda::ARM,
    &durability::RDKAFKA_ARM,
    &durability::PARTITIONLINE_ARM,
    &durability::JAVA_ARM,
];

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

pub fn find(bench: &str, arm: &str) -> Option<&'static ArmSpec> {
    REGISTRY.iter().copied().find(|s| s.bench == bench && s.arm == arm)
}

pub fn run(bench: &str, arm: &str, ctx: &ArmContext) -> Result<Measurement> {
    match find(bench, arm) {
        Some(spec) => (spec.run)(ctx),
        None => {
            let known: Vec<String> = REGISTRY.iter().map(|s| format!("{}/{}", s.bench, s.arm)).collect();
            bail!("the harness has no arm {arm:?} for bench {bench:?}; it has {known:?}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_arm_s_knob_schema_is_read_off_its_struct() {
        for spec in REGISTRY {
            let knobs = spec.knobs();
            assert!(!knobs.is_empty(), "{}/{} reads no knobs", spec.bench, spec.arm);
            let mut names: Vec<&str> = knobs.iter().map(|k| k.name).collect();
            names.dedup();
            assert_eq!(names.len(), knobs.len(), "{}/{}: a knob named twice", spec.bench, spec.arm);
        }
    }

    #[test]
    fn arms_are_registered_once_and_found_by_name() {
        let mut names: Vec<(&str, &str)> = REGISTRY.iter().map(|s| (s.bench, s.arm)).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), REGISTRY.len(), "an arm is registered twice");
        assert_eq!(find("kafka_sink", "raw").map(|s| s.arm), Some("raw"));
        assert!(find("kafka_sink", "nope").is_none());
    }

    #[test]
    fn the_registry_prints_as_the_json_xtask_reads() {
        let v: serde_json::Value = serde_json::from_str(&registry_json()).unwrap();
        assert_eq!(v["schema"], 1);
        let raw = v["arms"].as_array().unwrap().iter().find(|a| a["arm"] == "raw").unwrap();
        assert_eq!(raw["bench"], "kafka_sink");
        let warmup = raw["knobs"].as_array().unwrap().iter().find(|k| k["name"] == "warmup_s").unwrap();
        assert_eq!((warmup["type"].as_str(), warmup["required"].as_bool()), (Some("float"), Some(true)));
    }
}
