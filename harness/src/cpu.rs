//! CPU time, to report CPU seconds per million records: this process's own, that of the tool processes it ran
//! and waited for (read through the process layer), and the environment's brokers', so that a client that is
//! fast because it burns the broker's share shows as such.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use streamlab_process::procfs::{host_busy_seconds, host_cpus, pid_cpu_seconds};
use streamlab_record::{EnvDescriptor, HOST_CORES, Metric};

/// A span shorter than this holds too few of /proc/stat's 10 ms ticks to read the host's cores from.
const HOST_SPAN_MIN: Duration = Duration::from_millis(500);

/// The whole host's CPU over one span: started where a record's measurement starts, finished where it ends.
#[derive(Debug, Clone, Copy)]
pub struct HostSpan {
    started: Instant,
    busy_s: Option<f64>,
}

/// What [`HostSpan::finish`] read: the span's wall time and the busy seconds of every CPU over it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostReading {
    pub wall_s: f64,
    pub busy_s: Option<f64>,
    pub cpus: Option<usize>,
}

impl HostSpan {
    pub fn start() -> HostSpan {
        HostSpan { started: Instant::now(), busy_s: host_busy_seconds() }
    }

    pub fn finish(&self) -> HostReading {
        let wall_s = self.started.elapsed().as_secs_f64();
        let busy_s = host_busy_seconds().zip(self.busy_s).map(|(end, start)| end - start);
        HostReading { wall_s, busy_s, cpus: host_cpus() }
    }
}

impl HostReading {
    /// Cores busy on average over the span; none where it could not be read or is too short to read. Counted over
    /// the span itself, it cannot exceed the host's CPUs but by the ticks at its two edges, which are clamped off.
    pub fn cores(&self) -> Option<f64> {
        let cpus = self.cpus? as f64;
        (self.wall_s >= HOST_SPAN_MIN.as_secs_f64()).then_some(())?;
        Some((self.busy_s? / self.wall_s).clamp(0.0, cpus))
    }

    /// `cpu_s` of one process (or group) over the same span, as cores; at most the host's.
    pub fn cores_of(&self, cpu_s: f64) -> Option<f64> {
        let cpus = self.cpus? as f64;
        (self.wall_s >= HOST_SPAN_MIN.as_secs_f64() && cpu_s.is_finite())
            .then(|| (cpu_s / self.wall_s).clamp(0.0, cpus))
    }
}

/// CPU seconds so far of every broker process of the environment (each broker of a cluster); `None` where the
/// brokers are not this machine's processes (an external cluster) or one of them cannot be read.
pub fn brokers_cpu_seconds(env: &EnvDescriptor) -> Option<f64> {
    pids_cpu_seconds(&env.kafka.pids())
}

fn pids_cpu_seconds(pids: &[u32]) -> Option<f64> {
    if pids.is_empty() {
        return None;
    }
    pids.iter().map(|&pid| pid_cpu_seconds(pid)).sum()
}

/// The brokers' CPU over a span: read at its start, then [`BrokersCpu::spent`] at its end.
#[derive(Debug, Clone)]
pub struct BrokersCpu {
    pids: Vec<u32>,
    start: Option<f64>,
}

impl BrokersCpu {
    pub fn start(env: &EnvDescriptor) -> BrokersCpu {
        let pids = env.kafka.pids();
        let start = pids_cpu_seconds(&pids);
        BrokersCpu { pids, start }
    }

    /// CPU seconds the brokers spent since the start; `None` if either reading failed.
    pub fn spent(&self) -> Option<f64> {
        Some(pids_cpu_seconds(&self.pids)? - self.start?)
    }
}

/// `cpu` seconds as a reading of a span that handled `records`: none if it is not finite (the reading failed), or
/// if it is 0 s while records moved (the kernel counts CPU in 10 ms ticks, so a short span reads 0 whatever it did).
pub fn reading(cpu: f64, records: u64) -> Option<f64> {
    (cpu.is_finite() && (cpu > 0.0 || (cpu == 0.0 && records == 0))).then_some(cpu)
}

