//! The parity contract of a headline ratio: which two records may be divided.
//!
//! Two records may be divided only when they did the same work: their `applied` maps (what each arm actually
//! ran with, harness/record/src/applied.rs) agree on every key the ratio does not declare as a difference,
//! their bytes per record (and key bytes) agree within a tolerance, and the knobs both carry are equal. A
//! ratio of records that do not say what they applied has no number at all.

use std::collections::{BTreeMap, BTreeSet};

use streamlab_record::Record;
use streamlab_record::applied::{differing_keys, matches};

use crate::results::config::RatioSpec;

/// What a ratio's contract allows.
#[derive(Debug, Clone)]
pub struct Contract {
    /// Keys, prefix patterns or metric names the two sides may differ in.
    pub differs: Vec<String>,
    /// Metric -> relative tolerance.
    pub tolerance: BTreeMap<String, f64>,
    /// Whether the knobs both sides carry must be equal (false for a ratio of each side at its own best).
    pub equal_knobs: bool,
}

impl Contract {
    pub fn of(spec: &RatioSpec) -> Self {
        Contract { differs: spec.differs.clone(), tolerance: spec.tolerances(), equal_knobs: true }
    }

    /// The same contract with the knobs free to differ (each side at its own best point).
    pub fn knobs_free(mut self) -> Self {
        self.equal_knobs = false;
        self
    }

    fn declares(&self, key: &str) -> bool {
        self.differs.iter().any(|p| matches(p, key))
    }
}

/// One setting in which the two sides differ, with each side's value (`None`: the side does not say).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Difference {
    pub key: String,
    pub num: Option<String>,
    pub den: Option<String>,
    /// For a metric compared within a tolerance: that tolerance in percent.
    pub within_pct: Option<u32>,
}

impl Difference {
    /// `format: row-json (Rust) vs debezium-envelope (Debezium)`.
    pub fn text(&self, num_arm: &str, den_arm: &str) -> String {
        let v = |x: &Option<String>| x.clone().unwrap_or_else(|| "not stated".into());
        let within = self.within_pct.map_or_else(String::new, |p| format!(" (within {p}%)"));
        format!("{}{within}: {} ({num_arm}) vs {} ({den_arm})", self.key, v(&self.num), v(&self.den))
    }
}

/// The contract's verdict on one pair of records.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The pair may be divided; `declared` lists the declared differences the pair actually has.
    Holds { declared: Vec<Difference> },
    /// A side has no `applied` map: nothing says what it ran with.
    NotApplied,
    /// The pair differs in settings the contract does not declare.
    Breaks { undeclared: Vec<Difference> },
}

/// What "no number: the records do not say what they applied" reads like on the page.
pub const NOT_APPLIED: &str = "the records do not say what they applied (they predate the applied map), so the two \
sides cannot be shown to do the same work";

/// Check one pair (numerator's record, denominator's record) against `contract`.
pub fn check(contract: &Contract, num: &Record, den: &Record) -> Verdict {
    if num.measurement.applied.is_empty() || den.measurement.applied.is_empty() {
        return Verdict::NotApplied;
    }
    let mut diffs: Vec<Difference> = differing_keys(&num.measurement.applied, &den.measurement.applied)
        .into_iter()
        .map(|key| Difference {
            num: num.measurement.applied.get(&key).cloned(),
            den: den.measurement.applied.get(&key).cloned(),
            key,
            within_pct: None,
        })
        .collect();
    for (metric, tol) in &contract.tolerance {
        let (a, b) = (stated_value(num, metric), stated_value(den, metric));
        // Not stated on either side is nothing compared: a broken contract, not a pass.
        let within = match (a, b) {
            (Some(a), Some(b)) => (a - b).abs() <= tol * a.abs().max(b.abs()),
            _ => false,
        };
        if !within {
            let show = |x: Option<f64>| x.map(|x| format!("{x:.1}"));
            diffs.push(Difference {
                key: metric.clone(),
                num: show(a),
                den: show(b),
                within_pct: Some((tol * 100.0).round() as u32),
            });
        }
    }
    if contract.equal_knobs {
        for (knob, value) in &num.variant.knobs {
            // A knob only one side carries belongs to that arm alone (`arms = [...]` in the matrix).
            if let Some(other) = den.variant.knobs.get(knob)
                && other != value
            {
                diffs.push(Difference {
                    key: format!("knob {knob}"),
                    num: Some(value.to_string()),
                    den: Some(other.to_string()),
                    within_pct: None,
                });
            }
        }
    }
    let (declared, undeclared): (Vec<Difference>, Vec<Difference>) =
        diffs.into_iter().partition(|d| contract.declares(&d.key));
    if undeclared.is_empty() { Verdict::Holds { declared } } else { Verdict::Breaks { undeclared } }
}

