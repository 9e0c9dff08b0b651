//! Running a client tool as a child process: its output captured, its CPU seconds measured, a deadline
//! enforced (a tool waiting for records that never come must not hang the run).

use std::io::Read;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// What one run of the tool left.
#[derive(Debug)]
pub struct ToolRun {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    /// User + system CPU seconds of the tool process.
    pub cpu_s: f64,
}

impl ToolRun {
    /// The last lines of stdout and stderr, for an error message.
    pub fn tail(&self) -> String {
        format!("stdout: {}\nstderr: {}", last_lines(&self.stdout, 10), last_lines(&self.stderr, 10))
    }
}

/// Runs `program args` to completion (killed after `timeout`). The CPU it used is the growth of this
/// process's reaped-children CPU across the run: the harness runs nothing else meanwhile.
pub fn run(program: &Path, args: &[String], timeout: Duration) -> Result<ToolRun> {
    let cpu_before = crate::cpu::children_cpu_seconds();
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {}", program.display()))?;
    let stdout = drain(child.stdout.take().context("piped stdout")?);
    let stderr = drain(child.stderr.take().context("piped stderr")?);
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let cpu_s = crate::cpu::children_cpu_seconds() - cpu_before;
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    match status {
        Some(status) => Ok(ToolRun { status, stdout, stderr, cpu_s }),
        None => bail!(
            "{} did not finish within {} s and was killed\nstdout: {}\nstderr: {}",
            program.display(),
            timeout.as_secs(),
            last_lines(&stdout, 10),
            last_lines(&stderr, 10)
        ),
    }
}

/// Reads a pipe to the end on its own thread (so a chatty tool never blocks on a full pipe).
fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_status_and_cpu_of_a_child_are_captured() {
        let args = ["-c", "echo out; echo err >&2; i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; exit 3"];
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let run = run(Path::new("/bin/sh"), &args, Duration::from_secs(60)).unwrap();
        assert_eq!(run.status.code(), Some(3));
        assert_eq!((run.stdout.as_str(), run.stderr.as_str()), ("out\n", "err\n"));
        assert!(run.cpu_s > 0.0, "a busy loop used CPU: {}", run.cpu_s);
    }

    #[test]
    fn a_tool_that_hangs_is_killed_at_the_deadline() {
        let args = vec!["-c".to_owned(), "echo started; exec sleep 30".to_owned()];
        let started = Instant::now();
        let error = run(Path::new("/bin/sh"), &args, Duration::from_millis(300)).unwrap_err().to_string();
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(error.contains("did not finish") && error.contains("started"), "{error}");
    }
}
