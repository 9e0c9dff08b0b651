//! The produce loop: try_send as fast as the client takes records, and on QueueFull either park (the lab's
//! loop) or spin as seed 003's bench_produce does; then flush, and count what the broker acknowledged.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use partitionline::{ProduceRecord, ProducerConfig};

use super::{CLOSE_TIMEOUT, FLUSH_TIMEOUT, STALL_TIMEOUT, Stall, new_producer};
use crate::arms::clients::{Produced, QueueFull, QueueFullSeen};

/// The seed's bench_produce retries `try_send` this many times on QueueFull before it yields.
const SPINS_BEFORE_YIELD: u32 = 32;

/// How long the lab's own loop parks on QueueFull: tokio's timer resolution.
const PARK: Duration = Duration::from_millis(1);

/// What the produce loop does on QueueFull, in the record's command.
pub(super) fn queue_full_text(on_full: QueueFull) -> String {
    match on_full {
        QueueFull::Park => format!("parked {} ms (the lab's loop)", PARK.as_millis()),
        QueueFull::Spin => format!("retried {SPINS_BEFORE_YIELD} times then yield_now (the seed's bench_produce loop)"),
    }
}

pub(super) struct ProduceOutcome {
    pub(super) produced: Produced,
    /// From the clock's start (before `Producer::new`) to the first record `try_send` accepted.
    pub(super) first_queued: Duration,
    pub(super) setup_note: Option<String>,
    /// Records queued when try_send had been refusing them for [`STALL_TIMEOUT`].
    pub(super) stalled_at: Option<u64>,
    pub(super) flush_error: Option<String>,
    pub(super) close_error: Option<String>,
}

/// The seed's bench_produce loop with COUNT set and no warm-up, counting the broker's acknowledgements, its
/// clock started before the producer connects (as the C tool's). Each send clones `record` (its topic is an
/// `Arc<str>`, its value `Bytes`: two reference counts, as the seed's loop).
pub(super) async fn produce_async(
    cfg: ProducerConfig,
    record: ProduceRecord,
    count: u64,
    on_full: QueueFull,
) -> Result<ProduceOutcome> {
    let cpu_before = crate::cpu::process_cpu_seconds();
    let started = Instant::now();
    let (producer, setup_note) = new_producer(cfg).await?;
    let mut first_queued = Duration::ZERO;
    let (mut queued, mut spins, mut queue_full) = (0u64, 0u32, 0u64);
    // Progress is looked at only when the queue is full (the one way this loop stops moving), so the hot
    // path stays the seed's.
    let mut stall = Stall::new(STALL_TIMEOUT);
    let mut stalled = false;
    while queued < count {
        match producer.try_send(record.clone()) {
            Ok(()) => {
                if queued == 0 {
                    first_queued = started.elapsed();
                }
                queued += 1;
                spins = 0;
            }
            Err(partitionline::Error::QueueFull) => {
                queue_full += 1;
                let waited = match on_full {
                    // The lab's own loop parks: no core spins while the client drains its queue.
                    QueueFull::Park => {
                        tokio::time::sleep(PARK).await;
                        true
                    }
                    QueueFull::Spin => {
                        spins += 1;
                        let yielded = spins > SPINS_BEFORE_YIELD;
                        if yielded {
                            tokio::task::yield_now().await;
                            spins = 0;
                        }
                        yielded
                    }
                };
                if waited && stall.is_stuck(queued) {
                    stalled = true;
                    break;
                }
            }
            Err(e) => bail!("try_send failed after {queued} records were queued: {e}"),
        }
    }
    // A flush error does not end the run: the counts and the high watermark say what reached the broker.
    let flush_error = producer.flush_timeout(FLUSH_TIMEOUT).await.err().map(|e| e.to_string());
    let elapsed = started.elapsed();
    let client_cpu_s = crate::cpu::process_cpu_seconds() - cpu_before;
    let m = producer.metrics();
    let close_error = producer.close_timeout(CLOSE_TIMEOUT).await.err().map(|e| e.to_string());
    Ok(ProduceOutcome {
        produced: Produced {
            acked: m.records_acked,
            failed: m.produce_errors,
            elapsed,
            client_cpu_s,
            broker_cpu_s: None,
            // How many times try_send refused a record (QueueFull) and the loop parked or spun.
            queue_full: QueueFullSeen::Refusals(queue_full),
        },
        first_queued,
        setup_note,
        stalled_at: stalled.then_some(queued),
        flush_error,
        close_error,
    })
}
