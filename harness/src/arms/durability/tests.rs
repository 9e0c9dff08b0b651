//! The durability run's parts against a real broker (`cargo xtask test` provides one; a cluster too where the
//! environment is one): a ledger, a read-back, and records deleted behind the producer's back.

use std::sync::Arc;
use std::time::Duration;

use futures_executor::block_on;
use rdkafka::admin::{AdminClient, AdminOptions};
use rdkafka::client::DefaultClientContext;
use rdkafka::{Offset, TopicPartitionList};

use super::cluster::{Cluster, TopicSpec};
use super::ledger::compare;
use super::measure::integrity;
use super::metrics::{Window, first_ack_us, timing};
use super::{Knobs, readback};
use crate::drivers::DRIVERS;
use crate::drivers::contract::ledger::Ack;
use crate::drivers::contract::{FirstAck, LedgerProducer};
use crate::drivers::rdkafka::Rdkafka;
use crate::kafka::config::default_client_config;

fn knobs(replication: i32) -> Knobs {
    serde_json::from_value(serde_json::json!({
        "partitions": 2, "replication": replication, "min_insync": 2, "acks": -1, "idempotence": true,
        "fault": "none", "fault_seed": 1, "stop_s": 1.0, "down_s": 1.0, "warmup_s": 0.0, "window_s": 1.0,
        "payload_bytes": 100, "linger_ms": 5, "max_in_flight": 5, "max_records": 20000, "delivery_timeout_ms": 30000
    }))
    .unwrap()
}

#[test]
#[ignore = "needs Kafka: cargo xtask test"]
fn records_deleted_behind_the_producers_back_are_reported_lost_with_their_offsets() {
    let env = crate::test_env();
    let replication = env.kafka.broker_count().min(3) as i32;
    let k = knobs(replication);
    let admin = default_client_config(&env).unwrap();
    let cluster = Cluster::new(&admin).unwrap();
    let topic =
        TopicSpec { name: "durability-test-deleted".into(), partitions: 2, replication, min_insync: k.min_insync() };
    cluster.fresh_topic(&topic, Duration::from_secs(120)).unwrap();
    let first = Arc::new(FirstAck::default());
    let produced = Rdkafka.produce_with_ledger(&env, &k.work(), &topic.name, &first).unwrap();
    let ledger = produced.ledger;
    assert!(first.get().is_some(), "the first acknowledgement was marked");
    // The partition that got the most records: librdkafka's sticky partitioner can put a whole burst on one.
    let on =
        |p: i32| ledger.entries.iter().filter(|e| matches!(e.ack, Ack::Ok { partition, .. } if partition == p)).count();
    let (p, most) = (0..2).map(|p| (p, on(p))).max_by_key(|(_, n)| *n).unwrap();
    assert!(most > 5, "too few records reached partition {p} to delete five: {most}");

    // Untouched, the topic holds exactly what was acknowledged.
    let clean = compare(&ledger, &readback::read_back(&admin, &topic.name, 2, Duration::from_secs(60)).unwrap());
    assert!(clean.lost.is_empty() && clean.duplicated == 0 && clean.reordered == 0, "{clean:?}");
    assert_eq!((clean.acked, clean.read), (ledger.acked(), ledger.acked()));

    // DeleteRecords: that partition's first five records go, as if the broker had lost them.
    let client: AdminClient<DefaultClientContext> = admin.create().unwrap();
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(&topic.name, p, Offset::Offset(5)).unwrap();
    let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
    block_on(client.delete_records(&tpl, &opts)).unwrap();
    let after = compare(&ledger, &readback::read_back(&admin, &topic.name, 2, Duration::from_secs(60)).unwrap());
    let lost: Vec<(i32, i64)> = after.lost.iter().map(|l| (l.partition, l.offset)).collect();
    assert_eq!(lost, (0..5).map(|o| (p, o)).collect::<Vec<_>>());
    assert_eq!(after.read, clean.read - 5);
    let verdict = integrity(&k, &after, None);
    if k.promises_durability() {
        assert_eq!(verdict.status, streamlab_record::IntegrityStatus::Failed);
        assert!(
            verdict.method.contains(&format!("5 acknowledged records lost (partition {p} offsets 0, 1, 2, 3, 4)")),
            "{}",
            verdict.method
        );
    } else {
        // One broker: the configuration promises nothing; the loss is a finding with its count.
        assert!(verdict.method.contains("5 acknowledged-but-lost"), "{}", verdict.method);
    }
    let _ = crate::kafka::admin::delete_topic(&admin, &topic.name);
}

