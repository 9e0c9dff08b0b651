//! A row as bare JSON, the way the arm puts it on the wire: `{"id":1,"user_id":7,"price":"12.34",...}`.
//! Integers and floats are numbers, DECIMAL is a string (exact, as Debezium's `string` mode and Redpanda
//! Connect write it), DATE/DATETIME/TIMESTAMP/TIME are text as the server prints them, NULL is `null`, and
//! character and binary columns are JSON strings (invalid UTF-8 replaced).
//!
//! The encoder is built once per table (its keys are pre-rendered) and writes into a reused buffer: the
//! snapshot's text rows and the binlog's typed values go through the same code. Built from the column kinds
//! Debezium's converters use ([`RowEncoder::with_kinds`]), it writes times and decimals as they do
//! ([`super::connect_values`]).

use std::io::Write as _;

use mysql_async::Value;
use mysql_async::consts::ColumnType;

use super::connect_values::{Temporal, ValueError, write_decimal_bytes, write_temporal};

/// How a column's value is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Integer and floating-point types: a JSON number (text-protocol bytes are copied as they are).
    Number,
    /// DECIMAL: a JSON string, never a float.
    Decimal,
    /// DATE: `YYYY-MM-DD`.
    Date,
    /// DATETIME, TIMESTAMP: `YYYY-MM-DD HH:MM:SS[.ffffff]`.
    DateTime,
    /// TIME: `[-]HH:MM:SS[.ffffff]`.
    Time,
    /// Everything else: a JSON string.
    Text,
    /// DECIMAL as Debezium's `precise` mode writes it: base64 of the unscaled value at this scale.
    DecimalBytes(u8),
    /// DATE, DATETIME, TIME as numbers, as Debezium's converters write them.
    Temporal(Temporal),
}

impl Kind {
    pub fn of(t: ColumnType) -> Kind {
        use ColumnType::*;
        match t {
            MYSQL_TYPE_TINY | MYSQL_TYPE_SHORT | MYSQL_TYPE_LONG | MYSQL_TYPE_LONGLONG | MYSQL_TYPE_INT24
            | MYSQL_TYPE_FLOAT | MYSQL_TYPE_DOUBLE | MYSQL_TYPE_YEAR => Kind::Number,
            MYSQL_TYPE_DECIMAL | MYSQL_TYPE_NEWDECIMAL => Kind::Decimal,
            MYSQL_TYPE_DATE | MYSQL_TYPE_NEWDATE => Kind::Date,
            MYSQL_TYPE_DATETIME | MYSQL_TYPE_DATETIME2 | MYSQL_TYPE_TIMESTAMP | MYSQL_TYPE_TIMESTAMP2 => Kind::DateTime,
            MYSQL_TYPE_TIME | MYSQL_TYPE_TIME2 => Kind::Time,
            _ => Kind::Text,
        }
    }
}

/// A row's values by column position: a binlog row image or a snapshot row.
pub trait Values {
    fn columns(&self) -> usize;
    fn value(&self, i: usize) -> &Value;
    fn iter(&self) -> impl Iterator<Item = &Value> {
        (0..self.columns()).map(|i| self.value(i))
    }
}

static NULL: Value = Value::NULL;

impl Values for [Value] {
    fn columns(&self) -> usize {
        self.len()
    }
    fn value(&self, i: usize) -> &Value {
        &self[i]
    }
}

impl Values for mysql_async::Row {
    fn columns(&self) -> usize {
        self.len()
    }
    /// A value taken out of the row reads as NULL (the arm never takes any).
    fn value(&self, i: usize) -> &Value {
        self.as_ref(i).unwrap_or(&NULL)
    }
}

/// Encodes the rows of one table.
#[derive(Debug, Clone)]
pub struct RowEncoder {
    /// `{"name":` for the first column, `,"name":` for the others.
    keys: Vec<Vec<u8>>,
    kinds: Vec<Kind>,
    /// The primary key's column (its value is the record's key and the id the checks count).
    pub id_index: usize,
}

