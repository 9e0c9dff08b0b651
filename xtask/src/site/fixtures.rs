//! Test fixtures built from the real record and provenance types: small known-value records for unit
//! tests, and the demo results under testdata/ that the browser and validator checks render.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::json;
use streamlab_record::{Conditions, Integrity, Metric, Record, RunInfo, SCHEMA, Status, Variant};

use crate::provenance::{
    ArmInfo, EnvInfo, Git, Host, MatrixInfo, PROVENANCE_FILE, PROVENANCE_SCHEMA, Pins, Provenance, SweepInfo,
};

const HWM: &str = "sum of partition high watermarks == acknowledged records";

/// A verified kafka_sink record with `records_per_s = value` (and MB/s derived from 256 B payloads).
pub fn record(run_id: &str, arm: &str, label: &str, sweeps: &[&str], default: bool, rep: u32, value: f64) -> Record {
    let acked = (value * 8.0).round() as u64;
    Record {
        schema: SCHEMA.into(),
        bench: "kafka_sink".into(),
        kind: "produce".into(),
        run: RunInfo {
            id: run_id.into(),
            ts_ms: 1_795_857_300_000,
            commit: "4f1c2d3e5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d".into(),
            dirty: false,
            host: "lab-1".into(),
            cpu: "AMD EPYC 7B13".into(),
            cores: 2,
            os: "Debian GNU/Linux 12 (bookworm)".into(),
            profile: "standard".into(),
            env: "native".into(),
        },
        arm: arm.into(),
        variant: Variant {
            label: label.into(),
            sweeps: sweeps.iter().map(|s| s.to_string()).collect(),
            default,
            knobs: BTreeMap::new(),
        },
        status: Status::Ok,
        reason: None,
        log_tail: None,
        metrics: BTreeMap::from([
            ("records_per_s".into(), Metric::new(value, "records/s", true)),
            ("mb_per_s".into(), Metric::new(value * 256.0 / 1e6, "MB/s", true)),
        ]),
        integrity: Integrity::compare(acked, acked, HWM),
        verdict: BTreeMap::new(),
        note: None,
        details: BTreeMap::new(),
        rep,
        reproduce: format!("cargo xtask lab run --matrix kafka_sink --profile standard --resume {run_id}"),
        conditions: None,
        applied: Default::default(),
    }
}

/// A 12 s task's conditions: 9.5 foreign CPU s and load 2.5 when `foreign_load`, a quiet machine otherwise.
pub fn conditions(foreign_load: bool, placement: Option<&str>) -> Conditions {
    Conditions {
        wall_s: 12.0,
        foreign_cpu_s: if foreign_load { 9.5 } else { 0.1 },
        loadavg_1m: if foreign_load { 2.5 } else { 0.2 },
        foreign_load,
        placement: placement.map(String::from),
    }
}

fn with_knobs(mut r: Record, knobs: &[(&str, serde_json::Value)]) -> Record {
    for (k, v) in knobs {
        r.variant.knobs.insert((*k).into(), v.clone());
    }
    r
}

fn withdrawn(mut r: Record, expected: u64, observed: u64) -> Record {
    r.integrity = Integrity::compare(expected, observed, HWM);
    r
}

fn failed(mut r: Record, reason: &str, log: &str) -> Record {
    r.note = None;
    r.status = Status::Failed;
    r.reason = Some(reason.into());
    r.log_tail = Some(log.into());
    r.integrity = Integrity::not_checked(HWM);
    r.metrics.clear();
    r
}

fn not_run(mut r: Record, reason: &str) -> Record {
    r.note = None;
    r.status = Status::NotRun;
    r.reason = Some(reason.into());
    r.integrity = Integrity::not_checked(HWM);
    r.metrics.clear();
    r
}

const DEFAULT_SWEEPS: [&str; 4] = ["mode", "batch_max_rows", "queue_buffering_max_messages", "shards"];

