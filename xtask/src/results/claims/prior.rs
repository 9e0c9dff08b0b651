//! Each machine's prior on a claim's unit-to-unit spread, fitted from the own spreads of every claim it measured
//! (`stats::prior::fit`): the spread between blocks or runs is the machine's, shared by its claims, and each claim is
//! shrunk toward it.

use std::collections::BTreeMap;

use streamlab_record::stats::{equivalence, prior};

use super::judge::{claim_units, unit_ratios};
use super::*;

/// The prior a machine's verdicts use, and where it comes from.
#[derive(Debug, Clone)]
pub struct MachinePrior {
    pub spread: Spread,
    /// `fitted from 7 claims of this machine (their own spreads' 35 degrees of freedom)`, or why it is assumed.
    pub source: String,
}

/// Every machine's prior, by machine key.
pub struct Priors {
    by_machine: BTreeMap<String, MachinePrior>,
}

impl Priors {
    /// Each claim's own spread over its comparable runs' units, gathered by the machine those runs are on, and a
    /// prior fitted from each machine's.
    pub fn fit(runs: &[Run], claims: &[Claim]) -> Priors {
        let mut own: BTreeMap<String, Vec<Spread>> = BTreeMap::new();
        for (machine, units) in claims.iter().filter_map(|c| claim_units(c, runs)) {
            own.entry(machine).or_default().extend(equivalence::own_spread(&unit_ratios(&units)));
        }
        let by_machine = own.into_iter().filter_map(|(m, spreads)| Some((m, fitted(&spreads)?))).collect();
        Priors { by_machine }
    }

    /// The machine's prior, or the assumed one where too few of its claims have a spread of their own.
    pub fn of(&self, machine: &str) -> MachinePrior {
        self.by_machine.get(machine).cloned().unwrap_or_else(assumed)
    }
}

fn fitted(spreads: &[Spread]) -> Option<MachinePrior> {
    let spread = prior::fit(spreads)?;
    let used: Vec<&Spread> = spreads.iter().filter(|s| s.df >= prior::MIN_DF).collect();
    let df: f64 = used.iter().map(|s| s.df).sum();
    Some(MachinePrior {
        spread,
        source: format!(
            "fitted from the own spreads of {} claims of this machine ({df:.0} degrees of freedom between them; \
             limma's empirical Bayes)",
            used.len()
        ),
    })
}

fn assumed() -> MachinePrior {
    MachinePrior {
        spread: equivalence::ASSUMED_PRIOR,
        source: format!(
            "assumed: fewer than {} claims of this machine have a spread of their own with {} degrees of freedom (3 \
             blocks or runs), so none is fitted; log-SD {:.2} with {:.0} df is the largest spread between runs in our \
             committed history",
            prior::MIN_CLAIMS,
            prior::MIN_DF,
            equivalence::ASSUMED_PRIOR.log_sd,
            equivalence::ASSUMED_PRIOR.df
        ),
    }
}
