//! A matrix's headline figures in one run: its configured ratios between arms, computed per rep pair with
//! their own interval and a "within noise" mark; each arm's median at its default point, saying which
//! configuration that is; and beside it the arm's best measured point with the knobs that produced it.

use std::collections::BTreeMap;

use streamlab_record::Record;
use streamlab_record::stats::{self, Summary};

use crate::provenance::SweepInfo;
use crate::site::config::{RatioSpec, Reference, SiteConfig};
use crate::site::format;
use crate::site::model::{MatrixData, Outcome, Point, ci_text, cv_text, drawn_values, label_number, outcome};

/// A published figure as a headline shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Published {
    pub value: f64,
    pub text: String,
    pub seed: String,
    pub hardware: String,
}

/// A headline figure of one matrix in one run; `id` is stable across runs (the history view's key).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Figure {
    pub id: String,
    pub title: String,
    /// The figure, if it could be computed; otherwise `text` says why not.
    pub value: Option<f64>,
    pub text: String,
    /// The 95% interval shown beside the value, e.g. `95% CI 0.48× – 0.62×`; empty when there is none.
    pub interval: String,
    /// A comparison the data cannot tell from 1.0 (its interval spans it, or the arms' intervals overlap).
    pub within_noise: bool,
    /// Which configuration the figure ran under: the default point, or the knobs of a best point.
    pub config: String,
    pub detail: String,
    pub unit: String,
    pub higher_is_better: Option<bool>,
    /// min and max across reps (medians only).
    pub range: Option<(f64, f64)>,
    pub n: Option<usize>,
    pub published: Vec<Published>,
}

impl Figure {
    fn new(id: String, title: String, unit: &str, higher_is_better: Option<bool>) -> Self {
        Figure {
            id,
            title,
            value: None,
            text: String::new(),
            interval: String::new(),
            within_noise: false,
            config: String::new(),
            detail: String::new(),
            unit: unit.to_owned(),
            higher_is_better,
            range: None,
            n: None,
            published: Vec::new(),
        }
    }
}

/// A matrix's headline figures: its configured ratios (at each shared point, then at the numerator's best
/// point), then each arm's median at its default point and at its best point.
pub fn headline_figures(data: &MatrixData, cfg: &SiteConfig) -> Vec<Figure> {
    let Some(metric) = data.headline_metric(cfg) else { return Vec::new() };
    let ratios = cfg.headline(&data.info.name).map(|h| h.ratios.clone()).unwrap_or_default();
    let mut out = Vec::new();
    for spec in &ratios {
        out.extend(ratio_figures(data, cfg, spec, &metric));
        out.extend(best_ratio_figure(data, cfg, spec, &metric));
    }
    let median_sweep =
        ratios.first().map(|r| r.sweep.clone()).or_else(|| data.info.sweeps.first().map(|s| s.name.clone()));
    if let Some(sweep) = median_sweep.as_deref().and_then(|s| data.sweep(s)) {
        out.extend(arm_figures(data, cfg, sweep, &metric));
    }
    out
}

/// The per-rep-pair ratio of two sets of records, as a figure's value, interval and noise mark.
struct PairedRatio {
    value: f64,
    summary: Option<Summary>,
    within_noise: bool,
    how: String,
}

/// `num / den` per rep pair (same rep of both); with no pair, the ratio of medians. Noise is judged by the
/// pairs' interval, or with fewer than two pairs by whether the arms' own intervals overlap. `None` if
/// either side has nothing drawn or a zero base.
fn paired_ratio(num: &[&Record], den: &[&Record], metric: &str) -> Option<PairedRatio> {
    let (a, b) = (drawn_values(num, metric), drawn_values(den, metric));
    let summary_of = |m: &BTreeMap<u32, f64>| stats::summarize(&m.values().copied().collect::<Vec<_>>());
    let (sa, sb) = (summary_of(&a)?, summary_of(&b)?);
    let arms_overlap = stats::intervals_overlap(&sa, &sb);
    let pairs: Vec<(f64, f64)> = a.iter().filter_map(|(rep, x)| b.get(rep).map(|y| (*x, *y))).collect();
    match stats::paired_ratios(&pairs) {
        Some(s) => Some(PairedRatio {
            value: s.median,
            within_noise: stats::ratio_spans_one(&s).or(arms_overlap).unwrap_or(false),
            how: match s.n {
                1 => "the ratio of the one rep both arms share".to_owned(),
                n => format!("median of {n} per-rep ratios"),
            },
            summary: Some(s),
        }),
        None => Some(PairedRatio {
            value: stats::ratio(sa.median, sb.median)?,
            summary: None,
            within_noise: arms_overlap.unwrap_or(false),
            how: "ratio of medians (no rep has both arms)".into(),
        }),
    }
}