/// Candidate pairs (numerator's record, denominator's) sorted by [`check`]: those that may be divided, and why
/// the others may not.
#[derive(Debug, Default)]
pub struct Sorted<'r> {
    pub holding: Vec<(&'r Record, &'r Record)>,
    /// The declared differences the holding pairs have.
    pub declared: BTreeSet<Difference>,
    /// The differences the contract does not allow, over the pairs that break it.
    pub undeclared: BTreeSet<Difference>,
    /// A pair had a side that does not say what it applied.
    pub not_applied: bool,
    /// The numerator's rep of every pair left out.
    pub left_out: Vec<u32>,
}

pub fn sort<'r>(contract: &Contract, candidates: impl IntoIterator<Item = (&'r Record, &'r Record)>) -> Sorted<'r> {
    let mut s = Sorted::default();
    for (x, y) in candidates {
        match check(contract, x, y) {
            Verdict::Holds { declared } => {
                s.holding.push((x, y));
                s.declared.extend(declared);
            }
            Verdict::NotApplied => {
                s.not_applied = true;
                s.left_out.push(x.rep);
            }
            Verdict::Breaks { undeclared } => {
                s.undeclared.extend(undeclared);
                s.left_out.push(x.rep);
            }
        }
    }
    s
}

fn metric_value(r: &Record, metric: &str) -> Option<f64> {
    r.measurement.metrics.get(metric).map(|m| m.value).filter(|v| v.is_finite())
}

