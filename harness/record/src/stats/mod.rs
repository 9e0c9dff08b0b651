//! Summary statistics across repetitions, computed here once for every arm, the runner and the site.
//!
//! - Quantiles are **nearest-rank**: the p-th percentile of n sorted samples is the smallest sample with at
//!   least p% of the samples at or below it, the sample at rank ⌈p/100 · n⌉ (rank 1 for p = 0). It is always
//!   a value that was measured, never an interpolation.
//! - The median is that quantile at p = 50: the middle sample for odd n, the lower of the middle pair for
//!   even n.
//! - The 95% confidence interval is Student's t interval of the mean, mean ± t(0.975, n−1) · s/√n; it needs
//!   n ≥ 2. min and max are always reported beside it.
//! - The coefficient of variation (CV) is the sample standard deviation over the mean: the rep-to-rep noise
//!   of one point. It needs n ≥ 2 and a non-zero mean.
//! - A comparison of two arms is summarised per rep pair: numerator and denominator of the same rep give one
//!   ratio. The ratios' geometric mean is the figure; their 95% interval is taken on the log scale (Student's t
//!   interval of the mean of ln(ratio), mapped back with exp), so it is never negative and 2× and 0.5× sit
//!   equally far from 1×.

use serde::{Deserialize, Serialize};

pub mod blocks;
pub mod change_points;
pub mod equivalence;
pub mod precision;
pub mod prior;
pub mod rank_test;
pub mod student_t;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    /// Nearest-rank median.
    pub median: f64,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    /// Sample standard deviation (n-1); absent for n < 2.
    pub stddev: Option<f64>,
    /// Student-t 95% interval of the mean; absent for n < 2.
    pub ci95: Option<[f64; 2]>,
    /// Coefficient of variation, stddev / mean; absent for n < 2 or a zero mean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cv: Option<f64>,
    /// Distribution-free 95% interval of the median ([`precision`]); absent for n < 6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_ci95: Option<[f64; 2]>,
    /// Ratios only ([`summarize_ratios`]): the geometric mean, the figure a ratio prints, at the centre of its
    /// log-scale interval; absent when a ratio is not positive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub geomean: Option<f64>,
}

impl Summary {
    /// How precisely the median is known: the farther bound of its 95% interval from it, relative to it (0.05
    /// for ±5%); `None` without an interval (n < 6) or for a zero median.
    pub fn precision(&self) -> Option<f64> {
        precision::relative_half_width(self.median, self.median_ci95?)
    }
}

/// How the site describes [`Summary`]: the median, the interval and the CV.
pub const CI_METHOD: &str = "Medians are nearest-rank (the middle rep for an odd n, the lower of the middle pair for \
an even n). 95% CI: Student's t interval of the mean across reps, mean ± t(0.975, n−1)·s/√n; shown as — when n < 2. \
CV (coefficient of variation) is the reps' sample standard deviation over their mean: the rep-to-rep noise. \
The bar is the median; whiskers span min–max.";

/// How the site describes ratios between arms and when it calls them within noise.
pub const RATIO_METHOD: &str = "Ratios are computed per rep pair: each rep's numerator over the same rep's \
denominator, both measured in the same run; the figure is the geometric mean of those ratios. Its 95% CI is \
taken on the log scale: Student's t interval of the mean of ln(ratio), mapped back with exp, so it is centred \
on the figure, never negative, and 2× and 0.5× lie equally far from 1×. A comparison is within noise when that interval spans 1.0 (or, with \
fewer than two pairs, when the two arms' own intervals overlap).";

/// Summarise finite samples; `None` if there are none.
pub fn summarize(samples: &[f64]) -> Option<Summary> {
    let xs = sorted_finite(samples);
    let n = xs.len();
    let median = percentile(&xs, 50.0)?;
    let mean = xs.iter().sum::<f64>() / n as f64;
    let (stddev, ci95, cv) = if n >= 2 {
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let s = var.sqrt();
        let half = t_975(n - 1) * s / (n as f64).sqrt();
        let cv = (mean != 0.0).then(|| s / mean.abs());
        (Some(s), Some([mean - half, mean + half]), cv)
    } else {
        (None, None, None)
    };
    let median_ci95 = precision::median_interval(&xs);
    Some(Summary { n, median, mean, min: xs[0], max: xs[n - 1], stddev, ci95, cv, median_ci95, geomean: None })
}

