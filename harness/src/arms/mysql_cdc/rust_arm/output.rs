//! What the Rust arm writes for a row, per the `format` knob: the value and the key.
//! - `seed`: the seed-shaped output, bare row JSON with DECIMAL as a string and dates and times as text, the
//!   key the id as text (`row-json-text-time`, `id-text`);
//! - `row_json`: what Debezium writes through its new-record-state unwrap with schemas off and
//!   `decimal.handling.mode=string`: bare row JSON with DATETIME as epoch milliseconds, the key `{"id":N}`
//!   (`row-json`, `id-json`);
//! - `debezium_envelope`: Debezium's envelope with schemas ([`super::envelope`]), the key with its schema
//!   (`debezium-envelope`, `id-json-envelope`).

use std::io::Write as _;

use anyhow::{Context, Result, bail};

use super::super::{Format, Job};
use super::columns::{ColumnDef, Decimals, primary_key};
use super::envelope::{ARM_CONNECTOR, ARM_VERSION, Envelope, Op, Source, now_ns};
use super::row_json::{RowEncoder, Values, id_of};

/// The names a record's `applied` map gives the value and key encodings (harness/record's applied.rs).
pub fn applied_names(format: Format) -> Result<(&'static str, &'static str)> {
    Ok(match format {
        Format::Seed => ("row-json-text-time", "id-text"),
        Format::RowJson => ("row-json", "id-json"),
        Format::DebeziumEnvelope => ("debezium-envelope", "id-json-envelope"),
        Format::ConnectEnvelope => bail!("connect_envelope is the sink rig's format: a source arm does not write it"),
    })
}

/// The encoder for one table in one format.
pub enum Output {
    Seed(RowEncoder),
    RowJson { row: RowEncoder, key: RowEncoder, pk: Vec<usize> },
    Envelope(Box<Envelope>),
}

impl Output {
    /// The seed's format, from the column types the server reported (snapshot rows or the TABLE_MAP).
    pub fn seed(encoder: RowEncoder) -> Output {
        Output::Seed(encoder)
    }

    /// A Debezium-matched format, from the table's column definitions.
    pub fn debezium(format: Format, columns: &[ColumnDef], job: &Job) -> Result<Output> {
        match format {
            Format::RowJson => {
                let kinds = columns
                    .iter()
                    .map(|c| Ok((c.name.as_str(), c.kind(Decimals::Text)?)))
                    .collect::<Result<Vec<_>>>()?;
                let pk = primary_key(columns)?;
                let id = columns[pk[0]].name.as_str();
                let key = RowEncoder::with_kinds(pk.iter().map(|&i| kinds[i]), id);
                Ok(Output::RowJson { row: RowEncoder::with_kinds(kinds, id), key, pk })
            }
            Format::DebeziumEnvelope => Ok(Output::Envelope(Box::new(Envelope::new(
                columns,
                &job.topic_prefix,
                job.table.database,
                job.table.table,
                (ARM_VERSION, ARM_CONNECTOR),
            )?))),
            other => bail!("{other:?} is not a Debezium-matched format"),
        }
    }

    pub fn id_index(&self) -> usize {
        match self {
            Output::Seed(row) => row.id_index,
            Output::RowJson { row, .. } => row.id_index,
            Output::Envelope(e) => e.id_index(),
        }
    }

    pub fn columns(&self) -> Option<usize> {
        match self {
            Output::Seed(row) | Output::RowJson { row, .. } => Some(row.columns()),
            Output::Envelope(_) => None,
        }
    }

