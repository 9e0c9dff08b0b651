//! Verdicts on published claims as equivalence tests: one estimator, one interval, one rule, and the
//! simulation that proves the rule's error rates in the regime the verdicts are made in.
//!
//! - **The estimator** of a ratio is the geometric mean of its per-rep-pair ratios (each rep's numerator over
//!   the same rep's denominator, in one run). Over several runs it is the geometric mean of the runs' own.
//! - **The interval** is Student's t interval of that mean on the log scale, and carries run-to-run as well as
//!   rep-to-rep variation: its variance is τ²/R + s²·Σ(1/nᵢ)/R², with R runs of nᵢ pairs and s the pairs' pooled
//!   spread within a run. τ, the claim's run-to-run spread, is estimated from the claim's own runs (the runs are a
//!   random effect) and shrunk toward a prior, [`PRIOR_SPREAD`]: τ² = (df₀·τ₀² + (R − 1)·τ̂²) / (df₀ + R − 1), so one
//!   run carries the prior alone and many runs carry their own spread. The degrees of freedom are
//!   Welch–Satterthwaite's over the two parts. Without a run of two pairs there is no rep-to-rep spread and no
//!   interval.
//! - **The rule**: a claim's band is [published / (1 + tol), published · (1 + tol)]. An interval inside it:
//!   reproduces. Wholly outside it: does not reproduce. Otherwise: cannot tell here. The same rule, with other
//!   bands, judges parity (the band around 1), a direction (above 1, with a sign test on the pairs) and a shape
//!   (no step of a sweep below 1 − tol).

use serde::Serialize;

use super::rank_test::sign_test;
use super::student_t;

/// The level of every interval the rule reads.
pub const CONFIDENCE: f64 = 0.95;

/// The claim's tolerance where the publisher's own spread says nothing.
pub const DEFAULT_TOLERANCE: f64 = 0.15;

/// The prior on a claim's run-to-run spread (log-SD τ₀ with df₀ degrees of freedom), what one run carries and what a
/// claim's own runs are shrunk toward. The value is the calibration's (equivalence/calibration.rs): with df₀ = 4, the
/// rule must hold its error rates for true run-to-run spreads up to 0.4, the most a claim's ratio moved between runs in
/// the committed history of our 2-core machines (0.38). τ₀ = 0.30 let the budget's looks at a fresh machine's one run
/// read "does not reproduce" for a claim that holds 3.6% of the time (rep-to-rep 0.5, run-to-run 0.4); 0.33 keeps
/// every cell at 2.8% or less.
pub const PRIOR_SPREAD: Spread = Spread { log_sd: 0.33, df: 4.0 };

/// How the site and `lab verdicts` state the rule.
pub const VERDICT_METHOD: &str = "Each claim has a band, [published ÷ (1 + tol), published × (1 + tol)], tol \
being the claim's tolerance (15% unless the publisher's own spread says otherwise). Our figure is the geometric \
mean of the per-rep-pair ratios, pooled over every comparable run on one machine (same machine key, same \
configuration). Its 95% interval is Student's t on the log scale and carries run-to-run as well as rep-to-rep \
spread: the run-to-run part is the claim's own spread across its runs, shrunk toward a prior of log-SD 0.33 (4 \
degrees of freedom), so a claim with one run carries the prior alone. Interval inside the band: reproduces. Wholly \
outside: does not reproduce. Otherwise: cannot tell here, with what would decide it. A direction claim holds when the \
interval lies above 1 and a sign test on the pairs agrees (p < 0.05); a parity claim is a band around 1; a shape claim \
holds when no step of the sweep falls below 1 − tol. Where this machine cannot show the claim (either side CPU-bound: the host's cores nine tenths busy or more over \
its measured spans, the median over the pooled runs; a \
ceiling below the published figure, fewer cores than the seed's point needs), the verdict is cannot tell here, never \
does not reproduce. The rule's error rates are proven by a simulation of the regime the verdicts are made in (1 to 24 \
runs of 2 to 6 pairs, rep-to-rep log-SD up to 0.5, run-to-run up to 0.4, the budget's two looks): a claim outside its \
band reads reproduces at most 3.5% of the time, a claim that holds reads does not reproduce at most 3.5%.";

