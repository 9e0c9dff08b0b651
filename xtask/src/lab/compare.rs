//! `lab compare RUN_A RUN_B`: every point both runs measured, B against A, with a verdict, as a table or JSON
//! (the comparison itself is `results::compare`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::results::compare::{ALPHA, Row, Verdict, compare, regressions};
use crate::results::load::{Run, load_run};

#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// The baseline run: its directory, its id under results/, or `newest` for the newest run under results/ that
    /// shares a matrix and the machine key with RUN_B.
    pub run_a: String,
    /// The run compared with it.
    pub run_b: String,
    /// The metric compared, in every record that has it.
    #[arg(long, default_value = "records_per_s")]
    pub metric: String,
    /// Exit non-zero if a point is significantly worse in B by more than PCT percent.
    #[arg(long, value_name = "PCT")]
    pub fail_on_regression: Option<f64>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn compare_cmd(args: CompareArgs) -> Result<()> {
    let b = load_run(&run_dir(&args.run_b)?)?;
    let a = match args.run_a.as_str() {
        "newest" => newest_comparable(&b)?,
        path => load_run(&run_dir(path)?)?,
    };
    let rows = compare(&a, &b, &args.metric);
    if rows.is_empty() {
        bail!("runs {} and {} share no point with a {} metric", a.id, b.id, args.metric);
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        print!("{}", table(&a.id, &b.id, &args.metric, &rows));
    }
    if let Some(pct) = args.fail_on_regression {
        let regressions = regressions(&rows, pct);
        if !regressions.is_empty() {
            bail!("{} point(s) significantly worse by more than {pct}%: {}", regressions.len(), regressions.join("; "));
        }
    }
    Ok(())
}

/// A run directory as given, or the id of one under results/.
fn run_dir(arg: &str) -> Result<PathBuf> {
    let path = Path::new(arg);
    if path.is_dir() {
        return Ok(path.to_owned());
    }
    let under_results = crate::paths::results_dir().join(arg);
    if under_results.is_dir() {
        return Ok(under_results);
    }
    bail!("{arg}: neither a run directory nor a run id under {}", crate::paths::results_dir().display())
}

/// The newest run under results/ other than `b` with one of its matrices, on the same hardware.
fn newest_comparable(b: &Run) -> Result<Run> {
    let machine = b.provenance.machine_key();
    crate::results::load::load_results(&crate::paths::results_dir())?
        .into_iter()
        .filter(|r| r.id != b.id && r.matrices.keys().any(|m| b.matrices.contains_key(m)))
        .filter(|r| r.provenance.machine_key() == machine)
        .max_by_key(|r| r.provenance.started_ts_ms)
        .with_context(|| format!("no run under results/ shares a matrix with {} on the same machine ({machine})", b.id))
}

/// The verdict table, one line a point.
pub fn table(id_a: &str, id_b: &str, metric: &str, rows: &[Row]) -> String {
    let num = |x: Option<f64>| x.map_or_else(|| "–".to_owned(), |v| format!("{v:.0}"));
    let mut out = format!("{metric}: B = {id_b} against A = {id_a}\n");
    out.push_str(&format!(
        "{:<12} {:<14} {:<40} {:>12} {:>12} {:>7} {:>17} {:>7}  verdict\n",
        "matrix", "arm", "point", "A median", "B median", "B/A", "95% interval", "p"
    ));
    for r in rows {
        let ratio = r.ratio.map_or_else(|| "–".to_owned(), |x| format!("{x:.3}"));
        let interval = r.interval.map_or_else(|| "–".to_owned(), |[lo, hi]| format!("{lo:.3}–{hi:.3}"));
        let p = r.p_value.map_or_else(|| "–".to_owned(), |p| format!("{p:.3}"));
        out.push_str(&format!(
            "{:<12} {:<14} {:<40} {:>12} {:>12} {:>7} {:>17} {:>7}  {} ({})\n",
            r.matrix,
            r.arm,
            r.point,
            num(r.median_a),
            num(r.median_b),
            ratio,
            interval,
            p,
            r.verdict.text(),
            r.why
        ));
    }
    out.push_str(&chance_line(rows));
    out
}

/// How many comparable points differ, beside how many would at the verdict's level with no real change: each
/// point is tested on its own (as asv compare does), so among many points a few verdicts are chance.
fn chance_line(rows: &[Row]) -> String {
    let comparable = rows.iter().filter(|r| r.verdict != Verdict::NotComparable).count();
    let differ = rows.iter().filter(|r| matches!(r.verdict, Verdict::Faster | Verdict::Slower)).count();
    format!(
        "{differ} of {comparable} comparable points differ at the {:.0}% level; with no real change about {:.1} would \
         by chance alone\n",
        ALPHA * 100.0,
        comparable as f64 * ALPHA
    )
}
