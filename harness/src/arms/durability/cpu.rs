//! CPU seconds of every broker over a run, read from /proc by pid (streamlab-process's reader): a broker a fault
//! killed or restarted counts its old process up to its end (the runner reads it just before) and its new one
//! from its start.

use std::collections::BTreeMap;

use streamlab_process::procfs::pid_cpu_seconds;
use streamlab_record::EnvDescriptor;
use streamlab_record::fault::FaultResult;

/// Each broker's node id, pid and CPU seconds at the start.
pub struct Brokers {
    start: Vec<(u32, u32, Option<f64>)>,
}

/// Each broker's pid and CPU seconds at the end of the produce phase.
pub struct Finished {
    start: Vec<(u32, u32, Option<f64>)>,
    end: BTreeMap<u32, Option<f64>>,
}

impl Brokers {
    /// The brokers of `env` that run here (none for an external cluster: its processes are not ours to read).
    pub fn start(env: &EnvDescriptor) -> Brokers {
        let nodes: Vec<(u32, u32)> = if env.kafka.brokers.is_empty() {
            env.kafka.pid.map(|p| (1, p)).into_iter().collect()
        } else {
            env.kafka.brokers.iter().filter_map(|b| Some((b.node_id, b.pid?))).collect()
        };
        Brokers { start: nodes.into_iter().map(|(id, pid)| (id, pid, pid_cpu_seconds(pid))).collect() }
    }

    pub fn finish(self) -> Finished {
        let end = self.start.iter().map(|&(_, pid, _)| (pid, pid_cpu_seconds(pid))).collect();
        Finished { start: self.start, end }
    }
}

impl Finished {
    /// CPU seconds per node id, `None` where a reading failed (so that no total passes for every broker's); the
    /// faulted broker's old process up to its end plus its new one so far.
    pub fn with_fault(self, fault: Option<&FaultResult>) -> BTreeMap<u32, Option<f64>> {
        let mut out = BTreeMap::new();
        for (node, pid, before) in self.start {
            let Some(before) = before else {
                out.insert(node, None);
                continue;
            };
            let replaced = fault.filter(|f| f.old_pid == Some(pid) && f.old_cpu_s.is_some());
            let used = match replaced {
                Some(f) => {
                    let old = f.old_cpu_s.unwrap_or(before) - before;
                    let new = f.new_pid.and_then(pid_cpu_seconds).unwrap_or(0.0);
                    Some(old + new)
                }
                None => self.end.get(&pid).copied().flatten().map(|after| after - before),
            };
            out.insert(node, used);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use streamlab_record::fault::{FaultKind, FaultRequest};

    use super::*;

    #[test]
    fn a_replaced_broker_counts_its_old_process_to_its_end_and_an_unread_one_is_none() {
        let me = std::process::id();
        let finished = Finished {
            start: vec![(1, me, Some(1.0)), (2, u32::MAX, Some(5.0)), (3, u32::MAX - 1, None)],
            end: BTreeMap::from([(me, Some(3.0)), (u32::MAX, None)]),
        };
        let mut fault = FaultResult::refused(&FaultRequest { kind: FaultKind::Kill, node_id: 2, hold_ms: 0 }, "");
        fault.old_pid = Some(u32::MAX);
        fault.old_cpu_s = Some(7.5);
        fault.new_pid = Some(u32::MAX - 2);
        let cpu = finished.with_fault(Some(&fault));
        assert_eq!(cpu.get(&1), Some(&Some(2.0)));
        assert_eq!(cpu.get(&2), Some(&Some(2.5)), "7.5 - 5.0 before the kill, the new process unreadable: 0");
        assert_eq!(cpu.get(&3), Some(&None), "a broker read at neither end is there, unread");
    }
}
