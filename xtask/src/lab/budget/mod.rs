//! The time-budgeted run, `lab run`'s default (`--budget 45m`): first one rep of every point a seed's claim
//! (harness/claims.toml) or a headline ratio (site/headlines.toml) rests on, and each matrix's default point, so
//! every matrix is exercised and verified (block 1); then, while a whole block fits, blocks of the claims this host
//! can decide. A point's cost is what it took in this run, else in the committed runs. The plan says before anything
//! starts what fits and what will be left.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use streamlab_record::Record;

use super::matrix::Matrix;
use super::plan::Task;
use super::precision::{PointKey, key_of_record as record_key, key_of_task as key};
use super::schedule::{self, Next};
use crate::results::claims::{self, ClaimVerdict, Kind};
use crate::results::config::SiteConfig;
use crate::results::declared::{Claim, ClaimKind, Side};
use crate::results::load::{Run, load_results};

/// `lab run` with no profile, reps or precision flag: the whole answer within this.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(45 * 60);

/// What bringing up another environment costs (a broker or a cluster, the calibration is not repeated): 5 to 10 s
/// for a broker started from its class-data archive between a block's tasks here (run
/// 20261207T154601Z-standard-b325, where 40 s priced a 2.9-minute block at 4), with room for a cluster.
const ENV_SWITCH_S: f64 = 15.0;

/// A point with no history and no timed phases to go by.
const UNKNOWN_POINT_S: f64 = 60.0;

/// Time kept back for the end: the last calibration, the environment brought down, the verdicts and the site.
const RESERVE_S: f64 = 60.0;

/// `45m`, `3h`, `90s`, `1h30m`: a wall-clock budget.
pub fn parse_budget(text: &str) -> Result<Duration, String> {
    let bad = || format!("{text:?}: a duration such as 45m, 20m, 3h, 1h30m or 900s");
    let (mut total, mut digits) = (0u64, String::new());
    for c in text.trim().chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit = match c {
            'h' => 3600,
            'm' => 60,
            's' => 1,
            _ => return Err(bad()),
        };
        let n: u64 = digits.parse().map_err(|_| bad())?;
        total += n * unit;
        digits.clear();
    }
    if !digits.is_empty() || total == 0 {
        return Err(bad());
    }
    Ok(Duration::from_secs(total))
}

/// The wall clock against the budget.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    started: Instant,
    budget: Duration,
}

impl Clock {
    /// The budget, counted from `started`.
    pub fn since(started: Instant, budget: Duration) -> Self {
        Clock { started, budget }
    }

    /// Seconds left for tasks (the end's reserve kept back).
    pub fn left_s(&self) -> f64 {
        self.budget.as_secs_f64() - self.started.elapsed().as_secs_f64() - RESERVE_S
    }
}

/// The sides of a claim the lab measures: its two points, its ceiling's and its bound's, a shape's labels.
fn claim_sides(c: &Claim) -> Vec<Side> {
    let mut sides: Vec<Side> = [&c.numerator, &c.denominator].into_iter().flatten().cloned().collect();
    sides.extend(c.ceiling.iter().map(|ceil| ceil.point.clone()));
    sides.extend(c.bound.iter().flat_map(|b| [b.numerator.clone(), b.denominator.clone()]));
    if let Some(shape) = &c.shape {
        sides.extend(shape.labels.iter().map(|l| Side {
            sweep: shape.sweep.clone(),
            arm: shape.arm.clone(),
            label: l.clone(),
        }));
    }
    sides
}

