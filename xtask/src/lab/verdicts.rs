//! `lab verdicts`: every seed's headline claim with its verdict from the committed results, one machine at a time,
//! as the site shows them (the judging itself is `results::claims`).

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::results::claims::machines::{MachineVerdicts, by_machine};
use crate::results::claims::{self, ClaimVerdict};

#[derive(clap::Args, Debug)]
pub struct VerdictsArgs {
    /// The results directory (default: results/).
    #[arg(long)]
    pub results: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Only the verdicts of the machine this run (an id under the results directory) ran on.
    #[arg(long, value_name = "RUN_ID")]
    pub run: Option<String>,
}

pub fn verdicts_cmd(args: VerdictsArgs) -> Result<()> {
    let dir = args.results.unwrap_or_else(crate::paths::results_dir);
    let runs = crate::results::load::load_results(&dir)?;
    let mut machines = by_machine(&runs, &claims::declared::builtin()?);
    if let Some(id) = &args.run {
        let run = runs.iter().find(|r| &r.id == id);
        let run = run.with_context(|| format!("--run {id}: no such run under {}", dir.display()))?;
        machines.retain(|m| m.machine == run.provenance.machine_key());
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&machines)?);
    } else {
        machines.iter().for_each(|m| print!("{}", machine_table(m)));
    }
    Ok(())
}

/// One machine's verdicts: where they were measured, the claims, then the lab's own comparisons beside them.
pub fn machine_table(m: &MachineVerdicts) -> String {
    let dates = if m.first == m.newest { m.newest.clone() } else { format!("{} to {}", m.first, m.newest) };
    let mut out = format!("== verdicts on {}: {} runs, {dates}\n\n", m.machine, m.runs);
    out.push_str(&table(&m.claims));
    if !m.beside.is_empty() {
        out.push_str("\nWhat this lab measured beside the claims (at points the seed did not run; no verdicts):\n");
        for v in &m.beside {
            let cpu = v.per_cpu.as_deref().map_or_else(String::new, |c| format!("; per CPU-second {c}"));
            out.push_str(&format!("  {:<56} {:>8}  {}{cpu}\n", v.short, v.measured, v.interval));
        }
    }
    out.push('\n');
    out
}

/// One block per claim: its verdict and figures on the first line, the claim and why beneath.
pub fn table(verdicts: &[ClaimVerdict]) -> String {
    let mut out = String::new();
    for v in verdicts {
        let seed =
            if v.like_for_like { format!("seed {}", v.seed) } else { format!("seed {} (its own comparison)", v.seed) };
        out.push_str(&format!(
            "{:<20} {:<28} published {:>8}  measured {:>8}  {}\n",
            v.verdict_text.to_uppercase(),
            seed,
            v.published_text,
            v.measured,
            v.interval
        ));
        if let Some(limit) = &v.host_limit {
            out.push_str(&format!("    ({limit})\n"));
        }
        out.push_str(&format!("    \"{}\"\n    {}\n\n", v.claim, v.why));
    }
    out.push_str(&format!("The rule: {}\n\n", streamlab_record::stats::equivalence::VERDICT_METHOD));
    out.push_str(&claims::machines::totals(verdicts));
    out.push('\n');
    out
}
