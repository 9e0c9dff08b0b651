//! A/A comparisons: a point against itself in different blocks of one run, judged by the parity rule at the seeds'
//! tolerance with the machine's prior. The truth is 1 by construction, so every "does not" is a false alarm of the
//! rule on this machine: the machine's A/A record, beside its verdicts. Each point a claim rests on that a run
//! measured in four blocks or more gives one comparison: blocks 1 and 2 are one unit, 3 and 4 the next, and so on
//! (the ratio of the odd block's value over the even's), so no block enters two units.

use std::collections::BTreeMap;

use serde::Serialize;
use streamlab_record::MeasurementId;

use super::pairs::records_at;
use super::prior::MachinePrior;
use super::*;

/// One point's A/A comparison in one run.
#[derive(Debug, Clone, Serialize)]
pub struct AaRow {
    pub run: String,
    /// `kafka_sink raw [mode raw rdkafka], records_per_s`.
    pub point: String,
    /// The blocks paired into units, and the units' ratios.
    pub units: usize,
    pub ratios: Vec<f64>,
    pub interval: Option<[f64; 2]>,
    pub verdict: Kind,
}

/// A machine's A/A record: every comparison, and how the parity rule judged them.
#[derive(Debug, Clone, Serialize, Default)]
pub struct AaRecord {
    pub rows: Vec<AaRow>,
    /// Comparisons judged "the same" (parity holds), falsely "not the same", and undecided.
    pub same: usize,
    pub false_not_same: usize,
    pub cannot_tell: usize,
    /// The runs they come from.
    pub runs: Vec<String>,
    /// One line for the front page.
    pub text: String,
}

/// The A/A record of `runs` (one machine's) over the points `claims` rest on, with the machine's prior.
pub fn record(runs: &[Run], claims: &[Claim], prior: &MachinePrior) -> AaRecord {
    let mut rows = Vec::new();
    for run in runs {
        let mut seen: BTreeSet<String> = BTreeSet::new();
        // A point measured as another of the same configuration repeats that point's comparison: it is not another.
        let mut measured: BTreeSet<MeasurementId> = BTreeSet::new();
        for c in claims {
            for side in [&c.numerator, &c.denominator].into_iter().flatten() {
                let point = format!("{} {}, {}", c.matrix, side.describe(), c.metric);
                if !seen.insert(point.clone()) {
                    continue;
                }
                let records = records_at(run, &c.matrix, side);
                let ids: Vec<MeasurementId> = records.iter().map(|r| r.measurement_id()).collect();
                if ids.iter().any(|id| measured.contains(id)) {
                    continue;
                }
                measured.extend(ids);
                if let Some(row) = compare(run, &records, &c.metric, point, prior) {
                    rows.push(row);
                }
            }
        }
    }
    let count = |k: Kind| rows.iter().filter(|r| r.verdict == k).count();
    let (same, false_not_same) = (count(Kind::Reproduces), count(Kind::DoesNotReproduce));
    let cannot_tell = rows.len() - same - false_not_same;
    let runs: Vec<String> = rows.iter().map(|r| r.run.clone()).collect::<BTreeSet<_>>().into_iter().collect();
    let text = if rows.is_empty() {
        "A/A record: none yet. A budgeted run with four blocks or more compares each point with itself across \
         blocks, judged by the same rule at ±15%; every \"not the same\" is a false alarm."
            .to_owned()
    } else {
        format!(
            "A/A record: {} comparisons of a point with itself across blocks, in {} run{}: {same} the same, \
             {false_not_same} falsely not the same ({:.0}%), {cannot_tell} cannot tell. The rule's ceiling for false \
             alarms is 3.5%.",
            rows.len(),
            runs.len(),
            if runs.len() == 1 { "" } else { "s" },
            100.0 * false_not_same as f64 / rows.len() as f64
        )
    };
    AaRecord { rows, same, false_not_same, cannot_tell, runs, text }
}

/// One point's comparison in one run: its drawn value in each block, odd blocks over even; `None` with fewer than two
/// such units.
fn compare(run: &Run, records: &[&Record], metric: &str, point: String, prior: &MachinePrior) -> Option<AaRow> {
    let mut by_block: BTreeMap<u32, f64> = BTreeMap::new();
    for r in records.iter().filter(|r| r.status == streamlab_record::Status::Ok && set_apart(r).is_none()) {
        if let (Some(block), Some(m)) = (r.block, r.measurement.metrics.get(metric)) {
            by_block.entry(block).or_insert(m.value);
        }
    }
    let values: Vec<f64> = by_block.into_values().collect();
    let ratios: Vec<f64> = values.chunks_exact(2).filter_map(|w| stats::ratio(w[0], w[1])).collect();
    if ratios.len() < 2 {
        return None;
    }
    let units: Vec<Vec<f64>> = ratios.iter().map(|r| vec![*r]).collect();
    let pooled = equivalence::pooled(&units, prior.spread);
    let verdict = pooled.as_ref().map_or(Kind::CannotTell, |p| Kind::of(equivalence::parity(p, AA_TOLERANCE)));
    Some(AaRow {
        run: run.id.clone(),
        point,
        units: ratios.len(),
        ratios,
        interval: pooled.map(|p| p.interval),
        verdict,
    })
}

