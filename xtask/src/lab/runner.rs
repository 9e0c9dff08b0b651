//! `lab run`: validate everything, bring the environment up, run every task as its own harness
//! process, write each record as its task ends, and always bring the environment down.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use streamlab_record::Record;
use streamlab_record::descriptor::BackendKind;
use streamlab_record::run_spec::{Need, RunSpec};
use streamlab_record::tools::{RedpandaConnect, Tool};

use super::RunArgs;
use super::budget;
use super::harness;
use super::matrix::{self, Matrix};
use super::plan::{self, Task};
use super::precision;
use super::registry::{self, Registry};
use super::reproduce::reproduce_command;
use super::results::{self, RunDir};
use super::schedule;
use super::session::{RunSetup, Session};
use super::summary;
use super::ui::{self, phase};
use crate::env::backend::EnvShape;
use crate::env::pins;
use crate::provenance::{self, Git, Host, PROVENANCE_FILE, Provenance};
use crate::results::config::SiteConfig;
use crate::results::declared::Claim;
use crate::results::load::{Run, load_results};
use crate::{interrupt, paths};

pub fn run(args: RunArgs) -> Result<()> {
    interrupt::install();
    // A budget counts from here: the build and the environments are part of the answer's time.
    let started = Instant::now();
    let out_root = args.out.clone().unwrap_or_else(paths::results_dir);
    let Checked { run_id, spec, matrices, backend, budget, cfg, tasks, goals } = check_input(&args, &out_root)?;
    let claims = &cfg.claims;
    let run_dir = RunDir::new(out_root.join(&run_id));
    let written = run_dir.records(&matrices.iter().map(|m| m.name.clone()).collect::<Vec<_>>())?;
    let todo = unfinished(tasks.clone(), &written);
    if args.resume.is_some() {
        println!("resuming {run_id}: {} tasks finished, {} to run", results::finished(&written).len(), todo.len());
        if todo.is_empty() && !needs_more_reps(&goals, &tasks, &written, &matrices, &cfg) {
            // Nothing to measure: no build, no environment.
            return Ok(());
        }
    }
    let needs = needs_of(&matrices);
    // The user's Redpanda Connect binary, if named, is checked before anything is built or provisioned.
    let redpanda_connect = match needs.contains(&Need::Connect) {
        true => crate::clients::redpanda_connect::from_env()?,
        false => None,
    };

    println!("run {run_id}: {} tasks, profile {}, {} environment", todo.len(), spec.profile, backend.name());
    // What each point took in the runs before this one: the budget's plan and its rounds go by them.
    let earlier: Vec<Run> = if out_root.exists() { load_results(&out_root)? } else { Vec::new() };
    let times = budget::Times::on_machine(&provenance::collect_host().machine_key(), &earlier);
    if let Some(b) = budget {
        budget::plan_text(&todo, &times, b).iter().for_each(|l| println!("{l}"));
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        budget::host_limits_text(claims, &matrices, cores).iter().for_each(|l| println!("{l}"));
    }
    let harness = harness::build()?;
    let registry = Registry::from_harness(&harness)?;
    registry::check_all(&matrices, &registry)?;
    // Every task, not only those left: the precision target and the budget may add reps to any of them.
    let wanted = registry.tools_of(tasks.iter().filter(|t| t.not_run.is_none()).map(|t| (&*t.bench, &*t.arm)));
    phase("fetch", &backend.prepare_what());
    backend.prepare()?;
    let logs = paths::repo_root().join("target/streamlab/runs").join(&run_id);
    std::fs::create_dir_all(&logs)?;
    let tools = prepare_tools(&needs, &wanted, redpanda_connect, &logs)?;
    let first_shape = match todo.iter().find(|t| t.not_run.is_none()) {
        Some(t) => t.shape()?,
        None => EnvShape { brokers: EnvShape::brokers_for(&needs), kafka: pins::default_pin() },
    };
    let setup = RunSetup {
        run_id: &run_id,
        spec: &spec,
        matrices: &matrices,
        backend: backend.as_ref(),
        needs: &needs,
        harness: &harness,
        logs: &logs,
        tools,
        precision_targets: goals.iter().map(|(m, g)| (m.clone(), g.target)).collect(),
    };
    let mut session = Session::start(setup, RunDir::new(run_dir.path.clone()), written, first_shape)?;
    let title = format!("{} tasks, one harness process each; records go to {}", todo.len(), run_dir.path.display());
    phase("tasks", &title);
    match budget {
        Some(b) => {
            let ctx = Budgeted { clock: budget::Clock::since(started, b), times: &times, claims, out_root: &out_root };
            budget::fit_text(&todo, &times, ctx.clock.left_s()).iter().for_each(|l| println!("{l}"));
            run_budgeted(&mut session, &tasks, &todo, &matrices, &spec, &ctx)?;
        }
        None => {
            run_tasks(&mut session, &todo, &matrices, &spec)?;
            reach_precision(&mut session, &goals, &tasks, &matrices, &spec, &cfg)?;
        }
    }
    let (written, stopped) = session.finish()?;
    summarize(&run_id, &matrices, &goals, &written, &run_dir, started);
    if budget.is_some() {
        answer(&out_root, &logs, (claims, &spec.claims), &matrices, &run_id)?;
    }
    fail_on_failures(&written, &run_dir)?;
    if let Some(reason) = stopped {
        bail!("the run stopped early: {reason}");
    }
    Ok(())
}