/// The first pass: of the planned tasks, rep 1 of every point a claim or a headline ratio rests on and of every
/// point a matrix lists in `first_pass` (its own findings), and the default point of a matrix that has none of
/// these; in the plan's order (grouped by environment, arms interleaved).
pub fn first_pass(planned: Vec<Task>, matrices: &[Matrix], cfg: &SiteConfig, claims: &[Claim]) -> Vec<Task> {
    let rests_on = |t: &Task| {
        let by_claim = claims
            .iter()
            .filter(|c| c.matrix == t.bench)
            .flat_map(claim_sides)
            .any(|side| side.is_point(&t.arm, &t.sweep, &t.label));
        let by_ratio = cfg.headline(&t.bench).is_some_and(|h| {
            h.ratios.iter().any(|r| r.sweep == t.sweep && (r.numerator == t.arm || r.denominator == t.arm))
        });
        by_claim || by_ratio
    };
    let own_finding = |t: &Task| {
        let m = matrices.iter().find(|m| m.name == t.bench);
        m.is_some_and(|m| m.first_pass.iter().any(|p| p.sweep == t.sweep && p.label == t.label))
    };
    let mut kept: Vec<Task> =
        planned.iter().filter(|t| t.rep == 1 && (rests_on(t) || own_finding(t))).cloned().collect();
    for m in matrices {
        if !kept.iter().any(|t| t.bench == m.name) {
            kept.extend(planned.iter().filter(|t| t.bench == m.name && t.rep == 1 && t.default).cloned());
        }
    }
    // Back in the plan's order.
    let order: Vec<PointKey> = planned.iter().map(key).collect();
    kept.sort_by_key(|t| order.iter().position(|k| *k == key(t)));
    kept.dedup_by_key(|t| key(t));
    kept
}

/// What each point took in the committed runs: the median wall time of its tasks, else its matrix's.
#[derive(Debug, Default)]
pub struct Times {
    by_point: BTreeMap<PointKey, f64>,
    by_matrix: BTreeMap<String, f64>,
}

impl Times {
    pub fn from_runs(runs: &[Run]) -> Self {
        let (mut points, mut matrices): (BTreeMap<PointKey, Vec<f64>>, BTreeMap<String, Vec<f64>>) = Default::default();
        // A record measured as another point took no time of its own.
        let own = runs.iter().flat_map(|run| run.matrices.values()).flat_map(|f| &f.records);
        for r in own.filter(|r| r.measured_as.is_none()) {
            let Some(wall) = r.conditions.as_ref().map(|c| c.wall_s).filter(|w| *w > 0.0) else { continue };
            points.entry(record_key(r)).or_default().push(wall);
            matrices.entry(r.bench.clone()).or_default().push(wall);
        }
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        Times {
            by_point: points.into_iter().map(|(k, v)| (k, median(v))).collect(),
            by_matrix: matrices.into_iter().map(|(k, v)| (k, median(v))).collect(),
        }
    }

    /// What each point took, this run's own times first (the machine as it is now: the committed medians mix in
    /// older, slower runs and once priced a 3.3-minute block at 6 minutes, leaving it unrun), the committed ones for
    /// points this run has not measured yet.
    pub fn preferring(run_id: &str, runs: &[Run]) -> Self {
        let this: Vec<Run> = runs.iter().filter(|r| r.id == run_id).cloned().collect();
        Times::layered(&this, runs)
    }

    /// What each point took on the machine `host_key` names, every machine's median where it has none: the plan's
    /// estimate before a run (every machine's medians priced this Xeon's 24-minute first pass at 27).
    pub fn on_machine(host_key: &str, runs: &[Run]) -> Self {
        let mine: Vec<Run> = runs.iter().filter(|r| r.provenance.host.machine_key() == host_key).cloned().collect();
        Times::layered(&mine, runs)
    }

    /// `preferred`'s times over `all`'s.
    fn layered(preferred: &[Run], all: &[Run]) -> Self {
        let (mine, all) = (Times::from_runs(preferred), Times::from_runs(all));
        Times {
            by_point: all.by_point.into_iter().chain(mine.by_point).collect(),
            by_matrix: all.by_matrix.into_iter().chain(mine.by_matrix).collect(),
        }
    }

    /// Seconds one rep of `t` is expected to take: its point's history, its matrix's, else its windows.
    pub fn of(&self, t: &Task) -> f64 {
        self.by_point.get(&key(t)).or(self.by_matrix.get(&t.bench)).copied().unwrap_or_else(|| windows_s(t))
    }

    /// Seconds the tasks take in this order, environment switches included; a task that does an earlier one's
    /// work stands on its measurement and takes none.
    pub fn of_all(&self, tasks: &[Task]) -> f64 {
        let measured = tasks.iter().enumerate().filter(|(i, t)| !tasks[..*i].iter().any(|e| t.same_work(e)));
        let switches = tasks.windows(2).filter(|w| !same_environment(&w[0], &w[1]));
        measured.map(|(_, t)| self.of(t)).sum::<f64>() + ENV_SWITCH_S * switches.count() as f64
    }
}

