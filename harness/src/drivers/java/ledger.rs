//! The Java producer (Kafka's own KafkaProducer, the pinned kafka-clients) as durability's producer, through the
//! ledger-writing driver the lab compiles (LedgerProducer.java beside this file; the tools file names it). The
//! driver writes its ledger to a file the arm reads back; its settings are read from the "ProducerConfig values:"
//! block it logs.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use streamlab_process::Cmd;
use streamlab_record::applied::PRODUCER_KEYS;
use streamlab_record::tools::Tools;

use streamlab_record::EnvDescriptor;

use super::Java;
use crate::drivers::contract::ledger::{Ack, Entry, Ledger};
use crate::drivers::contract::{FIRST_ACK_WAIT, FirstAck, LedgerProduced, LedgerProducer, LedgerWork, Tool};
use crate::kafka::java_props::Properties;
use crate::kafka::java_tools::{TOOLS_LOG_CONFIG, config_values};

/// The listener's security settings and the knobs, as the driver's `producer.properties`.
fn properties(env: &EnvDescriptor, work: &LedgerWork) -> Result<Properties> {
    let mut p = Properties::for_default_listener(env)?;
    let own = [
        ("max.in.flight.requests.per.connection", work.max_in_flight.to_string()),
        ("delivery.timeout.ms", work.delivery_timeout_ms.to_string()),
        ("compression.type", "none".into()),
    ];
    for (key, value) in super::props::settings(&work.producer).into_iter().chain(own) {
        p.set(key, &value);
    }
    Ok(p)
}

/// LedgerProducer.java's exit code when its first record was not acknowledged in time.
const FIRST_ACK_FAILED: i32 = 3;

/// The JVM's heap: the ledger's arrays, allocated up front at 32 B a record (three longs, an int and a
/// reference), and 512 MiB beside them for the producer's buffers and the collector.
fn heap_limit(max_records: u64) -> String {
    format!("-Xmx{}m", 512 + (max_records * 40).div_ceil(1 << 20))
}

impl LedgerProducer for Java {
    fn tools(&self) -> &'static [Tool] {
        &[Tool::LedgerProducer]
    }

    fn produce_with_ledger(
        &self,
        env: &EnvDescriptor,
        work: &LedgerWork,
        topic: &str,
        first: &FirstAck,
    ) -> Result<LedgerProduced> {
        let tools = Tools::load().map_err(anyhow::Error::msg)?;
        let tool = tools.ledger_producer().map_err(anyhow::Error::msg)?;
        let dir = tempfile::Builder::new().prefix("streamlab-ledger-").tempdir()?;
        let write = |name: &str, text: &str| crate::private_files::write_private(dir.path(), name, text.as_bytes());
        let props = write("producer.properties", &properties(env, work)?.render())?;
        let log_config = write("log4j2.yaml", TOOLS_LOG_CONFIG)?;
        let (ledger_file, started_file) = (dir.path().join("ledger.txt"), dir.path().join("started"));
        let classpath = std::env::join_paths(&tool.classpath).context("a classpath entry contains ':'")?;
        let run_ms = work.run_time.as_millis().to_string();
        let flush_ms = work.flush_timeout().as_millis().to_string();
        let cmd = Cmd::new(&tool.java)
            .arg(heap_limit(work.max_records))
            .arg("-XX:+UseG1GC")
            .arg(format!("-Dlog4j2.configurationFile={}", log_config.display()))
            .arg("-cp")
            .arg(&classpath)
            .arg(&tool.main_class)
            .arg(&props)
            .args([topic, &work.producer.payload_bytes.to_string(), &run_ms, &work.max_records.to_string()])
            .arg(&ledger_file)
            .arg(&started_file)
            .arg(&flush_ms)
            .arg(FIRST_ACK_WAIT.as_millis().to_string());
        let deadline = FIRST_ACK_WAIT + work.run_time + work.flush_timeout() + Duration::from_secs(120);
        let done = std::sync::atomic::AtomicBool::new(false);
        let output = std::thread::scope(|s| {
            s.spawn(|| watch_started(&started_file, first, &done, deadline));
            let out = cmd.output(deadline);
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            out
        })?;
        if output.status.code() == Some(FIRST_ACK_FAILED) {
            let why = output.stderr.lines().find_map(|l| l.strip_prefix("first record: ")).unwrap_or("no reason given");
            bail!(
                "the producer's first record {why}, so its run never began (connections, SASL, metadata or the \
                 producer id took too long):\n{}",
                output.tail(20)
            );
        }
        ensure!(
            output.status.success(),
            "the Java ledger producer exited with {}:\n{}",
            output.status,
            output.tail(20)
        );
        let ledger = read_ledger(&std::fs::read_to_string(&ledger_file).context("the Java producer wrote no ledger")?)?;
        let applied = config_values(&output.stderr, "ProducerConfig").unwrap_or_default();
        // The settings the record names: Java logs them by the names the record uses.
        let settings: Vec<(&'static str, String)> = PRODUCER_KEYS
            .iter()
            .map(|k| applied.get(*k).map(|v| (*k, v.clone())).with_context(|| format!("the producer did not log {k}")))
            .collect::<Result<_>>()?;
        let warnings: Vec<&str> =
            output.stderr.lines().filter(|l| l.contains(" WARN ") || l.contains(" ERROR ")).take(5).collect();
        Ok(LedgerProduced {
            ledger,
            client_cpu_s: output.cpu_s,
            command: format!(
                "KafkaProducer ({}, {}) through {} ({}): {}",
                tool.kafka_clients,
                tool.java_version,
                tool.main_class,
                tool.build,
                settings.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
            ),
            settings,
            connections: "1 per broker for produce requests + the bootstrap connection for metadata".into(),
            versions: BTreeMap::from([
                ("kafka-clients".to_owned(), tool.kafka_clients.clone()),
                ("java".to_owned(), tool.java_version.clone()),
            ]),
            note: (!warnings.is_empty()).then(|| format!("the producer logged: {}", warnings.join(" | "))),
            unordered_handoff: None,
        })
    }
}

