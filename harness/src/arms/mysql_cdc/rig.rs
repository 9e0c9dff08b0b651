//! The driver: prepares a rig, starts the arm, watches it to the last record, stops it, reads back what
//! landed and writes the record. Everything here is the same for every arm.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use streamlab_process::clock::now_ms_f64;
use streamlab_record::descriptor::BackendKind;
use streamlab_record::{EnvDescriptor, Integrity, IntegrityStatus, Measurement, Metric};

use super::data::{self, Loaded};
use super::db::Db;
use super::probe::{self, CommitClock, Inserter, SinkWatch, TopicWatch};
use super::procs::{CpuReading, CpuRoles};
use super::streams;
use super::verify::{self, Landed};
use super::{ArmInfo, CdcArm, CdcLoad, Job, Knobs, Rig};
use crate::kafka::admin::{delete_topic, fresh_topic};
use crate::kafka::config::default_client_config;

/// How long an arm may take to open its binlog stream before rig C's inserts start.
const STREAM_START_TIMEOUT: Duration = Duration::from_secs(180);
/// After the last expected record, how long the driver keeps watching for extra (doubled) ones.
const SETTLE: Duration = Duration::from_millis(1000);
/// The source rigs' output topic: one partition, as the seed's auto-created topics had; the broker stamps
/// every batch with its append time, the clock every arm is measured by.
const OUTPUT_TOPIC_CONFIG: &[(&str, &str)] =
    &[("message.timestamp.type", "LogAppendTime"), ("retention.ms", "-1"), ("segment.bytes", "268435456")];

/// What the watch loop saw.
#[derive(Debug, Default)]
struct Watched {
    started_ms: f64,
    /// The driver saw every expected record (ms).
    done_ms: Option<f64>,
    /// Sink rig: the first poll that saw a row, and the one that saw them all.
    sink_first_ms: Option<f64>,
    sink_last_ms: Option<f64>,
    /// Rig C: the inserting session's start and end, and the commit clock.
    inserts: Option<(f64, f64)>,
    /// A paced inserter's own account (commit size, how far it fell behind its schedule).
    pacing: Option<String>,
    /// Rig C: the arm's binlog stream the inserts waited for.
    stream: Option<String>,
    commits: Vec<(f64, i64)>,
    /// CPU readings when the first record landed and when the last did (read before the arm stops: a
    /// stopped JVM's CPU is gone from /proc).
    cpu_first: Option<CpuReading>,
    cpu_done: Option<CpuReading>,
}

pub fn run(env: &EnvDescriptor, knobs: &Knobs, arm: &dyn CdcArm) -> Result<Measurement> {
    run_with(env, knobs, arm, &mut |_, _| Ok(()))
}