/// A point without history: its timed phases (warm-up, window, stop, fault downtime) and a set-up's worth.
fn windows_s(t: &Task) -> f64 {
    let phases: f64 = ["warmup_s", "window_s", "stop_s", "down_s"]
        .iter()
        .filter_map(|k| t.knobs.get(*k).and_then(|v| v.as_f64()))
        .sum();
    if phases > 0.0 { phases + SET_UP_S } else { UNKNOWN_POINT_S }
}

/// A task's own set-up around its timed phases: the harness process, topics, the client's start.
const SET_UP_S: f64 = 15.0;

/// What the plan says before anything starts: the budget and the first pass.
pub fn plan_text(first: &[Task], times: &Times, budget: Duration) -> Vec<String> {
    let matrices: BTreeSet<&str> = first.iter().map(|t| t.bench.as_str()).collect();
    vec![
        format!(
            "budget {}: first one rep of the {} points the seeds' claims, the headline ratios and the lab's own \
             findings rest on, in {} matrices, about {:.0} min by the committed runs' times",
            budget_text(budget),
            first.len(),
            matrices.len(),
            times.of_all(first) / 60.0
        ),
        "  the build, the tools and the environment come out of the budget first; what fits is said once they are \
         ready"
            .to_owned(),
    ]
}

/// What fits in the `left_s` seconds the build and the environment left, said before the first task: the first
/// pass or how much of it, and the minutes left for blocks.
pub fn fit_text(first: &[Task], times: &Times, left_s: f64) -> Vec<String> {
    let first_s = times.of_all(first);
    if first_s > left_s {
        let fits = fitting(first, times, left_s);
        vec![format!(
            "{:.0} min left: only about {fits} of the {} first-pass points fit; the {} after them will be left unrun \
             and their claims read \"not run\" (a larger --budget runs them)",
            left_s.max(0.0) / 60.0,
            first.len(),
            first.len() - fits
        )]
    } else {
        vec![format!(
            "{:.0} min left: the first pass (about {:.0} min), then about {:.0} min of blocks (each a fresh \
             environment and one rep of every point of the claims this host can decide), as many as fit",
            left_s / 60.0,
            first_s / 60.0,
            (left_s - first_s) / 60.0
        )]
    }
}

/// What the plan says of the claims this host cannot show, known before anything runs (the seed's mechanism needs
/// more cores than `cores`): no rep pairs are spent on them. Those found CPU-bound by the first pass get none either.
pub fn host_limits_text(claims: &[Claim], matrices: &[Matrix], cores: u32) -> Vec<String> {
    let ours = claims.iter().filter(|c| !c.beside && matrices.iter().any(|m| m.name == c.matrix));
    let short: Vec<String> = ours
        .filter_map(|c| c.needs_cores.as_ref().filter(|n| n.cores > cores).map(|n| format!("{} ({})", c.id, n.cores)))
        .collect();
    let mut lines = Vec::new();
    if !short.is_empty() {
        lines.push(format!(
            "  no blocks for {} claims whose seed mechanism needs more than this host's {cores} cores: {}; they \
             read \"cannot tell here\"",
            short.len(),
            short.join(", ")
        ));
    }
    lines.push(
        "  nor for a claim the first pass finds CPU-bound (either side at nine tenths of the cores or more)".to_owned(),
    );
    lines
}

/// How many of `tasks`, in order, fit in `seconds` (their environment switches included).
pub fn fitting(tasks: &[Task], times: &Times, seconds: f64) -> usize {
    (0..=tasks.len()).take_while(|n| times.of_all(&tasks[..*n]) <= seconds).last().unwrap_or(0)
}

/// The claims a budgeted run measures in blocks after its first pass: those anchored in this run whose two points
/// the first pass measured, that this host can show (not host-limited, not above its ceiling alone) and that are not
/// decided by the runs before this one alone. Fixed once, after the first pass: which claims a block holds never
/// depends on what the blocks measure, so the rule's error rates are those of one look at the end.
pub fn decidable(verdicts: &[ClaimVerdict], claims: &[Claim], run_id: &str, first: &[Task]) -> Vec<String> {
    let mine = verdicts.iter().filter(|v| v.run.as_deref() == Some(run_id) && v.host_limit.is_none());
    mine.filter(|v| matches!(v.verdict, Kind::CannotTell | Kind::Reproduces | Kind::DoesNotReproduce))
        .filter(|v| !(v.above_ceiling && v.kind == [ClaimKind::Size]))
        .filter(|v| claims.iter().find(|c| c.id == v.id).is_some_and(|c| points_of(c, first).is_some()))
        .map(|v| v.id.clone())
        .collect()
}

