//! Child processes: one builder ([`Cmd`]) for every program the workspace starts, and one handle
//! ([`Child`]) that is always waited for. A child is tied to its parent by default (its own process group, so
//! a terminal's Ctrl-C reaches only the parent, which stops it in order; SIGKILL from the kernel if the
//! parent thread that started it dies); short commands run to completion under a deadline ([`Cmd::output`],
//! [`Cmd::run`]). Dropping a [`Child`] that still runs kills and reaps it: no child outlives its handle by
//! accident, and none is left a zombie.

use std::ffi::OsStr;
use std::fs::File;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use nix::sched::sched_setaffinity;
use nix::sys::prctl::set_pdeathsig;
use nix::sys::signal::Signal;
use nix::unistd::{Pid, setpgid, setsid};

use crate::files::{last_lines, log_tail};
use crate::procfs;

/// How a child outlives (or not) the process that starts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lifetime {
    /// Its own process group, and SIGKILL from the kernel when the starting thread dies (PR_SET_PDEATHSIG):
    /// lab runs, tests, arms and their tools.
    #[default]
    TiedToParent,
    /// A session of its own that survives its parent (`env up` by hand).
    Detached,
}

/// Where a child's stdout and stderr go.
#[derive(Debug, Clone, Default)]
enum Streams {
    /// Inherited from this process.
    #[default]
    Inherit,
    /// Both appended to a log file.
    Log(PathBuf),
    /// stdout piped to the parent, stderr appended to a log file (or inherited without one).
    PipedOut { stderr_log: Option<PathBuf> },
    /// Both piped (what [`Cmd::output`] reads).
    Captured,
}

/// A program to start: the one door the workspace uses (see the crate doc).
#[derive(Debug)]
pub struct Cmd {
    command: Command,
    lifetime: Lifetime,
    streams: Streams,
    cpus: Option<Vec<usize>>,
    /// What [`Cmd::output`] writes to the child's stdin (never the command line: it may hold secrets).
    input: Option<Vec<u8>>,
}

/// What a finished command printed.
#[derive(Debug, Clone)]
pub struct Output {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    /// User + system CPU seconds of the command and its reaped children (their growth across its run: the
    /// calling process must not reap other children meanwhile for this to be exact).
    pub cpu_s: f64,
}

impl Output {
    /// The last lines of stdout and stderr, for an error message.
    pub fn tail(&self, lines: usize) -> String {
        format!("stdout: {}\nstderr: {}", last_lines(&self.stdout, lines), last_lines(&self.stderr, lines))
    }
}

