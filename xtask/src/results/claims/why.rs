//! The paragraph under a verdict: its parts, where our interval stands to the band and which spread decided
//! it, then the publisher's setup beside ours.

use super::pairs::{pair_reps, records_at, values};
use super::*;

/// The paragraph under a verdict: the parts, where our interval stands to the band and what decided it, then the
/// two setups side by side.
#[allow(clippy::too_many_arguments)]
pub(super) fn why(
    c: &Claim,
    v: &ClaimVerdict,
    p: &Pooled,
    anchor: &Run,
    num_records: &[&Record],
    den_records: &[&Record],
    num: &Side,
    den: &Side,
) -> String {
    let whose = if c.like_for_like { "Our" } else { "As the seed compared them (unlike work), our" };
    let band = v.band.map_or_else(String::new, |[lo, hi]| {
        format!(
            " against the band {} – {} (the published {} ± {:.0}%)",
            format::ratio(lo),
            format::ratio(hi),
            v.published_text,
            c.tolerance * 100.0
        )
    });
    let runs = pooled_text(p, v.runs.len(), anchor);
    let mut out = format!(
        "{}. {whose} {} ({}){band}, {runs}; {}.",
        capitalise(&v.parts_text),
        v.measured,
        v.interval,
        spread_text(p)
    );
    // Undecided overall: a part neither holds nor fails, and none fails.
    let undecided = v.parts.iter().any(|p| p.verdict == Kind::CannotTell && p.kind != ClaimKind::Shape)
        && !v.parts.iter().any(|p| p.verdict == Kind::DoesNotReproduce);
    match v.units_to_decide {
        Some(n) => out.push_str(&format!(
            " About {n} blocks or runs like these in all would decide it ({} more): the interval narrows with the \
             root of the units, at the spreads above.",
            n.saturating_sub(p.units)
        )),
        None if undecided && v.host_note.is_none() && v.host_limit.is_none() => out.push_str(&format!(
            " Our figure sits too close to an edge for {} blocks or runs like these to decide it.",
            equivalence::MAX_UNITS_TO_DECIDE
        )),
        None => {}
    }
    if let Some(note) = &v.host_note {
        out.push_str(&format!(" {note}."));
    }
    let setup = our_setup(anchor, num_records);
    let cpu = cpu_here(num_records, den_records, num, den, anchor);
    let bound = c.bound.as_ref().map_or_else(String::new, |b| bound_here(b, c, anchor));
    out.push_str(&format!(
        " Published on {} with {}; measured here {setup}{cpu}.{bound}",
        c.hardware.trim_end_matches('.'),
        c.versions.trim_end_matches('.'),
    ));
    out
}

pub(super) fn capitalise(s: &str) -> String {
    let mut chars = s.chars();
    chars.next().map_or_else(String::new, |f| f.to_uppercase().chain(chars).collect())
}

/// Which spread sets the interval's width: `run-to-run spread (log-SD 0.21: these 8 runs' own 0.18, shrunk toward the
/// prior 0.33) outweighs rep-to-rep (0.050)`.
pub(super) fn spread_text(p: &Pooled) -> String {
    let prior = p.prior.log_sd;
    let between = match p.own_between {
        None => format!("the machine's prior {prior:.2} alone: one unit says nothing of how blocks or runs differ"),
        Some(own) if p.between == own => {
            format!(
                "these {} units' own {:.3}, above the machine's prior {prior:.2}, so kept alone",
                p.units, own.log_sd
            )
        }
        Some(own) => {
            format!("these {} units' own {:.3}, shrunk toward the machine's prior {prior:.2}", p.units, own.log_sd)
        }
    };
    let (b, within) = (p.between.log_sd, p.within_log_sd);
    if p.run_to_run_dominates() {
        format!(
            "run-to-run spread (log-SD {b:.3}: {between}) outweighs rep-to-rep ({within:.3}), so more blocks or runs, not \
             more reps in one, narrow it"
        )
    } else {
        format!("rep-to-rep spread (log-SD {within:.3}) outweighs run-to-run ({b:.3}: {between})")
    }
}

/// `95% CI 0.62× – 0.79×, 2 runs, 12 rep pairs`.
pub(super) fn interval_text(p: &Pooled, runs: usize) -> String {
    let (lo, hi) = (format::ratio(p.interval[0]), format::ratio(p.interval[1]));
    format!("95% CI {lo} – {hi}, {}, {} rep pairs", units_text(p.units, runs), p.pairs)
}

/// `1 run`, `3 runs`, or `5 blocks in 1 run` where the units are blocks.
fn units_text(units: usize, runs: usize) -> String {
    let of = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    if units == runs {
        of(runs, "run", "runs")
    } else {
        format!("{} in {}", of(units, "block", "blocks"), of(runs, "run", "runs"))
    }
}

/// `from one run (r1)`, `pooled over 3 comparable runs`, `from 5 blocks of one run (r1)`.
fn pooled_text(p: &Pooled, runs: usize, anchor: &Run) -> String {
    match (runs, p.units) {
        (1, 1) => format!("from one run ({})", anchor.id),
        (1, units) => format!("from {units} blocks of one run ({})", anchor.id),
        (n, units) if units == n => format!("pooled over {n} comparable runs"),
        (n, units) => format!("pooled over {units} blocks of {n} comparable runs"),
    }
}

