//! Judging one claim: the comparable runs it pools, its pooled interval, each of its kinds against it, and
//! what this host can show (its ceiling, whether either side saturated its cores).

use super::pairs::{pair_reps, ratios, records_at, values};
use super::why::{beside_why, interval_text, per_cpu_text, why};
use super::*;

/// The runs a claim's verdict pools: those that measured both its points on the newest such run's hardware
/// with the same configuration on both sides, oldest first; the newest (one that ran the matrix as defined
/// before one whose knobs `--set` changed) is the anchor. `None` when no run measured both.
pub(super) fn comparable_runs<'r>(c: &Claim, runs: &'r [Run], num: &Side, den: &Side) -> Option<Vec<&'r Run>> {
    let has = |run: &Run, side: &Side| !records_at(run, &c.matrix, side).is_empty();
    let candidates: Vec<&Run> = runs.iter().rev().filter(|r| has(r, num) && has(r, den)).collect();
    let anchor = candidates.iter().find(|r| !r.changes_knobs()).or(candidates.first()).copied()?;
    let config = |run: &Run| {
        [num, den].map(|side| {
            let records = records_at(run, &c.matrix, side);
            drawn_by_rep(&records, &c.metric).values().next().map(|r| config_of(r))
        })
    };
    let (machine, anchor_config) = (anchor.provenance.machine_key(), config(anchor));
    let mut pooled: Vec<&Run> = candidates
        .into_iter()
        .filter(|r| {
            std::ptr::eq(*r, anchor)
                || (!r.changes_knobs() && r.provenance.machine_key() == machine && config(r) == anchor_config)
        })
        .collect();
    pooled.reverse();
    Some(pooled)
}

