//! One task: start the harness process for an arm at a point (pinned if placed, timed out if it hangs),
//! and turn what it printed, or how it failed, into a record.

use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use streamlab_process::Cmd;
use streamlab_record::arms::{NOT_RUNNABLE_EXIT, NotRunnable};
use streamlab_record::descriptor::DESCRIPTOR_FILE;
use streamlab_record::fault::FAULTS_ENV;
use streamlab_record::{Integrity, Measurement, Record, RunInfo, SCHEMA, Status, Variant};

use super::faults::FaultDir;
use super::plan::Task;
use crate::env::backend::Environment;
use crate::env::health::ServiceDown;
use crate::env::process;
use crate::interrupt;

/// What became of one harness process.
pub enum Outcome {
    Measured(Measurement),
    Failed {
        reason: String,
        log_tail: String,
    },
    /// The arm's client cannot run this point (a feature it lacks): a not-run record with the arm's reason.
    NotRunnable {
        reason: String,
    },
}

/// Run one task's harness process against `env`, watching its services (a dead one fails the task) and serving
/// the faults the arm asks for through it.
pub fn run_task(
    harness: &Path,
    task: &Task,
    env: &mut dyn Environment,
    logs: &Path,
    client_cpus: Option<&[usize]>,
    tools: Option<&Path>,
) -> Result<Outcome> {
    let stem = format!("{}-{}-{}-{}-rep{}", task.bench, task.arm, task.sweep, slug(&task.label), task.rep);
    let log_path = logs.join(format!("{stem}.log"));
    let faults = FaultDir::create(logs, &stem)?;
    let mut cmd = Cmd::new(harness)
        .args(["run", "--bench", &task.bench, "--arm", &task.arm, "--env"])
        .arg(env.descriptor().dir.join(DESCRIPTOR_FILE))
        .args(["--knobs", &serde_json::to_string(&task.knobs)?])
        .env(FAULTS_ENV, faults.path())
        .pipe_stdout(&log_path);
    // Pinned from its first instruction: every thread it starts inherits the set.
    if let Some(cpus) = client_cpus {
        cmd = cmd.cpus(cpus);
    }
    if let Some(tools) = tools {
        cmd = cmd.env(streamlab_record::tools::TOOLS_ENV, tools);
    }
    // A fresh log per task (the arm's stderr): pipe_stdout appends.
    let _ = std::fs::remove_file(&log_path);
    let mut child = cmd.spawn()?;
    // Read stdout on a thread so a chatty arm can never block on a full pipe.
    let mut pipe = child.take_stdout().context("no stdout")?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = pipe.read_to_string(&mut s);
        s
    });
    let timeout = task_timeout(task);
    let started = Instant::now();
    let mut polls = 0u64;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        polls += 1;
        // A fault the arm asked for (a broker it kills is down on purpose: the descriptor says so, and the
        // watch below leaves it alone).
        if let Some(done) = faults.serve(env) {
            tracing::info!("fault for {}: {:?} {}", task.describe(), done.status, done.describe());
        }
        // A service that died takes the arm with it: say so within a second instead of waiting for the
        // arm's own timeouts.
        if polls.is_multiple_of(WATCH_EVERY_POLLS)
            && let Some(down) = env.dead_service()
        {
            child.kill();
            return Ok(Outcome::Failed {
                reason: format!("{down} during the task"),
                log_tail: service_and_arm_tail(&down, &process::log_tail(&log_path, 20)),
            });
        }
        if interrupt::requested() {
            child.kill();
            bail!(interrupt::Interrupted);
        }
        if started.elapsed() > timeout {
            child.kill();
            return Ok(Outcome::Failed {
                reason: format!("timed out after {} s", timeout.as_secs()),
                log_tail: process::log_tail(&log_path, 20),
            });
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    Ok(outcome_of(status, &reader.join().unwrap_or_default(), &log_path))
}

/// What an arm that ended said: not runnable (and why), failed (with its error), or its measurement, the last
/// line it printed.
fn outcome_of(status: std::process::ExitStatus, stdout: &str, log_path: &Path) -> Outcome {
    if status.code() == Some(NOT_RUNNABLE_EXIT) {
        let tail = process::log_tail(log_path, 20);
        let reason = NotRunnable::reason_in(&tail).unwrap_or(&tail);
        return Outcome::NotRunnable { reason: reason.to_owned() };
    }
    if !status.success() {
        let tail = process::log_tail(log_path, 20);
        return Outcome::Failed {
            reason: format!("the arm exited with {status}: {}", arm_error(&tail)),
            log_tail: tail,
        };
    }
    let line = stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
    match serde_json::from_str::<Measurement>(line) {
        Ok(m) => Outcome::Measured(m),
        Err(e) => Outcome::Failed {
            reason: format!("the arm printed no valid measurement: {e}"),
            log_tail: process::log_tail(log_path, 20),
        },
    }
}

