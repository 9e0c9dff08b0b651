//! The seeds' headline claims (site/claims.toml) and a verdict for each from the newest run that measured its
//! two points: reproduces, does not reproduce, cannot tell here, not run, or no verdict (the two sides did not
//! do the same work). Each verdict says why in one sentence, from the records: how our ratio and its interval
//! stand to the published figure, what differs between the publisher's setup and ours, and the CPU the two
//! sides cost here where the records measured it.

use std::collections::BTreeSet;

use anyhow::{Context, Result, ensure};
use serde::{Deserialize, Serialize};
use streamlab_record::Record;
use streamlab_record::stats::{self, Summary, precision::precision_text};

use crate::site::config::default_tolerances;
use crate::site::format;
use crate::site::load::Run;
use crate::site::model::{Missing, Outcome, drawn_by_rep, outcome, set_apart};
use crate::site::parity::{self, Contract};

const CLAIMS_TOML: &str = include_str!("../../../site/claims.toml");

/// One published claim: a ratio of two points, in the publisher's words, with the lab's points for it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    pub id: String,
    pub seed: String,
    pub source: String,
    /// The publisher's words.
    pub claim: String,
    /// The ratio the claim rests on, numerator over denominator.
    pub published: f64,
    /// Where in the seed that number comes from.
    pub published_from: String,
    pub hardware: String,
    pub versions: String,
    pub matrix: String,
    pub metric: String,
    #[serde(default)]
    pub numerator: Option<Side>,
    #[serde(default)]
    pub denominator: Option<Side>,
    /// Settings the two sides may differ in (the like-for-like contract's declared differences).
    #[serde(default)]
    pub differs: Vec<String>,
    /// False for the seed's own comparison of unlike work, reproduced as the seed ran it.
    #[serde(default = "yes")]
    pub like_for_like: bool,
    /// How close (relative) our ratio must be to `published` to be the same size.
    pub tolerance: f64,
    #[serde(default = "yes")]
    pub higher_is_better: bool,
    /// Why the lab has no point for this claim.
    #[serde(default)]
    pub unmapped: Option<String>,
    /// What the lab measured that bounds the figure here: a ratio of two points of the same run.
    #[serde(default)]
    pub bound: Option<Bound>,
}

/// A ratio the lab measures beside a claim to show what holds its figure back here, e.g. spate's 500 ms
/// backpressure pause floor: the framework path at min_pause 10 ms over it at 500 ms.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bound {
    /// What bounds the figure, in a few words (`spate's 500 ms backpressure pause floor`).
    pub what: String,
    pub numerator: Side,
    pub denominator: Side,
    /// Settings its two points may differ in (the sweep's own knob).
    #[serde(default)]
    pub differs: Vec<String>,
}

fn yes() -> bool {
    true
}

/// A point of a matrix: an arm at a sweep's label ("" for an arms-only sweep, whose one point per arm is labelled
/// with the arm's title).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Side {
    pub sweep: String,
    pub arm: String,
    #[serde(default)]
    pub label: String,
}

impl Side {
    fn holds(&self, r: &Record) -> bool {
        r.arm == self.arm
            && r.variant.sweeps.first() == Some(&self.sweep)
            && (self.label.is_empty() || r.variant.label == self.label)
    }

    fn describe(&self) -> String {
        match self.label.as_str() {
            "" => format!("{} ({})", self.arm, self.sweep),
            label => format!("{} at {} {label}", self.arm, self.sweep),
        }
    }
}

/// The claims compiled into this build, checked.
pub fn builtin() -> Result<Vec<Claim>> {
    parse(CLAIMS_TOML)
}

pub fn parse(text: &str) -> Result<Vec<Claim>> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct File {
        claims: Vec<Claim>,
    }
    let file: File = toml::from_str(text).context("site/claims.toml is not valid")?;
    let mut ids = BTreeSet::new();
    for c in &file.claims {
        let at = format!("site/claims.toml claim {:?}", c.id);
        ensure!(ids.insert(c.id.as_str()), "{at}: the id is used twice");
        ensure!(c.published.is_finite() && c.published > 0.0, "{at}: `published` is a positive ratio");
        ensure!((0.0..1.0).contains(&c.tolerance), "{at}: `tolerance` is a fraction in [0, 1)");
        ensure!(
            c.unmapped.is_some() || (c.numerator.is_some() && c.denominator.is_some()),
            "{at}: name its `numerator` and `denominator` points, or say why it is `unmapped`"
        );
    }
    Ok(file.claims)
}

