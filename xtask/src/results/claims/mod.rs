//! The seeds' headline claims (site/claims.toml) and a verdict for each: reproduces, does not reproduce, cannot
//! tell here, not run, or no verdict (the two sides did not do the same work). A claim is tested as the seed
//! states it, by its kinds (a size, a direction, parity, a shape), with the rule of
//! `streamlab_record::stats::equivalence` over every comparable run that measured its points (same hardware,
//! same configuration on both sides), pooled. Each verdict says why from the records: where our interval stands
//! to the claim's band, which spread decided it and what would decide it, what differs between the publisher's
//! setup and ours, and the CPU the two sides cost here.

use std::collections::BTreeSet;

use serde::Serialize;
use streamlab_record::Record;
use streamlab_record::stats::equivalence::{self, Call, Direction, Pooled, Spread};
use streamlab_record::stats::{self, Summary};

use crate::results::config::default_tolerances;
use crate::results::format;
use crate::results::load::Run;
use crate::results::model::{Missing, Outcome, config_of, drawn_by_rep, outcome, set_apart};
use crate::results::parity::{self, Contract};

use crate::results::declared::{Bound, Ceiling, Claim, ClaimKind, Side};
use prior::{MachinePrior, Priors};

/// What the lab concludes about a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Reproduces,
    DoesNotReproduce,
    CannotTell,
    NotRun,
    /// The two sides did not do the same work under the claim's contract.
    NoVerdict,
}

impl Kind {
    pub fn text(self) -> &'static str {
        match self {
            Kind::Reproduces => "reproduces",
            Kind::DoesNotReproduce => "does not reproduce",
            Kind::CannotTell => "cannot tell here",
            Kind::NotRun => "not run",
            Kind::NoVerdict => "no verdict",
        }
    }

    fn of(call: Call) -> Kind {
        match call {
            Call::Holds => Kind::Reproduces,
            Call::Fails => Kind::DoesNotReproduce,
            Call::Undecided => Kind::CannotTell,
        }
    }
}

/// The estimator every verdict, headline ratio and comparison prints.
pub const ESTIMATOR: &str = "geometric mean of per-rep-pair ratios, pooled over comparable runs";

/// One part of a claim (its size, its direction, ...) with its own verdict.
#[derive(Debug, Clone, Serialize)]
pub struct Part {
    pub kind: ClaimKind,
    pub verdict: Kind,
    /// `size does not reproduce`, `direction holds`.
    pub text: String,
    /// How many blocks or runs like these in all would decide the part, where it is undecided and a count can
    /// (`None`: decided, a shape, beyond this host's ceiling, or an estimate on an edge).
    pub units_to_decide: Option<usize>,
}

/// The spreads the interval carries.
#[derive(Debug, Clone, Serialize)]
pub struct SpreadUsed {
    /// Rep-to-rep (log-SD of the pairs within a run).
    pub within_log_sd: f64,
    /// Run-to-run (log-SD and degrees of freedom): the claim's own, shrunk toward the prior.
    pub between: Spread,
    /// What the claim's own runs show of it (two runs or more).
    pub own_between: Option<Spread>,
    /// The prior it is shrunk toward: the machine's, and where it comes from.
    pub prior: Spread,
    pub prior_source: String,
    /// The interval's degrees of freedom, and the mean and standard error of the log ratio it is drawn from.
    pub df: f64,
    pub mean_log: f64,
    pub se_log: f64,
    /// Every unit pooled (a block of a run, or a run without blocks) with its per-rep-pair ratios: enough to
    /// recompute the interval.
    pub units: Vec<Unit>,
}

/// One unit a verdict pools: a block of a run, or a run measured without blocks (`block` absent).
#[derive(Debug, Clone, Serialize)]
pub struct Unit {
    pub run: String,
    pub block: Option<u32>,
    pub ratios: Vec<f64>,
}

