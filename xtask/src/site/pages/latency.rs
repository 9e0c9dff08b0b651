//! A paced sweep's latency views on a matrix page, two per arm, each with its data table: latency against offered
//! load (the publish p50, p99 and p99.9 and the end-to-end p99, each the median over the point's counted reps, both
//! axes logarithmic), and the publish latency's percentile distribution at each offered load (HdrHistogram's
//! classic view, from the counted reps' histograms merged, as any reader can merge them from the records).

use serde::Serialize;
use streamlab_record::Record;
use streamlab_record::paced::{Latencies, PERCENTILES};
use streamlab_record::stats::median;

use crate::provenance::SweepInfo;
use crate::results::format::compact;
use crate::results::model::{MatrixData, Point, set_apart};
use crate::site::loglog::{self, Line, LogLog};

/// The metrics the load chart draws, with their legends.
const LOAD_LINES: [(&str, &str); 4] = [
    ("publish_p50_us", "publish p50"),
    ("publish_p99_us", "publish p99"),
    ("publish_p99_9_us", "publish p99.9"),
    ("end_to_end_p99_us", "end-to-end p99"),
];
/// The distribution chart's x axis: 1/(1 - percentile), labelled as percentiles.
const PERCENTILE_TICKS: [(f64, &str); 6] =
    [(1.0, "0%"), (10.0, "90%"), (100.0, "99%"), (1_000.0, "99.9%"), (10_000.0, "99.99%"), (100_000.0, "99.999%")];

#[derive(Debug, Clone, Serialize)]
pub struct LatencyView {
    pub id: String,
    pub heading: String,
    pub svg: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// The sweep's views, when its records are paced ones; none otherwise.
pub fn latency_views(data: &MatrixData, sweep: &SweepInfo, id_prefix: &str) -> Vec<LatencyView> {
    let points = data.points(sweep);
    if !points.iter().flat_map(|p| &p.records).any(|r| r.measurement.kind == "paced") {
        return Vec::new();
    }
    let mut arms: Vec<&str> = Vec::new();
    for p in &points {
        if !arms.contains(&p.arm.as_str()) && !counted(p).is_empty() {
            arms.push(&p.arm);
        }
    }
    let mut out = Vec::new();
    for (i, arm) in arms.iter().enumerate() {
        let mine: Vec<&Point> = points.iter().filter(|p| p.arm == *arm).collect();
        let name = data.short_arm(arm);
        out.push(load_view(&mine, &name, format!("{id_prefix}-load-{}", i + 1)));
        out.push(distribution_view(&mine, &name, format!("{id_prefix}-dist-{}", i + 1)));
    }
    out
}

/// The reps a point's figures stand on: verified, not set apart.
fn counted<'r>(p: &Point<'r>) -> Vec<&'r Record> {
    p.records.iter().copied().filter(|r| set_apart(r).is_none()).collect()
}

fn value(r: &Record, key: &str) -> Option<f64> {
    r.measurement.metrics.get(key).map(|m| m.value)
}

/// The point's offered rate, as its records applied it.
fn offered(records: &[&Record]) -> Option<f64> {
    records.iter().find_map(|r| value(r, "offered_rate"))
}

fn ms(us: Option<f64>) -> String {
    us.map_or_else(|| "—".into(), |v| format!("{:.2}", v / 1_000.0))
}

fn load_view(points: &[&Point], arm: &str, id: String) -> LatencyView {
    let mut lines: Vec<Line> = LOAD_LINES.iter().map(|(_, l)| Line { label: (*l).into(), points: vec![] }).collect();
    let mut rows = Vec::new();
    let mut ticks = Vec::new();
    for p in points {
        let records = counted(p);
        let Some(rate) = offered(&records) else { continue };
        ticks.push((rate, compact(rate)));
        let medians: Vec<Option<f64>> = LOAD_LINES
            .iter()
            .map(|(key, _)| median(&records.iter().filter_map(|r| value(r, key)).collect::<Vec<_>>()))
            .collect();
        for (line, m) in lines.iter_mut().zip(&medians) {
            if let Some(v) = m {
                line.points.push((rate, *v));
            }
        }
        let held = medians.iter().any(Option::is_some);
        let mut row = vec![p.label.clone(), records.len().to_string()];
        row.extend(medians.iter().map(|m| ms(*m)));
        if !held {
            row.push("could not hold the rate".into());
        } else {
            row.push(String::new());
        }
        rows.push(row);
    }
    let chart = LogLog {
        id: id.clone(),
        title: format!("{arm}: latency against offered load"),
        x_title: "offered records/s, log scale".into(),
        x_ticks: ticks,
        lines,
    };
    let mut columns = vec!["Offered".to_owned(), "n".to_owned()];
    columns.extend(LOAD_LINES.iter().map(|(_, l)| format!("{l} (ms, median)")));
    columns.push("Note".into());
    LatencyView {
        id,
        heading: format!("{arm}: latency against offered load"),
        svg: loglog::render(&chart),
        columns,
        rows,
    }
}