/// [`run`], handing the output topic to `before_delete` (with the admin client's config) once it has been
/// read back and before it is deleted: tests read messages from it.
pub fn run_with(
    env: &EnvDescriptor,
    knobs: &Knobs,
    arm: &dyn CdcArm,
    before_delete: &mut dyn FnMut(&rdkafka::ClientConfig, &str) -> Result<()>,
) -> Result<Measurement> {
    let db = Db::connect(env)?;
    let admin = default_client_config(env)?;
    let work = tempfile::Builder::new().prefix("streamlab-cdc-").tempdir()?;
    let rig = knobs.rig;
    let src = data::source(rig);
    let (topic_prefix, topic) = topics(arm, knobs, &src);

    let loaded = prepare(&db, &admin, knobs, arm, &topic)?;
    // Only on the lab's own server: an existing one (--mysql-dsn) may have replicas that need its binlogs.
    if env.backend != BackendKind::External {
        db.purge_binlogs()?;
    }
    // A backlog is inserted after the purge (the arm reads it from the binlog) and before the arm starts, from
    // a position recorded first: every arm streams from that same position.
    let (loaded, start_at) = if rig == Rig::CdcKafka && knobs.cdc_load == CdcLoad::Backlog {
        let at = probe::binlog_position(&db)?;
        (data::insert_backlog(&db, knobs.rows)?, Some(at))
    } else {
        (loaded, None)
    };
    let job = Job {
        rig,
        knobs: knobs.clone(),
        env: env.clone(),
        table: src.clone(),
        topic: topic.clone(),
        topic_prefix,
        work_dir: work.path().to_owned(),
        start_at,
    };
    let roles = CpuRoles::of_services(env);
    let cpu_before = roles.read();
    let sessions_before = streams::Before::read(&db)?;

    // The drop rig's server-side count, and the sink rig's statements: what reached the server.
    let reads = match rig {
        Rig::SnapshotDrop => {
            Some(verify::TableReads::start(&db, env.backend == BackendKind::External, src.database, src.table)?)
        }
        _ => None,
    };
    let statements = (rig == Rig::KafkaToMysql).then(|| verify::StatementCounts::read(&db)).transpose()?;

    let mut watched = Watched { started_ms: now_ms_f64(), ..Default::default() };
    let mut running = arm.start(&job)?;
    let roles = roles.with("arm", running.pids());
    let plan = Watch { db: &db, admin: &admin, knobs, topic: &topic, sessions_before: &sessions_before, roles: &roles };
    let outcome = watch(&plan, running.as_mut(), &mut watched);
    let self_count = running.self_count();
    let in_process = running.in_process();
    let stopped = running.stop();
    // Read once the arm's statements have ended (userstat is put back here, or on any early return).
    let server_reads = reads.map(|r| r.and_then(|reads| reads.finish().map_err(|e| format!("{e:#}"))));
    outcome?;
    let mut info = stopped.context("stopping the arm")?;
    let cpu = cpu_split(&cpu_before, &watched, in_process);
    if let Some(s) = statements {
        info.details.insert("server statements".into(), s.since(&db, knobs.rows)?);
        info.applied.extend(data::sink_topic(arm.event_format(knobs)));
    }

    let landed = verify::read_back(verify::ReadBack {
        db: &db,
        admin: &admin,
        knobs,
        topic: &topic,
        self_count,
        commits: &watched.commits,
        sink_window: (watched.sink_first_ms, watched.sink_last_ms),
        server_reads,
    })?;
    if matches!(rig, Rig::SnapshotKafka | Rig::CdcKafka) {
        let kept = before_delete(&admin, &topic);
        let _ = delete_topic(&admin, &topic);
        kept?;
    }
    let mut versions = db.server_facts()?;
    versions.extend(info.versions.clone());
    let mut m = measurement(knobs, &loaded, &watched, &landed, &cpu, info, versions);
    if let Some(at) = &job.start_at {
        m.details.insert("start position".into(), format!("{at}, recorded before the backlog was inserted"));
    }
    Ok(m)
}

/// The arm's topic prefix, and the topic the rig reads: the event topic a sink arm consumes, else the one the
/// source arm writes `<prefix>.<database>.<table>` to.
fn topics(arm: &dyn CdcArm, knobs: &Knobs, src: &super::Source) -> (String, String) {
    let prefix = format!("{}-{}", arm.name(), knobs.rig.name()).replace('_', "-");
    let topic = match knobs.rig {
        Rig::KafkaToMysql => data::event_topic(arm.event_format(knobs)),
        _ => format!("{prefix}.{}.{}", src.database, src.table),
    };
    (prefix, topic)
}

/// CPU seconds per role from the first record to the last (`<role>`), and what the arm spent before its first
/// record (`arm_startup`): a JVM's start-up is reported, not spread over the rows. Without a first-record
/// reading (the drop rig counts in-process) the whole run is the window.
fn cpu_split(before: &CpuReading, w: &Watched, in_process: bool) -> BTreeMap<&'static str, f64> {
    let Some(done) = &w.cpu_done else { return BTreeMap::new() };
    let from = w.cpu_first.as_ref().unwrap_or(before);
    let mut cpu = from.until(done);
    // A process started for this run has no earlier reading: all it used before the first record is start-up.
    let arm_startup = if in_process {
        before.until(from).get("harness").copied()
    } else {
        w.cpu_first.as_ref().and_then(|f| f.get("arm"))
    };
    if in_process {
        cpu.remove("arm");
        if let Some(h) = cpu.get("harness").copied() {
            cpu.insert("arm", h);
        }
    } else if w.cpu_first.is_none()
        && let Some(a) = done.get("arm")
    {
        cpu.insert("arm", a);
    }
    if let Some(s) = arm_startup.filter(|_| w.cpu_first.is_some()) {
        cpu.insert("arm_startup", s);
    }
    cpu
}

