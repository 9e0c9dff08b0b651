//! The produce loop: try_send as fast as the client takes records, and on QueueFull either park (the lab's loop)
//! or spin as seed 003's bench_produce does; then flush, and count what the broker acknowledged.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use partitionline::{ProduceRecord, Producer, ProducerConfig};
use serde::{Deserialize, Serialize};

use crate::{CLOSE_TIMEOUT, FLUSH_TIMEOUT, STALL_TIMEOUT, Stall};

/// The seed's bench_produce retries `try_send` this many times on QueueFull before it yields.
const SPINS_BEFORE_YIELD: u32 = 32;

/// How long the lab's own loop parks on QueueFull: tokio's timer resolution.
const PARK: Duration = Duration::from_millis(1);

/// How often, and how far apart, `Producer::new` is tried again on a retriable broker error.
const NEW_RETRIES: usize = 40;
const NEW_RETRY_BACKOFF: Duration = Duration::from_millis(250);

/// What a producer loop does when the client's queue is full (the clients matrix's `queue_full` knob).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueFull {
    /// Park: sleep 1 ms (tokio's timer resolution) and try again; a core is left to the broker.
    #[default]
    Park,
    /// Seed 003's bench_produce loop: retry `try_send` 32 times, then `yield_now`; it keeps a core busy.
    Spin,
}

impl QueueFull {
    /// What the produce loop does on QueueFull, in the record's command.
    pub fn described(self) -> String {
        match self {
            QueueFull::Park => format!("parked {} ms (the lab's loop)", PARK.as_millis()),
            QueueFull::Spin => {
                format!("retried {SPINS_BEFORE_YIELD} times then yield_now (the seed's bench_produce loop)")
            }
        }
    }
}

/// What the produce loop counted.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Produced {
    /// The broker's acknowledgements as the client counted them (`metrics().records_acked`).
    pub acked: u64,
    /// `metrics().produce_errors`.
    pub failed: u64,
    /// From before `Producer::new` to flush returning.
    pub elapsed: Duration,
    /// CPU seconds of this process over the same span.
    pub client_cpu_s: f64,
    /// How many times try_send refused a record (QueueFull) and the loop parked or spun.
    pub queue_full_refusals: u64,
    /// From the clock's start to the first record `try_send` accepted.
    pub first_queued: Duration,
    pub setup_note: Option<String>,
    /// Records queued when try_send had been refusing them for [`STALL_TIMEOUT`].
    pub stalled_at: Option<u64>,
    pub flush_error: Option<String>,
    pub close_error: Option<String>,
}

/// The seed's bench_produce loop with COUNT set and no warm-up, counting the broker's acknowledgements, its clock
/// started before the producer connects (as the C tool's). Each send clones `record` (its topic is an `Arc<str>`,
/// its value `Bytes`: two reference counts, as the seed's loop).
pub(crate) async fn produce(
    cfg: ProducerConfig,
    record: ProduceRecord,
    count: u64,
    on_full: QueueFull,
) -> Result<Produced> {
    let cpu_before = streamlab_process::procfs::self_cpu_seconds();
    let started = Instant::now();
    let (producer, setup_note) = new_producer(cfg).await?;
    let mut first_queued = Duration::ZERO;
    let (mut queued, mut spins, mut queue_full) = (0u64, 0u32, 0u64);
    // Progress is looked at only when the queue is full (the one way this loop stops moving), so the hot path
    // stays the seed's.
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
    let client_cpu_s = streamlab_process::procfs::self_cpu_seconds() - cpu_before;
    let m = producer.metrics();
    let close_error = producer.close_timeout(CLOSE_TIMEOUT).await.err().map(|e| e.to_string());
    Ok(Produced {
        acked: m.records_acked,
        failed: m.produce_errors,
        elapsed,
        client_cpu_s,
        queue_full_refusals: queue_full,
        first_queued,
        setup_note,
        stalled_at: stalled.then_some(queued),
        flush_error,
        close_error,
    })
}

/// `Producer::new`, tried again while the broker answers with a retriable error. partitionline 0.1.0 does not
/// retry a non-transactional InitProducerId, and a fresh Kafka 4.1 broker answers COORDINATOR_LOAD_IN_PROGRESS
/// until it holds a block of producer ids; Java and librdkafka retry that internally. The note says when it retried
/// (the produce clock starts before `Producer::new`, so the wait is inside it).
pub async fn new_producer(cfg: ProducerConfig) -> Result<(Producer, Option<String>)> {
    let mut retried: Vec<String> = Vec::new();
    loop {
        match Producer::new(cfg.clone()).await {
            Ok(p) => {
                let note = retried.last().map(|e| {
                    format!(
                        "Producer::new took {} attempts (the crate does not retry it); it answered: {e}",
                        retried.len() + 1
                    )
                });
                return Ok((p, note));
            }
            Err(e) if e.broker_code().is_some() && e.is_retriable() && retried.len() < NEW_RETRIES => {
                retried.push(e.to_string());
                tokio::time::sleep(NEW_RETRY_BACKOFF).await;
            }
            Err(e) => return Err(e).context("cannot create the producer"),
        }
    }
}
