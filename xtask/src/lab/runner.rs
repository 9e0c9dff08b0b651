//! `lab run`: validate everything, bring the environment up, run every task as its own harness
//! process, write each record as its task ends, and always bring the environment down.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use streamlab_record::descriptor::DESCRIPTOR_FILE;
use streamlab_record::{EnvDescriptor, Integrity, Measurement, Metric, Record, RunInfo, SCHEMA, Status, Variant};

use super::RunArgs;
use super::matrix::{self, BROKER_CORES_KNOB, Matrix};
use super::plan::{self, PlanOptions, Task};
use super::results::{self, RunDir};
use crate::env::{self, external, native, process};
use crate::provenance::{self, EnvInfo, MatrixInfo, PROVENANCE_FILE, PROVENANCE_SCHEMA, Provenance};
use crate::{clock, interrupt, paths};

/// Which backend serves the run.
#[derive(Debug, Clone, PartialEq)]
enum Backend {
    Native,
    External { bootstrap: String, dsn: Option<external::MysqlDsn> },
}

pub fn run(args: RunArgs) -> Result<()> {
    interrupt::install();
    let out_root = args.out.clone().unwrap_or_else(paths::results_dir);
    let (run_id, args) = match &args.resume {
        Some(id) => {
            let saved = RunDir::new(out_root.join(id)).load_args()?;
            let mysql_dsn = resume_dsn(saved.mysql_dsn.as_deref(), args.mysql_dsn.clone())?;
            (id.clone(), RunArgs { resume: Some(id.clone()), out: args.out.clone(), mysql_dsn, ..saved })
        }
        None => (results::new_run_id(&args.profile), args),
    };

    // Everything that can be wrong with the input is refused here, before anything is provisioned.
    let matrices = select_matrices(&args.matrices)?;
    plan::resolve_sets(&matrices, &args.sets)?;
    let opts = PlanOptions { profile: args.profile.clone(), reps: args.reps, sets: args.sets.clone() };
    let backend = choose_backend(&args)?;
    let mut tasks = Vec::new();
    for m in &matrices {
        tasks.extend(plan::expand(m, &opts)?);
    }
    mark_uncappable(&mut tasks, &backend);

    let run_dir = RunDir::new(out_root.join(&run_id));
    let benches: Vec<String> = matrices.iter().map(|m| m.name.clone()).collect();
    // Read once: resume skips these, and ratios find their same-rep baseline among them.
    let mut written = run_dir.records(&benches)?;
    let done = results::finished(&written);
    let todo: Vec<Task> = tasks.into_iter().filter(|t| !done.contains(&t.key())).collect();
    if args.resume.is_some() {
        println!("resuming {run_id}: {} tasks finished, {} to run", done.len(), todo.len());
    }

    let harness = build_harness()?;
    let needs_mysql = matrices.iter().any(|m| m.needs.iter().any(|n| n == "mysql"));
    let started = Instant::now();
    println!("run {run_id}: {} tasks, profile {}, bringing the environment up", todo.len(), args.profile);
    let env = LabEnv::up(&backend, &run_id, needs_mysql)?;

    // The run directory appears only once there is provenance to put in it.
    let mut prov = collect_provenance(&run_id, &args, &matrices, &env.descriptor, &harness)?;
    if let Ok(earlier) = Provenance::load(&run_dir.path.join(PROVENANCE_FILE)) {
        prov.merge_earlier(earlier);
    }
    std::fs::create_dir_all(&run_dir.path).with_context(|| format!("cannot create {}", run_dir.path.display()))?;
    run_dir.save_args(&RunArgs {
        resume: None,
        out: None,
        mysql_dsn: args.mysql_dsn.as_deref().map(redact_dsn),
        ..args.clone()
    })?;
    write_provenance(&run_dir, &prov)?;
    let run_info = run_info(&run_id, &prov);
    let reproduce = reproduce_command(&args);
    let logs = paths::repo_root().join("target/streamlab/runs").join(&run_id);
    std::fs::create_dir_all(&logs)?;

    let bar = progress_bar(todo.len());
    for task in &todo {
        interrupt::check()?;
        bar.set_message(task.describe());
        let record = match &task.not_run {
            Some(reason) => not_run_record(task, &run_info, &reproduce, reason),
            None => {
                let m = matrices.iter().find(|m| m.name == task.bench).expect("planned from these");
                if let Some(cap) = apply_broker_cores(task, &env)?
                    && prov.note_broker_cap(&cap)
                {
                    write_provenance(&run_dir, &prov)?;
                }
                let measured = run_task(&harness, task, &env.descriptor, &logs)?;
                if let Outcome::Measured(m) = &measured {
                    prov.versions.extend(m.versions.clone());
                }
                let mut record = to_record(task, &run_info, &reproduce, measured);
                add_ratios(m, &mut record, &written);
                record
            }
        };
        run_dir.append(&record)?;
        if bar.is_hidden() {
            println!("{}", summary_line(&record));
        } else {
            bar.println(summary_line(&record));
        }
        written.push(record);
        bar.inc(1);
    }
    bar.finish_and_clear();
    prov.finished_ts_ms = Some(clock::now_ms());
    write_provenance(&run_dir, &prov)?;
    drop(env);
    println!("run {run_id} finished in {:.1} min: {}", started.elapsed().as_secs_f64() / 60.0, run_dir.path.display());
    Ok(())
}

