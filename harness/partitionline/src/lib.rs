//! partitionline 0.1.0 as the lab drives it (pure Rust: tokio + rustls, no librdkafka). The harness's arms decide
//! what to run and describe it; this crate builds the client's configuration from the lab's [`Settings`] and runs
//! seed 003's bench loops (produce, fetch, latency) through the crate's public API.
//!
//! The clients matrix's arm runs the loops in `partitionline-bench`, a binary built as the seed built its benches
//! (the `seed-003` profile: thin LTO, one codegen unit). It reads one [`Job`] as JSON on stdin and prints its
//! [`Outcome`] as JSON on stdout. The durability arm links the library into the harness.

mod config;
mod fetch;
mod latency;
mod paced;
mod produce;

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

pub use config::{Security, Settings, server_name};
pub use fetch::Fetched;
pub use latency::Latencies;
pub use produce::{Produced, QueueFull, new_producer};

/// Give up on a produce or fetch that makes no progress for this long.
pub const STALL_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest a produce run's final flush may take (the crate's own flush() deadline is 30 s).
pub const FLUSH_TIMEOUT: Duration = Duration::from_secs(300);
/// How long closing a producer may take once everything is flushed.
pub const CLOSE_TIMEOUT: Duration = Duration::from_secs(10);

/// One run of a bench loop against `topic`, which the harness made and will verify.
#[derive(Clone, Serialize, Deserialize)]
pub struct Job {
    pub settings: Settings,
    pub topic: String,
    pub work: Work,
}

/// Which loop, and how much of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Work {
    /// `count` records through `try_send`, then flush (seed 003's bench_produce).
    Produce { count: u64, on_full: QueueFull },
    /// Every partition from offset 0 until `high_watermark` records came back (bench_fetch).
    Fetch { high_watermark: u64 },
    /// Sequential produce round trips to partition 0, `warmup` unmeasured (bench_latency).
    Latency { warmup: u64, samples: u64 },
    /// `records` stamped records offered at `rate` a second, open loop (the clients matrix's paced workload).
    Paced { rate: u64, records: u64 },
}

/// What a loop measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Produced(Produced),
    Fetched(Fetched),
    Latencies(Latencies),
    Paced { run: streamlab_record::paced::PacedLoop, setup_note: Option<String> },
}

/// Run `job` on a multi-thread runtime like the seed's `#[tokio::main]` (one worker per CPU).
pub fn run(job: &Job) -> Result<Outcome> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_io()
        .enable_time()
        .build()
        .context("cannot start the tokio runtime")?;
    if let Work::Paced { rate, records } = job.work {
        let (run, setup_note) =
            paced::paced(&rt, job.settings.producer()?, &job.topic, rate, records, job.settings.payload_bytes)?;
        rt.shutdown_timeout(Duration::from_secs(5));
        return Ok(Outcome::Paced { run, setup_note });
    }
    let outcome = rt.block_on(async {
        match job.work {
            Work::Produce { count, on_full } => {
                let record = partitionline::ProduceRecord::to(job.topic.as_str()).value(payload(&job.settings));
                produce::produce(job.settings.producer()?, record, count, on_full).await.map(Outcome::Produced)
            }
            Work::Fetch { high_watermark } => {
                fetch::fetch(job.settings.consumer()?, &job.topic, high_watermark).await.map(Outcome::Fetched)
            }
            Work::Latency { warmup, samples } => {
                let record =
                    partitionline::ProduceRecord::to(job.topic.as_str()).partition(0).value(payload(&job.settings));
                let cfg = job.settings.latency_producer()?;
                latency::latency(cfg, record, warmup, samples).await.map(Outcome::Latencies)
            }
            Work::Paced { .. } => unreachable!("run on a plain thread above"),
        }
    });
    // Without waiting on the crate's background tasks (metadata refresh, idle connections).
    rt.shutdown_timeout(Duration::from_secs(5));
    outcome
}

/// The record value every loop sends: `payload_bytes` of 'x', as the seed's benches.
fn payload(settings: &Settings) -> Vec<u8> {
    vec![b'x'; settings.payload_bytes]
}

/// Whether a count has stood still for longer than `limit`.
struct Stall {
    limit: Duration,
    count: u64,
    since: Instant,
}

impl Stall {
    fn new(limit: Duration) -> Self {
        Stall { limit, count: 0, since: Instant::now() }
    }

    fn is_stuck(&mut self, count: u64) -> bool {
        if count != self.count {
            (self.count, self.since) = (count, Instant::now());
        }
        self.since.elapsed() > self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_that_moves_is_never_stuck_and_one_that_stands_still_is() {
        let mut stall = Stall::new(Duration::from_millis(20));
        assert!(!stall.is_stuck(0));
        std::thread::sleep(Duration::from_millis(30));
        assert!(!stall.is_stuck(5), "progress resets the clock");
        assert!(!stall.is_stuck(5));
        std::thread::sleep(Duration::from_millis(30));
        assert!(stall.is_stuck(5));
    }
}
