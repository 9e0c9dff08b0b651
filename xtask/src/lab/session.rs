//! One run's session: its environment (brought up, replaced when a service dies, switched when a task asks
//! for another Kafka version, brought down when the session drops), its provenance, and the records it has
//! written. Each task goes through [`Session::run`], which leaves the task's record in the run directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use indicatif::ProgressBar;
use streamlab_record::descriptor::{BackendKind, DESCRIPTOR_FILE};
use streamlab_record::run_spec::{Need, Profile, RunSpec};
use streamlab_record::{Record, RunInfo, Status};

use super::conditions::{Placement, Probe, plan_placement};
use super::harness;
use super::matrix::Matrix;
use super::plan::Task;
use super::results::RunDir;
use super::run_provenance::{collect_provenance, run_info, write_provenance};
use super::task::{Outcome, measured_as, not_run_record, run_task, to_record};
use super::ui::{phase, say};
use crate::env::backend::{Backend, EnvShape, EnvSpec, Environment};
use crate::env::health::ServiceDown;
use crate::env::process;
use crate::provenance::{
    CalibrationResult, EnvRestart, FIRST_ENVIRONMENT, PROVENANCE_FILE, Provenance, RESUMED_ENVIRONMENT,
};

/// When a calibration is taken.
#[derive(Debug, Clone, Copy)]
enum Moment {
    Start,
    /// The start of a `--resume`: the machine as the later attempt finds it.
    Resume,
    End,
}

impl Moment {
    fn name(self) -> &'static str {
        match self {
            Moment::Start => "start",
            Moment::Resume => "resume",
            Moment::End => "end",
        }
    }
}

/// A CPU loop this much faster or slower at a resume than at the run's start is a machine that moved: one
/// session's start-to-end drift was 2.9% and 3.9% in runs 22cf and 141d, and 18% across run 6841's two
/// sessions, whose later reps ran a median 1.9x the earlier ones.
const CPU_MOVED: f64 = 0.10;

/// Environments a run may bring up again after a service died; past that the run stops.
const MAX_ENV_RESTARTS: usize = 2;

/// What a run has settled before its environment comes up.
pub struct RunSetup<'a> {
    pub run_id: &'a str,
    pub spec: &'a RunSpec,
    pub matrices: &'a [Matrix],
    pub backend: &'a dyn Backend,
    pub needs: &'a [Need],
    /// The harness binary each task runs.
    pub harness: &'a Path,
    /// Where each task's log goes.
    pub logs: &'a Path,
    /// The tools file every harness process gets as STREAMLAB_TOOLS, and the tools' versions.
    pub tools: Option<(PathBuf, BTreeMap<String, String>)>,
    /// Matrix -> the precision its points aim for (provenance says it once per matrix).
    pub precision_targets: BTreeMap<String, f64>,
}

pub struct Session<'a> {
    setup: RunSetup<'a>,
    run_dir: RunDir,
    /// Every record of the run so far: resume skips their tasks.
    written: Vec<Record>,
    /// The shape of the environment now up.
    shape: EnvShape,
    /// The block the environment now up serves (a budgeted run's blocks each get a fresh one).
    block: Option<u32>,
    env: Box<dyn Environment>,
    prov: Provenance,
    run_info: RunInfo,
    /// Set once the environment has died more often than [`MAX_ENV_RESTARTS`]: every task left is not run.
    stopped: Option<String>,
}

