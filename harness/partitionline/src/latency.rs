//! The latency loop (seed 003's bench_latency): sequential produce -> acknowledgement round trips.

use std::time::Instant;

use anyhow::{Context, Result};
use partitionline::{Error, ProduceRecord, ProducerConfig};
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
    let mut notes: Vec<String> = setup_note.into_iter().collect();
    let mut measured = Vec::with_capacity(usize::try_from(samples)?);
    let mut tried_again = false;
    for i in 0..warmup + samples {
        let t = Instant::now();
        let mut sent = producer.send(record.clone()).await;
        if let Err(e) = &sent {
            // Every round trip before this one queued exactly one record (each returned its offset), so the crate's
            // counters are read only here, never inside a timed round trip.
            let never_queued = producer.metrics().records_queued == i;
            if may_try_again(i, warmup, e, never_queued, tried_again) {
                tried_again = true;
                notes.push(format!(
                    "warm-up round trip {i} timed out after {:.0} s before its record was queued (partitionline \
                     0.1.0's send can miss the wakeup of its new connection and wait out max_block); tried again \
                     once",
                    t.elapsed().as_secs_f64()
                ));
                sent = producer.send(record.clone()).await;
            }
        }
        sent.with_context(|| format!("round trip {i}"))?;
        if i >= warmup {
            measured.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    producer.close_timeout(CLOSE_TIMEOUT).await.context("closing the latency producer")?;
    Ok(Latencies { samples_us: measured, setup_note: (!notes.is_empty()).then(|| notes.join("; ")) })
}

/// Whether round trip `i` may be sent again after `err`: only a warm-up one (no sample is ever retried), only once
/// per run, and only a timeout whose record the crate never queued, so that no second copy can reach the topic.
fn may_try_again(i: u64, warmup: u64, err: &Error, never_queued: bool, tried_already: bool) -> bool {
    i < warmup && matches!(err, Error::Timeout) && never_queued && !tried_already
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_warm_up_timeout_that_queued_nothing_is_tried_again_and_only_once() {
        assert!(may_try_again(0, 1000, &Error::Timeout, true, false));
        assert!(!may_try_again(1000, 1000, &Error::Timeout, true, false), "a measured sample is never retried");
        assert!(!may_try_again(0, 1000, &Error::Timeout, false, false), "a queued record may have landed");
        assert!(!may_try_again(0, 1000, &Error::Closed, true, false), "only the timeout of the missed wakeup");
        assert!(!may_try_again(5, 1000, &Error::Timeout, true, true), "once per run");
    }
}
