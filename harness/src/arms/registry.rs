//! [`registry`], every arm the harness can run, and finding and running one by name. The arms of their own are
//! listed here; every Kafka client driver ([`crate::drivers::DRIVERS`]) is an arm of the clients bench, and of the
//! durability bench when it can keep a ledger.

use anyhow::{Context, Result, bail};
use streamlab_record::Measurement;

use super::spec::{ArmSpec, Runs};
use super::{ArmContext, clients, durability, kafka_sink, mysql_cdc};
use crate::drivers::DRIVERS;
use crate::drivers::contract::ClientKnobs;

/// The arms that are programs of their own.
const OWN: &[&ArmSpec] = &[
    &kafka_sink::raw::ARM,
    &kafka_sink::framework::ARM,
    &mysql_cdc::debezium::SOURCE_ARM,
    &mysql_cdc::debezium::SINK_ARM,
    &mysql_cdc::rust_arm::ARM,
    &mysql_cdc::redpanda::ARM,
];

/// Every arm the harness can run.
pub fn registry() -> Vec<ArmSpec> {
    let own = OWN.iter().map(|&&spec| spec);
    let clients = DRIVERS.iter().map(|&d| ArmSpec::driver::<ClientKnobs>(clients::BENCH, d, d.tools()));
    let ledgers = DRIVERS.iter().filter_map(|&d| Some((d, d.ledger()?.tools())));
    let durability = ledgers.map(|(d, tools)| ArmSpec::driver::<durability::Knobs>(durability::BENCH, d, tools));
    own.chain(clients).chain(durability).collect()
}

/// What `harness arms --json` prints.
pub fn registry_json() -> String {
    let arms: Vec<serde_json::Value> = registry()
        .iter()
        .map(|a| serde_json::json!({ "bench": a.bench, "arm": a.arm, "knobs": a.knobs(), "tools": a.tools }))
        .collect();
    serde_json::json!({ "schema": 2, "arms": arms }).to_string()
}

pub fn find(bench: &str, arm: &str) -> Option<ArmSpec> {
    registry().into_iter().find(|s| s.bench == bench && s.arm == arm)
}

pub fn run(bench: &str, arm: &str, ctx: &ArmContext) -> Result<Measurement> {
    let Some(spec) = find(bench, arm) else {
        let known: Vec<String> = registry().iter().map(|s| format!("{}/{}", s.bench, s.arm)).collect();
        bail!("the harness has no arm {arm:?} for bench {bench:?}; it has {known:?}")
    };
    match spec.runs {
        Runs::Own(run) => run(ctx),
        Runs::Driver(driver) if bench == clients::BENCH => clients::run(ctx, driver),
        Runs::Driver(driver) => {
            let producer = driver.ledger().with_context(|| format!("{arm} keeps no ledger"))?;
            durability::run(ctx, driver.name(), producer)
        }
    }
}
