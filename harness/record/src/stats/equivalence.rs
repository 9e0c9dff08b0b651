//! Verdicts on published claims as equivalence tests: one estimator, one interval, one rule, and the
//! simulation that proves the rule's error rates at the noise this machine shows.
//!
//! - **The estimator** of a ratio is the geometric mean of its per-rep-pair ratios (each rep's numerator over
//!   the same rep's denominator, in one run). Over several runs it is the geometric mean of the runs' own.
//! - **The interval** is Student's t interval of that mean on the log scale, and carries run-to-run as well as
//!   rep-to-rep variation: its variance is τ²/R + s²·Σ(1/nᵢ)/R², with R runs of nᵢ pairs, s the pairs' pooled
//!   spread within a run and τ the between-run spread of a ratio. τ is the larger of this host's (estimated
//!   from every ratio its committed history measured in two or more comparable runs, [`between_run_spread`])
//!   and what the claim's own runs show. The degrees of freedom are Welch–Satterthwaite's over the two parts.
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

/// The between-run spread assumed on a host with no history to estimate its own from: the largest measured on
/// our hosts (log-SD 0.15), credited with few degrees of freedom.
pub const ASSUMED_SPREAD: Spread = Spread { log_sd: 0.15, df: 4.0, groups: 0 };

/// The most degrees of freedom credited to a host's between-run estimate: its ratios share runs, so they are
/// not independent evidence.
pub const HOST_DF_CAP: f64 = 20.0;

/// How the site and `lab verdicts` state the rule.
pub const VERDICT_METHOD: &str = "Each claim has a band, [published ÷ (1 + tol), published × (1 + tol)], tol \
being the claim's tolerance (15% unless the publisher's own spread says otherwise). Our figure is the geometric \
mean of the per-rep-pair ratios, pooled over every comparable run (same configuration, same hardware). Its 95% \
interval is Student's t on the log scale and carries run-to-run as well as rep-to-rep spread: the run-to-run \
part is the larger of this host's between-run spread (from every ratio its history measured in two or more \
comparable runs) and what the claim's own runs show. Interval inside the band: reproduces. Wholly outside: does \
not reproduce. Otherwise: cannot tell here, with which spread decided it and how many runs would decide it. A \
direction claim holds when the interval lies above 1 and a sign test on the pairs agrees (p < 0.05); a parity \
claim is a band around 1; a shape claim holds when no step of the sweep falls below 1 − tol. The rule's error \
rates are proven by a simulation at this host's noise: a claim outside its band reads reproduces at most 5% of \
the time, a claim that holds reads does not reproduce at most 5%.";

/// A between-run spread: the log-SD of a run's figure beyond its reps' own spread, with the degrees of freedom of
/// its estimate and the number of groups (ratios measured in two or more runs) it came from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    pub log_sd: f64,
    pub df: f64,
    pub groups: usize,
}

/// The one-way random-effects moment estimate of the between-run spread. Each group is one quantity (a ratio of
/// two points of one run) measured in two or more runs; each run holds its values on the log scale. A run with
/// fewer than two values, and a group with fewer than two such runs, says nothing and is left out. `None` when
/// no group is left.
pub fn between_run_spread(groups: &[Vec<Vec<f64>>]) -> Option<Spread> {
    let (mut sum, mut df, mut used) = (0.0, 0.0, 0);
    for runs in groups {
        let runs: Vec<&Vec<f64>> = runs.iter().filter(|r| r.len() >= 2).collect();
        if runs.len() < 2 {
            continue;
        }
        let r = runs.len() as f64;
        let means: Vec<f64> = runs.iter().map(|v| mean(v)).collect();
        let grand = mean(&means);
        let var_between = means.iter().map(|m| (m - grand).powi(2)).sum::<f64>() / (r - 1.0);
        // What the reps' own spread puts into a run mean's variance, on average over the runs.
        let var_within = runs.iter().map(|v| variance(v) / v.len() as f64).sum::<f64>() / r;
        sum += (r - 1.0) * (var_between - var_within);
        df += r - 1.0;
        used += 1;
    }
    (used > 0).then(|| Spread { log_sd: (sum / df).max(0.0).sqrt(), df: df.min(HOST_DF_CAP), groups: used })
}

/// Which estimate of the between-run spread an interval carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BetweenFrom {
    /// This host's history.
    Host,
    /// The claim's own runs, which spread more than the host's history does.
    OwnRuns,
    /// No history on this host, or too little (fewer degrees of freedom than the assumption's): [`ASSUMED_SPREAD`].
    Assumed,
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
    /// The pairs' spread within a run (log-SD); `None` when no run has two pairs.
    pub within_log_sd: Option<f64>,
    /// The between-run spread the interval carries (log-SD) and where it comes from.
    pub between_log_sd: f64,
    pub between_from: BetweenFrom,
    /// The variance one more run would add to the mean, per run: τ² + s²/n̄ (the basis of [`runs_to_decide`]).
    pub var_per_run: f64,
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
        let between = self.between_log_sd.powi(2) / self.runs as f64;
        between * 2.0 >= self.se_log.powi(2)
    }
}