fn distribution_view(points: &[&Point], arm: &str, id: String) -> LatencyView {
    let mut lines = Vec::new();
    let mut rows = Vec::new();
    for p in points {
        let records = counted(p);
        let merged = records
            .iter()
            .filter_map(|r| r.measurement.details.get("publish_histogram"))
            .filter_map(|text| Latencies::from_base64(text).ok())
            .fold(None::<Latencies>, |acc, h| {
                let mut acc = acc.unwrap_or_default();
                acc.add(&h);
                Some(acc)
            });
        let Some(h) = merged else { continue };
        let points: Vec<(f64, f64)> = h
            .distribution()
            .into_iter()
            .filter(|(pct, _)| *pct < 99.999_9)
            .map(|(pct, us)| (1.0 / (1.0 - pct / 100.0), us))
            .collect();
        lines.push(Line { label: p.label.clone(), points });
        let mut row = vec![p.label.clone(), records.len().to_string(), h.len().to_string()];
        row.extend(PERCENTILES.iter().map(|(_, pct)| ms(h.percentile_us(*pct))));
        row.push(ms(h.max_us()));
        rows.push(row);
    }
    let chart = LogLog {
        id: id.clone(),
        title: format!("{arm}: publish latency by percentile"),
        x_title: "percentile (1/(1-p), log scale)".into(),
        x_ticks: PERCENTILE_TICKS.iter().map(|(x, l)| (*x, (*l).to_owned())).collect(),
        lines,
    };
    let mut columns = vec!["Offered".to_owned(), "Reps merged".to_owned(), "Records".to_owned()];
    columns.extend(PERCENTILES.iter().map(|(name, _)| format!("{} (ms)", name.replace('_', "."))));
    columns.push("max (ms)".into());
    LatencyView {
        id,
        heading: format!("{arm}: publish latency by percentile, the reps' histograms merged"),
        svg: loglog::render(&chart),
        columns,
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::config::SiteConfig;
    use crate::results::load::load_results;

    /// The committed standard run of the paced sweep (rust-rdkafka and partitionline, 4 rates, 3 reps each).
    const PACED_RUN: &str = "20261208T003551Z-standard-a86d";

    #[test]
    fn a_paced_sweep_gets_each_arms_load_and_distribution_views_from_its_counted_reps() {
        let runs = load_results(&crate::paths::results_dir()).unwrap();
        let run = runs.iter().find(|r| r.id == PACED_RUN).expect("the committed paced run");
        let cfg = SiteConfig::builtin().unwrap();
        let p = &run.provenance;
        let data = MatrixData::for_site(
            "clients",
            p.matrices.iter().find(|m| m.name == "clients"),
            &run.matrices["clients"].records,
            &cfg,
        );
        let sweep = data.info.sweeps.iter().find(|s| s.name == "paced").unwrap();
        let views = latency_views(&data, sweep, "sweep-paced");
        let headings: Vec<&str> = views.iter().map(|v| v.heading.as_str()).collect();
        assert_eq!(headings.len(), 4, "{headings:?}");
        assert!(headings[0].starts_with("rust-rdkafka: latency against offered load"), "{headings:?}");
        // The load table: one row per rate, the median of the three reps' figures.
        let load = &views[0];
        assert_eq!(load.rows.len(), 4);
        assert_eq!(load.rows[0][..3], ["10k/s".to_owned(), "3".into(), "3.76".into()]);
        assert_eq!(load.svg.matches("<polyline").count(), 4, "p50, p99, p99.9 and end-to-end p99");
        // The distribution: every record of every rep merged (3 reps x 10 s x 10,000 records/s at 10k/s).
        let dist = &views[1];
        assert_eq!(dist.rows[0][..3], ["10k/s".to_owned(), "3".into(), "300000".into()]);
        assert_eq!(dist.rows[3][2], "6000000");
        // Its percentiles come from the merged histogram, not from the reps' medians, and rise with the percentile.
        let row: Vec<f64> = dist.rows[0][3..].iter().map(|c| c.parse().unwrap()).collect();
        assert!(row.windows(2).all(|w| w[0] <= w[1]), "{row:?}");
    }

    #[test]
    fn a_sweep_of_other_workloads_gets_no_latency_view() {
        let runs = load_results(&crate::paths::results_dir()).unwrap();
        let run = runs.iter().find(|r| r.id == PACED_RUN).unwrap();
        let cfg = SiteConfig::builtin().unwrap();
        let other = runs.iter().rev().find(|r| r.id != PACED_RUN && r.matrices.contains_key("clients")).unwrap();
        let data = MatrixData::for_site("clients", None, &other.matrices["clients"].records, &cfg);
        for sweep in data.info.sweeps.iter().filter(|s| s.name != "paced") {
            assert!(latency_views(&data, sweep, "x").is_empty(), "{}", sweep.name);
        }
        assert!(run.matrices.contains_key("clients"));
    }
}
