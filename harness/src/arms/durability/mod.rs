//! The durability matrix: producers against a replicated cluster, each keeping a ledger of every record it sent
//! and what the broker acknowledged (partition and offset), with a fault injected at a fixed, seeded moment of
//! the measurement window (through the runner: arms never touch services). After the run every partition is
//! read back from offset 0 to its high watermark and compared with the ledger.
//!
//! One run: a fresh topic (`partitions`, `replication`, min.insync.replicas, no unclean election) with a full
//! ISR; the producer runs `warmup_s + window_s` as fast as the client accepts records (bounded by
//! `max_records`), then flushes; the fault's thread asks for the fault and watches the ISR refill; the arm waits
//! until every partition's ISR is full (so the next task starts on a healed cluster: xtask has no Kafka
//! client to check it, the arm has), reads everything back and compares.

mod cluster;
mod cpu;
mod fault;
pub mod ledger;
mod measure;
mod metrics;
pub mod readback;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Result, bail};
use serde::Deserialize;
use streamlab_record::Measurement;
use streamlab_record::arms::NotRunnable;
use streamlab_record::fault::{FaultKind, FaultStatus};

use self::cluster::{Cluster, TopicSpec};
use self::fault::Plan;
use crate::arms::ArmContext;
use crate::drivers::contract::{FirstAck, LedgerProducer, LedgerWork, ProducerSettings};
use crate::kafka::config::default_client_config;

pub const BENCH: &str = "durability";

/// The fault a point injects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fault {
    None,
    Kill,
    Stop,
    Restart,
}

impl Fault {
    pub fn kind(self) -> Option<FaultKind> {
        match self {
            Fault::None => None,
            Fault::Kill => Some(FaultKind::Kill),
            Fault::Stop => Some(FaultKind::Stop),
            Fault::Restart => Some(FaultKind::Restart),
        }
    }

    pub fn name(self) -> &'static str {
        self.kind().map_or("none", FaultKind::name)
    }
}

/// Every durability arm reads these knobs, with these names and meanings.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Knobs {
    pub partitions: i32,
    pub replication: i32,
    /// min.insync.replicas at replication >= 2 (capped at the replication factor).
    pub min_insync: i32,
    /// 1 or -1 (all).
    pub acks: i32,
    pub idempotence: bool,
    pub fault: Fault,
    /// Fixes the fault's moment in the window (see [`fault::offset_s`]).
    pub fault_seed: u64,
    /// How long a stopped broker stays stopped.
    pub stop_s: f64,
    /// How long a killed broker stays dead before it is started again.
    pub down_s: f64,
    pub warmup_s: f64,
    pub window_s: f64,
    pub payload_bytes: usize,
    pub linger_ms: u64,
    pub max_in_flight: u64,
    /// A bound on the records one run sends, whatever the window.
    pub max_records: u64,
    /// How long a record may wait for its acknowledgement (librdkafka message.timeout.ms, Java and
    /// partitionline delivery.timeout.ms); the flush after the window waits this long plus a margin.
    pub delivery_timeout_ms: u64,
}

impl Knobs {
    /// min.insync.replicas as the topic gets it.
    pub fn min_insync(&self) -> i32 {
        self.min_insync.clamp(1, self.replication.max(1))
    }

    /// The guarantee under test: an acknowledged record survives a single broker's failure.
    pub fn promises_durability(&self) -> bool {
        self.acks == -1 && self.replication >= 3 && self.min_insync() >= 2
    }

    /// What the producer under test is asked to do.
    pub fn work(&self) -> LedgerWork {
        LedgerWork {
            producer: ProducerSettings {
                acks: self.acks,
                idempotence: self.idempotence,
                linger_ms: self.linger_ms,
                payload_bytes: self.payload_bytes,
            },
            max_in_flight: self.max_in_flight,
            delivery_timeout_ms: self.delivery_timeout_ms,
            max_records: self.max_records,
            run_time: Duration::from_secs_f64(self.warmup_s + self.window_s),
        }
    }

    fn plan(&self) -> Option<Plan> {
        let kind = self.fault.kind()?;
        let hold_s = match kind {
            FaultKind::Kill => self.down_s,
            FaultKind::Stop => self.stop_s,
            FaultKind::Restart => 0.0,
        };
        Some(Plan {
            kind,
            offset_s: fault::offset_s(self.fault_seed, self.window_s),
            hold_ms: (hold_s * 1000.0).round() as u64,
        })
    }
}

/// How long a fresh topic may take to have a full ISR (a broker restarted by the previous task catching up).
const TOPIC_READY: Duration = Duration::from_secs(180);
/// How long reading back may make no progress.
const READ_STALL: Duration = Duration::from_secs(60);