/// What the lab concludes about a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Reproduces,
    DoesNotReproduce,
    CannotTell,
    NotRun,
    /// The two sides did not do the same work under the claim's contract.
    NoVerdict,
}

impl Kind {
    pub fn text(self) -> &'static str {
        match self {
            Kind::Reproduces => "reproduces",
            Kind::DoesNotReproduce => "does not reproduce",
            Kind::CannotTell => "cannot tell here",
            Kind::NotRun => "not run",
            Kind::NoVerdict => "no verdict",
        }
    }
}

/// A claim with its verdict, as the index and `lab verdicts` show it.
#[derive(Debug, Clone, Serialize)]
pub struct ClaimVerdict {
    pub id: String,
    pub seed: String,
    pub claim: String,
    pub matrix: String,
    pub like_for_like: bool,
    pub published: f64,
    pub published_text: String,
    /// The seed file and where in it the published figure comes from.
    pub source: String,
    pub published_from: String,
    /// Which way the metric is better (a latency ratio under 1× favours the numerator).
    pub higher_is_better: bool,
    pub verdict: Kind,
    pub verdict_text: &'static str,
    /// Our ratio, e.g. `0.70×`; `—` without one.
    pub measured: String,
    /// `95% CI 0.62× – 0.79×, 6 rep pairs, precision ±7.1%`; empty without one.
    pub interval: String,
    /// One sentence: why this verdict.
    pub why: String,
    /// The run the verdict comes from.
    pub run: Option<String>,
}

/// Every claim's verdict from `runs` (oldest first, as the site loads them).
pub fn verdicts(runs: &[Run], claims: &[Claim]) -> Vec<ClaimVerdict> {
    claims.iter().map(|c| verdict_of(c, runs)).collect()
}

fn verdict_of(c: &Claim, runs: &[Run]) -> ClaimVerdict {
    let mut v = ClaimVerdict {
        id: c.id.clone(),
        seed: c.seed.clone(),
        claim: c.claim.trim().to_owned(),
        matrix: c.matrix.clone(),
        like_for_like: c.like_for_like,
        published: c.published,
        published_text: format::ratio(c.published),
        source: c.source.clone(),
        published_from: c.published_from.clone(),
        higher_is_better: c.higher_is_better,
        verdict: Kind::NotRun,
        verdict_text: "",
        measured: "—".into(),
        interval: String::new(),
        why: String::new(),
        run: None,
    };
    let (kind, why) = judge(c, runs, &mut v);
    v.verdict = kind;
    v.verdict_text = kind.text();
    v.why = why;
    v
}

