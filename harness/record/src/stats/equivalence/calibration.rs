//! The rule's error rates, by simulation of the regime the verdicts are really made in (fixed seeds, so the table
//! is the same on every run). `cargo test --release -p streamlab-record calibration -- --nocapture` prints it.
//!
//! The regime, from the committed results and `lab run --budget`:
//! - a claim is judged on 1 to 24 runs of one machine (a fresh machine has one; the committed history of one
//!   machine key pools up to two dozen), each run with 1 to 6 rep pairs (a budget's first pass gives one);
//! - rep-to-rep spread (log-SD of a run's pairs) up to 0.5, and runs of one claim unlike each other (a run's
//!   spread is the cell's times a factor between 0.5 and 1.5); run-to-run spread up to 0.4;
//! - the spread estimator is the claim's own runs shrunk toward [`PRIOR_SPREAD`] (no other point's history enters
//!   it, so other points' spreads cannot bias it);
//! - claims of one part (a size) and of two (a direction and a size, judged together: reproduces only if both
//!   hold, does not if either fails);
//! - the budget's stopping rule: it looks after the first pass, adds the pairs [`pairs_to_decide`] says in one
//!   batch (after topping a run without an interval up to three pairs), and looks again, at most three looks.
//!
//! Asserted in every cell, over [`TRIALS`] trials: a claim outside its band (the truth at either edge) reads
//! reproduces at most 3.5%; a claim that holds (the truth at the published figure) reads does not reproduce at
//! most 3.5%. The same check fails for a 90% interval, for z in place of t, and for a run-to-run spread of 0.

use super::*;

const TRIALS: usize = 4000;
/// The error rate the rule must hold in every cell.
const MOST: f64 = 0.035;
const PUBLISHED: f64 = 1.25;

/// One cell of the grid.
#[derive(Debug, Clone, Copy)]
struct Cell {
    /// Rep-to-rep log-SD (each run's is this times a factor in [0.5, 1.5]).
    pair_sd: f64,
    /// Run-to-run log-SD.
    run_sd: f64,
    /// Each run has 1 to this many pairs.
    pairs: usize,
    runs: usize,
}

fn grid() -> Vec<Cell> {
    let mut cells = Vec::new();
    for pair_sd in [0.05, 0.25, 0.5] {
        for run_sd in [0.0, 0.15, 0.4] {
            for pairs in [2, 6] {
                for runs in [1, 2, 3, 8, 24] {
                    cells.push(Cell { pair_sd, run_sd, pairs, runs });
                }
            }
        }
    }
    cells
}

fn normal(rng: &mut fastrand::Rng) -> f64 {
    // Box–Muller; 1 − u keeps the logarithm finite.
    let (u, v) = (1.0 - rng.f64(), rng.f64());
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

/// One run of a claim whose true log ratio is `truth`: its run effect and its pairs' spread.
struct SimRun {
    effect: f64,
    pair_sd: f64,
}

impl SimRun {
    fn draw(rng: &mut fastrand::Rng, cell: Cell) -> SimRun {
        SimRun { effect: cell.run_sd * normal(rng), pair_sd: cell.pair_sd * (0.5 + rng.f64()) }
    }

    fn pairs(&self, rng: &mut fastrand::Rng, truth: f64, n: usize) -> Vec<f64> {
        (0..n).map(|_| (truth + self.effect + self.pair_sd * normal(rng)).exp()).collect()
    }
}

/// The runs of one trial: `cell.runs` runs of 1 to `cell.pairs` pairs each.
fn history(rng: &mut fastrand::Rng, cell: Cell, truth: f64) -> Vec<Vec<f64>> {
    (0..cell.runs)
        .map(|_| {
            let (run, n) = (SimRun::draw(rng, cell), rng.usize(1..=cell.pairs));
            run.pairs(rng, truth, n)
        })
        .collect()
}

/// What a claim's kinds say of one pooled interval (size alone, or direction and size together).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Claim {
    Size,
    DirectionAndSize,
}

impl Claim {
    fn call(self, p: Option<&Pooled>) -> Call {
        let Some(p) = p else { return Call::Undecided };
        let size = size(p, PUBLISHED, DEFAULT_TOLERANCE);
        match self {
            Claim::Size => size,
            Claim::DirectionAndSize => match (direction(p, Direction::Higher, DEFAULT_TOLERANCE), size) {
                (Call::Holds, Call::Holds) => Call::Holds,
                (Call::Fails, _) | (_, Call::Fails) => Call::Fails,
                _ => Call::Undecided,
            },
        }
    }

    /// The values an undecided claim is judged against (the budget's edges).
    fn edges(self) -> Vec<f64> {
        let mut edges = band(PUBLISHED, DEFAULT_TOLERANCE).to_vec();
        if self == Claim::DirectionAndSize {
            edges.push(1.0);
        }
        edges
    }
}

