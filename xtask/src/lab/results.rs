//! A run's directory: results/<run-id>/{run.json, provenance.json, <matrix>.jsonl}. Records are
//! appended atomically as each task ends, so an interrupted run keeps every finished task.

use std::collections::BTreeSet;
use std::path::PathBuf;

use anyhow::{Context, Result};
use streamlab_record::Record;
use streamlab_record::jsonl::{append_records, read_records};

use streamlab_record::run_spec::{RUN_SPEC_FILE, RunSpec};

/// (bench, arm, sweep, label, rep): what identifies a finished task.
pub type TaskKey = (String, String, String, String, u32);

pub struct RunDir {
    pub path: PathBuf,
}

impl RunDir {
    pub fn new(path: PathBuf) -> Self {
        RunDir { path }
    }

    pub fn jsonl(&self, bench: &str) -> PathBuf {
        self.path.join(format!("{bench}.jsonl"))
    }

    /// Save what the run was asked to do so `--resume` runs exactly the same plan.
    pub fn save_spec(&self, spec: &RunSpec) -> Result<()> {
        Ok(spec.save(&self.path.join(RUN_SPEC_FILE))?)
    }

    pub fn load_spec(&self) -> Result<RunSpec> {
        let path = self.path.join(RUN_SPEC_FILE);
        anyhow::ensure!(path.exists(), "--resume: there is no {} (is the run id right?)", path.display());
        RunSpec::load(&path).context("--resume")
    }

    /// Every record this run has written so far, for the given matrices.
    pub fn records(&self, benches: &[String]) -> Result<Vec<Record>> {
        let mut out = Vec::new();
        for bench in benches {
            let path = self.jsonl(bench);
            if path.exists() {
                out.extend(read_records(&path)?);
            }
        }
        Ok(out)
    }

    pub fn append(&self, record: &Record) -> Result<()> {
        append_records(&self.jsonl(&record.bench), std::slice::from_ref(record))?;
        Ok(())
    }
}

/// A run id: UTC start time, profile and a random suffix, e.g. `20261129T221500Z-quick-3fa2`.
/// Keys of the tasks that already have a record (any status).
pub fn finished(records: &[Record]) -> BTreeSet<TaskKey> {
    records
        .iter()
        .map(|r| {
            let sweep = r.variant.sweeps.first().cloned().unwrap_or_default();
            (r.bench.clone(), r.arm.clone(), sweep, r.variant.label.clone(), r.rep)
        })
        .collect()
}

pub fn new_run_id(profile: streamlab_record::run_spec::Profile) -> String {
    let secs = streamlab_process::clock::now_ms() / 1000;
    format!("{}-{profile}-{:04x}", crate::clock::compact_utc(secs), rand::random::<u16>())
}
