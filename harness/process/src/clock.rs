//! The wall clock, in the units records and logs use, and the host's monotonic clock, which every process on it
//! reads alike (the paced workload's intended send times, read back by a consumer in another process).

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Microseconds since the Unix epoch (durability's ledgers: each send and acknowledgement).
pub fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

/// Nanoseconds since the Unix epoch (envelope timestamps, and a seed that differs from run to run).
pub fn now_ns() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}

/// Milliseconds since the Unix epoch, signed: what Kafka's message timestamps are compared with.
pub fn now_ms_i64() -> i64 {
    now_ms() as i64
}

/// Milliseconds since the Unix epoch with sub-millisecond precision (for clocks that compare with a broker's).
pub fn now_ms_f64() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

/// Nanoseconds of CLOCK_MONOTONIC: one clock for every process on this host, never stepped by NTP.
pub fn monotonic_ns() -> u64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC is always there");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_monotonic_clock_moves_forward_with_real_time() {
        let a = super::monotonic_ns();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let b = super::monotonic_ns();
        assert!((20_000_000..5_000_000_000).contains(&(b - a)), "{a} -> {b}");
    }

    #[test]
    fn both_clocks_agree_to_the_millisecond() {
        let (a, b) = (super::now_ms(), super::now_ms_f64());
        assert!((b - a as f64).abs() < 50.0, "{a} vs {b}");
        assert!(a > 1_700_000_000_000, "after 2023: {a}");
    }
}
