//! How precisely a point's median is known: a distribution-free 95% interval of the median, from order
//! statistics (no assumption about the shape of the reps' spread, which on a shared machine is rarely normal),
//! and the precision it gives, the farthest the interval reaches from the median relative to the median.
//!
//! For n sorted samples the interval [x(k), x(n+1−k)] holds the true median with probability
//! 1 − 2·P(B ≤ k−1), B ~ Binomial(n, ½). The interval is the narrowest such one with at least 95%: k = 1 for
//! n = 6 to 8 (96.9% to 99.2%), k = 2 for n = 9 to 11, k = 3 for n = 12 to 14 and so on. Below six samples
//! no interval reaches 95% (five give [min, max] at 93.75%), so a precision target needs at least six reps.

/// The interval's confidence.
pub const CONFIDENCE: f64 = 0.95;

/// The fewest samples that have an interval of the median at [`CONFIDENCE`].
pub const MIN_SAMPLES: usize = 6;

/// How the site describes the precision column.
pub const PRECISION_METHOD: &str = "Precision is how far the 95% interval of the median reaches from it, relative \
to it: ±5% means the true median lies within 5% of the one shown, 19 times in 20. The interval is distribution-free \
(order statistics of the reps: [x(k), x(n+1−k)] with the binomial coverage of the median at least 95%), so it needs \
at least 6 reps. A run with a precision target adds interleaved reps to every point, and to both sides of every \
headline ratio, until the target is met or the point's budget of reps and minutes cannot buy a narrower interval \
(six reps first, then nine, twelve, ...: seven and eight still give [min, max]); a figure whose target was not met \
says so.";

/// The 95% interval of the median of samples already sorted ascending; `None` for fewer than [`MIN_SAMPLES`].
pub fn median_interval(sorted: &[f64]) -> Option<[f64; 2]> {
    let n = sorted.len();
    let k = interval_rank(n)?;
    Some([sorted[k - 1], sorted[n - k]])
}

/// The rank k of the interval [x(k), x(n+1−k)] for n samples; `None` for fewer than [`MIN_SAMPLES`].
fn interval_rank(n: usize) -> Option<usize> {
    if n < MIN_SAMPLES {
        return None;
    }
    // P(B = i) for i = 0, 1, ..., built up term by term; `below` is P(B ≤ k − 1).
    let mut term = 0.5_f64.powi(n as i32);
    let mut below = term;
    let mut k = 1;
    while k < n / 2 {
        // P(B = k) from P(B = k − 1).
        term *= (n - k + 1) as f64 / k as f64;
        if 1.0 - 2.0 * (below + term) < CONFIDENCE {
            break;
        }
        below += term;
        k += 1;
    }
    debug_assert!(1.0 - 2.0 * below >= CONFIDENCE);
    Some(k)
}

/// The fewest samples, more than `n`, whose interval can be narrower than that of `n` samples: 6 below six, then
/// the next count at which the interval moves one order statistic inward (9, 12, ...). Between them an added
/// sample can only keep or widen the interval (seven and eight samples still give [min, max]), so a rep that
/// does not reach this count buys no precision.
pub fn samples_for_narrower(n: usize) -> usize {
    let Some(k) = interval_rank(n) else { return MIN_SAMPLES };
    (n + 1..).find(|&m| interval_rank(m).is_some_and(|r| r > k)).expect("the rank grows without bound")
}

/// The precision of `median` given its interval: the farther bound's distance from it, over it. `None` for a
/// zero median (no relative precision).
pub fn relative_half_width(median: f64, [lo, hi]: [f64; 2]) -> Option<f64> {
    (median != 0.0 && median.is_finite()).then(|| (median - lo).max(hi - median) / median.abs())
}

/// `±4.2%`: a precision as the site and the summary print it.
pub fn precision_text(precision: f64) -> String {
    format!("±{:.1}%", precision * 100.0)
}

/// `±4.2%`, or `— (n < 6)` when there are too few samples for an interval.
pub fn reached_text(precision: Option<f64>) -> String {
    precision.map_or_else(|| format!("— (n < {MIN_SAMPLES})"), precision_text)
}

/// `target ±5.0%: met` or `target ±5.0%: not met` (no interval never meets a target), and whether it was met.
pub fn target_note(precision: Option<f64>, target: f64) -> (String, bool) {
    let met = precision.is_some_and(|p| p <= target);
    (format!("target {}: {}", precision_text(target), if met { "met" } else { "not met" }), met)
}

