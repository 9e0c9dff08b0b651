//! What older records did not state, taken from what they did: a key the arms began to write later is filled in
//! when the record (or its run's provenance) already says what it was, so that a record from before the key and
//! one from after it, which did the same work, stay one configuration. Nothing is guessed: a record whose own
//! words do not settle the value keeps the key absent, and stays apart.

use streamlab_record::applied::{self, QUEUE_CAP};
use streamlab_record::{Record, Status};

use crate::provenance::Provenance;

/// Records written before records named their environment's shape get it from their run's provenance: the brokers
/// its Kafka sizing states (a run from before provenance stated it ran one broker: the cluster came with the
/// sizing, in the same commit) and the heap every lab-started broker has had. An external cluster's shape is not
/// the lab's to know, and a task that did not run had none.
pub fn environment(records: &mut [Record], prov: &Provenance) {
    if !prov.env.managed {
        return;
    }
    let brokers = match &prov.env.kafka_sizing {
        Some(sizing) => sizing.split_whitespace().next().and_then(|n| n.parse::<u32>().ok()),
        None => Some(1),
    };
    for r in records.iter_mut().filter(|r| r.status != Status::NotRun && r.run.kafka_brokers.is_none()) {
        r.run.kafka_brokers = brokers;
        r.run.broker_heap = Some(PRE_SHAPE_BROKER_HEAP.to_owned());
    }
}

/// The heap of every broker the lab started before records named it (`-Xms1g -Xmx1g` since the first native
/// environment).
const PRE_SHAPE_BROKER_HEAP: &str = "1g";

/// Clients producer records written before `applied.queue_cap` existed get it from the client configuration their
/// `details.command` states, read as the arms read it back since: librdkafka's queue.buffering.max.messages and
/// .kbytes (the library's defaults where the command sets neither: the lab's arms set no other queue setting),
/// partitionline's buffer_memory, Java's buffer.memory (its default unless the command sets it). Only the arms and
/// workloads that state a queue cap today are filled in.
pub fn queue_cap(records: &mut [Record]) {
    for r in records.iter_mut().filter(|r| r.bench == "clients" && r.status != Status::NotRun) {
        if r.measurement.applied.is_empty() || r.measurement.applied.contains_key(QUEUE_CAP) {
            continue;
        }
        let workload = r.variant.knobs.get("workload").and_then(|w| w.as_str()).unwrap_or_default();
        let Some(command) = r.measurement.details.get("command") else { continue };
        if let Some(cap) = stated_queue_cap(&r.arm, workload, command) {
            r.measurement.applied.insert(QUEUE_CAP.to_owned(), cap);
        }
    }
}

/// The queue cap a producer command states, for the arms (and their workloads) that write `queue_cap` today.
fn stated_queue_cap(arm: &str, workload: &str, command: &str) -> Option<String> {
    let librdkafka = || {
        let records = setting(command, "queue.buffering.max.messages=").or(LIBRDKAFKA_QUEUE_MESSAGES)?;
        let kbytes = setting(command, "queue.buffering.max.kbytes=").or(LIBRDKAFKA_QUEUE_KBYTES)?;
        Some(applied::queue_cap(Some(records), kbytes * 1024))
    };
    match (arm, workload) {
        (_, "produce") if arm.starts_with("c_") => librdkafka(),
        ("rdkafka", "produce" | "latency") => librdkafka(),
        ("partitionline", "produce" | "latency") => match setting(command, "buffer_memory=") {
            Setting::Value(bytes) => Some(applied::queue_cap(None, bytes)),
            Setting::Absent | Setting::Unreadable => None,
        },
        ("java", "produce") => {
            Some(applied::queue_cap(None, setting(command, "buffer.memory=").or(JAVA_BUFFER_MEMORY)?))
        }
        _ => None,
    }
}

/// A numeric setting in a command's text.
enum Setting {
    Absent,
    Value(u64),
    /// Present, but not a plain number: nothing is read from it, not even the default.
    Unreadable,
}

impl Setting {
    /// The value, the client's `default` where the command does not set it, or None where it cannot be read.
    fn or(self, default: u64) -> Option<u64> {
        match self {
            Setting::Absent => Some(default),
            Setting::Value(v) => Some(v),
            Setting::Unreadable => None,
        }
    }
}