impl<'a> Session<'a> {
    /// Bring the environment up in `shape`, then create the run directory with its spec and provenance (the
    /// directory appears only once there is provenance to put in it).
    pub fn start(setup: RunSetup<'a>, run_dir: RunDir, written: Vec<Record>, shape: EnvShape) -> Result<Self> {
        let backend = setup.backend;
        let kafka = shape.kafka;
        phase("environment", &format!("bringing the {} environment up ({shape})", backend.name()));
        let env = backend.up(&EnvSpec::for_run(setup.run_id, setup.needs, shape))?;
        let mut prov = collect_provenance(
            setup.run_id,
            setup.spec,
            setup.matrices,
            &setup.precision_targets,
            env.as_ref(),
            setup.harness,
        )?;
        let earlier = Provenance::load_if_present(&run_dir.path.join(PROVENANCE_FILE))?;
        let resumed = earlier.is_some();
        if let Some(earlier) = earlier {
            prov.merge_earlier(earlier);
        }
        std::fs::create_dir_all(&run_dir.path).with_context(|| format!("cannot create {}", run_dir.path.display()))?;
        run_dir.save_spec(setup.spec)?;
        write_provenance(&run_dir, &prov)?;
        if let Some((_, versions)) = &setup.tools {
            prov.versions.extend(versions.clone());
        }
        // An external cluster's brokers are not the lab's pinned jars: its provenance says what it is.
        if backend.kind() != BackendKind::External {
            prov.note_kafka_broker(kafka.version, kafka.provenance()?);
        }
        prov.note_environment(env.descriptor(), if resumed { RESUMED_ENVIRONMENT } else { FIRST_ENVIRONMENT });
        let run_info = run_info(setup.run_id, &prov);
        let mut session = Session { setup, run_dir, written, shape, block: None, env, prov, run_info, stopped: None };
        // A resumed run keeps its first attempt's start calibration and calibrates again beside it.
        let started = session.prov.calibration.as_ref().and_then(|c| c.start);
        session.calibrate(if started.is_some() { Moment::Resume } else { Moment::Start });
        // The lab's own first environment is as fresh as a block's: warmed the same way (an external cluster is not
        // the lab's to warm).
        if backend.kind() != BackendKind::External {
            let warmed = session.warm_up(&ProgressBar::hidden());
            session.prov.note_warm_up(&warmed);
        }
        write_provenance(&session.run_dir, &session.prov)?;
        if let Some(start) = started {
            session.say_how_the_machine_moved(&start);
        }
        Ok(session)
    }

    /// At a resume: the calibration against the run's start, and a warning when the CPU loop moved beyond a
    /// session's own drift (the site then compares the attempts' reps point by point).
    fn say_how_the_machine_moved(&self, start: &CalibrationResult) {
        let Some(now) = self.prov.calibration.as_ref().and_then(|c| c.resumes.last()) else { return };
        let (cpu, produce) = now.change_from(start);
        let change =
            format!("CPU loop {:+.1}%, loopback produce {:+.1}% against the run's start", cpu * 100.0, produce * 100.0);
        if cpu.abs() > CPU_MOVED {
            phase(
                "calibration",
                &format!(
                    "warning: the machine moved since the run started ({change}); the reps of this attempt and the \
                     earlier ones may measure different speeds, and the site compares them point by point"
                ),
            );
        } else {
            phase("calibration", &format!("resumed on a machine within a session's drift ({change})"));
        }
    }

    /// Calibrate the machine now, into provenance; a calibration that fails is noted there, never failing the run.
    fn calibrate(&mut self, at: Moment) {
        let descriptor = self.env.descriptor().dir.join(DESCRIPTOR_FILE);
        let result = harness::calibrate(self.setup.harness, &descriptor);
        let calibration = self.prov.calibration.get_or_insert_with(Default::default);
        match result {
            Ok(c) => {
                phase(
                    "calibration",
                    &format!(
                        "{}: CPU loop {:.0} M iterations/s, loopback produce {:.0} records/s",
                        at.name(),
                        c.cpu_loop_per_s / 1e6,
                        c.produce_records_per_s
                    ),
                );
                match at {
                    Moment::Start => calibration.start = Some(c),
                    Moment::Resume => calibration.resumes.push(c),
                    Moment::End => calibration.end = Some(c),
                }
            }
            Err(e) => {
                phase("calibration", &format!("failed at the {}: {e:#}", at.name()));
                calibration.errors.push(format!("{}: {e:#}", at.name()));
            }
        }
    }