impl RowEncoder {
    /// `columns` as (name, type) in table order; `id` names the primary key column.
    pub fn new<'a>(columns: impl IntoIterator<Item = (&'a str, ColumnType)>, id: &str) -> RowEncoder {
        Self::with_kinds(columns.into_iter().map(|(name, t)| (name, Kind::of(t))), id)
    }

    /// `columns` as (name, how its values are written) in table order; `id` names the primary key column.
    pub fn with_kinds<'a>(columns: impl IntoIterator<Item = (&'a str, Kind)>, id: &str) -> RowEncoder {
        let mut keys = Vec::new();
        let mut kinds = Vec::new();
        let mut id_index = 0;
        for (i, (name, kind)) in columns.into_iter().enumerate() {
            let mut key = Vec::with_capacity(name.len() + 4);
            key.push(if i == 0 { b'{' } else { b',' });
            write_str(&mut key, name.as_bytes());
            key.push(b':');
            keys.push(key);
            kinds.push(kind);
            if name == id {
                id_index = i;
            }
        }
        RowEncoder { keys, kinds, id_index }
    }

    pub fn columns(&self) -> usize {
        self.kinds.len()
    }

    /// Appends the row's JSON to `out`; `values` in the encoder's column order. Fails only for a value its
    /// column's kind cannot write (a DECIMAL with more fraction digits than its scale, a date in a number).
    pub fn encode<'v>(&self, values: impl IntoIterator<Item = &'v Value>, out: &mut Vec<u8>) -> Result<(), ValueError> {
        let mut n = 0;
        for ((key, kind), value) in self.keys.iter().zip(&self.kinds).zip(values) {
            out.extend_from_slice(key);
            match kind {
                Kind::DecimalBytes(scale) => write_decimal_bytes(out, *scale, value)?,
                Kind::Temporal(how) => write_temporal(out, *how, value)?,
                _ => write_value(out, *kind, value),
            }
            n += 1;
        }
        if n == 0 {
            out.push(b'{');
        }
        out.push(b'}');
        Ok(())
    }
}

/// The row's id as an integer (the snapshot's keyset cursor and the record key).
pub fn id_of(value: &Value) -> Option<i64> {
    match value {
        Value::Int(i) => Some(*i),
        Value::UInt(u) => i64::try_from(*u).ok(),
        Value::Bytes(b) => std::str::from_utf8(b).ok()?.parse().ok(),
        _ => None,
    }
}

fn write_value(out: &mut Vec<u8>, kind: Kind, value: &Value) {
    match value {
        Value::NULL => out.extend_from_slice(b"null"),
        Value::Int(i) => write_number(out, kind, *i),
        Value::UInt(u) => write_number(out, kind, *u),
        Value::Float(f) => write_float(out, f64::from(*f)),
        Value::Double(f) => write_float(out, *f),
        Value::Bytes(b) => match kind {
            // Text-protocol numbers are already valid JSON numbers.
            Kind::Number if is_json_number(b) => out.extend_from_slice(b),
            _ => write_str(out, b),
        },
        Value::Date(y, mo, d, h, mi, s, us) => {
            if kind == Kind::Date {
                let _ = write!(out, "\"{y:04}-{mo:02}-{d:02}\"");
            } else {
                let _ = write!(out, "\"{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}");
                write_micros(out, *us);
                out.push(b'"');
            }
        }
        Value::Time(negative, days, h, mi, s, us) => {
            let hours = days * 24 + u32::from(*h);
            let sign = if *negative { "-" } else { "" };
            let _ = write!(out, "\"{sign}{hours:02}:{mi:02}:{s:02}");
            write_micros(out, *us);
            out.push(b'"');
        }
    }
}

fn write_number<T: std::fmt::Display>(out: &mut Vec<u8>, kind: Kind, n: T) {
    if kind == Kind::Decimal {
        let _ = write!(out, "\"{n}\"");
    } else {
        let _ = write!(out, "{n}");
    }
}

fn write_float(out: &mut Vec<u8>, f: f64) {
    if f.is_finite() {
        let _ = write!(out, "{f}");
    } else {
        out.extend_from_slice(b"null");
    }
}

fn write_micros(out: &mut Vec<u8>, us: u32) {
    if us != 0 {
        let _ = write!(out, ".{us:06}");
    }
}

/// The JSON number grammar (what the server prints for a number column; anything else is quoted).
fn is_json_number(b: &[u8]) -> bool {
    fn digits(b: &[u8]) -> usize {
        b.iter().take_while(|c| c.is_ascii_digit()).count()
    }
    let b = b.strip_prefix(b"-").unwrap_or(b);
    let int = digits(b);
    if int == 0 || (int > 1 && b[0] == b'0') {
        return false;
    }
    let mut rest = &b[int..];
    if let Some(r) = rest.strip_prefix(b".") {
        let frac = digits(r);
        if frac == 0 {
            return false;
        }
        rest = &r[frac..];
    }
    if let Some(r) = rest.strip_prefix(b"e").or_else(|| rest.strip_prefix(b"E")) {
        let r = r.strip_prefix(b"-").or_else(|| r.strip_prefix(b"+")).unwrap_or(r);
        let exp = digits(r);
        if exp == 0 {
            return false;
        }
        rest = &r[exp..];
    }
    rest.is_empty()
}

