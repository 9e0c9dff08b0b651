//! Headline ratios: numerator arm over denominator arm per rep pair, computed only from the pairs that
//! satisfy the ratio's parity contract; at each point of its sweep both arms ran, and at best points
//! (each side at its own best within the workload, or both at the numerator's best point).

use std::collections::{BTreeMap, BTreeSet};

use streamlab_record::Record;
use streamlab_record::stats::{self, Summary};

use super::best;
use super::identity::render_title;
use super::{Figure, Published, arm_point, interval_text};
use crate::results::config::{BestMode, RatioSpec, Reference, SiteConfig};
use crate::results::format;
use crate::results::model::{MatrixData, Point, drawn_by_rep, outcome};
use crate::results::parity::{self, Contract, Difference};

/// The ratio at every point of its sweep that both arms ran. A sweep the run does not have gives nothing
/// (the run predates it); a sweep without a shared point gives one figure saying so.
pub fn ratio_figures(data: &MatrixData, cfg: &SiteConfig, spec: &RatioSpec, metric: &str) -> Vec<Figure> {
    let Some(sweep) = data.sweep(&spec.sweep) else { return Vec::new() };
    let points = data.points(sweep);
    let refs = cfg.references(&data.info.name, &spec.sweep, metric);
    let base_id = format!("ratio-{}", spec.id);
    let mut labels: Vec<&str> = Vec::new();
    for p in points.iter().filter(|p| p.arm == spec.numerator) {
        if points.iter().any(|q| q.arm == spec.denominator && q.label == p.label) && !labels.contains(&p.label.as_str())
        {
            labels.push(&p.label);
        }
    }
    if labels.is_empty() {
        // A run limited to other points has no record of this sweep: the profile's knobs every record of the
        // matrix carries (record counts, sizes), under the sweep's own fixed ones, fill the title.
        let mut knobs = data.records.first().map(|r| r.variant.knobs.clone()).unwrap_or_default();
        knobs.extend(fixed_knobs(&sweep.fixed));
        let mut f = new_ratio(data, spec, metric, base_id, render_title(&spec.title, "", &[&knobs]));
        f.set_config(metric, &[]);
        f.text = "not measured".into();
        f.detail = format!("this run has no point of sweep “{}” with both arms", sweep.title);
        f.published = published_ratio(&refs, spec, "").into_iter().collect();
        return vec![f];
    }
    labels
        .into_iter()
        .map(|label| {
            let find = |arm: &str| points.iter().find(|p| p.arm == arm && p.label == label).expect("a shared label");
            let (num, den) = (find(&spec.numerator), find(&spec.denominator));
            let id = if label.is_empty() { base_id.clone() } else { format!("{base_id}-{}", format::slug(label)) };
            let title = render_title(&spec.title, label, &[&knobs(num), &knobs(den)]);
            let mut f = new_ratio(data, spec, metric, id, title);
            f.published = published_ratio(&refs, spec, label).into_iter().collect();
            f.set_config(metric, &[(&spec.numerator, num), (&spec.denominator, den)]);
            compute(data, &Contract::of(spec), metric, (num, den), &mut f);
            f
        })
        .collect()
}