/// A run-to-run spread: a log-SD and the degrees of freedom behind it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    pub log_sd: f64,
    pub df: f64,
}

/// A ratio pooled over runs: the geometric mean of per-rep-pair ratios with its interval on the log scale.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pooled {
    /// The geometric mean.
    pub estimate: f64,
    /// Its 95% interval.
    pub interval: [f64; 2],
    pub runs: usize,
    pub pairs: usize,
    /// Mean and standard error of the log ratio, and the degrees of freedom of the interval.
    pub mean_log: f64,
    pub se_log: f64,
    pub df: f64,
    /// The pairs' spread within a run (log-SD).
    pub within_log_sd: f64,
    /// The run-to-run spread the interval carries (log-SD): the claim's own, shrunk toward [`PRIOR_SPREAD`].
    pub between: Spread,
    /// What the claim's own runs show of it (two runs or more): log-SD beyond their pairs' spread.
    pub own_between: Option<Spread>,
    /// The variance one more run would add to the mean, per run: τ² + s²/n̄ (the basis of [`runs_to_decide`]).
    pub var_per_run: f64,
    /// Σ 1/nᵢ over the runs (what the pairs put into the mean's variance, with s²/R²).
    pub inv_n: f64,
    /// Pairs whose numerator was higher, and lower (the sign test's counts).
    pub higher: usize,
    pub lower: usize,
}

impl Pooled {
    /// The interval at another confidence level (a Bonferroni interval of a shape's steps).
    pub fn interval_at(&self, confidence: f64) -> [f64; 2] {
        let half = student_t::quantile(0.5 + confidence / 2.0, self.df) * self.se_log;
        [(self.mean_log - half).exp(), (self.mean_log + half).exp()]
    }

    /// Whether the run-to-run part of the interval's variance outweighs the rep-to-rep part.
    pub fn run_to_run_dominates(&self) -> bool {
        let between = self.between.log_sd.powi(2) / self.runs as f64;
        between * 2.0 >= self.se_log.powi(2)
    }
}

/// The rule's knobs: the prior and the interval's quantile. Only the calibration's mutations change them.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub prior: Spread,
    pub confidence: f64,
    /// The normal quantile in place of Student's t (a mutation the calibration must catch).
    pub normal_quantile: bool,
    /// No run-to-run part at all (a mutation the calibration must catch).
    pub no_between: bool,
}

/// The rule every verdict uses.
pub const RULE: Rule = Rule { prior: PRIOR_SPREAD, confidence: CONFIDENCE, normal_quantile: false, no_between: false };

/// Pool per-rep-pair ratios over runs (`runs[i]` holds run i's ratios, each positive). `None` without a run of two
/// pairs (no rep-to-rep spread to go by), or with a ratio that is not positive.
pub fn pooled(runs: &[Vec<f64>]) -> Option<Pooled> {
    pooled_by(&RULE, runs)
}