impl Cmd {
    pub fn new(program: impl AsRef<OsStr>) -> Cmd {
        Cmd {
            command: Command::new(program),
            lifetime: Lifetime::default(),
            streams: Streams::default(),
            cpus: None,
            input: None,
        }
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Cmd {
        self.command.arg(arg);
        self
    }

    pub fn args<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(mut self, args: I) -> Cmd {
        self.command.args(args);
        self
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Cmd {
        self.command.env(key, value);
        self
    }

    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Cmd {
        self.command.env_remove(key);
        self
    }

    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Cmd {
        self.command.current_dir(dir);
        self
    }

    pub fn lifetime(mut self, lifetime: Lifetime) -> Cmd {
        self.lifetime = lifetime;
        self
    }

    /// stdout and stderr appended to `log` (created if missing).
    pub fn log_to(mut self, log: impl Into<PathBuf>) -> Cmd {
        self.streams = Streams::Log(log.into());
        self
    }

    /// stdout piped to this process ([`Child::take_stdout`]), stderr appended to `log`.
    pub fn pipe_stdout(mut self, stderr_log: impl Into<PathBuf>) -> Cmd {
        self.streams = Streams::PipedOut { stderr_log: Some(stderr_log.into()) };
        self
    }

    /// stdout piped to this process ([`Child::take_stdout`]), stderr shown as it comes.
    pub fn pipe_stdout_show_stderr(mut self) -> Cmd {
        self.streams = Streams::PipedOut { stderr_log: None };
        self
    }

    /// Run the child (all its threads) on these CPUs only.
    pub fn cpus(mut self, cpus: &[usize]) -> Cmd {
        self.cpus = Some(cpus.to_vec());
        self
    }

    /// Bytes [`Cmd::output`] and [`Cmd::read`] write to the child's stdin, then close it.
    pub fn stdin(mut self, input: impl Into<Vec<u8>>) -> Cmd {
        self.input = Some(input.into());
        self
    }

    /// The program and its arguments (what a container host runs instead).
    pub fn argv(&self) -> Vec<&OsStr> {
        std::iter::once(self.command.get_program()).chain(self.command.get_args()).collect()
    }

    /// The environment variables set on the command (`None`: removed).
    pub fn envs(&self) -> Vec<(&OsStr, Option<&OsStr>)> {
        self.command.get_envs().collect()
    }

    /// The stdin bytes set with [`Cmd::stdin`].
    pub fn input(&self) -> Option<&[u8]> {
        self.input.as_deref()
    }

    /// The program's name, for messages.
    pub fn program(&self) -> String {
        self.command.get_program().to_string_lossy().into_owned()
    }

    /// The command line as a shell would show it (for logs and records; mask secrets before showing it).
    pub fn display(&self) -> String {
        std::iter::once(self.command.get_program())
            .chain(self.command.get_args())
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Start the child.
    pub fn spawn(mut self) -> Result<Child> {
        let program = self.program();
        let log = match &self.streams {
            Streams::Inherit => None,
            Streams::Log(path) => {
                let out = append(path)?;
                self.command.stdin(Stdio::null()).stdout(out.try_clone()?).stderr(out);
                Some(path.clone())
            }
            Streams::PipedOut { stderr_log: Some(log) } => {
                self.command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(append(log)?);
                Some(log.clone())
            }
            Streams::PipedOut { stderr_log: None } => {
                self.command.stdin(Stdio::null()).stdout(Stdio::piped());
                None
            }
            Streams::Captured => {
                let stdin = if self.input.is_some() { Stdio::piped() } else { Stdio::null() };
                self.command.stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped());
                None
            }
        };
        let lifetime = self.lifetime;
        let cpus = self.cpus.as_deref().map(procfs::cpu_set).transpose()?;
        // SAFETY: only async-signal-safe system calls run between fork and exec (setsid, setpgid, prctl,
        // sched_setaffinity), on values prepared before the fork.
        unsafe {
            self.command.pre_exec(move || {
                match lifetime {
                    Lifetime::Detached => {
                        let _ = setsid();
                    }
                    Lifetime::TiedToParent => {
                        let _ = setpgid(Pid::from_raw(0), Pid::from_raw(0));
                        let _ = set_pdeathsig(Signal::SIGKILL);
                    }
                }
                if let Some(set) = &cpus {
                    sched_setaffinity(Pid::from_raw(0), set).map_err(std::io::Error::from)?;
                }
                Ok(())
            });
        }
        let child = self.command.spawn().with_context(|| format!("cannot start {program}"))?;
        Ok(Child { child: Some(child), program, log, lifetime })
    }

    /// Run to completion with stdout and stderr captured; killed (and reaped) at `timeout`.
    pub fn output(mut self, timeout: Duration) -> Result<Output> {
        self.streams = Streams::Captured;
        // spawn() pipes stdin when there is input; the bytes are written once the child runs.
        let input = self.input.clone();
        let cpu_before = procfs::children_cpu_seconds();
        let mut child = self.spawn()?;
        let inner = child.child.as_mut().expect("a child just started");
        if let (Some(bytes), Some(mut pipe)) = (input, inner.stdin.take()) {
            // On a thread of its own: a child that prints a lot before reading must not deadlock us.
            std::thread::spawn(move || {
                let _ = std::io::Write::write_all(&mut pipe, &bytes);
            });
        }
        let stdout = drain(inner.stdout.take().context("piped stdout")?);
        let stderr = drain(inner.stderr.take().context("piped stderr")?);
        let status = child.wait_timeout(timeout)?;
        let cpu_s = procfs::children_cpu_seconds() - cpu_before;
        let (stdout, stderr) = (stdout.join().unwrap_or_default(), stderr.join().unwrap_or_default());
        match status {
            Some(status) => Ok(Output { status, stdout, stderr, cpu_s }),
            None => bail!(
                "{} did not finish within {} s and was killed\nstdout: {}\nstderr: {}",
                child.program,
                timeout.as_secs(),
                last_lines(&stdout, 10),
                last_lines(&stderr, 10)
            ),
        }
    }

    /// Run to completion (output inherited, or into the log set with [`Cmd::log_to`]) and require success;
    /// killed at `timeout`.
    pub fn run(self, timeout: Duration) -> Result<()> {
        let shown = self.display();
        let mut child = self.spawn()?;
        match child.wait_timeout(timeout)? {
            Some(status) if status.success() => Ok(()),
            Some(status) => bail!("{shown} failed ({status}){}", child.log_tail_text(20)),
            None => {
                bail!("{shown} did not finish within {} s and was killed{}", timeout.as_secs(), child.log_tail_text(20))
            }
        }
    }

    /// Run to completion with captured output and require success; the error quotes what it printed.
    pub fn read(self, timeout: Duration) -> Result<String> {
        let shown = self.display();
        let out = self.output(timeout)?;
        if !out.status.success() {
            bail!("{shown} failed ({}):\n{}", out.status, out.tail(20));
        }
        Ok(out.stdout)
    }
}

fn append(path: &Path) -> Result<File> {
    File::options().create(true).append(true).open(path).with_context(|| format!("cannot open {}", path.display()))
}

/// Reads a pipe to the end on its own thread (so a chatty child never blocks on a full pipe).
fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// A started child. Dropped while it runs, it is killed and reaped; [`Child::release`] hands a long-lived
/// service over to pid-based management ([`procfs::terminate`]) instead.
#[derive(Debug)]
pub struct Child {
    child: Option<std::process::Child>,
    program: String,
    log: Option<PathBuf>,
    lifetime: Lifetime,
}

impl Child {
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, |c| c.id())
    }

