//! Integrity of content: a deterministic sample of ids (1 in [`SAMPLE_EVERY`], and always a few) whose
//! every column is compared between the server's row and the message an arm wrote or read, whatever the
//! message's format: bare row JSON, Debezium's change event with or without the schema envelope (DECIMAL as
//! base64 bytes, DATETIME as epoch milliseconds), the unwrapped row, or the Connect envelope of rig D.
//!
//! The checks read values the way a consumer of the message would (a DECIMAL's scale from the schema, a
//! timestamp's unit from its logical type), independently of the arms' own encoders.

use std::collections::BTreeMap;

use base64::Engine as _;
use mysql_async::Value as Sql;
use mysql_async::consts::ColumnType;
use serde_json::{Map, Value as Json};

/// One id in this many is compared column by column (`id % SAMPLE_EVERY == 1`).
pub const SAMPLE_EVERY: i64 = 1000;
/// How many mismatches the method string quotes.
const QUOTED: usize = 3;

/// Whether `id` is in the sample of a run of `rows` ids: 1 in [`SAMPLE_EVERY`], ids 2 and 3 and the last,
/// so that even a small run compares a few.
pub fn is_sampled(id: i64, rows: u64) -> bool {
    id >= 1 && (id as u64) <= rows && (id % SAMPLE_EVERY == 1 || id <= 3 || id as u64 == rows)
}

/// The sampled ids of a run of `rows`, ascending.
pub fn sample_ids(rows: u64) -> Vec<i64> {
    let mut ids: Vec<i64> = (0..=rows as i64 / SAMPLE_EVERY).map(|k| k * SAMPLE_EVERY + 1).collect();
    ids.extend([2, 3, rows as i64]);
    ids.retain(|&id| is_sampled(id, rows));
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// A server value, typed by its column.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Int(i128),
    Double(f64),
    /// DECIMAL as the server prints it (`-12.30`).
    Decimal(String),
    Text(String),
    /// DATETIME/TIMESTAMP as microseconds since the epoch, the wall-clock value read as UTC.
    DateTime(i64),
    /// DATE as days since the epoch.
    Date(i64),
}

impl Cell {
    /// A value read through the binary protocol (typed) or the text protocol (bytes), by its column's type.
    pub fn from_sql(value: &Sql, column: ColumnType) -> Cell {
        use ColumnType::*;
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        match (value, column) {
            (Sql::NULL, _) => Cell::Null,
            (Sql::Int(i), _) => Cell::Int(i128::from(*i)),
            (Sql::UInt(u), _) => Cell::Int(i128::from(*u)),
            (Sql::Float(f), _) => Cell::Double(f64::from(*f)),
            (Sql::Double(f), _) => Cell::Double(*f),
            (Sql::Date(y, mo, d, ..), MYSQL_TYPE_DATE | MYSQL_TYPE_NEWDATE) => {
                Cell::Date(days_from_civil(i64::from(*y), i64::from(*mo), i64::from(*d)))
            }
            (Sql::Date(y, mo, d, h, mi, s, us), _) => {
                let days = days_from_civil(i64::from(*y), i64::from(*mo), i64::from(*d));
                let secs = days * 86_400 + i64::from(*h) * 3600 + i64::from(*mi) * 60 + i64::from(*s);
                Cell::DateTime(secs * 1_000_000 + i64::from(*us))
            }
            (Sql::Bytes(b), MYSQL_TYPE_DECIMAL | MYSQL_TYPE_NEWDECIMAL) => Cell::Decimal(text(b)),
            (
                Sql::Bytes(b),
                MYSQL_TYPE_TINY | MYSQL_TYPE_SHORT | MYSQL_TYPE_LONG | MYSQL_TYPE_LONGLONG | MYSQL_TYPE_INT24,
            ) => text(b).parse().map_or_else(|_| Cell::Text(text(b)), Cell::Int),
            (Sql::Bytes(b), MYSQL_TYPE_FLOAT | MYSQL_TYPE_DOUBLE) => {
                text(b).parse().map_or_else(|_| Cell::Text(text(b)), Cell::Double)
            }
            (
                Sql::Bytes(b),
                MYSQL_TYPE_DATETIME | MYSQL_TYPE_DATETIME2 | MYSQL_TYPE_TIMESTAMP | MYSQL_TYPE_TIMESTAMP2,
            ) => parse_datetime_us(&text(b)).map_or_else(|| Cell::Text(text(b)), Cell::DateTime),
            (Sql::Bytes(b), MYSQL_TYPE_DATE | MYSQL_TYPE_NEWDATE) => {
                parse_date_days(&text(b)).map_or_else(|| Cell::Text(text(b)), Cell::Date)
            }
            (Sql::Bytes(b), _) => Cell::Text(text(b)),
            (other, _) => Cell::Text(other.as_sql(true)),
        }
    }

