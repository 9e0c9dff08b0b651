//! Debezium's change-event envelope as Kafka Connect's JsonConverter writes it with schemas on, for the Rust
//! arm's `debezium_envelope` format: every value is `{"schema":..., "payload":{"before", "after", "source",
//! "transaction", "op", "ts_ms", "ts_us", "ts_ns"}}` and every key `{"schema":..., "payload":{"id":N}}`, the
//! schemas those of Debezium 3.5's MariaDB connector (DECIMAL in its `precise` base64 form with the Decimal
//! schema's scale and precision, DATETIME as epoch milliseconds), byte for byte where the values agree (the
//! tests compare with messages the real connector wrote here).
//!
//! The `source` block has every field Debezium's has, with this arm's values: `version` and `connector` name
//! this arm; a snapshot row says `first` and then `true` (Debezium marks its last row `last`: the arm does not
//! read ahead to know it); a binlog row carries the event's server id, GTID, file, start position and row
//! number, and no thread id (Debezium's is null on MariaDB too). `transaction` is null, as Debezium writes it
//! without `provide.transaction.metadata`.

use std::io::Write as _;

use anyhow::Result;
use mysql_async::Value;

use super::columns::{ColumnDef, Decimals, primary_key};
use super::connect_values::ValueError;
use super::row_json::{RowEncoder, Values, write_str};

/// What the arm puts in `source.version` and `source.connector`.
pub const ARM_VERSION: &str = concat!("streamlab-", env!("CARGO_PKG_VERSION"));
pub const ARM_CONNECTOR: &str = "streamlab-rust";

/// Debezium 3.5 MariaDB's `source` schema (its field order is the payload's).
const SOURCE_SCHEMA: &str = r#"{"type":"struct","fields":[{"type":"string","optional":false,"field":"version"},{"type":"string","optional":false,"field":"connector"},{"type":"string","optional":false,"field":"name"},{"type":"int64","optional":false,"field":"ts_ms"},{"type":"string","optional":true,"name":"io.debezium.data.Enum","version":1,"parameters":{"allowed":"true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"},"default":"false","field":"snapshot"},{"type":"string","optional":false,"field":"db"},{"type":"string","optional":true,"field":"sequence"},{"type":"int64","optional":true,"field":"ts_us"},{"type":"int64","optional":true,"field":"ts_ns"},{"type":"string","optional":true,"field":"table"},{"type":"int64","optional":false,"field":"server_id"},{"type":"string","optional":true,"field":"gtid"},{"type":"string","optional":false,"field":"file"},{"type":"int64","optional":false,"field":"pos"},{"type":"int32","optional":false,"field":"row"},{"type":"int64","optional":true,"field":"thread"},{"type":"string","optional":true,"field":"query"}],"optional":false,"name":"io.debezium.connector.mariadb.Source","version":1,"field":"source"}"#;
/// The `transaction` block's schema, then `op` and the envelope's own times.
const ENVELOPE_TAIL_SCHEMA: &str = r#"{"type":"struct","fields":[{"type":"string","optional":false,"field":"id"},{"type":"int64","optional":false,"field":"total_order"},{"type":"int64","optional":false,"field":"data_collection_order"}],"optional":true,"name":"event.block","version":1,"field":"transaction"},{"type":"string","optional":false,"field":"op"},{"type":"int64","optional":true,"field":"ts_ms"},{"type":"int64","optional":true,"field":"ts_us"},{"type":"int64","optional":true,"field":"ts_ns"}"#;

/// `source.snapshot`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Snapshot {
    First,
    True,
    False,
}

/// `op`: a snapshot read or an insert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Read,
    Create,
}

/// Where a row came from (`source`).
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// The snapshot's start, or the binlog event's timestamp (both whole seconds, as the server keeps them).
    pub ts_ms: i64,
    pub snapshot: Snapshot,
    pub server_id: u32,
    pub gtid: Option<&'a str>,
    pub file: &'a str,
    pub pos: u64,
    pub row: u32,
}

/// The envelope encoder of one table, its constant parts rendered once.
pub struct Envelope {
    /// `{"schema":...,"payload":{"before":null,"after":`
    head: Vec<u8>,
    row: RowEncoder,
    /// `,"source":{"version":..,"connector":..,"name":..,"ts_ms":`
    source_head: Vec<u8>,
    /// `,"db":"..","sequence":null,"ts_us":`
    db: Vec<u8>,
    /// `,"table":"..","server_id":`
    table: Vec<u8>,
    /// `{"schema":...,"payload":`
    key_head: Vec<u8>,
    key: RowEncoder,
    pk: Vec<usize>,
}

