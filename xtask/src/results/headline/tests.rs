use std::collections::BTreeSet;

use streamlab_record::Record;
use streamlab_record::applied::{CONNECTIONS, FORMAT};
use streamlab_record::stats;

use super::*;
use crate::results::config::SiteConfig;
use crate::results::fixtures;
use crate::results::load;
use crate::results::parity::{self, Contract, Verdict};

fn figures(records: &[Record]) -> Vec<Figure> {
    let info = fixtures::kafka_sink_info();
    let data = MatrixData::new("kafka_sink", Some(&info), records);
    headline_figures(&data, &SiteConfig::builtin().unwrap())
}

fn find<'a>(figs: &'a [Figure], id: &str) -> &'a Figure {
    figs.iter()
        .find(|f| f.id == id)
        .unwrap_or_else(|| panic!("no {id} in {:?}", figs.iter().map(|f| &f.id).collect::<Vec<_>>()))
}

const RATIO: &str = "ratio-framework-over-raw";

#[test]
fn headline_ratios_are_computed_per_rep_pair_in_the_same_run() {
    let figs = figures(&fixtures::kafka_sink_records("run-a"));
    let ratio = find(&figs, RATIO);
    // framework reps 500/600/700 over raw reps 1000/1100/1200: 0.5, 0.545, 0.583 -> their geometric mean
    let geomean = (0.5_f64 * (600.0 / 1100.0) * (700.0 / 1200.0)).cbrt();
    assert!((ratio.value.unwrap() - geomean).abs() < 1e-12);
    assert_eq!(ratio.text, "0.54×");
    assert_eq!(ratio.n, Some(3));
    // On the log scale: exp(mean ln r ± 4.303 · s(ln r)/√3) = 0.447 – 0.657.
    assert_eq!(ratio.interval, "95% CI 0.45× – 0.66×");
    assert!(!ratio.within_noise);
    assert!(ratio.detail.starts_with("geometric mean of 3 per-rep ratios"), "{}", ratio.detail);
    assert_eq!(
        ratio.title,
        "produce 256 B records to 16 partitions, acks=all with idempotence: framework path / raw rdkafka"
    );
    assert!(ratio.compares.starts_with("Records per second acknowledged through spate's pipeline"));
    assert_eq!(ratio.direction, "higher is better: over 1× favours framework path");
    assert_eq!(ratio.pairs.len(), 3, "the pairs it was computed from");
    // seed 000: 1,210,960 / 2,489,626
    assert_eq!(ratio.published[0].text, "0.49×");
    let raw = find(&figs, "median-mode-raw-records-per-s");
    assert_eq!(raw.value, Some(1100.0));
    assert!(raw.detail.ends_with("CV 9.1%"), "{}", raw.detail);
    assert!(raw.title.starts_with("raw rdkafka: Records per second, "), "{}", raw.title);
}

#[test]
fn a_ratio_whose_interval_spans_one_is_within_noise() {
    let mut records = fixtures::kafka_sink_records("run-a");
    // framework over raw per rep: 0.8, 1.0, 1.3
    for (r, v) in
        records.iter_mut().filter(|r| r.arm == "framework" && r.variant.label == "default").zip([800.0, 1100.0, 1560.0])
    {
        r.measurement.metrics.get_mut("records_per_s").unwrap().value = v;
    }
    let figs = figures(&records);
    let ratio = find(&figs, RATIO);
    assert!(ratio.within_noise, "{ratio:?}");
    let (lo, hi) = ratio.ci.unwrap();
    assert!(lo > 0.0 && lo < 1.0 && hi > 1.0, "{lo} {hi}");
}