    /// Whether `json` (with its Connect field schema, if the message carries one) holds this value.
    pub fn matches(&self, json: &Json, field: Option<&Json>) -> bool {
        let logical = field.and_then(|f| f["name"].as_str()).unwrap_or("");
        match (self, json) {
            (Cell::Null, Json::Null) => true,
            (Cell::Null, _) | (_, Json::Null) => false,
            (Cell::Int(i), Json::Number(n)) => {
                n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from)) == Some(*i)
            }
            (Cell::Double(x), Json::Number(n)) => n.as_f64() == Some(*x),
            (Cell::Double(x), Json::String(s)) => s.parse::<f64>().ok() == Some(*x),
            (Cell::Decimal(d), Json::Number(n)) => n.as_f64().is_some_and(|f| d.parse::<f64>().ok() == Some(f)),
            (Cell::Decimal(d), Json::String(s)) => {
                let Some((expected, column_scale)) = Decimal::parse(d) else { return false };
                match Decimal::parse(s) {
                    Some((found, _)) => found == expected,
                    // Connect's Decimal: the unscaled value's two's complement bytes, base64; its scale is in
                    // the schema, or, without one, the column's own.
                    None => {
                        let scale = field
                            .and_then(|f| f["parameters"]["scale"].as_str())
                            .and_then(|s| s.parse().ok())
                            .unwrap_or(column_scale);
                        Decimal::from_base64(s, scale) == Some(expected)
                    }
                }
            }
            (Cell::Text(t), Json::String(s)) => t == s,
            (Cell::DateTime(us), Json::String(s)) => parse_datetime_us(s) == Some(*us),
            (Cell::DateTime(us), Json::Number(n)) => {
                let Some(n) = n.as_i64() else { return false };
                match logical {
                    "io.debezium.time.Timestamp" | "org.apache.kafka.connect.data.Timestamp" => {
                        n.checked_mul(1000) == Some(*us)
                    }
                    "io.debezium.time.MicroTimestamp" => n == *us,
                    "io.debezium.time.NanoTimestamp" => us.checked_mul(1000) == Some(n),
                    // Schemaless: milliseconds (Debezium's default for DATETIME(0..3)) or microseconds.
                    _ => n.checked_mul(1000) == Some(*us) || n == *us,
                }
            }
            (Cell::Date(days), Json::Number(n)) => n.as_i64() == Some(*days),
            (Cell::Date(days), Json::String(s)) => parse_date_days(s) == Some(*days),
            _ => false,
        }
    }
}

impl std::fmt::Display for Cell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cell::Null => write!(f, "NULL"),
            Cell::Int(i) => write!(f, "{i}"),
            Cell::Double(x) => write!(f, "{x}"),
            Cell::Decimal(d) => write!(f, "{d}"),
            Cell::Text(t) => write!(f, "{:?}", shorten(t)),
            Cell::DateTime(us) => write!(f, "{us} µs since the epoch"),
            Cell::Date(days) => write!(f, "{days} days since the epoch"),
        }
    }
}

/// A server row: its columns in table order.
pub type Row = Vec<(String, Cell)>;

/// A row read from the server, typed by its columns.
pub fn row_of(row: &mysql_async::Row) -> Row {
    row.columns_ref()
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let cell = row.as_ref(i).map_or(Cell::Null, |v| Cell::from_sql(v, c.column_type()));
            (c.name_str().into_owned(), cell)
        })
        .collect()
}

/// The row a message carries, and the Connect schemas of its fields if the message has them.
pub struct MessageRow<'a> {
    pub values: &'a Map<String, Json>,
    pub fields: Option<&'a [Json]>,
}

/// The row of a Connect or unwrapped envelope (`{"schema":..,"payload":{row}}`), of Debezium's change event
/// with (`{"schema":..,"payload":{"after":{row},..}}`) or without the envelope (`{"after":{row},..}`), or
/// of bare row JSON.
pub fn message_row(message: &Json) -> Option<MessageRow<'_>> {
    let obj = message.as_object()?;
    let (body, fields) = match obj.get("payload") {
        Some(payload) => (payload.as_object()?, obj.get("schema").and_then(|s| s["fields"].as_array())),
        None => (obj, None),
    };
    match body.get("after") {
        Some(after) => {
            let after_fields =
                fields.and_then(|fs| fs.iter().find(|f| f["field"] == "after")).and_then(|f| f["fields"].as_array());
            Some(MessageRow { values: after.as_object()?, fields: after_fields.map(Vec::as_slice) })
        }
        None => Some(MessageRow { values: body, fields: fields.map(Vec::as_slice) }),
    }
}

