//! The precision target (`--precision`, or each profile's): after the planned reps, rounds of one more rep of
//! every point whose median is not yet known within the target, or that is a side of a headline ratio whose
//! per-rep-pair median is not, until it is or the point's budget of reps and minutes cannot reach the next
//! count of reps whose interval is narrower (6, then 9, 12, ...: a seventh or eighth rep cannot narrow it). Each round
//! runs its points in the plan's order, so the added reps stay interleaved across arms as the first ones are
//! (Kalibera and Jones: spend reps where the variance is).

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use streamlab_record::Record;
use streamlab_record::run_spec::{PrecisionChoice, RunSpec};
use streamlab_record::stats::{self, precision::precision_text};

use super::matrix::Matrix;
use super::plan::Task;
use super::schedule::{self, Next};
use crate::results::config::SiteConfig;
use crate::results::model::set_apart;
use crate::results::parity::{self, Contract, Verdict};

/// What one matrix aims for in this run, and what each of its points may spend.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Goal {
    /// A fraction of the median: 0.05 for ±5%.
    pub target: f64,
    pub max_reps: u32,
    pub max_minutes: f64,
}

/// Each matrix's goal for this run (none for a matrix without one): `--precision` if given, else its
/// profile's target, within its profile's budget. A target asked for where the profile sets no budget is
/// refused, naming the file, before anything is provisioned.
pub fn goals(matrices: &[Matrix], spec: &RunSpec) -> Result<BTreeMap<String, Goal>> {
    let mut out = BTreeMap::new();
    for m in matrices {
        let profile = &m.profiles[&spec.profile];
        let target = match spec.precision {
            Some(PrecisionChoice::Off) => None,
            Some(PrecisionChoice::Target(t)) => Some(t),
            None => profile.precision.and_then(|b| b.target),
        };
        let Some(target) = target else { continue };
        let Some(budget) = profile.precision else {
            bail!(
                "--precision {}: profile {} of {} sets no budget for it (profiles.{}.precision = {{ max_reps = .., \
                 max_minutes = .. }})",
                precision_text(target).trim_start_matches('±'),
                spec.profile,
                m.file.display(),
                spec.profile
            );
        };
        let first_reps = spec.reps.unwrap_or(profile.reps);
        out.insert(
            m.name.clone(),
            Goal { target, max_reps: budget.max_reps.max(first_reps), max_minutes: budget.max_minutes },
        );
    }
    Ok(out)
}

/// One point of the plan: (matrix, arm, sweep, label).
pub(crate) type PointKey = (String, String, String, String);

pub(crate) fn key_of_task(t: &Task) -> PointKey {
    (t.bench.clone(), t.arm.clone(), t.sweep.clone(), t.label.clone())
}

pub(crate) fn key_of_record(r: &Record) -> PointKey {
    let sweep = r.variant.sweeps.first().cloned().unwrap_or_default();
    (r.bench.clone(), r.arm.clone(), sweep, r.variant.label.clone())
}

/// What a point has so far.
struct PointSoFar<'a> {
    template: &'a Task,
    /// The highest rep with a record.
    reps: u32,
    /// Task time spent on it, in seconds.
    spent_s: f64,
    /// The reps that enter its median, by rep.
    drawn: BTreeMap<u32, &'a Record>,
    /// Its records, and how many of them failed or were withdrawn.
    records: u32,
    failed: u32,
}

impl PointSoFar<'_> {
    /// Half or more of its reps failed: more of the same would fail too, and say nothing about noise. A rare
    /// failure (a stalled request in one rep of ten) does not stop a point.
    fn mostly_failing(&self) -> bool {
        2 * self.failed >= self.records
    }
}

/// The precision target's goal for the scheduler: every point, headline ratio and claim within its matrix's target;
/// its stop rule is each point's budget of reps and minutes.
pub struct PrecisionTarget<'a> {
    pub goals: &'a BTreeMap<String, Goal>,
    pub planned: &'a [Task],
    pub matrices: &'a [Matrix],
    pub cfg: &'a SiteConfig,
}