/// The ratio at best points within the workload of the sweep's default points: each side at its own best
/// (`own`) or both at the numerator's best point (`same`). `None` when that is the ratio's own point.
pub fn best_ratio_figure(data: &MatrixData, spec: &RatioSpec, metric: &str, mode: BestMode) -> Option<Figure> {
    let sweep = data.sweep(&spec.sweep)?;
    let points = data.points(sweep);
    let (base_num, base_den) = (arm_point(&points, &spec.numerator)?, arm_point(&points, &spec.denominator)?);
    let hib = data.metric_meta(metric).is_none_or(|(_, h)| h);
    let (num_title, den_title) = (data.short_arm(&spec.numerator), data.short_arm(&spec.denominator));
    let placed = match mode {
        BestMode::Own => "each side at its own best point".to_owned(),
        BestMode::Same => format!("both at {num_title}'s best point"),
    };
    let id = format!("ratio-{}-best", spec.id);
    let num_best = best::best_point(data, &spec.numerator, metric, hib, base_num);
    let den_best = match mode {
        BestMode::Own => best::best_point(data, &spec.denominator, metric, hib, base_den),
        BestMode::Same => None,
    };
    let Some(num_best) = num_best else {
        let mut f = new_ratio(data, spec, metric, id, render_title(&spec.title, &placed, &[&knobs(base_num)]));
        f.set_config(metric, &[(&spec.numerator, base_num), (&spec.denominator, base_den)]);
        f.best = Some(mode);
        f.text = "no number".into();
        f.detail = if best::workload(base_num).is_none() {
            format!("no best point sought: {}", parity::NOT_APPLIED)
        } else {
            format!("{num_title} measured no point of this workload")
        };
        return Some(f);
    };
    let den_point: Option<Point> = match mode {
        BestMode::Own => den_best.as_ref().map(|b| b.point.clone()),
        BestMode::Same => data.sweep(&num_best.sweep).and_then(|s| {
            data.points(s).into_iter().find(|p| p.arm == spec.denominator && p.label == num_best.point.label)
        }),
    };
    let unchanged = best::same_point(&num_best.point, base_num)
        && den_point.as_ref().is_none_or(|d| mode == BestMode::Same || best::same_point(d, base_den));
    if unchanged {
        return None;
    }
    let num = &num_best.point;
    let title = match &den_point {
        Some(den) => render_title(&spec.title, &placed, &[&knobs(num), &knobs(den)]),
        None => render_title(&spec.title, &placed, &[&knobs(num)]),
    };
    let mut f = new_ratio(data, spec, metric, id, title);
    f.best = Some(mode);
    f.set_config(metric, &[(&spec.numerator, num)]);
    let Some(den) = den_point else {
        f.text = "no number".into();
        f.detail = match mode {
            BestMode::Own => format!("{den_title} measured no point of this workload"),
            BestMode::Same => format!("{den_title} did not run {num_title}'s best point ({})", num_best.place()),
        };
        return Some(f);
    };
    f.set_config(metric, &[(&spec.numerator, num), (&spec.denominator, &den)]);
    let contract = match mode {
        BestMode::Own => Contract::of(spec).knobs_free(),
        BestMode::Same => Contract::of(spec),
    };
    compute(data, &contract, metric, (num, &den), &mut f);
    f.config = match (mode, &den_best) {
        (BestMode::Own, Some(db)) => format!(
            "each side at its own best point of the workload: {num_title} at {} ({}); {den_title} at {} ({})",
            num_best.place(),
            best::knob_changes(base_num, num),
            db.place(),
            best::knob_changes(base_den, &db.point)
        ),
        _ => format!(
            "both at {num_title}'s best point of the workload: {} ({})",
            num_best.place(),
            best::knob_changes(base_num, num)
        ),
    };
    Some(f)
}

fn new_ratio(data: &MatrixData, spec: &RatioSpec, metric: &str, id: String, title: String) -> Figure {
    let hib = data.metric_meta(metric).is_none_or(|(_, h)| h);
    let mut f = Figure::new(id, title, "×", None);
    f.ratio = Some(spec.id.clone());
    f.compares = spec.compares.trim().to_owned();
    f.seed_comparison = spec.seed;
    let num = data.short_arm(&spec.numerator);
    f.direction = if hib {
        format!("higher is better: over 1× favours {num}")
    } else {
        format!("lower is better: under 1× favours {num}")
    };
    f
}

fn knobs(point: &Point) -> BTreeMap<String, serde_json::Value> {
    point.records.first().map(|r| r.variant.knobs.clone()).unwrap_or_default()
}

/// A sweep's fixed knobs (`batch_size = 3000`) as values, for a title when no record says them.
fn fixed_knobs(fixed: &[String]) -> BTreeMap<String, serde_json::Value> {
    fixed
        .iter()
        .filter_map(|f| f.split_once(" = "))
        .map(|(k, v)| {
            let value = serde_json::from_str(v).unwrap_or_else(|_| serde_json::Value::String(v.to_owned()));
            (k.to_owned(), value)
        })
        .collect()
}

