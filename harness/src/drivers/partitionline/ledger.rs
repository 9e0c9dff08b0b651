//! partitionline 0.1.0 as durability's producer. Its `send` answers each record with its `RecordMetadata`
//! (partition and offset), so the ledger is exact; one task per record (at most [`MAX_OUTSTANDING`] unanswered)
//! keeps the pipeline full, since `try_send` + `flush` (the clients arm's path) reports no per-record offsets.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use partitionline::{ProduceRecord, ProducerConfig};
use streamlab_partitionline::{Settings, new_producer};
use streamlab_process::clock::now_us;
use streamlab_process::procfs;
use tokio::task::JoinSet;

use streamlab_record::EnvDescriptor;

use super::Partitionline;
use super::config::{producer_settings_applied, shared_settings};
use crate::drivers::contract::ledger::{Ack, Entry, Ledger, payload};
use crate::drivers::contract::{FIRST_ACK_WAIT, FirstAck, LedgerProduced, LedgerProducer, LedgerWork, first_ack};

/// Records sent and not yet answered, at most (the crate's buffer_memory, 32 MiB, bounds it too).
const MAX_OUTSTANDING: usize = 50_000;

/// One answer: the record's sequence number, its partition and offset or the error, when it came.
type Answer = (usize, Result<(i32, i64), String>, u64);

/// The shared settings as the clients bench translates them, on one connection per broker, with the ledger's
/// requests in flight and delivery timeout.
fn producer_config(env: &EnvDescriptor, work: &LedgerWork) -> Result<ProducerConfig> {
    let listener = env.listener(env.default_listener()).context("the environment has no default listener")?;
    let settings = Settings { connections: 1, ..shared_settings(&work.producer, listener, listener.password()?)? };
    Ok(settings
        .producer()?
        .max_in_flight(usize::try_from(work.max_in_flight)?)
        .delivery_timeout(Duration::from_millis(work.delivery_timeout_ms)))
}

impl LedgerProducer for Partitionline {
    fn produce_with_ledger(
        &self,
        env: &EnvDescriptor,
        work: &LedgerWork,
        topic: &str,
        first: &FirstAck,
    ) -> Result<LedgerProduced> {
        let cfg = producer_config(env, work)?;
        let settings = producer_settings_applied(&cfg);
        let rt =
            tokio::runtime::Builder::new_multi_thread().enable_io().enable_time().build().context("tokio runtime")?;
        let cpu_before = procfs::self_cpu_seconds();
        let outcome = rt.block_on(run_producer(cfg, work, Arc::from(topic), first));
        let client_cpu_s = procfs::self_cpu_seconds() - cpu_before;
        rt.shutdown_timeout(Duration::from_secs(5));
        let (ledger, notes) = outcome?;
        let described: Vec<String> = settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
        Ok(LedgerProduced {
            ledger,
            client_cpu_s,
            command: format!(
                "partitionline {} Producer, send() per record in its own task (at most {MAX_OUTSTANDING} \
                 unanswered): {}",
                partitionline::CLIENT_VERSION,
                described.join(" ")
            ),
            settings,
            // Idempotent or not: the crate's doc says idempotent produce uses one connection per partition, but 0.1.0
            // opens `connections` per broker either way (producer.rs, spawn_node_workers).
            connections: "1 per broker (connections(1)) + 1 metadata connection".into(),
            versions: [("partitionline".to_owned(), partitionline::CLIENT_VERSION.to_owned())].into(),
            note: (!notes.is_empty()).then(|| notes.join("; ")),
            unordered_handoff: Some(
                "each record is sent from its own task on a multi-threaded runtime, so the order partitionline received \
                 them in is not the sequence order",
            ),
        })
    }
}

async fn run_producer(
    cfg: ProducerConfig,
    work: &LedgerWork,
    topic: Arc<str>,
    first: &FirstAck,
) -> Result<(Ledger, Vec<String>)> {
    let (producer, setup_note) = new_producer(cfg).await?;
    let mut notes: Vec<String> = setup_note.into_iter().collect();
    let cap = usize::try_from(work.max_records)?;
    let mut entries: Vec<Entry> = Vec::new();
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    let record = |entries: &mut Vec<Entry>, errors: &mut BTreeMap<String, u64>, (seq, result, at_us): Answer| {
        entries[seq].ack = match result {
            Ok((partition, offset)) => Ack::Ok { partition, offset, at_us },
            Err(e) => {
                *errors.entry(e).or_default() += 1;
                Ack::Failed { at_us }
            }
        };
    };
    let mut running: JoinSet<Answer> = JoinSet::new();
    let send = |entries: &mut Vec<Entry>, running: &mut JoinSet<Answer>| {
        let seq = entries.len();
        let rec = ProduceRecord::to(topic.clone()).value(payload(seq as u64, work.producer.payload_bytes));
        entries.push(Entry { sent_us: now_us(), ack: Ack::Unanswered });
        let p = producer.clone();
        running.spawn(async move {
            let result = p.send(rec).await.map(|m| (m.partition(), m.offset())).map_err(|e| e.to_string());
            (seq, result, now_us())
        });
    };
    // The first record alone: the run starts when the client can send.
    send(&mut entries, &mut running);
    if let Ok(Some(Ok(answer))) = tokio::time::timeout(FIRST_ACK_WAIT, running.join_next()).await {
        record(&mut entries, &mut errors, answer);
    }
    let first_ack_us = first_ack(entries[0].ack, &errors)?;
    first.mark(first_ack_us / 1000);
    let end_us = first_ack_us + work.run_time.as_micros() as u64;
    while entries.len() < cap && now_us() < end_us {
        while running.len() >= MAX_OUTSTANDING {
            if let Some(Ok(answer)) = running.join_next().await {
                record(&mut entries, &mut errors, answer);
            }
        }
        while let Some(done) = running.try_join_next() {
            if let Ok(answer) = done {
                record(&mut entries, &mut errors, answer);
            }
        }
        send(&mut entries, &mut running);
    }
    let deadline = tokio::time::Instant::now() + work.flush_timeout();
    while !running.is_empty() {
        match tokio::time::timeout_at(deadline, running.join_next()).await {
            Ok(Some(Ok(answer))) => record(&mut entries, &mut errors, answer),
            Ok(Some(Err(e))) => notes.push(format!("a send task ended without an answer: {e}")),
            Ok(None) => break,
            Err(_) => {
                notes.push(format!(
                    "{} records unanswered when the flush's {} s were up",
                    running.len(),
                    work.flush_timeout().as_secs()
                ));
                running.abort_all();
                break;
            }
        }
    }
    if let Err(e) = producer.close_timeout(Duration::from_secs(10)).await {
        notes.push(format!("close returned an error: {e}"));
    }
    Ok((Ledger { entries, errors }, notes))
}
