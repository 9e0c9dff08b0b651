//! librdkafka's C perf tool, `rdkafka_performance`, as two arms: `c_2_12` runs the build against librdkafka
//! 2.12.1 (the library rust-rdkafka links: C vs rust-rdkafka on the same library shows what the binding costs),
//! `c_2_15` the build against 2.15.0 (the version seed 003 names). xtask builds both and names them in the
//! tools file (`STREAMLAB_TOOLS`); both compile the same tool source.
//!
//! Produce runs the seed's command shape (`-P -t -s -c -b -a -q`) with every knob as `-X`, the same
//! properties the rust-rdkafka arm sets, and the listener's security settings in a 0600 file (`-X file=`) so
//! no secret is on the command line. Fetch reads the preloaded topic from offset 0 on every partition. The
//! tool has no sequential produce -> ack mode, so latency is not runnable. Before each run the same
//! invocation with `-X dump` added prints the configuration the tool will run with: the record's `applied`
//! settings come from it.

mod command;
mod summary;

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use streamlab_process::Cmd;
use streamlab_record::EnvDescriptor;
use streamlab_record::applied;

use self::command::{Invocation, SecurityFile};
use super::contract::{
    self, Asymmetries, CTool, ClientInfo, ClientKnobs, Fetched, KafkaDriver, Produced, QueueFullSeen, Ran, Tool, Tools,
    applied as client_applied,
};
use super::rdkafka::{fetch_properties, producer_properties};
use crate::kafka::effective::LibrdkafkaConf;

/// The build against librdkafka 2.12.1, the library rust-rdkafka 0.39 vendors.
pub const C_2_12: RdkafkaPerformance = RdkafkaPerformance { arm: "c_2_12", library: "2.12.1" };
/// The build against librdkafka 2.15.0, the C bar seed 003 names.
pub const C_2_15: RdkafkaPerformance = RdkafkaPerformance { arm: "c_2_15", library: "2.15.0" };

/// A tool run that takes longer than this is killed (8M records take seconds; a hang takes forever).
const TOOL_TIMEOUT: Duration = Duration::from_secs(15 * 60);
/// The payload pattern: `-m x -s N` makes every record N × 'x', the bytes every other client sends.
const PAYLOAD_PATTERN: &str = "x";
/// librdkafka's own rdkafka_performance, built against one `library` version.
pub struct RdkafkaPerformance {
    arm: &'static str,
    library: &'static str,
}

impl RdkafkaPerformance {
    /// The build the tools file names for this library.
    fn tool(&self) -> Result<CTool> {
        let tools = Tools::load().map_err(anyhow::Error::msg)?;
        tools.c_tool(self.library).cloned().map_err(anyhow::Error::msg)
    }
}

impl KafkaDriver for RdkafkaPerformance {
    fn name(&self) -> &'static str {
        self.arm
    }

    fn no_latency(&self) -> Option<&'static str> {
        Some(LATENCY_NOT_RUNNABLE)
    }

    fn tools(&self) -> &'static [Tool] {
        &[Tool::RdkafkaPerformance]
    }

    fn refuse(&self, knobs: &ClientKnobs) -> Result<()> {
        if knobs.workload == contract::Workload::Paced {
            return Err(contract::NotRunnable(PACED_NOT_RUNNABLE.into()).into());
        }
        contract::one_connection_per_broker(knobs, "rdkafka_performance (librdkafka)")?;
        contract::x_payload_only(knobs, "rdkafka_performance (librdkafka)")?;
        check_reported_version(&self.tool()?)
    }

    fn produce(&self, env: &EnvDescriptor, knobs: &ClientKnobs, topic: &str) -> Result<Ran<Produced>> {
        produce(env, knobs, topic, &self.tool()?)
    }

    fn fetch(&self, env: &EnvDescriptor, knobs: &ClientKnobs, topic: &str, records: u64) -> Result<Ran<Fetched>> {
        fetch(env, knobs, topic, records, &self.tool()?)
    }
}

const LATENCY_NOT_RUNNABLE: &str = "rdkafka_performance has no sequential produce -> ack mode (one record in flight, \
    the next sent when its ack arrives). What it can measure instead: -l -A <file> -r <rate> records, per message, \
    the wall-clock time from just before rd_kafka_produce to its delivery report, with the send rate limited by -r \
    rather than by the ack; that is a rate-limited latency, not the sequential round trip the other clients measure";

