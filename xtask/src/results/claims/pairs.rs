//! The rep pairs a claim compares: the records of one run at each of its two points, paired by rep where they did
//! the same work, and their metric's values and ratios. Judging a claim and saying why both read them.

use std::collections::BTreeMap;

use super::*;

/// The rep pairs of two points that did the same work under `contract`, and why the others were left out. Reps
/// pair by number (the same rep of both points ran side by side); a rep whose partner was set apart or failed pairs
/// with the other side's next such rep, in rep order (a replacement with its partner's replacement), so one lost
/// rep costs one pair, not two.
pub(super) fn pair_reps<'r>(
    num_records: &[&'r Record],
    den_records: &[&'r Record],
    metric: &str,
    contract: &Contract,
) -> parity::Sorted<'r> {
    let (a, b) = (drawn_by_rep(num_records, metric), drawn_by_rep(den_records, metric));
    // Two points of one configuration measured once are one measurement: no pair, whose ratio would be 1 by
    // construction.
    let one = |x: &&Record, y: &&Record| x.measurement_id() == y.measurement_id();
    let by_number = a.iter().filter_map(|(rep, x)| b.get(rep).filter(|y| !one(x, y)).map(|y| (*x, *y)));
    let left = |this: &BTreeMap<u32, &'r Record>, other: &BTreeMap<u32, &'r Record>| {
        this.iter().filter(|(rep, _)| !other.contains_key(rep)).map(|(_, r)| *r).collect::<Vec<_>>()
    };
    let leftovers = left(&a, &b).into_iter().zip(left(&b, &a));
    parity::sort(contract, by_number.chain(leftovers))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fixtures;

    #[test]
    fn a_rep_whose_partner_was_set_apart_pairs_with_the_other_sides_replacement() {
        let rec = |arm: &str, rep: u32, foreign: bool| {
            let mut r = fixtures::record("run", arm, arm, &["mode"], false, rep, 1000.0 + f64::from(rep));
            r.conditions = Some(fixtures::conditions(foreign, None));
            r
        };
        // The framework's rep 2 and raw's rep 3 ran under foreign load; each side's rep 4 replaced it.
        let framework: Vec<Record> = (1..=4).map(|rep| rec("framework", rep, rep == 2)).collect();
        let raw: Vec<Record> = (1..=4).map(|rep| rec("raw", rep, rep == 3)).collect();
        let (f, r): (Vec<&Record>, Vec<&Record>) = (framework.iter().collect(), raw.iter().collect());
        let contract = Contract { differs: vec![], tolerance: default_tolerances(), equal_knobs: false };
        let sorted = pair_reps(&f, &r, "records_per_s", &contract);
        let reps: Vec<(u32, u32)> = sorted.holding.iter().map(|(x, y)| (x.rep, y.rep)).collect();
        assert_eq!(reps, [(1, 1), (4, 4), (3, 2)], "same numbers first, then the leftovers in order");
    }

    #[test]
    fn two_points_measured_once_are_no_pair() {
        let framework: Vec<Record> = (1..=3)
            .map(|rep| fixtures::record("run", "framework", "framework path", &["mode"], true, rep, 1e3))
            .collect();
        // The batch sweep's 500k is the same configuration: reps 1 and 2 stood on the mode sweep's, rep 3 ran its own.
        let batch: Vec<Record> = framework
            .iter()
            .map(|r| Record {
                variant: streamlab_record::Variant {
                    label: "500k".into(),
                    sweeps: vec!["batch_max_rows".into()],
                    ..r.variant.clone()
                },
                measured_as: (r.rep < 3).then(|| r.measurement_id().4),
                ..r.clone()
            })
            .collect();
        let contract = Contract { differs: vec![], tolerance: default_tolerances(), equal_knobs: false };
        let (b, f): (Vec<&Record>, Vec<&Record>) = (batch.iter().collect(), framework.iter().collect());
        let sorted = pair_reps(&b, &f, "records_per_s", &contract);
        let reps: Vec<(u32, u32)> = sorted.holding.iter().map(|(x, y)| (x.rep, y.rep)).collect();
        assert_eq!(reps, [(3, 3)], "only the rep each measured for itself pairs");
    }
}
