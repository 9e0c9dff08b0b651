//! CPU seconds of every process a run involves: the harness itself (where the Rust arm runs), an arm's own
//! processes (a Connect JVM), the MySQL/MariaDB server and the Kafka broker, read from /proc around the run.

use std::collections::BTreeMap;

use crate::cpu::process_cpu_seconds;

/// User + system CPU seconds `pid` has used so far (all its threads), or None if /proc does not show it
/// (gone, or in a container whose pids this process cannot see).
pub fn pid_cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields are counted after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat(5), i.e. 11 and 12 after the state field (3).
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (ticks > 0.0).then(|| (utime + stime) / ticks)
}

/// The processes whose CPU a record reports, by role (`harness`, `arm`, `server`, `broker`).
#[derive(Debug, Clone, Default)]
pub struct CpuRoles {
    pids: BTreeMap<&'static str, Vec<u32>>,
}

/// A reading of every role's CPU seconds.
#[derive(Debug, Clone, Default)]
pub struct CpuReading(BTreeMap<&'static str, Option<f64>>);

impl CpuRoles {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with(mut self, role: &'static str, pids: Vec<u32>) -> Self {
        self.pids.insert(role, pids);
        self
    }

    pub fn read(&self) -> CpuReading {
        let mut r = BTreeMap::from([("harness", Some(process_cpu_seconds()))]);
        for (role, pids) in &self.pids {
            let sum: Option<f64> = if pids.is_empty() { None } else { pids.iter().map(|&p| pid_cpu_seconds(p)).sum() };
            r.insert(role, sum);
        }
        CpuReading(r)
    }
}

impl CpuReading {
    /// One role's CPU seconds so far, if readable.
    pub fn get(&self, role: &str) -> Option<f64> {
        self.0.get(role).copied().flatten()
    }

    /// CPU seconds per role between `self` (earlier) and `later`; a role unreadable at either end is absent.
    pub fn until(&self, later: &CpuReading) -> BTreeMap<&'static str, f64> {
        self.0.iter().filter_map(|(role, before)| Some((*role, later.0.get(role).copied()?? - (*before)?))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_cpu_is_readable_and_grows_with_work() {
        let pid = std::process::id();
        let before = pid_cpu_seconds(pid).expect("own /proc entry");
        let mut x = 0u64;
        let started = std::time::Instant::now();
        while started.elapsed() < std::time::Duration::from_millis(300) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let after = pid_cpu_seconds(pid).unwrap();
        assert!(after - before >= 0.1, "{before} -> {after}");
        assert!(pid_cpu_seconds(u32::MAX).is_none());
    }

    #[test]
    fn a_role_whose_process_is_unreadable_is_left_out_not_zero() {
        let roles = CpuRoles::new().with("server", vec![u32::MAX]).with("arm", vec![std::process::id()]);
        let a = roles.read();
        let b = roles.read();
        let d = a.until(&b);
        assert!(d.contains_key("harness") && d.contains_key("arm"));
        assert!(!d.contains_key("server"));
    }
}