/// Load or reset what the rig reads and writes; the source rigs get a fresh output topic.
fn prepare(db: &Db, admin: &rdkafka::ClientConfig, knobs: &Knobs, arm: &dyn CdcArm, topic: &str) -> Result<Loaded> {
    let loaded = match knobs.rig {
        Rig::SnapshotDrop | Rig::SnapshotKafka => data::load_snapshot_table(db, knobs.rig, knobs.rows)?,
        Rig::CdcKafka => {
            data::reset_cdc_table(db)?;
            Loaded { rows: 0, elapsed: Duration::ZERO, reused: false }
        }
        Rig::KafkaToMysql => {
            let (_, loaded) = data::load_events(admin, arm.event_format(knobs), knobs.rows)?;
            data::reset_sink_table(db)?;
            loaded
        }
    };
    if matches!(knobs.rig, Rig::SnapshotKafka | Rig::CdcKafka) {
        fresh_topic(admin, topic, 1, OUTPUT_TOPIC_CONFIG)?;
    }
    Ok(loaded)
}

/// What the watch loop looks at.
struct Watch<'a> {
    db: &'a Db,
    admin: &'a rdkafka::ClientConfig,
    knobs: &'a Knobs,
    topic: &'a str,
    /// The server's sessions before the arm started (rig C waits for a dump session of the arm's, not among them).
    sessions_before: &'a streams::Before,
    roles: &'a CpuRoles,
}

/// Watch the arm until every expected record has landed (then [`SETTLE`] more), it fails, or the timeout.
fn watch(plan: &Watch, running: &mut dyn super::Running, w: &mut Watched) -> Result<()> {
    let Watch { db, admin, knobs, topic, sessions_before, roles } = *plan;
    let started = Instant::now();
    let deadline = started + knobs.timeout();
    let rows = knobs.rows;
    let mut clock_and_inserts = None;
    // A backlog was inserted before the arm started: nothing to insert while it runs.
    if knobs.rig == Rig::CdcKafka && knobs.cdc_load != CdcLoad::Backlog {
        // The inserts start once the arm reads the binlog, so none can precede its start position.
        let stream = streams::wait_for_arm_stream(db, running, sessions_before, STREAM_START_TIMEOUT)?;
        w.stream = Some(stream.to_string());
        let clock = CommitClock::start(db, &format!("{}.cart", data::source(Rig::CdcKafka).database))?;
        let inserter = match knobs.cdc_load {
            CdcLoad::Paced => Inserter::paced(db, rows, knobs.paced_rows_per_s)?,
            _ => Inserter::start(db, data::cdc_insert_statement(rows))?,
        };
        clock_and_inserts = Some((clock, inserter));
    }
    let topic_watch = match knobs.rig {
        Rig::SnapshotKafka | Rig::CdcKafka => Some(TopicWatch::new(admin, topic, 1)?),
        _ => None,
    };
    let sink_watch = match knobs.rig {
        Rig::KafkaToMysql => Some(SinkWatch::new(db)?),
        _ => None,
    };
    let poll = if sink_watch.is_some() { probe::SINK_POLL } else { probe::TOPIC_POLL };
    let result = loop {
        if let Err(e) = running.check() {
            break Err(e);
        }
        let at = now_ms_f64();
        let landed = match (&topic_watch, &sink_watch) {
            (Some(t), _) => t.count()?,
            (_, Some(s)) => s.count(db)?,
            _ => running.self_counted_rows().unwrap_or(0),
        };
        if landed > 0 && w.cpu_first.is_none() && (topic_watch.is_some() || sink_watch.is_some()) {
            w.cpu_first = Some(roles.read());
            if sink_watch.is_some() {
                w.sink_first_ms = Some(at);
            }
        }
        let inserts_running = clock_and_inserts.as_ref().is_some_and(|(_, i)| !i.is_finished());
        if landed >= rows.max(1) && !inserts_running {
            w.cpu_done = Some(roles.read());
            w.done_ms = Some(at);
            if sink_watch.is_some() {
                w.sink_last_ms = Some(at);
            }
            break Ok(());
        }
        if Instant::now() > deadline {
            break Err(anyhow::anyhow!(
                "timed out after {} s with {landed} of {rows} records landed (timeout_s)",
                knobs.timeout_s
            ));
        }
        std::thread::sleep(poll);
    };
    if let Some((clock, inserter)) = clock_and_inserts {
        let inserted = inserter.finish(db);
        w.commits = clock.finish(db)?;
        let inserted = inserted?;
        w.inserts = Some((inserted.began_ms, inserted.ended_ms));
        w.pacing = inserted.pacing;
    }
    result?;
    if topic_watch.is_some() || sink_watch.is_some() {
        std::thread::sleep(SETTLE);
        running.check()?;
    }
    Ok(())
}

