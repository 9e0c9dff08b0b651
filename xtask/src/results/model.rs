//! From records to what a page says: sweeps, points and per-point outcomes.
//!
//! Statistics come from `streamlab_record::stats` only (median, 95% CI, CV, n); this module decides which
//! records may enter them: a record is drawn only if it ran, its integrity held and it was not measured
//! under foreign load.

use std::collections::{BTreeMap, BTreeSet};

use streamlab_record::stats::{self, Summary};
use streamlab_record::{Record, Status};

use crate::provenance::{ArmInfo, MatrixInfo, SweepInfo};
use crate::results::config::SiteConfig;
use crate::results::format;

/// Why a record is not drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Missing {
    /// It ran, but its integrity check failed: the number is withdrawn.
    Withdrawn,
    Failed,
    NotRun,
    /// It ran and was verified, but processes outside the lab used enough CPU to disturb it.
    ForeignLoad,
    /// It ran and was verified but did not report the metric this chart shows.
    NoMetric,
}

impl Missing {
    pub fn text(self) -> &'static str {
        match self {
            Missing::Withdrawn => "withdrawn",
            Missing::Failed => "failed",
            Missing::NotRun => "not run",
            Missing::ForeignLoad => "measured under foreign load",
            Missing::NoMetric => "not reported",
        }
    }

    /// The word the site's data for programs use (the CSV's `set_apart` column).
    pub fn key(self) -> &'static str {
        match self {
            Missing::Withdrawn => "withdrawn",
            Missing::Failed => "failed",
            Missing::NotRun => "not_run",
            Missing::ForeignLoad => "foreign_load",
            Missing::NoMetric => "no_metric",
        }
    }
}

/// Whether a record may be drawn, and if not, why (with its recorded reason).
pub fn classify(r: &Record) -> Option<(Missing, String)> {
    match r.status {
        Status::Failed => Some((Missing::Failed, r.reason.clone().unwrap_or_else(|| "no reason recorded".into()))),
        Status::NotRun => Some((Missing::NotRun, r.reason.clone().unwrap_or_else(|| "no reason recorded".into()))),
        Status::Ok => r.measurement.integrity.failure_reason().map(|reason| (Missing::Withdrawn, reason)),
    }
}

/// Whether a record enters a point's statistics, and if not, why: [`classify`], and then a verified record
/// measured under foreign load is set apart too (records without `conditions` never are).
pub fn set_apart(r: &Record) -> Option<(Missing, String)> {
    classify(r).or_else(|| {
        let c = r.conditions.as_ref().filter(|c| c.foreign_load)?;
        Some((
            Missing::ForeignLoad,
            format!(
                "{} CPU s used outside the lab during the {} s task, 1-min load average {}",
                format::table_value(c.foreign_cpu_s),
                format::table_value(c.wall_s),
                format::table_value(c.loadavg_1m)
            ),
        ))
    })
}

/// One record left out of a point, with why.
#[derive(Debug, Clone, PartialEq)]
pub struct Exclusion {
    pub missing: Missing,
    pub rep: u32,
    pub reason: String,
}

/// What a point's reps amount to for one metric.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// At least one rep ran, verified and reported the metric; others are listed as excluded.
    Measured { summary: Summary, excluded: Vec<Exclusion> },
    /// Nothing to draw: every rep failed, did not run, was withdrawn or lacked the metric.
    NotDrawn { missing: Missing, excluded: Vec<Exclusion> },
}

impl Outcome {
    pub fn summary(&self) -> Option<&Summary> {
        match self {
            Outcome::Measured { summary, .. } => Some(summary),
            Outcome::NotDrawn { .. } => None,
        }
    }

    pub fn excluded(&self) -> &[Exclusion] {
        match self {
            Outcome::Measured { excluded, .. } | Outcome::NotDrawn { excluded, .. } => excluded,
        }
    }

    /// One line a reader can act on: `withdrawn: integrity failed: expected 10 but observed 9 (...)`.
    pub fn reasons(&self) -> Vec<String> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for e in self.excluded() {
            let line = format!("{}: {}", e.missing.text(), e.reason);
            if seen.insert(line.clone()) {
                out.push(line);
            }
        }
        out
    }
}