const PACED_NOT_RUNNABLE: &str = "rdkafka_performance's -r is not the paced workload's schedule: after each send it \
    polls until one interval has passed from then (the schedule slips with every late send and never catches up), \
    and its -l latency runs from the produce() call, not from the record's intended send, so a stall that delays \
    sending is not in it (coordinated omission). Its numbers would not mean what the paced records mean";

/// The binary the tools file names must still be the build it describes.
fn check_reported_version(tool: &CTool) -> Result<()> {
    let usage =
        Cmd::new(&tool.path).output(DUMP_TIMEOUT).with_context(|| format!("cannot run {}", tool.path.display()))?;
    let stderr = usage.stderr;
    let reported = stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("librdkafka version "))
        .and_then(|r| r.split_whitespace().next());
    ensure!(
        reported == Some(tool.librdkafka_version.as_str()),
        "{} reports librdkafka {reported:?}, but the tools file says {}",
        tool.path.display(),
        tool.librdkafka_version
    );
    Ok(())
}

/// How long the `-X dump` invocation may take (it prints the configuration and exits before connecting).
const DUMP_TIMEOUT: Duration = Duration::from_secs(60);

/// The configuration the tool runs with for `args`: the same invocation with `-X dump` added, which makes the
/// tool print its configuration (every property, as set once all flags are read) and exit before it creates
/// a client. The listing holds the listener's password: only the properties read are kept, and it never
/// reaches an error message.
fn effective(tool: &Path, args: &[String], shown: &str) -> Result<LibrdkafkaConf> {
    let mut dump_args = args.to_vec();
    dump_args.extend(["-X".to_owned(), "dump".to_owned()]);
    let run = Cmd::new(tool).args(&dump_args).output(DUMP_TIMEOUT)?;
    ensure!(run.status.success(), "{shown} -X dump failed ({}); stderr: {}", run.status, run.stderr.trim());
    // Every property the arguments set: -X key=value, and -a (acks).
    let explicit = args
        .windows(2)
        .filter_map(|w| match w[0].as_str() {
            "-X" => w[1].split_once('=').map(|(k, _)| k.to_owned()),
            "-a" => Some("acks".to_owned()),
            _ => None,
        })
        .collect::<Vec<_>>();
    LibrdkafkaConf::parse_dump(&run.stdout, explicit).with_context(|| format!("{shown} -X dump"))
}

/// `-X key=value` for each property.
fn x_args(props: &[(&str, String)]) -> Vec<String> {
    props.iter().flat_map(|(k, v)| ["-X".to_owned(), format!("{k}={v}")]).collect()
}

/// The seed's produce command (notes §2.3) with the knobs' properties and the security file.
fn produce_args(knobs: &ClientKnobs, topic: &str, bootstrap: &str, security: &Path) -> Vec<String> {
    let mut args: Vec<String> = [
        "-P",
        "-t",
        topic,
        "-s",
        &knobs.payload_bytes.to_string(),
        "-c",
        &knobs.count.to_string(),
        "-b",
        bootstrap,
        "-a",
        &knobs.acks.to_string(),
        "-q",
        "-m",
        PAYLOAD_PATTERN,
        "-X",
        &format!("file={}", security.display()),
    ]
    .map(str::to_owned)
    .to_vec();
    // acks is already -a; every other property the rust-rdkafka arm sets follows as -X (after the tool's own
    // defaults, so linger.ms=1000 and the rest are overridden).
    let props: Vec<_> = producer_properties(knobs).into_iter().filter(|(k, _)| *k != "acks").collect();
    args.extend(x_args(&props));
    args
}

/// The legacy consumer on every partition from offset 0, stopping after `high_watermark` records (or when
/// every partition reached its end: -e, so a short log ends the run instead of hanging it).
fn fetch_args(knobs: &ClientKnobs, topic: &str, bootstrap: &str, security: &Path, high_watermark: u64) -> Vec<String> {
    let mut args: Vec<String> = ["-C", "-t", topic].map(str::to_owned).to_vec();
    for p in 0..knobs.partitions {
        args.extend(["-p".to_owned(), p.to_string()]);
    }
    args.extend(
        ["-o", "beginning", "-c", &high_watermark.to_string(), "-e", "-b", bootstrap, "-q", "-X"].map(str::to_owned),
    );
    args.push(format!("file={}", security.display()));
    args.extend(x_args(&fetch_properties(knobs)));
    args
}