    /// Run one task (or record why it is not run), append its record to the run directory and return it.
    /// A point whose configuration this block (or, outside blocks, this rep) has measured already stands on that
    /// measurement: the record says which point's task made it.
    pub fn run(&mut self, task: &Task, reproduce: &str, bar: &ProgressBar) -> Result<&Record> {
        let origin = self.written.iter().rev().find(|r| task.same_work_as_record(r)).cloned();
        let runs = task.not_run.is_none() && self.stopped.is_none() && origin.is_none();
        if runs {
            self.replace_if_down(bar)?;
            self.stop_if_disk_short(bar);
        }
        if runs && self.stopped.is_none() {
            self.fresh_env_for_block(task, bar)?;
            self.switch_env_for(task, bar)?;
        }
        let record = match (&task.not_run, &self.stopped, origin) {
            (Some(reason), _, _) | (None, Some(reason), _) => not_run_record(task, &self.run_info, reproduce, reason),
            (None, None, Some(origin)) => {
                self.prov.note_task(&task.describe());
                measured_as(task, &origin, reproduce)
            }
            (None, None, None) => self.measure(task, reproduce, bar)?,
        };
        self.run_dir.append(&record)?;
        if record.status != Status::NotRun {
            write_provenance(&self.run_dir, &self.prov)?;
        }
        self.written.push(record);
        Ok(self.written.last().expect("just pushed"))
    }

    pub fn run_id(&self) -> &str {
        self.setup.run_id
    }

    /// Every record of the run so far.
    pub fn written(&self) -> &[Record] {
        &self.written
    }

    /// Note the end in provenance and bring the environment down; returns every record of the run and, if the
    /// run stopped early, why.
    pub fn finish(mut self) -> Result<(Vec<Record>, Option<String>)> {
        if self.stopped.is_none() {
            self.calibrate(Moment::End);
        }
        self.prov.finished_ts_ms = Some(streamlab_process::clock::now_ms());
        write_provenance(&self.run_dir, &self.prov)?;
        Ok((self.written, self.stopped))
    }

    /// Free disk, checked before every task as at the start: a broker that fills it dies mid-task and takes the
    /// task with it (a runner's spare disk goes as a run writes). When it is short the remaining tasks are not run,
    /// with why, and the run fails.
    fn stop_if_disk_short(&mut self, bar: &ProgressBar) {
        if self.stopped.is_some() {
            return;
        }
        if let Err(short) = crate::env::disk::ensure_free(&crate::paths::envs_dir(), crate::env::disk::RUN_NEEDS_BYTES)
        {
            say(bar, format!("  {short:#}; the remaining tasks are not run"));
            self.stopped = Some(format!("not run: {short:#}; the run stopped"));
        }
    }

    /// A service that died between tasks: a fresh environment before the next task runs.
    fn replace_if_down(&mut self, bar: &ProgressBar) -> Result<()> {
        if let Err(down) = self.env.health() {
            self.replace_env(&down, bar)?;
            write_provenance(&self.run_dir, &self.prov)?;
        }
        Ok(())
    }

    /// The first task of a new block: a fresh environment in the task's shape (brokers and servers from empty data),
    /// so blocks are independent as runs are. The first block keeps the environment the run started with.
    fn fresh_env_for_block(&mut self, task: &Task, bar: &ProgressBar) -> Result<()> {
        let (Some(block), Some(before)) = (task.block, self.block) else {
            self.block = self.block.or(task.block);
            return Ok(());
        };
        if block == before {
            return Ok(());
        }
        self.block = Some(block);
        let shape = task.shape()?;
        say(bar, format!("  block {block}: bringing up a fresh environment ({shape})"));
        if shape.kafka != self.shape.kafka {
            self.prov.note_kafka_broker(shape.kafka.version, shape.kafka.provenance()?);
        }
        self.shape = shape;
        self.env = self.env_up()?;
        let warmed = self.warm_up(bar);
        self.prov.note_environment(self.env.descriptor(), &format!("block {block}: a fresh environment"));
        self.prov.note_warm_up(&warmed);
        write_provenance(&self.run_dir, &self.prov)
    }

