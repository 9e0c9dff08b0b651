//! Wall-clock helpers (UTC), on the `time` crate.

/// `YYYYMMDDTHHMMSSZ` for a Unix time in seconds (UTC).
pub fn compact_utc(secs: u64) -> String {
    let t = utc(secs as i64);
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// `YYYY-MM-DD` for a Unix time in milliseconds (UTC).
pub fn date_utc(ms: u64) -> String {
    let t = utc((ms / 1000) as i64);
    format!("{:04}-{:02}-{:02}", t.year(), u8::from(t.month()), t.day())
}

fn utc(secs: i64) -> time::OffsetDateTime {
    time::OffsetDateTime::from_unix_timestamp(secs).unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_dates() {
        assert_eq!(super::compact_utc(0), "19700101T000000Z");
        assert_eq!(super::compact_utc(1_795_995_000), "20261129T233000Z");
        assert_eq!(super::date_utc(951_782_400_000), "2000-02-29");
    }
}