impl schedule::Goal for PrecisionTarget<'_> {
    fn phase(&self) -> &'static str {
        "precision"
    }

    fn next(&mut self, n: usize, written: &[Record]) -> Result<Next> {
        let round = next_round(self.goals, self.planned, written, self.matrices, self.cfg);
        if round.tasks.is_empty() {
            return Ok(Next::Done(String::new()));
        }
        let title = format!("round {n}: one more rep of {} points short of their target", round.tasks.len());
        Ok(Next::Round { tasks: round.tasks, title, why: round.why })
    }
}

/// A round of added reps: the tasks, and one line per point saying why it gets one.
#[derive(Debug, Default)]
pub struct Round {
    pub tasks: Vec<Task>,
    pub why: Vec<String>,
}

/// The next round: one more rep of every point (in plan order) whose goal is not met and whose budget allows
/// another rep. Empty when every goal is met or every budget is spent.
pub fn next_round(
    goals: &BTreeMap<String, Goal>,
    planned: &[Task],
    written: &[Record],
    matrices: &[Matrix],
    cfg: &SiteConfig,
) -> Round {
    let points = so_far(goals, planned, written, cfg);
    let mut wanted: BTreeMap<PointKey, Want> = BTreeMap::new();
    for (key, p) in &points {
        let goal = &goals[&key.0];
        let metric = headline_metric(cfg, &key.0);
        let values: Vec<f64> = p.drawn.values().map(|r| r.measurement.metrics[&metric].value).collect();
        if let Some(why) = short_of(&values, goal.target) {
            wanted.insert(key.clone(), Want::new(format!("median {why}"), values.len()));
        }
    }
    for m in matrices.iter().filter(|m| goals.contains_key(&m.name)) {
        let target = goals[&m.name].target;
        // A claim's two points pair rep by rep as a headline ratio's do: a rep added to one side (say, to replace
        // one set apart for foreign load) is added to the other too, or the pairs fall short.
        let unmet = unmet_ratios(m, target, &points, cfg).into_iter().chain(unmet_claims(m, target, &points, cfg));
        for (num, den, want) in unmet {
            for side in [num, den] {
                // The side that needs the fewest more reps to narrow an interval decides whether one is worth it.
                match wanted.get(&side) {
                    Some(w) if w.more <= want.more => {}
                    _ => {
                        wanted.insert(side, want.clone());
                    }
                }
            }
        }
    }
    let mut round = Round::default();
    let mut seen: Vec<PointKey> = Vec::new();
    for t in planned {
        let key = key_of_task(t);
        if seen.contains(&key) {
            continue;
        }
        seen.push(key.clone());
        let (Some(p), Some(want)) = (points.get(&key), wanted.get(&key)) else { continue };
        let goal = &goals[&key.0];
        if p.mostly_failing() || !within_budget(p, goal, want.more) {
            continue;
        }
        round.tasks.push(Task { rep: p.reps + 1, ..p.template.clone() });
        round.why.push(format!("{} {} [{} {}]: {}", key.0, key.1, key.2, key.3, want.why));
    }
    round
}

/// Every point of a matrix with a goal that ran (a not-run point has nothing to add reps to).
fn so_far<'a>(
    goals: &BTreeMap<String, Goal>,
    planned: &'a [Task],
    written: &'a [Record],
    cfg: &SiteConfig,
) -> BTreeMap<PointKey, PointSoFar<'a>> {
    let mut points: BTreeMap<PointKey, PointSoFar<'a>> = BTreeMap::new();
    for t in planned.iter().filter(|t| t.not_run.is_none() && goals.contains_key(&t.bench)) {
        points.entry(key_of_task(t)).or_insert(PointSoFar {
            template: t,
            reps: 0,
            spent_s: 0.0,
            drawn: BTreeMap::new(),
            records: 0,
            failed: 0,
        });
    }
    for r in written {
        let key = key_of_record(r);
        let Some(p) = points.get_mut(&key) else { continue };
        let metric_ok = |m: &str| r.measurement.metrics.get(m).is_some_and(|v| v.value.is_finite());
        p.spent_s += r.conditions.as_ref().map_or(0.0, |c| c.wall_s);
        p.reps = p.reps.max(r.rep);
        p.records += 1;
        p.failed += u32::from(!r.is_publishable());
        if set_apart(r).is_none() && metric_ok(&headline_metric(cfg, &r.bench)) {
            p.drawn.insert(r.rep, r);
        }
    }
    // A point that has never been measured is the plan's business, not the precision's.
    points.retain(|_, p| p.reps > 0);
    points
}