/// Pool per-rep-pair ratios over runs (`runs[i]` holds run i's ratios, each positive), with `host` the host's
/// between-run spread (`None`: no history, [`ASSUMED_SPREAD`]). `None` without two pairs, or with a ratio that
/// is not positive.
pub fn pooled(runs: &[Vec<f64>], host: Option<Spread>) -> Option<Pooled> {
    let runs: Vec<Vec<f64>> = runs.iter().filter(|r| !r.is_empty()).cloned().collect();
    if runs.iter().flatten().any(|x| !(x.is_finite() && *x > 0.0)) {
        return None;
    }
    let logs: Vec<Vec<f64>> = runs.iter().map(|r| r.iter().map(|x| x.ln()).collect()).collect();
    let (r, n): (usize, usize) = (logs.len(), logs.iter().map(Vec::len).sum());
    if n < 2 {
        return None;
    }
    let means: Vec<f64> = logs.iter().map(|v| mean(v)).collect();
    let mean_log = mean(&means);
    let inv_n: f64 = logs.iter().map(|v| 1.0 / v.len() as f64).sum();
    let df_within = (n - r) as f64;
    let var_within = (df_within > 0.0).then(|| {
        logs.iter().zip(&means).map(|(v, m)| v.iter().map(|x| (x - m).powi(2)).sum::<f64>()).sum::<f64>() / df_within
    });
    // An estimate from fewer degrees of freedom than the assumption's own (one ratio in two runs) is no
    // better than the assumption: a log-SD of 0 from one df would claim runs never differ.
    let (host, host_from) = match host.filter(|h| h.df >= ASSUMED_SPREAD.df) {
        Some(h) => (h, BetweenFrom::Host),
        None => (ASSUMED_SPREAD, BetweenFrom::Assumed),
    };
    // What the claim's own runs show beyond their reps' spread.
    let own = (r >= 2).then(|| {
        let var_means = means.iter().map(|m| (m - mean_log).powi(2)).sum::<f64>() / (r - 1) as f64;
        (var_means - var_within.unwrap_or(0.0) * inv_n / r as f64).max(0.0)
    });
    let (tau2, df_between, between_from) = match own {
        Some(own) if own > host.log_sd.powi(2) => (own, (r - 1) as f64, BetweenFrom::OwnRuns),
        _ => (host.log_sd.powi(2), host.df, host_from),
    };
    let part_between = tau2 / r as f64;
    let part_within = var_within.map_or(0.0, |v| v * inv_n / (r * r) as f64);
    let var = part_between + part_within;
    if var.is_nan() || var <= 0.0 {
        // Identical ratios and no between-run spread: nothing to draw an interval from.
        return None;
    }
    let df = welch_df(&[(part_between, df_between), (part_within, df_within)]);
    let se_log = var.sqrt();
    let half = student_t::quantile(0.5 + CONFIDENCE / 2.0, df) * se_log;
    let (higher, lower) = runs.iter().flatten().fold((0, 0), |(h, l), x| match x.partial_cmp(&1.0) {
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
        within_log_sd: var_within.map(f64::sqrt),
        between_log_sd: tau2.sqrt(),
        between_from,
        var_per_run: tau2 + var_within.unwrap_or(0.0) * inv_n / r as f64,
        higher,
        lower,
    })
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

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

fn variance(xs: &[f64]) -> f64 {
    let m = mean(xs);
    xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64
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
    fn one_run_carries_the_hosts_between_run_spread_beside_its_pairs() {
        let host = Spread { log_sd: 0.1, df: 20.0, groups: 10 };
        // Pairs at 0.5 exactly: the interval is the host's run-to-run spread alone.
        let p = pooled(&[vec![0.5, 0.5, 0.5, 0.5]], Some(host)).unwrap();
        assert!(close(p.estimate, 0.5, 1e-12));
        assert_eq!((p.runs, p.pairs, p.between_from), (1, 4, BetweenFrom::Host));
        assert!(close(p.se_log, 0.1, 1e-12) && close(p.df, 20.0, 1e-9), "{p:?}");
        let half = student_t::quantile(0.975, 20.0) * 0.1;
        assert!(close(p.interval[0], 0.5 * (-half).exp(), 1e-9) && close(p.interval[1], 0.5 * half.exp(), 1e-9));
        assert!(p.run_to_run_dominates());
        // The geometric mean, not the median: 0.5, 0.5, 2 -> 0.794.
        let g = pooled(&[vec![0.5, 0.5, 2.0]], Some(host)).unwrap();
        assert!(close(g.estimate, 0.25_f64.powf(1.0 / 3.0) * 2.0_f64.powf(1.0 / 3.0), 1e-12), "{}", g.estimate);
        assert_eq!((g.higher, g.lower), (1, 2));
    }

    #[test]
    fn runs_that_spread_more_than_the_host_carry_their_own_spread() {
        let host = Spread { log_sd: 0.01, df: 20.0, groups: 10 };
        let quiet = |x: f64| vec![x, x * 1.01, x / 1.01];
        let p = pooled(&[quiet(0.22), quiet(0.31), quiet(0.41)], Some(host)).unwrap();
        assert_eq!((p.between_from, p.runs, p.pairs), (BetweenFrom::OwnRuns, 3, 9));
        assert!(p.between_log_sd > 0.25, "{p:?}");
        // Two degrees of freedom from three runs: an interval wide enough to hold all three.
        assert!(p.interval[0] < 0.22 && p.interval[1] > 0.41, "{:?}", p.interval);
        let none = pooled(&[vec![0.5]], Some(host));
        assert!(none.is_none(), "one pair has no interval");
        assert!(pooled(&[vec![0.5, -1.0]], Some(host)).is_none());
        let assumed = pooled(&[vec![0.5, 0.52]], None).unwrap();
        assert_eq!(assumed.between_from, BetweenFrom::Assumed);
        let thin = Spread { log_sd: 0.0, df: 1.0, groups: 1 };
        let p = pooled(&[vec![0.5, 0.52]], Some(thin)).unwrap();
        assert_eq!(
            (p.between_from, p.between_log_sd),
            (BetweenFrom::Assumed, ASSUMED_SPREAD.log_sd),
            "one df says little"
        );
    }

    #[test]
    fn the_between_run_spread_is_what_run_means_spread_beyond_their_reps() {
        // Two runs of [1, 3] and [5, 7] on the log scale: run means 2 and 6 (variance 8), each mean's own
        // variance 2 / 2 = 1: τ² = 8 − 1 = 7.
        let s = between_run_spread(&[vec![vec![1.0, 3.0], vec![5.0, 7.0]]]).unwrap();
        assert!(close(s.log_sd, 7.0_f64.sqrt(), 1e-12) && s.df == 1.0 && s.groups == 1, "{s:?}");
        // Runs whose means differ less than their reps explain: no between-run spread, not a negative one.
        let s = between_run_spread(&[vec![vec![0.0, 2.0], vec![0.1, 2.1]]]).unwrap();
        assert_eq!(s.log_sd, 0.0);
        // A single run, or runs of one rep, say nothing.
        assert!(between_run_spread(&[vec![vec![1.0, 2.0]], vec![vec![1.0], vec![2.0]]]).is_none());
    }

    #[test]
    fn bands_directions_and_shapes_follow_their_intervals() {
        let host = Spread { log_sd: 0.02, df: 20.0, groups: 10 };
        let at = |x: f64| pooled(&[vec![x * 0.99, x, x * 1.01, x, x * 0.995, x * 1.005]], Some(host)).unwrap();
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
        let four = pooled(&[vec![2.5, 2.6, 2.7, 2.6]], Some(host)).unwrap();
        assert_eq!(direction(&four, Direction::Higher, 0.15), Call::Undecided);
        assert_eq!(shape(&[at(1.9), at(1.4), at(1.1)], 0.15), Call::Holds);
        assert_eq!(shape(&[at(1.9), at(0.5), at(1.1)], 0.15), Call::Fails);
        assert_eq!(shape(&[at(1.9), at(0.85)], 0.15), Call::Undecided);
        assert_eq!(shape(&[], 0.15), Call::Undecided);
    }

    #[test]
    fn runs_to_decide_count_what_narrows_the_interval_past_the_nearer_edge() {
        let host = Spread { log_sd: 0.12, df: 20.0, groups: 10 };
        let p = pooled(&[vec![1.0, 1.02, 0.98, 1.0, 1.01, 0.99]], Some(host)).unwrap();
        let b = band(1.0, 0.15);
        assert_eq!(size(&p, 1.0, 0.15), Call::Undecided);
        // margin ln 1.15 = 0.1398; var per run ≈ 0.0144 + tiny: (1.96² · 0.0145 / 0.1398²) ≈ 2.85 -> 3 runs.
        assert_eq!(runs_to_decide(&p, b), Some(3));
        assert_eq!(runs_to_decide(&p, band(2.0, 0.15)), None, "decided already");
    }
}