/// Everything a run decides before it builds or provisions anything.
struct Checked {
    run_id: String,
    spec: RunSpec,
    matrices: Vec<Matrix>,
    backend: Box<dyn crate::env::backend::Backend>,
    budget: Option<Duration>,
    /// The site's configuration, which holds the claims, checked once.
    cfg: SiteConfig,
    tasks: Vec<Task>,
    goals: BTreeMap<String, precision::Goal>,
}

/// Everything that can be wrong with the input is refused here, before anything is provisioned.
fn check_input(args: &RunArgs, out_root: &Path) -> Result<Checked> {
    let (run_id, spec, dsn) = identify(args, out_root)?;
    if args.resume.is_some() {
        check_resumable(&run_id, &out_root.join(&run_id).join(PROVENANCE_FILE))?;
    }
    let matrices = select_matrices(&spec.matrices)?;
    let backend =
        crate::env::choose(spec.env, spec.bootstrap.as_deref(), dsn.as_deref(), spec.kafka_config.as_deref())?;
    let budget = spec.budget_s.map(Duration::from_secs);
    if let Some(b) = budget {
        budget::check(b)?;
    }
    budget::check_blocks(spec.blocks, budget.is_some())?;
    let cfg = SiteConfig::with_claims(super::claim_points::load(&spec.claims)?)?;
    let mut tasks = plan::for_run(&matrices, &spec, backend.as_ref())?;
    if budget.is_some() {
        tasks = budget::first_pass(tasks, &matrices, &cfg, &cfg.claims);
    }
    // A budgeted run spends its reps on the claims, not on a precision target per point.
    let goals = if budget.is_some() { BTreeMap::new() } else { precision::goals(&matrices, &spec)? };
    // The lab's own services write their data under envs/ (an external cluster's brokers do not).
    if backend.kind() != BackendKind::External {
        crate::env::disk::ensure_free(&paths::envs_dir(), crate::env::disk::RUN_NEEDS_BYTES)?;
    }
    Ok(Checked { run_id, spec, matrices, backend, budget, cfg, tasks, goals })
}

/// What a budgeted run's rounds go by.
struct Budgeted<'a> {
    clock: budget::Clock,
    times: &'a budget::Times,
    claims: &'a [Claim],
    out_root: &'a Path,
}