/// Why a point gets another rep, and how many more it needs before its interval can narrow.
#[derive(Debug, Clone)]
struct Want {
    why: String,
    more: u32,
}

impl Want {
    /// For values of `n` samples: reps short of six give no interval, and between the counts at which the
    /// interval moves one order statistic inward (6, 9, 12, ...) a rep cannot narrow it.
    fn new(why: String, n: usize) -> Self {
        let more = stats::precision::samples_for_narrower(n) - n;
        Want { why, more: u32::try_from(more).unwrap_or(u32::MAX) }
    }
}

/// Whether the `more` reps that could narrow the point's interval fit: under the rep budget, and their expected
/// time (the point's mean so far) within the minutes. A rep that cannot reach them buys no precision.
fn within_budget(p: &PointSoFar, goal: &Goal, more: u32) -> bool {
    let mean_s = p.spent_s / f64::from(p.reps.max(1));
    p.reps.saturating_add(more) <= goal.max_reps && p.spent_s + f64::from(more) * mean_s <= goal.max_minutes * 60.0
}

/// Why `values` do not yet meet `target`, or `None` if they do.
fn short_of(values: &[f64], target: f64) -> Option<String> {
    let Some(s) = stats::summarize(values) else { return Some("has no measured rep".into()) };
    match s.precision() {
        Some(p) if p <= target => None,
        Some(p) => Some(format!("known to {}, target {}", precision_text(p), precision_text(target))),
        None if s.n < stats::precision::MIN_SAMPLES => {
            Some(format!("has {} reps, an interval needs {}", s.n, stats::precision::MIN_SAMPLES))
        }
        None => Some("has no relative precision (its median is zero)".into()),
    }
}

/// The headline ratios of matrix `m` whose per-rep-pair median misses `target`: (numerator point, denominator
/// point, why and how many more pairs it needs). Pairs are the same rep of both sides, under the ratio's parity contract, as the site divides
/// them; a ratio whose contract no pair satisfies has no number to make precise.
fn unmet_ratios(
    m: &Matrix,
    target: f64,
    points: &BTreeMap<PointKey, PointSoFar>,
    cfg: &SiteConfig,
) -> Vec<(PointKey, PointKey, Want)> {
    let bench = m.name.as_str();
    let Some(headline) = cfg.headline(bench) else { return Vec::new() };
    let mut out = Vec::new();
    for spec in &headline.ratios {
        let metric = spec.metric.clone().unwrap_or_else(|| headline_metric(cfg, bench));
        let contract = Contract::of(spec);
        // An arms-only sweep has one point per arm, each labelled with its arm's title: the two sides pair up
        // whatever their labels; a swept knob's points pair up by label.
        let arms_only = m.sweeps.iter().any(|s| s.name == spec.sweep && s.knob.is_none());
        for ((b, arm, sweep, label), num) in points {
            if b != bench || *arm != spec.numerator || *sweep != spec.sweep {
                continue;
            }
            let Some((den_key, den)) = points.iter().find(|((b2, arm2, sweep2, label2), _)| {
                b2 == b && *arm2 == spec.denominator && sweep2 == sweep && (arms_only || label2 == label)
            }) else {
                continue;
            };
            let den_key = den_key.clone();
            if let Some(want) = short_pairs(num, den, &contract, &metric, target, &format!("ratio {}", spec.id)) {
                let num_key = (b.clone(), arm.clone(), sweep.clone(), label.clone());
                out.push((num_key, den_key, want));
            }
        }
    }
    out
}