/// `mysql://user:PASSWORD@host:port`: what run.json keeps of a DSN.
fn redact_dsn(dsn: &str) -> String {
    match external::parse_dsn(dsn) {
        Ok(d) => format!("mysql://{}:PASSWORD@{}:{}", d.user, d.host, d.port),
        Err(_) => "mysql://<unparsable>".into(),
    }
}

/// A resumed run needs the DSN again: its password was never stored.
fn resume_dsn(saved: Option<&str>, given: Option<String>) -> Result<Option<String>> {
    match (saved, given) {
        (_, Some(dsn)) => Ok(Some(dsn)),
        (Some(saved), None) => {
            bail!("--resume: this run used --mysql-dsn {saved}; pass --mysql-dsn again (its password is not stored)")
        }
        (None, None) => Ok(None),
    }
}

/// Points that ask for a broker CPU cap this run cannot apply are recorded as not run, with the reason.
fn mark_uncappable(tasks: &mut [Task], backend: &Backend) {
    for t in tasks.iter_mut().filter(|t| t.not_run.is_none()) {
        let Some(cores) = t.knobs.get(BROKER_CORES_KNOB).and_then(|v| v.as_u64()).filter(|&c| c > 0) else {
            continue;
        };
        t.not_run = match backend {
            Backend::External { .. } => Some("external environment: the lab cannot cap the broker's CPUs".to_owned()),
            Backend::Native => env::broker_cpus(cores as usize).err().map(|e| format!("{BROKER_CORES_KNOB}: {e}")),
        };
    }
}

fn select_matrices(names: &[String]) -> Result<Vec<Matrix>> {
    let all = matrix::load_all(&paths::matrices_dir())?;
    if names.is_empty() {
        return Ok(all);
    }
    names
        .iter()
        .map(|n| {
            all.iter().find(|m| &m.name == n).cloned().with_context(|| {
                let known: Vec<&str> = all.iter().map(|m| m.name.as_str()).collect();
                format!("--matrix {n}: no such matrix; matrices are {known:?} (harness/matrices/*.toml)")
            })
        })
        .collect()
}