/// A point's configuration as its first rep ran it: `knob k`, `applied k`, `version k` (the crates, tools, builds and
/// server it ran: a new build of a client is a new configuration), `placement` and `environment` -> value. Two runs
/// of a point are comparable, and pool, only with the same configuration.
pub fn config_of(r: &Record) -> BTreeMap<String, String> {
    let knobs = r.variant.knobs.iter().map(|(k, v)| (format!("knob {k}"), v.to_string()));
    let applied = r.measurement.applied.iter().map(|(k, v)| (format!("applied {k}"), v.clone()));
    let versions = r.measurement.versions.iter().map(|(k, v)| (format!("version {k}"), v.clone()));
    let placement = r.conditions.as_ref().and_then(|c| c.placement.clone()).map(|p| ("placement".to_owned(), p));
    let environment = r.run.environment_shape().map(|e| ("environment".to_owned(), e));
    knobs.chain(applied).chain(versions).chain(placement).chain(environment).collect()
}

/// The records that enter a point's statistics (not set apart) and carry a finite `metric`, by rep: what a
/// ratio pairs rep by rep.
pub fn drawn_by_rep<'r>(records: &[&'r Record], metric: &str) -> BTreeMap<u32, &'r Record> {
    records
        .iter()
        .filter(|r| set_apart(r).is_none() && r.measurement.metrics.get(metric).is_some_and(|m| m.value.is_finite()))
        .map(|r| (r.rep, *r))
        .collect()
}

/// Summarise `metric` over the publishable records of one point.
pub fn outcome(records: &[&Record], metric: &str) -> Outcome {
    let mut values = Vec::new();
    let mut excluded = Vec::new();
    for r in records {
        match (set_apart(r), r.measurement.metrics.get(metric)) {
            (Some((missing, reason)), _) => excluded.push(Exclusion { missing, rep: r.rep, reason }),
            (None, Some(m)) if m.value.is_finite() => values.push(m.value),
            (None, _) => excluded.push(Exclusion {
                missing: Missing::NoMetric,
                rep: r.rep,
                reason: format!("the record has no finite {metric}"),
            }),
        }
    }
    excluded.sort_by_key(|e| (e.rep, e.missing));
    match stats::summarize(&values) {
        Some(summary) => Outcome::Measured { summary, excluded },
        None => {
            // Report the most serious cause: a withdrawn number outweighs a crash, a crash a skip.
            let missing = excluded.iter().map(|e| e.missing).min().unwrap_or(Missing::NoMetric);
            Outcome::NotDrawn { missing, excluded }
        }
    }
}

/// One point of a sweep: an arm at one label, with all its reps.
#[derive(Debug, Clone)]
pub struct Point<'r> {
    pub arm: String,
    /// The point's label within this sweep; empty in an arms-only sweep.
    pub label: String,
    pub default: bool,
    pub records: Vec<&'r Record>,
}

/// A matrix of one run, ready to be summarised.
pub struct MatrixData<'r> {
    pub info: MatrixInfo,
    pub records: &'r [Record],
    /// Arm name -> a label short enough for a chart row (site/headlines.toml `short_arms`).
    pub short: BTreeMap<String, String>,
}

impl<'r> MatrixData<'r> {
    /// The precision the run aimed for at this matrix's points, if it set a target.
    pub fn precision_target(&self) -> Option<f64> {
        self.info.precision_target
    }

    /// `info` from provenance when the run lists the matrix, otherwise inferred from the records; a run from
    /// before provenance named its precision target has it on its records.
    pub fn new(name: &str, info: Option<&MatrixInfo>, records: &'r [Record]) -> Self {
        let mut info = info.cloned().unwrap_or_else(|| MatrixInfo {
            name: name.to_owned(),
            file: String::new(),
            sha256: String::new(),
            title: name.to_owned(),
            question: String::new(),
            seed: None,
            default_arm: None,
            arms: Vec::new(),
            sweeps: Vec::new(),
            does_not_say: Vec::new(),
            precision_target: None,
        });
        if info.precision_target.is_none() {
            info.precision_target = records.iter().find_map(|r| r.run.precision_target);
        }
        // Sweeps and arms that records name but provenance does not still get shown.
        for r in records {
            for s in &r.variant.sweeps {
                if !info.sweeps.iter().any(|x| &x.name == s) {
                    info.sweeps.push(SweepInfo {
                        name: s.clone(),
                        title: s.clone(),
                        caption: None,
                        arms: Vec::new(),
                        knob: None,
                        labels: Vec::new(),
                        fixed: Vec::new(),
                    });
                }
            }
            if !info.arms.iter().any(|a| a.name == r.arm) {
                info.arms.push(ArmInfo { name: r.arm.clone(), title: r.arm.clone(), description: String::new() });
            }
        }
        if records.iter().any(|r| r.variant.sweeps.is_empty()) {
            info.sweeps.push(SweepInfo {
                name: UNSWEPT.into(),
                title: "Points outside any sweep".into(),
                caption: None,
                arms: Vec::new(),
                knob: None,
                labels: Vec::new(),
                fixed: Vec::new(),
            });
        }
        MatrixData { info, records, short: BTreeMap::new() }
    }