/// The number after `key` in `command` (the first occurrence).
fn setting(command: &str, key: &str) -> Setting {
    let Some(at) = command.find(key) else { return Setting::Absent };
    let digits: String = command[at + key.len()..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().map_or(Setting::Unreadable, Setting::Value)
}

/// librdkafka's defaults (CONFIGURATION.md, 2.x): queue.buffering.max.messages and .kbytes.
const LIBRDKAFKA_QUEUE_MESSAGES: u64 = 100_000;
const LIBRDKAFKA_QUEUE_KBYTES: u64 = 1_048_576;
/// Java's producer default buffer.memory.
const JAVA_BUFFER_MEMORY: u64 = 33_554_432;

#[cfg(test)]
mod tests {
    use super::*;

    /// The commands as committed runs from before the key wrote them, and the caps the same arms state now.
    #[test]
    fn a_producer_command_gives_the_queue_cap_its_arm_states_today() {
        let c_tool = "rdkafka_performance -P -t t -s 100 -c 2000000 -X linger.ms=5 -X batch.size=1000000 \
                      -X queue.buffering.max.messages=1000000";
        assert_eq!(stated_queue_cap("c_2_15", "produce", c_tool).unwrap(), "1000000 records or 1048576 KiB");
        let rust = "rust-rdkafka BaseProducer on plaintext: acks=1 linger.ms=5 queue.buffering.max.messages=1000000";
        assert_eq!(stated_queue_cap("rdkafka", "produce", rust).unwrap(), "1000000 records or 1048576 KiB");
        let latency = "rust-rdkafka FutureProducer, sequential send->delivery on plaintext: acks=1 linger.ms=0";
        assert_eq!(stated_queue_cap("rdkafka", "latency", latency).unwrap(), "100000 records or 1048576 KiB");
        let kbytes = "rdkafka_performance -P -X queue.buffering.max.kbytes=2048";
        assert_eq!(stated_queue_cap("c_2_12", "produce", kbytes).unwrap(), "100000 records or 2048 KiB");
        let pl =
            "partitionline 0.1.0 Producer on plaintext (PLAINTEXT): acks=1 buffer_memory=33554432 compression=none";
        assert_eq!(stated_queue_cap("partitionline", "latency", pl).unwrap(), "32768 KiB");
        let java = "java -Xmx512M ... ProducerPerformance --producer-props acks=1 linger.ms=5";
        assert_eq!(stated_queue_cap("java", "produce", java).unwrap(), "32768 KiB");
        let java_set = "java ... --producer-props acks=1 buffer.memory=67108864";
        assert_eq!(stated_queue_cap("java", "produce", java_set).unwrap(), "65536 KiB");
    }

    #[test]
    fn what_the_command_does_not_settle_stays_unstated() {
        // partitionline's command without its buffer_memory: no default is assumed.
        assert_eq!(stated_queue_cap("partitionline", "produce", "partitionline 0.1.0 Producer: acks=1"), None);
        // A setting that is there but not a plain number is not replaced by the default.
        assert_eq!(
            stated_queue_cap("c_2_15", "produce", "rdkafka_performance -X queue.buffering.max.messages='7'"),
            None
        );
        assert_eq!(stated_queue_cap("java", "produce", "java ... buffer.memory=${MEM}"), None);
        // Arms and workloads that state no queue cap today get none.
        assert_eq!(stated_queue_cap("c_2_15", "latency", "rdkafka_performance -P -l"), None);
        assert_eq!(stated_queue_cap("java", "fetch", "java ... ConsumerPerformance"), None);
        assert_eq!(stated_queue_cap("rdkafka", "fetch", "rust-rdkafka BaseConsumer"), None);
    }

    #[test]
    fn only_clients_records_without_the_key_are_filled_in_and_a_stated_cap_is_kept() {
        let mut old = crate::results::fixtures::record("run-a", "rdkafka", "plaintext", &["listener"], true, 1, 1e6);
        old.bench = "clients".into();
        old.variant.knobs.insert("workload".into(), "produce".into());
        old.measurement.details.insert("command".into(), "rust-rdkafka BaseProducer: acks=1".into());
        let mut stated = old.clone();
        stated.measurement.applied.insert(QUEUE_CAP.into(), "7 records or 1 KiB".into());
        let mut sink = old.clone();
        sink.bench = "kafka_sink".into();
        let mut records = vec![old, stated, sink];
        queue_cap(&mut records);
        assert_eq!(records[0].measurement.applied[QUEUE_CAP], "100000 records or 1048576 KiB");
        assert_eq!(records[1].measurement.applied[QUEUE_CAP], "7 records or 1 KiB", "what a record says is kept");
        assert!(!records[2].measurement.applied.contains_key(QUEUE_CAP), "not a clients record");
    }
}