/// Small known values: raw 1000/1100/1200, framework 500/600/700, a withdrawn 100k batch point
/// (123456.789 rec/s, never to be drawn), a failed rep at queue 1M, shards=2 not run.
pub fn kafka_sink_records(run_id: &str) -> Vec<Record> {
    let mut out = Vec::new();
    for (rep, v) in [(1, 1000.0), (2, 1100.0), (3, 1200.0)] {
        out.push(with_knobs(record(run_id, "raw", "default", &["mode"], true, rep, v), &[("broker_cores", json!(0))]));
    }
    let fw = |label: &str, sweeps: &[&str], default: bool, rep: u32, v: f64, batch: u64, queue: u64, shards: u64| {
        let knobs = [
            ("batch_max_rows", json!(batch)),
            ("queue_buffering_max_messages", json!(queue)),
            ("shards", json!(shards)),
        ];
        with_knobs(record(run_id, "framework", label, sweeps, default, rep, v), &knobs)
    };
    for (rep, v) in [(1, 500.0), (2, 600.0), (3, 700.0)] {
        let mut r = fw("default", &DEFAULT_SWEEPS, true, rep, v, 500_000, 100_000, 1);
        r.verdict = BTreeMap::from([("upstream".into(), "sink".into()), ("downstream".into(), "client".into())]);
        out.push(r);
    }
    for (rep, v) in [(1, 100.0), (2, 110.0), (3, 120.0)] {
        out.push(fw("10k", &["batch_max_rows"], false, rep, v, 10_000, 100_000, 1));
    }
    for rep in 1..=3 {
        out.push(withdrawn(fw("100k", &["batch_max_rows"], false, rep, 123_456.789, 100_000, 100_000, 1), 1000, 990));
    }
    out.push(fw("1M", &["queue_buffering_max_messages"], false, 1, 650.0, 500_000, 1_000_000, 1));
    out.push(fw("1M", &["queue_buffering_max_messages"], false, 2, 660.0, 500_000, 1_000_000, 1));
    out.push(failed(
        fw("1M", &["queue_buffering_max_messages"], false, 3, 0.0, 500_000, 1_000_000, 1),
        "arm exited with status 101",
        "thread 'main' panicked: broker connection refused",
    ));
    out.push(not_run(fw("2", &["shards"], false, 1, 0.0, 500_000, 100_000, 2), "skipped by --set shards=1"));
    for (rep, v) in [(1, 900.0), (2, 950.0), (3, 1000.0)] {
        out.push(with_knobs(
            record(run_id, "raw", "1 core", &["broker_cores"], false, rep, v),
            &[("broker_cores", json!(1))],
        ));
    }
    out
}

/// kafka_sink as provenance describes it (mirrors harness/matrices/kafka_sink.toml).
pub fn kafka_sink_info() -> MatrixInfo {
    let sweep = |name: &str, title: &str, arms: &[&str], knob: Option<&str>, labels: &[&str]| SweepInfo {
        name: name.into(),
        title: title.into(),
        caption: None,
        arms: arms.iter().map(|s| s.to_string()).collect(),
        knob: knob.map(String::from),
        labels: labels.iter().map(|s| s.to_string()).collect(),
        fixed: Vec::new(),
    };
    let mut broker = sweep(
        "broker_cores",
        "Broker-headroom calibration: raw throughput vs broker cores",
        &["raw"],
        Some("broker_cores"),
        &["1 core", "2 cores"],
    );
    broker.caption = Some("Flat across broker cores means the single-producer ceiling is client-bound.".into());
    MatrixInfo {
        name: "kafka_sink".into(),
        file: "harness/matrices/kafka_sink.toml".into(),
        sha256: "9c1f0e7d2b3a4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5".into(),
        title: "Kafka producer sink: framework path vs raw librdkafka".into(),
        question: "How fast can an ETL framework produce to Kafka through its producer sink, and what does the \
                   framework cost over librdkafka itself?"
            .into(),
        seed: Some("000".into()),
        default_arm: Some("framework".into()),
        arms: vec![
            ArmInfo {
                name: "raw".into(),
                title: "raw rdkafka".into(),
                description: "A bare rust-rdkafka ThreadedProducer, one feeder thread, sleep 1 ms on queue full.".into(),
            },
            ArmInfo {
                name: "framework".into(),
                title: "framework path".into(),
                description: "The real spate 0.2.0 pipeline: generator source -> chain -> sink pool -> Kafka sink."
                    .into(),
            },
        ],
        sweeps: vec![
            // The runner labels an arms-only sweep's points with the arms' titles.
            sweep(
                "mode",
                "Framework path vs raw librdkafka (default settings)",
                &["raw", "framework"],
                None,
                &["raw rdkafka", "framework path"],
            ),
            broker,
            sweep(
                "batch_max_rows",
                "Throughput vs batch.max_rows (queue fixed at 100k)",
                &["framework"],
                Some("batch_max_rows"),
                &["10k", "50k", "100k", "250k", "500k"],
            ),
            sweep(
                "queue_buffering_max_messages",
                "Throughput vs queue.buffering.max.messages (batch fixed at 500k)",
                &["framework"],
                Some("queue_buffering_max_messages"),
                &["100k", "250k", "500k", "1M"],
            ),
            sweep("shards", "Throughput vs shards (one shared producer)", &["framework"], Some("shards"), &["1", "2", "4"]),
        ],
        does_not_say: vec![
            "It measures the client path, not durability: on one broker with replication 1, acks=all is close to acks=1."
                .into(),
            "Client and broker share one machine; a dedicated broker (--bootstrap) is a different, higher ceiling.".into(),
        ],
    }
}