/// `95% CI 0.44× – 0.65×`; an interval of small ratios (both bounds under 0.1) gets three decimals.
fn interval_text(s: Option<&Summary>) -> String {
    let Some([lo, hi]) = s.and_then(|s| s.ci95) else { return String::new() };
    if lo.abs().max(hi.abs()) < 0.1 {
        format!("95% CI {lo:.3}× – {hi:.3}×")
    } else {
        format!("95% CI {} – {}", format::ratio(lo), format::ratio(hi))
    }
}

fn ratio_figures(data: &MatrixData, cfg: &SiteConfig, spec: &RatioSpec, metric: &str) -> Vec<Figure> {
    let (num_title, den_title) = (data.arm_title(&spec.numerator), data.arm_title(&spec.denominator));
    let base_title = format!("{num_title} / {den_title}");
    let id = format!(
        "ratio-{}-{}-{}",
        format::slug(&spec.sweep),
        format::slug(&spec.numerator),
        format::slug(&spec.denominator)
    );
    let refs = cfg.references(&data.info.name, &spec.sweep, metric);
    let (unit, _) = data.metric_meta(metric).unwrap_or_default();
    let points = data.sweep(&spec.sweep).map(|s| data.points(s)).unwrap_or_default();
    let mut labels: Vec<String> = Vec::new();
    for p in &points {
        if p.arm == spec.numerator
            && points.iter().any(|q| q.arm == spec.denominator && q.label == p.label)
            && !labels.contains(&p.label)
        {
            labels.push(p.label.clone());
        }
    }
    if labels.is_empty() {
        let mut f = Figure::new(id, base_title, "×", None);
        f.text = "not measured".into();
        f.detail = format!("this run has no point of sweep {:?} with both arms", spec.sweep);
        f.published = published_ratio(&refs, spec, "").into_iter().collect();
        return vec![f];
    }
    labels
        .iter()
        .map(|label| {
            let find = |arm: &str| points.iter().find(|p| p.arm == arm && &p.label == label);
            let (num_recs, den_recs) = (
                find(&spec.numerator).map(|p| p.records.clone()).unwrap_or_default(),
                find(&spec.denominator).map(|p| p.records.clone()).unwrap_or_default(),
            );
            let title = if label.is_empty() { base_title.clone() } else { format!("{base_title} ({label})") };
            let id = if label.is_empty() { id.clone() } else { format!("{id}-{}", format::slug(label)) };
            let mut f = Figure::new(id, title, "×", None);
            f.published = published_ratio(&refs, spec, label).into_iter().collect();
            let (num, den) = (outcome(&num_recs, metric), outcome(&den_recs, metric));
            match (num.summary(), den.summary()) {
                (Some(a), Some(b)) => match paired_ratio(&num_recs, &den_recs, metric) {
                    Some(r) => {
                        set_ratio(&mut f, &r);
                        f.detail = format!(
                            "{} ({num_title} over {den_title} of the same rep); medians {} / {} {unit}, n = {} and {}",
                            r.how,
                            format::compact(a.median),
                            format::compact(b.median),
                            a.n,
                            b.n
                        );
                    }
                    None => {
                        f.text = "not defined".into();
                        f.detail = format!("{den_title}'s value is zero");
                    }
                },
                _ => {
                    let why: Vec<String> = [(&num_title, &num), (&den_title, &den)]
                        .iter()
                        .filter(|(_, o)| o.summary().is_none())
                        .map(|(t, o)| format!("{t}: {}", o.reasons().join("; ")))
                        .collect();
                    f.text = "not available".into();
                    f.detail = why.join(" — ");
                }
            }
            f
        })
        .collect()
}

fn set_ratio(f: &mut Figure, r: &PairedRatio) {
    f.value = Some(r.value);
    f.text = format::ratio(r.value);
    f.interval = interval_text(r.summary.as_ref());
    f.within_noise = r.within_noise;
    f.n = r.summary.as_ref().map(|s| s.n);
}

