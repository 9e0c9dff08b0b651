//! `lab verdicts`: every seed's headline claim with its verdict from the committed results, as the site's first
//! screen shows it (the judging itself is `site::claims`).

use std::path::PathBuf;

use anyhow::Result;

use crate::results::claims::{self, ClaimVerdict};

#[derive(clap::Args, Debug)]
pub struct VerdictsArgs {
    /// The results directory (default: results/).
    #[arg(long)]
    pub results: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn verdicts_cmd(args: VerdictsArgs) -> Result<()> {
    let dir = args.results.unwrap_or_else(crate::paths::results_dir);
    let runs = crate::results::load::load_results(&dir)?;
    let verdicts = claims::verdicts(&runs, &claims::declared::builtin()?);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&verdicts)?);
    } else {
        print!("{}", table(&verdicts));
    }
    Ok(())
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
        out.push_str(&format!("    \"{}\"\n    {}\n\n", v.claim, v.why));
    }
    out.push_str(&format!("The rule: {}\n\n", streamlab_record::stats::equivalence::VERDICT_METHOD));
    let count = |k: claims::Kind| verdicts.iter().filter(|v| v.verdict == k).count();
    out.push_str(&format!(
        "{} claims: {} reproduce, {} do not, {} cannot tell here, {} not run, {} without a verdict\n",
        verdicts.len(),
        count(claims::Kind::Reproduces),
        count(claims::Kind::DoesNotReproduce),
        count(claims::Kind::CannotTell),
        count(claims::Kind::NotRun),
        count(claims::Kind::NoVerdict)
    ));
    out
}
