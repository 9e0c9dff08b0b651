//! The latency loop (seed 003's bench_latency): sequential produce -> acknowledgement round trips.

use std::time::Instant;

use anyhow::{Context, Result};
use partitionline::{ProduceRecord, ProducerConfig};
use serde::{Deserialize, Serialize};

use crate::{CLOSE_TIMEOUT, new_producer};

/// The measured round trips.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Latencies {
    /// From `send()` to its future resolving with the Produce response, in microseconds.
    pub samples_us: Vec<f64>,
    pub setup_note: Option<String>,
}

/// `warmup` then `samples` sequential round trips; the measured ones in microseconds.
pub(crate) async fn latency(
    cfg: ProducerConfig,
    record: ProduceRecord,
    warmup: u64,
    samples: u64,
) -> Result<Latencies> {
    let (producer, setup_note) = new_producer(cfg).await?;
    let mut measured = Vec::with_capacity(usize::try_from(samples)?);
    for i in 0..warmup + samples {
        let t = Instant::now();
        producer.send(record.clone()).await.with_context(|| format!("round trip {i}"))?;
        if i >= warmup {
            measured.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    producer.close_timeout(CLOSE_TIMEOUT).await.context("closing the latency producer")?;
    Ok(Latencies { samples_us: measured, setup_note })
}