/// The task loop polls every 100 ms; the services are watched every second.
const WATCH_EVERY_POLLS: u64 = 10;

/// The arm's own error from its stderr: the harness's last `error: ...` line (its message chain), else a
/// panic's message, else the last line.
pub fn arm_error(log_tail: &str) -> String {
    let lines: Vec<&str> = log_tail.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    if let Some(e) = lines.iter().rev().find_map(|l| l.strip_prefix("error: ")) {
        return e.to_owned();
    }
    if let Some(i) = lines.iter().rposition(|l| l.contains(" panicked at ")) {
        let at = lines[i].split(" panicked at ").nth(1).unwrap_or("").trim_end_matches(':');
        let message = lines.get(i + 1).filter(|l| !l.starts_with("note: ")).copied().unwrap_or("(no message)");
        return format!("panicked: {message} (at {at})");
    }
    lines.last().copied().unwrap_or("(no output)").to_owned()
}

/// A dead service's log tail, then the arm's.
pub fn service_and_arm_tail(down: &ServiceDown, arm_tail: &str) -> String {
    format!("--- the {}'s log:\n{}\n--- the arm's log:\n{arm_tail}", down.service, down.log_tail)
}

/// Generous: warm-up + window, plus set-up and drain time; an arm with its own `timeout_s` (the mysql_cdc arms)
/// gets twice that on top, for its loading and read-back.
pub fn task_timeout(task: &Task) -> Duration {
    let secs = |k: &str| task.knobs.get(k).and_then(|v| v.as_f64()).unwrap_or(0.0);
    Duration::from_secs_f64(180.0 + 3.0 * (secs("warmup_s") + secs("window_s")) + 2.0 * secs("timeout_s"))
}

pub fn slug(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}

pub fn variant(task: &Task) -> Variant {
    Variant {
        label: task.label.clone(),
        sweeps: vec![task.sweep.clone()],
        default: task.default,
        knobs: task.knobs.clone().into_iter().collect(),
    }
}

pub fn to_record(task: &Task, run: &RunInfo, reproduce: &str, outcome: Outcome) -> Record {
    let (status, reason, log_tail, measurement) = match outcome {
        Outcome::Measured(m) => (Status::Ok, m.integrity.failure_reason(), None, m),
        Outcome::Failed { reason, log_tail } => (
            Status::Failed,
            Some(reason),
            Some(log_tail),
            Measurement::nothing("failed", Integrity::not_checked("the arm did not finish")),
        ),
        Outcome::NotRunnable { reason } => {
            (Status::NotRun, Some(reason), None, Measurement::nothing("not_run", Integrity::not_checked("not run")))
        }
    };
    Record {
        schema: SCHEMA.into(),
        bench: task.bench.clone(),
        run: run.clone(),
        arm: task.arm.clone(),
        variant: variant(task),
        status,
        reason,
        log_tail,
        measurement,
        rep: task.rep,
        block: task.block,
        reproduce: reproduce.to_owned(),
        measured_as: None,
        conditions: None,
    }
}

/// `task`'s record from `origin`'s measurement of the same configuration ([`Task::same_work_as_record`]): that
/// measurement, its conditions and versions, under `task`'s point, rep and command, naming the point that made it.
pub fn measured_as(task: &Task, origin: &Record, reproduce: &str) -> Record {
    Record {
        variant: variant(task),
        rep: task.rep,
        block: task.block,
        reproduce: reproduce.to_owned(),
        measured_as: Some(origin.measurement_id().4),
        ..origin.clone()
    }
}