/// A client whose first acknowledgement comes late (every broker stopped with SIGSTOP for longer than the whole run
/// asks for, as a cold JVM, a SASL handshake and metadata on a loaded host can take) still measures a full window:
/// each ledger producer's run starts at its first acknowledgement, and so does the window, never at its start.
#[test]
#[ignore = "needs Kafka: cargo xtask test"]
fn a_late_first_acknowledgement_moves_the_window_and_every_ledger_producer_fills_it() {
    use streamlab_process::clock::now_us;
    use streamlab_process::procfs::{Sig, signal};
    const STALL: Duration = Duration::from_secs(3);
    let env = crate::test_env();
    let replication = env.kafka.broker_count().min(3) as i32;
    // The whole run asked for (0.2 s + 1 s) is shorter than the stall: timed from the first send, it would be over
    // before anything could be acknowledged.
    let k = Knobs {
        warmup_s: 0.2,
        window_s: 1.0,
        max_records: 2_000_000,
        delivery_timeout_ms: 120_000,
        ..knobs(replication)
    };
    let admin = default_client_config(&env).unwrap();
    let cluster = Cluster::new(&admin).unwrap();
    let brokers = env.kafka.pids();
    assert!(!brokers.is_empty(), "the test environment names its brokers' pids");
    for driver in DRIVERS {
        let Some(producer) = driver.ledger() else { continue };
        let topic = TopicSpec {
            name: format!("durability-test-late-{}", driver.name()),
            partitions: 2,
            replication,
            min_insync: k.min_insync(),
        };
        cluster.fresh_topic(&topic, Duration::from_secs(120)).unwrap();
        brokers.iter().for_each(|&pid| signal(pid, Sig::SIGSTOP));
        let stopped_at = now_us();
        let first = Arc::new(FirstAck::default());
        // Scoped: the brokers are resumed whatever the producer does.
        let (produced, resumed_at) = std::thread::scope(|s| {
            let resume = s.spawn(|| {
                std::thread::sleep(STALL);
                let at = now_us();
                brokers.iter().for_each(|&pid| signal(pid, Sig::SIGCONT));
                at
            });
            (producer.produce_with_ledger(&env, &k.work(), &topic.name, &first), resume.join().unwrap())
        });
        let ledger = produced.unwrap_or_else(|e| panic!("{}: {e:#}", driver.name())).ledger;
        let first_ack = first_ack_us(&ledger).unwrap();
        let sent = ledger.entries[0].sent_us;
        assert!(sent >= stopped_at && first_ack >= resumed_at, "{}: acknowledged while stopped", driver.name());
        assert_eq!(first.get(), Some(first_ack / 1000), "{}: the fault's clock is the window's", driver.name());
        let w = Window::of(&ledger, k.warmup_s, k.window_s).unwrap();
        assert_eq!(w.start_us, first_ack + 200_000, "{}", driver.name());
        let t = timing(&ledger, w, w.start_us);
        let acks: Vec<u64> = ledger
            .entries
            .iter()
            .filter_map(|e| if let Ack::Ok { at_us, .. } = e.ack { Some(at_us) } else { None })
            .collect();
        assert!(
            t.acked_in_window > 0,
            "{}: nothing acknowledged in the window {w:?}: {} sent from {}, {} acknowledged, first {first_ack} last {:?}",
            driver.name(),
            ledger.entries.len(),
            sent,
            acks.len(),
            acks.iter().max()
        );
        let last_send = ledger.entries.iter().map(|e| e.sent_us).max().unwrap();
        assert!(last_send >= w.start_us, "{}: the producer's run ended before its window began", driver.name());
        let _ = crate::kafka::admin::delete_topic(&admin, &topic.name);
    }
}