/// The first-pass tasks of a claim's two points.
fn points_of<'t>(c: &Claim, first: &'t [Task]) -> Option<(&'t Task, &'t Task)> {
    let (num, den) = (c.numerator.as_ref()?, c.denominator.as_ref()?);
    let template =
        |side: &Side| first.iter().find(|t| t.bench == c.matrix && side.is_point(&t.arm, &t.sweep, &t.label));
    Some((template(num)?, template(den)?))
}

/// One block: the next rep of every point of `ids`' claims (a point two claims share once), each marked with the block,
/// in an order shuffled by the block's own seed (the run id and the block number, so a resumed run redraws the same),
/// one environment at a time.
pub fn block_tasks(
    ids: &[String],
    claims: &[Claim],
    first: &[Task],
    written: &[Record],
    run_id: &str,
    block: u32,
) -> Vec<Task> {
    let reps = reps_so_far(written);
    let mut tasks: Vec<Task> = Vec::new();
    for c in ids.iter().filter_map(|id| claims.iter().find(|c| &c.id == id)) {
        let Some((num, den)) = points_of(c, first) else { continue };
        for t in [num, den] {
            if !tasks.iter().any(|have| key(have) == key(t)) {
                let rep = reps.get(&key(t)).copied().unwrap_or(0) + 1;
                tasks.push(Task { rep, block: Some(block), ..t.clone() });
            }
        }
    }
    let seed = run_id.bytes().fold(u64::from(block), |h, b| h.wrapping_mul(0x100_0000_01b3).wrapping_add(u64::from(b)));
    tasks.shuffle(&mut rand::rngs::StdRng::seed_from_u64(seed));
    by_environment(tasks)
}

/// The shuffled tasks one environment at a time, the environments in the order the shuffle first drew them and each
/// one's tasks in the shuffle's order: a fresh broker for every switch cost the first blocked runs a minute or two
/// of each 3.5-minute block, switching between seed 002's Kafka 3.9.1 and 4.1.0 six times.
fn by_environment(mut tasks: Vec<Task>) -> Vec<Task> {
    let mut grouped = Vec::with_capacity(tasks.len());
    while let Some(head) = tasks.first().cloned() {
        let (same, rest): (Vec<Task>, Vec<Task>) = tasks.into_iter().partition(|t| same_environment(t, &head));
        grouped.extend(same);
        tasks = rest;
    }
    grouped
}

fn same_environment(a: &Task, b: &Task) -> bool {
    a.brokers == b.brokers && a.kafka().ok() == b.kafka().ok()
}

/// A budgeted run's goal for the scheduler, after its first pass (block 1): blocks of the claims this host can
/// decide, each in a fresh environment, while a whole block fits in the time left; its stop rule is the clock alone.
pub struct ClaimsDecided<'a> {
    pub clock: Clock,
    pub claims: &'a [Claim],
    pub matrices: &'a [Matrix],
    /// The first pass: each point's task, the template of its blocks' reps.
    pub first: &'a [Task],
    /// The results directory this run writes into: the verdicts pool its earlier runs on this machine.
    pub out_root: &'a Path,
    pub run_id: String,
    /// `--blocks`: the most blocks in all, the first pass included.
    pub max_blocks: Option<u32>,
    /// The claims the blocks measure, fixed after the first pass ([`decidable`]).
    pub blocked: Option<Vec<String>>,
}