#[test]
fn without_rep_pairs_the_ratio_is_of_medians_and_noise_is_judged_by_the_arms_intervals() {
    let mut records = fixtures::kafka_sink_records("run-a");
    // framework reps 4-6 (no raw rep shares their numbers): 500/600/700 vs raw 1000/1100/1200 ...
    for r in records.iter_mut().filter(|r| r.arm == "framework" && r.variant.label == "default") {
        r.rep += 3;
    }
    let figs = figures(&records);
    let ratio = find(&figs, RATIO);
    assert_eq!((ratio.text.as_str(), ratio.interval.as_str(), ratio.n), ("0.55×", "", None));
    assert!(ratio.detail.starts_with("ratio of medians (no rep has both arms)"), "{}", ratio.detail);
    // ... whose intervals (351.6 – 848.4 and 851.6 – 1348.4) do not overlap.
    assert!(!ratio.within_noise);
    // framework 500/600/900 widens its interval to 149.4 – 1183.9, which overlaps raw's.
    for r in records.iter_mut().filter(|r| r.arm == "framework" && r.variant.label == "default" && r.rep == 6) {
        r.measurement.metrics.get_mut("records_per_s").unwrap().value = 900.0;
    }
    let figs = figures(&records);
    assert!(find(&figs, RATIO).within_noise);
}

#[test]
fn a_ratio_of_unlike_work_shows_no_number_and_names_what_differs() {
    let mut records = fixtures::kafka_sink_records("run-a");
    for r in records.iter_mut().filter(|r| r.arm == "framework") {
        r.measurement.applied.insert("producer.compression.type".into(), "lz4".into());
        r.measurement.applied.insert(CONNECTIONS.into(), "2".into());
    }
    let figs = figures(&records);
    let ratio = find(&figs, RATIO);
    assert_eq!((ratio.value, ratio.text.as_str()), (None, "no number"));
    assert_eq!(
        ratio.detail,
        "the two sides differ in settings this ratio's contract does not allow: connections, producer.compression.type"
    );
    assert_eq!(
        ratio.undeclared,
        [
            "connections: 2 (framework path) vs 1 (raw rdkafka)",
            "producer.compression.type: lz4 (framework path) vs none (raw rdkafka)"
        ]
    );
    assert!(ratio.pairs.is_empty());
    // One rep whose pair differs is left out; the others still give the ratio.
    let mut records = fixtures::kafka_sink_records("run-a");
    for r in records.iter_mut().filter(|r| r.arm == "framework" && r.rep == 2) {
        r.measurement.applied.insert(FORMAT.into(), "json".into());
    }
    let ratio = find(&figures(&records), RATIO).clone();
    assert_eq!(ratio.n, Some(2));
    assert!(ratio.detail.ends_with("rep 2 left out: its pair breaks the contract"), "{}", ratio.detail);
}

#[test]
fn records_that_do_not_say_what_they_applied_give_no_number() {
    let mut records = fixtures::kafka_sink_records("run-a");
    records.iter_mut().for_each(|r| r.measurement.applied.clear());
    let figs = figures(&records);
    let ratio = find(&figs, RATIO);
    assert_eq!((ratio.value, ratio.text.as_str(), ratio.detail.as_str()), (None, "no number", parity::NOT_APPLIED));
    // Nor is any best point sought: nothing says which points do the same work.
    let best = find(&figs, "ratio-framework-over-raw-best");
    assert_eq!(best.value, None);
    assert!(best.detail.starts_with("no best point sought"), "{}", best.detail);
    assert!(!figs.iter().any(|f| f.id == "best-framework-records-per-s"));
    let fw = find(&figs, "median-mode-framework-records-per-s");
    assert_eq!(fw.value, Some(600.0), "a median needs no contract");
    assert!(fw.config.ends_with("no best point sought: the records do not say what they applied"), "{}", fw.config);
}

#[test]
fn the_best_point_of_each_arm_stands_beside_its_default_with_the_knobs_that_differ() {
    let figs = figures(&fixtures::kafka_sink_records("run-a"));
    let fw = find(&figs, "median-mode-framework-records-per-s");
    assert_eq!(fw.config, "ran at the matrix's default point (“default”)");
    // The 1M queue point (650, 660; rep 3 failed) beats the default (500/600/700).
    let best = find(&figs, "best-framework-records-per-s");
    assert_eq!(best.value, Some(650.0));
    assert_eq!(best.config, "knobs that differ from the default point: queue_buffering_max_messages = 1M");
    assert!(best.detail.contains("point 1M"), "{}", best.detail);
    // Each side at its own best: framework at 1M over raw at its default (its 1-core point is slower), over
    // the reps both have: 650/1000, 660/1100, whose geometric mean is √(0.65 · 0.6).
    let ratio = find(&figs, "ratio-framework-over-raw-best");
    assert_eq!(ratio.best, Some(BestMode::Own));
    assert_eq!(ratio.n, Some(2));
    assert!((ratio.value.unwrap() - (0.65_f64 * 0.6).sqrt()).abs() < 1e-12, "{:?}", ratio.value);
    assert!(ratio.config.starts_with("each side at its own best point of the workload: framework path at sweep"));
    assert!(!ratio.title.contains('{'), "{}", ratio.title);
    // raw's best point (1 core: 900/950/1000) is below its default (1100): no second figure.
    assert!(!figs.iter().any(|f| f.id == "best-raw-records-per-s"));
    let raw = find(&figs, "median-mode-raw-records-per-s");
    assert!(raw.config.ends_with("the best point this arm measured in this run for this workload"), "{}", raw.config);
}