/// `95% CI 0.62× – 0.79×, 6 rep pairs`: one run's interval.
pub(super) fn summary_interval_text(s: &Summary) -> String {
    let ci = s.ci95.map_or_else(
        || "no interval".to_owned(),
        |[lo, hi]| format!("95% CI {} – {}", format::ratio(lo), format::ratio(hi)),
    );
    format!("{ci}, {} rep pairs", s.n)
}

/// `on <cpu>, <cores> cores, Kafka <version> (run <id>)`: our side of the setup, to read beside the publisher's.
pub(super) fn our_setup(run: &Run, records: &[&Record]) -> String {
    let h = &run.provenance.host;
    let kafka =
        records.iter().find_map(|r| r.run.kafka_version.clone()).map_or_else(String::new, |v| format!(", Kafka {v}"));
    format!("on {}, {} cores{kafka} (run {})", h.cpu_brand, h.logical_cores, run.id)
}

/// `; client and brokers used 1.9 CPU s per 1M records for partitionline and 1.2 for c_2_15 on 2 shared cores`,
/// where both sides' records measured it.
pub(super) fn cpu_here(num_records: &[&Record], den_records: &[&Record], num: &Side, den: &Side, run: &Run) -> String {
    const METRICS: [&str; 2] = ["total_cpu_s_per_m_records", "total_cpu_s_per_m_rows"];
    let median = |records: &[&Record], metric: &str| {
        let values: Vec<f64> = records
            .iter()
            .filter(|r| set_apart(r).is_none())
            .filter_map(|r| r.measurement.metrics.get(metric).map(|m| m.value))
            .collect();
        stats::median(&values)
    };
    METRICS
        .iter()
        .find_map(|m| {
            let (x, y) = (median(num_records, m)?, median(den_records, m)?);
            let unit = if m.ends_with("rows") { "rows" } else { "records" };
            Some(format!(
                "; client and brokers used {} CPU s per 1M {unit} for {} and {} for {} on {} shared cores",
                format::compact(x),
                num.describe(),
                format::compact(y),
                den.describe(),
                run.provenance.host.logical_cores
            ))
        })
        .unwrap_or_default()
}

/// ` What bounds it here, spate's 500 ms pause floor: framework at min_pause_ms 10 ms over framework at
/// min_pause_ms 500 ms is 3.90× (95% CI …) in the same run.`; empty when the run lacks a pair of the two points.
pub(super) fn bound_here(b: &Bound, c: &Claim, run: &Run) -> String {
    let (num, den) = (records_at(run, &c.matrix, &b.numerator), records_at(run, &c.matrix, &b.denominator));
    let contract = Contract { differs: b.differs.clone(), tolerance: default_tolerances(), equal_knobs: true };
    let pairs = values(&pair_reps(&num, &den, &c.metric, &contract), &c.metric);
    let Some(s) = stats::paired_ratios(&pairs) else { return String::new() };
    let Some(g) = s.geomean else { return String::new() };
    format!(
        " What bounds it here, {}: {} over {} is {} ({}) in the same run.",
        b.what.trim_end_matches('.'),
        b.numerator.describe(),
        b.denominator.describe(),
        format::ratio(g),
        summary_interval_text(&s)
    )
}

/// `0.61× (0.52M and 0.85M records per CPU-second, client and brokers)`: each side's records per CPU-second (median
/// over its reps) and their ratio, where both sides measured it.
pub(super) fn per_cpu_text(num_records: &[&Record], den_records: &[&Record]) -> Option<String> {
    let median = |records: &[&Record]| {
        let values: Vec<f64> = records
            .iter()
            .filter(|r| set_apart(r).is_none())
            .filter_map(|r| r.measurement.metrics.get("records_per_cpu_s").map(|m| m.value))
            .collect();
        stats::median(&values)
    };
    let (a, b) = (median(num_records)?, median(den_records)?);
    Some(format!(
        "{} ({} and {} records per CPU-second, client and brokers)",
        format::ratio(stats::ratio(a, b)?),
        format::compact(a),
        format::compact(b)
    ))
}

/// The paragraph under one of the lab's own comparisons: its figure and interval, which spread decided it, and what
/// each side ran on here. No band and no verdict: the seed never ran this point.
pub(super) fn beside_why(
    v: &ClaimVerdict,
    p: &Pooled,
    anchor: &Run,
    (num_records, den_records): (&[&Record], &[&Record]),
    (num, den): (&Side, &Side),
) -> String {
    let runs = pooled_text(p, v.runs.len(), anchor);
    format!(
        "{} over {}: {} ({}), {runs}; {}. Measured here {}{}; the seed did not run this point, so it is a finding of \
         this lab, not a verdict on the seed.",
        num.describe(),
        den.describe(),
        v.measured,
        v.interval,
        spread_text(p),
        our_setup(anchor, num_records),
        cpu_here(num_records, den_records, num, den, anchor)
    )
}