/// [`pooled`] under `rule`.
pub fn pooled_by(rule: &Rule, runs: &[Vec<f64>]) -> Option<Pooled> {
    let runs: Vec<&Vec<f64>> = runs.iter().filter(|r| !r.is_empty()).collect();
    if runs.iter().copied().flatten().any(|x| !(x.is_finite() && *x > 0.0)) {
        return None;
    }
    let logs: Vec<Vec<f64>> = runs.iter().map(|r| r.iter().map(|x| x.ln()).collect()).collect();
    let (r, n): (usize, usize) = (logs.len(), logs.iter().map(Vec::len).sum());
    let df_within = (n - r) as f64;
    if df_within < 1.0 {
        return None;
    }
    let means: Vec<f64> = logs.iter().map(|v| mean(v)).collect();
    let mean_log = mean(&means);
    let inv_n: f64 = logs.iter().map(|v| 1.0 / v.len() as f64).sum();
    let var_within =
        logs.iter().zip(&means).map(|(v, m)| v.iter().map(|x| (x - m).powi(2)).sum::<f64>()).sum::<f64>() / df_within;
    let own_between = own_spread(&means, var_within * inv_n / r as f64);
    let between = if rule.no_between { Spread { log_sd: 0.0, df: 0.0 } } else { shrunk(rule.prior, own_between) };
    let part_between = between.log_sd.powi(2) / r as f64;
    let part_within = var_within * inv_n / (r * r) as f64;
    let var = part_between + part_within;
    if var.is_nan() || var <= 0.0 {
        // Identical ratios and no run-to-run spread: nothing to draw an interval from.
        return None;
    }
    let df = welch_df(&[(part_between, between.df), (part_within, df_within)]);
    let se_log = var.sqrt();
    let level = 0.5 + rule.confidence / 2.0;
    let q = if rule.normal_quantile { student_t::quantile(level, 1e9) } else { student_t::quantile(level, df) };
    let half = q * se_log;
    let (higher, lower) = runs.iter().copied().flatten().fold((0, 0), |(h, l), x| match x.partial_cmp(&1.0) {
        Some(std::cmp::Ordering::Greater) => (h + 1, l),
        Some(std::cmp::Ordering::Less) => (h, l + 1),
        _ => (h, l),
    });
    Some(Pooled {
        estimate: mean_log.exp(),
        interval: [(mean_log - half).exp(), (mean_log + half).exp()],
        runs: r,
        pairs: n,
        mean_log,
        se_log,
        df,
        within_log_sd: var_within.sqrt(),
        between,
        own_between,
        var_per_run: between.log_sd.powi(2) + var_within * inv_n / r as f64,
        inv_n,
        higher,
        lower,
    })
}

/// The run-to-run spread the runs' means show beyond what their pairs put into them (`within_share`: the pairs'
/// variance in a run mean, on average), the method of moments clamped at 0; `None` from fewer than two runs.
fn own_spread(means: &[f64], within_share: f64) -> Option<Spread> {
    let r = means.len();
    (r >= 2).then(|| {
        let grand = mean(means);
        let var_means = means.iter().map(|m| (m - grand).powi(2)).sum::<f64>() / (r - 1) as f64;
        Spread { log_sd: (var_means - within_share).max(0.0).sqrt(), df: (r - 1) as f64 }
    })
}

/// The claim's own spread shrunk toward the prior, each weighted by its degrees of freedom (a scaled
/// inverse-χ² prior's posterior scale); the prior alone without an own estimate.
pub fn shrunk(prior: Spread, own: Option<Spread>) -> Spread {
    match own {
        None => prior,
        Some(own) => {
            let df = prior.df + own.df;
            Spread { log_sd: ((prior.df * prior.log_sd.powi(2) + own.df * own.log_sd.powi(2)) / df).sqrt(), df }
        }
    }
}

/// Welch–Satterthwaite degrees of freedom of a sum of variance parts, each with its own degrees of freedom;
/// parts that are zero or have no degrees of freedom are left out.
fn welch_df(parts: &[(f64, f64)]) -> f64 {
    let used: Vec<(f64, f64)> = parts.iter().copied().filter(|(v, df)| *v > 0.0 && *df > 0.0).collect();
    let total: f64 = used.iter().map(|(v, _)| v).sum();
    let denom: f64 = used.iter().map(|(v, df)| v * v / df).sum();
    if denom > 0.0 { (total * total / denom).max(1.0) } else { 1.0 }
}

/// Where an interval stands against a band.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    /// The claim holds: reproduces.
    Holds,
    /// The claim fails: does not reproduce.
    Fails,
    /// Neither can be shown here.
    Undecided,
}

/// A size claim's band: [published / (1 + tol), published · (1 + tol)].
pub fn band(published: f64, tolerance: f64) -> [f64; 2] {
    [published / (1.0 + tolerance), published * (1.0 + tolerance)]
}

/// An interval inside the band holds, one wholly outside it fails, one across an edge is undecided.
pub fn against_band([lo, hi]: [f64; 2], [band_lo, band_hi]: [f64; 2]) -> Call {
    if band_lo <= lo && hi <= band_hi {
        Call::Holds
    } else if hi < band_lo || lo > band_hi {
        Call::Fails
    } else {
        Call::Undecided
    }
}

/// A size claim: our ratio is the published one, within the claim's tolerance.
pub fn size(p: &Pooled, published: f64, tolerance: f64) -> Call {
    against_band(p.interval, band(published, tolerance))
}