    /// [`MatrixData::new`] with the site's short arm labels.
    pub fn for_site(name: &str, info: Option<&MatrixInfo>, records: &'r [Record], cfg: &SiteConfig) -> Self {
        let mut data = Self::new(name, info, records);
        data.short = cfg.headline(name).map(|h| h.short_arms.clone()).unwrap_or_default();
        data
    }

    pub fn arm_title(&self, arm: &str) -> String {
        self.info.arms.iter().find(|a| a.name == arm).map_or_else(|| arm.to_owned(), |a| a.title.clone())
    }

    /// The arm's short label for charts and ratio texts: configured, else its title.
    pub fn short_arm(&self, arm: &str) -> String {
        self.short.get(arm).cloned().unwrap_or_else(|| self.arm_title(arm))
    }

    pub fn sweep(&self, name: &str) -> Option<&SweepInfo> {
        self.info.sweeps.iter().find(|s| s.name == name)
    }

    fn in_sweep(&self, sweep: &str) -> Vec<&'r Record> {
        self.records
            .iter()
            .filter(|r| {
                if sweep == UNSWEPT { r.variant.sweeps.is_empty() } else { r.variant.sweeps.iter().any(|s| s == sweep) }
            })
            .collect()
    }

    /// The sweep's points, label-major (display order of labels), arms in the sweep's order.
    pub fn points(&self, sweep: &SweepInfo) -> Vec<Point<'r>> {
        let records = self.in_sweep(&sweep.name);
        let labels = sweep_labels(sweep, &records);
        let mut label_order: Vec<String> = sweep.labels.clone();
        let mut arm_order: Vec<String> = sweep.arms.clone();
        for (r, label) in records.iter().zip(&labels) {
            push_unique(&mut label_order, label);
            push_unique(&mut arm_order, &r.arm);
        }
        let mut points: Vec<Point<'r>> = Vec::new();
        for label in &label_order {
            for arm in &arm_order {
                let recs: Vec<&Record> = records
                    .iter()
                    .zip(&labels)
                    .filter(|(r, l)| *l == label && &r.arm == arm)
                    .map(|(r, _)| *r)
                    .collect();
                if recs.is_empty() {
                    continue;
                }
                let default = recs.iter().any(|r| r.variant.default);
                points.push(Point { arm: arm.clone(), label: label.clone(), default, records: recs });
            }
        }
        points
    }

    /// The headline metric: configured, else records_per_s, else the first metric any record carries.
    pub fn headline_metric(&self, cfg: &SiteConfig) -> Option<String> {
        if let Some(m) = cfg.headline(&self.info.name).and_then(|h| h.metric.clone()) {
            return Some(m);
        }
        first_metric(self.records.iter(), Some("records_per_s"))
    }

    /// The metrics charted for a sweep: configured, else the headline if the sweep reports it, else its first.
    pub fn sweep_metrics(&self, cfg: &SiteConfig, sweep: &SweepInfo) -> Vec<String> {
        if let Some(list) = cfg.headline(&self.info.name).and_then(|h| h.sweep_metrics.get(&sweep.name)) {
            return list.clone();
        }
        let records = self.in_sweep(&sweep.name);
        let headline = self.headline_metric(cfg);
        // A sweep whose records all failed still gets its chart (with its reasons) under the headline.
        let carried = first_metric(records.iter().copied(), headline.as_deref());
        carried.or(headline).into_iter().collect()
    }

    /// The unit and direction of a metric, from the first record that reports it.
    pub fn metric_meta(&self, metric: &str) -> Option<(String, bool)> {
        self.records
            .iter()
            .find_map(|r| r.measurement.metrics.get(metric))
            .map(|m| (m.unit.clone(), m.higher_is_better))
    }
}