    /// The piped stdout ([`Cmd::pipe_stdout`]), once.
    pub fn take_stdout(&mut self) -> Option<std::process::ChildStdout> {
        self.child.as_mut()?.stdout.take()
    }

    /// The exit status if it has ended (reaping it), without waiting.
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>> {
        match self.child.as_mut() {
            Some(c) => c.try_wait().with_context(|| format!("waiting for {}", self.program)),
            None => Ok(None),
        }
    }

    /// Wait for the end.
    pub fn wait(&mut self) -> Result<ExitStatus> {
        let program = self.program.clone();
        self.child.as_mut().context("the child was released")?.wait().with_context(|| format!("waiting for {program}"))
    }

    /// Wait until it ends or `timeout` passes; at the timeout it is killed and reaped and `None` returned.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Result<Option<ExitStatus>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_wait()? {
                return Ok(Some(status));
            }
            if Instant::now() >= deadline {
                self.kill();
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Err once it has ended, naming how, with the end of its log.
    pub fn check_running(&mut self) -> Result<()> {
        if let Some(status) = self.try_wait()? {
            bail!("{} exited ({status}){}", self.program, self.log_tail_text(30));
        }
        Ok(())
    }

    /// SIGTERM, then SIGKILL after `grace`; returns once it is gone and reaped.
    pub fn stop(&mut self, grace: Duration) -> Result<Option<ExitStatus>> {
        if self.try_wait()?.is_some() || self.child.is_none() {
            return Ok(None);
        }
        procfs::signal(self.pid(), Signal::SIGTERM);
        match self.wait_timeout(grace)? {
            Some(status) => Ok(Some(status)),
            None => Ok(None),
        }
    }

    /// Send `sig` to the child's whole process group (a tied child leads one of its own): what a terminal's
    /// Ctrl-C would have done had the child shared ours.
    pub fn signal_group(&self, sig: Signal) {
        if self.child.is_some() {
            let _ = nix::sys::signal::killpg(Pid::from_raw(self.pid() as i32), sig);
        }
    }

    /// SIGKILL and reap (a no-op once it has ended). A tied child dies with its whole process group: a shell's
    /// or a tool's own children would otherwise live on, holding its output pipes open.
    pub fn kill(&mut self) {
        let Some(c) = self.child.as_mut() else { return };
        // Only while it has not been reaped: until then its pid (and so its group id) cannot be reused.
        if let Ok(None) = c.try_wait() {
            if self.lifetime == Lifetime::TiedToParent {
                let _ = nix::sys::signal::killpg(Pid::from_raw(c.id() as i32), Signal::SIGKILL);
            }
            let _ = c.kill();
        }
        let _ = c.wait();
    }

    /// The last `lines` lines of its log (empty without one).
    pub fn log_tail(&self, lines: usize) -> String {
        self.log.as_deref().map(|l| log_tail(l, lines)).unwrap_or_default()
    }

    fn log_tail_text(&self, lines: usize) -> String {
        match &self.log {
            Some(l) => format!("; the end of {}:\n{}", l.display(), log_tail(l, lines)),
            None => String::new(),
        }
    }

    /// Give up the handle of a long-lived service and keep only its pid: it is not killed on drop, and
    /// whoever holds the pid stops it with [`procfs::terminate`], which also reaps it.
    pub fn release(mut self) -> u32 {
        let pid = self.pid();
        self.child = None;
        pid
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if let Ok(None) = self.try_wait() {
            self.kill();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_status_and_cpu_of_a_command_are_captured() {
        let script = "echo out; echo err >&2; i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; exit 3";
        let out = Cmd::new("/bin/sh").args(["-c", script]).output(Duration::from_secs(60)).unwrap();
        assert_eq!(out.status.code(), Some(3));
        assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("out\n", "err\n"));
        assert!(out.cpu_s > 0.0, "a busy loop used CPU: {}", out.cpu_s);
    }

    #[test]
    fn a_command_that_hangs_is_killed_and_reaped_at_the_deadline() {
        let started = Instant::now();
        let err = Cmd::new("/bin/sh")
            .args(["-c", "echo started; exec sleep 30"])
            .output(Duration::from_millis(300))
            .unwrap_err()
            .to_string();
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(err.contains("did not finish") && err.contains("started"), "{err}");
    }

    #[test]
    fn a_hung_command_s_own_children_die_with_it_at_the_deadline() {
        // The shell's `sleep` holds the output pipes: killing the shell alone would leave output() waiting 30 s.
        let started = Instant::now();
        let err = Cmd::new("/bin/sh").args(["-c", "sleep 30; true"]).output(Duration::from_millis(300)).unwrap_err();
        assert!(err.to_string().contains("did not finish"), "{err:#}");
        assert!(started.elapsed() < Duration::from_secs(10), "returned after {:?}", started.elapsed());
    }

    #[test]
    fn run_and_read_fail_with_what_the_command_said() {
        let err = Cmd::new("/bin/sh").args(["-c", "echo nope >&2; exit 2"]).read(Duration::from_secs(10)).unwrap_err();
        assert!(format!("{err:#}").contains("nope"), "{err:#}");
        assert_eq!(Cmd::new("/bin/echo").arg("hi").read(Duration::from_secs(10)).unwrap(), "hi\n");
        assert_eq!(Cmd::new("cat").stdin("secret").read(Duration::from_secs(10)).unwrap(), "secret");
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let err = Cmd::new("/bin/sh").args(["-c", "echo why; exit 1"]).log_to(&log).run(Duration::from_secs(10));
        assert!(format!("{:#}", err.unwrap_err()).contains("why"));
    }

    #[test]
    fn a_dropped_child_is_killed_and_reaped_not_left_a_zombie() {
        let child = Cmd::new("sleep").arg("30").spawn().unwrap();
        let pid = child.pid();
        assert!(procfs::is_alive(pid));
        drop(child);
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "reaped, not a zombie");
    }

    #[test]
    fn a_stopped_child_ends_on_sigterm_and_a_stubborn_one_on_sigkill() {
        let mut polite = Cmd::new("sleep").arg("30").spawn().unwrap();
        let status = polite.stop(Duration::from_secs(5)).unwrap().expect("ended within the grace");
        assert!(!status.success());
        let mut stubborn = Cmd::new("/bin/sh").args(["-c", "trap '' TERM; sleep 30 & wait"]).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let started = Instant::now();
        assert!(stubborn.stop(Duration::from_millis(300)).unwrap().is_none(), "killed after the grace");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(!procfs::is_alive(stubborn.pid()));
    }

    #[test]
    fn a_child_runs_on_the_cpus_it_is_given_and_logs_where_it_is_told() {
        let cpu = procfs::allowed_cpus()[0];
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("out.log");
        let mut child =
            Cmd::new("/bin/sh").args(["-c", "echo hello; exec sleep 30"]).cpus(&[cpu]).log_to(&log).spawn().unwrap();
        assert_eq!(procfs::affinity_of(child.pid()).unwrap(), vec![cpu]);
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(child.log_tail(1), "hello");
        child.check_running().unwrap();
        child.kill();
        let err = child.check_running();
        assert!(err.is_ok() || format!("{:#}", err.unwrap_err()).contains("exited"));
    }

    #[test]
    fn a_released_service_survives_its_handle_until_terminated_by_pid() {
        let pid = Cmd::new("sleep").arg("30").spawn().unwrap().release();
        assert!(procfs::is_alive(pid));
        procfs::terminate(pid, Duration::from_secs(5));
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "terminated and reaped");
    }

    #[test]
    fn services_stopped_together_share_one_grace_period_and_take_their_children() {
        let polite = Cmd::new("sleep").arg("30").spawn().unwrap().release();
        let stubborn = Cmd::new("/bin/sh").args(["-c", "trap '' TERM; sleep 30 & wait"]).spawn().unwrap().release();
        std::thread::sleep(Duration::from_millis(200));
        let children = std::fs::read_to_string(format!("/proc/{stubborn}/task/{stubborn}/children")).unwrap();
        let orphan: u32 = children.split_whitespace().next().expect("the shell's sleep").parse().unwrap();
        let started = Instant::now();
        procfs::terminate_all(&[polite, stubborn], Duration::from_millis(500));
        assert!(started.elapsed() < Duration::from_secs(10), "one grace period, not one each");
        for pid in [polite, stubborn] {
            assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "{pid} terminated and reaped");
        }
        assert!(!procfs::is_alive(orphan), "the stubborn service's own child outlived it");
    }
}
