//! Arms: each `(bench, arm)` pair is one measurement program. The runner starts one process per
//! arm x variant x rep; the arm prints one [`Measurement`] as JSON on stdout and logs on stderr.

pub mod kafka_sink;

use anyhow::{Result, bail};
use serde::de::DeserializeOwned;
use streamlab_record::{EnvDescriptor, Measurement};

/// Everything an arm gets from the runner.
pub struct ArmContext {
    pub env: EnvDescriptor,
    /// The variant's knobs as the matrix resolved them (only those that apply to this arm).
    pub knobs: serde_json::Map<String, serde_json::Value>,
}

impl ArmContext {
    /// The knobs as the arm's own typed struct (unknown or mistyped knobs are refused by name).
    pub fn knobs<T: DeserializeOwned>(&self) -> Result<T> {
        serde_json::from_value(serde_json::Value::Object(self.knobs.clone()))
            .map_err(|e| anyhow::anyhow!("bad knobs for this arm: {e}"))
    }
}

pub fn run(bench: &str, arm: &str, ctx: &ArmContext) -> Result<Measurement> {
    match (bench, arm) {
        ("kafka_sink", "raw") => kafka_sink::raw::run(ctx),
        ("kafka_sink", "framework") => kafka_sink::framework::run(ctx),
        _ => bail!("the harness has no arm {arm:?} for bench {bench:?}"),
    }
}
