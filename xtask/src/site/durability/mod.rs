//! The durability page: what replication costs each producer (RF 3 over RF 1, the same arm, acks setting and
//! rep, only where the two records applied the same settings but the topic's), each fault's unavailability,
//! ISR refill and loss and duplicate counts per acks setting in one table, and a timeline of acknowledgements
//! per 100 ms around each fault (rep 1 of every point).

pub mod summary;
mod timeline;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use streamlab_record::applied::{self, differing_keys};
use streamlab_record::integrity::REORDERING_NOT_JUDGED;
use streamlab_record::{IntegrityStatus, Record, Status};

use crate::results::format;
use crate::results::load::Run;
use crate::site::links::{self, RunLink};

/// The page's file, at the site's root.
pub const HREF: &str = "durability.html";
pub const MATRIX: &str = "durability";
/// The knob the replication sweeps vary.
const REPLICATION: &str = "replication";

#[derive(Debug, Clone, Serialize)]
pub struct DurabilityPage {
    pub run: RunLink,
    pub matrix_href: String,
    pub raw_href: String,
    pub footer: String,
    /// The first screen: RF 3 over RF 1 per arm and acks setting, and each fault's reps summarised.
    pub replication_summary: Vec<summary::RfSummary>,
    pub fault_summary: Vec<summary::FaultSummary>,
    pub replication: Vec<RfRow>,
    pub faults: Vec<FaultTable>,
    pub timelines: Vec<TimelineView>,
    /// Arms not run, once each, with the reason.
    pub not_run: Vec<links::KeyValue>,
    /// Records that failed (a durability or idempotence violation, or a crash), with the reason.
    pub failures: Vec<String>,
    /// Said when the run was resumed: how each later attempt's rates measured against the first's.
    pub attempts: Option<crate::results::attempts::AttemptsNote>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RfRow {
    pub arm: String,
    pub setting: String,
    pub rep: u32,
    pub rf1: String,
    pub rf3: String,
    /// RF 3 / RF 1 records/s, or why there is none.
    pub ratio: String,
    pub comparable: bool,
    pub p99_rf1: String,
    pub p99_rf3: String,
    pub broker_cpu_rf1: String,
    pub broker_cpu_rf3: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct FaultTable {
    pub setting: String,
    pub rows: Vec<FaultRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FaultRow {
    pub fault: String,
    pub arm: String,
    pub rep: u32,
    pub status: String,
    pub bad: bool,
    pub rate: String,
    pub gap: String,
    pub gap_p0: String,
    pub isr: String,
    pub lost: String,
    pub duplicated: String,
    pub reordered: String,
    pub unacked_present: String,
    pub failed: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct TimelineView {
    pub title: String,
    pub svg: String,
}

/// The acks settings the matrix sweeps, as the page names them.
fn setting(r: &Record) -> String {
    let acks = r.variant.knobs.get("acks").and_then(|v| v.as_i64()).unwrap_or(0);
    let idem = r.variant.knobs.get("idempotence").and_then(|v| v.as_bool()).unwrap_or(false);
    match (acks, idem) {
        (-1, true) => "acks=all, idempotent".into(),
        (-1, false) => "acks=all, not idempotent".into(),
        (a, _) => format!("acks={a}"),
    }
}

fn knob_i64(r: &Record, k: &str) -> Option<i64> {
    r.variant.knobs.get(k).and_then(|v| v.as_i64())
}

fn fault_of(r: &Record) -> String {
    r.variant.knobs.get("fault").and_then(|v| v.as_str()).unwrap_or("none").to_owned()
}

fn metric(r: &Record, name: &str) -> Option<f64> {
    r.measurement.metrics.get(name).map(|m| m.value)
}

fn num(r: &Record, name: &str) -> String {
    metric(r, name).map_or_else(|| "–".to_owned(), format::table_value)
}

fn ms(r: &Record, name: &str) -> String {
    metric(r, name).map_or_else(|| "–".to_owned(), |v| format!("{} ms", format::table_value(v.round())))
}

/// A longest gap in ms, as "≥ N ms (not ended in the window)" when no acknowledgement ended it before the
/// window's end (the record's `open_key` detail).
fn gap_ms(r: &Record, name: &str, open_key: &str) -> String {
    match r.measurement.details.contains_key(open_key) {
        true => format!("≥ {} (not ended in the window)", ms(r, name)),
        false => ms(r, name),
    }
}

fn arm_titles(run: &Run) -> BTreeMap<String, String> {
    run.provenance
        .matrices
        .iter()
        .filter(|m| m.name == MATRIX)
        .flat_map(|m| m.arms.iter().map(|a| (a.name.clone(), a.title.clone())))
        .collect()
}

/// The sweeps that vary the replication factor, as the run's matrix file declares them (their knob).
fn replication_sweeps(run: &Run) -> BTreeSet<String> {
    run.provenance
        .matrices
        .iter()
        .filter(|m| m.name == MATRIX)
        .flat_map(|m| m.sweeps.iter().filter(|s| s.knob.as_deref() == Some(REPLICATION)).map(|s| s.name.clone()))
        .collect()
}

/// The page for `run`'s durability records, or `None` when it has none.
pub fn page(run: &Run) -> Option<DurabilityPage> {
    let records = &run.matrices.get(MATRIX)?.records;
    let titles = arm_titles(run);
    let title = |arm: &str| titles.get(arm).cloned().unwrap_or_else(|| arm.to_owned());
    let mut not_run: BTreeMap<String, String> = BTreeMap::new();
    let mut failures = Vec::new();
    for r in records {
        match r.status {
            Status::NotRun => {
                not_run.entry(title(&r.arm)).or_insert_with(|| r.reason.clone().unwrap_or_default());
            }
            _ if !r.is_publishable() => failures.push(format!(
                "{} · {} · {} rep {}: {}",
                title(&r.arm),
                setting(r),
                r.variant.label,
                r.rep,
                r.reason.as_deref().unwrap_or("failed")
            )),
            _ => {}
        }
    }
    let ran: Vec<&Record> = records.iter().filter(|r| r.status != Status::NotRun).collect();
    let (replication, replication_summary) = replication(&ran, &replication_sweeps(run), &title);
    Some(DurabilityPage {
        run: links::run_link(run),
        matrix_href: links::latest_matrix_href(MATRIX),
        raw_href: links::run_matrix_href(&run.id, MATRIX).replace(".html", ".jsonl"),
        footer: links::footer(&run.provenance),
        replication_summary,
        fault_summary: summary::faults(&ran, &title),
        replication,
        faults: faults(&ran, &title),
        timelines: timelines(&ran, &title),
        not_run: not_run.into_iter().map(|(k, v)| links::KeyValue { key: k, value: v }).collect(),
        failures,
        attempts: crate::results::attempts::attempts_note(&run.provenance, records, "records_per_s"),
    })
}

/// RF 3 over RF 1 for each arm, acks setting and rep, from the replication sweeps (no fault), and per arm and
/// setting the comparable pairs summarised.
fn replication(
    records: &[&Record],
    rf_sweeps: &BTreeSet<String>,
    title: &dyn Fn(&str) -> String,
) -> (Vec<RfRow>, Vec<summary::RfSummary>) {
    let rf = |r: &&Record, n: i64| {
        r.variant.sweeps.iter().any(|s| rf_sweeps.contains(s)) && knob_i64(r, REPLICATION) == Some(n)
    };
    let (mut rows, mut pairs, mut arms_settings) = (Vec::new(), Vec::new(), Vec::new());
    for one in records.iter().filter(|r| rf(r, 1)) {
        let Some(three) = records
            .iter()
            .find(|t| rf(t, 3) && t.arm == one.arm && t.rep == one.rep && t.variant.sweeps == one.variant.sweeps)
        else {
            continue;
        };
        let differ: Vec<String> = differing_keys(&one.measurement.applied, &three.measurement.applied)
            .into_iter()
            .filter(|k| !applied::matches("topic.*", k))
            .collect();
        let (ratio, comparable) = match (
            one.is_publishable() && three.is_publishable(),
            metric(one, "records_per_s"),
            metric(three, "records_per_s"),
        ) {
            (false, ..) => ("no ratio: a side did not verify".to_owned(), false),
            _ if capped(one) || capped(three) => (format!("no ratio: {CAPPED}"), false),
            (true, ..) if one.measurement.applied.is_empty() || three.measurement.applied.is_empty() => {
                ("no ratio: a side states no applied settings".to_owned(), false)
            }
            (true, ..) if !differ.is_empty() => (format!("no ratio: the sides differ in {}", differ.join(", ")), false),
            (true, Some(a), Some(b)) if a > 0.0 => {
                pairs.push(summary::RfPair { arm: title(&one.arm), setting: setting(one), ratio: b / a });
                (format::ratio(b / a), true)
            }
            _ => ("no ratio: no rate".to_owned(), false),
        };
        let arm_setting = (title(&one.arm), setting(one));
        if !arms_settings.contains(&arm_setting) {
            arms_settings.push(arm_setting);
        }
        rows.push(RfRow {
            arm: title(&one.arm),
            setting: setting(one),
            rep: one.rep,
            rf1: rate(one),
            rf3: rate(three),
            ratio,
            comparable,
            p99_rf1: ms(one, "produce_latency_p99_ms"),
            p99_rf3: ms(three, "produce_latency_p99_ms"),
            broker_cpu_rf1: num(one, "broker_cpu_s_per_m_records"),
            broker_cpu_rf3: num(three, "broker_cpu_s_per_m_records"),
        });
    }
    let summary = summary::replication(&pairs, &arms_settings);
    (rows, summary)
}

const FAULT_ORDER: [&str; 4] = ["none", "kill", "stop", "restart"];

/// One table per acks setting: every fault (and no fault, from the RF 3 replication point) of every arm and rep.
fn faults(records: &[&Record], title: &dyn Fn(&str) -> String) -> Vec<FaultTable> {
    let at_rf3 = |r: &&&Record| knob_i64(r, REPLICATION) == Some(3);
    let mut by_setting: BTreeMap<String, Vec<(usize, &Record)>> = BTreeMap::new();
    for r in records.iter().filter(at_rf3) {
        let order = FAULT_ORDER.iter().position(|f| *f == fault_of(r)).unwrap_or(FAULT_ORDER.len());
        by_setting.entry(setting(r)).or_default().push((order, r));
    }
    by_setting
        .into_iter()
        .map(|(setting, mut rs)| {
            rs.sort_by(|(a, x), (b, y)| (a, &x.arm, x.rep).cmp(&(b, &y.arm, y.rep)));
            let rows = rs.into_iter().map(|(_, r)| fault_row(r, title)).collect();
            FaultTable { setting, rows }
        })
        .collect()
}

/// Why a capped record's rate is not a rate.
const CAPPED: &str = "the producer sent its max_records before the window ended, so the rate counts an idle tail";

/// Whether the producer sent every record `max_records` allowed and the rate still counts the window's idle tail:
/// runs from before the harness measured such a producer up to its last send (and recorded `window_s`).
fn capped(r: &Record) -> bool {
    let cap = r.variant.knobs.get("max_records").and_then(|v| v.as_f64());
    let window_measured = metric(r, "window_s").is_some();
    matches!((metric(r, "sent"), cap), (Some(sent), Some(cap)) if sent >= cap && !window_measured)
}

/// Records per second, or why a capped record has none; a rate measured over less than the window asked (the
/// producer sent its max_records early) says over how long.
fn rate(r: &Record) -> String {
    if capped(r) {
        return format!("– (capped: {} sent)", num(r, "sent"));
    }
    let asked = r.variant.knobs.get("window_s").and_then(|v| v.as_f64());
    match (metric(r, "window_s"), asked) {
        (Some(measured), Some(asked)) if measured < asked => {
            format!("{} (over {measured:.1} of {asked} s: max_records sent)", num(r, "records_per_s"))
        }
        _ => num(r, "records_per_s"),
    }
}

fn fault_row(r: &Record, title: &dyn Fn(&str) -> String) -> FaultRow {
    let (status, bad) = match (r.status, r.measurement.integrity.status) {
        (Status::Ok, IntegrityStatus::Verified) => ("verified".to_owned(), false),
        (Status::Ok, IntegrityStatus::Failed) => {
            let why = r.measurement.integrity.method.split(';').next().unwrap_or("integrity failed");
            (format!("failed: {why}"), true)
        }
        _ => (format!("failed: {}", r.reason.as_deref().unwrap_or("")), true),
    };
    let fault = fault_of(r);
    FaultRow {
        fault: if fault == "none" { "none (RF 3 point)".into() } else { r.variant.label.clone() },
        arm: title(&r.arm),
        rep: r.rep,
        status,
        bad,
        rate: rate(r),
        gap: gap_ms(r, "max_ack_gap_ms", "max_ack_gap_open"),
        gap_p0: gap_ms(r, "max_ack_gap_p0_ms", "max_ack_gap_p0_open"),
        isr: ms(r, "isr_full_after_ms"),
        lost: num(r, "lost"),
        duplicated: num(r, "duplicated"),
        reordered: match r.measurement.integrity.method.contains(REORDERING_NOT_JUDGED) {
            true => format!("{} (not judged: the client got them out of order)", num(r, "reordered")),
            false => num(r, "reordered"),
        },
        unacked_present: num(r, "unacked_present"),
        failed: num(r, "failed"),
    }
}

/// Rep 1 of every fault point, per arm, in the fault tables' order.
fn timelines(records: &[&Record], title: &dyn Fn(&str) -> String) -> Vec<TimelineView> {
    let mut chosen: Vec<&Record> = records
        .iter()
        .copied()
        .filter(|r| r.rep == 1 && fault_of(r) != "none" && r.measurement.details.contains_key("acks_per_100ms"))
        .collect();
    chosen.sort_by_key(|r| (setting(r), FAULT_ORDER.iter().position(|f| *f == fault_of(r)), r.arm.clone()));
    chosen
        .into_iter()
        .filter_map(|r| {
            let counts = timeline::parse_counts(&r.measurement.details["acks_per_100ms"])?;
            let detail_ms = |k: &str| r.measurement.details.get(k).and_then(|v| v.parse::<f64>().ok());
            let name = format!("{} · {} · {}", title(&r.arm), setting(r), r.variant.label);
            let t = timeline::Timeline {
                id: format!("tl-{}", format::slug(&format!("{}-{}-{}", r.arm, setting(r), r.variant.label))),
                title: name.clone(),
                counts,
                fault_at_ms: detail_ms("fault_at_ms"),
                gap: detail_ms("max_ack_gap_at_ms").zip(metric(r, "max_ack_gap_ms")),
            };
            Some(TimelineView { title: name, svg: timeline::render(&t) })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use streamlab_record::{Integrity, Metric};

    use super::*;
    use crate::results::fixtures;

    /// The run's provenance says that `sweep` varies the replication factor, as the matrix file does.
    fn declare_replication_sweep(run_dir: &std::path::Path, sweep: &str) {
        let path = run_dir.join(crate::provenance::PROVENANCE_FILE);
        let mut p: crate::provenance::Provenance =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let mut info = fixtures::kafka_sink_info();
        info.name = MATRIX.into();
        info.arms.clear();
        info.sweeps.truncate(1);
        info.sweeps[0].name = sweep.into();
        info.sweeps[0].knob = Some(REPLICATION.into());
        p.matrices.push(info);
        std::fs::write(path, serde_json::to_string_pretty(&p).unwrap()).unwrap();
    }

    /// A durability record built from the fixture's record: its knobs, metrics and applied settings.
    fn rec(arm: &str, sweep: &str, label: &str, knobs: serde_json::Value, metrics: &[(&str, f64)]) -> Record {
        let mut r = fixtures::record("run-d", arm, label, &[sweep], false, 1, 0.0);
        r.bench = MATRIX.into();
        r.variant.knobs = knobs.as_object().unwrap().clone().into_iter().collect();
        r.measurement.metrics = metrics.iter().map(|(k, v)| (k.to_string(), Metric::new(*v, "", true))).collect();
        let rf = r.variant.knobs["replication"].to_string();
        r.measurement.applied = [("producer.acks", "-1"), ("format", "seq-bytes")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .chain([("topic.replication.factor".to_owned(), rf)])
            .collect();
        r
    }

    #[test]
    fn a_record_whose_rate_counts_an_idle_tail_after_max_records_has_no_rate_and_no_ratio() {
        let knobs =
            |rf: i64| serde_json::json!({"acks": 1, "idempotence": false, "replication": rf, "max_records": 4e6});
        let full = rec("java", "rf_acks_1", "RF 1", knobs(1), &[("records_per_s", 3e5), ("sent", 4e6)]);
        let three = rec("java", "rf_acks_1", "RF 3", knobs(3), &[("records_per_s", 2.5e5), ("sent", 3.5e6)]);
        let rf_sweeps = BTreeSet::from(["rf_acks_1".to_owned()]);
        let (rows, _) = replication(&[&full, &three], &rf_sweeps, &|a: &str| a.to_owned());
        assert_eq!(rows[0].rf1, "– (capped: 4,000,000 sent)");
        assert_eq!(rows[0].rf3, format::table_value(2.5e5));
        assert!(!rows[0].comparable && rows[0].ratio.contains("counts an idle tail"), "{:?}", rows[0].ratio);
        let measured = [("records_per_s", 3e5), ("sent", 4e6), ("window_s", 28.9)];
        let mut shortened = rec("java", "rf_acks_1", "RF 1", knobs(1), &measured);
        shortened.variant.knobs.insert("window_s".into(), serde_json::json!(30.0));
        let (rows, _) = replication(&[&shortened, &three], &rf_sweeps, &|a: &str| a.to_owned());
        let over = format!("{} (over 28.9 of 30 s: max_records sent)", format::table_value(3e5));
        assert_eq!(rows[0].rf1, over, "measured up to its last send: a rate, and over how long");
        assert!(rows[0].comparable, "{:?}", rows[0].ratio);
    }

    #[test]
    fn a_gap_no_acknowledgement_ended_reads_as_at_least_and_a_closed_one_as_itself() {
        let idem = serde_json::json!({"acks": 1, "idempotence": false, "replication": 3, "fault": "kill"});
        let metrics = [("max_ack_gap_ms", 10_800.4), ("max_ack_gap_p0_ms", 10_800.4)];
        let mut r = rec("partitionline", "fault_acks_1", "kill -9 leader", idem, &metrics);
        r.measurement.details.insert("max_ack_gap_open".into(), "no acknowledgement ended it".into());
        let row = fault_row(&r, &|a: &str| a.to_owned());
        assert_eq!(row.gap, "≥ 10,800 ms (not ended in the window)");
        assert_eq!(row.gap_p0, "10,800 ms", "partition 0's own gap was ended");
    }

    #[test]
    fn the_page_divides_rf_3_by_rf_1_like_for_like_and_lists_every_fault_with_a_timeline() {
        let idem = |rf: i64, fault: &str| serde_json::json!({"acks": -1, "idempotence": true, "replication": rf, "fault": fault});
        let rf1 = rec("rdkafka", "rf_idempotent", "RF 1", idem(1, "none"), &[("records_per_s", 200_000.0)]);
        let rf3 = rec(
            "rdkafka",
            "rf_idempotent",
            "RF 3",
            idem(3, "none"),
            &[("records_per_s", 50_000.0), ("max_ack_gap_ms", 12.0)],
        );
        let mut kill = rec(
            "rdkafka",
            "fault_idempotent",
            "kill -9 leader",
            idem(3, "kill"),
            &[("records_per_s", 30_000.0), ("max_ack_gap_ms", 9_100.0), ("lost", 0.0), ("duplicated", 0.0)],
        );
        kill.measurement.details =
            [("acks_per_100ms", "5,5,0,0,7"), ("fault_at_ms", "120"), ("max_ack_gap_at_ms", "180")]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
        let mut lost = rec(
            "java",
            "fault_idempotent",
            "SIGSTOP leader",
            idem(3, "stop"),
            &[("records_per_s", 1.0), ("lost", 3.0)],
        );
        lost.measurement.integrity = Integrity {
            status: IntegrityStatus::Failed,
            expected: Some(10),
            observed: Some(7),
            method:
                "durability violation at acks=all: 3 acknowledged records lost (partition 0 offsets 1, 2, 3); compared"
                    .into(),
        };
        lost.reason = lost.measurement.integrity.failure_reason();
        // The other side of a ratio that applied a different linger: no number, the difference named.
        let mut j1 = rec("java", "rf_idempotent", "RF 1", idem(1, "none"), &[("records_per_s", 9.0)]);
        j1.measurement.applied.insert("producer.linger.ms".into(), "0".into());
        let j3 = rec("java", "rf_idempotent", "RF 3", idem(3, "none"), &[("records_per_s", 3.0)]);
        let mut c = rec("c_2_12", "rf_idempotent", "RF 1", idem(1, "none"), &[]);
        c.status = Status::NotRun;
        c.reason = Some("no partition in its delivery report".into());
        let results = tempfile::tempdir().unwrap();
        let dir = fixtures::write_run(results.path(), "run-d", 1, &[]);
        declare_replication_sweep(&dir, "rf_idempotent");
        let records = [rf1, rf3, kill, lost, j1, j3, c.clone(), Record { rep: 2, ..c }];
        let path = dir.join("durability.jsonl");
        std::fs::write(&path, streamlab_record::jsonl::to_lines(&path, &records).unwrap()).unwrap();

        let files =
            crate::site::build_site(results.path(), &crate::results::config::SiteConfig::builtin().unwrap()).unwrap();
        let html = String::from_utf8(files[HREF].clone()).unwrap();
        assert!(html.contains("<td class=\"num\">0.25×</td>"), "RF 3 / RF 1 for rdkafka: {html}");
        assert!(html.contains("no ratio: the sides differ in producer.linger.ms"));
        assert!(html.contains("<td>kill -9 leader</td><td>rdkafka</td>"));
        assert!(html.contains("<td class=\"num\">9,100 ms</td>"), "the unavailability");
        assert!(html.contains("none (RF 3 point)"), "the no-fault baseline");
        assert!(html.contains("class=\"bad\">failed: durability violation at acks=all: 3 acknowledged records lost (partition 0 offsets 1, 2, 3)"));
        assert_eq!(
            html.matches("<svg class=\"timeline\"").count(),
            1,
            "one timeline: rep 1 of the fault point that has one"
        );
        assert_eq!(html.matches("no partition in its delivery report").count(), 1, "a not-run arm is one line");
        let index = String::from_utf8(files["index.html"].clone()).unwrap();
        assert!(index.contains("href=\"durability.html\""));
    }
}
