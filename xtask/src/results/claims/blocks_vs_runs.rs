//! Do blocks stand for runs? Per claim, on one machine: the spread between the blocks of one run beside the spread
//! between its runs' means, made hours or days apart (`streamlab_record::stats::blocks` does the arithmetic and the
//! test); if the runs differ by more than their blocks predict, a day-to-day term the blocks miss is left.

use std::collections::BTreeMap;

use serde::Serialize;
use streamlab_record::stats::blocks::{self, BlocksAgainstRuns};

use super::judge::claim_units;
use super::*;

/// One claim's spreads on one machine.
#[derive(Debug, Clone, Serialize)]
pub struct SpreadRow {
    pub claim: String,
    #[serde(flatten)]
    pub spreads: BlocksAgainstRuns,
}

/// A machine's table, its claims pooled, and one line that says what it shows.
#[derive(Debug, Clone, Serialize, Default)]
pub struct BlocksVsRuns {
    pub rows: Vec<SpreadRow>,
    pub pooled: Option<BlocksAgainstRuns>,
    pub text: String,
}

/// The table over `runs` (one machine's): each claim with two blocks or more in some run and at least two runs.
pub fn table(runs: &[Run], claims: &[Claim]) -> BlocksVsRuns {
    let rows: Vec<SpreadRow> = claims
        .iter()
        .filter_map(|c| Some((c, claim_units(c, runs)?.1)))
        .filter_map(|(c, units)| Some(SpreadRow { claim: c.id.clone(), spreads: blocks::compare(&by_run(&units))? }))
        .collect();
    let pooled = blocks::pooled(&rows.iter().map(|r| r.spreads).collect::<Vec<_>>());
    let text = match &pooled {
        None => "Blocks against runs: none yet. It needs a claim measured in two blocks or more of one run and in at \
                 least two runs of this machine."
            .to_owned(),
        Some(p) => format!(
            "Blocks against runs, {} claims: between blocks of one run log-SD {:.3} ({:.0} df), between runs' means \
             {:.3} ({:.0} df) where the blocks predict {:.3}; the claims' F tests combined give p = {:.2}, {}",
            rows.len(),
            p.block.log_sd,
            p.block.df,
            p.run.log_sd,
            p.run.df,
            p.predicted_run_log_sd,
            p.p,
            if p.blocks_understate() {
                format!(
                    "so blocks understate the spread between runs: a day-to-day log-SD of about {:.3}",
                    p.day_log_sd
                )
            } else {
                "so these runs show no day-to-day term beyond the blocks' (with 7 claims in 3 runs the test finds a \
                 day-to-day log-SD of 0.2 nine times in ten, 0.1 four times in ten)"
                    .to_owned()
            }
        ),
    };
    BlocksVsRuns { rows, pooled, text }
}

/// Each run's units' values (their mean log ratios), by run.
fn by_run(units: &[Unit]) -> Vec<Vec<f64>> {
    let mut runs: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for u in units {
        let logs: Vec<f64> = u.ratios.iter().map(|r| r.ln()).collect();
        runs.entry(&u.run).or_default().push(logs.iter().sum::<f64>() / logs.len() as f64);
    }
    runs.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_grouped_by_run_each_as_its_mean_log_ratio() {
        let unit =
            |run: &str, block, ratios: &[f64]| Unit { run: run.into(), block: Some(block), ratios: ratios.to_vec() };
        let units = [unit("a", 1, &[2.0, 8.0]), unit("b", 1, &[1.0]), unit("a", 2, &[4.0])];
        let runs = by_run(&units);
        assert_eq!(runs.len(), 2);
        assert!((runs[0][0] - 4.0_f64.ln()).abs() < 1e-12 && (runs[0][1] - 4.0_f64.ln()).abs() < 1e-12, "{runs:?}");
        assert_eq!(runs[1], vec![0.0]);
    }
}
