//! Service processes: started in their own process group, stopped by pid with a grace period,
//! and (for lab runs) killed by the kernel if xtask itself dies.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nix::sched::{CpuSet, sched_getaffinity};
use nix::sys::prctl::set_pdeathsig;
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::{Pid, setpgid, setsid};

/// How a service outlives (or not) the xtask process that started it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifetime {
    /// `env up` by hand: the service keeps running after xtask exits.
    Detached,
    /// Lab runs and tests: the kernel kills the service if xtask dies (PR_SET_PDEATHSIG).
    TiedToParent,
}

/// Spawn `cmd` with stdout+stderr appended to `log`, in a new process group so a terminal's
/// Ctrl-C reaches xtask (which stops services in order) rather than the services directly.
pub fn spawn(mut cmd: Command, log: &Path, lifetime: Lifetime) -> Result<Child> {
    let out = File::options().create(true).append(true).open(log).with_context(|| format!("{}", log.display()))?;
    let err = out.try_clone()?;
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if lifetime == Lifetime::Detached {
                let _ = setsid();
            } else {
                tie_to_parent();
            }
            Ok(())
        });
    }
    let program = cmd.get_program().to_string_lossy().into_owned();
    cmd.spawn().with_context(|| format!("cannot start {program}"))
}

/// In a forked child: a process group of its own (a terminal's Ctrl-C reaches xtask, which stops services in
/// order), and SIGKILL from the kernel if xtask dies. Async-signal-safe: two syscalls.
fn tie_to_parent() {
    let _ = setpgid(Pid::from_raw(0), Pid::from_raw(0));
    let _ = set_pdeathsig(Signal::SIGKILL);
}

pub fn is_alive(pid: u32) -> bool {
    // A zombie still answers kill(0); look at its state too.
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    let state = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next());
    state != Some("Z") && state != Some("X")
}

/// Whether `pid` is still the process we started: its command line mentions `marker` (the env dir),
/// so a recycled pid is never signalled.
pub fn is_ours(pid: u32, marker: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline")).map(|c| String::from_utf8_lossy(&c).contains(marker)).unwrap_or(false)
}

/// SIGTERM, wait up to `grace`, then SIGKILL. Returns once the process is gone.
pub fn terminate(pid: u32, grace: Duration) {
    signal(pid, Signal::SIGTERM);
    let deadline = Instant::now() + grace;
    while is_alive(pid) && Instant::now() < deadline {
        reap(pid);
        std::thread::sleep(Duration::from_millis(50));
    }
    if is_alive(pid) {
        signal(pid, Signal::SIGKILL);
        while is_alive(pid) {
            reap(pid);
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    reap(pid);
}

fn signal(pid: u32, sig: Signal) {
    // A process that is already gone is fine: that is what we wanted.
    let _ = kill(Pid::from_raw(pid as i32), sig);
}

/// Collect the exit status if the process is our child (no-op otherwise).
fn reap(pid: u32) {
    // WNOHANG never blocks; a non-child pid just returns an error.
    let _ = waitpid(Pid::from_raw(pid as i32), Some(WaitPidFlag::WNOHANG));
}

/// The CPUs this process may run on (its affinity mask, which honours cpusets), in order.
pub fn allowed_cpus() -> Vec<usize> {
    match sched_getaffinity(Pid::from_raw(0)) {
        Ok(set) => (0..CpuSet::count()).filter(|&c| set.is_set(c).unwrap_or(false)).collect(),
        Err(_) => (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect(),
    }
}

/// Pin every thread of `pid` to `cpus` (`taskset -a`), or to every allowed CPU when `cpus` is empty.
pub fn set_affinity(pid: u32, cpus: &[usize]) -> Result<()> {
    let cpus = if cpus.is_empty() { allowed_cpus() } else { cpus.to_vec() };
    let list = cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",");
    let status = Command::new("taskset")
        .args(["-a", "-p", "-c", &list, &pid.to_string()])
        .stdout(Stdio::null())
        .status()
        .context("cannot run taskset (util-linux)")?;
    anyhow::ensure!(status.success(), "taskset -a -p -c {list} {pid} failed with {status}");
    Ok(())
}

/// The last `lines` lines of a log file, for error messages.
pub fn log_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Wait until `ready()` is true, failing early if the process died, with the log's tail.
pub fn wait_ready(
    what: &str,
    child_pid: u32,
    log: &Path,
    timeout: Duration,
    mut ready: impl FnMut() -> bool,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        if ready() {
            return Ok(());
        }
        crate::interrupt::check()?;
        if !is_alive(child_pid) {
            anyhow::bail!("{what} exited before it was ready; last lines of {}:\n{}", log.display(), log_tail(log, 30));
        }
        if Instant::now() > deadline {
            anyhow::bail!(
                "{what} was not ready after {} s; last lines of {}:\n{}",
                timeout.as_secs(),
                log.display(),
                log_tail(log, 30)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Spawn a short-lived child (an arm) with stdout piped to us and stderr to `log`, in its own
/// process group and tied to our lifetime.
pub fn spawn_piped(mut cmd: Command, log: &Path) -> Result<Child> {
    let err = File::create(log).with_context(|| format!("{}", log.display()))?;
    cmd.stdin(Stdio::null()).stderr(err);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            tie_to_parent();
            Ok(())
        });
    }
    let program = cmd.get_program().to_string_lossy().into_owned();
    cmd.spawn().with_context(|| format!("cannot start {program}"))
}