fn bootstrap(env: &EnvDescriptor, knobs: &ClientKnobs) -> Result<String> {
    Ok(contract::listener(env, knobs)?.0.bootstrap.clone())
}

fn versions(tool: &CTool) -> std::collections::BTreeMap<String, String> {
    std::collections::BTreeMap::from([(CTool::provenance_key(&tool.librdkafka_version), tool.describe())])
}

/// The tool's counters are C ints: refuse counts it would wrap.
fn as_tool_count(n: u64) -> Result<u64> {
    ensure!(n <= i32::MAX as u64, "rdkafka_performance counts in a C int: {n} records is more than it can count");
    Ok(n)
}

fn produce(env: &EnvDescriptor, knobs: &ClientKnobs, topic: &str, tool: &CTool) -> Result<Ran<Produced>> {
    as_tool_count(knobs.count)?;
    let security = SecurityFile::write(env, &knobs.listener)?;
    let bootstrap = bootstrap(env, knobs)?;
    let call = Invocation::new(&tool.path, produce_args(knobs, topic, &bootstrap, &security.path), &security);
    let conf = effective(&tool.path, &call.args, &call.shown)?;
    let run = Cmd::new(&tool.path).args(&call.args).output(TOOL_TIMEOUT)?;
    drop(security);
    let s = summary::producer(&run.stdout)
        .with_context(|| format!("{} ({}) printed no producer summary\n{}", call.shown, run.status, run.tail(10)))?;
    // The tool exits 1 unless every record it produced was delivered; a failure it does not count is not ours to
    // guess at.
    if !run.status.success() && s.failed == 0 && s.delivered == knobs.count {
        bail!(
            "{} exited with {} although its summary says every record was delivered\n{}",
            call.shown,
            run.status,
            run.tail(10)
        );
    }
    let produced = Produced {
        acked: s.delivered,
        failed: s.failed,
        elapsed: s.elapsed(),
        client_cpu_s: run.cpu_s,
        queue_full: QueueFullSeen::Refusals(s.backpressures),
    };
    let mut note = vec![format!(
        "tool summary: {} produced, {} delivered, {} failed in {} ms ({} msgs/s, {:.2} MB/s); {} QUEUE_FULL \
         backpressure retries; {}",
        s.produced, s.delivered, s.failed, s.elapsed_ms, s.msgs_per_s, s.mb_per_s, s.backpressures, run.status
    )];
    note.push(
        "the tool's own defaults stay as in seed 003: message.send.max.retries=3 and retry.backoff.ms=500 \
         (librdkafka and the rust-rdkafka arm: 2147483647 and 100); it polls for delivery reports every 1000 records \
         and always collects statistics (every 1000 ms)"
            .into(),
    );
    note.extend(summary::notable_lines(&run.stdout, &run.stderr, 5));
    let info = ClientInfo {
        versions: versions(tool),
        command: call.shown,
        asymmetries: produce_asymmetries(knobs),
        note: Some(note.join("; ")),
        applied: client_applied::base(knobs, 1, client_applied::CLOCK_BEFORE_CONNECT)
            .producer(conf.producer())
            .set(applied::QUEUE_CAP, conf.queue_cap().context("the tool's configuration listing has no queue cap")?)
            .build(),
        metrics: Default::default(),
    };
    Ok(Ran { measured: produced, info })
}

fn produce_asymmetries(knobs: &ClientKnobs) -> Asymmetries {
    Asymmetries {
        connections: "1 per broker".into(),
        in_flight: if knobs.idempotence {
            "5 per connection (idempotence caps max.in.flight)".into()
        } else {
            "1000000 per connection (librdkafka default max.in.flight)".into()
        },
        partitioner: "consistent_random (librdkafka default): keyless records stick to one partition for \
                      sticky.partitioning.linger.ms = 2 x linger.ms"
            .into(),
        clock: "the tool's own: from just before its produce loop (after rd_kafka_new, so bootstrap connect, \
                SASL, metadata and leader connect are inside) to the last delivery report; printed in ms, refined to µs \
                from its integer msgs/s"
            .into(),
        payload: "'x' repeated (-m x -s <payload_bytes>): the same bytes as the other clients".into(),
    }
}