/// `b` as a JSON string: quotes, backslashes and control characters escaped; invalid UTF-8 replaced.
pub fn write_str(out: &mut Vec<u8>, b: &[u8]) {
    match std::str::from_utf8(b) {
        Ok(s) => write_escaped(out, s.as_bytes()),
        Err(_) => write_escaped(out, String::from_utf8_lossy(b).as_bytes()),
    }
}

fn write_escaped(out: &mut Vec<u8>, b: &[u8]) {
    out.reserve(b.len() + 2);
    out.push(b'"');
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        if c >= 0x20 && c != b'"' && c != b'\\' {
            continue;
        }
        out.extend_from_slice(&b[start..i]);
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            _ => {
                let _ = write!(out, "\\u{c:04x}");
            }
        }
        start = i + 1;
    }
    out.extend_from_slice(&b[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use ColumnType::*;

    fn cart() -> RowEncoder {
        RowEncoder::new(
            [
                ("id", MYSQL_TYPE_LONG),
                ("price", MYSQL_TYPE_NEWDECIMAL),
                ("notes", MYSQL_TYPE_BLOB),
                ("created_at", MYSQL_TYPE_DATETIME2),
                ("quantity", MYSQL_TYPE_LONG),
            ],
            "id",
        )
    }

    fn encode(e: &RowEncoder, values: &[Value]) -> String {
        let mut out = Vec::new();
        e.encode(values, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn binlog_values_become_bare_row_json_with_decimal_and_datetime_as_text() {
        let row = [
            Value::Int(1),
            Value::Bytes(b"12.34".to_vec()),
            Value::Bytes(b"say \"hi\"\\\n\x01".to_vec()),
            Value::Date(2026, 11, 30, 1, 2, 3, 0),
            Value::NULL,
        ];
        let json = encode(&cart(), &row);
        assert_eq!(
            json,
            r#"{"id":1,"price":"12.34","notes":"say \"hi\"\\\n\u0001","created_at":"2026-11-30 01:02:03","quantity":null}"#
        );
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["notes"], "say \"hi\"\\\n\u{1}");
        assert_eq!(crate::arms::mysql_cdc::verify::row_id(json.as_bytes()), Some(1));
    }

    #[test]
    fn text_protocol_rows_encode_the_same_as_typed_ones() {
        let text = [
            Value::Bytes(b"1".to_vec()),
            Value::Bytes(b"12.34".to_vec()),
            Value::Bytes(b"n".to_vec()),
            Value::Bytes(b"2026-11-30 01:02:03".to_vec()),
            Value::Bytes(b"-7".to_vec()),
        ];
        let typed = [
            Value::Int(1),
            Value::Bytes(b"12.34".to_vec()),
            Value::Bytes(b"n".to_vec()),
            Value::Date(2026, 11, 30, 1, 2, 3, 0),
            Value::Int(-7),
        ];
        assert_eq!(encode(&cart(), &text), encode(&cart(), &typed));
        assert_eq!(id_of(&text[0]), Some(1));
        assert_eq!(id_of(&Value::UInt(9)), Some(9));
    }

    #[test]
    fn dates_times_fractions_floats_and_bad_utf8() {
        let e = RowEncoder::new(
            [("d", MYSQL_TYPE_DATE), ("t", MYSQL_TYPE_TIME2), ("ts", MYSQL_TYPE_TIMESTAMP2), ("f", MYSQL_TYPE_DOUBLE)],
            "d",
        );
        let json = encode(
            &e,
            &[
                Value::Date(2026, 1, 2, 0, 0, 0, 0),
                Value::Time(true, 1, 2, 3, 4, 5),
                Value::Date(2026, 1, 2, 3, 4, 5, 600),
                Value::Double(f64::NAN),
            ],
        );
        assert_eq!(json, r#"{"d":"2026-01-02","t":"-26:03:04.000005","ts":"2026-01-02 03:04:05.000600","f":null}"#);
        let mut out = Vec::new();
        write_str(&mut out, b"a\xffb");
        assert_eq!(String::from_utf8(out).unwrap(), "\"a\u{fffd}b\"");
    }

    #[test]
    fn only_valid_numbers_pass_through_unquoted() {
        for ok in ["0", "-1", "12.5", "1e-7", "-0.25"] {
            assert!(is_json_number(ok.as_bytes()), "{ok}");
        }
        for bad in ["", "-", "1.", "01", "abc", "1-", ".5"] {
            assert!(!is_json_number(bad.as_bytes()), "{bad}");
        }
    }
}
