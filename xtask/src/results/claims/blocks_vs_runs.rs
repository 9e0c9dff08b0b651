//! Do blocks stand for runs? The rule takes each block of a run as a unit as independent as a run of its own. Per
//! claim, on one machine, this sets the spread between the blocks of one run beside the spread between runs made
//! hours or days apart: if the runs' means differ by more than their blocks predict, a day-to-day term the blocks miss
//! is left, and the table says its size and how sure that is.

use std::collections::BTreeMap;

use serde::Serialize;
use streamlab_record::stats::student_t::f_upper_tail;

use super::judge::claim_units;
use super::*;

/// One claim's spreads on one machine, on the log scale of its ratio.
#[derive(Debug, Clone, Serialize)]
pub struct SpreadRow {
    pub claim: String,
    /// Between the blocks of one run, pooled over the runs with two blocks or more (df: blocks less one, summed).
    pub block: Spread,
    /// Between the runs' means, each the mean of its blocks (df: runs less one).
    pub run: Spread,
    /// What the block spread predicts for `run.log_sd` if blocks stood for runs: block log-SD over the root of a
    /// run's blocks (their harmonic mean).
    pub predicted_run_log_sd: f64,
    /// The day-to-day log-SD the blocks do not show: the root of what the runs' variance has beyond the prediction.
    pub day_log_sd: f64,
    /// The runs' variance over the predicted, and the chance of a ratio that large were blocks runs (F upper tail).
    pub f: f64,
    pub p: f64,
}

/// A machine's table, and one line that says what it shows.
#[derive(Debug, Clone, Serialize, Default)]
pub struct BlocksVsRuns {
    pub rows: Vec<SpreadRow>,
    /// Every row's terms pooled: the blocks' and the runs' variance summed over claims with their df.
    pub pooled: Option<SpreadRow>,
    pub text: String,
}

/// The table over `runs` (one machine's): each claim with two blocks or more in some run and at least two runs.
pub fn table(runs: &[Run], claims: &[Claim]) -> BlocksVsRuns {
    let rows: Vec<SpreadRow> = claims
        .iter()
        .filter_map(|c| Some((c, claim_units(c, runs)?.1)))
        .filter_map(|(c, units)| row(&c.id, &units))
        .collect();
    let pooled = pool(&rows);
    let text = match &pooled {
        None => "Blocks against runs: none yet. It needs a claim measured in two blocks or more of one run and in at \
                 least two runs of this machine."
            .to_owned(),
        Some(p) => format!(
            "Blocks against runs, {} claims pooled: between blocks of one run log-SD {:.3} ({:.0} df), between runs' \
             means {:.3} ({:.0} df) where the blocks predict {:.3}; the runs' variance is {:.2}× the predicted (p = \
             {:.2}), {}",
            rows.len(),
            p.block.log_sd,
            p.block.df,
            p.run.log_sd,
            p.run.df,
            p.predicted_run_log_sd,
            p.f,
            p.p,
            if p.p < 0.05 {
                format!("so blocks understate the spread between runs: a day-to-day log-SD of {:.3}", p.day_log_sd)
            } else {
                "so these runs show no day-to-day term beyond the blocks'".to_owned()
            }
        ),
    };
    BlocksVsRuns { rows, pooled, text }
}

/// One claim's row: `None` without a run of two blocks or more, or with fewer than two runs.
fn row(claim: &str, units: &[Unit]) -> Option<SpreadRow> {
    let mut by_run: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for u in units {
        by_run.entry(&u.run).or_default().push(mean_log(&u.ratios));
    }
    let (mut block_ss, mut block_df) = (0.0, 0.0);
    for values in by_run.values().filter(|v| v.len() >= 2) {
        let m = mean(values);
        block_ss += values.iter().map(|x| (x - m).powi(2)).sum::<f64>();
        block_df += (values.len() - 1) as f64;
    }
    if block_df < 1.0 || by_run.len() < 2 {
        return None;
    }
    let means: Vec<f64> = by_run.values().map(|v| mean(v)).collect();
    let grand = mean(&means);
    let run_df = (means.len() - 1) as f64;
    let run_var = means.iter().map(|x| (x - grand).powi(2)).sum::<f64>() / run_df;
    let block_var = block_ss / block_df;
    let inverse_blocks = by_run.values().map(|v| 1.0 / v.len() as f64).sum::<f64>() / by_run.len() as f64;
    Some(spread_row(claim, (block_var, block_df), (run_var, run_df), block_var * inverse_blocks))
}