/// The ratio again with the numerator at its best point, against the denominator's point of the ratio's
/// sweep; `None` when the best point is the one the ratio already uses.
fn best_ratio_figure(data: &MatrixData, cfg: &SiteConfig, spec: &RatioSpec, metric: &str) -> Option<Figure> {
    let sweep = data.sweep(&spec.sweep)?;
    let points = data.points(sweep);
    let hib = data.metric_meta(metric).is_none_or(|(_, h)| h);
    let base = arm_point(&points, &spec.numerator)?;
    let den = arm_point(&points, &spec.denominator)?;
    let best = best_point(data, &spec.numerator, metric, hib, within(data, cfg, base))?;
    if same_point(&best.point, base) {
        return None;
    }
    let r = paired_ratio(&best.point.records, &den.records, metric)?;
    let (num_title, den_title) = (data.arm_title(&spec.numerator), data.arm_title(&spec.denominator));
    let id = format!("ratio-best-{}-{}", format::slug(&spec.numerator), format::slug(&spec.denominator));
    let mut f = Figure::new(id, format!("{num_title} at its best point / {den_title}"), "×", None);
    set_ratio(&mut f, &r);
    f.config = knob_changes(base, &best.point);
    f.detail = format!("{} ({num_title} over {den_title} of the same rep); {}", r.how, best.place());
    Some(f)
}

/// An arm's point in a sweep: its default point if it has one, else its first.
fn arm_point<'a, 'r>(points: &'a [Point<'r>], arm: &str) -> Option<&'a Point<'r>> {
    let of_arm: Vec<&Point> = points.iter().filter(|p| p.arm == arm).collect();
    of_arm.iter().find(|p| p.default).or(of_arm.first()).copied()
}

/// The point of one arm with the best median of `metric` across every sweep of the run.
struct Best<'r> {
    point: Point<'r>,
    sweep_title: String,
    summary: Summary,
}

impl Best<'_> {
    /// `sweep “…”, point 100k`.
    fn place(&self) -> String {
        let label = if self.point.label.is_empty() { String::new() } else { format!(", point {}", self.point.label) };
        format!("sweep “{}”{label}", self.sweep_title)
    }
}

/// The knob and value a best point must share with `point` (the matrix's `best_within`), if any.
fn within<'p>(data: &MatrixData, cfg: &SiteConfig, point: &'p Point) -> Option<(String, &'p serde_json::Value)> {
    let knob = cfg.headline(&data.info.name)?.best_within.clone()?;
    let value = point.records.first()?.variant.knobs.get(&knob)?;
    Some((knob, value))
}

fn best_point<'r>(
    data: &MatrixData<'r>,
    arm: &str,
    metric: &str,
    higher_is_better: bool,
    within: Option<(String, &serde_json::Value)>,
) -> Option<Best<'r>> {
    let mut best: Option<Best> = None;
    let comparable = |p: &Point| {
        within
            .as_ref()
            .is_none_or(|(knob, value)| p.records.first().and_then(|r| r.variant.knobs.get(knob)) == Some(*value))
    };
    for sweep in &data.info.sweeps {
        for point in data.points(sweep).into_iter().filter(|p| p.arm == arm && comparable(p)) {
            let Outcome::Measured { summary, .. } = outcome(&point.records, metric) else { continue };
            // Ties keep the first point met, in the matrix's sweep order.
            let better = best.as_ref().is_none_or(|b| {
                if higher_is_better { summary.median > b.summary.median } else { summary.median < b.summary.median }
            });
            if better {
                best = Some(Best { point, sweep_title: sweep.title.clone(), summary });
            }
        }
    }
    best
}

/// Whether two points are the same records (the default point appears in several sweeps).
fn same_point(a: &Point, b: &Point) -> bool {
    a.records.len() == b.records.len() && a.records.iter().zip(&b.records).all(|(x, y)| std::ptr::eq(*x, *y))
}

