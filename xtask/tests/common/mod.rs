//! Helpers the end-to-end tests share: the xtask binary, the run's environment directories and processes, Ctrl-C.

#![allow(dead_code)] // each test binary uses its own subset

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use streamlab_process::files::log_tail;
use streamlab_process::procfs::{self, Sig};
use streamlab_process::{Child, Cmd};
use streamlab_record::EnvDescriptor;
use streamlab_record::provenance::{PROVENANCE_FILE, Provenance};

/// A `lab run` at quick scale takes a few minutes on a small machine; past this it is hung.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(1800);

/// `cargo xtask` as built for these tests.
pub fn xtask() -> Cmd {
    Cmd::new(env!("CARGO_BIN_EXE_xtask"))
}

pub fn repo_root() -> PathBuf {
    // Read when the test runs, not compiled in: a build reused from a clone at another path keeps that path.
    let xtask = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo test sets CARGO_MANIFEST_DIR");
    Path::new(&xtask).parent().unwrap().to_owned()
}

/// Where environments keep their directories (what `env down` and a finished run remove).
pub fn envs_dir() -> PathBuf {
    repo_root().join("target/streamlab/envs")
}

/// The environment directories of run `run_id` still on disk.
pub fn envs_of(run_id: &str) -> Vec<PathBuf> {
    let prefix = format!("lab-{run_id}");
    std::fs::read_dir(envs_dir())
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

/// Live processes whose command line names one of run `run_id`'s environment directories (its brokers and
/// servers run from there).
pub fn processes_of(run_id: &str) -> Vec<u32> {
    let marker = envs_dir().join(format!("lab-{run_id}")).to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != std::process::id() && procfs::is_alive(pid) && procfs::is_ours(pid, &marker))
        .collect()
}

pub fn provenance(run_dir: &Path) -> Provenance {
    Provenance::load(&run_dir.join(PROVENANCE_FILE)).unwrap()
}

/// Ctrl-C as a terminal sends it: SIGINT to the run's whole process group.
pub fn ctrl_c(child: &mut Child) {
    child.signal_group(Sig::SIGINT);
    let status = child.wait().unwrap();
    assert!(!status.success(), "an interrupted run must not exit 0");
}

/// What is left under `dirs`, as paths (at most 60), for a failure message about leftovers.
pub fn tree(dirs: &[PathBuf]) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            out.push(entry.path());
            if entry.path().is_dir() {
                walk(&entry.path(), out);
            }
        }
    }
    let mut out = Vec::new();
    dirs.iter().for_each(|d| walk(d, &mut out));
    out.truncate(60);
    out
}

/// For a run whose rates nothing reads: half a second of warm-up and 2 s windows (the quick profile's are 1 s and
/// 4 s), so a task is over in about 4 s.
pub const SHORT_WINDOWS: [&str; 4] = ["--set", "warmup_s=0.5", "--set", "window_s=2"];

/// `lab run` of the kafka_sink matrix's raw arm at the quick profile on `env`, then `extra`, into `out`.
pub fn raw_quick_run(env: &str, extra: &[&str], out: &Path) -> Cmd {
    xtask()
        .args(["lab", "run", "--env", env, "--profile", "quick", "--matrix", "kafka_sink", "--arm", "raw"])
        .args(extra)
        .arg("--out")
        .arg(out)
}

/// `lab run --resume RUN_ID` into `out`, run to its end; returns what it printed on stdout.
pub fn resume(run_id: &str, out: &Path) -> String {
    let done = xtask().args(["lab", "run", "--resume", run_id, "--out"]).arg(out).output(RUN_TIMEOUT).unwrap();
    assert!(done.status.success(), "the resumed run failed:\n{}", done.tail(40));
    done.stdout
}

pub fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).map(|t| t.lines().map(str::to_owned).collect()).unwrap_or_default()
}

/// The run's output goes here, beside its run directory, so that a run that ends too early can say why.
pub fn run_log(out: &Path) -> PathBuf {
    out.join("run.log")
}

/// `cmd` started with its stdout and stderr in [`run_log`].
pub fn spawn_logged(cmd: Cmd, out: &Path) -> Child {
    cmd.log_to(run_log(out)).spawn().unwrap()
}

/// Wait (polling while `child` runs) until a run directory under `out` has a kafka_sink.jsonl with at least
/// `records` lines; returns that file.
pub fn wait_for_records(child: &mut Child, out: &Path, records: usize, within: Duration) -> PathBuf {
    let deadline = Instant::now() + within;
    loop {
        let found = std::fs::read_dir(out)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .map(|e| e.path().join("kafka_sink.jsonl"))
            .find(|p| lines(p).len() >= records);
        if let Some(p) = found {
            return p;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the run ended ({status}) before it was interrupted:\n{}", log_tail(&run_log(out), 40));
        }
        assert!(
            Instant::now() < deadline,
            "fewer than {records} records after {} s:\n{}",
            within.as_secs(),
            log_tail(&run_log(out), 40)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The raw arm's quick run on `env` at [`SHORT_WINDOWS`], interrupted with Ctrl-C once `records` records are written
/// (within `within`); returns its kafka_sink.jsonl.
pub fn interrupted_raw_run(env: &str, records: usize, within: Duration, out: &Path) -> PathBuf {
    let mut child = spawn_logged(raw_quick_run(env, &SHORT_WINDOWS, out), out);
    let jsonl = wait_for_records(&mut child, out, records, within);
    ctrl_c(&mut child);
    jsonl
}

/// The run's id: its directory's name.
pub fn run_id_of(jsonl: &Path) -> String {
    jsonl.parent().unwrap().file_name().unwrap().to_string_lossy().into_owned()
}

/// The (finished, to run) counts of `lab run --resume`'s first line.
pub fn resume_counts(stdout: &str) -> (usize, usize) {
    let line = stdout.lines().find(|l| l.starts_with("resuming ")).unwrap_or_else(|| panic!("{stdout}"));
    let numbers: Vec<usize> = line.split([' ', ',']).filter_map(|w| w.parse().ok()).collect();
    assert_eq!(numbers.len(), 2, "{line}");
    (numbers[0], numbers[1])
}

/// A cluster brought up by hand (`env up`), brought down again when dropped, whatever the test did.
pub struct HandMadeCluster {
    pub descriptor: EnvDescriptor,
}

impl HandMadeCluster {
    pub fn up(brokers: u32) -> HandMadeCluster {
        let out = xtask()
            .args(["env", "up", "--env", "native", "--mysql", "false", "--brokers", &brokers.to_string()])
            .output(Duration::from_secs(600))
            .unwrap();
        assert!(out.status.success(), "env up failed:\n{}", out.tail(30));
        let path =
            out.stdout.lines().find_map(|l| l.strip_prefix("descriptor: ")).expect("env up names its descriptor");
        HandMadeCluster { descriptor: EnvDescriptor::load(Path::new(path.trim())).unwrap() }
    }
}

impl Drop for HandMadeCluster {
    fn drop(&mut self) {
        let _ = xtask().args(["env", "down", &self.descriptor.id]).run(Duration::from_secs(300));
    }
}