/// The verdict and its sentence; fills in `v`'s measured figure and run on the way.
fn judge(c: &Claim, runs: &[Run], v: &mut ClaimVerdict) -> (Kind, String) {
    let (Some(num), Some(den)) = (&c.numerator, &c.denominator) else {
        return (Kind::NotRun, format!("The lab has no point for it: {}.", c.unmapped.as_deref().unwrap_or("")));
    };
    // The newest run that has both points; one that ran the whole matrix as defined before a partial one.
    let has = |run: &Run, side: &Side| !records_at(run, &c.matrix, side).is_empty();
    let candidates: Vec<&Run> = runs.iter().rev().filter(|r| has(r, num) && has(r, den)).collect();
    let Some(run) = candidates.iter().find(|r| !r.is_partial()).or(candidates.first()).copied() else {
        return (Kind::NotRun, format!("No committed run measured both {} and {}.", num.describe(), den.describe()));
    };
    v.run = Some(run.id.clone());
    let (num_records, den_records) = (records_at(run, &c.matrix, num), records_at(run, &c.matrix, den));
    for (side, records) in [(num, &num_records), (den, &den_records)] {
        let o = outcome(records, &c.metric);
        if let Outcome::NotDrawn { missing, .. } = &o {
            let kind = if *missing == Missing::NotRun { Kind::NotRun } else { Kind::CannotTell };
            let reasons = o.reasons().join("; ");
            return (kind, format!("{} has no {} in run {}: {reasons}.", side.describe(), c.metric, run.id));
        }
    }
    let contract = Contract {
        differs: c.differs.clone(),
        tolerance: default_tolerances(),
        // Two points of one sweep differ in its knob only; across sweeps the knobs differ by design.
        equal_knobs: num.sweep == den.sweep,
    };
    let sorted = pair_reps(&num_records, &den_records, &c.metric, &contract);
    let pairs = values(&sorted, &c.metric);
    if pairs.is_empty() {
        return if !sorted.undeclared.is_empty() {
            let keys: BTreeSet<&str> = sorted.undeclared.iter().map(|d| d.key.as_str()).collect();
            let keys = keys.into_iter().collect::<Vec<_>>().join(", ");
            let why = format!(
                "No verdict: the two sides did not do the same work in run {}: they differ in {keys}, which the \
                 claim's contract does not allow.",
                run.id
            );
            (Kind::NoVerdict, why)
        } else if sorted.not_applied {
            (Kind::NoVerdict, format!("No verdict: {}.", parity::NOT_APPLIED))
        } else {
            (Kind::CannotTell, format!("No rep of run {} measured both sides.", run.id))
        };
    }
    let Some(s) = stats::paired_ratios(&pairs) else {
        return (Kind::CannotTell, format!("{}'s {} is zero: no ratio.", den.describe(), c.metric));
    };
    v.measured = format::ratio(s.median);
    let target = num_records.iter().chain(&den_records).find_map(|r| r.run.precision_target);
    v.interval = interval_text(&s);
    let (kind, how) = decide(c.published, &s, target, c.tolerance);
    let setup = our_setup(run, &num_records);
    let cpu = cpu_here(&num_records, &den_records, num, den, run);
    let bound = c.bound.as_ref().map_or_else(String::new, |b| bound_here(b, c, run));
    let whose = if c.like_for_like { "Our" } else { "As the seed compared them (unlike work), our" };
    let why = format!(
        "{whose} {} {how} the published {}; published on {} with {}, measured here {setup}{cpu}.{bound}",
        v.measured,
        v.published_text,
        c.hardware.trim_end_matches('.'),
        c.versions.trim_end_matches('.'),
    );
    (kind, why)
}

/// The rep pairs of two points that did the same work under `contract`, and why the others were left out.
fn pair_reps<'r>(
    num_records: &[&'r Record],
    den_records: &[&'r Record],
    metric: &str,
    contract: &Contract,
) -> parity::Sorted<'r> {
    let (a, b) = (drawn_by_rep(num_records, metric), drawn_by_rep(den_records, metric));
    parity::sort(contract, a.iter().filter_map(|(rep, x)| b.get(rep).map(|y| (*x, *y))))
}

/// The metric's values of each holding pair.
fn values(sorted: &parity::Sorted, metric: &str) -> Vec<(f64, f64)> {
    let value = |r: &Record| r.measurement.metrics[metric].value;
    sorted.holding.iter().map(|(x, y)| (value(x), value(y))).collect()
}

/// ` What bounds it here, spate's 500 ms pause floor: framework at min_pause_ms 10 ms over framework at
/// min_pause_ms 500 ms is 3.90× (95% CI …) in the same run.`; empty when the run lacks a pair of the two points.
fn bound_here(b: &Bound, c: &Claim, run: &Run) -> String {
    let (num, den) = (records_at(run, &c.matrix, &b.numerator), records_at(run, &c.matrix, &b.denominator));
    let contract = Contract { differs: b.differs.clone(), tolerance: default_tolerances(), equal_knobs: true };
    let pairs = values(&pair_reps(&num, &den, &c.metric, &contract), &c.metric);
    let Some(s) = stats::paired_ratios(&pairs) else { return String::new() };
    format!(
        " What bounds it here, {}: {} over {} is {} ({}) in the same run.",
        b.what.trim_end_matches('.'),
        b.numerator.describe(),
        b.denominator.describe(),
        format::ratio(s.median),
        interval_text(&s)
    )
}

/// The records of `matrix` in `run` at `side`'s point.
fn records_at<'r>(run: &'r Run, matrix: &str, side: &Side) -> Vec<&'r Record> {
    run.matrices.get(matrix).map(|f| f.records.iter().filter(|r| side.holds(r)).collect()).unwrap_or_default()
}

