//! End-to-end tests of `lab run` as a user meets it: the xtask binary started as a process, real environments
//! brought up and down, records and provenance read back from the run directory. Each starts environments of
//! its own; `cargo xtask test` runs them one at a time, beside the harness's tests on the shared environment.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use streamlab_process::procfs;
use streamlab_record::provenance::Provenance;
use streamlab_record::{IntegrityStatus, Record, Status};

mod common;
use common::*;

#[test]
#[ignore = "starts Kafka and runs arms: cargo xtask test"]
fn sigint_leaves_nothing_running_and_resume_finishes_only_what_is_missing() {
    let out = tempfile::tempdir().unwrap();
    // The raw arm's points only: enough tasks to interrupt between, without the framework's twenty-odd.
    let jsonl = interrupted_raw_run("native", 2, Duration::from_secs(240), out.path());

    let run_id = run_id_of(&jsonl);
    assert!(envs_of(&run_id).is_empty(), "environment directories left behind: {:?}", envs_of(&run_id));
    assert!(processes_of(&run_id).is_empty(), "a broker or server was left running");
    let before = lines(&jsonl);
    streamlab_record::jsonl::read_records(&jsonl).expect("records written before Ctrl-C stay valid");

    let (finished, to_run) = resume_counts(&resume(&run_id, out.path()));
    assert_eq!(finished, before.len(), "resume counts every record written before Ctrl-C as finished");
    assert!(to_run > 0, "the interrupted run had tasks left");
    let after = lines(&jsonl);
    assert_eq!(&after[..before.len()], &before[..], "resume rewrote finished records");
    let records = streamlab_record::jsonl::read_records(&jsonl).unwrap();
    let mut keys: Vec<_> =
        records.iter().map(|r| (r.arm.clone(), r.variant.sweeps.clone(), r.variant.label.clone())).collect();
    keys.sort();
    keys.dedup();
    let planned = finished + to_run;
    assert_eq!((records.len(), keys.len()), (planned, planned), "every task exactly once");
    for r in records.iter().filter(|r| r.arm == "raw") {
        assert_eq!(r.measurement.integrity.status, IntegrityStatus::Verified, "{r:?}");
        assert!(r.measurement.metrics["records_per_s"].value > 0.0);
    }
    let prov = provenance(jsonl.parent().unwrap());
    assert!(prov.finished_ts_ms.is_some());
    // The resume calibrated the machine beside the start, and provenance tells which attempt ran each task.
    let calibration = prov.calibration.as_ref().expect("a calibrated run");
    assert!(calibration.start.is_some() && calibration.end.is_some(), "{calibration:?}");
    assert_eq!(calibration.resumes.len(), 1, "{calibration:?}");
    assert!(calibration.resumes[0].ts_ms > calibration.start.unwrap().ts_ms);
    let attempts = prov.attempt_of_tasks();
    for (i, r) in records.iter().enumerate().filter(|(_, r)| r.status != Status::NotRun) {
        let expected = usize::from(i >= before.len());
        assert_eq!(attempts.get(r.task_name().as_str()), Some(&expected), "{}", r.task_name());
    }
    assert_eq!(prov.versions.get("kafka").map(String::as_str), Some("4.1.0"));
    assert!(prov.versions.contains_key("librdkafka") && prov.versions.contains_key("java"));
    assert!(!prov.host.cpu_brand.is_empty() && prov.pins.artifacts.len() > 40);
    assert!(processes_of(&run_id).is_empty());
}

/// Run `lab run ARGS --out OUT` to its end; returns the records it wrote.
fn run_lab(args: &[String], out: &Path) -> Vec<Record> {
    xtask().args(args).arg("--out").arg(out).read(RUN_TIMEOUT).unwrap();
    streamlab_record::jsonl::read_records(&run_dir(out).join("kafka_sink.jsonl")).unwrap()
}

/// The one run directory under `out`.
fn run_dir(out: &Path) -> PathBuf {
    let runs: Vec<PathBuf> = std::fs::read_dir(out).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(runs.len(), 1, "one run directory in {}", out.display());
    runs[0].clone()
}

