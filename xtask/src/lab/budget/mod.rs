//! The time-budgeted run, `lab run`'s default (`--budget 45m`): first one rep of every point a seed's claim
//! (harness/claims.toml) or a headline ratio (site/headlines.toml) rests on, and each matrix's default point, so
//! every matrix is exercised and verified; then, while the budget lasts, the reps that bring an undecided claim
//! to a verdict at the least cost in minutes. A point's cost is what it took in the committed runs. The plan
//! says before anything starts what fits and what will be left.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use streamlab_record::Record;
use streamlab_record::stats::equivalence;

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

/// What bringing up another environment costs (a broker or a cluster, the calibration is not repeated).
const ENV_SWITCH_S: f64 = 40.0;

/// A point with no history and no timed phases to go by.
const UNKNOWN_POINT_S: f64 = 60.0;

/// Time kept back for the end: the last calibration, the environment brought down, the verdicts and the site.
const RESERVE_S: f64 = 60.0;

/// Rep pairs a claim's run needs before its pairs' spread says anything (two give one degree of freedom).
const FIRST_PAIRS: usize = 3;

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
        for r in runs.iter().flat_map(|run| run.matrices.values()).flat_map(|f| &f.records) {
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

    /// Seconds one rep of `t` is expected to take: its point's history, its matrix's, else its windows.
    pub fn of(&self, t: &Task) -> f64 {
        self.by_point.get(&key(t)).or(self.by_matrix.get(&t.bench)).copied().unwrap_or_else(|| windows_s(t))
    }

    /// Seconds the tasks take in this order, environment switches included.
    pub fn of_all(&self, tasks: &[Task]) -> f64 {
        let switches =
            tasks.windows(2).filter(|w| w[0].brokers != w[1].brokers || w[0].kafka().ok() != w[1].kafka().ok());
        tasks.iter().map(|t| self.of(t)).sum::<f64>() + ENV_SWITCH_S * switches.count() as f64
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

/// What the plan says before anything starts: the first pass, what of it fits, and what the rest is for.
pub fn plan_text(first: &[Task], times: &Times, budget: Duration) -> Vec<String> {
    let budget_s = budget.as_secs_f64();
    let first_s = times.of_all(first);
    let matrices: BTreeSet<&str> = first.iter().map(|t| t.bench.as_str()).collect();
    let mut lines = vec![format!(
        "budget {}: first one rep of the {} points the seeds' claims, the headline ratios and the lab's own findings \
         rest on, in {} matrices, about {:.0} min by the committed runs' times",
        budget_text(budget),
        first.len(),
        matrices.len(),
        first_s / 60.0
    )];
    if first_s + RESERVE_S > budget_s {
        let fits = fitting(first, times, budget_s - RESERVE_S);
        lines.push(format!(
            "  only about {fits} of them fit; the {} after them will be left unrun and their claims read \"not run\" \
             (a larger --budget runs them)",
            first.len() - fits
        ));
    } else {
        lines.push(format!(
            "  then about {:.0} min of added rep pairs, each to the undecided claim a rep brings nearest its verdict; \
             a claim only more runs could decide gets none",
            (budget_s - RESERVE_S - first_s) / 60.0
        ));
    }
    lines
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
            "  no added rep pairs for {} claims whose seed mechanism needs more than this host's {cores} cores: {}; \
             they read \"cannot tell here\"",
            short.len(),
            short.join(", ")
        ));
    }
    lines.push(
        "  nor for a claim the first pass finds CPU-bound (either side over nine tenths of the cores)".to_owned(),
    );
    lines
}

/// How many of `tasks`, in order, fit in `seconds` (their environment switches included).
pub fn fitting(tasks: &[Task], times: &Times, seconds: f64) -> usize {
    (0..=tasks.len()).take_while(|n| times.of_all(&tasks[..*n]) <= seconds).last().unwrap_or(0)
}