/// The verdict of our per-rep-pair ratios `s` on a published ratio, and how ours stands to it (a phrase). An
/// interval that holds the published figure says it reproduces only if it is itself no wider than the claim's
/// tolerance: a wide interval holds almost anything.
fn decide(published: f64, s: &Summary, target: Option<f64>, tolerance: f64) -> (Kind, String) {
    let Some([lo, hi]) = s.ci95 else {
        return (Kind::CannotTell, "(one rep pair: no interval) cannot be set against".into());
    };
    let size_holds = (s.median / published - 1.0).abs() <= tolerance;
    let pct = |x: f64| format!("{:.0}%", x * 100.0);
    if published < lo || published > hi {
        let direction_holds = (published > 1.0 && lo > 1.0) || (published < 1.0 && hi < 1.0);
        return match (size_holds, direction_holds) {
            (true, _) => {
                (Kind::Reproduces, format!("is within {} of, though its 95% interval excludes,", pct(tolerance)))
            }
            (false, true) => (
                Kind::DoesNotReproduce,
                "is on the same side of 1× (the direction holds) but has a 95% interval that excludes".into(),
            ),
            (false, false) => (Kind::DoesNotReproduce, "has a 95% interval that excludes".into()),
        };
    }
    // How far the interval reaches from our ratio, on the ratio's own (log) scale.
    let reach = (s.median / lo).max(hi / s.median) - 1.0;
    let spans_one = lo <= 1.0 && 1.0 <= hi && (published - 1.0).abs() > tolerance;
    let short = target.filter(|t| s.precision().is_none_or(|p| p > *t));
    if spans_one {
        (Kind::CannotTell, "has a 95% interval that spans 1.0 (within noise) as well as".into())
    } else if let Some(t) = short {
        let how = format!("missed the run's precision target of {} while its 95% interval holds", precision_text(t));
        (Kind::CannotTell, how)
    } else if reach > tolerance {
        let how = format!(
            "has a 95% interval too wide to tell (it reaches {} from our ratio, the claim's tolerance is {}) that holds",
            pct(reach),
            pct(tolerance)
        );
        (Kind::CannotTell, how)
    } else {
        (Kind::Reproduces, "has a 95% interval that holds".into())
    }
}

/// `95% CI 0.62× – 0.79×, 6 rep pairs, precision ±7.1%`.
fn interval_text(s: &Summary) -> String {
    let ci = s.ci95.map_or_else(
        || "no interval".to_owned(),
        |[lo, hi]| format!("95% CI {} – {}", format::ratio(lo), format::ratio(hi)),
    );
    let precision = s.precision().map_or_else(String::new, |p| format!(", precision {}", precision_text(p)));
    format!("{ci}, {} rep pairs{precision}", s.n)
}

/// `on <cpu>, <cores> cores, Kafka <version> (run <id>)`: our side of the setup, to read beside the publisher's.
fn our_setup(run: &Run, records: &[&Record]) -> String {
    let h = &run.provenance.host;
    let kafka =
        records.iter().find_map(|r| r.run.kafka_version.clone()).map_or_else(String::new, |v| format!(", Kafka {v}"));
    format!("on {}, {} cores{kafka} (run {})", h.cpu_brand, h.logical_cores, run.id)
}