/// The rows' variances pooled, each weighted by its df; the prediction likewise.
fn pool(rows: &[SpreadRow]) -> Option<SpreadRow> {
    let sum = |f: &dyn Fn(&SpreadRow) -> f64| rows.iter().map(f).sum::<f64>();
    let (block_df, run_df) = (sum(&|r| r.block.df), sum(&|r| r.run.df));
    if rows.is_empty() || block_df < 1.0 || run_df < 1.0 {
        return None;
    }
    let block_var = sum(&|r| r.block.log_sd.powi(2) * r.block.df) / block_df;
    let run_var = sum(&|r| r.run.log_sd.powi(2) * r.run.df) / run_df;
    let predicted = sum(&|r| r.predicted_run_log_sd.powi(2) * r.run.df) / run_df;
    Some(spread_row("all", (block_var, block_df), (run_var, run_df), predicted))
}

fn spread_row(
    claim: &str,
    (block_var, block_df): (f64, f64),
    (run_var, run_df): (f64, f64),
    predicted: f64,
) -> SpreadRow {
    let f = if predicted > 0.0 { run_var / predicted } else { f64::INFINITY };
    SpreadRow {
        claim: claim.to_owned(),
        block: Spread { log_sd: block_var.sqrt(), df: block_df },
        run: Spread { log_sd: run_var.sqrt(), df: run_df },
        predicted_run_log_sd: predicted.sqrt(),
        day_log_sd: (run_var - predicted).max(0.0).sqrt(),
        f,
        p: if f.is_finite() { f_upper_tail(f, run_df, block_df) } else { 0.0 },
    }
}

fn mean_log(ratios: &[f64]) -> f64 {
    mean(&ratios.iter().map(|r| r.ln()).collect::<Vec<_>>())
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(runs: &[&[f64]]) -> Vec<Unit> {
        let mut out = Vec::new();
        for (i, ratios) in runs.iter().enumerate() {
            for (b, r) in ratios.iter().enumerate() {
                out.push(Unit { run: format!("r{i}"), block: Some(b as u32 + 1), ratios: vec![*r] });
            }
        }
        out
    }

    #[test]
    fn runs_that_differ_as_their_blocks_do_show_no_day_term() {
        // Three runs whose blocks scatter by about 5% around the same value: the runs' means scatter as the blocks
        // predict.
        let alike: [&[f64]; 3] =
            [&[0.50, 0.53, 0.48, 0.51, 0.49], &[0.52, 0.47, 0.50, 0.51, 0.53], &[0.49, 0.51, 0.52, 0.48, 0.50]];
        let r = row("c", &units(&alike)).expect("three runs of five blocks");
        assert_eq!((r.block.df, r.run.df), (12.0, 2.0));
        assert!((r.block.log_sd - 0.043).abs() < 0.01, "{r:?}");
        assert!(r.p > 0.2 && r.day_log_sd < 0.02, "{r:?}");
    }

    #[test]
    fn runs_far_apart_whose_blocks_agree_show_the_day_term_the_blocks_miss() {
        // Each run's blocks agree within 1%, but the runs sit at 0.40, 0.50 and 0.62: blocks understate runs.
        let apart: [&[f64]; 3] =
            [&[0.40, 0.401, 0.399, 0.402], &[0.50, 0.502, 0.498, 0.50], &[0.62, 0.619, 0.621, 0.62]];
        let r = row("c", &units(&apart)).expect("three runs");
        assert!(r.p < 0.001, "{r:?}");
        assert!((r.day_log_sd - r.run.log_sd).abs() < 0.01 && r.run.log_sd > 0.2, "{r:?}");
        let table = BlocksVsRuns { pooled: pool(std::slice::from_ref(&r)), rows: vec![r], text: String::new() };
        assert!(table.pooled.is_some_and(|p| p.p < 0.001));
    }

    #[test]
    fn one_run_or_no_run_of_two_blocks_gives_no_row() {
        assert!(row("c", &units(&[&[0.5, 0.52, 0.49]])).is_none(), "one run cannot show runs");
        assert!(row("c", &units(&[&[0.5], &[0.52], &[0.49]])).is_none(), "no run has two blocks");
    }
}
