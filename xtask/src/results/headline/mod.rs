//! A matrix's headline figures in one run: its configured ratios between arms, each computed only from rep
//! pairs that satisfy its parity contract (`parity`), with its own interval and a "within noise" mark; each
//! arm's median at its default point, saying which configuration that is; and beside it the arm's best
//! measured point within the same workload, with the knobs that produced it.

mod best;
mod identity;
mod ratio;

use streamlab_record::stats::Summary;

use crate::provenance::SweepInfo;
use crate::results::config::{BestMode, SiteConfig};
use crate::results::format;
use crate::results::model::{MatrixData, Outcome, Point, ci_text, cv_text, outcome};

pub use identity::config_changes;

/// A published figure as a headline shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Published {
    pub value: f64,
    pub text: String,
    pub seed: String,
    pub hardware: String,
}

/// A headline figure of one matrix in one run. `id` is stable across runs; `config_hash` names the
/// configuration it was measured with, and the two together are its history series.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Figure {
    pub id: String,
    pub config_hash: String,
    /// The settings `config_hash` covers, `side: knob k` / `side: applied key` -> value.
    #[serde(skip)]
    pub config_items: std::collections::BTreeMap<String, String>,
    pub title: String,
    /// A ratio: the id of its entry in site/headlines.toml; `None` for an arm's median.
    pub ratio: Option<String>,
    /// A best-point ratio: how its sides were placed.
    pub best: Option<BestMode>,
    /// One sentence: what the ratio compares.
    pub compares: String,
    /// The seed's own comparison, shown as such beside the like-for-like one.
    pub seed_comparison: bool,
    /// The figure, if it could be computed; otherwise `text` says why not.
    pub value: Option<f64>,
    pub text: String,
    /// The 95% interval shown beside the value, e.g. `95% CI 0.48× – 0.62×`; empty when there is none.
    pub interval: String,
    /// That interval's bounds, for the forest plot.
    pub ci: Option<(f64, f64)>,
    /// A comparison the data cannot tell from 1.0 (its interval spans it, or the arms' intervals overlap).
    pub within_noise: bool,
    /// How precisely the figure (a median, or a ratio's per-rep-pair median) is known, against the run's target.
    pub precision: Option<crate::results::model::Precision>,
    /// Which configuration the figure ran under: the default point, or the knobs of a best point.
    pub config: String,
    pub detail: String,
    /// For a ratio: which way is better, e.g. `lower is better: under 1× favours Rust`.
    pub direction: String,
    /// Declared differences the pairs have, each with both sides' values.
    pub declared: Vec<String>,
    /// Why a ratio has no number: the settings the two sides differ in that its contract does not allow.
    pub undeclared: Vec<String>,
    pub unit: String,
    pub higher_is_better: Option<bool>,
    /// min and max across reps (medians only).
    pub range: Option<(f64, f64)>,
    pub n: Option<usize>,
    pub published: Vec<Published>,
    /// The rep pairs a ratio was computed from, as indices into the matrix's records.
    #[serde(skip)]
    pub pairs: Vec<(usize, usize)>,
}

impl Figure {
    pub(crate) fn new(id: String, title: String, unit: &str, higher_is_better: Option<bool>) -> Self {
        Figure {
            id,
            config_hash: String::new(),
            config_items: Default::default(),
            title,
            ratio: None,
            best: None,
            compares: String::new(),
            seed_comparison: false,
            value: None,
            text: String::new(),
            interval: String::new(),
            ci: None,
            within_noise: false,
            precision: None,
            config: String::new(),
            detail: String::new(),
            direction: String::new(),
            declared: Vec::new(),
            undeclared: Vec::new(),
            unit: unit.to_owned(),
            higher_is_better,
            range: None,
            n: None,
            published: Vec::new(),
            pairs: Vec::new(),
        }
    }

    fn set_config(&mut self, metric: &str, sides: &[(&str, &Point)]) {
        self.config_items = identity::config_items(metric, sides);
        self.config_hash = identity::config_hash(&self.config_items);
    }
}