fn fetch(env: &EnvDescriptor, knobs: &ClientKnobs, topic: &str, records: u64, tool: &CTool) -> Result<Ran<Fetched>> {
    let hw = as_tool_count(records)?;
    let security = SecurityFile::write(env, &knobs.listener)?;
    let bootstrap = bootstrap(env, knobs)?;
    let call = Invocation::new(&tool.path, fetch_args(knobs, topic, &bootstrap, &security.path, hw), &security);
    let conf = effective(&tool.path, &call.args, &call.shown)?;
    let run = Cmd::new(&tool.path).args(&call.args).output(TOOL_TIMEOUT)?;
    drop(security);
    ensure!(run.status.success(), "{} failed ({})\n{}", call.shown, run.status, run.tail(10));
    let s = summary::consumer(&run.stdout)
        .with_context(|| format!("{} printed no consumer summary\n{}", call.shown, run.tail(10)))?;
    let fetched = Fetched {
        consumed: s.consumed,
        bytes: s.bytes,
        elapsed: s.elapsed(),
        client_cpu_s: run.cpu_s,
        fetch_request_us: Vec::new(),
    };
    let mut note = vec![format!(
        "tool summary: {} messages ({} bytes) consumed in {} ms ({} msgs/s, {:.2} MB/s); no Fetch-request latency \
         (the tool has none: its \"application fetch latency\" is time spent in the consume callback)",
        s.consumed, s.bytes, s.elapsed_ms, s.msgs_per_s, s.mb_per_s
    )];
    note.extend(summary::notable_lines(&run.stdout, &run.stderr, 5));
    let asymmetries = Asymmetries {
        connections: "1 per broker".into(),
        in_flight: "1 Fetch per broker at a time (librdkafka)".into(),
        partitioner: format!(
            "legacy queue consumer (no group) on all {} partitions (-p 0..{}), from offset 0 (-o beginning)",
            knobs.partitions,
            knobs.partitions - 1
        ),
        clock: "the tool's own: from the first message received to the last (connect, metadata and the first \
                fetch excluded; printed in ms, refined to µs from its integer msgs/s)"
            .into(),
        payload: "preloaded by rust-rdkafka: 'x' repeated".into(),
    };
    let info = ClientInfo {
        versions: versions(tool),
        command: call.shown,
        asymmetries,
        note: Some(note.join("; ")),
        applied: client_applied::base(knobs, 1, client_applied::CLOCK_FIRST_RECORD).consumer(conf.consumer()).build(),
        metrics: Default::default(),
    };
    Ok(Ran { measured: fetched, info })
}

#[cfg(test)]
pub(crate) mod tests {

    use super::*;

    pub(crate) fn knobs(workload: &str, listener: &str, count: u64) -> serde_json::Map<String, serde_json::Value> {
        let v = serde_json::json!({
            "workload": workload, "listener": listener, "compression": "lz4", "acks": 1, "idempotence": false,
            "count": count, "payload_bytes": 100, "partitions": 3, "linger_ms": 5, "batch_messages": 32768,
            "payload": "x", "queue_full": "park", "connections": 0,
            "batch_bytes": 1000000, "queue_messages": 1000000, "fetch_max_wait_ms": 100, "fetch_min_bytes": 1,
            "fetch_max_bytes": 16777216, "latency_warmup": 10, "latency_samples": 100, "kafka_version": "4.1.0"
        });
        v.as_object().unwrap().clone()
    }

    fn typed(map: &serde_json::Map<String, serde_json::Value>) -> ClientKnobs {
        serde_json::from_value(serde_json::Value::Object(map.clone())).unwrap()
    }

    #[test]
    fn the_produce_command_is_the_seeds_shape_with_every_knob_as_x() {
        let k = typed(&knobs("produce", "scram512", 8_000_000));
        let args = produce_args(&k, "t", "127.0.0.1:9095", Path::new("/tmp/sec.properties"));
        let line = args.join(" ");
        assert!(
            line.starts_with("-P -t t -s 100 -c 8000000 -b 127.0.0.1:9095 -a 1 -q -m x -X file=/tmp/sec.properties "),
            "{line}"
        );
        for prop in [
            "linger.ms=5",
            "compression.codec=lz4",
            "batch.num.messages=32768",
            "batch.size=1000000",
            "queue.buffering.max.messages=1000000",
            "socket.nagle.disable=true",
            "enable.idempotence=false",
        ] {
            assert!(line.contains(&format!("-X {prop}")), "{prop} in {line}");
        }
        assert!(!line.contains("-X acks="), "acks is -a: {line}");
    }