/// The seeds' tolerance, at which every A/A comparison is judged.
pub const AA_TOLERANCE: f64 = equivalence::DEFAULT_TOLERANCE;

#[cfg(test)]
mod tests {
    use streamlab_record::Variant;

    use super::*;
    use crate::results::fixtures;
    use crate::results::load::load_results;

    fn run_of_blocks(values: &[f64]) -> (tempfile::TempDir, Vec<Run>) {
        let dir = tempfile::tempdir().unwrap();
        let records: Vec<Record> = (1..)
            .zip(values)
            .flat_map(|(block, v)| {
                let mut raw = fixtures::record("r1", "raw", "raw rdkafka", &["mode"], true, block, *v);
                let mut fw = fixtures::record("r1", "framework", "framework path", &["mode"], false, block, v / 2.0);
                (raw.block, fw.block) = (Some(block), Some(block));
                [raw, fw]
            })
            .collect();
        fixtures::write_run(dir.path(), "r1", 1_000, &records);
        let runs = load_results(dir.path()).unwrap();
        (dir, runs)
    }

    fn claims() -> Vec<Claim> {
        crate::results::declared::builtin().unwrap().into_iter().filter(|c| c.id == "000-framework-over-raw").collect()
    }

    #[test]
    fn a_point_measured_as_another_is_not_a_second_comparison() {
        let prior = MachinePrior { spread: equivalence::ASSUMED_PRIOR, source: String::new() };
        let (dir, _) = run_of_blocks(&[1000.0, 1004.0, 998.0, 1001.0]);
        // The queue sweep's 100k is the framework's default: each block measured it as the mode sweep's point.
        let mut records =
            crate::results::load::load_results(dir.path()).unwrap()[0].matrices["kafka_sink"].records.clone();
        let copies: Vec<Record> = records
            .iter()
            .filter(|r| r.arm == "framework")
            .map(|r| Record {
                variant: Variant {
                    label: "100k".into(),
                    sweeps: vec!["queue_buffering_max_messages".into()],
                    ..r.variant.clone()
                },
                measured_as: Some(r.measurement_id().4),
                ..r.clone()
            })
            .collect();
        records.extend(copies);
        let dir = tempfile::tempdir().unwrap();
        fixtures::write_run(dir.path(), "r1", 1_000, &records);
        let runs = load_results(dir.path()).unwrap();
        let both: Vec<Claim> = crate::results::declared::builtin()
            .unwrap()
            .into_iter()
            .filter(|c| ["000-framework-over-raw", "000-queue-1m-over-100k"].contains(&c.id.as_str()))
            .collect();
        let aa = record(&runs, &both, &prior);
        let points: Vec<&str> = aa.rows.iter().map(|r| r.point.as_str()).collect();
        assert_eq!(points.len(), 2, "raw and the framework's default, once: {points:?}");
        assert!(!points.iter().any(|p| p.contains("100k")), "{points:?}");
    }

    #[test]
    fn a_point_against_itself_in_pairs_of_blocks_is_judged_by_parity_and_a_false_alarm_is_counted() {
        let prior = MachinePrior { spread: equivalence::ASSUMED_PRIOR, source: String::new() };
        // Eight blocks that agree closely: four units near 1, each of the claim's two points the same.
        let steady = [1000.0, 1004.0, 998.0, 1001.0, 1003.0, 999.0, 1000.0, 1002.0];
        let (_d, runs) = run_of_blocks(&steady);
        let aa = record(&runs, &claims(), &prior);
        assert_eq!(aa.rows.len(), 2, "one comparison per point: {:?}", aa.rows);
        assert!(aa.rows.iter().all(|r| r.units == 4 && r.ratios.len() == 4), "{:?}", aa.rows);
        assert_eq!(aa.false_not_same, 0);
        // Odd blocks twice the even ones: a machine whose blocks are not alike is a false alarm, counted as one.
        let alternating = [2000.0, 1000.0, 2010.0, 1000.0, 1990.0, 1000.0, 2000.0, 1005.0];
        let (_d, runs) = run_of_blocks(&alternating);
        let aa = record(&runs, &claims(), &prior);
        assert_eq!((aa.false_not_same, aa.runs.clone()), (2, vec!["r1".to_owned()]), "{:?}", aa.rows);
        assert!(aa.text.contains("2 falsely not the same"), "{}", aa.text);
        // Three blocks make one unit: no comparison.
        let (_d, runs) = run_of_blocks(&steady[..3]);
        assert!(record(&runs, &claims(), &prior).rows.is_empty());
    }
}