/// A parity claim: the two sides are the same, within the claim's tolerance.
pub fn parity(p: &Pooled, tolerance: f64) -> Call {
    size(p, 1.0, tolerance)
}

/// What a direction claim says of numerator over denominator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Higher: above 1.
    Higher,
    /// Not lower: at least 1 / (1 + tol) (the same within the tolerance, or higher).
    NotLower,
}

/// A direction claim. Higher holds when the interval lies above 1 and the sign test on the pairs agrees
/// (p < 0.05), fails when the interval lies below 1. Not lower holds when the interval lies above
/// 1 / (1 + tol), fails when it lies below.
pub fn direction(p: &Pooled, direction: Direction, tolerance: f64) -> Call {
    let [lo, hi] = p.interval;
    match direction {
        Direction::Higher => {
            let signs_agree = p.higher > p.lower && sign_test(p.higher, p.lower) < 1.0 - CONFIDENCE;
            if lo > 1.0 && signs_agree {
                Call::Holds
            } else if hi < 1.0 {
                Call::Fails
            } else {
                Call::Undecided
            }
        }
        Direction::NotLower => {
            let floor = 1.0 / (1.0 + tolerance);
            if lo >= floor {
                Call::Holds
            } else if hi < floor {
                Call::Fails
            } else {
                Call::Undecided
            }
        }
    }
}

/// A shape claim over a sweep's consecutive steps (each the ratio of a point over the one before): monotone, no
/// step below 1 − tol. It holds when every step's interval lies above 1 − tol (each at 95%: all must hold, so
/// the claim is wrongly held at most 5% of the time); it fails when some step's Bonferroni interval (95% over
/// the steps together) lies below 1 − tol.
pub fn shape(steps: &[Pooled], tolerance: f64) -> Call {
    if steps.is_empty() {
        return Call::Undecided;
    }
    let floor = 1.0 - tolerance;
    let bonferroni = 1.0 - (1.0 - CONFIDENCE) / steps.len() as f64;
    if steps.iter().all(|s| s.interval[0] >= floor) {
        Call::Holds
    } else if steps.iter().any(|s| s.interval_at(bonferroni)[1] < floor) {
        Call::Fails
    } else {
        Call::Undecided
    }
}

/// The most runs [`runs_to_decide`] counts: beyond it the estimate sits so close to the band's edge that no
/// practical number of runs decides it.
pub const MAX_RUNS_TO_DECIDE: f64 = 30.0;

/// How many runs like these in all (each with as many pairs as these had on average; at least one more than
/// these) would decide a size claim that is undecided: the runs at which the interval's half-width falls below the estimate's distance from the
/// band's nearer edge. `None` when the claim is decided already, or when more than [`MAX_RUNS_TO_DECIDE`]
/// would be needed (the estimate sits on an edge).
pub fn runs_to_decide(p: &Pooled, band: [f64; 2]) -> Option<usize> {
    let (lo, hi) = (band[0].ln(), band[1].ln());
    let margin = if (lo..=hi).contains(&p.mean_log) {
        (p.mean_log - lo).min(hi - p.mean_log)
    } else {
        (lo - p.mean_log).max(p.mean_log - hi)
    };
    if margin <= 0.0 || against_band(p.interval, band) != Call::Undecided {
        return None;
    }
    // z rather than t: the answer is a count to plan by, not a bound.
    let z = student_t::quantile(0.5 + CONFIDENCE / 2.0, 1e6);
    // At least one more run than these: a count these already reach was held back by few degrees of freedom.
    let runs = (z * z * p.var_per_run / (margin * margin)).ceil().max(p.runs as f64 + 1.0);
    (runs.is_finite() && runs <= MAX_RUNS_TO_DECIDE).then_some(runs as usize)
}

/// More pairs than this in one run is not a budget's business.
pub const MAX_ADDED_PAIRS: usize = 40;