/// The verdict a trial ends with: judged once over its runs (`budget` false), or as `lab run --budget` judges
/// it: the committed runs, then a run of this machine's whose first pass gives one pair, looked at; a run
/// without an interval topped up to three pairs and looked at again; then one batch of the pairs that would
/// decide it, and a last look.
fn trial(rng: &mut fastrand::Rng, rule: &Rule, cell: Cell, truth: f64, claim: Claim, budget: bool) -> Call {
    let mut runs = history(rng, cell, truth);
    if !budget {
        return claim.call(pooled_by(rule, &runs).as_ref());
    }
    runs.pop();
    let this = SimRun::draw(rng, cell);
    runs.push(this.pairs(rng, truth, 1));
    for _look in 0..3 {
        let p = pooled_by(rule, &runs);
        let call = claim.call(p.as_ref());
        if call != Call::Undecided {
            return call;
        }
        let newest = runs.last().map_or(0, Vec::len);
        let more = match &p {
            None if newest < 3 => 3 - newest,
            None => return Call::Undecided,
            Some(p) => match pairs_to_decide(p, newest, &claim.edges()) {
                Some(more) => more,
                None => return Call::Undecided,
            },
        };
        let added = this.pairs(rng, truth, more);
        runs.last_mut().expect("this run").extend(added);
    }
    claim.call(pooled_by(rule, &runs).as_ref())
}

/// Shares of reproduces and does not reproduce over the trials.
#[derive(Debug, Clone, Copy, Default)]
struct Shares {
    holds: f64,
    fails: f64,
}

fn shares(rule: &Rule, cell: Cell, truth: f64, claim: Claim, budget: bool, trials: usize) -> Shares {
    let mut rng = fastrand::Rng::with_seed(0x5eed_0051);
    let mut s = Shares::default();
    for _ in 0..trials {
        match trial(&mut rng, rule, cell, truth.ln(), claim, budget) {
            Call::Holds => s.holds += 1.0,
            Call::Fails => s.fails += 1.0,
            Call::Undecided => {}
        }
    }
    Shares { holds: s.holds / trials as f64, fails: s.fails / trials as f64 }
}

fn pct(x: f64) -> String {
    format!("{:5.1}", x * 100.0)
}

/// Every cell's error rates under `rule`: the table's rows, and the cells that break the 3.5% (stopping at the
/// first `stop_after` of them).
fn check(rule: &Rule, trials: usize, stop_after: usize) -> (Vec<String>, Vec<String>) {
    let edge = 1.0 + DEFAULT_TOLERANCE;
    let (mut rows, mut broken) = (Vec::new(), Vec::new());
    // A two-part claim's looks are the size's: the budget's loop is shown on the size alone.
    for (claim, budget) in [(Claim::Size, false), (Claim::Size, true), (Claim::DirectionAndSize, false)] {
        {
            for cell in grid() {
                // A budget's run replaces the cell's last: with one run it is the fresh machine's only one.
                let at_figure = shares(rule, cell, PUBLISHED, claim, budget, trials);
                let above = shares(rule, cell, PUBLISHED * edge, claim, budget, trials);
                let below = shares(rule, cell, PUBLISHED / edge, claim, budget, trials);
                let false_holds = above.holds.max(below.holds);
                rows.push(format!(
                    "{claim:?} {:6} {:4.2} {:4.2} {:5} {:4} | {} {} | {}",
                    if budget { "budget" } else { "once" },
                    cell.pair_sd,
                    cell.run_sd,
                    cell.pairs,
                    cell.runs,
                    pct(at_figure.holds),
                    pct(at_figure.fails),
                    pct(false_holds)
                ));
                let at = format!("{claim:?}, {}, {cell:?}", if budget { "budget" } else { "judged once" });
                if at_figure.fails > MOST {
                    broken
                        .push(format!("{at}: a claim that holds read 'does not reproduce' {}%", pct(at_figure.fails)));
                }
                if false_holds > MOST {
                    broken.push(format!("{at}: a claim at its band's edge read 'reproduces' {}%", pct(false_holds)));
                }
                if broken.len() >= stop_after {
                    return (rows, broken);
                }
            }
        }
    }
    (rows, broken)
}