/// The verdict and its sentence; fills in `v`'s figures and runs on the way.
pub(super) fn judge(c: &Claim, runs: &[Run], priors: &Priors, v: &mut ClaimVerdict) -> (Kind, String) {
    let (Some(num), Some(den)) = (&c.numerator, &c.denominator) else {
        return (Kind::NotRun, format!("The lab has no point for it: {}.", c.unmapped.as_deref().unwrap_or("")));
    };
    let Some(pool) = comparable_runs(c, runs, num, den) else {
        return (Kind::NotRun, format!("No committed run measured both {} and {}.", num.describe(), den.describe()));
    };
    let anchor = *pool.last().expect("the anchor is pooled");
    v.run = Some(anchor.id.clone());
    v.machine = Some(anchor.provenance.machine_key());
    let prior = &priors.of(&anchor.provenance.machine_key());
    let (num_records, den_records) = (records_at(anchor, &c.matrix, num), records_at(anchor, &c.matrix, den));
    for (side, records) in [(num, &num_records), (den, &den_records)] {
        let o = outcome(records, &c.metric);
        if let Outcome::NotDrawn { missing, .. } = &o {
            let kind = if *missing == Missing::NotRun { Kind::NotRun } else { Kind::CannotTell };
            let reasons = o.reasons().join("; ");
            return (kind, format!("{} has no {} in run {}: {reasons}.", side.describe(), c.metric, anchor.id));
        }
    }
    let contract = Contract {
        differs: c.differs.clone(),
        tolerance: default_tolerances(),
        // Two points of one sweep differ in its knob only; across sweeps the knobs differ by design.
        equal_knobs: num.sweep == den.sweep,
    };
    let sorted = pair_reps(&num_records, &den_records, &c.metric, &contract);
    if sorted.holding.is_empty() {
        return no_pairs(&sorted, &anchor.id);
    }
    let units = units_of(c, &pool, (num, den), &contract);
    // What keeps this host from showing the claim at all, known from one rep: then nothing it measures refutes
    // the seed, and no rep pair is spent on it.
    let host_cpu = if c.beside { HostCpu::Free } else { host_cpu(c, &pool, (num, den), anchor) };
    let limit = (!c.beside)
        .then(|| {
            too_few_cores(c, anchor).or_else(|| if let HostCpu::Bound(l) = &host_cpu { Some(l.clone()) } else { None })
        })
        .flatten();
    // Unread is not a limit (a run of this lab reads it, so the budget measures the claim), but nothing stands on it.
    let unread = if let HostCpu::Unread(why) = &host_cpu { Some(why.clone()) } else { None };
    v.host_limit = limit.as_ref().map(|l| l.short.clone());
    let Some(p) = equivalence::pooled(&unit_ratios(&units), prior.spread) else {
        // What was measured is shown, without an interval: one pair is a figure, not nothing.
        let all: Vec<f64> = units.iter().flat_map(|u| u.ratios.iter().copied()).collect();
        if let Some(figure) = stats::geometric_mean(&all) {
            v.measured = format::ratio(figure);
            v.pairs = all.len();
            v.interval = format!("{} rep pair{}: no interval", all.len(), if all.len() == 1 { "" } else { "s" });
        }
        let mut why = format!(
            "No interval of the ratio yet: {} unit(s) pooled (a block, or a run without blocks), none with two rep \
             pairs, or the pairs have no spread at all.",
            units.len()
        );
        for long in limit.iter().map(|l| &l.long).chain(&unread) {
            why.push_str(&format!(" {long}."));
        }
        return (Kind::CannotTell, why);
    };
    fill_figures(v, &p, &units, prior);
    v.per_cpu = per_cpu_text(&num_records, &den_records);
    if c.beside {
        // The lab's own comparison: its figures, and no verdict on the seed.
        return (Kind::NoVerdict, beside_why(v, &p, anchor, (&num_records, &den_records), (num, den)));
    }
    let ceiling = c.ceiling.as_ref().and_then(|ceil| ceiling_here(ceil, c, anchor, &den_records));
    let notes: Vec<String> = ceiling
        .iter()
        .map(|(_, text)| text.clone())
        .chain(limit.iter().map(|l| l.long.clone()))
        .chain(unread.clone())
        .collect();
    v.host_note = (!notes.is_empty()).then(|| notes.join(". "));
    v.above_ceiling = ceiling.is_some();
    let parts: Vec<Part> =
        c.kind.iter().map(|kind| part(c, *kind, &p, (&pool, prior), ceiling.as_ref().map(|(x, _)| *x))).collect();
    let overall = if limit.is_some() || unread.is_some() { Kind::CannotTell } else { overall(&parts) };
    v.parts_text = parts.iter().map(|p| p.text.clone()).collect::<Vec<_>>().join("; ");
    if c.kind == [ClaimKind::Direction] {
        // A direction's figure is shown but not judged: say so where the verdict is read.
        v.parts_text.push_str("; size not claimed");
    }
    v.parts = parts;
    if overall == Kind::CannotTell && limit.is_none() && unread.is_none() {
        let undecided = v.parts.iter().filter(|part| part.verdict == Kind::CannotTell);
        v.units_to_decide = undecided
            .map(|part| part.units_to_decide)
            .collect::<Option<Vec<usize>>>()
            .and_then(|n| n.into_iter().max());
        v.to_decide = v.units_to_decide.map(|n| match n.saturating_sub(p.units) {
            1 => "about 1 more block or run decides it".to_owned(),
            more => format!("about {more} more blocks or runs decide it"),
        });
    }
    (overall, why(c, v, &p, anchor, &num_records, &den_records, num, den))
}

/// The units a claim's verdict pools: each block of each pooled run (a run measured without blocks is one unit),
/// with the per-rep-pair ratios of the two points in it; the units without a pair left out.
pub(super) fn units_of(c: &Claim, pool: &[&Run], (num, den): (&Side, &Side), contract: &Contract) -> Vec<Unit> {
    let mut units = Vec::new();
    for run in pool {
        let (n, d) = (records_at(run, &c.matrix, num), records_at(run, &c.matrix, den));
        let blocks: BTreeSet<Option<u32>> = n.iter().chain(&d).map(|r| r.block).collect();
        for block in blocks {
            let (n_b, d_b): (Vec<&Record>, Vec<&Record>) = (
                n.iter().copied().filter(|r| r.block == block).collect(),
                d.iter().copied().filter(|r| r.block == block).collect(),
            );
            let ratios = ratios(&values(&pair_reps(&n_b, &d_b, &c.metric, contract), &c.metric));
            if !ratios.is_empty() {
                units.push(Unit { run: run.id.clone(), block, ratios });
            }
        }
    }
    units
}