    /// Encode one row's key and value (both buffers are cleared first); returns its id. `source` is only
    /// called for the envelope.
    pub fn encode<'a>(
        &self,
        values: &(impl Values + ?Sized),
        op: Op,
        source: impl FnOnce() -> Source<'a>,
        key: &mut Vec<u8>,
        value: &mut Vec<u8>,
    ) -> Result<i64> {
        key.clear();
        value.clear();
        let id = id_of(values.value(self.id_index())).context("a row without an integer id")?;
        match self {
            Output::Seed(row) => {
                row.encode(values.iter(), value)?;
                let _ = write!(key, "{id}");
            }
            Output::RowJson { row, key: key_encoder, pk } => {
                row.encode(values.iter(), value)?;
                key_encoder.encode(pk.iter().map(|&i| values.value(i)), key)?;
            }
            Output::Envelope(e) => {
                e.encode_value(values.iter(), &source(), op, now_ns(), value)?;
                e.encode_key(values, key)?;
            }
        }
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use mysql_async::Value;

    use super::*;
    use crate::arms::mysql_cdc::rust_arm::columns::tests::cart;

    fn job() -> Job {
        let env: streamlab_record::EnvDescriptor = serde_json::from_value(serde_json::json!({
            "schema": 1, "id": "t", "backend": "native", "dir": "/tmp/x", "started_ts_ms": 0,
            "kafka": {"version": "4.1.0", "listeners": {}}
        }))
        .unwrap();
        Job {
            rig: crate::arms::mysql_cdc::Rig::SnapshotKafka,
            knobs: crate::arms::mysql_cdc::debezium::props::tests::knobs(crate::arms::mysql_cdc::Rig::SnapshotKafka),
            env,
            table: crate::arms::mysql_cdc::Source { database: "benchdb", table: "cart" },
            topic: "t".into(),
            topic_prefix: "rust-snapshot-kafka".into(),
            work_dir: "/tmp/private".into(),
            start_at: None,
        }
    }

    fn row() -> Vec<Value> {
        let b = |s: &str| Value::Bytes(s.as_bytes().to_vec());
        vec![
            Value::Int(1),
            Value::Int(7),
            Value::Int(8),
            Value::Int(9),
            b("12.34"),
            b("pending"),
            b("note"),
            Value::Date(2026, 3, 4, 5, 6, 7, 0),
        ]
    }

    fn source() -> Source<'static> {
        Source {
            ts_ms: 0,
            snapshot: super::super::envelope::Snapshot::First,
            server_id: 0,
            gtid: None,
            file: "f",
            pos: 4,
            row: 0,
        }
    }

    #[test]
    fn row_json_is_what_debeziums_unwrap_wrote_with_decimal_as_text() {
        let out = Output::debezium(Format::RowJson, &cart(), &job()).unwrap();
        let (mut key, mut value) = (Vec::new(), Vec::new());
        let id = out.encode(&row()[..], Op::Read, source, &mut key, &mut value).unwrap();
        assert_eq!(id, 1);
        assert_eq!(String::from_utf8(key).unwrap(), r#"{"id":1}"#);
        // Debezium 3.5 with ExtractNewRecordState, decimal.handling.mode=string and schemas off wrote this row
        // of a scratch cart table here.
        assert_eq!(
            String::from_utf8(value).unwrap(),
            r#"{"id":1,"user_id":7,"product_id":8,"quantity":9,"price":"12.34","status":"pending","notes":"note","created_at":1772600767000}"#
        );
    }

    #[test]
    fn the_seed_format_keys_by_the_id_as_text_and_the_envelope_by_its_schema() {
        let seed = Output::seed(RowEncoder::new(
            [
                ("id", mysql_async::consts::ColumnType::MYSQL_TYPE_LONG),
                ("price", mysql_async::consts::ColumnType::MYSQL_TYPE_NEWDECIMAL),
            ],
            "id",
        ));
        let (mut key, mut value) = (Vec::new(), Vec::new());
        seed.encode(&row()[..2], Op::Read, source, &mut key, &mut value).unwrap();
        assert_eq!((key.as_slice(), value.as_slice()), (&b"1"[..], &br#"{"id":1,"price":"7"}"#[..]));
        let env = Output::debezium(Format::DebeziumEnvelope, &cart(), &job()).unwrap();
        env.encode(&row()[..], Op::Read, source, &mut key, &mut value).unwrap();
        let k: serde_json::Value = serde_json::from_slice(&key).unwrap();
        assert_eq!(k["payload"], serde_json::json!({"id": 1}));
        assert_eq!(k["schema"]["name"], "rust-snapshot-kafka.benchdb.cart.Key");
        assert!(Output::debezium(Format::Seed, &cart(), &job()).is_err());
        assert_eq!(applied_names(Format::RowJson).unwrap(), ("row-json", "id-json"));
        assert!(applied_names(Format::ConnectEnvelope).is_err());
    }
}
