//! The verdicts on fixture runs: the rule, the kinds, pooling, ceilings and contracts.
use streamlab_record::Status;

use super::*;
use crate::results::declared::parse;
use crate::results::fixtures;
use crate::results::load::load_results;

/// A claim that framework/raw at kafka_sink's mode sweep is `published`.
fn claim(published: f64) -> Claim {
    claim_with(published, "")
}

/// The same claim with more TOML lines.
fn claim_with(published: f64, extra: &str) -> Claim {
    let text = format!(
        r#"[[claims]]
id = "000-test"
seed = "000"
source = "000_572cf4762e3ae6c6.txt"
claim = "the framework reaches half of raw librdkafka"
short = "framework at half of raw"
published = {published}
published_from = "a table"
hardware = "Apple M5 Max"
versions = "Kafka 4.1.0, rdkafka 0.39"
matrix = "kafka_sink"
metric = "records_per_s"
numerator = {{ sweep = "mode", arm = "framework" }}
denominator = {{ sweep = "mode", arm = "raw" }}
tolerance = 0.15
{extra}
"#
    );
    parse(&text, std::path::Path::new("claims.toml")).unwrap().remove(0)
}

/// Runs (one a slice, oldest first) of raw at 1000 records/s and framework at each ratio of it, rep by rep.
fn history(runs: &[&[f64]], edit: impl Fn(&mut Record)) -> (tempfile::TempDir, Vec<Run>) {
    let dir = tempfile::tempdir().unwrap();
    for (i, ratios) in runs.iter().enumerate() {
        let id = format!("r{}", i + 1);
        let mut records = Vec::new();
        for (rep, ratio) in (1..).zip(ratios.iter()) {
            records.push(fixtures::record(&id, "raw", "raw rdkafka", &["mode"], true, rep, 1000.0));
            records.push(fixtures::record(&id, "framework", "framework path", &["mode"], false, rep, 1000.0 * ratio));
        }
        records.iter_mut().for_each(&edit);
        fixtures::write_run(dir.path(), &id, 1_000 + i as u64, &records);
    }
    let runs = load_results(dir.path()).unwrap();
    (dir, runs)
}

const TIGHT: &[f64] = &[0.50, 0.51, 0.49, 0.50, 0.505, 0.495];

#[test]
fn an_interval_inside_the_band_reproduces_wholly_outside_does_not_and_across_an_edge_cannot_tell() {
    // Twelve runs that agree: their own spread outweighs the prior's four degrees of freedom.
    let (_dir, runs) = history(&[TIGHT; 12], |_| {});
    let inside = &verdicts(&runs, &[claim(0.49)])[0];
    assert_eq!(inside.verdict, Kind::Reproduces, "{}", inside.why);
    assert_eq!((inside.measured.as_str(), inside.pairs, inside.runs.len()), ("0.50×", 72, 12));
    assert!(inside.why.starts_with("Size reproduces. Our 0.50× (95% CI"), "{}", inside.why);
    assert!(inside.why.contains("pooled over 12 comparable runs"), "{}", inside.why);
    assert!(inside.why.contains("Published on Apple M5 Max with Kafka 4.1.0"), "{}", inside.why);
    let [lo, hi] = inside.band.unwrap();
    assert!((lo - 0.49 / 1.15).abs() < 1e-12 && (hi - 0.49 * 1.15).abs() < 1e-12);
    assert_eq!(inside.estimator, ESTIMATOR);
    let outside = &verdicts(&runs, &[claim(0.9)])[0];
    assert_eq!(outside.verdict, Kind::DoesNotReproduce, "{}", outside.why);
    assert_eq!(outside.parts_text, "size does not hold");
    // Our 0.50× on the band's lower edge: neither can be shown.
    let edge = &verdicts(&runs, &[claim(0.5 * 1.15)])[0];
    assert_eq!(edge.verdict, Kind::CannotTell, "{}", edge.why);
    assert_eq!(edge.units_to_decide, None, "no number of units decides a figure on the edge: {}", edge.why);
    assert!(edge.why.contains("too close to an edge"), "{}", edge.why);
    // Our 0.50× a little inside the band: a count of blocks or runs decides it, and the cell says how many more.
    let near = &verdicts(&runs, &[claim(0.5 * 1.05)])[0];
    assert_eq!(near.verdict, Kind::CannotTell, "{}", near.why);
    let n = near.units_to_decide.expect("a count decides a figure 5% inside the band");
    assert!(n > 12, "more than these 12 runs: {n}");
    assert_eq!(near.to_decide.as_deref(), Some(format!("about {} more blocks or runs decide it", n - 12).as_str()));
}