/// Mark the first acknowledgement when the driver says it came (epoch ms in a file it writes atomically).
fn watch_started(path: &Path, first: &FirstAck, done: &std::sync::atomic::AtomicBool, within: Duration) {
    let started = std::time::Instant::now();
    while !done.load(std::sync::atomic::Ordering::Relaxed) && started.elapsed() < within {
        if let Some(ms) = std::fs::read_to_string(path).ok().and_then(|t| t.trim().parse::<u64>().ok()) {
            first.mark(ms);
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The driver's ledger file (see LedgerProducer.java for its lines).
pub fn read_ledger(text: &str) -> Result<Ledger> {
    let mut ledger = Ledger::default();
    for (n, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| -> Result<u64> {
            f.get(i).and_then(|v| v.parse().ok()).with_context(|| format!("ledger line {}: {line:?}", n + 1))
        };
        let seq = num(0)?;
        if seq != ledger.entries.len() as u64 {
            bail!("ledger line {}: sequence {seq} out of order", n + 1);
        }
        let entry = match f.get(1).copied() {
            Some("U") => Entry { sent_us: num(2)?, ack: Ack::Unanswered },
            Some("E") => {
                *ledger.errors.entry(f.get(4).unwrap_or(&"unknown").to_string()).or_default() += 1;
                Entry { sent_us: num(2)?, ack: Ack::Failed { at_us: num(3)? } }
            }
            _ => {
                let partition =
                    f.get(1).and_then(|v| v.parse().ok()).with_context(|| format!("ledger line {}", n + 1))?;
                let offset = f.get(2).and_then(|v| v.parse().ok()).with_context(|| format!("ledger line {}", n + 1))?;
                Entry { sent_us: num(3)?, ack: Ack::Ok { partition, offset, at_us: num(4)? } }
            }
        };
        ledger.entries.push(entry);
    }
    Ok(ledger)
}

/// `key = value` lines of the "ProducerConfig values:" block the producer logs at its start.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ledger_file_reads_back_every_kind_of_line() {
        let l = read_ledger("0 3 17 1000 1500\n1 E 1100 1900 NotEnoughReplicasException\n2 U 1200\n").unwrap();
        assert_eq!(l.entries[0], Entry { sent_us: 1000, ack: Ack::Ok { partition: 3, offset: 17, at_us: 1500 } });
        assert_eq!(l.entries[1].ack, Ack::Failed { at_us: 1900 });
        assert_eq!(l.entries[2], Entry { sent_us: 1200, ack: Ack::Unanswered });
        assert_eq!(l.errors["NotEnoughReplicasException"], 1);
        assert!(read_ledger("1 0 0 1 2\n").unwrap_err().to_string().contains("out of order"));
        assert!(read_ledger("0 x\n").is_err());
    }

    #[test]
    fn the_heap_holds_a_ledger_of_max_records_and_the_producer_beside_it() {
        for max in [1, 12_000_000, 30_000_000, 100_000_000u64] {
            let mib: u64 = heap_limit(max).trim_start_matches("-Xmx").trim_end_matches('m').parse().unwrap();
            assert!(mib << 20 >= 32 * max + (512 << 20), "max_records {max}: {mib} MiB");
        }
        assert_eq!(heap_limit(30_000_000), "-Xmx1657m");
    }
}
