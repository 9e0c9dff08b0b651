//! Column values the way Debezium's MariaDB connector hands them to Kafka Connect's JsonConverter with its
//! default settings (`time.precision.mode=adaptive_time_microseconds`, `decimal.handling.mode=precise`):
//! DATE as days since the epoch, DATETIME(0-3) as epoch milliseconds, DATETIME(4-6) as epoch microseconds
//! (DATETIME has no time zone: Debezium reads it as UTC, and so does this), TIME as microseconds, DECIMAL as
//! the base64 of its unscaled value's two's-complement big-endian bytes (Java's `BigInteger.toByteArray`).
//! Checked against messages the real connector wrote (the envelope module's tests).

use std::io::Write as _;

use base64::Engine as _;
use mysql_async::Value;

/// A value that cannot be written the way the column asks.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ValueError(pub String);

/// How one of these columns is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Temporal {
    /// DATE: `int32` days since 1970-01-01 (`io.debezium.time.Date`).
    EpochDay,
    /// DATETIME(0-3): `int64` ms since the epoch (`io.debezium.time.Timestamp`).
    EpochMilli,
    /// DATETIME(4-6): `int64` µs since the epoch (`io.debezium.time.MicroTimestamp`).
    EpochMicro,
    /// TIME: `int64` µs (`io.debezium.time.MicroTime`).
    MicroTime,
}

