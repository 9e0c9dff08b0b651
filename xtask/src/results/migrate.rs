//! `lab migrate`: a results directory's records brought to this build's schema, once, in place (each file written
//! atomically); the result is committed, and loading reads one schema.
//!
//! streamlab.record/1 to /2: what /1 records did not state is taken from what they did: a key the arms began to
//! write later is filled in when the record (or its run's provenance) already says what it was, so that a record
//! from before the key and one from after it, which did the same work, stay one configuration. Nothing is guessed:
//! a record whose own words do not settle the value keeps the key absent, and stays apart. Records already at /2
//! are left as they are.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use streamlab_record::applied::{self, QUEUE_CAP};
use streamlab_record::{Record, SCHEMA, SCHEMA_V1, Status};

use super::load::sorted_entries;
use crate::provenance::{PROVENANCE_FILE, Provenance};

#[derive(clap::Args)]
pub struct MigrateArgs {
    /// The results directory (default: results/).
    #[arg(long)]
    pub results: Option<PathBuf>,
}

pub fn migrate_cmd(args: MigrateArgs) -> Result<()> {
    let dir = args.results.unwrap_or_else(crate::paths::results_dir);
    let (files, records) = migrate_dir(&dir)?;
    match records {
        0 => println!("{}: every record is at {SCHEMA} already", dir.display()),
        n => println!("{}: {n} records in {files} files migrated to {SCHEMA}; commit them", dir.display()),
    }
    Ok(())
}

/// Every run directory under `dir` (those with a provenance.json): files and records migrated.
pub fn migrate_dir(dir: &Path) -> Result<(usize, usize)> {
    let (mut files, mut records) = (0, 0);
    for run in sorted_entries(dir)?.into_iter().filter(|r| r.join(PROVENANCE_FILE).is_file()) {
        let provenance = Provenance::load(&run.join(PROVENANCE_FILE))?;
        for path in sorted_entries(&run)?.into_iter().filter(|p| p.extension().is_some_and(|x| x == "jsonl")) {
            let n = migrate_file(&path, &provenance)?;
            files += usize::from(n > 0);
            records += n;
        }
    }
    Ok((files, records))
}