/// `; client and brokers used 1.9 CPU s per 1M records for partitionline and 1.2 for c_2_15 on 2 shared cores`,
/// where both sides' records measured it.
fn cpu_here(num_records: &[&Record], den_records: &[&Record], num: &Side, den: &Side, run: &Run) -> String {
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

#[cfg(test)]
mod tests {
    use streamlab_record::Status;

    use super::*;
    use crate::site::fixtures;
    use crate::site::load::load_results;

    /// A claim that framework/raw at kafka_sink's mode sweep is `published`.
    fn claim(published: f64) -> Claim {
        let text = format!(
            r#"[[claims]]
id = "000-test"
seed = "000"
source = "000_572cf4762e3ae6c6.txt"
claim = "the framework reaches half of raw librdkafka"
published = {published}
published_from = "a table"
hardware = "Apple M5 Max"
versions = "Kafka 4.1.0, rdkafka 0.39"
matrix = "kafka_sink"
metric = "records_per_s"
numerator = {{ sweep = "mode", arm = "framework" }}
denominator = {{ sweep = "mode", arm = "raw" }}
tolerance = 0.15
"#
        );
        parse(&text).unwrap().remove(0)
    }

    /// One run of raw at 1000 records/s and framework at `ratios` of it, rep by rep.
    fn run_with(ratios: &[f64], edit: impl Fn(&mut Record)) -> (tempfile::TempDir, Vec<Run>) {
        let dir = tempfile::tempdir().unwrap();
        let mut records = Vec::new();
        for (rep, ratio) in (1..).zip(ratios) {
            records.push(fixtures::record("r1", "raw", "raw rdkafka", &["mode"], true, rep, 1000.0));
            records.push(fixtures::record("r1", "framework", "framework path", &["mode"], false, rep, 1000.0 * ratio));
        }
        records.iter_mut().for_each(edit);
        fixtures::write_run(dir.path(), "r1", 1_000, &records);
        let runs = load_results(dir.path()).unwrap();
        (dir, runs)
    }

    #[test]
    fn a_published_figure_inside_outside_and_across_our_interval_gives_the_three_verdicts() {
        let (_dir, tight) = run_with(&[0.50, 0.52, 0.48], |_| {});
        let inside = &verdicts(&tight, &[claim(0.49)])[0];
        assert_eq!(inside.verdict, Kind::Reproduces, "{}", inside.why);
        assert_eq!(inside.measured, "0.50×");
        assert!(inside.why.contains("has a 95% interval that holds the published 0.49×"), "{}", inside.why);
        assert!(inside.why.contains("published on Apple M5 Max with Kafka 4.1.0"), "{}", inside.why);
        assert!(inside.interval.contains("3 rep pairs"), "{}", inside.interval);
        let outside = &verdicts(&tight, &[claim(0.9)])[0];
        assert_eq!(outside.verdict, Kind::DoesNotReproduce, "{}", outside.why);
        assert!(outside.why.contains("has a 95% interval that excludes the published 0.90×"), "{}", outside.why);
        // Excluded, but within the claim's tolerance of it: the size holds.
        let close = &verdicts(&tight, &[claim(0.56)])[0];
        assert_eq!(close.verdict, Kind::Reproduces, "{}", close.why);
        let (_dir, noisy) = run_with(&[0.6, 1.3, 0.9], |_| {});
        let across = &verdicts(&noisy, &[claim(0.49)])[0];
        assert_eq!(across.verdict, Kind::CannotTell, "{}", across.why);
        assert!(across.why.contains("spans 1.0 (within noise)"), "{}", across.why);
        // Below 1× throughout, but so wide that it would hold almost any figure.
        let (_dir, wide) = run_with(&[0.15, 0.22, 0.35], |_| {});
        let too_wide = &verdicts(&wide, &[claim(0.49)])[0];
        assert_eq!(too_wide.verdict, Kind::CannotTell, "{}", too_wide.why);
        assert!(too_wide.why.contains("too wide to tell"), "{}", too_wide.why);
        // Excluded, on the same side of 1×: the direction holds, the size does not.
        let direction = &verdicts(&tight, &[claim(0.2)])[0];
        assert_eq!(direction.verdict, Kind::DoesNotReproduce);
        assert!(direction.why.contains("the direction holds"), "{}", direction.why);
    }

    #[test]
    fn a_target_the_run_did_not_meet_cannot_tell_even_when_the_interval_holds_the_figure() {
        let (_dir, runs) = run_with(&[0.50, 0.52, 0.48], |r| r.run.precision_target = Some(0.05));
        let v = &verdicts(&runs, &[claim(0.49)])[0];
        assert_eq!(v.verdict, Kind::CannotTell, "{}", v.why);
        assert!(v.why.contains("missed the run's precision target of ±5.0%"), "{}", v.why);
    }

    #[test]
    fn a_point_not_run_gives_not_run_with_the_records_reason() {
        let (_dir, runs) = run_with(&[0.5, 0.5, 0.5], |r| {
            if r.arm == "framework" {
                r.status = Status::NotRun;
                r.reason = Some("no Redpanda Connect binary here".into());
                r.measurement.metrics.clear();
            }
        });
        let v = &verdicts(&runs, &[claim(0.49)])[0];
        assert_eq!(v.verdict, Kind::NotRun);
        assert!(v.why.contains("no Redpanda Connect binary here"), "{}", v.why);
        let (_dir, none) = run_with(&[], |_| {});
        assert_eq!(verdicts(&none, &[claim(0.49)])[0].verdict, Kind::NotRun);
    }

    #[test]
    fn two_sides_that_break_the_contract_get_no_verdict_naming_the_setting() {
        let (_dir, runs) = run_with(&[0.5, 0.5, 0.5], |r| {
            if r.arm == "framework" {
                r.measurement.applied.insert("producer.acks".into(), "1".into());
            }
        });
        let v = &verdicts(&runs, &[claim(0.49)])[0];
        assert_eq!(v.verdict, Kind::NoVerdict, "{}", v.why);
        assert!(v.why.contains("they differ in producer.acks"), "{}", v.why);
        // Declared, the difference is allowed.
        let mut declared = claim(0.49);
        declared.differs = vec!["producer.acks".into()];
        assert_eq!(verdicts(&runs, &[declared])[0].verdict, Kind::Reproduces);
    }

    #[test]
    fn a_claims_bound_is_measured_in_the_same_run_and_said_in_its_sentence() {
        let pause = |label: &str, rep: u32, rate: f64| {
            let mut r = fixtures::record("r1", "framework", label, &["min_pause_ms"], false, rep, rate);
            r.variant.knobs.insert(
                "min_pause_ms".into(),
                serde_json::json!(label.trim_end_matches(" ms").parse::<u64>().unwrap()),
            );
            r
        };
        let (_dir, runs) = run_with(&[0.50, 0.52, 0.48], |_| {});
        let mut bounded = claim(0.49);
        bounded.bound = Some(Bound {
            what: "spate's 500 ms backpressure pause floor".into(),
            numerator: Side { sweep: "min_pause_ms".into(), arm: "framework".into(), label: "10 ms".into() },
            denominator: Side { sweep: "min_pause_ms".into(), arm: "framework".into(), label: "500 ms".into() },
            differs: vec!["knob min_pause_ms".into()],
        });
        // The run has no min_pause points: the sentence says nothing of a bound.
        let without = &verdicts(&runs, std::slice::from_ref(&bounded))[0];
        assert!(!without.why.contains("What bounds it here"), "{}", without.why);
        let dir = tempfile::tempdir().unwrap();
        let mut records: Vec<Record> = runs[0].matrices["kafka_sink"].records.clone();
        for (rep, fast) in (1..).zip([3900.0, 4000.0, 4100.0]) {
            records.push(pause("10 ms", rep, fast));
            records.push(pause("500 ms", rep, 1000.0));
        }
        fixtures::write_run(dir.path(), "r1", 1_000, &records);
        let runs = load_results(dir.path()).unwrap();
        let with = &verdicts(&runs, std::slice::from_ref(&bounded))[0];
        assert_eq!(with.verdict, Kind::Reproduces, "the bound does not change the verdict: {}", with.why);
        assert!(
            with.why.contains(
                "What bounds it here, spate's 500 ms backpressure pause floor: framework at min_pause_ms 10 ms over \
                 framework at min_pause_ms 500 ms is 4.00× (95% CI"
            ),
            "{}",
            with.why
        );
        // A bound whose points break its contract (the knob not declared) is left out, not divided.
        bounded.bound.as_mut().unwrap().differs.clear();
        let undeclared = &verdicts(&runs, &[bounded])[0];
        assert!(!undeclared.why.contains("What bounds it here"), "{}", undeclared.why);
    }

    #[test]
    fn the_shipped_claims_parse_and_name_points_of_the_matrices() {
        let claims = builtin().unwrap();
        let matrices = crate::lab::matrix::load_all(&crate::paths::matrices_dir()).unwrap();
        for seed in ["000", "002", "003", "004"] {
            assert!(claims.iter().any(|c| c.seed == seed), "seed {seed} has no claim");
        }
        for c in &claims {
            let m = matrices.iter().find(|m| m.name == c.matrix).unwrap_or_else(|| panic!("{}: matrix", c.id));
            let bound = c.bound.iter().flat_map(|b| [&b.numerator, &b.denominator]);
            for side in [&c.numerator, &c.denominator].into_iter().flatten().chain(bound) {
                let sweep = m.sweeps.iter().find(|s| s.name == side.sweep);
                let sweep = sweep.unwrap_or_else(|| panic!("{}: no sweep {}", c.id, side.sweep));
                assert!(sweep.arms.contains(&side.arm), "{}: sweep {} has no arm {}", c.id, side.sweep, side.arm);
            }
        }
    }
}