/// Days from 1970-01-01 to `y-m-d` in the proleptic Gregorian calendar (H. Hinnant's `days_from_civil`).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = (if y >= 0 { y } else { y - 399 }) / 400;
    let yoe = y - era * 400;
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Writes `value` of a temporal column as a JSON number (`null` for NULL and for MariaDB's zero date, which
/// Debezium also writes as null in an optional column).
pub fn write_temporal(out: &mut Vec<u8>, how: Temporal, value: &Value) -> Result<(), ValueError> {
    let parts = match value {
        Value::NULL => None,
        Value::Date(y, mo, d, h, mi, s, us) => Some((i64::from(*y), *mo, *d, *h, *mi, *s, *us)),
        Value::Time(negative, days, h, mi, s, us) => {
            let micros = (((i64::from(*days) * 24 + i64::from(*h)) * 60 + i64::from(*mi)) * 60 + i64::from(*s))
                * 1_000_000
                + i64::from(*us);
            let _ = write!(out, "{}", if *negative { -micros } else { micros });
            return Ok(());
        }
        Value::Bytes(text) => parse_datetime(text),
        other => return Err(ValueError(format!("{other:?} is not a date or time"))),
    };
    let Some((y, mo, d, h, mi, s, us)) = parts.filter(|&(y, mo, d, ..)| y != 0 || mo != 0 || d != 0) else {
        out.extend_from_slice(b"null");
        return Ok(());
    };
    let days = days_from_civil(y, u32::from(mo), u32::from(d));
    let secs = days * 86_400 + i64::from(h) * 3_600 + i64::from(mi) * 60 + i64::from(s);
    let n = match how {
        Temporal::EpochDay => days,
        Temporal::EpochMilli => secs * 1_000 + i64::from(us / 1_000),
        Temporal::EpochMicro => secs * 1_000_000 + i64::from(us),
        Temporal::MicroTime => return Err(ValueError("a date where a TIME was expected".into())),
    };
    let _ = write!(out, "{n}");
    Ok(())
}

type Parts = (i64, u8, u8, u8, u8, u8, u32);

/// `YYYY-MM-DD[ HH:MM:SS[.ffffff]]` as the text protocol prints DATE and DATETIME.
fn parse_datetime(b: &[u8]) -> Option<Parts> {
    let s = std::str::from_utf8(b).ok()?;
    let (date, time) = s.split_once(' ').unwrap_or((s, "00:00:00"));
    let mut d = date.splitn(3, '-').map(str::parse::<u32>);
    let (y, mo, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut t = hms.splitn(3, ':').map(str::parse::<u8>);
    let (h, mi, sec) = (t.next()?.ok()?, t.next()?.ok()?, t.next()?.ok()?);
    let us = if frac.is_empty() { 0 } else { format!("{frac:0<6}").get(..6)?.parse().ok()? };
    Some((i64::from(y), u8::try_from(mo).ok()?, u8::try_from(day).ok()?, h, mi, sec, us))
}

/// Writes a DECIMAL (as the server prints it, e.g. `-12.30`) as Debezium's `precise` mode: the JSON string
/// of the base64 of the unscaled value at `scale` in the fewest two's-complement big-endian bytes.
pub fn write_decimal_bytes(out: &mut Vec<u8>, scale: u8, value: &Value) -> Result<(), ValueError> {
    let text = match value {
        Value::NULL => {
            out.extend_from_slice(b"null");
            return Ok(());
        }
        Value::Bytes(b) => std::str::from_utf8(b).map_err(|_| ValueError("a DECIMAL that is not text".into()))?,
        other => return Err(ValueError(format!("{other:?} is not a DECIMAL"))),
    };
    let unscaled = unscaled(text, scale).ok_or_else(|| ValueError(format!("DECIMAL {text:?} at scale {scale}")))?;
    out.push(b'"');
    let bytes = twos_complement(unscaled);
    let mut b64 = [0u8; 24];
    let n = base64::engine::general_purpose::STANDARD
        .encode_slice(&bytes, &mut b64)
        .map_err(|e| ValueError(format!("base64 of a DECIMAL: {e}")))?;
    out.extend_from_slice(&b64[..n]);
    out.push(b'"');
    Ok(())
}

/// `text` as an integer count of `10^-scale` (the fraction padded with zeros; more digits than `scale`
/// would lose precision, so they are refused).
fn unscaled(text: &str, scale: u8) -> Option<i128> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if int.is_empty()
        || frac.len() > usize::from(scale)
        || !(int.bytes().chain(frac.bytes())).all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let mut n: i128 = 0;
    for c in int.bytes().chain(frac.bytes()) {
        n = n.checked_mul(10)?.checked_add(i128::from(c - b'0'))?;
    }
    n = n.checked_mul(10i128.checked_pow(u32::from(scale) - frac.len() as u32)?)?;
    Some(if negative { -n } else { n })
}

/// The fewest big-endian bytes holding `n` in two's complement (at least one), as Java's
/// `BigInteger.toByteArray` gives them.
fn twos_complement(n: i128) -> Vec<u8> {
    let bytes = n.to_be_bytes();
    let fill = if n < 0 { 0xff } else { 0x00 };
    let mut start = 0;
    // A leading byte may go when it is all sign and the next byte's top bit carries the same sign.
    while start < bytes.len() - 1 && bytes[start] == fill && (bytes[start + 1] & 0x80 == fill & 0x80) {
        start += 1;
    }
    bytes[start..].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temporal(how: Temporal, v: Value) -> String {
        let mut out = Vec::new();
        write_temporal(&mut out, how, &v).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn decimal(scale: u8, text: &str) -> String {
        let mut out = Vec::new();
        write_decimal_bytes(&mut out, scale, &Value::Bytes(text.as_bytes().to_vec())).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn datetimes_are_epoch_milliseconds_as_debezium_wrote_them() {
        // The values Debezium 3.5 wrote for these DATETIMEs here (UTC, as it reads DATETIME).
        assert_eq!(temporal(Temporal::EpochMilli, Value::Date(2026, 3, 4, 5, 6, 7, 0)), "1772600767000");
        assert_eq!(temporal(Temporal::EpochMilli, Value::Date(1999, 12, 31, 23, 59, 59, 0)), "946684799000");
        assert_eq!(temporal(Temporal::EpochMilli, Value::Date(1969, 12, 31, 23, 59, 59, 0)), "-1000");
        assert_eq!(temporal(Temporal::EpochMilli, Value::Date(2026, 1, 1, 0, 0, 0, 0)), "1767225600000");
        assert_eq!(temporal(Temporal::EpochMilli, Value::Bytes(b"2026-03-04 05:06:07".to_vec())), "1772600767000");
        assert_eq!(temporal(Temporal::EpochMicro, Value::Date(1970, 1, 1, 0, 0, 1, 5)), "1000005");
        assert_eq!(temporal(Temporal::EpochDay, Value::Date(1970, 1, 2, 0, 0, 0, 0)), "1");
        assert_eq!(temporal(Temporal::EpochDay, Value::Bytes(b"1969-12-31".to_vec())), "-1");
        assert_eq!(temporal(Temporal::MicroTime, Value::Time(true, 1, 2, 3, 4, 5)), "-93784000005");
        assert_eq!(temporal(Temporal::EpochMilli, Value::NULL), "null");
        assert_eq!(temporal(Temporal::EpochMilli, Value::Date(0, 0, 0, 0, 0, 0, 0)), "null", "the zero date");
        assert!(write_temporal(&mut Vec::new(), Temporal::EpochMilli, &Value::Int(3)).is_err());
    }

    #[test]
    fn decimals_are_the_base64_of_their_unscaled_twos_complement_bytes() {
        // Debezium 3.5's `precise` output for these DECIMAL(10,2) values, read back from its topic here.
        assert_eq!(decimal(2, "12.34"), "\"BNI=\"");
        assert_eq!(decimal(2, "999.99"), "\"AYaf\"");
        assert_eq!(decimal(2, "1.00"), "\"ZA==\"");
        assert_eq!(decimal(2, "128.00"), "\"MgA=\"");
        assert_eq!(decimal(2, "-0.50"), "\"zg==\"");
        assert_eq!(decimal(2, "0.00"), "\"AA==\"");
        assert_eq!(decimal(2, "1.5"), "\"AJY=\"", "a short fraction is padded to the scale (150)");
        assert_eq!(twos_complement(-128), vec![0x80]);
        assert_eq!(twos_complement(-129), vec![0xff, 0x7f]);
        assert_eq!(twos_complement(255), vec![0x00, 0xff]);
        let mut out = Vec::new();
        assert!(write_decimal_bytes(&mut out, 2, &Value::Bytes(b"1.234".to_vec())).is_err(), "precision lost");
        assert!(write_decimal_bytes(&mut out, 2, &Value::Bytes(b"1e5".to_vec())).is_err());
    }
}