fn measurement(
    knobs: &Knobs,
    loaded: &Loaded,
    w: &Watched,
    landed: &Landed,
    cpu: &BTreeMap<&'static str, f64>,
    info: ArmInfo,
    versions: BTreeMap<String, String>,
) -> Measurement {
    let mut metrics = BTreeMap::from([
        ("rows".into(), Metric::new(knobs.rows as f64, "rows", true)),
        ("landed".into(), Metric::new(landed.messages as f64, "records", true)),
    ]);
    if !loaded.reused && loaded.rows > 0 {
        metrics.insert("load_s".into(), Metric::new(loaded.elapsed.as_secs_f64(), "s", false));
    }
    let window_s = match (landed.first_ms, landed.last_ms) {
        (Some(f), Some(l)) if l > f => Some((l - f) / 1e3),
        _ => None,
    };
    if let Some(first) = landed.first_ms {
        metrics.insert("startup_s".into(), Metric::new((first - w.started_ms).max(0.0) / 1e3, "s", false));
    }
    if let (Some(done), Some(last)) = (w.done_ms, landed.last_ms) {
        metrics.insert("idle_tail_s".into(), Metric::new((done - last).max(0.0) / 1e3, "s", false));
    }
    // A window with nothing in it is a failed measurement, never a rate of zero.
    if let Some(secs) = window_s.filter(|_| landed.messages > 0) {
        metrics.insert("window_s".into(), Metric::new(secs, "s", false));
        metrics.insert("records_per_s".into(), Metric::new(landed.messages as f64 / secs, "rows/s", true));
        // Bytes written per second; the sink rig writes rows, and the bytes it states are of what it read.
        if landed.bytes > 0 && knobs.rig != Rig::KafkaToMysql {
            metrics.insert("mb_per_s".into(), Metric::new(landed.bytes as f64 / 1e6 / secs, "MB/s", true));
        }
    }
    // What each record weighs needs no clock.
    if landed.messages > 0 {
        let per = |bytes: u64| Metric::new(bytes as f64 / landed.messages as f64, "B", false);
        if landed.bytes > 0 {
            metrics.insert("bytes_per_record".into(), per(landed.bytes));
            // Where the values were weighed, so were the keys: a keyless record's is 0 B, stated for parity.
            metrics.insert("key_bytes_per_record".into(), per(landed.key_bytes));
        }
    }
    add_role_cpu(&mut metrics, knobs.rows, cpu);
    if let Some((began, ended)) = w.inserts
        && ended > began
    {
        metrics.insert(
            "insert_rows_per_s".into(),
            Metric::new(knobs.rows as f64 / ((ended - began) / 1e3), "rows/s", true),
        );
    }
    add_lag(&mut metrics, &landed.lags_ms);

    let (exact, method) = landed.verdict(knobs.rows);
    let integrity = Integrity {
        status: if exact { IntegrityStatus::Verified } else { IntegrityStatus::Failed },
        expected: Some(knobs.rows),
        observed: Some(landed.messages),
        method,
    };
    let mut applied = data::offered(knobs);
    applied.extend(info.applied);
    let mut details = info.details;
    details.insert("config".into(), info.config);
    details.extend(watch_details(w));
    details.insert("load".into(), load_text(loaded));
    details.insert("clock".into(), clock_text(knobs.rig));
    Measurement {
        kind: knobs.rig.name().into(),
        metrics,
        integrity,
        verdict: BTreeMap::new(),
        note: info.note,
        details,
        versions,
        applied,
    }
}