    /// A task on another shape (a matrix on another broker count, a point on another Kafka version): the
    /// environment is brought up again in that shape, the one before it brought down.
    fn switch_env_for(&mut self, task: &Task, bar: &ProgressBar) -> Result<()> {
        let shape = task.shape()?;
        if shape == self.shape {
            return Ok(());
        }
        let (before, kafka) = (self.shape, shape.kafka);
        self.shape = shape;
        say(bar, format!("  switching from {before} to {shape}: bringing up a fresh environment"));
        self.env = self.env_up()?;
        if kafka != before.kafka {
            self.prov.note_kafka_broker(kafka.version, kafka.provenance()?);
        }
        let warmed = self.warm_up(bar);
        self.prov.note_environment(self.env.descriptor(), &format!("switched to {shape}"));
        self.prov.note_warm_up(&warmed);
        write_provenance(&self.run_dir, &self.prov)
    }

    /// Run the task's harness process in the environment, with the broker capped and placed as the task asks,
    /// and the machine's conditions measured around it.
    fn measure(&mut self, task: &Task, reproduce: &str, bar: &ProgressBar) -> Result<Record> {
        self.cap_broker(task)?;
        let (client_cpus, placement) = place(task, self.env.as_ref())?;
        let probe = Probe::start(self.env.service_pids());
        let tools_file = self.setup.tools.as_ref().map(|(path, _)| path.as_path());
        let mut measured =
            run_task(self.setup.harness, task, self.env.as_mut(), self.setup.logs, client_cpus.as_deref(), tools_file)?;
        let conditions = probe.finish_with(Some(placement), &self.env.service_pids());
        let m = self.setup.matrices.iter().find(|m| m.name == task.bench).expect("planned from these");
        // The record names the versions of the environment it ran in (a run may switch brokers), and provenance
        // lists the task under that environment, before any replacement below.
        let mut ran_in = self.run_info.in_env(self.env.descriptor());
        ran_in.broker_heap = self.env.info().managed.then(crate::env::kafka::broker_heap);
        if !m.needs.contains(&Need::Mysql) {
            // The environment has a server for another matrix; this task did not use it.
            (ran_in.mysql_flavour, ran_in.mysql_version) = (None, None);
        }
        self.prov.note_task(&task.describe());
        if let Outcome::Measured(m) = &measured {
            self.prov.versions.extend(m.versions.clone());
        }
        // A failed task whose environment is down failed because of it: say so, then start afresh.
        if let Outcome::Failed { reason, log_tail } = &mut measured
            && let Err(down) = self.env.health()
        {
            blame_service(reason, log_tail, &down);
            self.replace_env(&down, bar)?;
            write_provenance(&self.run_dir, &self.prov)?;
        }
        let mut record = to_record(task, &ran_in, reproduce, measured);
        record.conditions = Some(conditions);
        Ok(record)
    }

    /// Apply the task's broker CPU cap, and note in provenance the cap (or why there is none) the first time.
    fn cap_broker(&mut self, task: &Task) -> Result<()> {
        if let Some(cores) = task.broker_cores()
            && let Some(cap) = self.env.cap_broker(cores)?
            && self.prov.note_broker_cap(&cap)
        {
            write_provenance(&self.run_dir, &self.prov)?;
        }
        if let Some(why) = task.uncapped_broker()
            && self.prov.note_broker_cap(&why)
        {
            write_provenance(&self.run_dir, &self.prov)?;
        }
        Ok(())
    }