/// A claim's units over its comparable runs and the machine they are on; `None` for a claim without two points or
/// with no run that measured both.
pub(super) fn claim_units(c: &Claim, runs: &[Run]) -> Option<(String, Vec<Unit>)> {
    let (Some(num), Some(den)) = (&c.numerator, &c.denominator) else { return None };
    let pool = comparable_runs(c, runs, num, den)?;
    let machine = pool.last().expect("the anchor is pooled").provenance.machine_key();
    let contract =
        Contract { differs: c.differs.clone(), tolerance: default_tolerances(), equal_knobs: num.sweep == den.sweep };
    Some((machine, units_of(c, &pool, (num, den), &contract)))
}

/// The units' ratios, as the rule reads them.
pub(super) fn unit_ratios(units: &[Unit]) -> Vec<Vec<f64>> {
    units.iter().map(|u| u.ratios.clone()).collect()
}

/// A claim reproduces only if every part holds, does not if any part fails, and cannot be told otherwise.
fn overall(parts: &[Part]) -> Kind {
    if parts.iter().all(|p| p.verdict == Kind::Reproduces) {
        Kind::Reproduces
    } else if parts.iter().any(|p| p.verdict == Kind::DoesNotReproduce) {
        Kind::DoesNotReproduce
    } else {
        Kind::CannotTell
    }
}

/// The verdict when the anchor run has no pair of the two points that did the same work.
pub(super) fn no_pairs(sorted: &parity::Sorted, run: &str) -> (Kind, String) {
    if !sorted.undeclared.is_empty() {
        let keys: BTreeSet<&str> = sorted.undeclared.iter().map(|d| d.key.as_str()).collect();
        let keys = keys.into_iter().collect::<Vec<_>>().join(", ");
        let why = format!(
            "No verdict: the two sides did not do the same work in run {run}: they differ in {keys}, which the \
             claim's contract does not allow."
        );
        (Kind::NoVerdict, why)
    } else if sorted.not_applied {
        (Kind::NoVerdict, format!("No verdict: {}.", parity::NOT_APPLIED))
    } else {
        (Kind::CannotTell, format!("No rep of run {run} measured both sides."))
    }
}

pub(super) fn fill_figures(v: &mut ClaimVerdict, p: &Pooled, units: &[Unit], prior: &MachinePrior) {
    v.estimate = Some(p.estimate);
    v.measured = format::ratio(p.estimate);
    v.interval_bounds = Some(p.interval);
    v.runs = units.iter().map(|u| u.run.clone()).collect::<BTreeSet<_>>().into_iter().collect();
    v.runs.sort_by_key(|id| units.iter().position(|u| &u.run == id));
    v.pairs = p.pairs;
    v.interval = interval_text(p, v.runs.len());
    v.spread = Some(SpreadUsed {
        within_log_sd: p.within_log_sd,
        between: p.between,
        own_between: p.own_between,
        prior: prior.spread,
        prior_source: prior.source.clone(),
        df: p.df,
        se_log: p.se_log,
        mean_log: p.mean_log,
        units: units.to_vec(),
    });
    v.pooled = Some(p.clone());
}