/// A claim with its verdict, as the index and `lab verdicts` show it.
#[derive(Debug, Clone, Serialize)]
pub struct ClaimVerdict {
    pub id: String,
    pub seed: String,
    pub claim: String,
    pub short: String,
    /// The seed's hardware and versions, for the provenance beside the verdict.
    pub hardware: String,
    pub versions: String,
    pub matrix: String,
    pub like_for_like: bool,
    /// The lab's own comparison at a point the seed did not run: figures, never a verdict on the seed.
    pub beside: bool,
    /// The machine key of the runs the verdict pools (all of one machine).
    pub machine: Option<String>,
    /// The seed's machine's logical cores, where the seed says.
    pub seed_cores: Option<u32>,
    /// Records per CPU-second of each side over the other's (the lab's own comparisons: CPU per record is the finding).
    pub per_cpu: Option<String>,
    /// What the claim says, as site/claims.toml states it (size, direction, parity, shape), run or not.
    pub kind: Vec<ClaimKind>,
    pub published: f64,
    pub published_text: String,
    /// The seed file and where in it the published figure comes from.
    pub source: String,
    pub published_from: String,
    /// Which way the metric is better (a latency ratio under 1× favours the numerator).
    pub higher_is_better: bool,
    pub verdict: Kind,
    pub verdict_text: &'static str,
    /// The claim's kinds, each with its verdict; the overall verdict holds only if every part holds.
    pub parts: Vec<Part>,
    /// `direction holds; size does not reproduce`.
    pub parts_text: String,
    pub tolerance: f64,
    /// The size claim's band, [published / (1 + tol), published × (1 + tol)].
    pub band: Option<[f64; 2]>,
    pub estimator: &'static str,
    /// Our ratio, e.g. `0.70×`; `—` without one.
    pub measured: String,
    pub estimate: Option<f64>,
    /// `95% CI 0.62× – 0.79×, 2 runs, 12 rep pairs`; empty without one.
    pub interval: String,
    pub interval_bounds: Option<[f64; 2]>,
    /// The runs pooled, oldest first, and the rep pairs they gave.
    pub runs: Vec<String>,
    pub pairs: usize,
    pub spread: Option<SpreadUsed>,
    /// How many blocks or runs like these in all would decide a claim this host can show but has not decided yet
    /// (the most any undecided part needs), and the cell's words for it: `about 4 more blocks or runs decide it`.
    pub units_to_decide: Option<usize>,
    pub to_decide: Option<String>,
    /// What this host can show: its ceiling for the ratio, or that a side saturated its cores.
    pub host_note: Option<String>,
    /// The published figure needs more than this host's ceiling: no rep or run here can tell its size.
    pub above_ceiling: bool,
    /// What keeps this host from showing the claim at all (either side CPU-bound, fewer cores than the seed's
    /// point needs): the verdict is then "cannot tell here" whatever the figures, and the budget spends nothing on it.
    pub host_limit: Option<String>,
    /// One paragraph: why this verdict.
    pub why: String,
    /// The newest run the verdict comes from.
    pub run: Option<String>,
    /// The pooled interval the verdict reads (the budget plans its pairs on it).
    #[serde(skip)]
    pub pooled: Option<Pooled>,
}

/// Every claim's verdict from `runs` (oldest first, as the site loads them).
pub fn verdicts(runs: &[Run], claims: &[Claim]) -> Vec<ClaimVerdict> {
    let priors = Priors::fit(runs, claims);
    claims.iter().map(|c| verdict_of(c, runs, &priors)).collect()
}

fn verdict_of(c: &Claim, runs: &[Run], priors: &Priors) -> ClaimVerdict {
    let mut v = ClaimVerdict {
        id: c.id.clone(),
        seed: c.seed.clone(),
        claim: c.claim.trim().to_owned(),
        short: c.short.clone(),
        hardware: c.hardware.clone(),
        versions: c.versions.clone(),
        matrix: c.matrix.clone(),
        like_for_like: c.like_for_like,
        beside: c.beside,
        machine: None,
        seed_cores: c.seed_cores,
        per_cpu: None,
        kind: c.kind.clone(),
        published: c.published,
        published_text: format::ratio(c.published),
        source: c.source.clone(),
        published_from: c.published_from.clone(),
        higher_is_better: c.higher_is_better,
        verdict: Kind::NotRun,
        verdict_text: "",
        parts: Vec::new(),
        parts_text: String::new(),
        tolerance: c.tolerance,
        band: (c.kind.contains(&ClaimKind::Size) && !c.beside).then(|| equivalence::band(c.published, c.tolerance)),
        estimator: ESTIMATOR,
        measured: "—".into(),
        estimate: None,
        interval: String::new(),
        interval_bounds: None,
        runs: Vec::new(),
        pairs: 0,
        spread: None,
        units_to_decide: None,
        to_decide: None,
        host_note: None,
        above_ceiling: false,
        host_limit: None,
        why: String::new(),
        run: None,
        pooled: None,
    };
    let (kind, why) = judge::judge(c, runs, priors, &mut v);
    v.verdict = kind;
    v.verdict_text = kind.text();
    v.why = why;
    v
}

pub mod aa;
pub mod blocks_vs_runs;
mod judge;
pub mod machines;
mod pairs;
mod prior;
#[cfg(test)]
mod tests;
mod why;