/// The first pass (block 1) as far as the budget allows, then blocks of the claims this host can decide, each in a
/// fresh environment, while a whole block fits in the time left.
fn run_budgeted(
    session: &mut Session,
    first: &[Task],
    todo: &[Task],
    matrices: &[Matrix],
    spec: &RunSpec,
    ctx: &Budgeted,
) -> Result<()> {
    // The same count the plan printed, environment switches included. The first pass is block 1.
    let fits = budget::fitting(todo, ctx.times, ctx.clock.left_s());
    let block_one: Vec<Task> = todo[..fits].iter().map(|t| Task { block: Some(1), ..t.clone() }).collect();
    run_tasks(session, &block_one, matrices, spec)?;
    if fits < todo.len() {
        let left: Vec<String> = todo[fits..].iter().map(Task::describe).collect();
        phase("budget", &format!("spent before {} first-pass tasks: {}", left.len(), left.join("; ")));
        return Ok(());
    }
    let mut goal = budget::ClaimsDecided {
        clock: ctx.clock,
        claims: ctx.claims,
        matrices,
        first,
        out_root: ctx.out_root,
        run_id: session.run_id().to_owned(),
        max_blocks: spec.blocks,
        blocked: None,
    };
    schedule::run_rounds(&mut goal, &mut SessionRuns { session, matrices, spec })?;
    Ok(())
}

/// The scheduler's rounds run as tasks of this run's session.
struct SessionRuns<'a, 'b> {
    session: &'a mut Session<'b>,
    matrices: &'a [Matrix],
    spec: &'a RunSpec,
}

impl schedule::Runs for SessionRuns<'_, '_> {
    fn written(&self) -> &[Record] {
        self.session.written()
    }

    fn run(&mut self, tasks: &[Task]) -> Result<()> {
        run_tasks(self.session, tasks, self.matrices, self.spec)
    }
}

/// A budgeted run ends with the answer: every claim's verdict over the results, and the site built from them
/// (target/site/ from results/; another --out's beside the run's logs). `claims` are the run's and the files the user's
/// came from, which the site reads again.
fn answer(
    out_root: &Path,
    logs: &Path,
    (claims, claim_files): (&[Claim], &[PathBuf]),
    matrices: &[Matrix],
    run_id: &str,
) -> Result<()> {
    let runs = load_results(out_root)?;
    let machine = runs.iter().find(|r| r.id == run_id).map_or_else(String::new, |r| r.provenance.machine_key());
    phase(
        "verdicts",
        &format!(
            "every claim on these matrices, judged over this machine's runs in {} ({machine})",
            out_root.display()
        ),
    );
    print!("{}", super::verdicts::table(&budget::verdicts_of(&runs, claims, matrices, run_id)));
    let site =
        if out_root == paths::results_dir() { paths::repo_root().join("target/site") } else { logs.join("site") };
    let args = crate::site::BuildArgs {
        results: Some(out_root.to_owned()),
        out: Some(site.clone()),
        claims: claim_files.to_vec(),
    };
    crate::site::build(args, claims.to_vec())?;
    phase("site", &format!("{}", site.join("index.html").display()));
    Ok(())
}