/// The pseudo-sweep of records that belong to no sweep.
pub const UNSWEPT: &str = "unswept";

fn push_unique(list: &mut Vec<String>, item: &str) {
    if !list.iter().any(|x| x == item) {
        list.push(item.to_owned());
    }
}

/// `preferred` if any record carries it, else the alphabetically first metric name carried at all.
fn first_metric<'a>(records: impl Iterator<Item = &'a Record>, preferred: Option<&str>) -> Option<String> {
    let names: BTreeSet<&String> = records.flat_map(|r| r.measurement.metrics.keys()).collect();
    match preferred {
        Some(p) if names.iter().any(|n| n.as_str() == p) => Some(p.to_owned()),
        _ => names.into_iter().next().cloned(),
    }
}

/// Each record's label within `sweep`; empty for an arms-only sweep.
///
/// A point shared by several sweeps (the default point) carries one `variant.label`, which may be another
/// sweep's label. For a knob sweep the label therefore comes from the knob's value: values of records that
/// belong to this sweep alone name their labels, and a value left over takes the one label left over.
pub fn sweep_labels(sweep: &SweepInfo, records: &[&Record]) -> Vec<String> {
    let Some(knob) = &sweep.knob else {
        // An arms-only sweep has one point per arm: its label (often the arm's title) says nothing more.
        // A sweep that provenance does not describe may still vary something: then labels tell points apart.
        let mut per_arm: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for r in records {
            per_arm.entry(&r.arm).or_default().insert(&r.variant.label);
        }
        let arms_only = per_arm.values().all(|labels| labels.len() <= 1);
        return records.iter().map(|r| if arms_only { String::new() } else { r.variant.label.clone() }).collect();
    };
    let value_of = |r: &Record| r.variant.knobs.get(knob).map(|v| v.to_string());
    let mut by_value: BTreeMap<String, String> = BTreeMap::new();
    for r in records {
        if r.variant.sweeps.len() == 1
            && sweep.labels.contains(&r.variant.label)
            && let Some(v) = value_of(r)
        {
            by_value.entry(v).or_insert_with(|| r.variant.label.clone());
        }
    }
    let taken: BTreeSet<&String> = by_value.values().collect();
    let free: Vec<&String> = sweep.labels.iter().filter(|l| !taken.contains(l)).collect();
    let mut unresolved: Vec<String> = Vec::new();
    for r in records {
        if let Some(v) = value_of(r).filter(|v| !by_value.contains_key(v)) {
            push_unique(&mut unresolved, &v);
        }
    }
    for value in &unresolved {
        // A label that spells the value ("500k" for 500000, "2 cores" for 2) names it.
        let spelled: Vec<&&String> = free.iter().filter(|l| label_number(l) == value.parse::<f64>().ok()).collect();
        if let [label] = spelled.as_slice() {
            by_value.insert(value.clone(), (**label).clone());
        }
    }
    // Otherwise a single value left over takes the single label left over.
    let taken: BTreeSet<&String> = by_value.values().collect();
    let free: Vec<&String> = free.into_iter().filter(|l| !taken.contains(l)).collect();
    let left: Vec<&String> = unresolved.iter().filter(|v| !by_value.contains_key(*v)).collect();
    if let ([label], [value]) = (free.as_slice(), left.as_slice()) {
        by_value.insert((*value).clone(), (*label).clone());
    }
    records
        .iter()
        .map(|r| value_of(r).and_then(|v| by_value.get(&v).cloned()).unwrap_or_else(|| r.variant.label.clone()))
        .collect()
}

/// The number a label spells: `500k` -> 500000, `1M` -> 1e6, `2 cores` -> 2; `None` for words.
pub fn label_number(label: &str) -> Option<f64> {
    let token = label.split_whitespace().next()?;
    let (digits, scale) = match token.char_indices().last()? {
        (i, 'k' | 'K') => (&token[..i], 1e3),
        (i, 'M') => (&token[..i], 1e6),
        (i, 'G') => (&token[..i], 1e9),
        _ => (token, 1.0),
    };
    digits.parse::<f64>().ok().map(|x| x * scale)
}

