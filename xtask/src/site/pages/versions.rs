//! What a matrix's records ran on: the broker and database server versions each record names (a run may
//! switch brokers between tasks), counted, and said so when they differ. Records from before records named
//! them fall back to what provenance says, labelled as such.

use std::collections::BTreeMap;

use serde::Serialize;
use streamlab_record::{Record, Status};

use super::{KeyValue, kv};
use crate::provenance::Provenance;

/// The versions lines of a matrix page, and a warning when its records ran on different versions.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RanOn {
    pub lines: Vec<KeyValue>,
    pub warning: Option<String>,
}

/// Where a record's version came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Source {
    /// The record names it (`run.kafka_version`, `run.mysql_*`).
    Record,
    /// The record's `kafka_version` knob, which chose its broker.
    Knob,
    /// Only the run's provenance says it.
    Provenance,
}

pub fn ran_on(p: &Provenance, records: &[Record]) -> RanOn {
    let ran: Vec<&Record> = records.iter().filter(|r| r.status != Status::NotRun).collect();
    let mut out = RanOn::default();
    let kafka: Vec<(String, Source)> = ran.iter().map(|r| kafka_of(p, r)).collect();
    let server: Vec<(Option<String>, Source)> = ran.iter().map(|r| server_of(p, r)).collect();
    let (kafka_line, kafka_differ) = line(kafka.iter().map(|(v, s)| (Some(v.clone()), *s)));
    if let Some(text) = kafka_line {
        out.lines.push(kv("Kafka", text));
    }
    let (server_line, server_differ) = line(server.into_iter());
    if let Some(text) = server_line {
        out.lines.push(kv("MySQL", text));
    }
    let mut differ = Vec::new();
    if kafka_differ {
        differ.push("broker");
    }
    if server_differ {
        differ.push("database server");
    }
    if !differ.is_empty() {
        out.warning = Some(format!(
            "The records of this matrix ran on more than one {} version (counted above): compare its points \
             within one version, unless a sweep varies the version on purpose.",
            differ.join(" and ")
        ));
    }
    out
}

/// One line: each distinct version with its record count, and where the versions came from; whether
/// more than one version appears.
fn line(values: impl Iterator<Item = (Option<String>, Source)>) -> (Option<String>, bool) {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut worst = Source::Record;
    let mut any = false;
    for (v, source) in values {
        let Some(v) = v else { continue };
        any = true;
        worst = worst.max(source);
        *counts.entry(v).or_default() += 1;
    }
    if !any {
        return (None, false);
    }
    let total: usize = counts.values().sum();
    let versions: Vec<String> = if counts.len() == 1 {
        counts.keys().map(|v| format!("{v} (all {total} records that ran)")).collect()
    } else {
        counts.iter().map(|(v, n)| format!("{v} ({n} records)")).collect()
    };
    let source = match worst {
        Source::Record => "as each record names it",
        Source::Knob => {
            "from each record's kafka_version knob, which chose its broker (these records predate per-record \
             versions)"
        }
        Source::Provenance => "from the run's provenance: these records predate per-record versions",
    };
    (Some(format!("{} — {source}", versions.join(", "))), counts.len() > 1)
}

fn kafka_of(p: &Provenance, r: &Record) -> (String, Source) {
    if let Some(v) = &r.run.kafka_version {
        return (v.clone(), Source::Record);
    }
    let brokers: Vec<&String> = p.kafka_brokers.keys().collect();
    if let Some(v) = r.variant.knobs.get("kafka_version").and_then(|v| v.as_str())
        && (brokers.is_empty() || brokers.iter().any(|b| *b == v))
    {
        return (v.to_owned(), Source::Knob);
    }
    let from_prov = match brokers.as_slice() {
        [one] => (*one).clone(),
        [] => p.env.kafka_version.clone().unwrap_or_else(|| "not recorded".into()),
        several => format!("one of {}", several.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")),
    };
    (from_prov, Source::Provenance)
}

fn server_of(p: &Provenance, r: &Record) -> (Option<String>, Source) {
    if r.run.kafka_version.is_some() {
        // A record that names its environment names its server too, or had none.
        let v = r.run.mysql_version.as_ref().map(|v| server_text(r.run.mysql_flavour.as_deref(), v));
        return (v, Source::Record);
    }
    let v = p.env.mysql_version.as_ref().map(|v| server_text(p.env.mysql_flavour.as_deref(), v));
    (v, Source::Provenance)
}

fn server_text(flavour: Option<&str>, version: &str) -> String {
    match flavour {
        Some(f) if !version.to_ascii_lowercase().contains(f) => format!("{f} {version}"),
        _ => version.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fixtures;

    #[test]
    fn versions_come_from_the_records_and_differing_ones_are_said() {
        let p = fixtures::provenance("run-a", 1);
        let mut records = fixtures::kafka_sink_records("run-a");
        for (i, r) in records.iter_mut().enumerate() {
            r.run.kafka_version = Some(if i % 3 == 0 { "3.9.1" } else { "4.1.0" }.into());
        }
        let ran = records.iter().filter(|r| r.status != Status::NotRun).count();
        let out = ran_on(&p, &records);
        assert_eq!(out.lines.len(), 1, "no server named: no MySQL line");
        assert!(out.lines[0].value.starts_with("3.9.1 ("), "{}", out.lines[0].value);
        assert!(out.lines[0].value.ends_with("— as each record names it"));
        assert!(out.warning.as_deref().unwrap().contains("more than one broker version"));
        for r in records.iter_mut() {
            r.run.kafka_version = Some("4.1.0".into());
            r.run.mysql_flavour = Some("mariadb".into());
            r.run.mysql_version = Some("10.11.19-MariaDB-log".into());
        }
        let out = ran_on(&p, &records);
        assert_eq!(out.lines[0].value, format!("4.1.0 (all {ran} records that ran) — as each record names it"));
        assert_eq!(
            out.lines[1].value,
            format!("10.11.19-MariaDB-log (all {ran} records that ran) — as each record names it")
        );
        assert!(out.warning.is_none());
    }

    #[test]
    fn old_records_fall_back_to_their_knob_or_provenance_and_say_so() {
        let mut p = fixtures::provenance("run-a", 1);
        let records = fixtures::kafka_sink_records("run-a");
        let out = ran_on(&p, &records);
        assert!(out.lines[0].value.starts_with("4.1.0 (all"), "{}", out.lines[0].value);
        assert!(out.lines[0].value.ends_with("from the run's provenance: these records predate per-record versions"));
        // A run that switched brokers: the knob that chose each record's broker says which.
        for v in ["3.9.1", "4.1.0"] {
            p.kafka_brokers.insert(v.into(), p.pins.clone());
        }
        let mut records = records;
        for (i, r) in records.iter_mut().enumerate() {
            r.variant.knobs.insert("kafka_version".into(), serde_json::json!(if i < 5 { "3.9.1" } else { "4.1.0" }));
        }
        let out = ran_on(&p, &records);
        assert!(out.lines[0].value.starts_with("3.9.1 (5 records), 4.1.0 ("), "{}", out.lines[0].value);
        assert!(out.lines[0].value.contains("from each record's kafka_version knob"));
        assert!(out.warning.is_some());
        // Without a knob, provenance can only say which versions the run had.
        records.iter_mut().for_each(|r| {
            r.variant.knobs.remove("kafka_version");
        });
        assert!(ran_on(&p, &records).lines[0].value.starts_with("one of 3.9.1, 4.1.0 (all"));
    }
}