/// Every task in order, each record written (and summarised above the progress bar) as its task ends.
fn run_tasks(session: &mut Session, todo: &[Task], matrices: &[Matrix], spec: &RunSpec) -> Result<()> {
    let bar = ui::progress_bar(todo.len());
    for task in todo {
        interrupt::check()?;
        bar.set_message(task.describe());
        let m = matrices.iter().find(|m| m.name == task.bench).expect("planned from these");
        let record = session.run(task, &reproduce_command(spec, m, task), &bar)?;
        ui::say(&bar, summary::record_line(record));
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(())
}

/// Rounds of one more rep of every point short of its precision goal, until none is or every such point has
/// spent its budget.
fn reach_precision(
    session: &mut Session,
    goals: &BTreeMap<String, precision::Goal>,
    planned: &[Task],
    matrices: &[Matrix],
    spec: &RunSpec,
    cfg: &SiteConfig,
) -> Result<()> {
    if goals.is_empty() {
        return Ok(());
    }
    let mut goal = precision::PrecisionTarget { goals, planned, matrices, cfg };
    schedule::run_rounds(&mut goal, &mut SessionRuns { session, matrices, spec })?;
    Ok(())
}

/// Whether a resumed run still has reps to add for its precision goals.
fn needs_more_reps(
    goals: &BTreeMap<String, precision::Goal>,
    planned: &[Task],
    written: &[Record],
    matrices: &[Matrix],
    cfg: &SiteConfig,
) -> bool {
    !goals.is_empty() && !precision::next_round(goals, planned, written, matrices, cfg).tasks.is_empty()
}

/// The run's id, its spec (what run.json keeps) and the DSN: a new run's from the arguments, a resumed run's
/// from its run directory. The DSN with its password is only ever in memory.
fn identify(args: &RunArgs, out_root: &Path) -> Result<(String, RunSpec, Option<String>)> {
    Ok(match &args.resume {
        Some(id) => {
            let spec = RunDir::new(out_root.join(id)).load_spec()?;
            let dsn = resume_dsn(spec.mysql_dsn.as_deref(), args.mysql_dsn.clone())?;
            (id.clone(), spec, dsn)
        }
        None => {
            let spec = args.spec();
            (results::new_run_id(spec.profile), spec, args.mysql_dsn.clone())
        }
    })
}

/// A resumed run goes on only from the commit and on the machine it started on (provenance says which); a run
/// interrupted before its provenance was written has nothing to check, one whose provenance is unreadable is
/// refused, naming the file.
fn check_resumable(run_id: &str, provenance: &Path) -> Result<()> {
    let Some(earlier) = Provenance::load_if_present(provenance)? else { return Ok(()) };
    let (git, host) = (provenance::collect_git(&paths::repo_root()), provenance::collect_host());
    match resume_refusal(run_id, &earlier, &git, &host) {
        Some(why) => bail!(why),
        None => Ok(()),
    }
}

/// Why a run cannot be resumed here, if it cannot: every record of one run comes from one commit on one machine.
/// A tree with uncommitted changes is allowed (the run's provenance then says dirty, as the site shows).
fn resume_refusal(run_id: &str, earlier: &Provenance, git: &Git, host: &Host) -> Option<String> {
    if earlier.git.commit != git.commit {
        return Some(format!(
            "--resume {run_id}: it was started at commit {} and this tree is at {}; every record of a run comes \
             from one commit: finish it from a checkout of that commit (git worktree add DIR {}), or start a new run",
            earlier.git.commit, git.commit, earlier.git.commit
        ));
    }
    let (then, now) = (earlier.host.machine_key(), host.machine_key());
    (then != now).then(|| {
        format!(
            "--resume {run_id}: it was started on {then} and this machine is {now}; every record of a run comes \
             from one machine: start a new run here"
        )
    })
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

/// The planned tasks that have no record yet (all of them for a new run).
fn unfinished(tasks: Vec<Task>, written: &[Record]) -> Vec<Task> {
    let done = results::finished(written);
    tasks.into_iter().filter(|t| !done.contains(&t.key())).collect()
}

/// Every service any of the matrices needs, once each.
fn needs_of(matrices: &[Matrix]) -> Vec<Need> {
    let mut needs: Vec<Need> = matrices.iter().flat_map(|m| m.needs.iter().copied()).collect();
    needs.sort();
    needs.dedup();
    needs
}

/// One tools file for every tool the matrices need (its path reaches each harness process as STREAMLAB_TOOLS),
/// with the tools' versions; `None` when they need none.
fn prepare_tools(
    needs: &[Need],
    wanted: &BTreeSet<Tool>,
    redpanda_connect: Option<RedpandaConnect>,
    logs: &Path,
) -> Result<Option<(PathBuf, BTreeMap<String, String>)>> {
    let Some(what) = ui::tools_phase(needs, wanted, redpanda_connect.as_ref()) else { return Ok(None) };
    phase("tools", &what);
    let path = logs.join("tools.json");
    let tools = crate::clients::prepare(&path, needs, wanted, redpanda_connect)?;
    Ok(Some((path, crate::clients::versions(&tools))))
}

/// The summary of each matrix and the run's time.
fn summarize(
    run_id: &str,
    matrices: &[Matrix],
    goals: &BTreeMap<String, precision::Goal>,
    written: &[Record],
    run_dir: &RunDir,
    started: Instant,
) {
    // A resumed run's provenance says which attempt ran each task; unreadable, the summary goes without it.
    let prov = Provenance::load(&run_dir.path.join(PROVENANCE_FILE)).ok();
    for m in matrices {
        let target = goals.get(&m.name).map(|g| g.target);
        summary::lines(&m.name, target, written).iter().for_each(|l| println!("{l}"));
        if let Some(line) = prov.as_ref().and_then(|p| summary::attempts_line(p, &m.name, written)) {
            println!("{line}");
        }
    }
    println!("run {run_id} finished in {:.1} min: {}", started.elapsed().as_secs_f64() / 60.0, run_dir.path.display());
}

/// A failed or withdrawn record fails the run (CI reads the exit status; a legitimate not-run does not fail it).
fn fail_on_failures(written: &[Record], run_dir: &RunDir) -> Result<()> {
    let failed = summary::failures(written);
    if failed > 0 {
        bail!(
            "{failed} of {} records failed or failed their integrity check (their reasons are above and in {})",
            written.len(),
            run_dir.path.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_resumes_only_from_its_own_commit_on_its_own_machine() {
        let earlier = crate::results::fixtures::provenance("r", 0);
        let (git, host) = (earlier.git.clone(), earlier.host.clone());
        assert_eq!(resume_refusal("r", &earlier, &git, &host), None);
        // Another hostname is the same machine for a figure; another commit or another CPU is not.
        let renamed = Host { hostname: "lab-2".into(), ..host.clone() };
        assert_eq!(resume_refusal("r", &earlier, &git, &renamed), None);
        let moved = Git { commit: "0123".into(), ..git.clone() };
        let why = resume_refusal("r", &earlier, &moved, &host).unwrap();
        assert!(why.contains("started at commit 4f1c2d3e") && why.contains("this tree is at 0123;"), "{why}");
        assert!(why.contains("git worktree add DIR 4f1c2d3e"), "{why}");
        let dirty = Git { dirty: true, ..git.clone() };
        assert_eq!(resume_refusal("r", &earlier, &dirty, &host), None, "a dirty tree is marked, not refused");
        let other = Host { cpu_brand: "Intel(R) Xeon(R) Processor".into(), ..host };
        let why = resume_refusal("r", &earlier, &git, &other).unwrap();
        assert!(why.contains("started on AMD EPYC 7B13") && why.contains("this machine is Intel"), "{why}");
    }

    #[test]
    fn an_unknown_backend_names_the_flag_and_a_resume_asks_for_the_dsn_again() {
        let err = crate::lab::reproduce::tests::try_parse_run_args(&["run", "--env", "kubernetes"]).unwrap_err();
        assert!(err.contains("--env") && err.contains("[possible values: auto, native, docker, external]"), "{err}");
        let err = resume_dsn(Some("mysql://u:PASSWORD@h:1"), None).unwrap_err().to_string();
        assert!(err.contains("pass --mysql-dsn again"), "{err}");
        assert_eq!(
            resume_dsn(Some("mysql://u@h:1"), Some("mysql://u:p@h:1".into())).unwrap().as_deref(),
            Some("mysql://u:p@h:1")
        );
        assert_eq!(resume_dsn(None, None).unwrap(), None);
    }
}