pub fn provenance(run_id: &str, started_ts_ms: u64) -> Provenance {
    Provenance {
        schema: PROVENANCE_SCHEMA.into(),
        run_id: run_id.into(),
        started_ts_ms,
        finished_ts_ms: Some(started_ts_ms + 1_712_000),
        reproduce: "cargo xtask lab run --matrix kafka_sink --profile standard".into(),
        profile: "standard".into(),
        git: Git { commit: "4f1c2d3e5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d".into(), dirty: false },
        host: Host {
            hostname: "lab-1".into(),
            cpu_brand: "AMD EPYC 7B13".into(),
            physical_cores: Some(1),
            logical_cores: 2,
            frequency_mhz: 2450,
            memory_bytes: 24 << 30,
            os: "Debian GNU/Linux 12 (bookworm)".into(),
            kernel: "6.1.0-28-amd64".into(),
            arch: "x86_64".into(),
        },
        env: EnvInfo {
            backend: "native".into(),
            managed: true,
            kafka_version: Some("4.1.0".into()),
            mysql_flavour: None,
            mysql_version: None,
            cpu_caps: BTreeMap::from([("broker".into(), "cpu 1 (affinity)".into())]),
            note: None,
            images: Default::default(),
        },
        versions: BTreeMap::from([
            ("java".into(), "17.0.15".into()),
            ("kafka".into(), "4.1.0".into()),
            ("librdkafka".into(), "2.12.1".into()),
            ("rdkafka".into(), "0.39.0".into()),
            ("rustc".into(), "1.95.0".into()),
            ("spate".into(), "0.2.0".into()),
        ]),
        pins: Pins {
            lock_file: "env/kafka/jars.lock".into(),
            lock_sha256: "0d4f5e6a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f80".into(),
            artifacts: BTreeMap::from([(
                "org.apache.kafka:kafka_2.13:4.1.0".into(),
                "5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d".into(),
            )]),
        },
        matrices: vec![kafka_sink_info()],
        restarts: Vec::new(),
        kafka_brokers: Default::default(),
    }
}

/// Write a run directory (provenance.json and kafka_sink.jsonl) and return its path.
pub fn write_run(results: &Path, run_id: &str, started_ts_ms: u64, records: &[Record]) -> PathBuf {
    let dir = results.join(run_id);
    std::fs::create_dir_all(&dir).unwrap();
    let prov = serde_json::to_string_pretty(&provenance(run_id, started_ts_ms)).unwrap() + "\n";
    std::fs::write(dir.join(PROVENANCE_FILE), prov).unwrap();
    let path = dir.join("kafka_sink.jsonl");
    std::fs::write(&path, streamlab_record::jsonl::to_lines(&path, records).unwrap()).unwrap();
    dir
}

/// Realistic-looking demo runs for the rendered-site checks: two standard runs of kafka_sink on a 2-core
/// box, shaped as the lab runner writes them (one sweep per record, the default point re-run in each sweep,
/// arms-only points labelled with the arm's title, a note per rep), with one withdrawn rep, one failed rep,
/// a point whose every rep was withdrawn and one whose reps' verdicts differ; the newer run records its
/// conditions, one rep of it under foreign load.
pub fn demo_runs() -> Vec<(String, u64, Vec<Record>)> {
    [("20261120T091500Z-4f1c2d3", 1_795_166_100_000, 0.95), ("20261128T091500Z-4f1c2d3", 1_795_857_300_000, 1.0)]
        .into_iter()
        .map(|(id, ts, scale)| (id.to_owned(), ts, demo_records(id, ts, scale)))
        .collect()
}

/// (arm, sweep, label, default, records/s, knobs)
type DemoPoint = (&'static str, &'static str, &'static str, bool, f64, Vec<(&'static str, serde_json::Value)>);

