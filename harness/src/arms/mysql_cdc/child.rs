//! A pipeline process an arm runs for the length of one run (a Connect worker, a Redpanda Connect binary):
//! output into a log file in the run's private directory, dead with the harness (PR_SET_PDEATHSIG), stopped
//! with SIGTERM then SIGKILL, and its log's end quoted when it fails.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// How long a stopped process gets to exit on SIGTERM.
const GRACE: Duration = Duration::from_secs(10);

pub struct PipelineProcess {
    child: Child,
    log: PathBuf,
    what: String,
}

impl PipelineProcess {
    /// Start `cmd` with stdout and stderr into `log`; `what` names it in errors.
    pub fn spawn(mut cmd: Command, log: PathBuf, what: &str) -> Result<Self> {
        let out = std::fs::File::create(&log).with_context(|| format!("cannot create {}", log.display()))?;
        cmd.stdin(Stdio::null()).stdout(out.try_clone()?).stderr(out);
        // SAFETY: prctl is async-signal-safe; the process dies with the harness rather than outliving it.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd.spawn().with_context(|| format!("cannot start {what} ({})", cmd.get_program().display()))?;
        Ok(PipelineProcess { child, log, what: what.to_owned() })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Err once the process has exited, with the end of its log.
    pub fn check_alive(&mut self) -> Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!("{} exited ({status}); its log ends:\n{}", self.what, self.log_tail(30));
        }
        Ok(())
    }

    /// SIGTERM, then SIGKILL after [`GRACE`].
    pub fn stop(mut self) -> Result<()> {
        if self.child.try_wait()?.is_none() {
            // SAFETY: a signal to the child we own.
            unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
            let deadline = Instant::now() + GRACE;
            while self.child.try_wait()?.is_none() {
                if Instant::now() > deadline {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(())
    }

    /// The last `lines` lines of the log.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = String::from_utf8_lossy(&std::fs::read(&self.log).unwrap_or_default()).into_owned();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

impl Drop for PipelineProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_that_exits_is_reported_with_its_log_and_a_running_one_is_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo starting; echo 'bad config: no such plugin' >&2; exit 3"]);
        let mut p = PipelineProcess::spawn(cmd, dir.path().join("a.log"), "the test pipeline").unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let err = p.check_alive().unwrap_err().to_string();
        assert!(err.contains("the test pipeline exited") && err.contains("bad config: no such plugin"), "{err}");

        let mut sleeper = Command::new("sleep");
        sleeper.arg("30");
        let mut p = PipelineProcess::spawn(sleeper, dir.path().join("b.log"), "sleep").unwrap();
        p.check_alive().unwrap();
        let pid = p.pid();
        let started = Instant::now();
        p.stop().unwrap();
        assert!(started.elapsed() < GRACE);
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default().contains(" Z ")
        );
    }
}
