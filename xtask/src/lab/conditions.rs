//! What else the machine was doing while a task ran, and where its client and broker were placed.
//!
//! Foreign CPU = the CPU time every CPU spent busy during the task (/proc/stat: user, nice, system, irq,
//! softirq, steal) minus what the lab itself used: the harness child (reaped into our children's
//! rusage), the environment's services (/proc/<pid>/stat) and the runner (our own rusage). A task whose
//! foreign CPU exceeds a quarter of its wall time (and the counters' 10 ms ticks) ran under foreign load.

use std::time::Instant;

use streamlab_process::procfs;
use streamlab_record::Conditions;

/// Foreign CPU per wall second above which a record is marked as measured under foreign load.
pub const FOREIGN_LOAD_THRESHOLD: f64 = 0.25;

/// Foreign CPU seconds below which no task is marked, however short: /proc/stat and /proc/<pid>/stat count in
/// 10 ms ticks per CPU and per process, so a 0.1 s task (a not-run point) can show tens of ms that were never
/// anyone's.
pub const FOREIGN_LOAD_MIN_S: f64 = 0.1;

/// CPU counters at the start of a task.
pub struct Probe {
    started: Instant,
    busy_s: f64,
    own_s: f64,
    services_s: f64,
    pids: Vec<u32>,
}

impl Probe {
    /// Take the counters now; `pids` are the environment's service processes.
    pub fn start(pids: Vec<u32>) -> Probe {
        Probe {
            started: Instant::now(),
            busy_s: procfs::host_busy_seconds().unwrap_or(0.0),
            own_s: own_cpu_s(),
            services_s: procfs::pids_cpu_seconds(&pids),
            pids,
        }
    }

    /// The conditions of the task that ran since [`Probe::start`] (call after its child was reaped), given the
    /// service pids running now: one that started during the task (a broker a fault started again) counts whole
    /// as the lab's. One that ended (a broker a fault killed) was reaped by
    /// the runner, so its CPU is in the runner's children's counters already.
    pub fn finish_with(self, placement: Option<String>, now_running: &[u32]) -> Conditions {
        let wall_s = self.started.elapsed().as_secs_f64();
        let busy = procfs::host_busy_seconds().unwrap_or(self.busy_s) - self.busy_s;
        let own = own_cpu_s() - self.own_s;
        let started: Vec<u32> = now_running.iter().copied().filter(|p| !self.pids.contains(p)).collect();
        let services = procfs::pids_cpu_seconds(&self.pids) - self.services_s + procfs::pids_cpu_seconds(&started);
        conditions(wall_s, busy, own + services, procfs::loadavg_1m().unwrap_or(0.0), placement)
    }
}

/// The arithmetic: foreign CPU is what the machine used beyond the lab's own, never negative (the
/// counters tick at different granularities).
pub fn conditions(wall_s: f64, busy_s: f64, lab_s: f64, loadavg_1m: f64, placement: Option<String>) -> Conditions {
    let foreign_cpu_s = round3((busy_s - lab_s).max(0.0));
    let foreign_load =
        wall_s > 0.0 && foreign_cpu_s >= FOREIGN_LOAD_MIN_S && foreign_cpu_s / wall_s > FOREIGN_LOAD_THRESHOLD;
    Conditions { wall_s: round3(wall_s), foreign_cpu_s, loadavg_1m, foreign_load, placement }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// CPU used by the runner and by every child it has reaped (the harness processes).
fn own_cpu_s() -> f64 {
    procfs::self_cpu_seconds() + procfs::children_cpu_seconds()
}

/// Where a task's client and broker run.
#[derive(Debug, Clone, PartialEq)]
pub enum Placement {
    /// Disjoint CPU sets: the harness on `client`, the broker on `broker`.
    Separate { client: Vec<usize>, broker: Vec<usize> },
    /// Left to the scheduler, with the reason.
    Shared(String),
}

/// Separate client and broker when there are 4 or more CPUs and the task does not cap the broker itself.
pub fn plan_placement(allowed: &[usize], broker_cap: Option<usize>) -> Placement {
    if let Some(cores) = broker_cap.filter(|&c| c > 0) {
        return Placement::Shared(format!("broker capped to {cores} CPU(s) by broker_cores; client unpinned"));
    }
    if allowed.len() < 4 {
        return Placement::Shared(format!("shared: {} CPUs, too few to separate client and broker", allowed.len()));
    }
    let (client, broker) = allowed.split_at(allowed.len() / 2);
    Placement::Separate { client: client.to_vec(), broker: broker.to_vec() }
}

impl Placement {
    pub fn describe(&self) -> String {
        match self {
            Placement::Separate { client, broker } => format!("client CPUs {client:?}, broker CPUs {broker:?}"),
            Placement::Shared(why) => why.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn foreign_cpu_is_what_the_machine_used_beyond_the_lab() {
        let c = conditions(10.0, 14.0, 11.0, 1.5, None);
        assert_eq!((c.wall_s, c.foreign_cpu_s, c.foreign_load), (10.0, 3.0, true));
        let quiet = conditions(10.0, 11.0, 10.0, 0.2, Some("shared".into()));
        assert_eq!((quiet.foreign_cpu_s, quiet.foreign_load), (1.0, false));
        // Counters of different granularity never make foreign CPU negative.
        assert_eq!(conditions(1.0, 0.5, 0.52, 0.0, None).foreign_cpu_s, 0.0);
        // Exactly at the threshold is not foreign load; just above it is.
        assert!(!conditions(4.0, 1.0, 0.0, 0.0, None).foreign_load);
        assert!(conditions(4.0, 1.01, 0.0, 0.0, None).foreign_load);
        // A 0.1 s task's 37 ms of foreign CPU is tick granularity, not load (as in run 141d's not-run records).
        assert!(!conditions(0.1, 0.047, 0.01, 0.0, None).foreign_load);
        assert!(conditions(0.3, 0.2, 0.0, 0.0, None).foreign_load);
    }

    #[test]
    fn client_and_broker_get_disjoint_halves_only_when_there_are_enough_cpus() {
        assert_eq!(plan_placement(&[0, 1, 2, 3], None), Placement::Separate { client: vec![0, 1], broker: vec![2, 3] });
        assert_eq!(
            plan_placement(&[0, 1], Some(0)).describe(),
            "shared: 2 CPUs, too few to separate client and broker"
        );
        assert!(plan_placement(&[0, 1, 2, 3, 4, 5], Some(1)).describe().contains("broker_cores"));
        let Placement::Separate { client, broker } = plan_placement(&[2, 3, 5, 7, 9], None) else { panic!() };
        assert!(client.iter().all(|c| !broker.contains(c)) && client.len() + broker.len() == 5);
    }

    #[test]
    fn a_probe_of_a_quiet_moment_reads_the_real_counters() {
        let probe = Probe::start(vec![std::process::id()]);
        std::thread::sleep(std::time::Duration::from_millis(50));
        let c = probe.finish_with(None, &[]);
        assert!(c.wall_s >= 0.05 && c.foreign_cpu_s >= 0.0 && c.loadavg_1m >= 0.0, "{c:?}");
    }
}
