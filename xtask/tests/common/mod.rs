//! Helpers the end-to-end tests share: the xtask binary, the run's environment directories and processes, Ctrl-C.

#![allow(dead_code)] // each test binary uses its own subset

use std::path::{Path, PathBuf};
use std::time::Duration;

use streamlab_process::procfs::{self, Sig};
use streamlab_process::{Child, Cmd};
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
