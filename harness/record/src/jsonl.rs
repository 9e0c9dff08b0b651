//! JSONL files: written atomically (temp file + rename), read back with errors that name file and line.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::record::{Record, SCHEMA};

#[derive(Debug, thiserror::Error)]
pub enum JsonlError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}:{line}: not a valid record: {source}")]
    Parse { path: PathBuf, line: usize, source: serde_json::Error },
    #[error("{path}:{line}: schema {found:?}; this build reads {SCHEMA:?}{}", migrate_hint(found))]
    Schema { path: PathBuf, line: usize, found: String },
    #[error("cannot write {path}: {reason}")]
    Write { path: PathBuf, reason: String },
    #[error("cannot encode a record for {path}: {source}")]
    Encode { path: PathBuf, source: serde_json::Error },
}

/// Write `bytes` to `path` atomically, through the workspace's one atomic writer
/// ([`streamlab_process::files::write_atomic`]): a reader sees the old file or the new one, never half of one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), JsonlError> {
    streamlab_process::files::write_atomic(path, bytes)
        .map_err(|e| JsonlError::Write { path: path.to_owned(), reason: format!("{e:#}") })
}

/// Serialize values one per line.
pub fn to_lines<T: Serialize>(path: &Path, items: &[T]) -> Result<Vec<u8>, JsonlError> {
    let mut out = Vec::new();
    for item in items {
        serde_json::to_writer(&mut out, item).map_err(|source| JsonlError::Encode { path: path.to_owned(), source })?;
        out.push(b'\n');
    }
    Ok(out)
}

/// Append records to a JSONL file atomically (rewrites the file with the old lines plus the new ones).
pub fn append_records(path: &Path, records: &[Record]) -> Result<(), JsonlError> {
    let mut bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(source) => return Err(JsonlError::Io { path: path.to_owned(), source }),
    };
    if !bytes.is_empty() && !bytes.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    bytes.extend(to_lines(path, records)?);
    write_atomic(path, &bytes)
}

/// Parse every non-empty line of `text` as a `T`, naming `path:line` on the first bad one.
pub fn parse_lines<T: DeserializeOwned>(path: &Path, text: &str) -> Result<Vec<T>, JsonlError> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|source| JsonlError::Parse { path: path.to_owned(), line: i + 1, source })
        })
        .collect()
}

/// What to do about a record of the schema before this one.
fn migrate_hint(found: &str) -> &'static str {
    if found == crate::record::SCHEMA_V1 {
        "; run `cargo xtask lab migrate` once over the results directory (it rewrites the records in place)"
    } else {
        ""
    }
}

/// Read a results JSONL file: every line must be a record of the current schema.
pub fn read_records(path: &Path) -> Result<Vec<Record>, JsonlError> {
    let text = std::fs::read_to_string(path).map_err(|source| JsonlError::Io { path: path.to_owned(), source })?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let at = |source| JsonlError::Parse { path: path.to_owned(), line: i + 1, source };
        // Check the schema first so a future record is refused as such, not as a field mismatch.
        let value: serde_json::Value = serde_json::from_str(line).map_err(at)?;
        let schema = value.get("schema").and_then(|s| s.as_str()).unwrap_or("<missing>");
        if schema != SCHEMA {
            return Err(JsonlError::Schema { path: path.to_owned(), line: i + 1, found: schema.to_owned() });
        }
        out.push(serde_json::from_value(value).map_err(at)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::{Integrity, Measurement, Metric, RunInfo, Status, Variant};

    pub(crate) fn sample(rep: u32) -> Record {
        Record {
            schema: SCHEMA.into(),
            bench: "kafka_sink".into(),
            run: RunInfo {
                id: "20261129T000000Z-abc".into(),
                ts_ms: 1,
                commit: "deadbeef".into(),
                dirty: false,
                host: "h".into(),
                cpu: "cpu".into(),
                cores: 2,
                os: "Debian 12".into(),
                profile: "quick".into(),
                env: "native".into(),
                kafka_version: None,
                mysql_flavour: None,
                mysql_version: None,
                precision_target: None,
                kafka_brokers: None,
                broker_heap: None,
            },
            arm: "raw".into(),
            variant: Variant {
                label: "2 cores <b>".into(),
                sweeps: vec!["mode".into()],
                default: true,
                knobs: BTreeMap::from([("partitions".into(), serde_json::json!(16))]),
            },
            status: Status::Ok,
            reason: None,
            log_tail: None,
            measurement: Measurement {
                kind: "produce".into(),
                metrics: BTreeMap::from([("records_per_s".into(), Metric::new(1234.5, "records/s", true))]),
                integrity: Integrity::compare(10, 10, "hwm"),
                verdict: BTreeMap::new(),
                note: Some("n".into()),
                details: BTreeMap::new(),
                versions: BTreeMap::new(),
                applied: Default::default(),
            },
            rep,
            block: None,
            reproduce: "cargo xtask lab run".into(),
            measured_as: None,
            conditions: None,
        }
    }

    #[test]
    fn records_round_trip_through_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kafka_sink.jsonl");
        append_records(&path, &[sample(1)]).unwrap();
        append_records(&path, &[sample(2)]).unwrap();
        let back = read_records(&path).unwrap();
        assert_eq!(back, vec![sample(1), sample(2)]);
        // No temp file is left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_corrupt_line_is_reported_with_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.jsonl");
        let good = serde_json::to_string(&sample(1)).unwrap();
        std::fs::write(&path, format!("{good}\n\n{}\n", &good[..good.len() / 2])).unwrap();
        let err = read_records(&path).unwrap_err().to_string();
        assert!(err.starts_with(&format!("{}:3: not a valid record", path.display())), "{err}");
    }

    #[test]
    fn an_unknown_schema_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.jsonl");
        let line = serde_json::to_string(&sample(1)).unwrap().replace(SCHEMA, "streamlab.record/99");
        std::fs::write(&path, line).unwrap();
        let err = read_records(&path).unwrap_err().to_string();
        assert!(err.contains(":1: schema \"streamlab.record/99\"; this build reads"), "{err}");
    }

    #[test]
    fn the_measurement_sits_inline_and_a_misspelt_field_is_still_refused() {
        let line = serde_json::to_string(&sample(1)).unwrap();
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(value["kind"], "produce", "the measurement's fields are the record's own: {line}");
        assert!(value.get("measurement").is_none(), "{line}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.jsonl");
        std::fs::write(&path, line.replace("\"note\"", "\"nots\"")).unwrap();
        let err = read_records(&path).unwrap_err().to_string();
        assert!(err.contains(":1: ") && err.contains("unknown field `nots`"), "{err}");
    }
}