/// The CPU metrics of `records` handled with `client_cpu_s` by the client and `broker_cpu_s` by the brokers: each
/// side's seconds and per million records, both together per million records, and records per CPU second of every
/// process. A side without a reading (an external cluster's brokers are not read; a client reading that failed is
/// not finite) adds nothing, never a zero, and then neither do the totals. Nor does a side that read 0 s while
/// records moved: the kernel counts CPU in 10 ms ticks, so a span shorter than one reads 0 whatever was done.
///
/// With `host`, the reading of the same span, it adds the host's busy cores ([`HOST_CORES`]) and each side's cores.
pub fn add_cpu(
    metrics: &mut BTreeMap<String, Metric>,
    records: u64,
    client_cpu_s: f64,
    broker_cpu_s: Option<f64>,
    host: Option<HostReading>,
) {
    let millions = (records > 0).then_some(records as f64 / 1e6);
    let client = reading(client_cpu_s, records);
    let broker = broker_cpu_s.and_then(|cpu| reading(cpu, records));
    if let Some(h) = &host {
        add_host_cores(metrics, h);
    }
    for (side, cpu) in [("client", client), ("broker", broker)] {
        let Some(cpu) = cpu else { continue };
        metrics.insert(format!("{side}_cpu_s"), Metric::new(cpu, "CPU s", false));
        if let Some(cores) = host.and_then(|h| h.cores_of(cpu)) {
            metrics.insert(format!("{side}_cores"), Metric::new(cores, "cores over the measured span", false));
        }
        if let Some(m) = millions {
            metrics.insert(format!("{side}_cpu_s_per_m_records"), Metric::new(cpu / m, "CPU s / 1M records", false));
        }
    }
    let (Some(client), Some(broker), Some(m)) = (client, broker, millions) else { return };
    let total = client + broker;
    metrics.insert("total_cpu_s_per_m_records".into(), Metric::new(total / m, "CPU s / 1M records", false));
    if total > 0.0 {
        metrics.insert("records_per_cpu_s".into(), Metric::new(records as f64 / total, "records / CPU s", true));
    }
}