#[test]
fn best_points_stay_within_one_workload() {
    let mut records = fixtures::kafka_sink_records("run-a");
    // The 1M-queue point beats the default, but it opened two connections: another workload.
    for r in records.iter_mut().filter(|r| r.variant.label == "1M") {
        r.measurement.applied.insert(CONNECTIONS.into(), "2".into());
    }
    let figs = figures(&records);
    assert!(!figs.iter().any(|f| f.id == "best-framework-records-per-s" || f.id == "ratio-framework-over-raw-best"));
    let fw = find(&figs, "median-mode-framework-records-per-s");
    assert!(fw.config.ends_with("the best point this arm measured in this run for this workload"), "{}", fw.config);
}

#[test]
fn a_best_ratio_at_the_same_point_puts_both_sides_at_the_numerators_best() {
    let records = fixtures::kafka_sink_records("run-a");
    let info = fixtures::kafka_sink_info();
    let data = MatrixData::new("kafka_sink", Some(&info), &records);
    let mut cfg = SiteConfig::builtin().unwrap();
    let spec = &mut cfg.headlines.get_mut("kafka_sink").unwrap().ratios[0];
    spec.best = Some(BestMode::Same);
    let figs = headline_figures(&data, &cfg);
    let f = find(&figs, "ratio-framework-over-raw-best");
    // raw never ran framework's best point (queue 1M): no number, and why.
    assert_eq!(f.value, None);
    assert!(f.detail.starts_with("raw rdkafka did not run framework path's best point"), "{}", f.detail);
    // With a raw point at queue 1M, both sides sit there: 650/800, 660/880.
    let mut records = records.clone();
    for (rep, v) in [(1, 800.0), (2, 880.0)] {
        records.push(fixtures::record("run-a", "raw", "1M", &["queue_buffering_max_messages"], false, rep, v));
    }
    let data = MatrixData::new("kafka_sink", Some(&info), &records);
    let figs = headline_figures(&data, &cfg);
    let f = find(&figs, "ratio-framework-over-raw-best");
    assert!((f.value.unwrap() - (650.0_f64 / 800.0 * 0.75).sqrt()).abs() < 1e-12, "{:?}", f.value);
    assert!(f.config.starts_with("both at framework path's best point of the workload"), "{}", f.config);
}

#[test]
fn a_rep_under_foreign_load_leaves_the_median_and_its_pair() {
    let mut records = fixtures::kafka_sink_records("run-a");
    for r in records.iter_mut().filter(|r| r.arm == "raw" && r.variant.label == "default" && r.rep == 3) {
        r.conditions = Some(fixtures::conditions(true, None));
    }
    let figs = figures(&records);
    let raw = find(&figs, "median-mode-raw-records-per-s");
    // reps 1000 and 1100 remain: the nearest-rank median of two is the lower.
    assert_eq!((raw.value, raw.n), (Some(1000.0), Some(2)));
    assert_eq!(find(&figs, RATIO).n, Some(2));
}

#[test]
fn an_interval_of_small_ratios_gets_three_decimals() {
    let s = stats::paired_ratios(&[(9.6, 1000.0), (9.7, 1000.0), (9.8, 1000.0)]).unwrap();
    // exp(mean ln r ± 4.303 · s(ln r)/√3): 0.00945 – 0.00995
    assert_eq!(interval_text(Some(&s)), "95% CI 0.009× – 0.010×");
    let s = stats::paired_ratios(&[(400.0, 1000.0), (500.0, 1000.0), (600.0, 1000.0)]).unwrap();
    assert_eq!(interval_text(Some(&s)), "95% CI 0.30× – 0.82×");
    assert_eq!(interval_text(None), "");
}