/// A matrix's headline figures: its configured ratios (at each shared point, then at best points where the
/// ratio asks for them), then each arm's median at its default point and at its best point.
pub fn headline_figures(data: &MatrixData, cfg: &SiteConfig) -> Vec<Figure> {
    let Some(metric) = data.headline_metric(cfg) else { return Vec::new() };
    let ratios = cfg.headline(&data.info.name).map(|h| h.ratios.clone()).unwrap_or_default();
    let mut out = Vec::new();
    for spec in &ratios {
        let metric = spec.metric.clone().unwrap_or_else(|| metric.clone());
        out.extend(ratio::ratio_figures(data, cfg, spec, &metric));
        if let Some(mode) = spec.best {
            out.extend(ratio::best_ratio_figure(data, spec, &metric, mode));
        }
    }
    // The arms' medians come from the first ratio's sweep this run has, else from its first sweep.
    let has = |name: &str| data.sweep(name).is_some_and(|s| !data.points(s).is_empty());
    let median_sweep = ratios
        .iter()
        .map(|r| r.sweep.clone())
        .find(|s| has(s))
        .or_else(|| data.info.sweeps.iter().map(|s| s.name.clone()).find(|s| has(s)));
    if let Some(sweep) = median_sweep.as_deref().and_then(|s| data.sweep(s)) {
        out.extend(arm_figures(data, cfg, sweep, &metric));
    }
    out
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

/// An arm's point in a sweep: its default point if it has one, else its first.
fn arm_point<'a, 'r>(points: &'a [Point<'r>], arm: &str) -> Option<&'a Point<'r>> {
    let of_arm: Vec<&Point> = points.iter().filter(|p| p.arm == arm).collect();
    of_arm.iter().find(|p| p.default).or(of_arm.first()).copied()
}

/// Each arm of `sweep`: its median at its default point, then (if it differs) its best measured point
/// within the same workload.
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
    let metric_words = crate::results::words::metric_title(metric);
    let mut out = Vec::new();
    for arm in arms {
        let Some(point) = arm_point(&points, arm) else { continue };
        let label = if point.label.is_empty() { String::new() } else { format!(", {}", point.label) };
        let id = format!("median-{}-{}-{}", format::slug(&sweep.name), format::slug(arm), format::slug(metric));
        let title = format!("{}: {metric_words}, {}{label}", data.arm_title(arm), sweep.title);
        let mut f = Figure::new(id, title, &unit, Some(hib));
        f.set_config(metric, &[(arm, point)]);
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
        set_median(&mut f, &outcome(&point.records, metric), metric, &unit, data.precision_target());
        let best = best::best_point(data, arm, metric, hib, point);
        match &best {
            None if f.value.is_some() && best::workload(point).is_none() => {
                f.config.push_str("; no best point sought: the records do not say what they applied");
            }
            Some(b) if best::same_point(&b.point, point) => {
                f.config.push_str("; the best point this arm measured in this run for this workload");
            }
            _ => {}
        }
        out.push(f);
        if let Some(best) = best.filter(|b| !best::same_point(&b.point, point)) {
            let id = format!("best-{}-{}", format::slug(arm), format::slug(metric));
            let title = format!(
                "{}: {metric_words}, {}, best measured point of the workload",
                data.arm_title(arm),
                sweep.title
            );
            let mut b = Figure::new(id, title, &unit, Some(hib));
            b.set_config(metric, &[(arm, &best.point)]);
            set_median(
                &mut b,
                &Outcome::Measured { summary: best.summary.clone(), excluded: Vec::new() },
                metric,
                &unit,
                data.precision_target(),
            );
            b.config = best::knob_changes(point, &best.point);
            b.detail = format!("{} · {}", b.detail, best.place());
            out.push(b);
        }
    }
    out
}

/// A median figure's value, text and detail, or why there is none.
fn set_median(f: &mut Figure, o: &Outcome, metric: &str, unit: &str, target: Option<f64>) {
    match o {
        Outcome::Measured { summary: s, .. } => {
            f.precision = Some(crate::results::model::precision(s, target));
            f.value = Some(s.median);
            f.text = format!("{} {unit}", format::compact(s.median));
            f.detail = format!("median {metric}, n = {}, 95% CI of the mean {}, {}", s.n, ci_text(s), cv_text(s));
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
mod tests;
