//! What /proc and the kernel say about processes and the host: CPU seconds per process, of this process and
//! its reaped children, and of the whole host; whether a pid is still alive (a zombie is not) and still
//! ours; load; CPU affinity. Signals and reaping by pid, for services whose handle is gone.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::sys::resource::{UsageWho, getrusage};
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid, waitpid};
use nix::unistd::{Pid, SysconfVar, getpgid, sysconf};

pub use nix::sys::signal::Signal as Sig;

/// Clock ticks per second of /proc's CPU times.
pub fn ticks_per_s() -> f64 {
    match sysconf(SysconfVar::CLK_TCK) {
        Ok(Some(t)) if t > 0 => t as f64,
        _ => 100.0,
    }
}

/// utime + stime of a `/proc/<pid>/stat` line, in ticks (the command name may hold spaces and parentheses:
/// fields are counted after the last `)`).
pub fn parse_process_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3, utime field 14, stime field 15 (1-based, man 5 proc).
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// User + system CPU seconds `pid` has used so far (all its threads), or None if /proc does not show it
/// (gone, or in a container whose pids this process cannot see).
pub fn pid_cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(parse_process_ticks(&stat)? as f64 / ticks_per_s())
}

/// The CPU seconds of every readable pid in `pids`, summed.
pub fn pids_cpu_seconds(pids: &[u32]) -> f64 {
    pids.iter().filter_map(|&p| pid_cpu_seconds(p)).sum()
}

/// User + system CPU seconds this process has used so far.
pub fn self_cpu_seconds() -> f64 {
    rusage_seconds(UsageWho::RUSAGE_SELF)
}

/// CPU seconds the calling thread has used.
pub fn thread_cpu_seconds() -> f64 {
    match nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID) {
        Ok(t) => t.tv_sec() as f64 + t.tv_nsec() as f64 / 1e9,
        Err(_) => f64::NAN,
    }
}

/// User + system CPU seconds of this process's children that have ended and been waited for.
pub fn children_cpu_seconds() -> f64 {
    rusage_seconds(UsageWho::RUSAGE_CHILDREN)
}

fn rusage_seconds(who: UsageWho) -> f64 {
    match getrusage(who) {
        Ok(u) => {
            let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
            secs(u.user_time()) + secs(u.system_time())
        }
        Err(_) => f64::NAN,
    }
}

/// user + nice + system + irq + softirq + steal ticks of a `cpu ...` line of /proc/stat (guest time is
/// already in user).
pub fn parse_busy_ticks(line: &str) -> Option<u64> {
    let mut fields = line.split_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    let v: Vec<u64> = fields.map(|f| f.parse().ok()).collect::<Option<_>>()?;
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    Some(at(0) + at(1) + at(2) + at(5) + at(6) + at(7))
}

/// Busy seconds of all CPUs since boot.
pub fn host_busy_seconds() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    Some(parse_busy_ticks(text.lines().next()?)? as f64 / ticks_per_s())
}

/// The CPUs /proc/stat counts (its `cpuN` lines): the host's own, whatever this process's affinity allows it.
pub fn host_cpus() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let n =
        text.lines().filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit)).count();
    (n > 0).then_some(n)
}

/// The 1-minute load average.
pub fn loadavg_1m() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg").ok()?.split_whitespace().next()?.parse().ok()
}

/// The state letter of `pid` (`R`, `S`, `T` for stopped, `Z` for a zombie, ...), `None` when it is gone.
pub fn state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')').next()?.split_whitespace().next()?.chars().next()
}

/// Whether `pid` runs: it exists and is neither a zombie nor dead.
pub fn is_alive(pid: u32) -> bool {
    state(pid).is_some_and(|s| s != 'Z' && s != 'X')
}

/// Whether `pid` is still the process we started: its command line mentions `marker` (e.g. its
/// environment's directory), so a recycled pid is never signalled.
pub fn is_ours(pid: u32, marker: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline")).map(|c| String::from_utf8_lossy(&c).contains(marker)).unwrap_or(false)
}

/// Send `sig` to `pid`; a process that is already gone is fine (that is what a stop wants).
pub fn signal(pid: u32, sig: Signal) {
    let _ = kill(Pid::from_raw(pid as i32), sig);
}

/// Collect `pid`'s exit status if it is our child and has ended (never blocks; a no-op otherwise).
pub fn reap(pid: u32) {
    let _ = waitpid(Pid::from_raw(pid as i32), Some(WaitPidFlag::WNOHANG));
}

