//! The durability page's first screen: per arm and acks setting, what replication costs (RF 3 over RF 1, the
//! geometric mean of the comparable rep pairs with its 95% interval) and, per fault, the unavailability and the
//! records lost and duplicated over every rep. The per-rep rows fold beneath it.

use std::collections::BTreeMap;

use serde::Serialize;
use streamlab_record::Record;
use streamlab_record::stats;

use super::{FAULT_ORDER, fault_of, knob_i64, metric, setting};
use crate::results::format;

/// RF 3 over RF 1 for one arm at one acks setting.
#[derive(Debug, Clone, Serialize)]
pub struct RfSummary {
    pub arm: String,
    pub setting: String,
    /// `0.62×`, or `–` without a comparable pair.
    pub ratio: String,
    /// `95% CI 0.55× – 0.70×, 3 rep pairs`, or why there is no interval.
    pub interval: String,
}

/// One fault (or none) for one arm at one acks setting, over its reps at replication 3.
#[derive(Debug, Clone, Serialize)]
pub struct FaultSummary {
    pub setting: String,
    pub fault: String,
    pub arm: String,
    /// `3 of 3 verified`.
    pub reps: String,
    pub bad: bool,
    /// The median longest gap without an acknowledgement over the verified reps, and their range.
    pub unavailable: String,
    pub unavailable_range: String,
    /// Acknowledged records the topic does not hold, summed over the reps (and in how many reps).
    pub lost: String,
    pub duplicated: String,
}

/// One comparable RF 1 / RF 3 pair's ratio, as the replication table found it.
pub struct RfPair {
    pub arm: String,
    pub setting: String,
    pub ratio: f64,
}

/// Per arm and setting (in first-seen order), the pairs' geometric mean with its interval. `arms_settings` lists
/// every arm and setting that ran both factors, so one without a comparable pair says so.
pub fn replication(pairs: &[RfPair], arms_settings: &[(String, String)]) -> Vec<RfSummary> {
    arms_settings
        .iter()
        .map(|(arm, setting)| {
            let ratios: Vec<f64> =
                pairs.iter().filter(|p| &p.arm == arm && &p.setting == setting).map(|p| p.ratio).collect();
            let summary = stats::summarize_ratios(&ratios);
            let (ratio, interval) = match summary.as_ref().and_then(|s| s.geomean.map(|g| (g, s.ci95))) {
                Some((g, Some([lo, hi]))) => (
                    format::ratio(g),
                    format!("95% CI {} – {}, {} rep pairs", format::ratio(lo), format::ratio(hi), ratios.len()),
                ),
                Some((g, None)) => (format::ratio(g), format!("{} rep pair: no interval", ratios.len())),
                None => ("–".to_owned(), "no comparable rep pair (the reps below say why)".to_owned()),
            };
            RfSummary { arm: arm.clone(), setting: setting.clone(), ratio, interval }
        })
        .collect()
}

/// Per acks setting, fault (in the fault tables' order) and arm: the reps at replication 3, summarised.
pub fn faults(records: &[&Record], title: &dyn Fn(&str) -> String) -> Vec<FaultSummary> {
    let mut groups: BTreeMap<(String, usize, String, String), Vec<&Record>> = BTreeMap::new();
    for r in records.iter().filter(|r| knob_i64(r, "replication") == Some(3)) {
        let fault = fault_of(r);
        let order = FAULT_ORDER.iter().position(|f| *f == fault).unwrap_or(FAULT_ORDER.len());
        let label = if fault == "none" { "none".to_owned() } else { r.variant.label.clone() };
        groups.entry((setting(r), order, label, title(&r.arm))).or_default().push(r);
    }
    groups.into_iter().map(|((setting, _, fault, arm), reps)| summarize(setting, fault, arm, &reps)).collect()
}

fn summarize(setting: String, fault: String, arm: String, reps: &[&Record]) -> FaultSummary {
    let verified: Vec<&Record> = reps.iter().copied().filter(|r| r.is_publishable()).collect();
    let gaps: Vec<f64> = verified.iter().filter_map(|r| metric(r, "max_ack_gap_ms")).collect();
    let (unavailable, unavailable_range) = match stats::summarize(&gaps) {
        Some(s) if s.n > 1 => (format!("{:.0} ms", s.median), format!("median; {:.0}–{:.0} ms", s.min, s.max)),
        Some(s) => (format!("{:.0} ms", s.median), String::new()),
        None => ("–".to_owned(), String::new()),
    };
    // Loss and duplicates count every rep that read its topic back, verified or not: a loss fails a record.
    let count = |name: &str| {
        let per_rep: Vec<f64> = reps.iter().filter_map(|r| metric(r, name)).collect();
        let with = per_rep.iter().filter(|v| **v > 0.0).count();
        match (per_rep.is_empty(), with) {
            (true, _) => "–".to_owned(),
            (false, 0) => "0".to_owned(),
            (false, n) => format!("{} (in {n} of {} reps)", format::count(per_rep.iter().sum()), per_rep.len()),
        }
    };
    FaultSummary {
        reps: format!("{} of {} verified", verified.len(), reps.len()),
        bad: verified.len() < reps.len(),
        unavailable,
        unavailable_range,
        lost: count("lost"),
        duplicated: count("duplicated"),
        setting,
        fault,
        arm,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replication_s_cost_is_the_pairs_geometric_mean_and_an_arm_without_a_pair_says_so() {
        let pair = |arm: &str, ratio: f64| RfPair { arm: arm.into(), setting: "acks=1".into(), ratio };
        let pairs = [pair("rdkafka", 0.5), pair("rdkafka", 0.8), pair("rdkafka", 0.625), pair("java", 0.9)];
        let rows = replication(
            &pairs,
            &[("rdkafka".into(), "acks=1".into()), ("java".into(), "acks=1".into()), ("c".into(), "acks=1".into())],
        );
        assert_eq!(rows[0].ratio, format::ratio((0.5f64 * 0.8 * 0.625).cbrt()), "the geometric mean");
        assert!(rows[0].interval.starts_with("95% CI ") && rows[0].interval.ends_with("3 rep pairs"), "{rows:?}");
        assert_eq!(rows[1].interval, "1 rep pair: no interval");
        assert_eq!((rows[2].ratio.as_str(), rows[2].interval.starts_with("no comparable")), ("–", true));
    }
}