fn choose_backend(args: &RunArgs) -> Result<Backend> {
    let dsn = args.mysql_dsn.as_deref().map(external::parse_dsn).transpose()?;
    match (args.env.as_str(), &args.bootstrap) {
        ("external", None) => bail!("--env external needs --bootstrap HOST:PORT"),
        ("external" | "auto", Some(b)) => {
            external::check_bootstrap(b)?;
            Ok(Backend::External { bootstrap: b.clone(), dsn })
        }
        ("native" | "auto", None) if dsn.is_some() => {
            bail!("--mysql-dsn needs --bootstrap too: the external backend uses both of your services")
        }
        ("native" | "auto", None) => Ok(Backend::Native),
        ("docker", _) => bail!(
            "--env docker: the docker backend is not built yet; use --env native (JDK >= 17 and mariadbd, see \
             `cargo xtask doctor`) or --env external --bootstrap HOST:PORT"
        ),
        ("native", Some(_)) => bail!("--bootstrap points at an external cluster; drop --env native"),
        (other, _) => bail!("--env {other}: allowed auto, native, docker, external"),
    }
}

/// The environment of one run; brought down when dropped (also on error and Ctrl-C).
struct LabEnv {
    descriptor: EnvDescriptor,
    managed: bool,
}

impl LabEnv {
    fn up(backend: &Backend, run_id: &str, with_mysql: bool) -> Result<Self> {
        match backend {
            Backend::Native => {
                let opts = native::NativeOptions {
                    root: paths::envs_dir(),
                    // A fresh id per attempt: a resumed run never trips over a killed attempt's storage.
                    id: format!("lab-{run_id}-{:04x}", rand::random::<u16>()),
                    with_mysql,
                    broker_cpus: None,
                    lifetime: process::Lifetime::TiedToParent,
                    kafka_ports: None,
                };
                Ok(LabEnv { descriptor: native::up(&opts)?, managed: true })
            }
            Backend::External { bootstrap, dsn } => {
                let dir = paths::envs_dir().join(format!("ext-{run_id}"));
                let descriptor = external::describe(&dir, run_id, bootstrap, dsn.as_ref())?;
                Ok(LabEnv { descriptor, managed: false })
            }
        }
    }
}

impl Drop for LabEnv {
    fn drop(&mut self) {
        let result = if self.managed {
            native::down(&self.descriptor, false)
        } else {
            std::fs::remove_dir_all(&self.descriptor.dir).map_err(Into::into)
        };
        if let Err(e) = result {
            eprintln!("warning: could not tear down environment {}: {e:#}", self.descriptor.id);
        }
    }
}

/// `cargo build --release -p harness`; returns the binary's path.
fn build_harness() -> Result<PathBuf> {
    let root = paths::repo_root();
    let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .current_dir(&root)
        .args(["build", "--quiet", "--release", "-p", "harness"])
        .status()
        .context("cannot run cargo")?;
    anyhow::ensure!(status.success(), "building the harness failed ({status})");
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    Ok(target.join("release").join("harness"))
}

/// Pin the broker for a task that sets broker_cores; returns the cap applied, for provenance.
fn apply_broker_cores(task: &Task, env: &LabEnv) -> Result<Option<String>> {
    let Some(cores) = task.knobs.get(BROKER_CORES_KNOB).and_then(|v| v.as_u64()) else { return Ok(None) };
    let Some(pid) = env.descriptor.kafka.pid.filter(|_| env.managed) else { return Ok(None) };
    let cpus = env::broker_cpus(cores as usize).map_err(anyhow::Error::msg)?.unwrap_or_default();
    process::set_affinity(pid, &cpus)?;
    Ok(Some(if cpus.is_empty() { "all CPUs".into() } else { format!("CPUs {cpus:?} (affinity)") }))
}

/// What became of one harness process.
enum Outcome {
    Measured(Measurement),
    Failed { reason: String, log_tail: String },
}