/// `[lo, hi]` of a summary's 95% CI of the mean (Student's t), or — when n < 2; the median's own interval is
/// its precision.
pub fn ci_text(s: &Summary) -> String {
    s.ci95.map_or_else(|| "—".into(), |[lo, hi]| format!("{} – {}", format::table_value(lo), format::table_value(hi)))
}

/// How precisely a median (or a ratio's per-rep-pair median) is known, and whether the run's target was met.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Precision {
    /// `±3.1%`, or `— (n < 6)` without an interval.
    pub text: String,
    /// `target ±5.0%: met` or `target ±5.0%: not met`; empty when the run set no target.
    pub note: String,
    /// A target was set and not met: the figure says so next to its number.
    pub short: bool,
}

pub fn precision(s: &Summary, target: Option<f64>) -> Precision {
    use streamlab_record::stats::precision::{reached_text, target_note};
    let reached = s.precision();
    let text = reached_text(reached);
    match target.map(|t| target_note(reached, t)) {
        None => Precision { text, note: String::new(), short: false },
        Some((note, met)) => Precision { text, note, short: !met },
    }
}

/// `CV 4.2%`, the rep-to-rep noise of a summary, or `CV —` when n < 2.
pub fn cv_text(s: &Summary) -> String {
    s.cv.map_or_else(|| "CV —".into(), |cv| format!("CV {:.1}%", cv * 100.0))
}

/// Records of a matrix by outcome, for the index and run pages.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Counts {
    pub records: usize,
    pub verified: usize,
    pub withdrawn: usize,
    pub failed: usize,
    pub not_run: usize,
    /// Verified records measured under foreign load (set apart from the medians).
    pub foreign_load: usize,
}

