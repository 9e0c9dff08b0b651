//! `lab run`: validate everything, bring the environment up, run every task as its own harness
//! process, write each record as its task ends, and always bring the environment down.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use streamlab_record::run_spec::Need;
use streamlab_record::tools::RedpandaConnect;

use super::RunArgs;
use super::conditions::{Placement, Probe, plan_placement};
use super::harness;
use super::matrix::{self, BROKER_CORES_AT_MOST_KNOB, BROKER_CORES_KNOB, KAFKA_VERSION_KNOB, Matrix};
use super::plan::{self, PlanOptions, Task};
use super::registry::{self, Registry};
use super::reproduce::reproduce_command;
use super::results::{self, RunDir};
use super::run_provenance::{collect_provenance, run_info, write_provenance};
use super::summary;
use super::task::{Outcome, add_ratios, not_run_record, run_task, to_record};
use crate::env::backend::{Backend, EnvSpec, Environment};
use crate::env::health::ServiceDown;
use crate::env::pins::{self, KafkaPin};
use crate::env::process;
use crate::provenance::{EnvRestart, PROVENANCE_FILE, Provenance};
use crate::{clock, interrupt, paths};

pub fn run(args: RunArgs) -> Result<()> {
    interrupt::install();
    let out_root = args.out.clone().unwrap_or_else(paths::results_dir);
    // The spec is what run.json keeps; the DSN with its password is only ever in memory.
    let (run_id, spec, dsn) = match &args.resume {
        Some(id) => {
            let spec = RunDir::new(out_root.join(id)).load_spec()?;
            let dsn = resume_dsn(spec.mysql_dsn.as_deref(), args.mysql_dsn.clone())?;
            (id.clone(), spec, dsn)
        }
        None => (results::new_run_id(args.profile), args.spec(), args.mysql_dsn.clone()),
    };

    // Everything that can be wrong with the input is refused here, before anything is provisioned.
    let matrices = select_matrices(&spec.matrices)?;
    plan::resolve_sets(&matrices, &spec.sets)?;
    let opts = PlanOptions { profile: spec.profile, reps: spec.reps, sets: spec.sets.clone() };
    let backend = crate::env::choose(spec.env, spec.bootstrap.as_deref(), dsn.as_deref())?;
    let filter = plan::Filter::resolve(&matrices, &spec.arms, &spec.points)?;
    let mut tasks = Vec::new();
    for m in &matrices {
        tasks.extend(plan::expand(m, &opts)?);
    }
    let mut tasks = plan::filter(tasks, &filter)?;
    mark_uncappable(&mut tasks, backend.as_ref());
    check_kafka_versions(&tasks)?;
    mark_unswitchable(&mut tasks, backend.as_ref());
    group_by_kafka_version(&mut tasks);

    let run_dir = RunDir::new(out_root.join(&run_id));
    let benches: Vec<String> = matrices.iter().map(|m| m.name.clone()).collect();
    // Read once: resume skips these, and ratios find their same-rep baseline among them.
    let mut written = run_dir.records(&benches)?;
    let done = results::finished(&written);
    let todo: Vec<Task> = tasks.into_iter().filter(|t| !done.contains(&t.key())).collect();
    if args.resume.is_some() {
        println!("resuming {run_id}: {} tasks finished, {} to run", done.len(), todo.len());
        if todo.is_empty() {
            // Nothing to measure: no build, no environment.
            return Ok(());
        }
    }

    let mut needs: Vec<Need> = matrices.iter().flat_map(|m| m.needs.iter().copied()).collect();
    needs.sort();
    needs.dedup();
    // The user's Redpanda Connect binary, if named, is checked before anything is built or provisioned.
    let redpanda_connect = match needs.contains(&Need::Connect) {
        true => crate::clients::redpanda_connect::from_env()?,
        false => None,
    };

    let started = Instant::now();
    println!("run {run_id}: {} tasks, profile {}, {} environment", todo.len(), spec.profile, backend.name());
    let harness = harness::build()?;
    registry::check_all(&matrices, &Registry::from_harness(&harness)?)?;
    phase("fetch", &backend.prepare_what());
    backend.prepare()?;
    let logs = paths::repo_root().join("target/streamlab/runs").join(&run_id);
    std::fs::create_dir_all(&logs)?;
    // One tools file for every tool the matrices need; its path reaches each harness process as STREAMLAB_TOOLS.
    let tools = match tools_phase(&needs, redpanda_connect.as_ref()) {
        Some(what) => {
            phase("tools", &what);
            let path = logs.join("tools.json");
            Some((crate::clients::prepare(&path, &needs, redpanda_connect)?, path))
        }
        None => None,
    };
    let mut kafka = todo.iter().find(|t| t.not_run.is_none()).map_or(Ok(pins::default_pin()), task_kafka)?;
    phase("environment", &format!("bringing the {} environment up (Kafka {})", backend.name(), kafka.version));
    let mut env = backend.up(&EnvSpec::for_run(&run_id, &needs, kafka))?;

    // The run directory appears only once there is provenance to put in it.
    let mut prov = collect_provenance(&run_id, &spec, &matrices, env.as_ref(), &harness)?;
    if let Ok(earlier) = Provenance::load(&run_dir.path.join(PROVENANCE_FILE)) {
        prov.merge_earlier(earlier);
    }
    std::fs::create_dir_all(&run_dir.path).with_context(|| format!("cannot create {}", run_dir.path.display()))?;
    run_dir.save_spec(&spec)?;
    write_provenance(&run_dir, &prov)?;
    if let Some((tools, _)) = &tools {
        prov.versions.extend(crate::clients::versions(tools));
    }
    prov.note_kafka_broker(kafka.version, kafka.provenance()?);
    prov.note_environment(env.descriptor(), "the run's first environment");
    let run_info = run_info(&run_id, &prov);

    phase(
        "tasks",
        &format!("{} tasks, one harness process each; records go to {}", todo.len(), run_dir.path.display()),
    );
    let bar = progress_bar(todo.len());
    // Set once the environment has died more often than MAX_ENV_RESTARTS: every task left is not run.
    let mut stopped: Option<String> = None;
    for task in &todo {
        interrupt::check()?;
        bar.set_message(task.describe());
        let m = matrices.iter().find(|m| m.name == task.bench).expect("planned from these");
        let reproduce = reproduce_command(&spec, m, task);
        // A service that died between tasks: a fresh environment before this one runs.
        if stopped.is_none()
            && task.not_run.is_none()
            && let Err(down) = env.health()
        {
            let fresh = EnvRecipe { backend: backend.as_ref(), run_id: &run_id, needs: &needs, kafka };
            stopped = replace_env(&mut env, &fresh, &down, &mut prov, &bar)?;
            write_provenance(&run_dir, &prov)?;
        }
        // A point on another Kafka version: the environment is brought up again at that version.
        if stopped.is_none() && task.not_run.is_none() && task_kafka(task)?.version != kafka.version {
            kafka = task_kafka(task)?;
            say(&bar, format!("  switching the broker to Kafka {}: bringing up a fresh environment", kafka.version));
            env = backend.up(&EnvSpec::for_run(&run_id, &needs, kafka))?;
            prov.note_kafka_broker(kafka.version, kafka.provenance()?);
            prov.note_environment(env.descriptor(), &format!("switched to Kafka {}", kafka.version));
            write_provenance(&run_dir, &prov)?;
        }
        let record = match (&task.not_run, &stopped) {
            (Some(reason), _) | (None, Some(reason)) => not_run_record(task, &run_info, &reproduce, reason),
            (None, None) => {
                if let Some(cores) = broker_cores(task)
                    && let Some(cap) = env.cap_broker(cores)?
                    && prov.note_broker_cap(&cap)
                {
                    write_provenance(&run_dir, &prov)?;
                }
                if let Some(why) = uncapped_broker(task)
                    && prov.note_broker_cap(&why)
                {
                    write_provenance(&run_dir, &prov)?;
                }
                let (client_cpus, placement) = place(task, env.as_ref())?;
                let probe = Probe::start(env.service_pids());
                let watch = || env.dead_service();
                let tools_file = tools.as_ref().map(|(_, path)| path.as_path());
                let mut measured =
                    run_task(&harness, task, env.descriptor(), &logs, client_cpus.as_deref(), tools_file, &watch)?;
                let conditions = probe.finish(Some(placement));
                // The record names the versions of the environment it ran in (a run may switch brokers), and
                // provenance lists the task under that environment, before any replacement below.
                let mut ran_in = run_info.in_env(env.descriptor());
                if !m.needs.contains(&Need::Mysql) {
                    // The environment has a server for another matrix; this task did not use it.
                    (ran_in.mysql_flavour, ran_in.mysql_version) = (None, None);
                }
                prov.note_task(&task.describe());
                if let Outcome::Measured(m) = &measured {
                    prov.versions.extend(m.versions.clone());
                }
                // A failed task whose environment is down failed because of it: say so, then start afresh.
                if let Outcome::Failed { reason, log_tail } = &mut measured
                    && let Err(down) = env.health()
                {
                    blame_service(reason, log_tail, &down);
                    let fresh = EnvRecipe { backend: backend.as_ref(), run_id: &run_id, needs: &needs, kafka };
                    stopped = replace_env(&mut env, &fresh, &down, &mut prov, &bar)?;
                    write_provenance(&run_dir, &prov)?;
                }
                let mut record = to_record(task, &ran_in, &reproduce, measured);
                record.conditions = Some(conditions);
                add_ratios(m, &mut record, &written);
                record
            }
        };
        run_dir.append(&record)?;
        if record.status != streamlab_record::Status::NotRun {
            write_provenance(&run_dir, &prov)?;
        }
        say(&bar, summary::record_line(&record));
        written.push(record);
        bar.inc(1);
    }
    bar.finish_and_clear();
    prov.finished_ts_ms = Some(clock::now_ms());
    write_provenance(&run_dir, &prov)?;
    drop(env);
    for m in &matrices {
        summary::lines(&m.name, &written).iter().for_each(|l| println!("{l}"));
    }
    println!("run {run_id} finished in {:.1} min: {}", started.elapsed().as_secs_f64() / 60.0, run_dir.path.display());
    // CI reads the exit status: a failed or withdrawn record fails the run (a legitimate not-run does not).
    let failed = summary::failures(&written);
    if failed > 0 {
        bail!(
            "{failed} of {} records failed or failed their integrity check (their reasons are above and in {})",
            written.len(),
            run_dir.path.display()
        );
    }
    if let Some(reason) = stopped {
        bail!("the run stopped early: {reason}");
    }
    Ok(())
}