fn run_task(harness: &Path, task: &Task, env: &EnvDescriptor, logs: &Path) -> Result<Outcome> {
    let log_path =
        logs.join(format!("{}-{}-{}-{}-rep{}.log", task.bench, task.arm, task.sweep, slug(&task.label), task.rep));
    let knobs = serde_json::to_string(&task.knobs)?;
    let mut cmd = Command::new(harness);
    cmd.args(["run", "--bench", &task.bench, "--arm", &task.arm, "--env"])
        .arg(env.dir.join(DESCRIPTOR_FILE))
        .args(["--knobs", &knobs])
        .stdout(Stdio::piped());
    let mut child = process::spawn_piped(cmd, &log_path)?;
    // Read stdout on a thread so a chatty arm can never block on a full pipe.
    let mut pipe = child.stdout.take().context("no stdout")?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = pipe.read_to_string(&mut s);
        s
    });
    let timeout = task_timeout(task);
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if interrupt::requested() {
            let _ = child.kill();
            let _ = child.wait();
            bail!(interrupt::Interrupted);
        }
        if started.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(Outcome::Failed {
                reason: format!("timed out after {} s", timeout.as_secs()),
                log_tail: process::log_tail(&log_path, 20),
            });
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let stdout = reader.join().unwrap_or_default();
    if !status.success() {
        let tail = process::log_tail(&log_path, 20);
        let last = tail.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_owned();
        return Ok(Outcome::Failed { reason: format!("the arm exited with {status}: {last}"), log_tail: tail });
    }
    let line = stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
    match serde_json::from_str::<Measurement>(line) {
        Ok(m) => Ok(Outcome::Measured(m)),
        Err(e) => Ok(Outcome::Failed {
            reason: format!("the arm printed no valid measurement: {e}"),
            log_tail: process::log_tail(&log_path, 20),
        }),
    }
}

/// Generous: warm-up + window, plus set-up and drain time.
fn task_timeout(task: &Task) -> Duration {
    let secs = |k: &str| task.knobs.get(k).and_then(|v| v.as_f64()).unwrap_or(0.0);
    Duration::from_secs_f64(180.0 + 3.0 * (secs("warmup_s") + secs("window_s")))
}

fn slug(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}

fn variant(task: &Task) -> Variant {
    Variant {
        label: task.label.clone(),
        sweeps: vec![task.sweep.clone()],
        default: task.default,
        knobs: task.knobs.clone().into_iter().collect(),
    }
}

fn to_record(task: &Task, run: &RunInfo, reproduce: &str, outcome: Outcome) -> Record {
    let base = Record {
        schema: SCHEMA.into(),
        bench: task.bench.clone(),
        kind: String::new(),
        run: run.clone(),
        arm: task.arm.clone(),
        variant: variant(task),
        status: Status::Ok,
        reason: None,
        log_tail: None,
        metrics: BTreeMap::new(),
        integrity: Integrity::not_checked("the arm did not finish"),
        verdict: BTreeMap::new(),
        note: None,
        rep: task.rep,
        reproduce: reproduce.to_owned(),
        conditions: None,
    };
    match outcome {
        Outcome::Measured(m) => Record {
            kind: m.kind,
            metrics: m.metrics,
            reason: m.integrity.failure_reason(),
            integrity: m.integrity,
            verdict: m.verdict,
            note: m.note,
            ..base
        },
        Outcome::Failed { reason, log_tail } => Record {
            kind: "failed".into(),
            status: Status::Failed,
            reason: Some(reason),
            log_tail: Some(log_tail),
            ..base
        },
    }
}

fn not_run_record(task: &Task, run: &RunInfo, reproduce: &str, reason: &str) -> Record {
    Record {
        schema: SCHEMA.into(),
        bench: task.bench.clone(),
        kind: "not_run".into(),
        run: run.clone(),
        arm: task.arm.clone(),
        variant: variant(task),
        status: Status::NotRun,
        reason: Some(reason.to_owned()),
        log_tail: None,
        metrics: BTreeMap::new(),
        integrity: Integrity::not_checked("not run"),
        verdict: BTreeMap::new(),
        note: None,
        rep: task.rep,
        reproduce: reproduce.to_owned(),
        conditions: None,
    }
}

