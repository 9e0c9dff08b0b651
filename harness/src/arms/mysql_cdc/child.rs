//! A pipeline process an arm runs for the length of one run (a Connect worker, a Redpanda Connect binary):
//! output into a log file in the run's private directory, dead with the harness (PR_SET_PDEATHSIG), stopped
//! with SIGTERM then SIGKILL, and its log's end quoted when it fails.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::{ArmInfo, Running};

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

    /// Where its output goes (it stays readable after the process stopped, until the run's directory goes).
    pub fn log_path(&self) -> &std::path::Path {
        &self.log
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

/// What an out-of-process arm runs: something the driver checks, measures by pid and stops.
pub trait Pipeline {
    /// Err once it has failed, with what it said.
    fn check(&mut self) -> Result<()>;
    fn pid(&self) -> u32;
    fn stop(self) -> Result<()>;
}

impl Pipeline for PipelineProcess {
    fn check(&mut self) -> Result<()> {
        self.check_alive()
    }
    fn pid(&self) -> u32 {
        PipelineProcess::pid(self)
    }
    fn stop(self) -> Result<()> {
        PipelineProcess::stop(self)
    }
}

/// What runs once the pipeline stopped: cleans up, and adds to what the record says (e.g. the settings its
/// log shows it ran with).
type AfterStop = Box<dyn FnOnce(&mut ArmInfo) -> Result<()>>;

/// [`Running`] for any [`Pipeline`]: its CPU is counted by pid, and `after_stop` runs once it stopped.
pub struct RunningPipeline<P: Pipeline> {
    pipeline: Option<P>,
    info: ArmInfo,
    after_stop: Option<AfterStop>,
}

impl<P: Pipeline> RunningPipeline<P> {
    pub fn new(pipeline: P, info: ArmInfo) -> Self {
        RunningPipeline { pipeline: Some(pipeline), info, after_stop: None }
    }

    pub fn after_stop(mut self, then: impl FnOnce(&mut ArmInfo) -> Result<()> + 'static) -> Self {
        self.after_stop = Some(Box::new(then));
        self
    }
}

impl<P: Pipeline> Running for RunningPipeline<P> {
    fn check(&mut self) -> Result<()> {
        self.pipeline.as_mut().map_or(Ok(()), P::check)
    }

    fn pids(&self) -> Vec<u32> {
        self.pipeline.iter().map(P::pid).collect()
    }

    fn in_process(&self) -> bool {
        false
    }

    fn stop(mut self: Box<Self>) -> Result<ArmInfo> {
        if let Some(p) = self.pipeline.take() {
            p.stop()?;
        }
        if let Some(then) = self.after_stop.take() {
            then(&mut self.info)?;
        }
        Ok(self.info)
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
        assert!(gone(pid));
    }

    #[test]
    fn a_running_pipeline_is_measured_by_its_pid_and_cleaned_up_after_it_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let mut sleeper = Command::new("sleep");
        sleeper.arg("30");
        let p = PipelineProcess::spawn(sleeper, dir.path().join("c.log"), "sleep").unwrap();
        let pid = p.pid();
        let cleaned = std::rc::Rc::new(std::cell::Cell::new(false));
        let flag = cleaned.clone();
        let info = ArmInfo { note: Some("as run".into()), ..Default::default() };
        let mut running: Box<dyn Running> = Box::new(RunningPipeline::new(p, info).after_stop(move |info| {
            flag.set(gone(pid));
            info.details.insert("after".into(), "stop".into());
            Ok(())
        }));
        running.check().unwrap();
        assert_eq!((running.pids(), running.in_process()), (vec![pid], false));
        let info = running.stop().unwrap();
        assert!(cleaned.get(), "the cleanup ran, after the process had ended");
        assert_eq!(info.note.as_deref(), Some("as run"));
        assert_eq!(info.details["after"], "stop", "and could add to the record");
    }

    /// The process has exited (or is a zombie nobody reaped yet).
    fn gone(pid: u32) -> bool {
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default().contains(" Z ")
    }
}