/// How a child of ours ended, read without reaping it (its owner still reaps it): `exited with status N` or
/// `was killed by SIGKILL`. A JVM's main thread shows as a zombie while its other threads are still exiting,
/// and its status is readable only once they all have, so it is asked for up to `settle`. `None` when the pid
/// is not our child, or still runs after `settle`.
pub fn how_it_ended(pid: u32, settle: Duration) -> Option<String> {
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    let deadline = Instant::now() + settle;
    loop {
        match waitid(Id::Pid(Pid::from_raw(pid as i32)), flags) {
            Ok(WaitStatus::Exited(_, code)) => return Some(format!("exited with status {code}")),
            Ok(WaitStatus::Signaled(_, signal, _)) => return Some(format!("was killed by {signal}")),
            Ok(WaitStatus::StillAlive) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => return None,
        }
    }
}

/// SIGTERM, wait up to `grace`, then SIGKILL; returns once the process is gone (and reaped if ours).
pub fn terminate(pid: u32, grace: Duration) {
    terminate_all(&[pid], grace);
}

/// SIGTERM to every pid at once, SIGKILL to those still alive after `grace` (to the whole process group of
/// one that leads its own, as every service the lab starts does: its children die with it); returns once all
/// are gone and reaped. Stopping services together (a cluster's brokers) costs one grace period, not one each.
pub fn terminate_all(pids: &[u32], grace: Duration) {
    for &pid in pids {
        signal(pid, Signal::SIGTERM);
    }
    let deadline = Instant::now() + grace;
    let alive = |pids: &[u32]| pids.iter().copied().filter(|&p| is_alive(p)).collect::<Vec<u32>>();
    while !alive(pids).is_empty() && Instant::now() < deadline {
        pids.iter().for_each(|&p| reap(p));
        std::thread::sleep(Duration::from_millis(50));
    }
    let stubborn = alive(pids);
    let mut groups = Vec::new();
    for &pid in &stubborn {
        let leads_its_group = getpgid(Some(Pid::from_raw(pid as i32))).is_ok_and(|g| g.as_raw() == pid as i32);
        if leads_its_group {
            let _ = nix::sys::signal::killpg(Pid::from_raw(pid as i32), Signal::SIGKILL);
            groups.push(pid);
        }
        signal(pid, Signal::SIGKILL);
    }
    while !alive(&stubborn).is_empty() {
        stubborn.iter().for_each(|&p| reap(p));
        std::thread::sleep(Duration::from_millis(20));
    }
    pids.iter().for_each(|&p| reap(p));
    // SIGKILL is delivered, not yet acted on: a killed group's other members (a service's own children) are gone
    // only once the kernel has ended them. Bounded: a process in uninterruptible sleep ends when its I/O does.
    let deadline = Instant::now() + GROUP_EXIT_WAIT;
    while groups.iter().any(|&g| group_has_live_members(g)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// How long `terminate_all` waits for a killed group's members to end.
const GROUP_EXIT_WAIT: Duration = Duration::from_secs(5);

/// Whether any process of group `pgid` runs (neither a zombie nor dead).
fn group_has_live_members(pgid: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else { return false };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .any(|pid| getpgid(Some(Pid::from_raw(pid as i32))).is_ok_and(|g| g.as_raw() == pgid as i32) && is_alive(pid))
}

/// The inodes of this network namespace's TCP sockets (v4 and v6) whose local port is `port`: the client end of a
/// connection a server lists as `127.0.0.1:<port>`.
pub fn tcp_socket_inodes(port: u16) -> Vec<u64> {
    let tables = ["/proc/net/tcp", "/proc/net/tcp6"].map(|t| std::fs::read_to_string(t).unwrap_or_default());
    tables.iter().flat_map(|t| t.lines().skip(1)).filter_map(|line| parse_tcp_socket(line, port)).collect()
}

/// The inode of one `/proc/net/tcp` row if its local port is `port` (`sl local:port rem:port st ... inode`).
pub fn parse_tcp_socket(line: &str, port: u16) -> Option<u64> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let local_port = u16::from_str_radix(fields.get(1)?.rsplit(':').next()?, 16).ok()?;
    (local_port == port).then(|| fields.get(9)?.parse().ok()).flatten().filter(|&inode| inode != 0)
}

/// Whether `pid` holds an open file descriptor on one of the sockets `inodes`.
pub fn holds_socket(pid: u32, inodes: &[u64]) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return false };
    fds.flatten().filter_map(|fd| std::fs::read_link(fd.path()).ok()).any(|target| {
        let target = target.to_string_lossy();
        let inode = target.strip_prefix("socket:[").and_then(|t| t.strip_suffix(']')).and_then(|i| i.parse().ok());
        inode.is_some_and(|i| inodes.contains(&i))
    })
}