/// The first column of `row` that `message` does not hold as the server has it.
pub fn first_difference(row: &Row, message: &[u8]) -> Option<Difference> {
    let differ =
        |column: &str, server: String, message: String| Some(Difference { column: column.to_owned(), server, message });
    let Ok(json) = serde_json::from_slice::<Json>(message) else {
        return differ(
            "(message)",
            "a row".into(),
            format!("not JSON: {:?}", shorten(&String::from_utf8_lossy(message))),
        );
    };
    let Some(MessageRow { values, fields }) = message_row(&json) else {
        return differ("(message)", "a row".into(), format!("no row object in {}", shorten(&json.to_string())));
    };
    for (name, cell) in row {
        let field = fields.and_then(|fs| fs.iter().find(|f| f["field"] == name.as_str()));
        match values.get(name) {
            None => return differ(name, cell.to_string(), "no such field".into()),
            Some(v) if !cell.matches(v, field) => return differ(name, cell.to_string(), shorten(&v.to_string())),
            Some(_) => {}
        }
    }
    None
}

/// A column whose value differs, as each side has it.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    pub column: String,
    pub server: String,
    pub message: String,
}

/// What the comparison of a sample found.
#[derive(Debug, Clone, Default)]
pub struct ContentReport {
    /// What was compared with what, e.g. `the messages with the rows of benchdb.cart`.
    pub what: String,
    pub sampled: usize,
    /// Sampled ids compared column by column.
    pub compared: usize,
    pub columns: Vec<String>,
    /// `id 1001 column price: ...`, every difference and every sampled id one side lacks.
    pub failures: Vec<String>,
}

impl ContentReport {
    pub fn ok(&self) -> bool {
        self.failures.is_empty() && self.compared > 0 && self.compared == self.sampled
    }

    /// For the integrity method.
    pub fn describe(&self) -> String {
        let head = format!(
            "content: {} of {} sampled ids (1 in {SAMPLE_EVERY}, and ids 2, 3 and the last) compared column by \
             column ({}), {}",
            self.compared,
            self.sampled,
            self.columns.join(", "),
            self.what
        );
        if self.ok() {
            return format!("{head}: all equal");
        }
        if self.failures.is_empty() {
            return format!("{head}: nothing compared");
        }
        let quoted: Vec<&str> = self.failures.iter().take(QUOTED).map(String::as_str).collect();
        let more = self.failures.len().saturating_sub(QUOTED);
        let tail = if more > 0 { format!(" and {more} more") } else { String::new() };
        format!("{head}: {} differ: {}{tail}", self.failures.len(), quoted.join("; "))
    }
}

/// Compare the sampled ids: the server's rows (`server`, by id: more than one where the table holds an id
/// twice) against the messages (`messages`, by id). `labels` name the two sides in failures, e.g.
/// `("the server", "the message")`.
pub fn compare_sample(
    what: &str,
    sample: &[i64],
    server: &BTreeMap<i64, Vec<Row>>,
    messages: &BTreeMap<i64, Vec<u8>>,
    labels: (&str, &str),
) -> ContentReport {
    let mut report = ContentReport { what: what.to_owned(), sampled: sample.len(), ..Default::default() };
    for &id in sample {
        let (rows, message) = (server.get(&id), messages.get(&id));
        let (Some(rows), Some(message)) = (rows, message) else {
            let lacking = if rows.is_none() { labels.0 } else { labels.1 };
            report.failures.push(format!("id {id}: {lacking} has no row"));
            continue;
        };
        report.compared += 1;
        if report.columns.is_empty()
            && let Some(first) = rows.first()
        {
            report.columns = first.iter().map(|(name, _)| name.clone()).collect();
        }
        for row in rows {
            if let Some(d) = first_difference(row, message) {
                report.failures.push(format!(
                    "id {id} column {}: {} has {}, {} has {}",
                    d.column, labels.0, d.server, labels.1, d.message
                ));
            }
        }
    }
    report
}