/// One kind of the claim, judged.
pub(super) fn part(
    c: &Claim,
    kind: ClaimKind,
    p: &Pooled,
    (pool, prior): (&[&Run], &MachinePrior),
    ceiling: Option<f64>,
) -> Part {
    let call = match kind {
        ClaimKind::Size => equivalence::size(p, c.published, c.tolerance),
        ClaimKind::Parity => equivalence::parity(p, c.tolerance),
        ClaimKind::Direction => equivalence::direction(p, c.direction.unwrap_or(Direction::Higher), c.tolerance),
        ClaimKind::Shape => match shape_call(c, pool, prior) {
            Some(call) => call,
            None => {
                let text = "shape: cannot tell here (a step has no interval: one rep per step; a profile run's reps \
                            decide it)";
                return Part { kind, verdict: Kind::CannotTell, text: text.to_owned(), units_to_decide: None };
            }
        },
    };
    let mut verdict = Kind::of(call);
    // A published figure beyond what this host can reach cannot be told here, however far ours is from it.
    if kind == ClaimKind::Size && ceiling.is_some_and(|x| c.published > x) && verdict == Kind::DoesNotReproduce {
        verdict = Kind::CannotTell;
    }
    let text = match (kind, verdict) {
        (ClaimKind::Size, Kind::Reproduces) => "size reproduces".to_owned(),
        (_, Kind::Reproduces) => format!("{} holds", kind.text()),
        (_, Kind::DoesNotReproduce) => format!("{} does not hold", kind.text()),
        (_, other) => format!("{}: {}", kind.text(), other.text()),
    };
    let units_to_decide =
        (call == Call::Undecided && verdict == Kind::CannotTell).then(|| to_decide(c, kind, p)).flatten();
    Part { kind, verdict, text, units_to_decide }
}

/// How many units in all would decide an undecided part: the distance from the edges its call is made against.
fn to_decide(c: &Claim, kind: ClaimKind, p: &Pooled) -> Option<usize> {
    match kind {
        ClaimKind::Size => equivalence::units_to_decide(p, &equivalence::band(c.published, c.tolerance), false),
        ClaimKind::Parity => equivalence::units_to_decide(p, &equivalence::band(1.0, c.tolerance), false),
        ClaimKind::Direction => match c.direction.unwrap_or(Direction::Higher) {
            Direction::Higher => equivalence::units_to_decide(p, &[1.0], true),
            Direction::NotLower => equivalence::units_to_decide(p, &[1.0 / (1.0 + c.tolerance)], false),
        },
        ClaimKind::Shape => None,
    }
}

/// A shape claim over the pooled runs: each consecutive step of its labels pooled over the runs that hold it; `None`
/// when some step has no interval (one rep per step, as a budget's first pass gives).
pub(super) fn shape_call(c: &Claim, pool: &[&Run], prior: &MachinePrior) -> Option<Call> {
    let Some(shape) = &c.shape else { return Some(Call::Undecided) };
    let contract = Contract { differs: c.differs.clone(), tolerance: default_tolerances(), equal_knobs: true };
    let side = |label: &str| Side { sweep: shape.sweep.clone(), arm: shape.arm.clone(), label: label.to_owned() };
    let steps: Option<Vec<Pooled>> = shape
        .labels
        .windows(2)
        .map(|w| {
            let (from, to) = (side(&w[0]), side(&w[1]));
            equivalence::pooled(&unit_ratios(&units_of(c, pool, (&to, &from), &contract)), prior.spread)
        })
        .collect();
    steps.map(|steps| equivalence::shape(&steps, c.tolerance))
}

/// The ceiling's figure over the denominator's in the anchor run, and the sentence that says so; `None` when
/// the run lacks the ceiling's point.
pub(super) fn ceiling_here(ceil: &Ceiling, c: &Claim, run: &Run, den_records: &[&Record]) -> Option<(f64, String)> {
    let geomean = |records: &[&Record]| {
        let values: Vec<f64> =
            drawn_by_rep(records, &c.metric).values().map(|r| r.measurement.metrics[&c.metric].value).collect();
        stats::geometric_mean(&values)
    };
    let top = geomean(&records_at(run, &c.matrix, &ceil.point))?;
    let base = geomean(den_records)?;
    let ceiling = stats::ratio(top, base)?;
    (c.published > ceiling).then(|| {
        (
            ceiling,
            format!(
                "This host's ceiling is {}: {}, {} {}, over the denominator's {}; the published {} needs more than \
                 this host reaches, so its size cannot be told here",
                format::ratio(ceiling),
                ceil.what.trim_end_matches('.'),
                format::compact(top),
                c.metric,
                format::compact(base),
                format::ratio(c.published)
            ),
        )
    })
}