#[test]
fn a_change_of_configuration_changes_the_figures_hash() {
    let a = figures(&fixtures::kafka_sink_records("run-a"));
    let b = figures(&fixtures::kafka_sink_records("run-b"));
    assert_eq!(find(&a, RATIO).config_hash, find(&b, RATIO).config_hash, "the same configuration, another run");
    let mut records = fixtures::kafka_sink_records("run-c");
    for r in records.iter_mut().filter(|r| r.arm == "framework") {
        r.variant.knobs.insert("pipeline_threads".into(), serde_json::json!(1));
    }
    let c = figures(&records);
    assert_ne!(find(&a, RATIO).config_hash, find(&c, RATIO).config_hash);
    assert_ne!(
        find(&a, "median-mode-framework-records-per-s").config_hash,
        find(&c, "median-mode-framework-records-per-s").config_hash
    );
    assert_eq!(
        find(&a, "median-mode-raw-records-per-s").config_hash,
        find(&c, "median-mode-raw-records-per-s").config_hash,
        "raw's configuration did not change"
    );
}

/// Every figure the shipped configuration computes from `runs`: its id is unique within its matrix and
/// run, and every ratio with a number was computed only from pairs that satisfy the contract its entry in
/// site/headlines.toml declares. Returns the ratios with a number.
fn check_shipped_contracts(runs: &[load::Run]) -> usize {
    let cfg = SiteConfig::builtin().unwrap();
    let mut numbered = 0;
    for run in runs {
        for (name, file) in &run.matrices {
            let info = run.provenance.matrices.iter().find(|m| &m.name == name);
            let data = MatrixData::for_site(name, info, &file.records, &cfg);
            let figs = headline_figures(&data, &cfg);
            let mut ids = BTreeSet::new();
            for f in &figs {
                assert!(ids.insert(f.id.clone()), "{}/{name}: figure id {} twice", run.id, f.id);
                assert_eq!(f.config_hash.len(), 8, "{}: every figure names its configuration", f.id);
                assert!(!f.title.contains('{') && !f.title.contains('?'), "{}: title {:?}", f.id, f.title);
                let Some(spec_id) = &f.ratio else { continue };
                let spec = cfg.headline(name).unwrap().ratios.iter().find(|r| &r.id == spec_id).unwrap();
                if f.value.is_none() {
                    continue;
                }
                numbered += 1;
                assert!(!f.pairs.is_empty(), "{}/{name}: {} has a number but no pairs", run.id, f.id);
                let contract = match f.best {
                    Some(BestMode::Own) => Contract::of(spec).knobs_free(),
                    _ => Contract::of(spec),
                };
                for &(i, j) in &f.pairs {
                    let (num, den) = (&file.records[i], &file.records[j]);
                    assert_eq!(
                        (num.arm.as_str(), den.arm.as_str()),
                        (spec.numerator.as_str(), spec.denominator.as_str())
                    );
                    let verdict = parity::check(&contract, num, den);
                    assert!(
                        matches!(verdict, Verdict::Holds { .. }),
                        "{}/{name}: {} divides rep {} by rep {} against its contract: {verdict:?}",
                        run.id,
                        f.id,
                        num.rep,
                        den.rep
                    );
                }
            }
        }
    }
    numbered
}

#[test]
fn the_shipped_headline_ratios_hold_their_contracts_over_the_committed_results() {
    let runs = load::load_results(&crate::paths::results_dir()).unwrap();
    assert!(!runs.is_empty(), "results/ holds the committed runs");
    check_shipped_contracts(&runs);
}

#[test]
fn the_shipped_headline_ratios_hold_their_contracts_over_the_demo_results() {
    let dir = crate::paths::manifest_dir().join("src/results/testdata/results");
    let runs = load::load_results(&dir).unwrap();
    assert!(check_shipped_contracts(&runs) > 0, "the demo has ratios with a number");
}
