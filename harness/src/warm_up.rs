//! A fresh environment's warm-up (`harness warm-up`), run by a lab run before the first task in each environment it
//! brings up: a broker just started is still compiling its hot paths. In a run of 6 blocks here the first produce-ack
//! latency task in each fresh broker read a p99 of 1.05-1.21 ms and the second 0.16-0.40 ms, whichever client came
//! first, even after a bulk produce and two fetch tasks: the path a one-record-at-a-time produce takes through the
//! broker stayed cold. So the warm-up does both: a bulk produce and sequential one-record round trips, as the
//! latency workload sends them, to a topic of its own (deleted after).

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::util::Timeout;
use serde::Serialize;
use streamlab_record::EnvDescriptor;

use crate::kafka::admin::{delete_topic, fresh_topic};
use crate::kafka::config::default_client_config;

const BULK_RECORDS: u64 = 200_000;
const PAYLOAD_BYTES: usize = 100;

/// How many one-record round trips a warm-up sends at most, and for how long.
#[derive(Debug, Clone, Copy)]
pub struct RoundTrips {
    pub at_most: u32,
    pub for_at_most: Duration,
}

impl RoundTrips {
    /// A measuring run's: about 3-4 s at this machine's 0.15-0.2 ms a round trip.
    pub const MEASURING: RoundTrips = RoundTrips { at_most: 20_000, for_at_most: Duration::from_secs(6) };
    /// The quick profile's (tests and smoke runs, whose figures decide nothing): the same path, a tenth of it.
    pub const QUICK: RoundTrips = RoundTrips { at_most: 2_000, for_at_most: Duration::from_secs(1) };
}

/// What the warm-up did, for the run's terminal and provenance.
#[derive(Debug, Serialize)]
pub struct WarmUp {
    pub bulk_records_per_s: f64,
    pub round_trips: u32,
    /// The median of the last thousand round trips, in microseconds.
    pub round_trip_p50_us: f64,
}

pub fn warm_up(env: &EnvDescriptor, round_trips: RoundTrips) -> Result<WarmUp> {
    let cfg = default_client_config(env)?;
    let topic = format!("streamlab-warm-up-{}", std::process::id());
    fresh_topic(&cfg, &topic, 1, &[])?;
    let result = bulk_then_round_trips(&cfg, &topic, round_trips);
    if let Err(e) = delete_topic(&cfg, &topic) {
        tracing::warn!("could not delete {topic}: {e:#}");
    }
    result
}

fn bulk_then_round_trips(cfg: &rdkafka::ClientConfig, topic: &str, round_trips: RoundTrips) -> Result<WarmUp> {
    let started = Instant::now();
    crate::kafka::fill::fill(cfg, topic, BULK_RECORDS, PAYLOAD_BYTES)?;
    let bulk_records_per_s = BULK_RECORDS as f64 / started.elapsed().as_secs_f64();
    let mut cfg = cfg.clone();
    cfg.set("acks", "1")
        .set("linger.ms", "0")
        .set("batch.num.messages", "1")
        .set("max.in.flight", "1")
        .set("socket.nagle.disable", "true");
    let producer: FutureProducer = cfg.create().context("cannot create the warm-up's producer")?;
    let payload = vec![b'x'; PAYLOAD_BYTES];
    let mut took_us = Vec::with_capacity(round_trips.at_most as usize);
    let started = Instant::now();
    while took_us.len() < round_trips.at_most as usize && started.elapsed() < round_trips.for_at_most {
        let t = Instant::now();
        let record = FutureRecord::<(), [u8]>::to(topic).partition(0).payload(&payload);
        futures_executor::block_on(producer.send(record, Timeout::After(Duration::from_secs(30))))
            .map_err(|(e, _)| e)
            .with_context(|| format!("warm-up round trip {}", took_us.len()))?;
        took_us.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let last = &took_us[took_us.len().saturating_sub(1000)..];
    let round_trip_p50_us = streamlab_record::stats::median(last).unwrap_or(f64::NAN);
    Ok(WarmUp { bulk_records_per_s, round_trips: took_us.len() as u32, round_trip_p50_us })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[ignore = "needs the lab's Kafka: cargo xtask test"]
    fn a_warm_up_produces_in_bulk_then_one_record_at_a_time() {
        // fill() fails unless every bulk record was acknowledged; each round trip waits for its own.
        let did = warm_up(&crate::test_env(), RoundTrips::QUICK).unwrap();
        assert!(did.bulk_records_per_s > 1_000.0, "{did:?}");
        // The quick warm-up stops at 2,000 round trips or a second (0.7 ms each on a cold broker here, more under load).
        assert!(did.round_trips >= 10 && did.round_trips <= 2_000 && did.round_trip_p50_us > 0.0, "{did:?}");
    }
}