    /// Replace a failed environment with a fresh one (new id, same backend and Kafka; caps are applied per
    /// task) and note it in provenance. Once the restarts are spent, sets why every remaining task is not run.
    fn replace_env(&mut self, down: &ServiceDown, bar: &ProgressBar) -> Result<()> {
        let failed_env = self.env.descriptor().id.clone();
        let mut restart = EnvRestart {
            ts_ms: streamlab_process::clock::now_ms(),
            failed_env: failed_env.clone(),
            reason: down.to_string(),
            new_env: None,
            ready_after_ms: None,
        };
        if self.prov.restarts.len() >= MAX_ENV_RESTARTS {
            self.prov.restarts.push(restart);
            say(bar, format!("  {down}; {MAX_ENV_RESTARTS} restarts spent, the remaining tasks are not run"));
            self.stopped = Some(format!(
                "not run: the environment failed {} times (last: {down}); the run stopped",
                MAX_ENV_RESTARTS + 1
            ));
            return Ok(());
        }
        say(bar, format!("  {down}; bringing up a fresh {} environment", self.setup.backend.name()));
        let started = Instant::now();
        // The fresh environment takes new ports and a new directory; the failed one is torn down (its survivors
        // stopped, its directory removed) when the assignment drops it.
        self.env = self.env_up().map_err(|e| e.context(format!("replacing environment {failed_env}")))?;
        restart.ready_after_ms = Some(started.elapsed().as_millis() as u64);
        let warmed = self.warm_up(bar);
        let env = self.env.descriptor();
        restart.new_env = Some(env.id.clone());
        self.prov.note_environment(env, &format!("replaced environment {failed_env}: {down}"));
        self.prov.note_warm_up(&warmed);
        let ready =
            format!("  environment {} is up after {:.1} s; the run goes on", env.id, started.elapsed().as_secs_f64());
        say(bar, ready);
        self.prov.restarts.push(restart);
        Ok(())
    }

    /// A broker just started is still compiling its hot paths: in the first 4 blocked runs the first latency task
    /// after a fresh environment read a produce-ack p99 of 0.9-1.5 ms and the later ones 0.2-0.5 ms, so which arm the
    /// shuffle put first moved its claim. Before a fresh environment's first task, `harness warm-up` sends it a bulk
    /// produce and one-record round trips. What it did goes to the terminal and to the environment's `warm_up` in
    /// provenance; one that fails leaves the task to a cold broker, said so. The quick profile, whose figures decide
    /// nothing, sends a tenth of the round trips (about 4 s less for each environment a test brings up).
    fn warm_up(&mut self, bar: &ProgressBar) -> String {
        let descriptor = self.env.descriptor().dir.join(DESCRIPTOR_FILE);
        let quick = self.setup.spec.profile == Profile::Quick;
        let said = match harness::warm_up(self.setup.harness, &descriptor, quick) {
            Ok(did) => did,
            Err(e) => format!("not warmed up ({e:#})"),
        };
        say(bar, format!("  {said}"));
        said
    }

    /// A fresh environment like the current one: same backend and needs, the session's shape.
    fn env_up(&self) -> Result<Box<dyn Environment>> {
        self.setup.backend.up(&EnvSpec::for_run(self.setup.run_id, self.setup.needs, self.shape))
    }
}

/// The reason of a task failed by a dead service names the service first; the service's log joins the tail.
fn blame_service(reason: &mut String, log_tail: &mut String, down: &ServiceDown) {
    if !reason.starts_with(&down.to_string()) {
        *reason = format!("{down} during the task; the arm then failed: {reason}");
        *log_tail = super::task::service_and_arm_tail(down, log_tail);
    }
}

/// Keep client and broker on disjoint CPUs when the machine allows it; returns the client's CPUs (if
/// pinned) and the placement as the record states it.
fn place(task: &Task, env: &dyn Environment) -> Result<(Option<Vec<usize>>, String)> {
    let placement = plan_placement(&process::allowed_cpus(), task.broker_cores());
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