/// What the tools phase prepares for these needs, or `None` when they need no tools file.
fn tools_phase(needs: &[Need], redpanda_connect: Option<&RedpandaConnect>) -> Option<String> {
    let mut what = Vec::new();
    if needs.contains(&Need::ClientTools) {
        what.push(
            "rdkafka_performance against librdkafka 2.12.1 and 2.15.0 (built once into the cache), Kafka's Java perf tools"
                .to_owned(),
        );
    }
    if needs.contains(&Need::Connect) {
        what.push(format!(
            "Kafka Connect {} with the Debezium MariaDB source and JDBC sink (pinned jars); Redpanda Connect {}",
            pins::kafka_version(),
            redpanda_connect.map_or_else(
                || format!(
                    "not provided ({} unset: its arms are not run)",
                    crate::clients::redpanda_connect::REDPANDA_CONNECT_ENV
                ),
                |r| format!("{} from {}", r.version, r.path.display()),
            )
        ));
    }
    (!what.is_empty()).then(|| what.join("; "))
}

/// Environments a run may bring up again after a service died; past that the run stops.
const MAX_ENV_RESTARTS: usize = 2;

/// Replace a failed environment with a fresh one (new id, same backend; caps are applied per task) and
/// note it in provenance. Returns the reason every remaining task is not run once the restarts are spent.
fn replace_env(
    env: &mut Box<dyn Environment>,
    fresh: &EnvRecipe,
    down: &ServiceDown,
    prov: &mut Provenance,
    bar: &ProgressBar,
) -> Result<Option<String>> {
    let failed_env = env.descriptor().id.clone();
    let mut restart = EnvRestart {
        ts_ms: clock::now_ms(),
        failed_env: failed_env.clone(),
        reason: down.to_string(),
        new_env: None,
        ready_after_ms: None,
    };
    if prov.restarts.len() >= MAX_ENV_RESTARTS {
        prov.restarts.push(restart);
        let reason =
            format!("not run: the environment failed {} times (last: {down}); the run stopped", MAX_ENV_RESTARTS + 1);
        say(bar, format!("  {down}; {MAX_ENV_RESTARTS} restarts spent, the remaining tasks are not run"));
        return Ok(Some(reason));
    }
    say(bar, format!("  {down}; bringing up a fresh {} environment", fresh.backend.name()));
    let started = Instant::now();
    // The fresh environment takes new ports and a new directory; the failed one is torn down (its survivors
    // stopped, its directory removed) when the assignment drops it.
    *env = fresh.up().map_err(|e| e.context(format!("replacing environment {failed_env}")))?;
    restart.new_env = Some(env.descriptor().id.clone());
    restart.ready_after_ms = Some(started.elapsed().as_millis() as u64);
    prov.note_environment(env.descriptor(), &format!("replaced environment {failed_env}: {down}"));
    say(
        bar,
        format!(
            "  environment {} is up after {:.1} s; the run goes on",
            env.descriptor().id,
            started.elapsed().as_secs_f64()
        ),
    );
    prov.restarts.push(restart);
    Ok(None)
}