/// Ratios measured side by side: this record over the denominator arm's record of the same rep.
fn add_ratios(m: &Matrix, record: &mut Record, written: &[Record]) {
    if !record.is_publishable() {
        return;
    }
    for r in m.ratios.iter().filter(|r| r.numerator_arm == record.arm) {
        let Some(num) = record.metrics.get(&r.metric).map(|x| x.value) else { continue };
        let base = written.iter().find(|b| {
            b.bench == m.name
                && b.arm == r.denominator_arm
                && b.rep == record.rep
                && b.variant.sweeps.contains(&r.denominator_sweep)
                && b.is_publishable()
        });
        if let Some(den) = base.and_then(|b| b.metrics.get(&r.metric).map(|x| x.value))
            && let Some(ratio) = streamlab_record::stats::ratio(num, den)
        {
            record.metrics.insert(r.name.clone(), Metric::new(ratio, "ratio", true));
        }
    }
}

fn run_info(run_id: &str, prov: &Provenance) -> RunInfo {
    RunInfo {
        id: run_id.to_owned(),
        ts_ms: prov.started_ts_ms,
        commit: prov.git.commit.clone(),
        dirty: prov.git.dirty,
        host: prov.host.hostname.clone(),
        cpu: prov.host.cpu_brand.clone(),
        cores: prov.host.logical_cores,
        os: prov.host.os.clone(),
        profile: prov.profile.clone(),
        env: prov.env.backend.clone(),
    }
}

/// The command that reproduces this run (secrets redacted).
fn reproduce_command(args: &RunArgs) -> String {
    let mut cmd = String::from("cargo xtask lab run");
    for m in &args.matrices {
        cmd += &format!(" --matrix {m}");
    }
    cmd += &format!(" --profile {}", args.profile);
    if args.env != "auto" {
        cmd += &format!(" --env {}", args.env);
    }
    if let Some(b) = &args.bootstrap {
        cmd += &format!(" --bootstrap {b}");
    }
    if let Some(dsn) = args.mysql_dsn.as_deref().and_then(|d| external::parse_dsn(d).ok()) {
        cmd += &format!(" --mysql-dsn mysql://{}:PASSWORD@{}:{}", dsn.user, dsn.host, dsn.port);
    }
    if let Some(r) = args.reps {
        cmd += &format!(" --reps {r}");
    }
    for s in &args.sets {
        cmd += &format!(" --set {s}");
    }
    cmd
}

fn collect_provenance(
    run_id: &str,
    args: &RunArgs,
    matrices: &[Matrix],
    env: &EnvDescriptor,
    harness: &Path,
) -> Result<Provenance> {
    let root = paths::repo_root();
    let mut versions = provenance::collect_tool_versions();
    versions.extend(provenance::crate_versions(&root.join("Cargo.lock")));
    if let Some(v) = harness_versions(harness) {
        versions.extend(v);
    }
    if env.backend == "native" {
        versions.insert("kafka".into(), env.kafka.version.clone());
    }
    if let Some(m) = &env.mysql {
        versions.insert(m.flavour.clone(), m.version.clone());
    }
    let pins = crate::env::pins::provenance_pins()?;
    Ok(Provenance {
        schema: PROVENANCE_SCHEMA.into(),
        run_id: run_id.to_owned(),
        started_ts_ms: clock::now_ms(),
        finished_ts_ms: None,
        reproduce: reproduce_command(args),
        profile: args.profile.clone(),
        git: provenance::collect_git(&root),
        host: provenance::collect_host(),
        env: EnvInfo {
            backend: env.backend.clone(),
            managed: env.backend != "external",
            kafka_version: Some(env.kafka.version.clone()),
            mysql_flavour: env.mysql.as_ref().map(|m| m.flavour.clone()),
            mysql_version: env.mysql.as_ref().map(|m| m.version.clone()),
            cpu_caps: BTreeMap::new(),
            note: (env.backend == "external").then(|| {
                "external services: the lab neither started nor stopped them and cannot cap their CPUs".to_owned()
            }),
        },
        versions,
        pins,
        matrices: matrices.iter().map(matrix_info).collect::<Result<_>>()?,
    })
}

fn harness_versions(harness: &Path) -> Option<BTreeMap<String, String>> {
    let out = Command::new(harness).arg("versions").output().ok()?;
    serde_json::from_slice(&out.stdout).ok()
}