/// A precision target (a fraction: 0.05 for 5%) as typed: `5%`, `0.05`, or `off`.
pub fn parse_target(text: &str) -> Result<Option<f64>, String> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let value = match t.strip_suffix('%') {
        Some(pct) => pct.trim().parse::<f64>().map(|p| p / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| format!("{text:?} is not a precision: give a percentage like 5%, a fraction like 0.05, or off"))?;
    if !(value > 0.0 && value < 1.0) {
        return Err(format!("{text:?}: a precision target lies between 0% and 100% (e.g. 5%), or is off"));
    }
    Ok(Some(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1 − 2·P(B ≤ k−1) for B ~ Binomial(n, ½), summed directly.
    fn coverage(n: usize, k: usize) -> f64 {
        let choose = |n: usize, i: usize| (0..i).fold(1.0, |c, j| c * (n - j) as f64 / (j + 1) as f64);
        1.0 - 2.0 * (0..k).map(|i| choose(n, i)).sum::<f64>() / 2f64.powi(n as i32)
    }

    #[test]
    fn the_interval_is_the_narrowest_order_statistics_with_95_percent_coverage() {
        let xs = |n: usize| (1..=n).map(|i| i as f64).collect::<Vec<_>>();
        assert_eq!(median_interval(&xs(5)), None, "five samples cover the median 93.75% at best");
        assert_eq!(median_interval(&xs(6)), Some([1.0, 6.0]));
        assert_eq!(median_interval(&xs(8)), Some([1.0, 8.0]));
        assert_eq!(median_interval(&xs(9)), Some([2.0, 8.0]));
        assert_eq!(median_interval(&xs(12)), Some([3.0, 10.0]));
        for n in MIN_SAMPLES..=100 {
            let [lo, _] = median_interval(&xs(n)).unwrap();
            let k = lo as usize;
            assert!(coverage(n, k) >= CONFIDENCE, "n {n} k {k}: {}", coverage(n, k));
            assert!(coverage(n, k + 1) < CONFIDENCE, "n {n}: k {} would do", k + 1);
        }
    }

    #[test]
    fn a_narrower_interval_needs_six_samples_then_the_next_rank_up() {
        assert_eq!(samples_for_narrower(0), 6);
        assert_eq!(samples_for_narrower(5), 6);
        assert_eq!(samples_for_narrower(6), 9, "seven and eight samples still give [min, max]");
        assert_eq!(samples_for_narrower(8), 9);
        assert_eq!(samples_for_narrower(9), 12);
        for n in MIN_SAMPLES..=100 {
            let next = samples_for_narrower(n);
            assert_eq!(interval_rank(next), interval_rank(n).map(|k| k + 1), "n {n}");
            assert_eq!(interval_rank(next - 1), interval_rank(n), "n {n}: {} would do", next - 1);
        }
    }

    #[test]
    fn the_interval_covers_the_true_median_at_least_95_percent_of_the_time() {
        // Skewed samples (exponential), seeded: the interval holds the true median, ln 2.
        let mut rng = fastrand::Rng::with_seed(7);
        for n in [6, 10, 25] {
            let hits = (0..4000)
                .filter(|_| {
                    let mut xs: Vec<f64> = (0..n).map(|_| -(1.0 - rng.f64()).ln()).collect();
                    xs.sort_by(f64::total_cmp);
                    let [lo, hi] = median_interval(&xs).unwrap();
                    lo <= 2f64.ln() && 2f64.ln() <= hi
                })
                .count();
            assert!(hits as f64 / 4000.0 >= 0.94, "n {n}: {hits} of 4000");
        }
    }

    #[test]
    fn precision_is_the_farther_bound_relative_to_the_median() {
        assert_eq!(relative_half_width(100.0, [97.0, 104.0]), Some(0.04));
        assert_eq!(relative_half_width(0.0, [-1.0, 1.0]), None);
        assert_eq!(precision_text(0.0412), "±4.1%");
    }

    #[test]
    fn targets_are_percentages_fractions_or_off_and_anything_else_says_what_would_do() {
        assert_eq!(parse_target("5%"), Ok(Some(0.05)));
        assert_eq!(parse_target("0.02"), Ok(Some(0.02)));
        assert_eq!(parse_target("off"), Ok(None));
        assert!(parse_target("five").unwrap_err().contains("like 5%"));
        assert!(parse_target("150%").unwrap_err().contains("between 0% and 100%"));
        assert!(parse_target("0").is_err());
    }

    #[test]
    fn a_target_is_met_only_by_an_interval_within_it() {
        assert_eq!(target_note(Some(0.05), 0.05), ("target ±5.0%: met".into(), true));
        assert_eq!(target_note(Some(0.051), 0.05), ("target ±5.0%: not met".into(), false));
        assert_eq!(target_note(None, 0.05), ("target ±5.0%: not met".into(), false));
        assert_eq!(reached_text(None), "— (n < 6)");
        assert_eq!(reached_text(Some(0.031)), "±3.1%");
    }
}
