//! The `applied` map every client record carries (see `streamlab_record::applied`): the work, and the
//! settings each client ran it with, read back from the client where it can say. Five clients doing the
//! same point must write the same strings wherever they did the same thing.
//!
//! How connections are counted: the connections that carry produce or fetch requests, per broker.
//! librdkafka, the Java client and partitionline each also open a bootstrap/metadata connection (and Java's
//! consumer one to its group coordinator); none of those carries data, and none is counted.

use streamlab_record::applied::{self, AppliedBuilder};

use super::{ClientKnobs, Workload};

/// The clock starts before the client has connected: bootstrap connect, metadata and the leader connections
/// are inside the window (the C tool's produce clock, which cannot be moved).
pub const CLOCK_BEFORE_CONNECT: &str = "before connect";
/// The clock starts when the first record arrives (the C tool's fetch clock): connect, metadata and the first
/// Fetch round trip are outside it.
pub const CLOCK_FIRST_RECORD: &str = "first record received";
/// Java's ConsumerPerformance `fetch.time.ms`: from the consumer's construction, minus the group join.
pub const CLOCK_AFTER_GROUP_JOIN: &str = "after group join";
/// Each round trip is timed alone, from the send to its acknowledgement.
pub const CLOCK_PER_ROUND_TRIP: &str = "per round trip";

/// The partitioner partitionline runs for keyless records (DefaultPartitioner).
pub const PARTITIONLINE_PARTITIONER: &str = "partitionline round-robin per record";
/// `producer.partitioner.class` of the latency workload: every record names partition 0, no partitioner runs.
pub const EXPLICIT_PARTITION: &str = "none: every record to partition 0";

/// What was done, in words: the same for every client at the same point.
pub fn workload(knobs: &ClientKnobs) -> String {
    match knobs.workload {
        Workload::Produce => {
            format!("produce {} x {} B to {} partitions", knobs.count, knobs.payload_bytes, knobs.partitions)
        }
        Workload::Fetch => {
            format!("fetch {} records of {} B from {} partitions", knobs.count, knobs.payload_bytes, knobs.partitions)
        }
        Workload::Latency => format!(
            "latency {} sequential round trips of {} B to 1 partition after {} warm-up",
            knobs.latency_samples, knobs.payload_bytes, knobs.latency_warmup
        ),
        Workload::Paced => format!(
            "paced {} x {} B (stamped) to {} partitions over {} s, open loop",
            knobs.paced_records(),
            knobs.payload_bytes,
            knobs.partitions,
            knobs.paced_seconds
        ),
    }
}

fn offered_load(knobs: &ClientKnobs) -> String {
    match knobs.workload {
        Workload::Produce => "unbounded".into(),
        Workload::Fetch => "all records present before the start".into(),
        Workload::Latency => "one record in flight".into(),
        Workload::Paced => format!("{} records/s", knobs.rate),
    }
}

/// The value's bytes: a paced record's begins with its stamp.
fn format(knobs: &ClientKnobs) -> &'static str {
    match knobs.workload {
        Workload::Paced => "bytes, a 16-byte sequence and intended-send stamp, then 'x'",
        _ => knobs.payload.format(),
    }
}

/// Each record is timed from the moment the schedule meant it to be sent, not from when the client took it.
pub const CLOCK_INTENDED_SEND: &str = "each record from its intended send time";

/// The keys every client record has: workload, format (`bytes`: every client sends the same 'x' payload; Java
/// may send perf-test's random A-Z instead, said in the format),
/// key (`none`), data connections per broker, when the clock starts, the offered load. The adapter adds its
/// client's `producer.*` or `consumer.*` settings.
pub fn base(knobs: &ClientKnobs, connections_per_broker: usize, clock_start: &str) -> AppliedBuilder {
    AppliedBuilder::new()
        .set(applied::WORKLOAD, workload(knobs))
        .set(applied::FORMAT, format(knobs))
        .set(applied::KEY, "none")
        .set(applied::CONNECTIONS, format!("{connections_per_broker} per broker"))
        .set(applied::CLOCK_START, clock_start)
        .set(applied::OFFERED_LOAD, offered_load(knobs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn knobs(workload: &str) -> ClientKnobs {
        serde_json::from_value(serde_json::json!({
            "workload": workload, "listener": "plaintext", "compression": "none", "acks": 1, "idempotence": false,
            "count": 2000000, "payload_bytes": 100, "partitions": 6, "linger_ms": 5, "batch_messages": 32768,
            "payload": "x", "queue_full": "park", "connections": 0,
            "batch_bytes": 1000000, "queue_messages": 1000000, "fetch_max_wait_ms": 100, "fetch_min_bytes": 1,
            "fetch_max_bytes": 16777216, "latency_warmup": 1000, "latency_samples": 10000, "kafka_version": "4.1.0"
        }))
        .unwrap()
    }

    #[test]
    fn the_workload_names_the_operation_and_its_size() {
        assert_eq!(workload(&knobs("produce")), "produce 2000000 x 100 B to 6 partitions");
        assert_eq!(workload(&knobs("fetch")), "fetch 2000000 records of 100 B from 6 partitions");
        assert_eq!(
            workload(&knobs("latency")),
            "latency 10000 sequential round trips of 100 B to 1 partition after 1000 warm-up"
        );
    }

    #[test]
    fn every_record_says_format_key_connections_clock_and_load() {
        let a = base(&knobs("produce"), 1, CLOCK_BEFORE_CONNECT).build();
        assert_eq!(
            [&a["format"], &a["key"], &a["connections"], &a["clock_start"], &a["offered_load"]],
            ["bytes", "none", "1 per broker", "before connect", "unbounded"]
        );
        assert_eq!(
            base(&knobs("fetch"), 1, CLOCK_FIRST_RECORD).build()["offered_load"],
            "all records present before the start"
        );
    }
}
