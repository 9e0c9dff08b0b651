//! What an out-of-process arm runs for the length of one run (a Connect worker, a Redpanda Connect binary):
//! a [`streamlab_process::Child`] started tied to the harness with its output in a log in the run's private
//! directory; the driver checks it (its log's end quoted when it fails), measures it by pid, and stops it
//! with SIGTERM then SIGKILL after [`GRACE`].

use std::time::Duration;

use anyhow::Result;
use streamlab_process::Child;

use super::{ArmInfo, Running};

/// How long a stopped pipeline gets to exit on SIGTERM.
pub const GRACE: Duration = Duration::from_secs(10);

/// What an out-of-process arm runs: something the driver checks, measures by pid and stops.
pub trait Pipeline {
    /// Err once it has failed, with what it said.
    fn check(&mut self) -> Result<()>;
    fn pid(&self) -> u32;
    fn stop(self) -> Result<()>;
}

/// A bare process: failed once it has exited.
impl Pipeline for Child {
    fn check(&mut self) -> Result<()> {
        self.check_running()
    }
    fn pid(&self) -> u32 {
        Child::pid(self)
    }
    fn stop(mut self) -> Result<()> {
        Child::stop(&mut self, GRACE).map(drop)
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

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use streamlab_process::{Cmd, Lifetime};

    use super::*;

    fn start(script: &str, log: &std::path::Path) -> Child {
        Cmd::new("/bin/sh").args(["-c", script]).lifetime(Lifetime::TiedToParent).log_to(log).spawn().unwrap()
    }

    #[test]
    fn a_process_that_exits_fails_its_check_with_its_log_and_a_running_one_is_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = start("echo starting; echo 'bad config: no such plugin' >&2; exit 3", &dir.path().join("a.log"));
        let deadline = Instant::now() + Duration::from_secs(30);
        let err = loop {
            match Pipeline::check(&mut p) {
                Err(e) => break format!("{e:#}"),
                Ok(()) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                Ok(()) => panic!("the shell never exited"),
            }
        };
        assert!(err.contains("exited") && err.contains("bad config: no such plugin"), "{err}");

        let mut p = start("exec sleep 30", &dir.path().join("b.log"));
        Pipeline::check(&mut p).unwrap();
        let pid = Pipeline::pid(&p);
        let started = Instant::now();
        Pipeline::stop(p).unwrap();
        assert!(started.elapsed() < GRACE, "it ended on SIGTERM, before the grace ran out");
        assert!(gone(pid));
    }

    #[test]
    fn a_running_pipeline_is_measured_by_its_pid_and_cleaned_up_after_it_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let p = start("exec sleep 30", &dir.path().join("c.log"));
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

    /// The process has ended and been reaped.
    fn gone(pid: u32) -> bool {
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
    }
}