impl Envelope {
    /// The encoder for `database.table` with `columns`, its schemas named after `topic_prefix` as Debezium's
    /// are; `(version, connector)` go into every `source`.
    pub fn new(
        columns: &[ColumnDef],
        topic_prefix: &str,
        database: &str,
        table: &str,
        (version, connector): (&str, &str),
    ) -> Result<Envelope> {
        let pk = primary_key(columns)?;
        let base = format!("{topic_prefix}.{database}.{table}");
        let mut fields = Vec::new();
        let mut key_fields = Vec::new();
        for (i, c) in columns.iter().enumerate() {
            if i > 0 {
                fields.push(b',');
            }
            c.field_schema(Decimals::Bytes, &mut fields)?;
            if pk.contains(&i) {
                if !key_fields.is_empty() {
                    key_fields.push(b',');
                }
                c.field_schema(Decimals::Bytes, &mut key_fields)?;
            }
        }
        let fields = String::from_utf8(fields)?;
        let value_struct = |field: &str| {
            format!(
                r#"{{"type":"struct","fields":[{fields}],"optional":true,"name":{},"field":"{field}"}}"#,
                json(&format!("{base}.Value"))
            )
        };
        let head = format!(
            r#"{{"schema":{{"type":"struct","fields":[{},{},{SOURCE_SCHEMA},{ENVELOPE_TAIL_SCHEMA}],"optional":false,"name":{},"version":2}},"payload":{{"before":null,"after":"#,
            value_struct("before"),
            value_struct("after"),
            json(&format!("{base}.Envelope")),
        );
        let key_head = format!(
            r#"{{"schema":{{"type":"struct","fields":[{}],"optional":false,"name":{}}},"payload":"#,
            String::from_utf8(key_fields)?,
            json(&format!("{base}.Key"))
        );
        let kinds = |cols: &mut dyn Iterator<Item = &ColumnDef>| -> Result<Vec<(String, _)>> {
            cols.map(|c| Ok((c.name.clone(), c.kind(Decimals::Bytes)?))).collect()
        };
        let all = kinds(&mut columns.iter())?;
        let keys = kinds(&mut pk.iter().map(|&i| &columns[i]))?;
        let id = &columns[pk[0]].name;
        Ok(Envelope {
            head: head.into_bytes(),
            row: RowEncoder::with_kinds(all.iter().map(|(n, k)| (n.as_str(), *k)), id),
            source_head: format!(
                r#","source":{{"version":{},"connector":{},"name":{},"ts_ms":"#,
                json(version),
                json(connector),
                json(topic_prefix)
            )
            .into_bytes(),
            db: format!(r#","db":{},"sequence":null,"ts_us":"#, json(database)).into_bytes(),
            table: format!(r#","table":{},"server_id":"#, json(table)).into_bytes(),
            key_head: key_head.into_bytes(),
            key: RowEncoder::with_kinds(keys.iter().map(|(n, k)| (n.as_str(), *k)), id),
            pk,
        })
    }

    /// The primary key's first column (the id the checks count).
    pub fn id_index(&self) -> usize {
        self.pk[0]
    }

    /// Appends the value of one row (`values` in table order) to `out`; `now_ns` is the envelope's own time.
    pub fn encode_value<'v>(
        &self,
        values: impl IntoIterator<Item = &'v Value>,
        source: &Source<'_>,
        op: Op,
        now_ns: i128,
        out: &mut Vec<u8>,
    ) -> Result<(), ValueError> {
        out.extend_from_slice(&self.head);
        self.row.encode(values, out)?;
        out.extend_from_slice(&self.source_head);
        let ts = source.ts_ms;
        let snapshot = match source.snapshot {
            Snapshot::First => "first",
            Snapshot::True => "true",
            Snapshot::False => "false",
        };
        let _ = write!(out, r#"{ts},"snapshot":"{snapshot}""#);
        out.extend_from_slice(&self.db);
        let _ = write!(out, r#"{},"ts_ns":{}"#, i128::from(ts) * 1_000, i128::from(ts) * 1_000_000);
        out.extend_from_slice(&self.table);
        let _ = write!(out, r#"{},"gtid":"#, source.server_id);
        match source.gtid {
            Some(g) => write_str(out, g.as_bytes()),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(br#","file":"#);
        write_str(out, source.file.as_bytes());
        let op = if op == Op::Read { "r" } else { "c" };
        let _ = write!(
            out,
            r#","pos":{},"row":{},"thread":null,"query":null}},"transaction":null,"op":"{op}","ts_ms":{},"ts_us":{},"ts_ns":{now_ns}}}}}"#,
            source.pos,
            source.row,
            now_ns / 1_000_000,
            now_ns / 1_000
        );
        Ok(())
    }

    /// Appends the key of one row (`values` in table order) to `out`.
    pub fn encode_key(&self, values: &(impl Values + ?Sized), out: &mut Vec<u8>) -> Result<(), ValueError> {
        out.extend_from_slice(&self.key_head);
        self.key.encode(self.pk.iter().map(|&i| values.value(i)), out)?;
        out.push(b'}');
        Ok(())
    }
}

/// `s` as a JSON string.
fn json(s: &str) -> String {
    let mut out = Vec::with_capacity(s.len() + 2);
    write_str(&mut out, s.as_bytes());
    String::from_utf8(out).unwrap_or_default()
}

/// Nanoseconds since the epoch (the envelope's `ts_ns`).
pub fn now_ns() -> i128 {
    streamlab_process::clock::now_ns() as i128
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arms::mysql_cdc::rust_arm::columns::tests::cart;

    fn debezium(name: &str) -> (String, String) {
        let read = |part| {
            let path = crate::manifest_dir().join(format!("src/arms/mysql_cdc/rust_arm/testdata/{name}.{part}.json"));
            std::fs::read_to_string(path).unwrap().trim_end().to_owned()
        };
        (read("key"), read("value"))
    }

    fn encode(row: &[Value], source: Source<'_>, op: Op, now_ns: i128) -> (String, String) {
        // Debezium's own version and connector names, so every byte can be compared.
        let env = Envelope::new(&cart(), "scr-env", "scratchdb", "cart", ("3.5.0.Final", "mariadb")).unwrap();
        let (mut key, mut value) = (Vec::new(), Vec::new());
        env.encode_value(row, &source, op, now_ns, &mut value).unwrap();
        env.encode_key(row, &mut key).unwrap();
        (String::from_utf8(key).unwrap(), String::from_utf8(value).unwrap())
    }

    fn bytes(s: &str) -> Value {
        Value::Bytes(s.as_bytes().to_vec())
    }

    #[test]
    fn a_snapshot_row_is_byte_for_byte_what_debezium_wrote() {
        // Row 1 of a scratch cart table as Debezium 3.5.0.Final's MariaDB connector snapshot it here (the
        // testdata files are its key and value, read back from its topic).
        let row = [
            Value::Int(1),
            Value::Int(7),
            Value::Int(8),
            Value::Int(9),
            bytes("12.34"),
            bytes("pending"),
            bytes("note_12 \"q\""),
            Value::Date(2026, 3, 4, 5, 6, 7, 0),
        ];
        let source = Source {
            ts_ms: 1_796_090_778_000,
            snapshot: Snapshot::First,
            server_id: 0,
            gtid: None,
            file: "binlog.000001",
            pos: 2485,
            row: 0,
        };
        let ours = encode(&row, source, Op::Read, 1_796_090_778_266_957_404);
        assert_eq!(ours, debezium("debezium-cart-snapshot"));
    }

    #[test]
    fn a_binlog_insert_is_byte_for_byte_what_debezium_wrote() {
        let row = [
            Value::Int(6),
            Value::Int(5),
            Value::Int(6),
            Value::Int(7),
            bytes("-0.50"),
            bytes("confirmed"),
            bytes("stream"),
            Value::Date(2026, 3, 4, 5, 6, 7, 0),
        ];
        let source = Source {
            ts_ms: 1_796_090_806_000,
            snapshot: Snapshot::False,
            server_id: 1,
            gtid: Some("0-1-9"),
            file: "binlog.000001",
            pos: 2839,
            row: 0,
        };
        let ours = encode(&row, source, Op::Create, 1_796_090_806_865_142_814);
        assert_eq!(ours, debezium("debezium-cart-insert"));
    }

    #[test]
    fn nulls_and_the_arms_own_names() {
        let env =
            Envelope::new(&cart(), "rust-snapshot-kafka", "benchdb", "cart", (ARM_VERSION, ARM_CONNECTOR)).unwrap();
        let row =
            [Value::Int(2), Value::NULL, Value::NULL, Value::NULL, Value::NULL, Value::NULL, Value::NULL, Value::NULL];
        let mut out = Vec::new();
        let source =
            Source { ts_ms: 1000, snapshot: Snapshot::True, server_id: 0, gtid: None, file: "b.1", pos: 4, row: 0 };
        env.encode_value(&row, &source, Op::Read, 5_000_000, &mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["payload"]["after"]["price"], serde_json::Value::Null);
        assert_eq!(v["payload"]["source"]["connector"], ARM_CONNECTOR);
        assert_eq!(v["schema"]["name"], "rust-snapshot-kafka.benchdb.cart.Envelope");
        assert_eq!(v["payload"]["ts_ms"], 5);
        assert_eq!(env.id_index(), 0);
    }
}
