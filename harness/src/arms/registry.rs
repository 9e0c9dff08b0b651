//! [`REGISTRY`], every arm the harness can run, and finding one by name. Apart from the arms' shared types
//! (`super`), which every arm imports: the registry imports every arm.

use anyhow::{Result, bail};
use streamlab_record::Measurement;

use super::spec::ArmSpec;
use super::{ArmContext, kafka_sink, mysql_cdc};
use crate::drivers;

/// Every arm the harness can run.
pub const REGISTRY: &[&ArmSpec] = &[
    &kafka_sink::raw::ARM,
    &kafka_sink::framework::ARM,
    &drivers::rdkafka::CLIENTS_ARM,
    &drivers::c_tool::ARM_2_12,
    &drivers::c_tool::ARM_2_15,
    &drivers::java::CLIENTS_ARM,
    &drivers::partitionline::CLIENTS_ARM,
    &mysql_cdc::debezium::SOURCE_ARM,
    &mysql_cdc::debezium::SINK_ARM,
    &mysql_cdc::rust_arm::ARM,
    &mysql_cdc::redpanda::ARM,
    &drivers::rdkafka::DURABILITY_ARM,
    &drivers::partitionline::DURABILITY_ARM,
    &drivers::java::DURABILITY_ARM,
];

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