pub fn counts(records: &[Record]) -> Counts {
    let mut c = Counts { records: records.len(), ..Counts::default() };
    for r in records {
        if set_apart(r).is_some_and(|(m, _)| m == Missing::ForeignLoad) {
            c.foreign_load += 1;
        }
        match classify(r) {
            None => c.verified += 1,
            Some((Missing::Withdrawn, _)) => c.withdrawn += 1,
            Some((Missing::Failed, _)) => c.failed += 1,
            Some((Missing::NotRun, _)) => c.not_run += 1,
            Some((Missing::ForeignLoad | Missing::NoMetric, _)) => {}
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fixtures;
    use streamlab_record::Integrity;

    fn rec(rep: u32, value: f64) -> Record {
        fixtures::record("run-a", "raw", "", &["mode"], true, rep, value)
    }

    #[test]
    fn a_point_summarises_only_verified_reps_with_known_statistics() {
        let (a, b, c) = (rec(1, 10.0), rec(2, 12.0), rec(3, 14.0));
        let mut bad = rec(4, 1e9);
        bad.measurement.integrity = Integrity::compare(100, 99, "sum of high watermarks");
        let o = outcome(&[&a, &b, &c, &bad], "records_per_s");
        let s = o.summary().unwrap();
        assert_eq!((s.n, s.median, s.min, s.max), (3, 12.0, 10.0, 14.0));
        // mean 12, s = 2, t(0.975, 2) = 4.303: 12 ± 4.9687
        let [lo, hi] = s.ci95.unwrap();
        assert!((lo - 7.0313).abs() < 1e-3 && (hi - 16.9687).abs() < 1e-3);
        assert_eq!(ci_text(s), "7.03 – 16.97");
        assert_eq!(o.excluded().len(), 1);
        assert_eq!(o.reasons(), ["withdrawn: integrity failed: expected 100 but observed 99 (sum of high watermarks)"]);
    }

    #[test]
    fn a_point_with_nothing_verified_is_not_drawn_and_says_why() {
        let mut bad = rec(1, 5.0);
        bad.measurement.integrity = Integrity::compare(10, 9, "hwm");
        let mut crashed = rec(2, 5.0);
        crashed.status = Status::Failed;
        crashed.reason = Some("timed out after 60 s".into());
        let o = outcome(&[&bad, &crashed], "records_per_s");
        assert!(matches!(o, Outcome::NotDrawn { missing: Missing::Withdrawn, .. }));
        assert_eq!(o.reasons().len(), 2);
        let o = outcome(&[&rec(1, 5.0)], "e2e_p99_ms");
        assert!(matches!(o, Outcome::NotDrawn { missing: Missing::NoMetric, .. }));
    }

    #[test]
    fn the_default_point_takes_its_label_from_the_knob_in_each_sweep() {
        let records = fixtures::kafka_sink_records("run-a");
        let info = fixtures::kafka_sink_info();
        let data = MatrixData::new("kafka_sink", Some(&info), &records);
        let batch = data.sweep("batch_max_rows").unwrap();
        let labels: Vec<String> = data.points(batch).iter().map(|p| p.label.clone()).collect();
        assert_eq!(labels, ["10k", "100k", "500k"]);
        let queue = data.sweep("queue_buffering_max_messages").unwrap();
        let points = data.points(queue);
        let labels: Vec<(&str, bool)> = points.iter().map(|p| (p.label.as_str(), p.default)).collect();
        assert_eq!(labels, [("100k", true), ("1M", false)]);
        let mode = data.sweep("mode").unwrap();
        let points = data.points(mode);
        let arms: Vec<(&str, &str)> = points.iter().map(|p| (p.arm.as_str(), p.label.as_str())).collect();
        assert_eq!(arms, [("raw", ""), ("framework", "")]);
    }

    #[test]
    fn a_sweep_without_a_knob_keeps_labels_only_when_they_tell_points_apart() {
        let sweep = SweepInfo {
            name: "produce".into(),
            title: "produce".into(),
            caption: None,
            arms: Vec::new(),
            knob: None,
            labels: Vec::new(),
            fixed: Vec::new(),
        };
        let a = fixtures::record("r", "pl", "plain", &["produce"], true, 1, 1.0);
        let b = fixtures::record("r", "pl", "lz4", &["produce"], false, 1, 1.0);
        let c = fixtures::record("r", "c", "C client", &["produce"], false, 1, 1.0);
        assert_eq!(sweep_labels(&sweep, &[&a, &b, &c]), ["plain", "lz4", "C client"]);
        assert_eq!(sweep_labels(&sweep, &[&a, &c]), ["", ""]);
    }

    #[test]
    fn labels_spell_numbers() {
        assert_eq!(label_number("500k"), Some(500_000.0));
        assert_eq!(label_number("1M"), Some(1_000_000.0));
        assert_eq!(label_number("2 cores"), Some(2.0));
        assert_eq!(label_number("plain"), None);
    }

    #[test]
    fn counts_sort_records_by_outcome() {
        let mut bad = rec(1, 5.0);
        bad.measurement.integrity = Integrity::compare(10, 9, "hwm");
        let mut skipped = rec(2, 5.0);
        skipped.status = Status::NotRun;
        let mut loaded = rec(4, 5.0);
        loaded.conditions = Some(foreign_load(true));
        let mut quiet = rec(5, 5.0);
        quiet.conditions = Some(foreign_load(false));
        let c = counts(&[rec(3, 1.0), bad, skipped, loaded, quiet]);
        // A record under foreign load is verified, and counted apart.
        assert_eq!(c, Counts { records: 5, verified: 3, withdrawn: 1, failed: 0, not_run: 1, foreign_load: 1 });
    }

    fn foreign_load(loaded: bool) -> streamlab_record::Conditions {
        fixtures::conditions(loaded, None)
    }

    #[test]
    fn a_rep_under_foreign_load_is_set_apart_with_its_numbers() {
        let mut loaded = rec(2, 1e6);
        loaded.conditions = Some(foreign_load(true));
        let mut quiet = rec(3, 14.0);
        quiet.conditions = Some(foreign_load(false));
        let o = outcome(&[&rec(1, 10.0), &loaded, &quiet], "records_per_s");
        let s = o.summary().unwrap();
        assert_eq!((s.n, s.median, s.max), (2, 10.0, 14.0));
        assert_eq!(
            o.reasons(),
            ["measured under foreign load: 9.50 CPU s used outside the lab during the 12.00 s task, \
              1-min load average 2.50"]
        );
        let o = outcome(&[&loaded], "records_per_s");
        assert!(matches!(o, Outcome::NotDrawn { missing: Missing::ForeignLoad, .. }));
    }
}