fn matrix_info(m: &Matrix) -> Result<MatrixInfo> {
    use sha2::Digest;
    let bytes = std::fs::read(&m.file)?;
    let rel = m.file.strip_prefix(paths::repo_root()).unwrap_or(&m.file);
    Ok(MatrixInfo {
        name: m.name.clone(),
        file: rel.display().to_string(),
        sha256: hex::encode(sha2::Sha256::digest(&bytes)),
        title: m.title.clone(),
        question: m.question.clone(),
        seed: m.seed.clone(),
        default_arm: m.default_arm.clone(),
        arms: m
            .arms
            .iter()
            .map(|a| provenance::ArmInfo {
                name: a.name.clone(),
                title: a.title.clone(),
                description: a.description.clone(),
            })
            .collect(),
        sweeps: m
            .sweeps
            .iter()
            .map(|s| provenance::SweepInfo {
                name: s.name.clone(),
                title: s.title.clone(),
                caption: s.caption.clone(),
                arms: s.arms.clone(),
                knob: s.knob.clone(),
                fixed: s.set.iter().map(|(k, v)| format!("{k} = {v}")).collect(),
                labels: match (&s.knob, &s.labels) {
                    (Some(_), Some(l)) => l.clone(),
                    (Some(_), None) => s.values.iter().map(|v| v.to_string()).collect(),
                    (None, _) => s
                        .arms
                        .iter()
                        .filter_map(|a| m.arms.iter().find(|x| &x.name == a).map(|x| x.title.clone()))
                        .collect(),
                },
            })
            .collect(),
        does_not_say: m.does_not_say.clone(),
    })
}

fn write_provenance(run_dir: &RunDir, prov: &Provenance) -> Result<()> {
    let path = run_dir.path.join(PROVENANCE_FILE);
    streamlab_record::jsonl::write_atomic(&path, &serde_json::to_vec_pretty(prov)?)?;
    Ok(())
}

fn progress_bar(len: usize) -> ProgressBar {
    let bar = ProgressBar::new(len as u64);
    bar.set_style(
        ProgressStyle::with_template("[{elapsed_precise}] {bar:30} {pos}/{len} tasks, ~{eta} left  {msg}")
            .expect("a valid template"),
    );
    bar.enable_steady_tick(Duration::from_millis(500));
    bar
}