    #[test]
    fn the_fetch_command_reads_every_partition_from_the_beginning_up_to_the_high_watermark() {
        let k = typed(&knobs("fetch", "plaintext", 0));
        let line = fetch_args(&k, "t", "127.0.0.1:9092", Path::new("/tmp/s"), 1234).join(" ");
        assert!(
            line.starts_with("-C -t t -p 0 -p 1 -p 2 -o beginning -c 1234 -e -b 127.0.0.1:9092 -q -X file=/tmp/s "),
            "{line}"
        );
        for prop in [
            "fetch.wait.max.ms=100",
            "fetch.min.bytes=1",
            "fetch.message.max.bytes=16777216",
            "fetch.max.bytes=16777216",
        ] {
            assert!(line.contains(&format!("-X {prop}")), "{prop} in {line}");
        }
    }

    #[test]
    fn the_applied_settings_come_from_the_same_invocation_with_dump_added() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let tool = dir.path().join("rdkafka_performance");
        // Prints a listing only when called with the produce arguments and `-X dump` last; fails otherwise.
        let script = "#!/bin/sh\n[ \"$1\" = -P ] || exit 9\nfor a in \"$@\"; do p2=\"$p1\"; p1=\"$a\"; done\n\
                      [ \"$p2 $p1\" = \"-X dump\" ] || exit 8\n\
                      printf '# Global config\\nsecurity.protocol = sasl_plaintext\\nsasl.mechanisms = SCRAM-SHA-512\\n\
                      sasl.password = hunter2\\nenable.idempotence = false\\nqueue.buffering.max.ms = 5\\n\
                      batch.size = 1000000\\ncompression.codec = lz4\\nmax.in.flight.requests.per.connection = 1000000\\n\
                      \\n# Topic config\\nrequest.required.acks = 1\\npartitioner = consistent_random\\n'\n";
        std::fs::write(&tool, script).unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o700)).unwrap();
        let k = typed(&knobs("produce", "scram512", 1000));
        let args = produce_args(&k, "t", "127.0.0.1:9095", Path::new("/tmp/sec.properties"));
        let conf = effective(&tool, &args, "rdkafka_performance ...").unwrap();
        let applied = streamlab_record::applied::AppliedBuilder::new().producer(conf.producer()).build();
        assert_eq!(applied["producer.acks"], "1");
        assert_eq!(applied["producer.compression.type"], "lz4");
        assert_eq!(applied["producer.sasl.mechanism"], "SCRAM-SHA-512");
        assert_eq!(applied["producer.partitioner.class"], "librdkafka consistent_random, sticky for 10 ms");
        assert!(!format!("{applied:?} {conf:?}").contains("hunter2"));
        // A dump that fails says so without its output (which would hold the password).
        let err = effective(&tool, &args[1..], "shown").unwrap_err().to_string();
        assert!(err.contains("shown -X dump failed") && !err.contains("hunter2"), "{err}");
    }

    #[test]
    fn a_real_dump_of_an_idempotent_producer_reads_as_librdkafka_runs_it() {
        let dump = include_str!("../testdata/c_2_15_produce_idempotent_dump.stdout");
        let conf = LibrdkafkaConf::parse_dump(dump, ["acks".to_owned(), "enable.idempotence".to_owned()]).unwrap();
        let a = streamlab_record::applied::AppliedBuilder::new().producer(conf.producer()).build();
        assert_eq!(a["producer.max.in.flight.requests.per.connection"], "5", "listed 1000000, capped at 5");
        assert_eq!((a["producer.acks"].as_str(), a["producer.enable.idempotence"].as_str()), ("-1", "true"));
        assert_eq!((a["producer.compression.type"].as_str(), a["producer.linger.ms"].as_str()), ("lz4", "5"));
        assert_eq!(a["producer.batch.size"], "1000000");
        assert_eq!(a["producer.partitioner.class"], "librdkafka consistent_random, sticky for 10 ms");
        assert_eq!(a["producer.security.protocol"], "PLAINTEXT");
        assert_eq!(conf.detail("batch.num.messages"), Some("32768"));
    }

    #[test]
    fn counts_beyond_the_tools_c_int_are_refused() {
        assert_eq!(as_tool_count(8_000_000).unwrap(), 8_000_000);
        assert!(as_tool_count(1 << 31).unwrap_err().to_string().contains("C int"));
    }
}