pub fn not_run_record(task: &Task, run: &RunInfo, reproduce: &str, reason: &str) -> Record {
    to_record(task, run, reproduce, Outcome::NotRunnable { reason: reason.to_owned() })
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use streamlab_record::Metric;

    use super::*;

    pub(crate) fn task() -> Task {
        Task {
            bench: "kafka_sink".into(),
            arm: "raw".into(),
            sweep: "mode".into(),
            label: "raw rdkafka".into(),
            default: false,
            rep: 1,
            block: None,
            knobs: BTreeMap::new(),
            not_run: None,
            brokers: 1,
        }
    }

    fn run_info() -> RunInfo {
        serde_json::from_value(serde_json::json!({"id": "r", "ts_ms": 0, "commit": "c", "dirty": false, "host": "h",
            "cpu": "cpu", "cores": 2, "os": "os", "profile": "quick", "env": "native"}))
        .unwrap()
    }

    #[test]
    fn a_failed_arm_s_reason_is_its_error_not_a_stack_frame() {
        // What the harness prints when an arm returns an error (its message chain, last).
        let err = "2026-11-30T05:00:00Z INFO harness: topic ready\nerror: the sink acknowledged no batch within 60 s: \
                   Connection refused (127.0.0.1:9092)\n";
        assert_eq!(arm_error(err), "the sink acknowledged no batch within 60 s: Connection refused (127.0.0.1:9092)");
        // A panic, as Rust 1.95 prints it, with a backtrace after it.
        let panic = "thread 'main' (42) panicked at harness/src/arms/kafka_sink/raw.rs:120:9:\n\
                     the window never opened\nstack backtrace:\n   0: rust_begin_unwind\n  22: _start\n";
        assert_eq!(arm_error(panic), "panicked: the window never opened (at harness/src/arms/kafka_sink/raw.rs:120:9)");
        assert_eq!(arm_error("just a line\n\n"), "just a line");
        assert_eq!(arm_error(""), "(no output)");
    }

    /// A produce measurement of 1000 records whose topic's watermarks hold `observed`.
    fn acked_of_1000(observed: u64) -> Measurement {
        Measurement {
            kind: "produce".into(),
            metrics: BTreeMap::from([("records_per_s".into(), Metric::new(1e6, "records/s", true))]),
            integrity: Integrity::compare(1000, observed, "sum of partition high watermarks"),
            verdict: BTreeMap::new(),
            note: None,
            details: BTreeMap::new(),
            versions: BTreeMap::new(),
            applied: Default::default(),
        }
    }

    #[test]
    fn a_claim_the_watermarks_do_not_back_is_withdrawn_with_its_reason() {
        let measured = acked_of_1000(990);
        let r = to_record(&task(), &run_info(), "cargo xtask lab run", Outcome::Measured(measured));
        assert_eq!(r.status, Status::Ok);
        assert_eq!(r.measurement.integrity.status, streamlab_record::IntegrityStatus::Failed);
        assert!(!r.is_publishable());
        assert_eq!(
            r.reason.as_deref(),
            Some("integrity failed: expected 1000 but observed 990 (sum of partition high watermarks)")
        );
        assert!(crate::lab::summary::record_line(&r).starts_with("  WITHDRAWN"));
    }

    #[test]
    fn a_point_measured_as_another_carries_that_measurement_and_names_the_point_that_made_it() {
        let measured = acked_of_1000(1000);
        let block = |t: Task| Task { block: Some(2), ..t };
        let mode = block(Task { arm: "framework".into(), label: "framework path".into(), rep: 2, ..task() });
        let origin = to_record(&mode, &run_info(), "run mode", Outcome::Measured(measured));
        let batch = block(Task { sweep: "batch".into(), label: "500k".into(), ..mode.clone() });
        assert!(batch.same_work_as_record(&origin));
        let copy = measured_as(&batch, &origin, "run batch");
        assert_eq!((copy.variant.label.as_str(), copy.variant.sweeps.as_slice()), ("500k", &["batch".to_owned()][..]));
        assert_eq!((copy.rep, copy.block, copy.reproduce.as_str()), (2, Some(2), "run batch"));
        assert_eq!(copy.measurement, origin.measurement, "the one measurement, not another");
        assert_eq!(copy.measurement_id(), origin.measurement_id());
        let line = crate::lab::summary::record_line(&copy);
        assert!(line.contains("[batch 500k] rep 2, measured as [mode framework path] rep 2: 1000000"), "{line}");
        // A third point measured as the copy names the point whose task made it.
        let queue = block(Task { sweep: "queue".into(), label: "100k".into(), ..mode.clone() });
        let again = measured_as(&queue, &copy, "run queue");
        let named = again.measured_as.as_ref().unwrap();
        assert_eq!((named.sweep.as_str(), named.label.as_str(), named.rep), ("mode", "framework path", 2));
        // A failed measurement is no measurement to stand on: the point runs its own.
        let failed =
            to_record(&mode, &run_info(), "run mode", Outcome::Failed { reason: "x".into(), log_tail: "".into() });
        assert!(!batch.same_work_as_record(&failed));
    }

    #[test]
    fn a_crashed_arm_is_a_failed_record_with_its_log_tail() {
        let outcome =
            Outcome::Failed { reason: "the arm exited with exit status: 1: boom".into(), log_tail: "boom".into() };
        let r = to_record(&task(), &run_info(), "cargo xtask lab run", outcome);
        assert_eq!((r.status, r.log_tail.as_deref()), (Status::Failed, Some("boom")));
        assert_eq!(r.measurement.integrity.status, streamlab_record::IntegrityStatus::NotChecked);
        assert!(r.measurement.metrics.is_empty());
    }
}