/// A compared metric as the record states it. Records from before every arm stated its bytes per record still
/// state them another way: `bytes_per_record` as their MB/s over their records/s (the payload bytes the arm
/// counted), `key_bytes_per_record` as 0 where the arm applied no key.
fn stated_value(r: &Record, metric: &str) -> Option<f64> {
    metric_value(r, metric).or_else(|| match metric {
        "bytes_per_record" => {
            let (mb, rate) = (metric_value(r, "mb_per_s")?, metric_value(r, "records_per_s")?);
            (rate > 0.0).then(|| mb * 1e6 / rate)
        }
        "key_bytes_per_record" => (r.measurement.applied.get(streamlab_record::applied::KEY).map(String::as_str)
            == Some("none"))
        .then_some(0.0),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fixtures;
    use streamlab_record::Metric;
    use streamlab_record::applied::{AppliedBuilder, CONNECTIONS, FORMAT, KEY, WORKLOAD};

    fn contract(differs: &[&str]) -> Contract {
        Contract {
            differs: differs.iter().map(|s| s.to_string()).collect(),
            tolerance: BTreeMap::from([("bytes_per_record".to_owned(), 0.05)]),
            equal_knobs: true,
        }
    }

    /// A snapshot -> Kafka record of `arm` writing row JSON through the Rust arm's producer settings.
    fn side(arm: &str) -> Record {
        let mut r = fixtures::record("run-a", arm, "batch 5000", &["snapshot_kafka_row_json"], false, 1, 1000.0);
        r.variant.knobs = BTreeMap::from([("batch_size".into(), serde_json::json!(5000))]);
        r.measurement.applied = AppliedBuilder::new()
            .set(WORKLOAD, "snapshot 200000 rows of benchdb.cart")
            .set(FORMAT, "row-json")
            .set(KEY, "id-text")
            .set(CONNECTIONS, "1")
            .producer([("acks", "all".to_owned()), ("compression.type", "lz4".to_owned())])
            .build();
        r.measurement.metrics.insert("bytes_per_record".into(), Metric::new(232.0, "B", false));
        r
    }

    #[test]
    fn the_same_work_holds() {
        assert_eq!(check(&contract(&[]), &side("rust"), &side("debezium")), Verdict::Holds { declared: vec![] });
    }

    fn breaks_on(num: &Record, den: &Record) -> Vec<String> {
        match check(&contract(&[]), num, den) {
            Verdict::Breaks { undeclared } => undeclared.into_iter().map(|d| d.key).collect(),
            other => panic!("expected a breach, got {other:?}"),
        }
    }

    #[test]
    fn a_different_format_producer_setting_connection_count_or_workload_breaks_it() {
        let rust = side("rust");
        let mut other = side("debezium");
        other.measurement.applied.insert(FORMAT.into(), "debezium-envelope".into());
        assert_eq!(breaks_on(&rust, &other), ["format"]);
        let mut other = side("debezium");
        other.measurement.applied.insert("producer.compression.type".into(), "none".into());
        assert_eq!(breaks_on(&rust, &other), ["producer.compression.type"]);
        let mut other = side("debezium");
        other.measurement.applied.insert(CONNECTIONS.into(), "8".into());
        assert_eq!(breaks_on(&rust, &other), ["connections"]);
        let mut other = side("debezium");
        other.measurement.applied.insert(WORKLOAD.into(), "snapshot 10000000 rows of benchdb.cart".into());
        assert_eq!(breaks_on(&rust, &other), ["workload"]);
        // A setting only one side states is a difference too.
        let mut other = side("debezium");
        other.measurement.applied.remove("producer.acks");
        assert_eq!(breaks_on(&rust, &other), ["producer.acks"]);
    }

    #[test]
    fn bytes_per_record_must_agree_within_the_tolerance_and_knobs_must_be_equal() {
        let rust = side("rust");
        let mut close = side("debezium");
        close.measurement.metrics.get_mut("bytes_per_record").unwrap().value = 240.0; // 3.3% more
        assert!(matches!(check(&contract(&[]), &rust, &close), Verdict::Holds { .. }));
        let mut far = side("debezium");
        far.measurement.metrics.get_mut("bytes_per_record").unwrap().value = 3799.0;
        assert_eq!(breaks_on(&rust, &far), ["bytes_per_record"]);
        let mut missing = side("debezium");
        missing.measurement.metrics.remove("bytes_per_record");
        assert_eq!(breaks_on(&rust, &missing), ["bytes_per_record"]);
        // Not stated on either side is nothing compared: the contract breaks rather than passes.
        let mut neither = side("rust");
        for r in [&mut neither, &mut missing] {
            r.measurement.metrics.retain(|m, _| m != "bytes_per_record" && m != "mb_per_s");
        }
        assert_eq!(breaks_on(&neither, &missing), ["bytes_per_record"]);
        // Records from before arms stated it state it as MB/s over records/s: 256 B a record on both sides.
        for r in [&mut neither, &mut missing] {
            r.measurement.metrics.insert("records_per_s".into(), Metric::new(1000.0, "records/s", true));
            r.measurement.metrics.insert("mb_per_s".into(), Metric::new(0.256, "MB/s", true));
        }
        assert!(matches!(check(&contract(&[]), &neither, &missing), Verdict::Holds { .. }));
        let mut knob = side("debezium");
        knob.variant.knobs.insert("batch_size".into(), serde_json::json!(1000));
        assert_eq!(breaks_on(&rust, &knob), ["knob batch_size"]);
        assert!(matches!(check(&contract(&[]).knobs_free(), &rust, &knob), Verdict::Holds { .. }));
        // A knob only one arm carries is that arm's own.
        let mut own = side("debezium");
        own.variant.knobs.insert("jdbc_batch".into(), serde_json::json!("rewritten"));
        assert!(matches!(check(&contract(&[]), &rust, &own), Verdict::Holds { .. }));
    }

    #[test]
    fn declared_differences_are_allowed_and_listed_with_both_values() {
        let rust = side("rust");
        let mut seed = side("debezium");
        seed.measurement.applied.insert(FORMAT.into(), "debezium-envelope".into());
        seed.measurement.applied.insert("producer.compression.type".into(), "none".into());
        seed.measurement.metrics.get_mut("bytes_per_record").unwrap().value = 3799.0;
        let c = contract(&["format", "producer.*", "bytes_per_record"]);
        let Verdict::Holds { declared } = check(&c, &rust, &seed) else { panic!() };
        let texts: Vec<String> = declared.iter().map(|d| d.text("Rust", "Debezium")).collect();
        assert_eq!(
            texts,
            [
                "format: row-json (Rust) vs debezium-envelope (Debezium)",
                "producer.compression.type: lz4 (Rust) vs none (Debezium)",
                "bytes_per_record (within 5%): 232.0 (Rust) vs 3799.0 (Debezium)",
            ]
        );
        // Declaring one difference does not excuse another.
        assert_eq!(
            match check(&contract(&["format"]), &rust, &seed) {
                Verdict::Breaks { undeclared } => undeclared.len(),
                _ => 0,
            },
            2
        );
    }

    #[test]
    fn records_without_an_applied_map_give_no_verdict_but_not_applied() {
        let mut old = side("debezium");
        old.measurement.applied.clear();
        assert_eq!(check(&contract(&["format"]), &side("rust"), &old), Verdict::NotApplied);
    }
}