/// The seeds' claims on matrix `m` (harness/claims.toml) whose per-rep-pair median misses `target`, as
/// [`unmet_ratios`] gives the headline ratios'.
fn unmet_claims(
    m: &Matrix,
    target: f64,
    points: &BTreeMap<PointKey, PointSoFar>,
    cfg: &SiteConfig,
) -> Vec<(PointKey, PointKey, Want)> {
    let mut out = Vec::new();
    for c in cfg.claims.iter().filter(|c| c.matrix == m.name) {
        let (Some(num), Some(den)) = (&c.numerator, &c.denominator) else { continue };
        let find = |side: &crate::results::declared::Side| {
            points.iter().find(|((b, arm, sweep, label), _)| *b == m.name && side.is_point(arm, sweep, label))
        };
        let (Some((num_key, num_point)), Some((den_key, den_point))) = (find(num), find(den)) else { continue };
        let contract = Contract {
            differs: c.differs.clone(),
            tolerance: crate::results::config::default_tolerances(),
            equal_knobs: num.sweep == den.sweep,
        };
        let what = format!("claim {}", c.id);
        if let Some(want) = short_pairs(num_point, den_point, &contract, &c.metric, target, &what) {
            out.push((num_key.clone(), den_key.clone(), want));
        }
    }
    out
}

/// Why the per-rep-pair ratios of two points (the same rep of both, pairs under `contract`) miss `target`, and
/// how many more pairs could narrow them; `None` when they meet it or no pair holds.
fn short_pairs(
    num: &PointSoFar,
    den: &PointSoFar,
    contract: &Contract,
    metric: &str,
    target: f64,
    what: &str,
) -> Option<Want> {
    let ratios: Vec<f64> = num
        .drawn
        .iter()
        .filter_map(|(rep, x)| Some((*x, *den.drawn.get(rep)?)))
        .filter(|(x, y)| matches!(parity::check(contract, x, y), Verdict::Holds { .. }))
        .filter_map(|(x, y)| {
            let (a, b) = (x.measurement.metrics.get(metric)?, y.measurement.metrics.get(metric)?);
            stats::ratio(a.value, b.value)
        })
        .collect();
    if ratios.is_empty() {
        return None;
    }
    short_of(&ratios, target).map(|why| Want::new(format!("{what} {why}"), ratios.len()))
}

/// The metric a matrix's precision is judged on: its headline metric (site/headlines.toml), else records/s.
pub fn headline_metric(cfg: &SiteConfig, bench: &str) -> String {
    cfg.headline(bench).and_then(|h| h.metric.clone()).unwrap_or_else(|| "records_per_s".into())
}

#[cfg(test)]
mod tests {
    use streamlab_record::Status;
    use streamlab_record::run_spec::Profile;

    use super::*;
    use crate::lab::plan::{self, PlanOptions};
    use crate::results::fixtures;

    /// The kafka_sink matrix's `mode` sweep (raw and framework, one point each) at the standard profile.
    fn setup() -> (Vec<Matrix>, Vec<Task>, SiteConfig) {
        let matrices: Vec<Matrix> = super::super::matrix::load_all(&crate::paths::matrices_dir())
            .unwrap()
            .into_iter()
            .filter(|m| m.name == "kafka_sink")
            .collect();
        let opts = PlanOptions { profile: Profile::Standard, reps: None, sets: Vec::new() };
        let tasks = plan::expand(&matrices[0], &opts).unwrap().into_iter().filter(|t| t.sweep == "mode").collect();
        (matrices, tasks, SiteConfig::builtin().unwrap())
    }

    fn goal(target: f64, max_reps: u32, max_minutes: f64) -> BTreeMap<String, Goal> {
        BTreeMap::from([("kafka_sink".to_owned(), Goal { target, max_reps, max_minutes })])
    }

    /// One verified 12 s rep of `arm` at the mode sweep per value, reps 1, 2, ...
    fn reps(tasks: &[Task], arm: &str, values: &[f64]) -> Vec<Record> {
        let label = &tasks.iter().find(|t| t.arm == arm).unwrap().label;
        values
            .iter()
            .zip(1..)
            .map(|(v, rep)| {
                let mut r = fixtures::record("run", arm, label, &["mode"], arm == "raw", rep, *v);
                r.conditions = Some(fixtures::conditions(false, None));
                r
            })
            .collect()
    }