#[test]
#[ignore = "starts Kafka and runs arms: cargo xtask test"]
fn a_precision_target_adds_reps_until_met_or_spent_and_a_records_reproduce_command_reruns_exactly_its_point() {
    let (first_out, second_out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let quiet_before = procfs::loadavg_1m().is_some_and(|l| l < 0.3);
    // A target six reps meet unless a rep is twice as fast as the median: the quick profile's budget (8 reps,
    // 2 minutes per point) ends the point either way.
    let args = ["lab", "run", "--env", "native", "--profile", "quick", "--matrix", "kafka_sink", "--arm", "raw"]
        .into_iter()
        .chain(["--point", "broker_cores=1 core", "--set", "warmup_s=0.5", "--set", "window_s=1.0"])
        .chain(["--precision", "90%"])
        .map(str::to_owned)
        .collect::<Vec<_>>();
    let first = run_lab(&args, first_out.path());
    let reps: Vec<u32> = first.iter().map(|r| r.rep).collect();
    assert_eq!(reps, (1..=reps.len() as u32).collect::<Vec<_>>(), "one point, its reps in order");
    let prov = Provenance::load(&run_dir(first_out.path()).join("provenance.json")).unwrap();
    let matrix = prov.matrices.iter().find(|m| m.name == "kafka_sink").unwrap();
    assert_eq!(matrix.precision_target, Some(0.9), "the run's provenance says the target once");
    assert!(first.iter().all(|r| r.run.precision_target.is_none()), "and no record repeats it");
    let spent_s: f64 = first.iter().map(|r| r.conditions.as_ref().unwrap().wall_s).sum();
    // Reps measured under foreign load (the other test lane's, in CI) are set apart from the median.
    let drawn = first.iter().filter(|r| !r.conditions.as_ref().unwrap().foreign_load).count();
    if drawn < 6 {
        // Stopped short of the six an interval needs: only because they would not fit in its 8 reps or 2 minutes.
        let (reps, more) = (first.len(), 6 - drawn);
        let to_six_s = spent_s + more as f64 * spent_s / reps as f64;
        assert!(reps + more > 8 || to_six_s > 120.0, "{reps} reps ({drawn} drawn) in {spent_s:.0} s: six fit");
    }
    let reproduce = &first[0].reproduce;
    let words = shlex::split(reproduce).unwrap();
    assert_eq!(&words[..2], ["cargo", "xtask"], "{reproduce}");
    assert!(reproduce.contains("--reps 1 --precision off"), "a rerun is one rep, whatever the target: {reproduce}");
    eprintln!("rerunning: {reproduce}");
    let second = run_lab(&words[2..], second_out.path());
    assert_eq!(second.len(), 1);
    let (a, b) = (&first[0], &second[0]);
    assert_eq!((&a.bench, &a.arm, &a.variant), (&b.bench, &b.arm, &b.variant));
    assert_eq!(&b.reproduce, reproduce, "the rerun reproduces itself the same way");
    // Every task it ran states its conditions; the lab's own CPU (arm, broker, runner) is not foreign.
    let cpus = procfs::allowed_cpus().len() as f64;
    for r in [a, b] {
        let c = r.conditions.as_ref().expect("a task that ran has conditions");
        assert!(c.wall_s > 0.0 && c.placement.is_some(), "{c:?}");
        assert!(c.foreign_cpu_s >= 0.0 && c.foreign_cpu_s <= c.wall_s * cpus, "{c:?}");
    }
    // On a machine nothing else is using, a quick task sees little foreign CPU.
    if quiet_before {
        let c = b.conditions.as_ref().unwrap();
        assert!(c.foreign_cpu_s < 0.25 * c.wall_s, "foreign CPU on a quiet machine: {c:?}");
    }
}

#[test]
#[ignore = "starts Kafka and runs arms: cargo xtask test"]
fn a_budgeted_run_spends_its_minutes_on_blocks_of_a_claim_and_ends_with_the_verdicts_and_the_site() {
    let out = tempfile::tempdir().unwrap();
    // Room for the first pass and a second block even while CI's other lane loads the machine (the first pass alone
    // once took 2.5 of 4 minutes then); --blocks 2 ends the run after the second, so a quiet machine spends 2-3 min
    // of the 6 (a budget's blocks otherwise go on while one fits: 4.6 min of CI's time here).
    let budget = Duration::from_secs(360);
    let started = Instant::now();
    // The 000 batch claim's two points (the framework at 500k-row and at 10k-row batches), at the quick profile with a
    // window long enough for the framework's whole-batch acknowledgements to give a rate every rep: 8 s gave 9 (of
    // the 10 a rate needs) once in CI at faf900f, at a third of the framework's quiet rate while the other lane ran;
    // 12 s keeps that margin. Not the framework-over-raw claim: raw keeps 1.7-1.85 of this host's 2 cores busy, so
    // one rep decides by a hair whether that claim is CPU-bound here (and gets no blocks); the framework keeps 0.5-1.2.
    let args = ["lab", "run", "--env", "native", "--profile", "quick", "--matrix", "kafka_sink"];
    let budget_args = ["--budget", "6m", "--blocks", "2"];
    let points = ["--point", "batch_max_rows=500k", "--point", "batch_max_rows=10k", "--set", "window_s=12"];
    let done =
        xtask().args(args).args(budget_args).args(points).arg("--out").arg(out.path()).output(RUN_TIMEOUT).unwrap();
    let elapsed = started.elapsed();
    let stdout = &done.stdout;
    // The plan said what fits before it started; the run kept to its budget (the end's reserve covers the last
    // task's overrun, the environment brought down, the verdicts and the site).
    assert!(stdout.contains("budget 6 min: first one rep of the 2 points"), "{stdout}");
    assert!(elapsed < budget + Duration::from_secs(90), "a 6-minute budget took {elapsed:?}\n{stdout}");
    let run = std::fs::read_dir(out.path()).unwrap().next().unwrap().unwrap().path();
    let records = streamlab_record::jsonl::read_records(&run.join("kafka_sink.jsonl")).unwrap();
    let reps = |label: &str| {
        let mut r: Vec<u32> = records.iter().filter(|r| r.variant.label == label).map(|r| r.rep).collect();
        r.sort();
        r
    };
    // The run exits 0 when every record landed verified. The one failure it may report here is the framework's too
    // few whole-batch acknowledgements in a window measured while CI's other lane held the machine (load 13 on 2
    // cores once gave 7 of 10 in 12 s): that is the lab recording an honest failure, not a fault of the budget.
    let failed: Vec<_> =
        records.iter().filter(|r| r.measurement.integrity.status != IntegrityStatus::Verified).collect();
    let starved = |r: &&Record| {
        r.conditions.as_ref().is_some_and(|c| c.foreign_load)
            && r.reason.as_deref().is_some_and(|why| why.contains("whole-batch acknowledgements"))
    };
    assert!(failed.iter().all(starved), "{stdout}\n{}", done.stderr);
    assert_eq!(done.status.success(), failed.is_empty(), "{stdout}\n{}", done.stderr);
    if !failed.is_empty() {
        assert!(done.stderr.contains("records failed or failed their integrity check"), "{}", done.stderr);
    }
    // Blocks were added beyond the first pass (block 1), each one rep of both sides: every rep pairs in its block.
    assert_eq!(reps("10k"), [1, 2], "{stdout}\n{}", done.stderr);
    assert_eq!(reps("10k"), reps("500k"), "{stdout}");
    let blocks: std::collections::BTreeSet<Option<u32>> = records.iter().map(|r| r.block).collect();
    assert_eq!(blocks, [Some(1), Some(2)].into(), "--blocks 2: the first pass and one block");
    for block in &blocks {
        let sides: Vec<&str> = records.iter().filter(|r| r.block == *block).map(|r| r.variant.label.as_str()).collect();
        assert_eq!(sides.len(), 2, "block {block:?}: one rep of each side, {sides:?}");
    }
    // The phases go to stderr, the verdict table and the plan's reasons to stdout.
    let phases = &done.stderr;
    assert!(phases.contains("==> budget: block 2, "), "{phases}");
    assert!(
        stdout.contains("blocks of the claims this host can decide (000-batch-500k-over-10k; 1 in all)"),
        "{stdout}"
    );
    assert!(stdout.contains("block 2: bringing up a fresh environment"), "{stdout}");
    // Every fresh environment, the run's first too, is warmed up before its first task.
    let envs = provenance(&run).environments;
    assert_eq!(envs.len(), 2, "the run's first environment and block 2's: {envs:#?}");
    assert_eq!(envs[1].why, "block 2: a fresh environment");
    for env in &envs {
        assert!(env.warm_up.as_deref().is_some_and(|w| w.starts_with("warmed up: a bulk produce at ")), "{envs:#?}");
    }
    assert!(phases.contains("2 blocks, as --blocks 2 asked"), "{phases}");
    // It ends with the answer: the claim's verdict and the site built.
    assert!(stdout.contains("Monotonic: 174k (10k rows) → 1.21M (500k rows). No cliff."), "{stdout}");
    assert!(stdout.contains(" claims: ") && stdout.contains(" reproduce · "), "{stdout}");
    let site = phases.find("==> site: ").map(|at| phases[at + 10..].lines().next().unwrap().trim().to_owned());
    assert!(site.as_deref().is_some_and(|s| Path::new(s).is_file()), "{phases}");
    assert!(processes_of(&records[0].run.id).is_empty());
}