/// CPU seconds per role (arm, server, broker, ...), their total over the roles that did the work, and per million
/// rows.
fn add_role_cpu(metrics: &mut BTreeMap<String, Metric>, rows: u64, cpu: &BTreeMap<&'static str, f64>) {
    if let Some(&wall_s) = cpu.get(super::procs::WALL) {
        let host = crate::cpu::HostReading {
            wall_s,
            busy_s: cpu.get(super::procs::HOST).copied(),
            cpus: streamlab_process::procfs::host_cpus(),
        };
        crate::cpu::add_host_cores(metrics, &host);
    }
    for (role, secs) in cpu.iter().filter(|(role, _)| ![super::procs::HOST, super::procs::WALL].contains(role)) {
        metrics.insert(format!("{role}_cpu_s"), Metric::new(*secs, "CPU s", false));
    }
    let total: f64 = ["arm", "server", "broker"].iter().filter_map(|r| cpu.get(r)).sum();
    metrics.insert("total_cpu_s".into(), Metric::new(total, "CPU s", false));
    let millions = rows as f64 / 1e6;
    if millions > 0.0 {
        if let Some(a) = cpu.get("arm") {
            metrics.insert("arm_cpu_s_per_m_rows".into(), Metric::new(a / millions, "CPU s / 1M rows", false));
        }
        metrics.insert("total_cpu_s_per_m_rows".into(), Metric::new(total / millions, "CPU s / 1M rows", false));
    }
}

/// What the watch loop saw that a reader needs: the paced inserter's account, the stream rig C waited for.
fn watch_details(w: &Watched) -> BTreeMap<String, String> {
    let pacing = w.pacing.clone().map(|p| ("pacing".to_owned(), p));
    let stream = w.stream.clone().map(|s| ("binlog stream".to_owned(), s));
    pacing.into_iter().chain(stream).collect()
}

fn load_text(loaded: &Loaded) -> String {
    if loaded.reused {
        format!("{} rows already loaded by this loader: reused", loaded.rows)
    } else {
        format!("{} rows loaded in {:.1} s (not in the arm's time)", loaded.rows, loaded.elapsed.as_secs_f64())
    }
}

/// Which clock timed the rig's first and last row.
fn clock_text(rig: Rig) -> String {
    match rig {
        Rig::SnapshotDrop => "the arm's own first and last row (ms)".into(),
        Rig::KafkaToMysql => format!(
            "first and last inserted row as Innodb_rows_inserted (Handler_write on MariaDB) showed them, polled every \
             {} ms",
            probe::SINK_POLL.as_millis()
        ),
        _ => "the broker's LogAppendTime of the first and last message (ms)".into(),
    }
}

/// End-to-end lag bounds (rig C): nearest-rank p50/p99/max in ms.
fn add_lag(metrics: &mut BTreeMap<String, Metric>, lags_ms: &[f64]) {
    if lags_ms.is_empty() {
        return;
    }
    let mut sorted = lags_ms.to_vec();
    sorted.sort_by(f64::total_cmp);
    for (suffix, p) in [("p50", 50.0), ("p99", 99.0), ("max", 100.0)] {
        if let Some(v) = streamlab_record::stats::percentile(&sorted, p) {
            metrics.insert(format!("lag_{suffix}_ms"), Metric::new(v, "ms", false));
        }
    }
}

#[cfg(test)]
#[path = "rig_tests.rs"]
mod tests;
