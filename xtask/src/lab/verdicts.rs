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
    /// One line per claim (verdict, seed, the claim in a few words, the figures), without the quote and the why.
    #[arg(long, conflicts_with = "json")]
    pub brief: bool,
    /// Only the verdicts of the machine this run (an id under the results directory) ran on.
    #[arg(long, value_name = "RUN_ID")]
    pub run: Option<String>,
    /// A file of your own claims, in harness/claims.toml's format, judged beside the seeds' (repeatable).
    #[arg(long = "claims", value_name = "FILE")]
    pub claims: Vec<PathBuf>,
}

pub fn verdicts_cmd(args: VerdictsArgs) -> Result<()> {
    let machines = verdicts_of(&args)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&machines)?);
    } else if args.brief {
        machines.iter().for_each(|m| print!("{}", brief_table(m)));
    } else {
        machines.iter().for_each(|m| print!("{}", machine_table(m)));
    }
    Ok(())
}

/// One machine's verdicts, one line per claim: what a pull request's body has room for.
fn brief_table(m: &MachineVerdicts) -> String {
    let mut out = format!(
        "== verdicts on {}: {} runs
",
        m.machine, m.runs
    );
    for v in &m.claims {
        let limit = v.host_limit.as_deref().map_or_else(String::new, |l| format!(" ({l})"));
        out.push_str(&format!(
            "{:<18} seed {}  {:<56}  published {:>7}  measured {:>7}{limit}\n",
            v.verdict_text, v.seed, v.short, v.published_text, v.measured
        ));
    }
    out.push_str(&claims::machines::totals(&m.claims));
    out.push('\n');
    out
}

/// Every machine's verdicts on the seeds' claims and the user's.
fn verdicts_of(args: &VerdictsArgs) -> Result<Vec<MachineVerdicts>> {
    // The claims first: a mistyped one is refused before the results are read.
    let claims = super::claim_points::load(&args.claims)?;
    let dir = args.results.clone().unwrap_or_else(crate::paths::results_dir);
    let runs = crate::results::load::load_results(&dir)?;
    let mut machines = by_machine(&runs, &claims);
    if let Some(id) = &args.run {
        let run = runs.iter().find(|r| &r.id == id);
        let run = run.with_context(|| format!("--run {id}: no such run under {}", dir.display()))?;
        machines.retain(|m| m.machine == run.provenance.machine_key());
    }
    Ok(machines)
}

/// One machine's verdicts: where they were measured, the claims, then the lab's own comparisons beside them.
pub fn machine_table(m: &MachineVerdicts) -> String {
    let dates = if m.first == m.newest { m.newest.clone() } else { format!("{} to {}", m.first, m.newest) };
    let mut out = format!("== verdicts on {}: {} runs, {dates}\n\n", m.machine, m.runs);
    out.push_str(&table(&m.claims));
    out.push_str(&format!("\n{}\n{}\n", m.aa.text, m.blocks_vs_runs.text));
    for r in &m.blocks_vs_runs.rows {
        out.push_str(&format!(
            "  {:<44} blocks {:.3} ({:>2.0} df)  runs {:.3} ({:.0} df), predicted {:.3}  day-to-day {:.3}  p {:.2}\n",
            r.claim,
            r.spreads.block.log_sd,
            r.spreads.block.df,
            r.spreads.run.log_sd,
            r.spreads.run.df,
            r.spreads.predicted_run_log_sd,
            r.spreads.day_log_sd,
            r.spreads.p
        ));
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{claims::Kind, fixtures};

    /// A claim from a file outside the repository gets its verdict from the results, beside the seeds', with no
    /// rebuild: the file is read when the command runs.
    #[test]
    fn a_users_claim_file_gets_a_verdict_beside_the_seeds() {
        let results = tempfile::tempdir().unwrap();
        let pause = |label: &str, rep: u32, rate: f64| {
            let mut r = fixtures::record("r1", "framework", label, &["min_pause_ms"], false, rep, rate);
            let ms: u64 = label.trim_end_matches(" ms").parse().unwrap();
            r.variant.knobs.insert("min_pause_ms".into(), serde_json::json!(ms));
            r
        };
        let records: Vec<_> =
            (1..=4).flat_map(|rep| [pause("10 ms", rep, 4000.0 + rep as f64), pause("500 ms", rep, 1000.0)]).collect();
        fixtures::write_run(results.path(), "r1", 1_000, &records);
        let mine = tempfile::tempdir().unwrap();
        let file = mine.path().join("my-claims.toml");
        std::fs::write(&file, crate::lab::claim_points::tests::user_claim("10 ms", "500 ms")).unwrap();
        let args = |claims: Vec<PathBuf>| VerdictsArgs {
            results: Some(results.path().into()),
            json: false,
            brief: false,
            run: None,
            claims,
        };

        let machines = verdicts_of(&args(vec![file.clone()])).unwrap();
        let mine: Vec<_> = machines.iter().flat_map(|m| &m.claims).filter(|v| v.id == "mine-pause-floor").collect();
        assert_eq!(mine.len(), 1, "one verdict, on the one machine");
        assert_ne!(mine[0].verdict, Kind::NotRun, "{}", mine[0].why);
        assert!(mine[0].measured.starts_with("4.0"), "the ratio of its two points: {}", mine[0].measured);
        assert!(machines[0].claims.iter().any(|v| v.id == "000-framework-over-raw"), "the seeds' claims beside it");
        let brief = brief_table(&machines[0]);
        let line = brief.lines().find(|l| l.contains("10 ms pause floor")).unwrap_or_else(|| panic!("{brief}"));
        assert!(line.starts_with(mine[0].verdict_text) && line.contains("seed mine") && line.contains("4.0"), "{line}");
        // Without the file, no such claim.
        let seeds_only = verdicts_of(&args(Vec::new())).unwrap();
        assert!(seeds_only.iter().flat_map(|m| &m.claims).all(|v| v.id != "mine-pause-floor"));
    }
}