/// One JSONL file's /1 records brought to /2 (the file rewritten only when it held any): how many.
fn migrate_file(path: &Path, provenance: &Provenance) -> Result<usize> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut records = Vec::new();
    let mut old = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let at = || format!("{}:{}", path.display(), i + 1);
        let mut value: serde_json::Value = serde_json::from_str(line).with_context(|| format!("{}: not JSON", at()))?;
        match value.get("schema").and_then(|s| s.as_str()) {
            Some(SCHEMA) => {}
            Some(SCHEMA_V1) => {
                value["schema"] = SCHEMA.into();
                old.push(records.len());
            }
            found => bail!("{}: schema {found:?}: this build migrates {SCHEMA_V1:?} to {SCHEMA:?}", at()),
        }
        records.push(serde_json::from_value::<Record>(value).with_context(|| format!("{}: not a record", at()))?);
    }
    if old.is_empty() {
        return Ok(0);
    }
    let mut filled: Vec<Record> = old.iter().map(|&i| records[i].clone()).collect();
    environment(&mut filled, provenance);
    queue_cap(&mut filled);
    for (&i, r) in old.iter().zip(filled) {
        records[i] = r;
    }
    let lines = streamlab_record::jsonl::to_lines(path, &records)?;
    streamlab_record::jsonl::write_atomic(path, &lines)?;
    Ok(old.len())
}

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
    use crate::results::fixtures;
    use crate::results::load::{Run, load_results};

    #[test]
    fn v1_records_get_their_environment_shape_from_their_run_s_provenance() {
        let dir = tempfile::tempdir().unwrap();
        // /1 records from before they named their environment.
        let unnamed = |id: &str| {
            let mut records = fixtures::kafka_sink_records(id);
            records.iter_mut().for_each(|r| (r.run.kafka_brokers, r.run.broker_heap) = (None, None));
            records
        };
        let one = fixtures::write_run(dir.path(), "a-one", 1_000, &unnamed("a-one"));
        let cluster = fixtures::write_run(dir.path(), "b-cluster", 2_000, &unnamed("b-cluster"));
        let mut named = unnamed("c-named");
        named.iter_mut().for_each(|r| r.run.kafka_brokers = Some(3));
        let with_name = fixtures::write_run(dir.path(), "c-named", 3_000, &named);
        let prov = cluster.join(PROVENANCE_FILE);
        let mut p: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&prov).unwrap()).unwrap();
        p["env"]["kafka_sizing"] = crate::env::kafka::sizing(3, false).into();
        std::fs::write(&prov, p.to_string()).unwrap();
        for run in [&one, &cluster, &with_name] {
            let file = run.join("kafka_sink.jsonl");
            std::fs::write(&file, std::fs::read_to_string(&file).unwrap().replace(SCHEMA, SCHEMA_V1)).unwrap();
        }
        migrate_dir(dir.path()).unwrap();
        let runs = load_results(dir.path()).unwrap();
        let shapes = |run: &Run| {
            // A task that did not run had no environment.
            let mut s: Vec<String> =
                run.matrices["kafka_sink"].records.iter().filter_map(|r| r.run.environment_shape()).collect();
            s.dedup();
            s
        };
        // No sizing in provenance: the run predates the cluster, one broker. (The Kafka version is named where
        // the record names it: the versions page says where each version comes from.)
        assert_eq!(shapes(&runs[0]), ["1 broker, 1g heap"]);
        assert_eq!(shapes(&runs[1]), ["3 brokers, 1g heap"]);
        // What a record says is kept, whatever its provenance's sizing.
        assert_eq!(runs[2].matrices["kafka_sink"].records[0].run.kafka_brokers, Some(3));
        // Two shapes are two configurations: never pooled or compared as one.
        let config = |run: &Run| crate::results::model::config_of(&run.matrices["kafka_sink"].records[0]);
        assert_ne!(config(&runs[0]), config(&runs[1]));
        assert_eq!(config(&runs[0]).get("environment").map(String::as_str), Some("1 broker, 1g heap"));
    }

    /// A /1 run is migrated once: its records read at /2 with what their words settle filled in, a second pass
    /// changes nothing, and before the migration loading refuses the run, naming the command.
    #[test]
    fn a_v1_run_is_migrated_once_and_loads_after_but_not_before() {
        let dir = tempfile::tempdir().unwrap();
        let mut old = crate::results::fixtures::record("r1", "rdkafka", "plaintext", &["listener"], true, 1, 1e6);
        old.bench = "clients".into();
        old.run.kafka_brokers = None;
        old.run.broker_heap = None;
        old.variant.knobs.insert("workload".into(), "produce".into());
        old.measurement.details.insert("command".into(), "rust-rdkafka BaseProducer: acks=1".into());
        old.measurement.applied.remove(QUEUE_CAP);
        let run = crate::results::fixtures::write_run(dir.path(), "r1", 1_000, &[old]);
        let file = run.join("clients.jsonl");
        let v2 = std::fs::read_to_string(run.join("kafka_sink.jsonl")).unwrap();
        std::fs::remove_file(run.join("kafka_sink.jsonl")).unwrap();
        std::fs::write(&file, v2.replace(SCHEMA, SCHEMA_V1)).unwrap();

        let err = format!("{:#}", crate::results::load::load_results(dir.path()).unwrap_err());
        assert!(err.contains("cargo xtask lab migrate") && err.contains("clients.jsonl:1"), "{err}");
        assert_eq!(migrate_dir(dir.path()).unwrap(), (1, 1));
        let runs = crate::results::load::load_results(dir.path()).unwrap();
        let r = &runs[0].matrices["clients"].records[0];
        assert_eq!(r.schema, SCHEMA);
        assert_eq!(r.measurement.applied[QUEUE_CAP], "100000 records or 1048576 KiB");
        assert_eq!((r.run.kafka_brokers, r.run.broker_heap.as_deref()), (Some(1), Some("1g")));
        let migrated = std::fs::read_to_string(&file).unwrap();
        assert_eq!(migrate_dir(dir.path()).unwrap(), (0, 0), "a second pass migrates nothing");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), migrated, "and writes nothing");
        // A schema this build does not know is refused with its line, the file untouched.
        std::fs::write(&file, migrated.replace(SCHEMA, "streamlab.record/9")).unwrap();
        let err = format!("{:#}", migrate_dir(dir.path()).unwrap_err());
        assert!(err.contains("clients.jsonl:1: schema Some(\"streamlab.record/9\")"), "{err}");
    }

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
