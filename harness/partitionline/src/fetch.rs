//! The fetch loop (seed 003's bench_fetch): every partition from offset 0 until the high watermark came back,
//! each non-empty `fetch()` timed.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use partitionline::{Consumer, ConsumerConfig};
use serde::{Deserialize, Serialize};

use crate::{STALL_TIMEOUT, Stall};

/// What the fetch loop counted.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Fetched {
    pub consumed: u64,
    /// The values' bytes.
    pub bytes: u64,
    /// From the return of the first `fetch()` that brought records to the one that reached the high watermark;
    /// zero when a single round brought everything (nothing to time: no rate, not a huge one).
    pub elapsed: Duration,
    /// CPU seconds of this process from `assign_topic`'s return to the end.
    pub client_cpu_s: f64,
    /// Each non-empty `fetch()`, in microseconds.
    pub fetch_request_us: Vec<f64>,
    /// No progress for [`STALL_TIMEOUT`]: stopped at `consumed`.
    pub stalled: bool,
    /// Records the first round brought, before the clock started.
    pub first_round_records: u64,
}

pub(crate) async fn fetch(cfg: ConsumerConfig, topic: &str, high_watermark: u64) -> Result<Fetched> {
    let mut consumer = Consumer::new(cfg).await.context("cannot create the consumer")?;
    consumer.assign_topic(topic, 0).await.with_context(|| format!("cannot assign {topic}"))?;
    let cpu_before = streamlab_process::procfs::self_cpu_seconds();
    let (mut consumed, mut bytes) = (0u64, 0u64);
    let mut fetch_request_us = Vec::new();
    let mut stall = Stall::new(STALL_TIMEOUT);
    let mut stalled = false;
    let mut first: Option<Instant> = None;
    let mut first_round_records = 0;
    while consumed < high_watermark {
        let t = Instant::now();
        let records = consumer.fetch().await.with_context(|| format!("fetch failed after {consumed} records"))?;
        let took = t.elapsed();
        if records.is_empty() {
            if stall.is_stuck(consumed) {
                stalled = true;
                break;
            }
            continue;
        }
        if first.is_none() {
            first = Some(Instant::now());
            first_round_records = records.len() as u64;
        }
        fetch_request_us.push(took.as_secs_f64() * 1e6);
        consumed += records.len() as u64;
        bytes += records.iter().map(|r| r.value.as_ref().map_or(0, |v| v.len() as u64)).sum::<u64>();
    }
    let elapsed =
        if fetch_request_us.len() > 1 { first.map_or(Duration::ZERO, |f| f.elapsed()) } else { Duration::ZERO };
    Ok(Fetched {
        consumed,
        bytes,
        elapsed,
        client_cpu_s: streamlab_process::procfs::self_cpu_seconds() - cpu_before,
        fetch_request_us,
        stalled,
        first_round_records,
    })
}