/// The process on this host holding one of the sockets `inodes`: its pid and command name.
pub fn socket_holder(inodes: &[u64]) -> Option<(u32, String)> {
    if inodes.is_empty() {
        return None;
    }
    let mut pids =
        std::fs::read_dir("/proc").ok()?.flatten().filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok());
    let pid = pids.find(|&pid| holds_socket(pid, inodes))?;
    let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    Some((pid, name.trim().to_owned()))
}

/// The CPU model beyond its brand string, from /proc/cpuinfo: `family 25, model 17` (x86) or
/// `implementer 0x41, part 0xd0c` (Arm); `None` where it says neither.
pub fn cpu_model() -> Option<String> {
    parse_cpu_model(&std::fs::read_to_string("/proc/cpuinfo").ok()?)
}

/// [`cpu_model`] of a /proc/cpuinfo text (its first CPU's fields).
pub fn parse_cpu_model(cpuinfo: &str) -> Option<String> {
    let field = |name: &str| {
        cpuinfo.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().to_owned())
        })
    };
    match (field("cpu family"), field("model"), field("CPU implementer"), field("CPU part")) {
        (Some(family), Some(model), _, _) => Some(format!("family {family}, model {model}")),
        (_, _, Some(implementer), Some(part)) => Some(format!("implementer {implementer}, part {part}")),
        _ => None,
    }
}

/// `virtual machine` when the CPU says a hypervisor runs it (x86's `hypervisor` flag, or /sys/hypervisor), `bare
/// metal` when an x86 CPU lists its flags without it; `None` where neither can be told.
pub fn virtualization() -> Option<String> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let under_hypervisor = std::fs::read_to_string("/sys/hypervisor/type").is_ok_and(|t| !t.trim().is_empty());
    parse_virtualization(&cpuinfo, under_hypervisor)
}

/// [`virtualization`] of a /proc/cpuinfo text and whether /sys/hypervisor names one.
pub fn parse_virtualization(cpuinfo: &str, under_hypervisor: bool) -> Option<String> {
    let flags = cpuinfo.lines().find_map(|l| l.split_once(':').filter(|(k, _)| k.trim() == "flags").map(|(_, v)| v));
    match flags {
        _ if under_hypervisor => Some("virtual machine".into()),
        Some(flags) if flags.split_whitespace().any(|f| f == "hypervisor") => Some("virtual machine".into()),
        Some(_) => Some("bare metal".into()),
        None => None,
    }
}

/// The CPUs this process may run on (its affinity mask, which honours cpusets), in order.
pub fn allowed_cpus() -> Vec<usize> {
    match sched_getaffinity(Pid::from_raw(0)) {
        Ok(set) => (0..CpuSet::count()).filter(|&c| set.is_set(c).unwrap_or(false)).collect(),
        Err(_) => (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect(),
    }
}

/// A CPU set of `cpus` (every allowed CPU when empty).
pub fn cpu_set(cpus: &[usize]) -> Result<CpuSet> {
    let cpus = if cpus.is_empty() { allowed_cpus() } else { cpus.to_vec() };
    let mut set = CpuSet::new();
    for c in cpus {
        set.set(c).with_context(|| format!("CPU {c} is beyond what this kernel's CPU sets hold"))?;
    }
    Ok(set)
}

/// Pin every thread of `pid` to `cpus` (every allowed CPU when empty), as `taskset -a -p` does; threads it
/// starts later inherit the mask of the thread that starts them.
pub fn set_affinity(pid: u32, cpus: &[usize]) -> Result<()> {
    let set = cpu_set(cpus)?;
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).with_context(|| format!("no process {pid}"))?;
    for task in tasks.flatten() {
        let Some(tid) = task.file_name().to_str().and_then(|t| t.parse::<i32>().ok()) else { continue };
        // A thread that ended meanwhile is fine.
        if let Err(e) = sched_setaffinity(Pid::from_raw(tid), &set)
            && e != nix::errno::Errno::ESRCH
        {
            return Err(e).with_context(|| format!("cannot pin thread {tid} of process {pid} to CPUs {cpus:?}"));
        }
    }
    Ok(())
}