/// The next reps of the added rounds: the undecided claim (anchored in this run) whose verdict a batch of rep pairs
/// here can reach at the least cost, with why and the claim's id; `None` when no claim is within reach of the time
/// left. A claim without an interval yet gets the pairs one needs first ([`FIRST_PAIRS`]); then, once, the batch
/// [`equivalence::pairs_to_decide`] says, run whole before it is judged again (the calibration's two looks).
/// `batched` are the claims that had theirs.
#[allow(clippy::too_many_arguments)]
pub fn next_reps(
    verdicts: &[ClaimVerdict],
    claims: &[Claim],
    run_id: &str,
    written: &[Record],
    first: &[Task],
    times: &Times,
    left_s: f64,
    batched: &BTreeSet<String>,
) -> Option<Batch> {
    let reps = reps_so_far(written);
    let mut best: Option<(f64, Batch)> = None;
    let undecided = verdicts.iter().filter(|v| v.verdict == Kind::CannotTell && v.run.as_deref() == Some(run_id));
    for v in undecided.filter(|v| !batched.contains(&v.id) && v.host_limit.is_none()) {
        let Some(c) = claims.iter().find(|c| c.id == v.id) else { continue };
        let (Some(num), Some(den)) = (&c.numerator, &c.denominator) else { continue };
        let template =
            |side: &Side| first.iter().find(|t| t.bench == c.matrix && side.is_point(&t.arm, &t.sweep, &t.label));
        let (Some(num_t), Some(den_t)) = (template(num), template(den)) else { continue };
        let (n_num, n_den) = (reps.get(&key(num_t)).copied().unwrap_or(0), reps.get(&key(den_t)).copied().unwrap_or(0));
        let here = n_num.min(n_den) as usize;
        let Some(more) = pairs_to_decide(v, c, here) else { continue };
        let tasks = pair_tasks((num_t, n_num), (den_t, n_den), here + more);
        let cost = times.of_all(&tasks);
        if cost > left_s {
            continue;
        }
        if best.as_ref().is_none_or(|(b, _)| cost < *b) {
            let why =
                format!("{}: {more} more rep pairs here (about {}) may decide it; it has {here}", c.id, minutes(cost));
            best = Some((cost, Batch { tasks, why, claim: c.id.clone(), decisive: v.pooled.is_some() }));
        }
    }
    best.map(|(_, batch)| batch)
}

/// A budgeted run's goal for the scheduler, after its first pass: every claim decided, one claim's rep pairs a
/// round, each to the undecided claim they reach at the least cost; its stop rule is the clock.
pub struct ClaimsDecided<'a> {
    pub clock: Clock,
    pub claims: &'a [Claim],
    pub matrices: &'a [Matrix],
    /// The first pass: each point's task, the template of its added reps.
    pub first: &'a [Task],
    /// The results directory this run writes into: the verdicts pool its earlier runs on this machine.
    pub out_root: &'a Path,
    pub run_id: String,
    /// The claims that had their decisive batch in this run (the calibration's two looks).
    pub batched: BTreeSet<String>,
}

impl schedule::Goal for ClaimsDecided<'_> {
    fn phase(&self) -> &'static str {
        "budget"
    }

    fn next(&mut self, n: usize, written: &[Record]) -> Result<Next> {
        let runs = load_results(self.out_root)?;
        let verdicts = verdicts_of(&runs, self.claims, self.matrices, &self.run_id);
        let left_s = self.clock.left_s();
        // What the points took so far, this run's reps included.
        let times = Times::from_runs(&runs);
        let next = next_reps(&verdicts, self.claims, &self.run_id, written, self.first, &times, left_s, &self.batched);
        let Some(batch) = next else {
            let undecided = verdicts.iter().filter(|v| v.verdict == Kind::CannotTell).count();
            return Ok(Next::Done(format!(
                "{:.1} min left; no rep pair here would bring any of the {undecided} claims this host cannot tell yet \
                 to a verdict within it",
                left_s.max(0.0) / 60.0
            )));
        };
        if batch.decisive {
            self.batched.insert(batch.claim.clone());
        }
        let title = format!("round {n}, {:.1} min left: {}", left_s / 60.0, batch.why);
        Ok(Next::Round { tasks: batch.tasks, title, why: Vec::new() })
    }
}