/// An exact decimal: `unscaled / 10^scale`, normalized (no trailing zeros in the fraction).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Decimal {
    unscaled: i128,
    scale: u32,
}

impl Decimal {
    fn new(mut unscaled: i128, mut scale: u32) -> Decimal {
        while scale > 0 && unscaled % 10 == 0 {
            unscaled /= 10;
            scale -= 1;
        }
        Decimal { unscaled, scale }
    }

    /// `-12.30`, `5`, `.5`, with the scale as written (`-12.30`: 2); None for anything else.
    fn parse(s: &str) -> Option<(Decimal, u32)> {
        let (negative, digits) = match s.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, s.strip_prefix('+').unwrap_or(s)),
        };
        let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
        if int.is_empty() && frac.is_empty() || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
            return None;
        }
        let magnitude: i128 = format!("{int}{frac}").parse().ok()?;
        let scale = u32::try_from(frac.len()).ok()?;
        Some((Decimal::new(if negative { -magnitude } else { magnitude }, scale), scale))
    }

    /// Connect's Decimal bytes: big-endian two's complement of the unscaled value.
    fn from_base64(s: &str, scale: u32) -> Option<Decimal> {
        let bytes = base64::engine::general_purpose::STANDARD.decode(s).ok()?;
        if bytes.is_empty() || bytes.len() > 16 {
            return None;
        }
        let fill = if bytes[0] & 0x80 != 0 { 0xff } else { 0 };
        let mut wide = [fill; 16];
        wide[16 - bytes.len()..].copy_from_slice(&bytes);
        Some(Decimal::new(i128::from_be_bytes(wide), scale))
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `YYYY-MM-DD`.
fn parse_date_days(s: &str) -> Option<i64> {
    let mut parts = s.splitn(3, '-');
    let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    Some(days_from_civil(y.parse().ok()?, m.parse().ok()?, d.parse().ok()?))
}

/// `YYYY-MM-DD HH:MM:SS[.ffffff]` (the server's and the bare row's) or `YYYY-MM-DDTHH:MM:SS[.fff][Z]` (ISO).
fn parse_datetime_us(s: &str) -> Option<i64> {
    let s = s.strip_suffix('Z').unwrap_or(s);
    let (date, time) = s.split_once([' ', 'T'])?;
    let days = parse_date_days(date)?;
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut t = hms.splitn(3, ':');
    let (h, mi, sec): (i64, i64, i64) = (t.next()?.parse().ok()?, t.next()?.parse().ok()?, t.next()?.parse().ok()?);
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let micros: i64 = if frac.is_empty() { 0 } else { format!("{frac:0<6}")[..6].parse().ok()? };
    Some((days * 86_400 + h * 3600 + mi * 60 + sec) * 1_000_000 + micros)
}

fn shorten(s: &str) -> String {
    const MAX: usize = 60;
    match s.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}...", &s[..cut]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rig B's row 1001 as the server has it: `price` DECIMAL(10,2) 12.30, `created_at` DATETIME.
    fn cart_row() -> Row {
        vec![
            ("id".into(), Cell::Int(1001)),
            ("user_id".into(), Cell::Int(7)),
            ("price".into(), Cell::Decimal("12.30".into())),
            ("status".into(), Cell::Text("shipped".into())),
            ("notes".into(), Cell::Null),
            ("created_at".into(), Cell::from_sql(&Sql::Date(2025, 3, 4, 5, 6, 7, 0), ColumnType::MYSQL_TYPE_DATETIME)),
        ]
    }

    const ENVELOPE: &str = r#"{"schema":{"type":"struct","fields":[{"type":"struct","fields":[],"field":"before"},
        {"type":"struct","fields":[{"type":"int32","field":"id"},{"type":"int32","field":"user_id"},
        {"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"2"},"field":"price"},
        {"type":"string","field":"status"},{"type":"string","field":"notes"},
        {"type":"int64","name":"io.debezium.time.Timestamp","field":"created_at"}],"field":"after"}]},
        "payload":{"before":null,"after":{"id":1001,"user_id":7,"price":"BM4=","status":"shipped","notes":null,
        "created_at":1741064767000},"source":{"db":"benchdb"},"op":"r"}}"#;

    #[test]
    fn the_sample_is_one_id_in_a_thousand_and_always_a_few() {
        assert_eq!(sample_ids(2000), vec![1, 2, 3, 1001, 2000]);
        assert_eq!(sample_ids(3), vec![1, 2, 3]);
        assert_eq!(sample_ids(1), vec![1]);
        let ids = sample_ids(20_000);
        assert_eq!(ids.len(), 23);
        assert_eq!(ids, (1..=20_000).filter(|&id| is_sampled(id, 20_000)).collect::<Vec<_>>());
        assert!(!is_sampled(0, 10) && !is_sampled(11, 10));
    }

    #[test]
    fn a_row_matches_every_format_the_arms_write() {
        let row = cart_row();
        let formats = [
            ("bare row JSON", r#"{"id":1001,"user_id":7,"price":"12.30","status":"shipped","notes":null,"created_at":"2025-03-04 05:06:07"}"#.to_owned()),
            ("Debezium envelope", ENVELOPE.to_owned()),
            (
                "Debezium without schemas (base64, the column's scale)",
                r#"{"before":null,"after":{"id":1001,"user_id":7,"price":"BM4=","status":"shipped","notes":null,"created_at":1741064767000},"op":"c"}"#.to_owned(),
            ),
            (
                "unwrapped row, ISO time, decimal string",
                r#"{"id":1001,"user_id":7,"price":"12.3","status":"shipped","notes":null,"created_at":"2025-03-04T05:06:07Z","__op":"r"}"#.to_owned(),
            ),
            (
                "unwrapped row with schemas, microseconds",
                r#"{"schema":{"fields":[{"field":"created_at","name":"io.debezium.time.MicroTimestamp"}]},"payload":{"id":1001,"user_id":7,"price":12.3,"status":"shipped","notes":null,"created_at":1741064767000000}}"#.to_owned(),
            ),
        ];
        for (what, message) in formats {
            assert_eq!(first_difference(&row, message.as_bytes()), None, "{what}");
        }
    }

    #[test]
    fn a_changed_column_is_named() {
        let row = cart_row();
        let cases = [
            (ENVELOPE.replace("BM4=", "BNI="), "price"),
            (ENVELOPE.replace("\"shipped\"", "\"pending\""), "status"),
            (ENVELOPE.replace("1741064767000", "1741064768000"), "created_at"),
            (ENVELOPE.replace("\"notes\":null", "\"notes\":\"\""), "notes"),
            (ENVELOPE.replace("\"user_id\":7,", ""), "user_id"),
        ];
        for (message, column) in cases {
            let d = first_difference(&row, message.as_bytes()).expect(column);
            assert_eq!(d.column, column, "{d:?}");
        }
        let d = first_difference(&row, b"{\"id\":1001,\"user_id\":7,\"price\":\"12.31\"}").unwrap();
        assert_eq!((d.column.as_str(), d.server.as_str(), d.message.as_str()), ("price", "12.30", "\"12.31\""));
        assert_eq!(first_difference(&row, b"not json").unwrap().column, "(message)");
    }

    #[test]
    fn decimals_compare_by_value_whatever_their_encoding() {
        let negative = Cell::Decimal("-12.34".into());
        let field = serde_json::json!({"name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "2"}});
        assert!(negative.matches(&Json::from("+y4="), Some(&field)));
        assert!(negative.matches(&Json::from("-12.340"), None));
        assert!(!negative.matches(&Json::from("12.34"), None));
        assert!(
            !Cell::Decimal("12.30".into())
                .matches(&Json::from("BM4="), Some(&serde_json::json!({"parameters": {"scale": "1"}})))
        );
        assert!(Cell::Decimal("0.00".into()).matches(&Json::from("0"), None));
    }

    #[test]
    fn the_sample_report_names_the_id_and_column_of_each_difference() {
        let server = BTreeMap::from([(1, vec![cart_row()]), (2, vec![cart_row()])]);
        let messages = BTreeMap::from([(1, ENVELOPE.replace("shipped", "lost").into_bytes()), (3, b"{}".to_vec())]);
        let r = compare_sample(
            "the messages with benchdb.cart",
            &[1, 2, 3],
            &server,
            &messages,
            ("the server", "the message"),
        );
        assert!(!r.ok());
        let text = r.describe();
        assert!(text.contains("id 1 column status: the server has \"shipped\", the message has \"lost\""), "{text}");
        assert!(
            text.contains("id 2: the message has no row") && text.contains("id 3: the server has no row"),
            "{text}"
        );
        let good = compare_sample("x", &[1], &server, &BTreeMap::from([(1, ENVELOPE.as_bytes().to_vec())]), ("a", "b"));
        assert!(good.ok(), "{}", good.describe());
        assert!(good.describe().ends_with("all equal") && good.describe().contains("(id, user_id, price"));
    }
}