/// The host's busy cores over a record's span, where they could be read.
pub fn add_host_cores(metrics: &mut BTreeMap<String, Metric>, host: &HostReading) {
    if let Some(cores) = host.cores() {
        metrics.insert(HOST_CORES.into(), Metric::new(cores, "cores busy on the host over the measured span", false));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_brokers_share_is_added_per_million_records_and_per_cpu_second_of_every_process() {
        let mut m = BTreeMap::new();
        add_cpu(&mut m, 2_000_000, 3.0, Some(5.0), None);
        let v = |k: &str| m[k].value;
        assert_eq!((v("client_cpu_s"), v("client_cpu_s_per_m_records")), (3.0, 1.5));
        assert_eq!((v("broker_cpu_s"), v("broker_cpu_s_per_m_records")), (5.0, 2.5));
        assert_eq!((v("total_cpu_s_per_m_records"), v("records_per_cpu_s")), (4.0, 250_000.0));
        assert!(m["records_per_cpu_s"].higher_is_better && !m["broker_cpu_s"].higher_is_better);
        let mut none = BTreeMap::new();
        add_cpu(&mut none, 2_000_000, 3.0, None, None);
        let names: Vec<&str> = none.keys().map(String::as_str).collect();
        assert_eq!(names, ["client_cpu_s", "client_cpu_s_per_m_records"], "an external cluster's brokers: nothing");
        let mut unread_client = BTreeMap::new();
        add_cpu(&mut unread_client, 2_000_000, f64::NAN, Some(5.0), None);
        let names: Vec<&str> = unread_client.keys().map(String::as_str).collect();
        assert_eq!(names, ["broker_cpu_s", "broker_cpu_s_per_m_records"], "no client reading: the brokers' only");
        let mut under_a_tick = BTreeMap::new();
        add_cpu(&mut under_a_tick, 20_000, 0.04, Some(0.0), None);
        let names: Vec<&str> = under_a_tick.keys().map(String::as_str).collect();
        assert_eq!(names, ["client_cpu_s", "client_cpu_s_per_m_records"], "0 s for 20,000 records is no reading");
        let mut nothing_sent = BTreeMap::new();
        add_cpu(&mut nothing_sent, 0, 3.0, Some(5.0), None);
        assert_eq!(nothing_sent.len(), 2, "seconds, but nothing per record: {nothing_sent:?}");
    }

    #[test]
    fn this_process_reads_as_a_broker_whose_cpu_only_grows() {
        let env: EnvDescriptor = serde_json::from_value(serde_json::json!({
            "schema": 1, "id": "t", "backend": "native", "dir": "/tmp/x", "started_ts_ms": 0,
            "kafka": {"version": "4.1.0", "listeners": {}, "pid": std::process::id()}
        }))
        .unwrap();
        let span = BrokersCpu::start(&env);
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(span.spent().is_some_and(|s| s >= 0.0), "{:?}", span.spent());
        let gone: EnvDescriptor = serde_json::from_value(serde_json::json!({
            "schema": 1, "id": "t", "backend": "native", "dir": "/tmp/x", "started_ts_ms": 0,
            "kafka": {"version": "4.1.0", "listeners": {}, "pid": u32::MAX}
        }))
        .unwrap();
        assert_eq!(BrokersCpu::start(&gone).spent(), None);
    }

    #[test]
    fn the_hosts_cores_and_each_sides_are_read_over_one_span_and_never_exceed_the_host() {
        let span = |wall_s: f64, busy_s: Option<f64>| HostReading { wall_s, busy_s, cpus: Some(2) };
        let mut m = BTreeMap::new();
        add_cpu(&mut m, 1_000_000, 3.0, Some(1.0), Some(span(4.0, Some(6.0))));
        let v = |k: &str| m.get(k).map(|x| x.value);
        assert_eq!((v(HOST_CORES), v("client_cores"), v("broker_cores")), (Some(1.5), Some(0.75), Some(0.25)));
        // Ticks at the edges can add a little: never more cores than the host has.
        assert_eq!(span(1.0, Some(2.03)).cores(), Some(2.0));
        assert_eq!(span(1.0, Some(2.0)).cores_of(2.6), Some(2.0));
        // Unread, or too short to read: no figure at all, never a zero or an exemption.
        assert_eq!(span(1.0, None).cores(), None);
        assert_eq!(span(0.2, Some(0.3)).cores(), None);
        assert_eq!(HostReading { cpus: None, ..span(1.0, Some(1.0)) }.cores(), None);
        let mut unread = BTreeMap::new();
        add_cpu(&mut unread, 1_000_000, 3.0, Some(1.0), Some(span(4.0, None)));
        assert!(!unread.contains_key(HOST_CORES) && unread.contains_key("client_cores"), "{unread:?}");
    }

    #[test]
    fn a_burner_on_every_cpu_reads_cpu_bound_and_a_sleeping_side_reads_idle() {
        let cpus = host_cpus().unwrap();
        let span = HostSpan::start();
        let until = Instant::now() + Duration::from_millis(800);
        std::thread::scope(|s| {
            for _ in 0..cpus {
                s.spawn(|| {
                    let mut x = 0u64;
                    while Instant::now() < until {
                        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
                    }
                });
            }
        });
        let burned = span.finish().cores().unwrap();
        // Every CPU busy, whatever else ran beside: the host reads CPU-bound, and never more than its CPUs.
        assert!(burned >= streamlab_record::CPU_BOUND_SHARE * cpus as f64 && burned <= cpus as f64, "{burned}");
        // A side that sleeps through its span (this thread, whatever the other tests do) is idle on it.
        let (span, own) = (HostSpan::start(), streamlab_process::procfs::thread_cpu_seconds());
        std::thread::sleep(Duration::from_millis(600));
        let idle = span.finish().cores_of(streamlab_process::procfs::thread_cpu_seconds() - own).unwrap();
        assert!(idle < 0.1, "{idle}");
    }
}
