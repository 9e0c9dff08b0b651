//! The machine's own noise (`harness calibrate`), measured at a run's start and end with the environment up and no
//! task running: a fixed CPU-bound loop on one core and a fixed loopback produce to a fresh topic
//! (streamlab_record::provenance::CALIBRATION_METHOD says the same for readers).

use std::time::Instant;

use anyhow::Result;
use streamlab_record::EnvDescriptor;
use streamlab_record::provenance::CalibrationResult;

use crate::kafka::admin::{delete_topic, fresh_topic};
use crate::kafka::config::default_client_config;

/// Dependent xorshift steps of the CPU loop: under a second on a current core.
const CPU_ITERATIONS: u64 = 100_000_000;
const PRODUCE_RECORDS: u64 = 200_000;
const PRODUCE_BYTES: usize = 100;

pub fn calibrate(env: &EnvDescriptor) -> Result<CalibrationResult> {
    let cpu_loop_per_s = cpu_loop(CPU_ITERATIONS);
    let produce_records_per_s = loopback_produce(env)?;
    let ts_ms = streamlab_process::clock::now_ms();
    Ok(CalibrationResult { ts_ms, cpu_loop_per_s, produce_records_per_s })
}

/// Iterations per second of a loop whose every step depends on the one before (nothing to vectorise or skip).
fn cpu_loop(iterations: u64) -> f64 {
    let started = Instant::now();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..iterations {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = x.wrapping_add(i);
    }
    std::hint::black_box(x);
    iterations as f64 / started.elapsed().as_secs_f64()
}

/// Records per second of the fixed produce, every record acknowledged, to a topic of its own (deleted after).
/// The same produce runs once unmeasured first: a broker just started is still compiling its hot paths (the
/// first produce after start-up was a quarter slower than the last one of the same run here).
fn loopback_produce(env: &EnvDescriptor) -> Result<f64> {
    let cfg = default_client_config(env)?;
    let topic = format!("streamlab-calibration-{}", std::process::id());
    fresh_topic(&cfg, &topic, 1, &[])?;
    let fill = || crate::kafka::fill::fill(&cfg, &topic, PRODUCE_RECORDS, PRODUCE_BYTES);
    let warm = fill();
    let started = Instant::now();
    let filled = warm.and_then(|()| fill());
    let secs = started.elapsed().as_secs_f64();
    if let Err(e) = delete_topic(&cfg, &topic) {
        tracing::warn!("could not delete {topic}: {e:#}");
    }
    filled?;
    Ok(PRODUCE_RECORDS as f64 / secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[ignore = "needs the lab's Kafka: cargo xtask test"]
    fn a_calibration_on_the_labs_broker_acknowledges_every_record_and_gives_both_rates() {
        // fill() fails unless all 200,000 records were acknowledged.
        let c = calibrate(&crate::test_env()).unwrap();
        assert!(c.cpu_loop_per_s > 1e6 && c.produce_records_per_s > 1_000.0, "{c:?}");
        assert!(c.ts_ms > 1_700_000_000_000, "a wall-clock time: {c:?}");
    }
}