/// One claim's added rep pairs.
pub struct Batch {
    pub tasks: Vec<Task>,
    pub why: String,
    pub claim: String,
    /// The batch that may decide the claim (not the pairs that first give it an interval): its last in this run.
    pub decisive: bool,
}

/// The tasks that bring both sides to `pairs` reps, rep by rep (the lagging side catches up first: a pair is the
/// same rep of both sides), the two sides interleaved.
fn pair_tasks((num, n_num): (&Task, u32), (den, n_den): (&Task, u32), pairs: usize) -> Vec<Task> {
    let mut tasks = Vec::new();
    for rep in n_num.min(n_den) + 1..=pairs as u32 {
        for (t, n) in [(num, n_num), (den, n_den)] {
            if rep > n {
                tasks.push(Task { rep, ..t.clone() });
            }
        }
    }
    tasks
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

/// How many more rep pairs in this run the claim gets: without an interval yet, those that give it one
/// ([`FIRST_PAIRS`] in this run); with one, what [`equivalence::pairs_to_decide`] says would bring it clear of the edge
/// nearest its estimate. `None` if no number of them would (the run-to-run part alone is wider: only more runs
/// decide it), or the claim has no edge a rep can move it off.
fn pairs_to_decide(v: &ClaimVerdict, c: &Claim, here: usize) -> Option<usize> {
    let only_size = v.parts.iter().filter(|p| p.verdict == Kind::CannotTell).all(|p| p.kind == ClaimKind::Size);
    if v.above_ceiling && only_size {
        return None;
    }
    match &v.pooled {
        None => (here < FIRST_PAIRS).then(|| FIRST_PAIRS - here),
        Some(p) => equivalence::pairs_to_decide(p, here, &edges(v, c)),
    }
}

/// The values an undecided part of the claim is judged against: the band's edges, 1 for a direction.
fn edges(v: &ClaimVerdict, c: &Claim) -> Vec<f64> {
    let mut out = Vec::new();
    for part in v.parts.iter().filter(|p| p.verdict == Kind::CannotTell) {
        match part.kind {
            // Above this host's ceiling a size stays untold whatever the reps.
            ClaimKind::Size if v.above_ceiling => {}
            ClaimKind::Size => out.extend(v.band.iter().flatten().copied()),
            ClaimKind::Parity => out.extend(equivalence::band(1.0, c.tolerance)),
            ClaimKind::Direction => out.push(match c.direction {
                Some(equivalence::Direction::NotLower) => 1.0 / (1.0 + c.tolerance),
                _ => 1.0,
            }),
            // A shape's steps are many ratios: reps of its points come with the first pass only.
            ClaimKind::Shape => {}
        }
    }
    out
}

/// The claims of the run's matrices (the seeds', not the lab's own comparisons beside them), judged over the runs of
/// `run_id`'s machine: its verdicts are that machine's.
pub fn verdicts_of(runs: &[Run], claims: &[Claim], matrices: &[Matrix], run_id: &str) -> Vec<ClaimVerdict> {
    let ours: Vec<Claim> =
        claims.iter().filter(|c| !c.beside && matrices.iter().any(|m| m.name == c.matrix)).cloned().collect();
    let machine = runs.iter().find(|r| r.id == run_id).map(|r| r.provenance.machine_key());
    let mine: Vec<Run> =
        runs.iter().filter(|r| machine.is_none() || Some(r.provenance.machine_key()) == machine).cloned().collect();
    claims::verdicts(&mine, &ours)
}

/// Refuse a budget that cannot hold even the end's reserve.
pub fn check(budget: Duration) -> Result<()> {
    if budget.as_secs_f64() < RESERVE_S * 2.0 {
        bail!("--budget {}s: too short to run anything; give at least {}s", budget.as_secs(), RESERVE_S * 2.0);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