#[test]
fn the_rule_holds_its_error_rates_in_the_regime_the_verdicts_are_made_in() {
    let (rows, broken) = check(&RULE, TRIALS, usize::MAX);
    println!("{TRIALS} trials a cell; published {PUBLISHED}, band ±{:.0}%", DEFAULT_TOLERANCE * 100.0);
    println!(
        "claim            judged pair  run  pairs runs | at figure: % reproduces, % does not | at edge: % reproduces"
    );
    for row in &rows {
        println!("{row}");
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
    // And it decides: twenty-four quiet runs of a claim that holds read reproduces, as do claims far off read does not.
    let quiet = Cell { pair_sd: 0.05, run_sd: 0.0, pairs: 6, runs: 24 };
    assert!(shares(&RULE, quiet, PUBLISHED, Claim::Size, false, TRIALS).holds > 0.9);
    // One run of 1 to 6 pairs has no interval a sixth of the time (one pair); otherwise 4x the figure reads does not.
    let one = Cell { runs: 1, ..quiet };
    assert!(shares(&RULE, one, PUBLISHED * 4.0, Claim::Size, false, TRIALS).fails > 0.8);
}

#[test]
fn a_ninety_percent_interval_z_for_t_and_a_spread_of_zero_each_break_it() {
    let mutations = [
        ("a 90% interval", Rule { confidence: 0.90, ..RULE }),
        ("z in place of t", Rule { normal_quantile: true, ..RULE }),
        ("a run-to-run spread of 0", Rule { no_between: true, ..RULE }),
    ];
    for (what, rule) in mutations {
        // Three cells, not one: a single cell over the line could be the simulation's own noise.
        let (_, broken) = check(&rule, TRIALS, 3);
        assert_eq!(broken.len(), 3, "{what} passed the calibration: {broken:?}");
        println!("{what} breaks it, first in: {}", broken.join("; "));
    }
}

/// The corners of the grid (the fewest and most runs and pairs, the least and most spread), for the rules whose
/// error rates do not depend on the budget's looks.
fn corners() -> Vec<Cell> {
    grid()
        .into_iter()
        .filter(|c| [0.05, 0.5].contains(&c.pair_sd) && [0.0, 0.4].contains(&c.run_sd) && [1, 3, 24].contains(&c.runs))
        .collect()
}

/// Share of trials of `cell` at the true ratio `truth` (one run set each) that `rule` calls `call`.
fn share_of(cell: Cell, truth: f64, call: Call, rule: impl Fn(&Pooled) -> Call) -> f64 {
    let mut rng = fastrand::Rng::with_seed(0x5eed_d1e0);
    let hits =
        (0..TRIALS).filter(|_| pooled(&history(&mut rng, cell, truth.ln())).is_some_and(|p| rule(&p) == call)).count();
    hits as f64 / TRIALS as f64
}

#[test]
fn the_direction_parity_and_shape_rules_hold_their_error_rates_at_the_grids_corners() {
    let tol = DEFAULT_TOLERANCE;
    let mut broken = Vec::new();
    println!(
        "% wrongly decided: higher held at 1 / not lower held at its floor / parity held at its edge / parity failed at 1"
    );
    for cell in corners() {
        let higher = |p: &Pooled| direction(p, Direction::Higher, tol);
        let not_lower = |p: &Pooled| direction(p, Direction::NotLower, tol);
        let par = |p: &Pooled| parity(p, tol);
        let wrong = [
            share_of(cell, 1.0, Call::Holds, higher),
            share_of(cell, 1.0 / (1.0 + tol), Call::Holds, not_lower),
            share_of(cell, 1.0 + tol, Call::Holds, par),
            share_of(cell, 1.0, Call::Fails, par),
        ];
        println!("{cell:?}: {}", wrong.map(pct).join(" / "));
        if wrong.iter().any(|w| *w > MOST) {
            broken.push(format!("{cell:?}: {}", wrong.map(pct).join(" / ")));
        }
    }
    // A shape of four steps: held with one step at the floor, failed when every step is flat.
    for cell in corners() {
        let mut rng = fastrand::Rng::with_seed(0x5eed_5a9e);
        let (mut held_at_floor, mut failed_flat) = (0, 0);
        let steps = |rng: &mut fastrand::Rng, truths: [f64; 4]| -> Option<Vec<Pooled>> {
            truths.iter().map(|t| pooled(&history(rng, cell, t.ln()))).collect()
        };
        for _ in 0..TRIALS {
            if steps(&mut rng, [1.0, 1.0, 1.0 - tol, 1.0]).is_some_and(|s| shape(&s, tol) == Call::Holds) {
                held_at_floor += 1;
            }
            if steps(&mut rng, [1.0; 4]).is_some_and(|s| shape(&s, tol) == Call::Fails) {
                failed_flat += 1;
            }
        }
        let (floor, flat) = (held_at_floor as f64 / TRIALS as f64, failed_flat as f64 / TRIALS as f64);
        if floor > MOST || flat > MOST {
            broken.push(format!("{cell:?}: shape held at the floor {}%, failed flat {}%", pct(floor), pct(flat)));
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}
