//! Service processes, through the workspace's one door to the OS (streamlab-process): started in their own
//! process group, stopped by pid with a grace period, and (for lab runs) killed by the kernel if xtask dies.

use std::path::Path;
use std::time::{Duration, Instant};

pub use streamlab_process::Lifetime;
pub use streamlab_process::files::log_tail;
pub use streamlab_process::procfs::{allowed_cpus, is_alive, is_ours, reap, set_affinity, terminate, terminate_all};

/// Wait until `ready()` is true, failing early if the process died (or Ctrl-C came), with the log's tail.
pub fn wait_ready(
    what: &str,
    child_pid: u32,
    log: &Path,
    timeout: Duration,
    mut ready: impl FnMut() -> bool,
) -> anyhow::Result<()> {
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