/// The CPUs `pid`'s main thread may run on.
pub fn affinity_of(pid: u32) -> Result<Vec<usize>> {
    let set = sched_getaffinity(Pid::from_raw(pid as i32)).with_context(|| format!("no process {pid}"))?;
    Ok((0..CpuSet::count()).filter(|&c| set.is_set(c).unwrap_or(false)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_model_and_the_kind_of_machine_are_read_from_cpuinfo() {
        let epyc = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\n\
                    flags\t\t: fpu vme hypervisor lahf_lm\n";
        assert_eq!(parse_cpu_model(epyc).as_deref(), Some("family 25, model 17"));
        assert_eq!(parse_virtualization(epyc, false).as_deref(), Some("virtual machine"));
        let metal = epyc.replace(" hypervisor", "");
        assert_eq!(parse_virtualization(&metal, false).as_deref(), Some("bare metal"));
        let arm = "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n";
        assert_eq!(parse_cpu_model(arm).as_deref(), Some("implementer 0x41, part 0xd0c"));
        assert_eq!(parse_virtualization(arm, false), None, "an Arm CPU without flags cannot tell");
        assert_eq!(parse_virtualization(arm, true).as_deref(), Some("virtual machine"));
        assert!(cpu_model().is_some(), "this machine's CPU names its model");
    }

    #[test]
    fn a_tcp_rows_inode_is_read_for_its_local_port_only() {
        let row = "   3: 0100007F:B0A2 0100007F:0CEA 01 00000000:00000000 00:00000000 00000000     0        0 123456 1 0 20 4 30 10 -1";
        assert_eq!(parse_tcp_socket(row, 0xB0A2), Some(123_456));
        assert_eq!(parse_tcp_socket(row, 0x0CEA), None, "the remote port is not the local one");
        let v6 = "   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 777 1 0 100 0 0 10 0";
        assert_eq!(parse_tcp_socket(v6, 8080), Some(777));
        assert_eq!(parse_tcp_socket("  sl  local_address rem_address   st", 8080), None, "the header row");
    }

    #[test]
    fn the_holder_of_a_connected_socket_is_this_process() {
        let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(server.local_addr().unwrap()).unwrap();
        let port = client.local_addr().unwrap().port();
        let inodes = tcp_socket_inodes(port);
        assert!(!inodes.is_empty(), "the client socket on port {port} is in /proc/net/tcp");
        assert!(holds_socket(std::process::id(), &inodes));
        assert_eq!(socket_holder(&inodes).map(|(pid, _)| pid), Some(std::process::id()));
        drop(client);
        assert_eq!(socket_holder(&tcp_socket_inodes(port)), None, "a closed socket has no holder");
    }

    #[test]
    fn process_ticks_are_read_past_a_name_with_spaces_and_parentheses() {
        let stat = "42 (a (b) c) S 1 42 42 0 -1 4194304 100 0 0 0 250 75 0 0 20 0 1 0";
        assert_eq!(parse_process_ticks(stat), Some(325));
        assert_eq!(parse_process_ticks("garbage"), None);
    }

    #[test]
    fn busy_ticks_leave_idle_and_iowait_out() {
        assert_eq!(parse_busy_ticks("cpu  10 1 5 1000 7 2 3 4 0 0"), Some(25));
        assert_eq!(parse_busy_ticks("cpu0 10 1 5 1000"), None);
    }

    #[test]
    fn this_process_is_alive_ours_and_uses_cpu() {
        let me = std::process::id();
        assert!(is_alive(me));
        assert!(pid_cpu_seconds(me).is_some_and(|s| s >= 0.0));
        assert!(self_cpu_seconds() >= 0.0);
        assert!(host_busy_seconds().is_some_and(|s| s > 0.0));
        let cpus = host_cpus().unwrap();
        assert!(cpus >= std::thread::available_parallelism().map_or(1, usize::from), "{cpus}");
        assert!(!is_alive(u32::MAX / 2), "no such pid");
        assert!(!allowed_cpus().is_empty());
        assert_eq!(affinity_of(me).unwrap(), allowed_cpus());
    }

    #[test]
    fn a_pids_cpu_seconds_grow_with_its_work_and_a_missing_pid_has_none() {
        let me = std::process::id();
        let before = pid_cpu_seconds(me).expect("own /proc entry");
        // Spin until the reading moves (bounded, never timed: a loaded machine only makes it take longer).
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut x = 0u64;
        let mut after = before;
        while after - before < 0.05 && Instant::now() < deadline {
            for _ in 0..1_000_000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            after = pid_cpu_seconds(me).unwrap();
        }
        std::hint::black_box(x);
        assert!(after - before >= 0.05, "{before} -> {after}");
        assert!(pid_cpu_seconds(u32::MAX).is_none());
        assert_eq!(pids_cpu_seconds(&[u32::MAX]), 0.0, "an unreadable pid adds nothing");
    }
}