/// Fill `f` with the ratio of two points: from the rep pairs (same rep of both) that satisfy `contract`,
/// or, with no rep in common, from the medians of the records whose pairings satisfy it. Without any
/// pair that satisfies it, no number, and why.
fn compute(data: &MatrixData, contract: &Contract, metric: &str, sides: (&Point, &Point), f: &mut Figure) {
    let (num_point, den_point) = sides;
    let (num_title, den_title) = (data.short_arm(&num_point.arm), data.short_arm(&den_point.arm));
    let (unit, _) = data.metric_meta(metric).unwrap_or_default();
    let (no, de) = (outcome(&num_point.records, metric), outcome(&den_point.records, metric));
    let (Some(sa), Some(sb)) = (no.summary(), de.summary()) else {
        let why: Vec<String> = [(&num_title, &no), (&den_title, &de)]
            .iter()
            .filter(|(_, o)| o.summary().is_none())
            .map(|(t, o)| format!("{t}: {}", o.reasons().join("; ")))
            .collect();
        f.text = "not available".into();
        f.detail = why.join(" — ");
        return;
    };
    let (a, b) = (drawn_by_rep(&num_point.records, metric), drawn_by_rep(&den_point.records, metric));
    let rep_pairs: Vec<(&Record, &Record)> = a.iter().filter_map(|(rep, x)| b.get(rep).map(|y| (*x, *y))).collect();
    let paired = !rep_pairs.is_empty();
    let candidates: Vec<(&Record, &Record)> =
        if paired { rep_pairs } else { a.values().flat_map(|x| b.values().map(move |y| (*x, *y))).collect() };
    let parity::Sorted { holding, declared, undeclared, not_applied, mut left_out } =
        parity::sort(contract, candidates);
    let texts = |ds: &BTreeSet<Difference>| -> Vec<String> {
        ds.iter().map(|d| d.text(&num_title, &den_title)).collect::<BTreeSet<_>>().into_iter().collect()
    };
    if holding.is_empty() {
        f.text = "no number".into();
        f.undeclared = texts(&undeclared);
        f.detail = broken_contract(&undeclared, not_applied);
        return;
    }
    f.declared = texts(&declared);
    f.pairs = holding.iter().map(|(x, y)| (index_of(data, x), index_of(data, y))).collect();
    let arms_overlap = stats::intervals_overlap(sa, sb);
    let estimate = if paired {
        paired_ratio(&holding, metric, arms_overlap)
    } else {
        median_ratio(&holding, metric, arms_overlap)
    };
    let Some(Estimate { value, summary, within_noise, how }) = estimate else {
        f.text = "not defined".into();
        f.detail = format!("{den_title}'s value is zero");
        return;
    };
    set_ratio(f, value, summary.as_ref(), within_noise);
    f.precision = summary.as_ref().map(|s| crate::results::model::precision(s, data.precision_target()));
    f.detail = format!(
        "{how} ({num_title} over {den_title} of the same rep); medians {} / {} {unit}, n = {} and {}",
        format::compact(sa.median),
        format::compact(sb.median),
        sa.n,
        sb.n
    );
    if !left_out.is_empty() {
        left_out.sort_unstable();
        left_out.dedup();
        let reps: Vec<String> = left_out.iter().map(u32::to_string).collect();
        f.detail.push_str(&format!("; rep {} left out: its pair breaks the contract", reps.join(", ")));
    }
}

/// Why a ratio whose pairs all break its contract has no number.
fn broken_contract(undeclared: &BTreeSet<Difference>, not_applied: bool) -> String {
    if undeclared.is_empty() && not_applied {
        return parity::NOT_APPLIED.to_owned();
    }
    let keys: BTreeSet<&str> = undeclared.iter().map(|d| d.key.as_str()).collect();
    format!(
        "the two sides differ in settings this ratio's contract does not allow: {}",
        keys.into_iter().collect::<Vec<_>>().join(", ")
    )
}

/// A ratio's number, its spread when it has one, whether it is within the noise, and how it was formed.
struct Estimate {
    value: f64,
    summary: Option<Summary>,
    within_noise: bool,
    how: String,
}

/// From rep pairs: the geometric mean of the per-rep ratios. `None` when a denominator is zero.
fn paired_ratio(holding: &[(&Record, &Record)], metric: &str, arms_overlap: Option<bool>) -> Option<Estimate> {
    let values: Vec<(f64, f64)> = holding.iter().map(|(x, y)| (value_of(x, metric), value_of(y, metric))).collect();
    let s = stats::paired_ratios(&values)?;
    let how = match s.n {
        1 => "the ratio of the one rep both arms share".to_owned(),
        n => format!("geometric mean of {n} per-rep ratios"),
    };
    Some(Estimate {
        value: s.geomean.unwrap_or(s.median),
        within_noise: stats::ratio_spans_one(&s).or(arms_overlap).unwrap_or(false),
        summary: Some(s),
        how,
    })
}

/// With no rep in common: the ratio of the two sides' medians, each record once however many of its
/// pairings hold. `None` when the denominator is zero.
fn median_ratio(holding: &[(&Record, &Record)], metric: &str, arms_overlap: Option<bool>) -> Option<Estimate> {
    let (mut xs, mut ys) = (BTreeMap::new(), BTreeMap::new());
    for (x, y) in holding {
        xs.insert(x.rep, value_of(x, metric));
        ys.insert(y.rep, value_of(y, metric));
    }
    let median = |m: &BTreeMap<u32, f64>| stats::median(&m.values().copied().collect::<Vec<_>>());
    let value = median(&xs).zip(median(&ys)).and_then(|(x, y)| stats::ratio(x, y))?;
    Some(Estimate {
        value,
        summary: None,
        within_noise: arms_overlap.unwrap_or(false),
        how: "ratio of medians (no rep has both arms)".to_owned(),
    })
}

fn value_of(r: &Record, metric: &str) -> f64 {
    r.measurement.metrics.get(metric).map_or(f64::NAN, |m| m.value)
}

fn index_of(data: &MatrixData, r: &Record) -> usize {
    data.records.iter().position(|x| std::ptr::eq(x, r)).expect("a record of this matrix")
}

fn set_ratio(f: &mut Figure, value: f64, summary: Option<&Summary>, within_noise: bool) {
    f.value = Some(value);
    f.text = format::ratio(value);
    f.interval = interval_text(summary);
    f.ci = summary.and_then(|s| s.ci95).map(|[lo, hi]| (lo, hi));
    f.within_noise = within_noise;
    f.n = summary.map(|s| s.n);
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