/// The run every durability arm shares; `arm` names the client under test, `producer` is its driver's
/// ([`crate::drivers`]).
pub fn run(ctx: &ArmContext, arm: &str, producer: &dyn LedgerProducer) -> Result<Measurement> {
    let knobs: Knobs = ctx.knobs()?;
    let admin = default_client_config(&ctx.env)?;
    let cluster = Cluster::new(&admin)?;
    runnable(&knobs, cluster.broker_count()?)?;
    let topic = TopicSpec {
        name: format!("durability-{arm}"),
        partitions: knobs.partitions,
        replication: knobs.replication,
        min_insync: knobs.min_insync(),
    };
    let initial = cluster.fresh_topic(&topic, TOPIC_READY)?;
    let first = Arc::new(FirstAck::default());
    let done = Arc::new(AtomicBool::new(false));
    let faulting = knobs
        .plan()
        .map(|plan| fault::spawn(plan, admin.clone(), topic.name.clone(), knobs.warmup_s, first.clone(), done.clone()))
        .transpose()?;
    let (cpu, host) = (cpu::Brokers::start(&ctx.env), crate::cpu::HostSpan::start());
    let produced = producer.produce_with_ledger(&ctx.env, &knobs.work(), &topic.name, &first);
    let (brokers_cpu, host) = (cpu.finish(), host.finish());
    // A healed cluster before reading back and before the next task (partitions behind after the fault).
    let healed = cluster.wait_isr_full(&topic.name, fault::ISR_WATCH)?;
    done.store(true, Ordering::Relaxed);
    let happened = faulting.map(|t| t.join().unwrap_or_else(|_| bail!("the fault's thread panicked"))).transpose();
    let produced = produced?;
    let happened = happened?;
    if let Some(h) = &happened {
        match h.result.status {
            FaultStatus::Done => {}
            FaultStatus::Refused => return Err(NotRunnable(h.result.reason.clone().unwrap_or_default()).into()),
            FaultStatus::Failed => bail!("the fault could not be injected: {}", h.result.describe()),
        }
    }
    let logs = readback::read_back(&admin, &topic.name, knobs.partitions, READ_STALL)?;
    let _ = crate::kafka::admin::delete_topic(&admin, &topic.name);
    let brokers_cpu = brokers_cpu.with_fault(happened.as_ref().map(|h| &h.result));
    measure::measurement(measure::Inputs {
        knobs: &knobs,
        topic: &topic,
        initial: &initial,
        produced,
        logs: &logs,
        happened: happened.as_ref(),
        healed: healed.is_some(),
        brokers_cpu,
        host,
    })
}

/// Points this environment or configuration cannot run, refused before a topic is made.
fn runnable(knobs: &Knobs, brokers: usize) -> Result<()> {
    if knobs.replication > brokers as i32 {
        return Err(NotRunnable(format!(
            "replication factor {} needs {} brokers; the cluster has {brokers}",
            knobs.replication, knobs.replication
        ))
        .into());
    }
    if knobs.fault == Fault::Restart && knobs.replication < 2 {
        return Err(
            NotRunnable("a follower restart needs a follower: at replication factor 1 there is none".into()).into()
        );
    }
    Ok(())
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    fn knobs() -> Knobs {
        serde_json::from_value(serde_json::json!({
            "partitions": 6, "replication": 3, "min_insync": 2, "acks": -1, "idempotence": true, "fault": "kill",
            "fault_seed": 7, "stop_s": 5.0, "down_s": 4.0, "warmup_s": 2.0, "window_s": 12.0, "payload_bytes": 100,
            "linger_ms": 5, "max_in_flight": 5, "max_records": 1000000, "delivery_timeout_ms": 120000
        }))
        .unwrap()
    }

    #[test]
    fn only_acks_all_at_three_replicas_with_two_in_sync_promises_durability() {
        let k = knobs();
        assert!(k.promises_durability());
        assert!(!Knobs { acks: 1, ..k.clone() }.promises_durability());
        assert!(!Knobs { replication: 1, ..k.clone() }.promises_durability());
        assert!(!Knobs { min_insync: 1, ..k.clone() }.promises_durability());
        assert_eq!(Knobs { replication: 1, ..k }.min_insync(), 1, "capped at the replication factor");
    }

    #[test]
    fn a_kill_holds_the_broker_down_and_a_stop_stopped_at_a_seeded_offset() {
        let k = knobs();
        let kill = k.plan().unwrap();
        assert_eq!((kill.kind, kill.hold_ms), (FaultKind::Kill, 4000));
        assert_eq!(kill.offset_s, fault::offset_s(7, 12.0));
        let stop = Knobs { fault: Fault::Stop, ..k.clone() }.plan().unwrap();
        assert_eq!((stop.kind, stop.hold_ms), (FaultKind::Stop, 5000));
        assert_eq!(Knobs { fault: Fault::Restart, ..k.clone() }.plan().unwrap().hold_ms, 0);
        assert!(Knobs { fault: Fault::None, ..k }.plan().is_none());
    }
}
