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
use super::{Knobs, readback};
use crate::drivers::contract::ledger::Ack;
use crate::drivers::contract::{FirstSend, LedgerProducer};
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
    let first = Arc::new(FirstSend::default());
    let produced = Rdkafka.produce_with_ledger(&env, &k.work(), &topic.name, &first).unwrap();
    let ledger = produced.ledger;
    assert!(first.get().is_some(), "the first send was marked");
    let on_p0 = ledger.entries.iter().filter(|e| matches!(e.ack, Ack::Ok { partition: 0, .. })).count();
    assert!(on_p0 > 5, "too few records reached partition 0 to delete five: {on_p0}");

    // Untouched, the topic holds exactly what was acknowledged.
    let clean = compare(&ledger, &readback::read_back(&admin, &topic.name, 2, Duration::from_secs(60)).unwrap());
    assert!(clean.lost.is_empty() && clean.duplicated == 0 && clean.reordered == 0, "{clean:?}");
    assert_eq!((clean.acked, clean.read), (ledger.acked(), ledger.acked()));

    // DeleteRecords: partition 0's first five records go, as if the broker had lost them.
    let client: AdminClient<DefaultClientContext> = admin.create().unwrap();
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(&topic.name, 0, Offset::Offset(5)).unwrap();
    let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
    block_on(client.delete_records(&tpl, &opts)).unwrap();
    let after = compare(&ledger, &readback::read_back(&admin, &topic.name, 2, Duration::from_secs(60)).unwrap());
    let lost: Vec<(i32, i64)> = after.lost.iter().map(|l| (l.partition, l.offset)).collect();
    assert_eq!(lost, (0..5).map(|o| (0, o)).collect::<Vec<_>>());
    assert_eq!(after.read, clean.read - 5);
    let verdict = integrity(&k, &after, None);
    if k.promises_durability() {
        assert_eq!(verdict.status, streamlab_record::IntegrityStatus::Failed);
        assert!(
            verdict.method.contains("5 acknowledged records lost (partition 0 offsets 0, 1, 2, 3, 4)"),
            "{}",
            verdict.method
        );
    } else {
        // One broker: the configuration promises nothing; the loss is a finding with its count.
        assert!(verdict.method.contains("5 acknowledged-but-lost"), "{}", verdict.method);
    }
    let _ = crate::kafka::admin::delete_topic(&admin, &topic.name);
}