/// The knobs of `point` that differ from `base`'s: `batch_max_rows = 100k, min_pause_ms = 10`.
fn knob_changes(base: &Point, point: &Point) -> String {
    let knobs = |p: &Point| p.records.first().map(|r| r.variant.knobs.clone()).unwrap_or_default();
    let (from, to) = (knobs(base), knobs(point));
    let changed: Vec<String> =
        to.iter().filter(|(k, v)| from.get(*k) != Some(v)).map(|(k, v)| format!("{k} = {}", knob_value(v))).collect();
    if changed.is_empty() {
        "the same knobs as the default point".into()
    } else {
        format!("knobs that differ from the default point: {}", changed.join(", "))
    }
}

/// A knob's value as a reader would write it: `100k` for 100000 when that spells it exactly.
fn knob_value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => match n.as_f64() {
            Some(x) if x.fract() == 0.0 && x.abs() >= 1000.0 => {
                let short = format::compact(x);
                if label_number(&short) == Some(x) { short } else { n.to_string() }
            }
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// The same ratio over the seeds' figures, per series that has both arms at the label.
fn published_ratio(refs: &[Reference], spec: &RatioSpec, label: &str) -> Option<Published> {
    let find = |arm: &str| refs.iter().find(|r| r.figure.arm == arm && r.figure.label == label);
    let (num, den) = (find(&spec.numerator)?, find(&spec.denominator)?);
    if num.series.seed != den.series.seed || num.series.hardware != den.series.hardware {
        return None;
    }
    let value = stats::ratio(num.figure.value, den.figure.value)?;
    Some(Published {
        value,
        text: format::ratio(value),
        seed: num.series.seed.clone(),
        hardware: num.series.hardware.clone(),
    })
}

/// Each arm of `sweep`: its median at its default point, then (if it differs) its best measured point.
fn arm_figures(data: &MatrixData, cfg: &SiteConfig, sweep: &SweepInfo, metric: &str) -> Vec<Figure> {
    let (unit, hib) = data.metric_meta(metric).unwrap_or_default();
    let refs = cfg.references(&data.info.name, &sweep.name, metric);
    let points = data.points(sweep);
    let mut arms: Vec<&str> = Vec::new();
    for p in &points {
        if !arms.contains(&p.arm.as_str()) {
            arms.push(&p.arm);
        }
    }
    let mut out = Vec::new();
    for arm in arms {
        let Some(point) = arm_point(&points, arm) else { continue };
        let label = if point.label.is_empty() { String::new() } else { format!(" at {}", point.label) };
        let id = format!("median-{}-{}-{}", format::slug(&sweep.name), format::slug(arm), format::slug(metric));
        let mut f = Figure::new(id, format!("{}{label}", data.arm_title(arm)), &unit, Some(hib));
        f.published = refs
            .iter()
            .filter(|r| r.figure.arm == arm && r.figure.label == point.label)
            .map(|r| Published {
                value: r.figure.value,
                text: format!("{} {}", format::compact(r.figure.value), r.series.unit),
                seed: r.series.seed.clone(),
                hardware: r.series.hardware.clone(),
            })
            .collect();
        let variant = point.records.first().map_or(point.label.as_str(), |r| r.variant.label.as_str());
        f.config = if point.default {
            format!("ran at the matrix's default point (“{variant}”)")
        } else {
            format!("ran at point “{variant}” of sweep “{}”", sweep.title)
        };
        set_median(&mut f, &outcome(&point.records, metric), metric, &unit);
        let best =
            best_point(data, arm, metric, hib, within(data, cfg, point)).filter(|b| !same_point(&b.point, point));
        if best.is_none() && f.value.is_some() {
            f.config.push_str("; the best point this arm measured in this run");
        }
        out.push(f);
        if let Some(best) = best {
            let id = format!("best-{}-{}", format::slug(arm), format::slug(metric));
            let mut b = Figure::new(id, format!("{}, best measured point", data.arm_title(arm)), &unit, Some(hib));
            set_median(
                &mut b,
                &Outcome::Measured { summary: best.summary.clone(), excluded: Vec::new() },
                metric,
                &unit,
            );
            b.config = knob_changes(point, &best.point);
            b.detail = format!("{} · {}", b.detail, best.place());
            out.push(b);
        }
    }
    out
}

/// A median figure's value, text and detail, or why there is none.
fn set_median(f: &mut Figure, o: &Outcome, metric: &str, unit: &str) {
    match o {
        Outcome::Measured { summary: s, .. } => {
            f.value = Some(s.median);
            f.text = format!("{} {unit}", format::compact(s.median));
            f.detail = format!("median {metric}, n = {}, 95% CI {}, {}", s.n, ci_text(s), cv_text(s));
            f.range = Some((s.min, s.max));
            f.n = Some(s.n);
        }
        Outcome::NotDrawn { missing, .. } => {
            f.text = missing.text().to_owned();
            f.detail = o.reasons().join("; ");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::site::fixtures;

    fn figures(records: &[Record]) -> Vec<Figure> {
        let info = fixtures::kafka_sink_info();
        let data = MatrixData::new("kafka_sink", Some(&info), records);
        headline_figures(&data, &SiteConfig::builtin().unwrap())
    }

    #[test]
    fn headline_ratios_are_computed_per_rep_pair_in_the_same_run() {
        let figs = figures(&fixtures::kafka_sink_records("run-a"));
        let ratio = figs.iter().find(|f| f.id == "ratio-mode-framework-raw").unwrap();
        // framework reps 500/600/700 over raw reps 1000/1100/1200: 0.5, 0.545, 0.583 -> median 600/1100
        assert!((ratio.value.unwrap() - 600.0 / 1100.0).abs() < 1e-12);
        assert_eq!(ratio.text, "0.55×");
        assert_eq!(ratio.n, Some(3));
        // mean 0.5429, s 0.0417: ± 4.303 * 0.0417 / sqrt(3) = ± 0.1036
        assert_eq!(ratio.interval, "95% CI 0.44× – 0.65×");
        assert!(!ratio.within_noise);
        assert!(ratio.detail.starts_with("median of 3 per-rep ratios"), "{}", ratio.detail);
        // seed 000: 1,210,960 / 2,489,626
        assert_eq!(ratio.published[0].text, "0.49×");
        let raw = figs.iter().find(|f| f.id == "median-mode-raw-records-per-s").unwrap();
        assert_eq!(raw.value, Some(1100.0));
        assert!(raw.detail.ends_with("CV 9.1%"), "{}", raw.detail);
    }

    #[test]
    fn a_ratio_whose_interval_spans_one_is_within_noise() {
        let mut records = fixtures::kafka_sink_records("run-a");
        // framework over raw per rep: 0.8, 1.0, 1.3
        for (r, v) in records
            .iter_mut()
            .filter(|r| r.arm == "framework" && r.variant.label == "default")
            .zip([800.0, 1100.0, 1560.0])
        {
            r.metrics.get_mut("records_per_s").unwrap().value = v;
        }
        let figs = figures(&records);
        let ratio = figs.iter().find(|f| f.id == "ratio-mode-framework-raw").unwrap();
        assert!(ratio.within_noise, "{ratio:?}");
    }

    #[test]
    fn without_rep_pairs_the_ratio_is_of_medians_and_noise_is_judged_by_the_arms_intervals() {
        let mut records = fixtures::kafka_sink_records("run-a");
        // framework reps 4-6 (no raw rep shares their numbers): 500/600/700 vs raw 1000/1100/1200 ...
        for r in records.iter_mut().filter(|r| r.arm == "framework" && r.variant.label == "default") {
            r.rep += 3;
        }
        let figs = figures(&records);
        let ratio = figs.iter().find(|f| f.id == "ratio-mode-framework-raw").unwrap();
        assert_eq!((ratio.text.as_str(), ratio.interval.as_str(), ratio.n), ("0.55×", "", None));
        assert!(ratio.detail.starts_with("ratio of medians (no rep has both arms)"), "{}", ratio.detail);
        // ... whose intervals (351.6 – 848.4 and 851.6 – 1348.4) do not overlap.
        assert!(!ratio.within_noise);
        // framework 500/600/900 widens its interval to 149.4 – 1183.9, which overlaps raw's.
        for r in records.iter_mut().filter(|r| r.arm == "framework" && r.variant.label == "default" && r.rep == 6) {
            r.metrics.get_mut("records_per_s").unwrap().value = 900.0;
        }
        let figs = figures(&records);
        assert!(figs.iter().find(|f| f.id == "ratio-mode-framework-raw").unwrap().within_noise);
    }

    #[test]
    fn the_best_point_of_each_arm_stands_beside_its_default_with_the_knobs_that_differ() {
        let figs = figures(&fixtures::kafka_sink_records("run-a"));
        let fw = figs.iter().find(|f| f.id == "median-mode-framework-records-per-s").unwrap();
        assert_eq!(fw.config, "ran at the matrix's default point (“default”)");
        // The 1M queue point (650, 660; rep 3 failed) beats the default (500/600/700).
        let best = figs.iter().find(|f| f.id == "best-framework-records-per-s").unwrap();
        assert_eq!(best.value, Some(650.0));
        assert_eq!(best.config, "knobs that differ from the default point: queue_buffering_max_messages = 1M");
        assert!(best.detail.contains("point 1M"), "{}", best.detail);
        // Its ratio to raw is taken over the reps both have: 650/1000, 660/1100.
        let ratio = figs.iter().find(|f| f.id == "ratio-best-framework-raw").unwrap();
        assert_eq!(ratio.n, Some(2));
        assert_eq!(ratio.value, Some(0.6));
        // raw's best point (1 core: 900/950/1000) is below its default (1100): no second figure.
        assert!(!figs.iter().any(|f| f.id == "best-raw-records-per-s"));
        let raw = figs.iter().find(|f| f.id == "median-mode-raw-records-per-s").unwrap();
        assert!(raw.config.ends_with("the best point this arm measured in this run"), "{}", raw.config);
    }

    #[test]
    fn best_points_stay_among_points_of_the_same_workload_knob() {
        let records = fixtures::kafka_sink_records("run-a");
        let info = fixtures::kafka_sink_info();
        let data = MatrixData::new("kafka_sink", Some(&info), &records);
        let headlines = r#"
            [kafka_sink]
            metric = "records_per_s"
            best_within = "queue_buffering_max_messages"
            ratios = [{ sweep = "mode", numerator = "framework", denominator = "raw" }]
        "#;
        let cfg = SiteConfig::parse(headlines, include_str!("../../../site/seeds.toml")).unwrap();
        let figs = headline_figures(&data, &cfg);
        // The 1M-queue point beats the default, but it is another value of the knob: no best point, no best ratio.
        assert!(figs.iter().all(|f| f.id != "best-framework-records-per-s" && f.id != "ratio-best-framework-raw"));
        let fw = figs.iter().find(|f| f.id == "median-mode-framework-records-per-s").unwrap();
        assert!(fw.config.ends_with("the best point this arm measured in this run"), "{}", fw.config);
    }

    #[test]
    fn a_rep_under_foreign_load_leaves_the_median_and_its_pair() {
        let mut records = fixtures::kafka_sink_records("run-a");
        for r in records.iter_mut().filter(|r| r.arm == "raw" && r.variant.label == "default" && r.rep == 3) {
            r.conditions = Some(fixtures::conditions(true, None));
        }
        let figs = figures(&records);
        let raw = figs.iter().find(|f| f.id == "median-mode-raw-records-per-s").unwrap();
        // reps 1000 and 1100 remain: the nearest-rank median of two is the lower.
        assert_eq!((raw.value, raw.n), (Some(1000.0), Some(2)));
        let ratio = figs.iter().find(|f| f.id == "ratio-mode-framework-raw").unwrap();
        assert_eq!(ratio.n, Some(2));
    }

    #[test]
    fn an_interval_of_small_ratios_gets_three_decimals() {
        let s = stats::paired_ratios(&[(9.6, 1000.0), (9.7, 1000.0), (9.8, 1000.0)]).unwrap();
        // mean 0.0097 ± 4.303 * 0.0001 / sqrt(3): 0.00945 – 0.00995
        assert_eq!(interval_text(Some(&s)), "95% CI 0.009× – 0.010×");
        let s = stats::paired_ratios(&[(400.0, 1000.0), (500.0, 1000.0), (600.0, 1000.0)]).unwrap();
        assert_eq!(interval_text(Some(&s)), "95% CI 0.25× – 0.75×");
        assert_eq!(interval_text(None), "");
    }

    #[test]
    fn knob_values_read_as_written() {
        assert_eq!(knob_value(&serde_json::json!(100000)), "100k");
        assert_eq!(knob_value(&serde_json::json!(268435456)), "268435456");
        assert_eq!(knob_value(&serde_json::json!(10)), "10");
        assert_eq!(knob_value(&serde_json::json!(2.5)), "2.5");
        assert_eq!(knob_value(&serde_json::json!("lz4")), "lz4");
    }
}