    const TIGHT: [f64; 6] = [1000.0, 1004.0, 998.0, 1002.0, 1001.0, 999.0];
    const NOISY: [f64; 6] = [1000.0, 1300.0, 800.0, 1100.0, 950.0, 1200.0];

    #[test]
    fn three_reps_have_no_interval_so_every_point_gets_another_in_plan_order() {
        let (matrices, tasks, cfg) = setup();
        let written = [reps(&tasks, "raw", &TIGHT[..3]), reps(&tasks, "framework", &TIGHT[..3])].concat();
        let round = next_round(&goal(0.05, 10, 10.0), &tasks, &written, &matrices, &cfg);
        let planned: Vec<(&str, u32)> = round.tasks.iter().map(|t| (t.arm.as_str(), t.rep)).collect();
        assert_eq!(planned, [("raw", 4), ("framework", 4)]);
        assert!(round.why[0].contains("median has 3 reps, an interval needs 6"), "{:?}", round.why);
        // The added rep is the planned point's task, rep aside.
        assert_eq!(Task { rep: 1, ..round.tasks[0].clone() }, tasks[0]);
    }

    #[test]
    fn points_and_ratios_within_the_target_get_no_more_reps() {
        let (matrices, tasks, cfg) = setup();
        let written = [reps(&tasks, "raw", &TIGHT), reps(&tasks, "framework", &TIGHT)].concat();
        let round = next_round(&goal(0.05, 10, 10.0), &tasks, &written, &matrices, &cfg);
        assert!(round.tasks.is_empty(), "{:?}", round.why);
    }

    #[test]
    fn a_noisy_side_pulls_the_other_side_of_its_ratio_along_until_the_budget_is_spent() {
        let (matrices, tasks, cfg) = setup();
        let written = [reps(&tasks, "raw", &TIGHT), reps(&tasks, "framework", &NOISY)].concat();
        let round = next_round(&goal(0.05, 10, 10.0), &tasks, &written, &matrices, &cfg);
        assert_eq!(
            round.tasks.iter().map(|t| (t.arm.as_str(), t.rep)).collect::<Vec<_>>(),
            [("raw", 7), ("framework", 7)]
        );
        assert!(round.why[0].contains("ratio framework-over-raw known to"), "raw is precise itself: {:?}", round.why);
        assert!(round.why[1].contains("median known to ±30.0%, target ±5.0%"), "{:?}", round.why);
        // Six reps of 12 s each: the nine a narrower interval needs do not fit in 1.7 minutes, nor in a budget of
        // eight reps (seven and eight still give [min, max]); they fit in 1.8 minutes.
        assert!(next_round(&goal(0.05, 10, 1.7), &tasks, &written, &matrices, &cfg).tasks.is_empty());
        assert!(next_round(&goal(0.05, 8, 10.0), &tasks, &written, &matrices, &cfg).tasks.is_empty());
        assert_eq!(next_round(&goal(0.05, 9, 1.8), &tasks, &written, &matrices, &cfg).tasks.len(), 2);
    }

    #[test]
    fn a_point_gets_no_rep_when_its_budget_cannot_reach_the_six_an_interval_needs() {
        let (matrices, tasks, cfg) = setup();
        let written = [reps(&tasks, "raw", &NOISY[..3]), reps(&tasks, "framework", &NOISY[..3])].concat();
        assert!(next_round(&goal(0.05, 5, 10.0), &tasks, &written, &matrices, &cfg).tasks.is_empty());
        // Three reps took 36 s: three more need 36 s again, so 1.25 minutes is enough and 1.1 is not.
        assert!(next_round(&goal(0.05, 10, 1.1), &tasks, &written, &matrices, &cfg).tasks.is_empty());
        assert_eq!(next_round(&goal(0.05, 10, 1.25), &tasks, &written, &matrices, &cfg).tasks.len(), 2);
    }

