//! CPU seconds of every process a run involves: the harness itself (where the Rust arm runs), an arm's own
//! processes (a Connect JVM), the MySQL/MariaDB server and the Kafka broker, read from /proc around the run.

use std::collections::BTreeMap;

use streamlab_process::procfs::pid_cpu_seconds;

use streamlab_process::procfs::self_cpu_seconds;

/// The reading's entries that are not a process's CPU: the host's busy seconds and the clock's seconds.
pub const HOST: &str = "host";
pub const WALL: &str = "wall";

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

    /// The environment's own services: the database server and the broker.
    pub fn of_services(env: &streamlab_record::EnvDescriptor) -> Self {
        let mysql_pid = env.mysql.as_ref().and_then(|m| m.pid);
        Self::new().with("server", mysql_pid.into_iter().collect()).with("broker", env.kafka.pid.into_iter().collect())
    }

    pub fn with(mut self, role: &'static str, pids: Vec<u32>) -> Self {
        self.pids.insert(role, pids);
        self
    }

    /// Every role's CPU seconds, and beside them the whole host's busy seconds ([`HOST`]) and the clock ([`WALL`]),
    /// so that a span between two readings says how many of the host's cores were busy over it.
    pub fn read(&self) -> CpuReading {
        let mut r = BTreeMap::from([
            ("harness", Some(self_cpu_seconds())),
            (HOST, streamlab_process::procfs::host_busy_seconds()),
            (WALL, Some(streamlab_process::clock::now_ms_f64() / 1e3)),
        ]);
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
    fn a_role_whose_process_is_unreadable_is_left_out_not_zero() {
        let roles = CpuRoles::new().with("server", vec![u32::MAX]).with("arm", vec![std::process::id()]);
        let a = roles.read();
        let b = roles.read();
        let d = a.until(&b);
        assert!(d.contains_key("harness") && d.contains_key("arm"));
        assert!(!d.contains_key("server"));
    }
}