/// The finite samples, sorted ascending.
pub fn sorted_finite(samples: &[f64]) -> Vec<f64> {
    let mut xs: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    xs.sort_by(f64::total_cmp);
    xs
}

/// Nearest-rank percentile (`p` in 0..=100) of samples already sorted ascending; `None` if there are none.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    Some(sorted[rank.min(sorted.len()) - 1])
}

/// Nearest-rank median of finite samples in any order; `None` if there are none.
pub fn median(samples: &[f64]) -> Option<f64> {
    percentile(&sorted_finite(samples), 50.0)
}

/// Two-sided 95% critical value of Student's t with `df` degrees of freedom.
pub fn t_975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::NAN,
        1..=30 => TABLE[df - 1],
        31..=60 => 2.000,
        61..=120 => 1.980,
        _ => 1.960,
    }
}

/// Welch's 95% interval of mean(ln b) − mean(ln a), mapped back with exp: an interval of the ratio B/A. `None`
/// unless both sides have two or more positive values.
pub fn welch_ratio_interval(a: &[f64], b: &[f64]) -> Option<[f64; 2]> {
    let logs = |xs: &[f64]| -> Option<(f64, f64, f64)> {
        if xs.len() < 2 || xs.iter().any(|x| *x <= 0.0 || !x.is_finite()) {
            return None;
        }
        let n = xs.len() as f64;
        let mean = xs.iter().map(|x| x.ln()).sum::<f64>() / n;
        let var = xs.iter().map(|x| (x.ln() - mean).powi(2)).sum::<f64>() / (n - 1.0);
        Some((mean, var / n, n))
    };
    let ((ma, va, na), (mb, vb, nb)) = (logs(a)?, logs(b)?);
    let se2 = va + vb;
    // Welch–Satterthwaite degrees of freedom (at least the smaller side's n − 1).
    let df = if se2 > 0.0 { se2 * se2 / (va * va / (na - 1.0) + vb * vb / (nb - 1.0)) } else { na.min(nb) - 1.0 };
    let half = t_975(df.floor().max(1.0) as usize) * se2.sqrt();
    let d = mb - ma;
    Some([(d - half).exp(), (d + half).exp()])
}

/// Summarise ratios (positive, finite samples): median, min, max and CV as [`summarize`] gives them, the
/// geometric mean, and the 95% interval on the log scale around it, `exp(mean(ln r) ± t(0.975, n−1) ·
/// s(ln r)/√n)`, which is always positive. A non-positive ratio has no logarithm: such samples keep no geometric
/// mean and no interval. `None` if there are no samples.
pub fn summarize_ratios(samples: &[f64]) -> Option<Summary> {
    let mut s = summarize(samples)?;
    let xs = sorted_finite(samples);
    s.ci95 = None;
    s.geomean = geometric_mean(&xs);
    if s.geomean.is_none() || s.n < 2 {
        return Some(s);
    }
    let logs: Vec<f64> = xs.iter().map(|x| x.ln()).collect();
    let mean = logs.iter().sum::<f64>() / logs.len() as f64;
    let var = logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (logs.len() - 1) as f64;
    let half = t_975(logs.len() - 1) * var.sqrt() / (logs.len() as f64).sqrt();
    s.ci95 = Some([(mean - half).exp(), (mean + half).exp()]);
    Some(s)
}

/// exp(mean ln x) of positive, finite samples: the figure a ratio prints. `None` for no samples or one that is
/// not positive and finite (it has no logarithm).
pub fn geometric_mean(samples: &[f64]) -> Option<f64> {
    let positive = !samples.is_empty() && samples.iter().all(|x| *x > 0.0 && x.is_finite());
    positive.then(|| (samples.iter().map(|x| x.ln()).sum::<f64>() / samples.len() as f64).exp())
}

/// One ratio, e.g. of two published figures; `None` if the base is zero or either side is not finite.
pub fn ratio(numerator: f64, denominator: f64) -> Option<f64> {
    (denominator != 0.0 && numerator.is_finite() && denominator.is_finite()).then(|| numerator / denominator)
}