    #[test]
    fn a_point_that_mostly_fails_gets_no_more_and_one_failed_rep_does_not_stop_it() {
        let (matrices, tasks, cfg) = setup();
        let mut written = [reps(&tasks, "raw", &TIGHT[..3]), reps(&tasks, "framework", &TIGHT[..3])].concat();
        // framework's rep 3 failed: one of three.
        written[5].status = Status::Failed;
        let round = next_round(&goal(0.05, 10, 10.0), &tasks, &written, &matrices, &cfg);
        assert_eq!(
            round.tasks.iter().map(|t| (t.arm.as_str(), t.rep)).collect::<Vec<_>>(),
            [("raw", 4), ("framework", 4)]
        );
        // Its rep 2 too: two of three.
        written[4].status = Status::Failed;
        let round = next_round(&goal(0.05, 10, 10.0), &tasks, &written, &matrices, &cfg);
        assert_eq!(round.tasks.iter().map(|t| t.arm.as_str()).collect::<Vec<_>>(), ["raw"]);
    }

    #[test]
    fn a_rep_added_to_one_point_of_a_claim_is_added_to_the_other_so_the_pairs_do_not_fall_short() {
        // 000's batch claim divides framework at 500k rows by framework at 10k (no headline ratio does).
        let (matrices, _, cfg) = setup();
        let opts = PlanOptions { profile: Profile::Standard, reps: None, sets: Vec::new() };
        let tasks: Vec<Task> = plan::expand(&matrices[0], &opts)
            .unwrap()
            .into_iter()
            .filter(|t| t.sweep == "batch_max_rows" && (t.label == "500k" || t.label == "10k"))
            .collect();
        let point = |label: &str, values: &[f64]| -> Vec<Record> {
            values
                .iter()
                .zip(1..)
                .map(|(v, rep)| {
                    let mut r = fixtures::record("run", "framework", label, &["batch_max_rows"], false, rep, *v);
                    r.conditions = Some(fixtures::conditions(false, None));
                    r
                })
                .collect()
        };
        let mut written = [point("500k", &TIGHT), point("10k", &TIGHT)].concat();
        // 10k's rep 3 ran under foreign load: set apart, it leaves 10k five reps and the claim five pairs.
        written[8].conditions = Some(fixtures::conditions(true, None));
        let round = next_round(&goal(0.05, 10, 10.0), &tasks, &written, &matrices, &cfg);
        let mut planned: Vec<(&str, u32)> = round.tasks.iter().map(|t| (t.label.as_str(), t.rep)).collect();
        planned.sort();
        assert_eq!(planned, [("10k", 7), ("500k", 7)], "{:?}", round.why);
        assert!(round.why.iter().any(|w| w.contains("claim 000-batch-500k-over-10k")), "{:?}", round.why);
    }

    #[test]
    fn the_flag_overrides_the_profile_and_a_profile_without_a_budget_refuses_it() {
        let (mut matrices, _, _) = setup();
        let spec = |precision: Option<PrecisionChoice>| RunSpec {
            precision,
            ..crate::lab::reproduce::tests::try_parse_run_args(&["run", "--matrix", "kafka_sink"]).unwrap().spec()
        };
        let standard = matrices[0].profiles[&Profile::Standard].precision.unwrap();
        let by_profile = goals(&matrices, &spec(None)).unwrap()["kafka_sink"];
        assert_eq!((Some(by_profile.target), by_profile.max_reps), (standard.target, standard.max_reps));
        assert_eq!(goals(&matrices, &spec(Some(PrecisionChoice::Target(0.02)))).unwrap()["kafka_sink"].target, 0.02);
        assert!(goals(&matrices, &spec(Some(PrecisionChoice::Off))).unwrap().is_empty());
        matrices[0].profiles.get_mut(&Profile::Standard).unwrap().precision = None;
        let err = goals(&matrices, &spec(Some(PrecisionChoice::Target(0.05)))).unwrap_err().to_string();
        assert!(err.contains("--precision 5.0%: profile standard of") && err.contains("kafka_sink.toml"), "{err}");
    }
}