/// What keeps this host from showing a claim: the verdict table's few words, and the sentence for its paragraph.
#[derive(Clone)]
pub(super) struct HostLimit {
    pub short: String,
    pub long: String,
}

/// The seed's mechanism needs more cores than this host has.
pub(super) fn too_few_cores(c: &Claim, run: &Run) -> Option<HostLimit> {
    let need = c.needs_cores.as_ref()?;
    let have = run.provenance.host.logical_cores;
    (have < need.cores).then(|| HostLimit {
        short: format!("needs a host with at least {} cores; this one has {have}", need.cores),
        long: format!(
            "Too few cores here to show it: this host has {have} and {}; a host with at least {} cores decides it",
            need.why.trim_end_matches('.'),
            need.cores
        ),
    })
}

/// What the host's CPU says of a claim's two sides.
pub(super) enum HostCpu {
    /// Neither side kept the host's cores busy.
    Free,
    /// A side did: the ratio is one of CPU per record on this host.
    Bound(HostLimit),
    /// A side has no reading of the host's CPU over its measured spans: nothing can stand on it either way.
    Unread(String),
}

/// `CPU-bound here: ...` when either side kept the host's cores busy nine tenths of the time or more over its
/// measured spans: the median of [`streamlab_record::HOST_CORES`] over every record of the side in the pooled runs (set-apart
/// reps left out), a reading of the whole host over the very span the record measured, so never above its cores.
/// A side none of whose records has the reading (records from before the lab read it) is unread.
pub(super) fn host_cpu(c: &Claim, pool: &[&Run], (num, den): (&Side, &Side), anchor: &Run) -> HostCpu {
    let cores = anchor.provenance.host.logical_cores;
    let used = |side: &Side| {
        let values: Vec<f64> = pool
            .iter()
            .flat_map(|run| records_at(run, &c.matrix, side))
            .filter(|r| set_apart(r).is_none())
            .filter_map(|r| r.measurement.metrics.get(streamlab_record::HOST_CORES).map(|m| m.value))
            .collect();
        stats::median(&values)
    };
    let (a, b) = (used(num), used(den));
    let unread: Vec<String> =
        [(num, a), (den, b)].iter().filter(|(_, x)| x.is_none()).map(|(s, _)| s.describe()).collect();
    if cores == 0 || !unread.is_empty() {
        return HostCpu::Unread(format!(
            "This host's CPU was not read over the measured spans of {} (records from before the lab read it), so \
             whether a side was CPU-bound here is not known and no verdict stands on these runs; a run of \
             `cargo xtask lab run` reads it",
            unread.join(" and ")
        ));
    }
    let (a, b) = (a.unwrap_or_default(), b.unwrap_or_default());
    if a.max(b) < streamlab_record::CPU_BOUND_SHARE * cores as f64 {
        return HostCpu::Free;
    }
    let seed = c.seed_cores.map_or_else(String::new, |n| format!(" (the seed's machine had {n})"));
    HostCpu::Bound(HostLimit {
        short: format!("CPU-bound here: {} and {} of {cores} cores busy", format::compact(a), format::compact(b)),
        long: format!(
            "CPU-bound here: the host's cores were busy {} and {} of {cores} over the two sides' measured spans \
             (the median over the pooled runs), so the ratio is one of CPU per record on this host, not of what the \
             seed measured with cores to spare; a host on which neither side keeps nine tenths of its cores busy \
             decides it{seed}",
            format::compact(a),
            format::compact(b)
        ),
    })
}