/// The summary of per-pair ratios: each `(numerator, denominator)` is one rep of both arms. Pairs without a
/// defined ratio (zero base, non-finite side) are left out; `None` if no pair is left.
pub fn paired_ratios(pairs: &[(f64, f64)]) -> Option<Summary> {
    let ratios: Vec<f64> = pairs.iter().filter_map(|&(num, den)| ratio(num, den)).collect();
    summarize_ratios(&ratios)
}

/// Whether a ratio's 95% interval includes 1.0, i.e. the data cannot tell the two sides apart. `None`
/// without an interval (n < 2).
pub fn ratio_spans_one(ratios: &Summary) -> Option<bool> {
    ratios.ci95.map(|[lo, hi]| lo <= 1.0 && 1.0 <= hi)
}

/// Whether two summaries' 95% intervals overlap; `None` unless both have one.
pub fn intervals_overlap(a: &Summary, b: &Summary) -> Option<bool> {
    let ([a_lo, a_hi], [b_lo, b_hi]) = (a.ci95?, b.ci95?);
    Some(a_lo <= b_hi && b_lo <= a_hi)
}

/// A standard normal draw (Box–Muller; 1 − u keeps the logarithm finite), for the simulations that calibrate the rules.
#[cfg(test)]
pub(crate) fn normal(rng: &mut fastrand::Rng) -> f64 {
    let (u, v) = (1.0 - rng.f64(), rng.f64());
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-3
    }

    #[test]
    fn the_welch_ratio_interval_is_centred_on_the_ratio_of_geometric_means() {
        let a = [100.0, 110.0, 90.0, 105.0];
        let b: Vec<f64> = a.iter().map(|x| 2.0 * x).collect();
        let [lo, hi] = welch_ratio_interval(&a, &b).unwrap();
        // Equal spreads on the log scale: symmetric around ln 2, so lo · hi = 4.
        assert!(lo < 2.0 && hi > 2.0 && close(lo * hi, 4.0), "{lo} {hi}");
        // s(ln a) = 0.0860, se = s·√(2/4), df = 6, t = 2.447: half-width 0.1488 on the log scale.
        assert!(close((hi / lo).ln() / 2.0, 0.1488), "{lo} {hi}");
        assert!(welch_ratio_interval(&a[..1], &b).is_none(), "one value has no spread");
        assert!(welch_ratio_interval(&[1.0, 0.0], &b).is_none(), "a zero has no logarithm");
    }

    #[test]
    fn known_inputs_give_known_summaries() {
        let s = summarize(&[10.0, 12.0, 14.0]).unwrap();
        assert_eq!((s.n, s.median, s.mean, s.min, s.max), (3, 12.0, 12.0, 10.0, 14.0));
        assert_eq!(s.stddev, Some(2.0));
        // 12 ± 4.303 * 2 / sqrt(3) = 12 ± 4.9687
        let [lo, hi] = s.ci95.unwrap();
        assert!(close(lo, 7.0313) && close(hi, 16.9687), "{lo} {hi}");
        // 2 / 12
        assert!(close(s.cv.unwrap(), 0.16667));
    }

    #[test]
    fn the_median_is_nearest_rank_and_one_sample_has_no_interval_or_cv() {
        // Even n takes the lower of the middle pair, never their average; odd n the middle sample.
        assert_eq!(summarize(&[4.0, 1.0, 3.0, 2.0]).unwrap().median, 2.0);
        assert_eq!(summarize(&[30.0, 10.0, 20.0]).unwrap().median, 20.0);
        assert_eq!(median(&[5.0, f64::NAN, 1.0]), Some(1.0));
        let one = summarize(&[7.0]).unwrap();
        assert_eq!((one.median, one.ci95, one.stddev, one.cv), (7.0, None, None, None));
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[f64::NAN]).is_none());
        assert_eq!(summarize(&[-1.0, 1.0]).unwrap().cv, None, "a zero mean has no CV");
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let xs: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&xs, 50.0), Some(50.0));
        assert_eq!(percentile(&xs, 99.0), Some(99.0));
        assert_eq!(percentile(&xs, 99.5), Some(100.0));
        assert_eq!(percentile(&xs, 0.0), Some(1.0));
        assert_eq!(percentile(&[3.0], 99.0), Some(3.0));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn the_geometric_mean_needs_positive_finite_samples() {
        assert!(close(geometric_mean(&[0.5, 2.0]).unwrap(), 1.0));
        assert!(close(geometric_mean(&[2.0, 8.0]).unwrap(), 4.0));
        assert_eq!(geometric_mean(&[]), None);
        assert_eq!(geometric_mean(&[1.0, 0.0]), None);
        assert_eq!(geometric_mean(&[1.0, f64::NAN]), None);
        assert_eq!(summarize_ratios(&[2.0, 8.0]).unwrap().geomean, geometric_mean(&[2.0, 8.0]));
    }

    #[test]
    fn ratios_refuse_a_zero_base() {
        assert_eq!(ratio(1.0, 2.0), Some(0.5));
        assert_eq!(ratio(1.0, 0.0), None);
    }

    #[test]
    fn paired_ratios_are_taken_per_rep_and_get_their_own_interval() {
        // Per pair: 0.5, 0.6, 0.7 (not the ratio of medians 600/1000 with the arms' own spreads).
        let s = paired_ratios(&[(500.0, 1000.0), (720.0, 1200.0), (700.0, 1000.0), (1.0, 0.0)]).unwrap();
        assert_eq!(s.n, 3);
        assert!(close(s.median, 0.6) && close(s.mean, 0.6));
        // exp(mean(ln r) ± 4.303 * s(ln r) / sqrt(3)) over ln 0.5, ln 0.6, ln 0.7
        let [lo, hi] = s.ci95.unwrap();
        assert!(close(lo, 0.39115) && close(hi, 0.90324), "{lo} {hi}");
        assert_eq!(ratio_spans_one(&s), Some(false));
        let noisy = paired_ratios(&[(0.8, 1.0), (1.3, 1.0), (1.0, 1.0)]).unwrap();
        assert_eq!(ratio_spans_one(&noisy), Some(true));
        assert_eq!(ratio_spans_one(&paired_ratios(&[(1.0, 2.0)]).unwrap()), None);
        assert!(paired_ratios(&[(1.0, 0.0)]).is_none());
    }

    #[test]
    fn a_ratio_interval_is_never_negative_however_noisy_the_pairs() {
        // The index once showed 1.23×, 95% CI -1.56× – 5.49×: a linear interval of very noisy ratios.
        let wild = [0.2, 1.23, 6.0];
        let [lo, hi] = summarize(&wild).unwrap().ci95.unwrap();
        assert!(lo < 0.0, "the linear interval goes negative ({lo} – {hi})");
        let [lo, hi] = summarize_ratios(&wild).unwrap().ci95.unwrap();
        assert!(lo > 0.0 && lo < 1.23 && hi > 1.23, "{lo} – {hi}");
        // Symmetric on the log scale: r and 1/r give reciprocal bounds.
        let [a, b] = summarize_ratios(&[0.5, 1.0, 2.0]).unwrap().ci95.unwrap();
        assert!(close(a * b, 1.0), "{a} {b}");
        // A ratio that is not positive has no logarithm: no interval rather than a wrong one.
        assert_eq!(summarize_ratios(&[-1.0, 2.0, 3.0]).unwrap().ci95, None);
        assert_eq!(summarize_ratios(&[2.0]).unwrap().ci95, None);
    }

    #[test]
    fn intervals_overlap_only_when_they_share_a_value() {
        let a = summarize(&[10.0, 12.0, 14.0]).unwrap(); // 7.03 – 16.97
        let b = summarize(&[15.0, 16.0, 17.0]).unwrap(); // 13.52 – 18.48
        let c = summarize(&[100.0, 101.0, 102.0]).unwrap();
        assert_eq!(intervals_overlap(&a, &b), Some(true));
        assert_eq!(intervals_overlap(&a, &c), Some(false));
        assert_eq!(intervals_overlap(&a, &summarize(&[1.0]).unwrap()), None);
    }
}