fn demo_records(run_id: &str, ts: u64, scale: f64) -> Vec<Record> {
    const JITTER: [f64; 7] = [-0.021, 0.012, 0.018, -0.007, 0.025, -0.015, 0.004];
    let fw = |batch: u64, queue: u64, shards: u64| {
        vec![
            ("batch_max_rows", json!(batch)),
            ("queue_buffering_max_messages", json!(queue)),
            ("shards", json!(shards)),
        ]
    };
    let raw = |cores: u64| vec![("broker_cores", json!(cores))];
    let mut points: Vec<DemoPoint> = vec![
        ("raw", "mode", "raw rdkafka", false, 612_000.0, raw(0)),
        ("framework", "mode", "framework path", true, 287_000.0, fw(500_000, 100_000, 1)),
        ("raw", "broker_cores", "1 core", false, 548_000.0, raw(1)),
        ("raw", "broker_cores", "2 cores", false, 604_000.0, raw(2)),
    ];
    for (label, batch, v) in [
        ("10k", 10_000, 47_000.0),
        ("50k", 50_000, 104_000.0),
        ("100k", 100_000, 139_000.0),
        ("250k", 250_000, 226_000.0),
        ("500k", 500_000, 289_000.0),
    ] {
        points.push(("framework", "batch_max_rows", label, batch == 500_000, v, fw(batch, 100_000, 1)));
    }
    for (label, queue, v) in [
        ("100k", 100_000, 284_000.0),
        ("250k", 250_000, 296_000.0),
        ("500k", 500_000, 281_000.0),
        ("1M", 1_000_000, 305_000.0),
    ] {
        points.push(("framework", "queue_buffering_max_messages", label, queue == 100_000, v, fw(500_000, queue, 1)));
    }
    for (label, shards, v) in [("1", 1, 290_000.0), ("2", 2, 98_000.0), ("4", 4, 131_000.0)] {
        points.push(("framework", "shards", label, shards == 1, v, fw(500_000, 100_000, shards)));
    }
    let mut out = Vec::new();
    // Rep-major and interleaved, as the runner orders its work.
    for rep in 1..=3u32 {
        for (i, (arm, sweep, label, default, v, knobs)) in points.iter().enumerate() {
            let v = (v * scale * (1.0 + JITTER[(rep as usize + i * 2) % JITTER.len()])).round();
            let mut r = with_knobs(record(run_id, arm, label, &[sweep], *default, rep, v), knobs);
            r.run.ts_ms = ts;
            r.kind = "produce".into();
            r.metrics.insert("e2e_p50_ms".into(), Metric::new(if *arm == "raw" { 38.0 } else { 910.0 }, "ms", false));
            if *arm == "framework" {
                r.verdict =
                    BTreeMap::from([("upstream".into(), "sink".into()), ("downstream".into(), "client".into())]);
                // One rep at queue 1M found the broker leg slower than the client queue: verdicts differ.
                if *label == "1M" && rep == 3 {
                    r.verdict.insert("downstream".into(), "broker".into());
                }
            }
            // Each rep says what it measured, as the arms do (one note per rep, specific to that rep).
            r.note = Some(format!(
                "window 8.00 s after 3.0 s warm-up; {} records acknowledged in the window; e2e sampled 1/64",
                (v * 8.0) as u64
            ));
            out.push(r);
        }
    }
    for r in out.iter_mut() {
        let acked = (r.metrics["records_per_s"].value * 8.0) as u64;
        let label = r.variant.label.as_str();
        // shards=4: every rep's acknowledged count exceeded the broker's high watermarks.
        // batch 250k: one rep lost acks, the other two held.
        if label == "4" || (label == "250k" && r.variant.sweeps[0] == "batch_max_rows" && r.rep == 2) {
            *r = withdrawn(r.clone(), acked, acked - 31_888 - u64::from(r.rep) * 1_000);
        }
    }
    if scale >= 1.0 {
        // The newer run records its conditions (the older one predates them): client and broker on separate
        // CPUs, and one rep that a compile beside the lab disturbed.
        for r in out.iter_mut() {
            let disturbed = r.variant.label == "10k" && r.rep == 2;
            r.conditions = Some(conditions(disturbed, Some("client CPUs [0], broker CPUs [1]")));
        }
    }
    if scale < 1.0 {
        // The older run lost one raw rep to a timeout.
        let r = out.iter_mut().find(|r| r.arm == "raw" && r.variant.label == "2 cores" && r.rep == 3).unwrap();
        *r = failed(r.clone(), "arm timed out after 60 s", "waiting for delivery reports: 1,204,113 outstanding");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed demo results under testdata/ are exactly what these fixtures write.
    /// Regenerate them with `STREAMLAB_REGEN_TESTDATA=1 cargo test -p xtask site::fixtures`.
    #[test]
    fn testdata_matches_the_fixtures() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/site/testdata/results");
        let fresh = tempfile::tempdir().unwrap();
        for (id, ts, records) in demo_runs() {
            write_run(fresh.path(), &id, ts, &records);
        }
        if std::env::var_os("STREAMLAB_REGEN_TESTDATA").is_some() {
            let _ = std::fs::remove_dir_all(&root);
            for (id, ts, records) in demo_runs() {
                write_run(&root, &id, ts, &records);
            }
        }
        for (id, _, _) in demo_runs() {
            for file in [PROVENANCE_FILE, "kafka_sink.jsonl"] {
                let want = std::fs::read(fresh.path().join(&id).join(file)).unwrap();
                let have = std::fs::read(root.join(&id).join(file))
                    .unwrap_or_else(|e| panic!("{id}/{file}: {e}; set STREAMLAB_REGEN_TESTDATA=1"));
                assert!(want == have, "{id}/{file} is stale; set STREAMLAB_REGEN_TESTDATA=1 and rerun");
            }
        }
    }
}