/// How to bring up an environment like the current one.
struct EnvRecipe<'a> {
    backend: &'a dyn Backend,
    run_id: &'a str,
    needs: &'a [Need],
    kafka: &'static KafkaPin,
}

impl EnvRecipe<'_> {
    fn up(&self) -> Result<Box<dyn Environment>> {
        self.backend.up(&EnvSpec::for_run(self.run_id, self.needs, self.kafka))
    }
}

/// A line above the progress bar, or on stdout when there is no terminal to draw one.
fn say(bar: &ProgressBar, line: String) {
    if bar.is_hidden() { println!("{line}") } else { bar.println(line) }
}

/// The reason of a task failed by a dead service names the service first; the service's log joins the tail.
fn blame_service(reason: &mut String, log_tail: &mut String, down: &ServiceDown) {
    if !reason.starts_with(&down.to_string()) {
        *reason = format!("{down} during the task; the arm then failed: {reason}");
        *log_tail = super::task::service_and_arm_tail(down, log_tail);
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

/// The task's broker_cores knob, if it has one (0 = uncapped).
fn broker_cores(task: &Task) -> Option<usize> {
    let knob = |name: &str| task.knobs.get(name).and_then(|v| v.as_u64()).map(|c| c as usize);
    knob(BROKER_CORES_KNOB).or_else(|| knob(BROKER_CORES_AT_MOST_KNOB).filter(|&n| process::allowed_cpus().len() > n))
}

/// Why a point that asks for `broker_cores_at_most` runs with the broker uncapped (a machine without more CPUs).
fn uncapped_broker(task: &Task) -> Option<String> {
    let at_most = task.knobs.get(BROKER_CORES_AT_MOST_KNOB).and_then(|v| v.as_u64())? as usize;
    let allowed = process::allowed_cpus().len();
    (allowed <= at_most).then(|| {
        format!("not capped: {BROKER_CORES_AT_MOST_KNOB} = {at_most}, and this machine lets us use only {allowed} CPUs")
    })
}

/// The Kafka version a task's broker runs: its kafka_version knob, else the lab's default.
fn task_kafka(task: &Task) -> Result<&'static KafkaPin> {
    match task.knobs.get(KAFKA_VERSION_KNOB).and_then(|v| v.as_str()) {
        Some(version) => pins::pin(version).with_context(|| format!("{}: knob {KAFKA_VERSION_KNOB}", task.bench)),
        None => Ok(pins::default_pin()),
    }
}

/// Every Kafka version the plan asks for is pinned (checked before anything is provisioned).
fn check_kafka_versions(tasks: &[Task]) -> Result<()> {
    tasks.iter().try_for_each(|t| task_kafka(t).map(drop))
}

/// Points that choose a Kafka version on a backend that cannot start one are recorded as not run.
fn mark_unswitchable(tasks: &mut [Task], backend: &dyn Backend) {
    for t in tasks.iter_mut().filter(|t| t.not_run.is_none() && t.knobs.contains_key(KAFKA_VERSION_KNOB)) {
        t.not_run = backend.can_choose_kafka().err().map(|e| format!("{KAFKA_VERSION_KNOB}: {e}"));
    }
}

/// Tasks on one Kafka version run together (in their planned order), versions in order of first appearance,
/// so the run brings an environment up once per version rather than once per switch.
fn group_by_kafka_version(tasks: &mut [Task]) {
    let mut order: Vec<String> = Vec::new();
    let version = |t: &Task| t.knobs.get(KAFKA_VERSION_KNOB).and_then(|v| v.as_str()).unwrap_or("").to_owned();
    for t in tasks.iter() {
        if !order.contains(&version(t)) {
            order.push(version(t));
        }
    }
    tasks.sort_by_key(|t| order.iter().position(|v| *v == version(t)));
}

/// Points that ask for a broker CPU cap this run cannot apply are recorded as not run, with the reason.
fn mark_uncappable(tasks: &mut [Task], backend: &dyn Backend) {
    for t in tasks.iter_mut().filter(|t| t.not_run.is_none()) {
        let Some(cores) = broker_cores(t).filter(|&c| c > 0) else { continue };
        t.not_run = backend.can_cap_broker(cores).err().map(|e| format!("{BROKER_CORES_KNOB} = {cores}: {e}"));
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

/// Keep client and broker on disjoint CPUs when the machine allows it; returns the client's CPUs (if
/// pinned) and the placement as the record states it.
fn place(task: &Task, env: &dyn Environment) -> Result<(Option<Vec<usize>>, String)> {
    let placement = plan_placement(&process::allowed_cpus(), broker_cores(task));
    Ok(match &placement {
        Placement::Separate { client, broker } if env.place_broker(broker)? => {
            (Some(client.clone()), placement.describe())
        }
        Placement::Separate { .. } => {
            (None, "client on any CPU; this environment's broker is not ours to place".into())
        }
        Placement::Shared(_) => (None, placement.describe()),
    })
}

/// One line as each phase of a run starts, so a long first build or download never looks like a hang
/// (on stderr, with cargo's progress: stdout stays data for `lab list --json`).
pub fn phase(name: &str, what: &str) {
    eprintln!("==> {name}: {what}");
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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::process::Command;
    use std::time::{Duration, Instant};

    use streamlab_record::run_spec::BackendChoice;

    use std::collections::BTreeMap;
    use std::path::Path;

    use streamlab_record::Record;

    use super::*;

    #[test]
    fn the_tools_phase_covers_client_tools_and_connect_and_nothing_else() {
        assert_eq!(tools_phase(&[Need::Kafka, Need::Mysql], None), None);
        let clients = tools_phase(&[Need::Kafka, Need::ClientTools], None).unwrap();
        assert!(clients.contains("rdkafka_performance") && !clients.contains("Connect"), "{clients}");
        let cdc = tools_phase(&[Need::Kafka, Need::Mysql, Need::Connect], None).unwrap();
        assert!(cdc.contains("Kafka Connect 4.1.0") && cdc.contains("STREAMLAB_REDPANDA_CONNECT unset"), "{cdc}");
        let named = RedpandaConnect { path: "/opt/rpc".into(), version: "4.99.0".into() };
        let both = tools_phase(&[Need::ClientTools, Need::Connect], Some(&named)).unwrap();
        assert!(both.contains("rdkafka_performance") && both.contains("4.99.0 from /opt/rpc"), "{both}");
    }
    use crate::lab::task::tests::task;

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

    #[test]
    fn an_unknown_backend_names_the_flag_and_a_resume_asks_for_the_dsn_again() {
        let err = crate::lab::reproduce::tests::try_parse_run_args(&["run", "--env", "kubernetes"]).unwrap_err();
        assert!(err.contains("--env") && err.contains("[possible values: auto, native, docker, external]"), "{err}");
        let err = resume_dsn(Some("mysql://u:PASSWORD@h:1"), None).unwrap_err().to_string();
        assert!(err.contains("pass --mysql-dsn again"), "{err}");
    }

    #[test]
    fn points_run_grouped_by_kafka_version_and_an_unpinned_or_unswitchable_version_is_refused() {
        let with_version = |v: Option<&str>, rep| Task {
            knobs: v.map(|v| BTreeMap::from([(KAFKA_VERSION_KNOB.to_owned(), v.into())])).unwrap_or_default(),
            rep,
            ..task()
        };
        let mut tasks = vec![
            with_version(Some("3.9.1"), 1),
            with_version(Some("4.1.0"), 1),
            with_version(Some("3.9.1"), 2),
            with_version(Some("4.1.0"), 2),
        ];
        check_kafka_versions(&tasks).unwrap();
        group_by_kafka_version(&mut tasks);
        let order: Vec<(&str, u32)> =
            tasks.iter().map(|t| (t.knobs[KAFKA_VERSION_KNOB].as_str().unwrap(), t.rep)).collect();
        assert_eq!(order, [("3.9.1", 1), ("3.9.1", 2), ("4.1.0", 1), ("4.1.0", 2)]);
        assert_eq!(task_kafka(&with_version(None, 1)).unwrap().version, pins::kafka_version());

        let err = check_kafka_versions(&[with_version(Some("2.8.0"), 1)]).unwrap_err();
        assert!(format!("{err:#}").contains("Kafka 2.8.0 is not pinned"), "{err:#}");
        let external = crate::env::choose(BackendChoice::External, Some("127.0.0.1:9092"), None).unwrap();
        let mut on_external = vec![with_version(Some("3.9.1"), 1), with_version(None, 1)];
        mark_unswitchable(&mut on_external, external.as_ref());
        assert!(on_external[0].not_run.as_deref().unwrap().contains("kafka_version"));
        assert_eq!(on_external[1].not_run, None);
    }

    #[test]
    fn caps_the_machine_cannot_apply_become_not_run_points() {
        let with_cores =
            |cores: u64| Task { knobs: BTreeMap::from([(BROKER_CORES_KNOB.to_owned(), cores.into())]), ..task() };
        let mut tasks = vec![with_cores(0), with_cores(1), with_cores(4096)];
        let native = crate::env::choose(BackendChoice::Native, None, None).unwrap();
        mark_uncappable(&mut tasks, native.as_ref());
        assert_eq!(tasks[0].not_run, None);
        assert_eq!(tasks[1].not_run, None);
        assert!(tasks[2].not_run.as_deref().unwrap().contains("4096 cannot be applied"));
        let mut external = vec![with_cores(1)];
        let backend = crate::env::choose(BackendChoice::External, Some("127.0.0.1:9092"), None).unwrap();
        mark_uncappable(&mut external, backend.as_ref());
        assert!(external[0].not_run.as_deref().unwrap().contains("cannot cap"));
    }

    #[test]
    #[ignore = "starts Kafka and runs arms: cargo xtask test"]
    fn sigint_leaves_nothing_running_and_resume_finishes_only_what_is_missing() {
        let out = tempfile::tempdir().unwrap();
        // The raw arm's points only: enough tasks to interrupt between, without the framework's twenty-odd.
        let mut child = Command::new(xtask_binary())
            .args(["lab", "run", "--env", "native", "--profile", "quick", "--matrix", "kafka_sink", "--arm", "raw"])
            .arg("--out")
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
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT)
            .unwrap();
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
        assert!(
            crate::env::native::processes_mentioning(&env_prefix).is_empty(),
            "a broker or server was left running"
        );
        let before = lines(&jsonl);
        // As many tasks as the shipped matrix plans at the quick profile, however many sweeps it has.
        let shipped = matrix::load(&paths::matrices_dir().join("kafka_sink.toml")).unwrap();
        let quick = PlanOptions { profile: streamlab_record::run_spec::Profile::Quick, reps: None, sets: vec![] };
        let raw = plan::Filter::resolve(std::slice::from_ref(&shipped), &["raw".into()], &[]).unwrap();
        let planned = plan::filter(plan::expand(&shipped, &quick).unwrap(), &raw).unwrap().len();
        assert!(before.len() >= 2 && before.len() < planned, "{} records before resume", before.len());
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
        assert_eq!((records.len(), keys.len()), (planned, planned), "every task exactly once");
        for r in records.iter().filter(|r| r.arm == "raw") {
            assert_eq!(r.integrity.status, streamlab_record::IntegrityStatus::Verified, "{r:?}");
            assert!(r.metrics["records_per_s"].value > 0.0);
        }
        let prov = Provenance::load(&run_dir.join(PROVENANCE_FILE)).unwrap();
        assert!(prov.finished_ts_ms.is_some());
        assert_eq!(prov.versions.get("kafka").map(String::as_str), Some("4.1.0"));
        assert!(prov.versions.contains_key("librdkafka") && prov.versions.contains_key("java"));
        assert!(!prov.host.cpu_brand.is_empty() && prov.pins.artifacts.len() > 40);
        assert!(crate::env::native::processes_mentioning(&env_prefix).is_empty());
    }

    /// Run the xtask binary with `args` and `--out out`; returns the records it wrote.
    fn run_lab(args: &[String], out: &Path) -> Vec<Record> {
        let status = Command::new(xtask_binary()).args(args).arg("--out").arg(out).status().unwrap();
        assert!(status.success(), "{args:?} failed");
        let runs: Vec<PathBuf> = std::fs::read_dir(out).unwrap().map(|e| e.unwrap().path()).collect();
        assert_eq!(runs.len(), 1, "one run directory in {}", out.display());
        streamlab_record::jsonl::read_records(&runs[0].join("kafka_sink.jsonl")).unwrap()
    }

    #[test]
    #[ignore = "starts Kafka and runs arms: cargo xtask test"]
    fn a_records_reproduce_command_reruns_exactly_its_point() {
        let (first_out, second_out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let load = std::fs::read_to_string("/proc/loadavg").unwrap();
        let quiet_before = load.split_whitespace().next().unwrap().parse::<f64>().unwrap() < 0.3;
        let args = ["lab", "run", "--env", "native", "--profile", "quick", "--matrix", "kafka_sink", "--arm", "raw"]
            .into_iter()
            .chain(["--point", "broker_cores=1 core", "--set", "warmup_s=0.5", "--set", "window_s=1.0"])
            .map(str::to_owned)
            .collect::<Vec<_>>();
        let first = run_lab(&args, first_out.path());
        assert_eq!(first.len(), 1, "the filters select one task");
        let reproduce = &first[0].reproduce;
        let words = shlex::split(reproduce).unwrap();
        assert_eq!(&words[..2], ["cargo", "xtask"], "{reproduce}");
        eprintln!("rerunning: {reproduce}");
        let second = run_lab(&words[2..], second_out.path());
        assert_eq!(second.len(), 1);
        let (a, b) = (&first[0], &second[0]);
        assert_eq!((&a.bench, &a.arm, &a.variant), (&b.bench, &b.arm, &b.variant));
        assert_eq!(&b.reproduce, reproduce, "the rerun reproduces itself the same way");
        // Every task it ran states its conditions; the lab's own CPU (arm, broker, runner) is not foreign.
        let cpus = process::allowed_cpus().len() as f64;
        for r in [a, b] {
            let c = r.conditions.as_ref().expect("a task that ran has conditions");
            assert!(c.wall_s > 0.0 && c.placement.is_some(), "{c:?}");
            assert!(c.foreign_cpu_s >= 0.0 && c.foreign_cpu_s <= c.wall_s * cpus, "{c:?}");
            assert_eq!(c.foreign_load, c.foreign_cpu_s / c.wall_s > crate::lab::conditions::FOREIGN_LOAD_THRESHOLD);
        }
        // On a machine nothing else is using, a quick task sees little foreign CPU.
        if quiet_before {
            let c = b.conditions.as_ref().unwrap();
            assert!(c.foreign_cpu_s < 0.25 * c.wall_s, "foreign CPU on a quiet machine: {c:?}");
        }
    }

    #[test]
    #[ignore = "starts Kafka and runs arms: cargo xtask test"]
    fn a_broker_killed_mid_run_fails_the_task_in_flight_and_the_run_goes_on_in_a_fresh_environment() {
        let out = tempfile::tempdir().unwrap();
        let mut child = Command::new(xtask_binary())
            .args(["lab", "run", "--env", "native", "--profile", "quick", "--matrix", "kafka_sink", "--arm", "raw"])
            .args(["--reps", "2"])
            .arg("--out")
            .arg(out.path())
            .spawn()
            .unwrap();
        // Wait until the second task's harness is running, then kill the broker under it.
        let deadline = Instant::now() + Duration::from_secs(300);
        let (run_id, jsonl) = loop {
            let run_dir = std::fs::read_dir(out.path()).into_iter().flatten().filter_map(|e| e.ok()).next();
            if let Some(dir) = run_dir.map(|e| e.path()) {
                let run_id = dir.file_name().unwrap().to_string_lossy().into_owned();
                let task_logs = std::fs::read_dir(paths::repo_root().join("target/streamlab/runs").join(&run_id))
                    .map(|d| d.count())
                    .unwrap_or(0);
                if lines(&dir.join("kafka_sink.jsonl")).len() == 1 && task_logs >= 2 {
                    break (run_id, dir.join("kafka_sink.jsonl"));
                }
            }
            assert!(child.try_wait().unwrap().is_none(), "the run ended before the broker was killed");
            assert!(Instant::now() < deadline, "the second task never started");
            std::thread::sleep(Duration::from_millis(100));
        };
        std::thread::sleep(Duration::from_millis(1500));
        let env_prefix = paths::envs_dir().join(format!("lab-{run_id}"));
        let envs = |prefix: &Path| -> Vec<PathBuf> {
            std::fs::read_dir(paths::envs_dir())
                .into_iter()
                .flatten()
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.to_string_lossy().starts_with(&*prefix.to_string_lossy()))
                .collect()
        };
        let first_env = envs(&env_prefix).pop().expect("the run's environment");
        let descriptor = streamlab_record::EnvDescriptor::load(&first_env.join("env.json")).unwrap();
        let killed_at = clock::now_ms();
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(descriptor.kafka.pid.unwrap() as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        // The dead broker is reaped when its environment is torn down, while the run goes on: not left a
        // zombie of the runner until it exits.
        let dead = std::path::PathBuf::from(format!("/proc/{}", descriptor.kafka.pid.unwrap()));
        while dead.exists() {
            assert!(child.try_wait().unwrap().is_none(), "the run ended with the killed broker still a zombie");
            assert!(Instant::now() < deadline + Duration::from_secs(120), "the killed broker was never reaped");
            std::thread::sleep(Duration::from_millis(100));
        }

        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(1), "a run with a failed record must exit non-zero");
        let records = streamlab_record::jsonl::read_records(&jsonl).unwrap();
        assert_eq!(records.len(), 6, "every planned task has a record");
        let failed: Vec<&Record> = records.iter().filter(|r| r.status == streamlab_record::Status::Failed).collect();
        assert_eq!(failed.len(), 1, "only the task in flight fails: {records:#?}");
        let reason = failed[0].reason.as_deref().unwrap();
        assert!(reason.starts_with("the kafka broker was killed by SIGKILL during the task"), "{reason}");
        assert!(failed[0].log_tail.as_deref().unwrap().contains("--- the kafka broker's log:"));
        let after = records.iter().skip_while(|r| r.status != streamlab_record::Status::Failed).skip(1);
        for r in after {
            assert_eq!(r.integrity.status, streamlab_record::IntegrityStatus::Verified, "{r:?}");
        }
        let prov = Provenance::load(&jsonl.parent().unwrap().join(PROVENANCE_FILE)).unwrap();
        assert_eq!(prov.restarts.len(), 1, "{:?}", prov.restarts);
        let restart = &prov.restarts[0];
        assert_eq!(restart.failed_env, descriptor.id);
        assert!(restart.new_env.as_deref().is_some_and(|id| id != descriptor.id));
        eprintln!(
            "noticed the dead broker {} ms after the kill; the fresh environment was ready {} ms later",
            restart.ts_ms.saturating_sub(killed_at),
            restart.ready_after_ms.unwrap_or(0)
        );
        assert!(envs(&env_prefix).is_empty(), "environment directories left behind");
        assert!(
            crate::env::native::processes_mentioning(&env_prefix).is_empty(),
            "a broker or server was left running"
        );
    }

    #[test]
    #[ignore = "starts Kafka in Docker and runs arms: cargo xtask test"]
    fn a_quick_arm_runs_on_docker_verified_and_sigint_leaves_no_container() {
        use crate::env::docker::engine::{Engine, LABEL};
        let out = tempfile::tempdir().unwrap();
        let mut child = Command::new(xtask_binary())
            .args(["lab", "run", "--env", "docker", "--profile", "quick", "--matrix", "kafka_sink", "--arm", "raw"])
            .arg("--out")
            .arg(out.path())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(600);
        let jsonl = loop {
            let found = std::fs::read_dir(out.path())
                .into_iter()
                .flatten()
                .filter_map(|e| e.ok())
                .map(|e| e.path().join("kafka_sink.jsonl"))
                .find(|p| !lines(p).is_empty());
            if let Some(p) = found {
                break p;
            }
            assert!(child.try_wait().unwrap().is_none(), "the run ended before it was interrupted");
            assert!(Instant::now() < deadline, "no record after 600 s");
            std::thread::sleep(Duration::from_millis(200));
        };
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT)
            .unwrap();
        assert!(!child.wait().unwrap().success(), "an interrupted run must not exit 0");
        let run_dir = jsonl.parent().unwrap();
        let run_id = run_dir.file_name().unwrap().to_string_lossy().into_owned();
        let engine = Engine::connect().unwrap();
        let ours = |engine: &Engine| -> Vec<String> {
            let prefix = format!("lab-{run_id}");
            let all = engine.labelled(None).unwrap();
            all.into_iter()
                .filter(|c| c.labels.get(LABEL).is_some_and(|id| id.starts_with(&prefix)))
                .map(|c| c.name)
                .collect()
        };
        assert!(ours(&engine).is_empty(), "containers left after Ctrl-C: {:?}", ours(&engine));
        let env_prefix = paths::envs_dir().join(format!("lab-{run_id}"));
        assert!(crate::env::native::processes_mentioning(&env_prefix).is_empty(), "a broker was left running");

        // The run finishes on Docker, and every record of it is verified.
        let status = Command::new(xtask_binary())
            .args(["lab", "run", "--resume", &run_id, "--out"])
            .arg(out.path())
            .status()
            .unwrap();
        assert!(status.success());
        let records = streamlab_record::jsonl::read_records(&jsonl).unwrap();
        assert_eq!(records.len(), 3, "the raw arm's three quick points");
        for r in &records {
            assert_eq!(r.run.env, "docker");
            assert_eq!(r.integrity.status, streamlab_record::IntegrityStatus::Verified, "{r:?}");
            assert!(r.metrics["records_per_s"].value > 0.0);
        }
        let prov = Provenance::load(&run_dir.join(PROVENANCE_FILE)).unwrap();
        assert_eq!(prov.env.backend, "docker");
        assert!(prov.env.images.contains_key("kafka"), "{:?}", prov.env);
        assert!(prov.env.cpu_caps.values().any(|c| c.contains("read back by inspect")), "{:?}", prov.env.cpu_caps);
        assert!(ours(&engine).is_empty(), "containers left after the run: {:?}", ours(&engine));
    }
}
