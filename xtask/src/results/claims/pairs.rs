//! The rep pairs a claim compares: the records of one run at each of its two points, paired by rep where they did
//! the same work, and their metric's values and ratios. Judging a claim and saying why both read them.

use super::*;

/// The rep pairs of two points that did the same work under `contract`, and why the others were left out.
pub(super) fn pair_reps<'r>(
    num_records: &[&'r Record],
    den_records: &[&'r Record],
    metric: &str,
    contract: &Contract,
) -> parity::Sorted<'r> {
    let (a, b) = (drawn_by_rep(num_records, metric), drawn_by_rep(den_records, metric));
    parity::sort(contract, a.iter().filter_map(|(rep, x)| b.get(rep).map(|y| (*x, *y))))
}

/// The metric's values of each holding pair.
pub(super) fn values(sorted: &parity::Sorted, metric: &str) -> Vec<(f64, f64)> {
    let value = |r: &Record| r.measurement.metrics[metric].value;
    sorted.holding.iter().map(|(x, y)| (value(x), value(y))).collect()
}

/// The pairs' ratios, those with a defined one.
pub(super) fn ratios(pairs: &[(f64, f64)]) -> Vec<f64> {
    pairs.iter().filter_map(|&(x, y)| stats::ratio(x, y)).collect()
}

/// The records of `matrix` in `run` at `side`'s point.
pub(super) fn records_at<'r>(run: &'r Run, matrix: &str, side: &Side) -> Vec<&'r Record> {
    run.matrices.get(matrix).map(|f| f.records.iter().filter(|r| side.holds(r)).collect()).unwrap_or_default()
}
