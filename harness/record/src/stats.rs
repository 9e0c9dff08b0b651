//! Summary statistics across repetitions, computed here once for the runner and the site alike.
//!
//! The headline is the median. The 95% confidence interval is Student's t interval of the mean
//! (mean ± t(0.975, n-1) · s/√n); it needs n ≥ 2. min and max are always reported beside it.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    /// Sample standard deviation (n-1); absent for n < 2.
    pub stddev: Option<f64>,
    /// Student-t 95% interval of the mean; absent for n < 2.
    pub ci95: Option<[f64; 2]>,
}

/// How the site describes [`Summary::ci95`].
pub const CI_METHOD: &str = "95% CI: Student's t interval of the mean across reps, mean ± t(0.975, n−1)·s/√n; \
shown as — when n < 2. The bar is the median; whiskers span min–max.";

/// Summarise finite samples; `None` if there are none.
pub fn summarize(samples: &[f64]) -> Option<Summary> {
    let mut xs: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    let median = if n % 2 == 1 { xs[n / 2] } else { (xs[n / 2 - 1] + xs[n / 2]) / 2.0 };
    let mean = xs.iter().sum::<f64>() / n as f64;
    let (stddev, ci95) = if n >= 2 {
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let s = var.sqrt();
        let half = t_975(n - 1) * s / (n as f64).sqrt();
        (Some(s), Some([mean - half, mean + half]))
    } else {
        (None, None)
    };
    Some(Summary { n, median, mean, min: xs[0], max: xs[n - 1], stddev, ci95 })
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

/// Ratio of two medians measured in the same run (e.g. framework/raw); `None` if the base is zero.
pub fn ratio(numerator: f64, denominator: f64) -> Option<f64> {
    (denominator != 0.0 && numerator.is_finite() && denominator.is_finite()).then(|| numerator / denominator)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_inputs_give_known_summaries() {
        let s = summarize(&[10.0, 12.0, 14.0]).unwrap();
        assert_eq!((s.n, s.median, s.mean, s.min, s.max), (3, 12.0, 12.0, 10.0, 14.0));
        assert_eq!(s.stddev, Some(2.0));
        // 12 ± 4.303 * 2 / sqrt(3) = 12 ± 4.9687
        let [lo, hi] = s.ci95.unwrap();
        assert!((lo - 7.0313).abs() < 1e-3 && (hi - 16.9687).abs() < 1e-3, "{lo} {hi}");
    }

    #[test]
    fn even_counts_take_the_middle_pair_and_one_sample_has_no_interval() {
        assert_eq!(summarize(&[4.0, 1.0, 3.0, 2.0]).unwrap().median, 2.5);
        let one = summarize(&[7.0]).unwrap();
        assert_eq!((one.median, one.ci95, one.stddev), (7.0, None, None));
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[f64::NAN]).is_none());
    }

    #[test]
    fn ratios_refuse_a_zero_base() {
        assert_eq!(ratio(1.0, 2.0), Some(0.5));
        assert_eq!(ratio(1.0, 0.0), None);
    }
}