#[test]
fn one_run_carries_the_prior_run_to_run_spread_and_says_so() {
    let (_dir, runs) = history(&[TIGHT], |_| {});
    let v = &verdicts(&runs, &[claim(0.49)])[0];
    // Tight pairs, but one run says nothing of how runs differ: the prior's log-SD 0.33, too wide for ±15%.
    assert_eq!(v.verdict, Kind::CannotTell, "{}", v.why);
    assert!(v.why.contains("from one run (r1)"), "{}", v.why);
    assert!(
        v.why.contains("the machine's prior 0.33 alone: one unit says nothing of how blocks or runs differ"),
        "{}",
        v.why
    );
    assert!(v.spread.as_ref().unwrap().prior_source.starts_with("assumed"), "one claim fits no prior");
    assert!(v.why.contains("more blocks or runs, not more reps in one"), "{}", v.why);
    let spread = v.spread.as_ref().unwrap();
    assert_eq!((spread.between, spread.own_between), (spread.prior, None));
    // Far from the figure, even so wide an interval decides.
    assert_eq!(verdicts(&runs, &[claim(2.0)])[0].verdict, Kind::DoesNotReproduce);
}

#[test]
fn runs_of_another_configuration_are_not_pooled() {
    let (_dir, runs) = history(&[TIGHT, TIGHT, TIGHT], |r| {
        if r.run.id == "r1" {
            r.variant.knobs.insert("partitions".into(), serde_json::json!(6));
        }
    });
    let v = &verdicts(&runs, &[claim(0.49)])[0];
    assert_eq!(v.runs, ["r2", "r3"], "{}", v.why);
}

#[test]
fn runs_of_another_build_of_a_client_are_not_pooled() {
    // The same knobs and settings, but r3's framework ran a binary built with thin LTO: one build a pool.
    let (_dir, runs) = history(&[TIGHT, TIGHT, TIGHT], |r| {
        let build = if r.run.id == "r3" { "cargo build --profile seed-003" } else { "cargo build --release" };
        if r.arm == "framework" {
            r.measurement.versions.insert("build:framework".into(), build.into());
        }
    });
    let v = &verdicts(&runs, &[claim(0.49)])[0];
    assert_eq!(v.runs, ["r3"], "{}", v.why);
}

#[test]
fn a_direction_claim_holds_on_the_pairs_and_a_sentence_of_two_claims_judges_both() {
    let high: &[f64] = &[2.6, 2.5, 2.7, 2.6, 2.55, 2.65];
    let (_dir, runs) = history(&[high, high, high], |_| {});
    let both = claim_with(1.25, "kind = [\"direction\", \"size\"]\ndirection = \"higher\"");
    let v = &verdicts(&runs, &[both])[0];
    assert_eq!(v.verdict, Kind::DoesNotReproduce, "{}", v.why);
    assert_eq!(v.parts_text, "direction holds; size does not hold");
    let direction = claim_with(5.89, "kind = [\"direction\"]\ndirection = \"higher\"");
    assert_eq!(verdicts(&runs, &[direction])[0].verdict, Kind::Reproduces);
    let not_lower = claim_with(1.07, "kind = [\"direction\"]\ndirection = \"not_lower\"");
    let low: &[f64] = &[0.2, 0.21, 0.19, 0.2, 0.2, 0.2];
    let (_dir, low) = history(&[low, low, low], |_| {});
    assert_eq!(verdicts(&low, &[not_lower])[0].verdict, Kind::DoesNotReproduce);
    assert!(
        parse(&claim_text_with_kind("[\"direction\"]"), std::path::Path::new("claims.toml")).is_err(),
        "a direction claim names its way"
    );
}