impl schedule::Goal for ClaimsDecided<'_> {
    fn phase(&self) -> &'static str {
        "budget"
    }

    fn next(&mut self, n: usize, written: &[Record]) -> Result<Next> {
        let left_s = self.clock.left_s();
        let block = n as u32 + 1;
        let runs = load_results(self.out_root)?;
        let times = Times::preferring(&self.run_id, &runs);
        let mut why = Vec::new();
        if self.blocked.is_none() {
            let verdicts = verdicts_of(&runs, self.claims, self.matrices, &self.run_id);
            let ids = decidable(&verdicts, self.claims, &self.run_id, self.first);
            let one = times.of_all(&block_tasks(&ids, self.claims, self.first, written, &self.run_id, block));
            let fit = ((left_s.max(0.0)) / (one + ENV_SWITCH_S).max(1.0)).floor() as usize;
            let fit = self.max_blocks.map_or(fit, |most| fit.min(most.saturating_sub(1) as usize));
            why.push(format!(
                "blocks of the claims this host can decide ({}; {} in all): each a fresh environment and one rep \
                 of each of their points in a shuffled order, about {} a block; about {fit} more fit in the {:.0} min \
                 left, so about {} in all with the first pass (README's power table says what that many decide)",
                ids.join(", "),
                ids.len(),
                minutes(one + ENV_SWITCH_S),
                left_s / 60.0,
                fit + 1
            ));
            self.blocked = Some(ids);
        }
        if let Some(most) = self.max_blocks.filter(|most| block > *most) {
            return Ok(Next::Done(format!(
                "{:.1} min left; {most} blocks, as --blocks {most} asked",
                left_s.max(0.0) / 60.0
            )));
        }
        let ids = self.blocked.as_deref().unwrap_or_default();
        let tasks = block_tasks(ids, self.claims, self.first, written, &self.run_id, block);
        let cost = times.of_all(&tasks) + ENV_SWITCH_S;
        if ids.is_empty() || cost > left_s {
            return Ok(Next::Done(format!(
                "{:.1} min left; {}",
                left_s.max(0.0) / 60.0,
                if ids.is_empty() {
                    "no claim here that this host can decide".to_owned()
                } else {
                    format!("block {block} (about {}) does not fit", minutes(cost))
                }
            )));
        }
        let title =
            format!("block {block}, {:.1} min left: {} points, a fresh environment", left_s / 60.0, tasks.len());
        Ok(Next::Round { tasks, title, why })
    }
}

/// A budget as it was given: `45 min`, `3 h`, `1 h 30 min`, `2 min 30 s`.
fn budget_text(budget: Duration) -> String {
    let s = budget.as_secs();
    let parts = [(s / 3600, "h"), (s / 60 % 60, "min"), (s % 60, "s")];
    let words: Vec<String> = parts.iter().filter(|(n, _)| *n > 0).map(|(n, unit)| format!("{n} {unit}")).collect();
    words.join(" ")
}

/// `40 s`, `3 min`.
fn minutes(seconds: f64) -> String {
    if seconds < 90.0 { format!("{seconds:.0} s") } else { format!("{:.0} min", seconds / 60.0) }
}

/// The highest rep each point of this run has a record for (a failed rep's number is not used again).
fn reps_so_far(written: &[Record]) -> BTreeMap<PointKey, u32> {
    let mut out: BTreeMap<PointKey, u32> = BTreeMap::new();
    for r in written {
        let e = out.entry(record_key(r)).or_default();
        *e = (*e).max(r.rep);
    }
    out
}

/// The claims of the run's matrices (the seeds', not the lab's own comparisons beside them), judged over the runs of
/// `run_id`'s machine: its verdicts are that machine's.
pub fn verdicts_of(runs: &[Run], claims: &[Claim], matrices: &[Matrix], run_id: &str) -> Vec<ClaimVerdict> {
    // Every claim of these matrices is judged, the lab's own comparisons too: the machine's prior is fitted from all.
    let ours: Vec<Claim> = claims.iter().filter(|c| matrices.iter().any(|m| m.name == c.matrix)).cloned().collect();
    let machine = runs.iter().find(|r| r.id == run_id).map(|r| r.provenance.machine_key());
    let mine: Vec<Run> =
        runs.iter().filter(|r| machine.is_none() || Some(r.provenance.machine_key()) == machine).cloned().collect();
    claims::verdicts(&mine, &ours).into_iter().filter(|v| !v.beside).collect()
}

/// Refuse a budget that cannot hold even the end's reserve.
pub fn check(budget: Duration) -> Result<()> {
    if budget.as_secs_f64() < RESERVE_S * 2.0 {
        bail!("--budget {}s: too short to run anything; give at least {}s", budget.as_secs(), RESERVE_S * 2.0);
    }
    Ok(())
}

/// `--blocks` counts a budgeted run's blocks, the first pass as block 1.
pub fn check_blocks(blocks: Option<u32>, budgeted: bool) -> Result<()> {
    match blocks {
        Some(0) => bail!("--blocks 0: the first pass is block 1, so give 1 or more"),
        Some(n) if !budgeted => bail!(
            "--blocks {n} caps a budgeted run's blocks, and --profile, --reps or --precision run every point \
             instead: drop --blocks, or those flags and give --budget"
        ),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