fn summary_line(r: &Record) -> String {
    let what = format!("{} {} [{} {}] rep {}", r.bench, r.arm, r.variant.sweeps.join(","), r.variant.label, r.rep);
    match (r.status, r.metrics.get("records_per_s")) {
        (Status::Ok, _) if !r.is_publishable() => {
            format!("  WITHDRAWN {what}: {}", r.reason.clone().unwrap_or_default())
        }
        (Status::Ok, Some(m)) => format!("  ok {what}: {:.0} {} (integrity {:?})", m.value, m.unit, r.integrity.status),
        (Status::Ok, None) => format!("  ok {what}"),
        (Status::Failed, _) => format!("  FAILED {what}: {}", r.reason.clone().unwrap_or_default()),
        (Status::NotRun, _) => format!("  not run {what}: {}", r.reason.clone().unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::process::Command;
    use std::time::{Duration, Instant};

    use super::*;

    /// The xtask binary next to this test binary (built by `cargo xtask test`).
    fn xtask_binary() -> PathBuf {
        let exe = std::env::current_exe().unwrap();
        let bin = exe.parent().and_then(|deps| deps.parent()).unwrap().join("xtask");
        assert!(bin.exists(), "{} is missing: cargo build --release -p xtask", bin.display());
        bin
    }

    fn lines(path: &Path) -> Vec<String> {
        std::fs::read_to_string(path).map(|t| t.lines().map(str::to_owned).collect()).unwrap_or_default()
    }

    fn task() -> Task {
        Task {
            bench: "kafka_sink".into(),
            arm: "raw".into(),
            sweep: "mode".into(),
            label: "raw rdkafka".into(),
            default: false,
            rep: 1,
            knobs: BTreeMap::new(),
            not_run: None,
        }
    }

    fn run_info() -> RunInfo {
        serde_json::from_value(serde_json::json!({"id": "r", "ts_ms": 0, "commit": "c", "dirty": false, "host": "h",
            "cpu": "cpu", "cores": 2, "os": "os", "profile": "quick", "env": "native"}))
        .unwrap()
    }

    #[test]
    fn a_claim_the_watermarks_do_not_back_is_withdrawn_with_its_reason() {
        let measured = Measurement {
            kind: "produce".into(),
            metrics: BTreeMap::from([("records_per_s".into(), Metric::new(1e6, "records/s", true))]),
            integrity: Integrity::compare(1000, 990, "sum of partition high watermarks"),
            verdict: BTreeMap::new(),
            note: None,
            versions: BTreeMap::new(),
        };
        let r = to_record(&task(), &run_info(), "cargo xtask lab run", Outcome::Measured(measured));
        assert_eq!(r.status, Status::Ok);
        assert_eq!(r.integrity.status, streamlab_record::IntegrityStatus::Failed);
        assert!(!r.is_publishable());
        assert_eq!(
            r.reason.as_deref(),
            Some("integrity failed: expected 1000 but observed 990 (sum of partition high watermarks)")
        );
        assert!(summary_line(&r).starts_with("  WITHDRAWN"));
    }

    #[test]
    fn a_crashed_arm_is_a_failed_record_with_its_log_tail() {
        let outcome =
            Outcome::Failed { reason: "the arm exited with exit status: 1: boom".into(), log_tail: "boom".into() };
        let r = to_record(&task(), &run_info(), "cargo xtask lab run", outcome);
        assert_eq!((r.status, r.log_tail.as_deref()), (Status::Failed, Some("boom")));
        assert_eq!(r.integrity.status, streamlab_record::IntegrityStatus::NotChecked);
        assert!(r.metrics.is_empty());
    }

    #[test]
    fn a_docker_or_unknown_backend_is_refused_before_anything_starts() {
        let args = |env: &str| RunArgs {
            matrices: vec![],
            profile: "quick".into(),
            env: env.into(),
            bootstrap: None,
            mysql_dsn: None,
            reps: None,
            sets: vec![],
            out: None,
            resume: None,
        };
        assert!(choose_backend(&args("docker")).unwrap_err().to_string().contains("--env docker"));
        assert!(choose_backend(&args("kubernetes")).unwrap_err().to_string().contains("allowed auto, native"));
        assert_eq!(choose_backend(&args("auto")).unwrap(), Backend::Native);
        let dsn_only = RunArgs { mysql_dsn: Some("mysql://u:p@127.0.0.1:3306".into()), ..args("auto") };
        assert!(choose_backend(&dsn_only).unwrap_err().to_string().contains("--mysql-dsn needs --bootstrap"));
        let ext = RunArgs { bootstrap: Some("127.0.0.1:9092".into()), ..args("auto") };
        assert!(matches!(choose_backend(&ext).unwrap(), Backend::External { .. }));
        let redacted = reproduce_command(&RunArgs { mysql_dsn: Some("mysql://u:secret@127.0.0.1:3306".into()), ..ext });
        assert!(!redacted.contains("secret") && redacted.contains("--bootstrap 127.0.0.1:9092"), "{redacted}");
        assert_eq!(redact_dsn("mysql://u:secret@127.0.0.1:3306"), "mysql://u:PASSWORD@127.0.0.1:3306");
        assert!(
            resume_dsn(Some("mysql://u:PASSWORD@h:1"), None)
                .unwrap_err()
                .to_string()
                .contains("pass --mysql-dsn again")
        );
    }

    #[test]
    fn caps_the_machine_cannot_apply_become_not_run_points() {
        let with_cores =
            |cores: u64| Task { knobs: BTreeMap::from([(BROKER_CORES_KNOB.to_owned(), cores.into())]), ..task() };
        let mut tasks = vec![with_cores(0), with_cores(1), with_cores(4096)];
        mark_uncappable(&mut tasks, &Backend::Native);
        assert_eq!(tasks[0].not_run, None);
        assert_eq!(tasks[1].not_run, None);
        assert!(tasks[2].not_run.as_deref().unwrap().contains("4096 cannot be applied"));
        let mut external = vec![with_cores(1)];
        mark_uncappable(&mut external, &Backend::External { bootstrap: "127.0.0.1:9092".into(), dsn: None });
        assert!(external[0].not_run.as_deref().unwrap().contains("cannot cap"));
    }

    #[test]
    #[ignore = "starts Kafka and runs arms: cargo xtask test"]
    fn sigint_leaves_nothing_running_and_resume_finishes_only_what_is_missing() {
        let out = tempfile::tempdir().unwrap();
        let mut child = Command::new(xtask_binary())
            .args(["lab", "run", "--profile", "quick", "--matrix", "kafka_sink", "--out"])
            .arg(out.path())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(240);
        let jsonl = loop {
            let found = std::fs::read_dir(out.path())
                .into_iter()
                .flatten()
                .filter_map(|e| e.ok())
                .map(|e| e.path().join("kafka_sink.jsonl"))
                .find(|p| lines(p).len() >= 2);
            if let Some(p) = found {
                break p;
            }
            assert!(child.try_wait().unwrap().is_none(), "the run ended before it was interrupted");
            assert!(Instant::now() < deadline, "no records after 240 s");
            std::thread::sleep(Duration::from_millis(200));
        };
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let status = child.wait().unwrap();
        assert!(!status.success(), "an interrupted run must not exit 0");

        let run_dir = jsonl.parent().unwrap();
        let run_id = run_dir.file_name().unwrap().to_string_lossy().into_owned();
        let env_prefix = paths::envs_dir().join(format!("lab-{run_id}"));
        let leftovers: Vec<_> = std::fs::read_dir(paths::envs_dir())
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.to_string_lossy().starts_with(&*env_prefix.to_string_lossy()))
            .collect();
        assert!(leftovers.is_empty(), "environment directories left behind: {leftovers:?}");
        assert!(native::processes_mentioning(&env_prefix).is_empty(), "a broker or server was left running");
        let before = lines(&jsonl);
        assert!(before.len() >= 2 && before.len() < 31, "{} records before resume", before.len());
        streamlab_record::jsonl::read_records(&jsonl).expect("records written before Ctrl-C stay valid");

        let status = Command::new(xtask_binary())
            .args(["lab", "run", "--resume", &run_id, "--out"])
            .arg(out.path())
            .status()
            .unwrap();
        assert!(status.success());
        let after = lines(&jsonl);
        assert_eq!(&after[..before.len()], &before[..], "resume rewrote finished records");
        let records = streamlab_record::jsonl::read_records(&jsonl).unwrap();
        let mut keys: Vec<_> =
            records.iter().map(|r| (r.arm.clone(), r.variant.sweeps.clone(), r.variant.label.clone())).collect();
        keys.sort();
        keys.dedup();
        assert_eq!((records.len(), keys.len()), (31, 31), "every task exactly once");
        for r in records.iter().filter(|r| r.arm == "raw") {
            assert_eq!(r.integrity.status, streamlab_record::IntegrityStatus::Verified, "{r:?}");
            assert!(r.metrics["records_per_s"].value > 0.0);
        }
        let prov = Provenance::load(&run_dir.join(PROVENANCE_FILE)).unwrap();
        assert!(prov.finished_ts_ms.is_some());
        assert_eq!(prov.versions.get("kafka").map(String::as_str), Some("4.1.0"));
        assert!(prov.versions.contains_key("librdkafka") && prov.versions.contains_key("java"));
        assert!(!prov.host.cpu_brand.is_empty() && prov.pins.artifacts.len() > 40);
        assert!(native::processes_mentioning(&env_prefix).is_empty());
    }
}