fn claim_text_with_kind(kind: &str) -> String {
    format!(
        "[[claims]]\nid = \"x\"\nseed = \"000\"\nsource = \"s\"\nclaim = \"c\"\nshort = \"c\"\npublished = 1.0\npublished_from = \"t\"\n\
         hardware = \"h\"\nversions = \"v\"\nmatrix = \"kafka_sink\"\nmetric = \"records_per_s\"\n\
         unmapped = \"none\"\ntolerance = 0.15\nkind = {kind}\n"
    )
}

#[test]
fn a_published_figure_beyond_this_hosts_ceiling_cannot_be_told_here() {
    let (_dir, runs) = history(&[TIGHT, TIGHT, TIGHT], |_| {});
    // framework / raw cannot exceed raw / raw = 1× here; a published 3× is beyond it.
    let capped =
        claim_with(3.0, "ceiling = { what = \"the raw client\", point = { sweep = \"mode\", arm = \"raw\" } }");
    let v = &verdicts(&runs, &[capped])[0];
    assert_eq!(v.verdict, Kind::CannotTell, "{}", v.why);
    assert!(v.host_note.as_ref().unwrap().starts_with("This host's ceiling is 1.00×"), "{:?}", v.host_note);
}

#[test]
fn a_point_not_run_gives_not_run_with_the_records_reason() {
    let (_dir, runs) = history(&[&[0.5, 0.5, 0.5]], |r| {
        if r.arm == "framework" {
            r.status = Status::NotRun;
            r.reason = Some("no Redpanda Connect binary here".into());
            r.measurement.metrics.clear();
        }
    });
    let v = &verdicts(&runs, &[claim(0.49)])[0];
    assert_eq!(v.verdict, Kind::NotRun);
    assert!(v.why.contains("no Redpanda Connect binary here"), "{}", v.why);
    let (_dir, none) = history(&[&[]], |_| {});
    assert_eq!(verdicts(&none, &[claim(0.49)])[0].verdict, Kind::NotRun);
    // `lab verdicts --json` says what kind of claim it is even with nothing measured.
    let json = serde_json::to_value(&verdicts(&none, &[claim(0.49)])[0]).unwrap();
    assert_eq!(json["kind"], serde_json::json!(["size"]));
}