/// How many more pairs in the newest run (which has `newest` of `p`'s pairs) would bring the interval clear of the
/// nearest of `edges` (the values an undecided claim is judged against), if the pairs keep the spread they show;
/// `None` when no number up to [`MAX_ADDED_PAIRS`] would (the run-to-run part alone is wider: only more runs decide
/// it). The budget spends these pairs as one batch and judges once after it.
pub fn pairs_to_decide(p: &Pooled, newest: usize, edges: &[f64]) -> Option<usize> {
    let distance = edges.iter().map(|e| (p.mean_log - e.ln()).abs()).reduce(f64::min)?;
    let r = p.runs as f64;
    let others_inv_n = (p.inv_n - 1.0 / newest.max(1) as f64).max(0.0);
    let t = student_t::quantile(0.5 + CONFIDENCE / 2.0, p.df);
    let half_width = |n: f64| {
        let var = p.between.log_sd.powi(2) / r + p.within_log_sd.powi(2) * (others_inv_n + 1.0 / n) / (r * r);
        t * var.sqrt()
    };
    if half_width(f64::INFINITY) >= distance {
        return None;
    }
    (newest + 1..=newest + MAX_ADDED_PAIRS).find(|n| half_width(*n as f64) < distance).map(|n| n - newest)
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

#[cfg(test)]
mod calibration;

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn one_run_carries_the_prior_spread_beside_its_pairs() {
        // Pairs at 0.5 and 0.5·e^±0.02: the interval is the prior's run-to-run spread and the pairs' own.
        let d = 0.02_f64;
        let p = pooled(&[vec![0.5 * d.exp(), 0.5 * (-d).exp(), 0.5 * d.exp(), 0.5 * (-d).exp()]]).unwrap();
        assert!(close(p.estimate, 0.5, 1e-12));
        assert_eq!((p.runs, p.pairs, p.between, p.own_between), (1, 4, PRIOR_SPREAD, None));
        let within_var = 4.0 * d * d / 3.0;
        assert!(close(p.within_log_sd, within_var.sqrt(), 1e-12), "{p:?}");
        let var = PRIOR_SPREAD.log_sd.powi(2) + within_var / 4.0;
        assert!(close(p.se_log, var.sqrt(), 1e-12), "{p:?}");
        assert!(p.run_to_run_dominates());
        // The geometric mean, not the median: 0.5, 0.5, 2 -> 0.794.
        let g = pooled(&[vec![0.5, 0.5, 2.0]]).unwrap();
        assert!(close(g.estimate, 0.25_f64.powf(1.0 / 3.0) * 2.0_f64.powf(1.0 / 3.0), 1e-12), "{}", g.estimate);
        assert_eq!((g.higher, g.lower), (1, 2));
    }

    #[test]
    fn no_run_of_two_pairs_has_no_interval() {
        assert!(pooled(&[vec![0.5]]).is_none(), "one pair");
        assert!(pooled(&[vec![0.5], vec![0.6], vec![0.55]]).is_none(), "runs of one pair: no rep-to-rep spread");
        assert!(pooled(&[vec![0.5, 0.52], vec![0.6]]).is_some(), "one run of two pairs is enough");
        assert!(pooled(&[vec![0.5, -1.0]]).is_none());
    }

    #[test]
    fn a_claims_own_runs_are_shrunk_toward_the_prior_by_their_degrees_of_freedom() {
        let quiet = |x: f64| vec![x, x * 1.01, x / 1.01];
        // Runs far apart: their own spread outweighs the prior's, and grows the interval past all three.
        let p = pooled(&[quiet(0.2), quiet(0.35), quiet(0.6)]).unwrap();
        let own = p.own_between.unwrap();
        assert_eq!((p.runs, p.pairs, own.df, p.between.df), (3, 9, 2.0, PRIOR_SPREAD.df + 2.0));
        assert!(own.log_sd > 0.5 && p.between.log_sd < own.log_sd && p.between.log_sd > PRIOR_SPREAD.log_sd);
        assert!(p.interval[0] < 0.2 && p.interval[1] > 0.6, "{:?}", p.interval);
        // Many runs that agree: their spread is near 0, and the prior's weight fades (never a bare 0).
        let agree: Vec<Vec<f64>> = (0..40).map(|i| quiet(0.5 * (1.0 + 0.001 * (i % 3) as f64))).collect();
        let p = pooled(&agree).unwrap();
        let expected = (PRIOR_SPREAD.df * PRIOR_SPREAD.log_sd.powi(2) / (PRIOR_SPREAD.df + 39.0)).sqrt();
        assert!(p.between.log_sd > 0.0 && close(p.between.log_sd, expected, 2e-3), "{:?}", p.between);
        assert_eq!(shrunk(PRIOR_SPREAD, None), PRIOR_SPREAD);
    }

    #[test]
    fn bands_directions_and_shapes_follow_their_intervals() {
        // Twenty runs whose pairs agree closely: narrow intervals.
        let at = |x: f64| pooled(&vec![vec![x * 0.99, x, x * 1.01]; 20]).unwrap();
        assert_eq!(size(&at(1.08), 1.078, 0.15), Call::Holds);
        assert_eq!(size(&at(0.32), 1.25, 0.15), Call::Fails);
        assert_eq!(size(&at(1.25 * 1.15), 1.25, 0.15), Call::Undecided, "on the band's edge");
        assert_eq!(parity(&at(1.02), 0.15), Call::Holds);
        assert_eq!(direction(&at(2.6), Direction::Higher, 0.15), Call::Holds);
        assert_eq!(direction(&at(0.3), Direction::Higher, 0.15), Call::Fails);
        assert_eq!(direction(&at(1.0), Direction::Higher, 0.15), Call::Undecided);
        assert_eq!(direction(&at(0.95), Direction::NotLower, 0.15), Call::Holds);
        assert_eq!(direction(&at(0.18), Direction::NotLower, 0.15), Call::Fails);
        // Too few pairs for the sign test: four of four higher is p = 0.125, so higher cannot be held.
        let four = pooled(&[vec![2.5, 2.6], vec![2.7, 2.6]]).unwrap();
        assert_eq!(direction(&four, Direction::Higher, 0.15), Call::Undecided);
        assert_eq!(shape(&[at(1.9), at(1.4), at(1.1)], 0.15), Call::Holds);
        assert_eq!(shape(&[at(1.9), at(0.5), at(1.1)], 0.15), Call::Fails);
        assert_eq!(shape(&[at(1.9), at(0.85)], 0.15), Call::Undecided);
        assert_eq!(shape(&[], 0.15), Call::Undecided);
        // One run carries the prior alone: a size is never shown to hold from it.
        assert_eq!(size(&pooled(&[vec![1.0, 1.01, 0.99]]).unwrap(), 1.0, 0.15), Call::Undecided);
    }

    #[test]
    fn runs_to_decide_count_what_narrows_the_interval_past_the_nearer_edge() {
        let p = pooled(&[vec![1.0, 1.02, 0.98], vec![1.01, 0.99, 1.0]]).unwrap();
        let b = band(1.0, 0.15);
        assert_eq!(size(&p, 1.0, 0.15), Call::Undecided);
        // margin ln 1.15 = 0.1398; var per run ≈ τ² of the prior shrunk by one df (0.072) + tiny: 1.96² · 0.072 /
        // 0.1398² ≈ 14.2 -> 15 runs.
        let expected = (1.96_f64.powi(2) * p.var_per_run / 1.15_f64.ln().powi(2)).ceil() as usize;
        assert_eq!(runs_to_decide(&p, b), Some(expected));
        assert!((10..=20).contains(&expected), "{expected}");
        assert_eq!(runs_to_decide(&p, band(2.0, 0.15)), None, "decided already");
    }

    #[test]
    fn pairs_decide_a_claim_only_where_the_run_to_run_part_leaves_room() {
        // Twenty quiet runs and a noisy newest one: more pairs of it bring the interval clear of 1.
        let mut runs = vec![vec![1.10, 1.11, 1.09]; 20];
        runs.push(vec![1.3, 0.9]);
        let p = pooled(&runs).unwrap();
        let more = pairs_to_decide(&p, 2, &[1.0]).unwrap();
        assert!((1..=MAX_ADDED_PAIRS).contains(&more), "{more}");
        // One run: the prior's run-to-run spread alone is wider than the distance to the band's edge.
        let one = pooled(&[vec![1.0, 1.05, 0.95]]).unwrap();
        assert_eq!(pairs_to_decide(&one, 3, &band(1.0, 0.15)), None);
        assert_eq!(pairs_to_decide(&one, 3, &[]), None, "no edge to move it off");
    }
}
