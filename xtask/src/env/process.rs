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
            anyhow::bail!("{what} exited before it was ready; {}", what_the_log_says(log));
        }
        if Instant::now() > deadline {
            anyhow::bail!("{what} was not ready after {} s; {}", timeout.as_secs(), what_the_log_says(log));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A failed service's log for its error: the first error line (a JVM's cause sits above a stack trace and shutdown
/// lines that can outrun any tail), then the last lines.
fn what_the_log_says(log: &Path) -> String {
    let text = String::from_utf8_lossy(&std::fs::read(log).unwrap_or_default()).into_owned();
    let tail = streamlab_process::files::last_lines(&text, 30);
    let first_error = text.lines().find(|l| ["ERROR", "FATAL", "Exception:", "Error:"].iter().any(|m| l.contains(m)));
    match first_error {
        Some(line) if !tail.contains(line) => {
            format!("its first error line: {}\nlast lines of {}:\n{tail}", line.trim(), log.display())
        }
        _ => format!("last lines of {}:\n{tail}", log.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_above_a_long_stack_trace_is_named_with_the_tail() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("kafka.out");
        let mut text =
            String::from("starting\n[ERROR] KafkaException: Socket server failed to bind: Address already in use\n");
        text.extend((0..40).map(|i| format!("\tat frame{i}\n")));
        std::fs::write(&log, &text).unwrap();
        let said = what_the_log_says(&log);
        assert!(said.starts_with("its first error line: [ERROR] KafkaException"), "{said}");
        assert!(said.contains("Address already in use") && said.ends_with("\tat frame39"), "{said}");
        // A cause inside the tail is not said twice.
        std::fs::write(&log, "starting\njava.net.BindException: Address already in use\n").unwrap();
        assert!(what_the_log_says(&log).starts_with("last lines of "), "{}", what_the_log_says(&log));
    }
}