#[test]
fn two_sides_that_break_the_contract_get_no_verdict_naming_the_setting() {
    let (_dir, runs) = history(&[TIGHT, TIGHT], |r| {
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
    assert_ne!(verdicts(&runs, &[declared])[0].verdict, Kind::NoVerdict);
}

#[test]
fn a_claims_bound_is_measured_in_the_same_run_and_said_in_its_sentence() {
    let pause = |label: &str, rep: u32, rate: f64| {
        let mut r = fixtures::record("r1", "framework", label, &["min_pause_ms"], false, rep, rate);
        r.variant
            .knobs
            .insert("min_pause_ms".into(), serde_json::json!(label.trim_end_matches(" ms").parse::<u64>().unwrap()));
        r
    };
    let (_dir, runs) = history(&[&[0.50, 0.52, 0.48]], |_| {});
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
    assert_eq!(with.verdict, without.verdict, "the bound does not change the verdict: {}", with.why);
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

/// `history` with every record's host reading at `cores` busy (of the fixtures' 2), r1's at `first` instead.
fn with_host_cores(first: Option<f64>, cores: Option<f64>) -> impl Fn(&mut Record) {
    move |r: &mut Record| {
        let value = if r.run.id == "r1" { first } else { cores };
        match value {
            Some(v) => {
                r.measurement.metrics.get_mut(streamlab_record::HOST_CORES).unwrap().value = v;
            }
            None => {
                r.measurement.metrics.remove(streamlab_record::HOST_CORES);
            }
        }
    }
}

#[test]
fn a_side_that_kept_the_hosts_cores_busy_is_cpu_bound_over_every_pooled_run_and_an_unread_host_decides_nothing() {
    let twelve = [TIGHT; 12];
    // Twelve quiet runs reproduce; the same runs with the host 1.9 of 2 cores busy cannot tell, named as CPU-bound.
    let (_dir, free) = history(&twelve, with_host_cores(Some(1.0), Some(1.0)));
    assert_eq!(verdicts(&free, &[claim(0.5)])[0].verdict, Kind::Reproduces);
    let (_dir, bound) = history(&twelve, with_host_cores(Some(1.0), Some(1.9)));
    let v = &verdicts(&bound, &[claim(0.5)])[0];
    assert_eq!(
        (v.verdict, v.host_limit.as_deref()),
        (Kind::CannotTell, Some("CPU-bound here: 1.9 and 1.9 of 2 cores busy"))
    );
    assert!(v.why.contains("busy 1.9 and 1.9 of 2 over the two sides' measured spans"), "{}", v.why);
    // Either side: the framework alone at 1.9 cores is enough.
    let (_dir, one_side) = history(&twelve, |r: &mut Record| {
        let v = if r.arm == "framework" { 1.9 } else { 1.0 };
        r.measurement.metrics.get_mut(streamlab_record::HOST_CORES).unwrap().value = v;
    });
    assert_eq!(
        verdicts(&one_side, &[claim(0.5)])[0].host_limit.as_deref(),
        Some("CPU-bound here: 1.9 and 1 of 2 cores busy")
    );
    // The median over every pooled run decides, not the anchor's reps alone: one quiet run of twelve changes nothing.
    let (_dir, anchor_quiet) = history(&twelve, |r: &mut Record| {
        let v = if r.run.id == "r12" { 1.0 } else { 1.9 };
        r.measurement.metrics.get_mut(streamlab_record::HOST_CORES).unwrap().value = v;
    });
    assert_eq!(verdicts(&anchor_quiet, &[claim(0.5)])[0].verdict, Kind::CannotTell);
    // No reading on any pooled record: unread, never an exemption; the budget still measures it (no host limit).
    let (_dir, unread) = history(&twelve, with_host_cores(None, None));
    let v = &verdicts(&unread, &[claim(0.5)])[0];
    assert_eq!((v.verdict, v.host_limit.as_deref()), (Kind::CannotTell, None));
    assert!(v.why.contains("This host's CPU was not read over the measured spans of"), "{}", v.why);
    // Runs that read it pool with ones that did not: the readings there are decide it.
    let (_dir, partly) = history(&twelve, with_host_cores(None, Some(1.0)));
    assert_eq!(verdicts(&partly, &[claim(0.5)])[0].verdict, Kind::Reproduces);
}

#[test]
fn each_block_of_a_run_is_a_unit_and_its_ratios_are_in_the_verdicts_details() {
    // One run of six reps, each in a block of its own: six units of one pair, not one unit of six.
    let ratios = [0.50, 0.52, 0.49, 0.51, 0.50, 0.48];
    let (_dir, runs) = history(&[&ratios], |r| r.block = Some(r.rep));
    let v = &verdicts(&runs, &[claim(0.5)])[0];
    let spread = v.spread.as_ref().unwrap();
    assert_eq!(spread.units.len(), 6, "{:?}", spread.units);
    assert!(spread.units.iter().all(|u| u.run == "r1" && u.ratios.len() == 1));
    let own = spread.own_between.expect("six units show their own spread");
    assert_eq!(own.df, 5.0);
    // The same reps without blocks are one unit: the prior alone.
    let (_dir, runs) = history(&[&ratios], |_| {});
    let one = &verdicts(&runs, &[claim(0.5)])[0];
    let spread = one.spread.as_ref().unwrap();
    assert_eq!((spread.units.len(), spread.own_between), (1, None));
    // The interval recomputes from the details: mean and standard error of the log ratio, t at its df.
    let q = streamlab_record::stats::student_t::quantile(0.975, v.spread.as_ref().unwrap().df);
    let s = v.spread.as_ref().unwrap();
    let lo = (s.mean_log - q * s.se_log).exp();
    assert!((lo - v.interval_bounds.unwrap()[0]).abs() < 1e-12);
}
