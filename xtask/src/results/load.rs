//! Reading results/: one directory per run holding provenance.json and one `<matrix>.jsonl` per matrix.
//!
//! Only regular files inside the results directory are read; symlinks are refused so that a results
//! tree cannot make the site read (and publish) anything outside it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use streamlab_record::Record;
use streamlab_record::jsonl;
use streamlab_record::run_spec::{RUN_SPEC_FILE, RunSpec};

use crate::provenance::{PROVENANCE_FILE, Provenance};

/// One run directory, fully loaded and checked.
#[derive(Debug, Clone)]
pub struct Run {
    pub id: String,
    pub dir: PathBuf,
    pub provenance: Provenance,
    /// Matrix name -> its records, in file order.
    pub matrices: BTreeMap<String, MatrixFile>,
    /// What the run was asked to do (`run.json`; runs from before it existed have none).
    pub spec: Option<RunSpec>,
}

impl Run {
    /// Limited with `--arm` or `--point` to part of its matrices, to the points the claims rest on by a budget,
    /// or with knobs changed by `--set`.
    pub fn is_partial(&self) -> bool {
        self.spec
            .as_ref()
            .is_some_and(|s| !s.arms.is_empty() || !s.points.is_empty() || !s.sets.is_empty() || s.budget_s.is_some())
    }

    /// Run with knobs changed by `--set`: not the matrix as defined. (A run limited with `--arm` or `--point`
    /// measured the points it ran as defined.)
    pub fn changes_knobs(&self) -> bool {
        self.spec.as_ref().is_some_and(|s| !s.sets.is_empty())
    }
}

#[derive(Debug, Clone)]
pub struct MatrixFile {
    pub path: PathBuf,
    pub records: Vec<Record>,
}

/// Load every run under `dir`, oldest first (by start time, then id).
pub fn load_results(dir: &Path) -> Result<Vec<Run>> {
    let meta = std::fs::symlink_metadata(dir)
        .with_context(|| format!("results directory {} does not exist (run `cargo xtask lab run`)", dir.display()))?;
    ensure!(meta.is_dir(), "{} is not a directory", dir.display());
    let mut runs = Vec::new();
    for entry in sorted_entries(dir)? {
        let name = file_name(&entry);
        let meta = std::fs::symlink_metadata(&entry).with_context(|| format!("cannot stat {}", entry.display()))?;
        if name.starts_with('.') || meta.is_file() {
            // READMEs and temp files may sit beside the runs.
            continue;
        }
        ensure!(meta.is_dir(), "{}: not a regular directory (symlinks are not followed)", entry.display());
        runs.push(load_run(&entry)?);
    }
    runs.sort_by(|a, b| (a.provenance.started_ts_ms, &a.id).cmp(&(b.provenance.started_ts_ms, &b.id)));
    Ok(runs)
}

/// Load one run directory: its provenance and every `<matrix>.jsonl`, each record checked against both.
pub fn load_run(dir: &Path) -> Result<Run> {
    let id = file_name(dir);
    ensure!(is_safe_name(&id), "{}: a run directory name must be letters, digits, '.', '_' or '-'", dir.display());
    let prov_path = dir.join(PROVENANCE_FILE);
    ensure!(
        regular_file(&prov_path)?,
        "{}: no {PROVENANCE_FILE}; every run directory needs one (was the run interrupted before it started?)",
        dir.display()
    );
    let provenance = Provenance::load(&prov_path)?;
    ensure!(
        provenance.run_id == id,
        "{}: run_id {:?} does not match its directory name {id:?}",
        prov_path.display(),
        provenance.run_id
    );
    let mut matrices = BTreeMap::new();
    for path in sorted_entries(dir)? {
        let name = file_name(&path);
        let Some(matrix) = name.strip_suffix(".jsonl") else { continue };
        if name.starts_with('.') {
            continue;
        }
        ensure!(regular_file(&path)?, "{}: not a regular file (symlinks are not followed)", path.display());
        ensure!(is_safe_name(matrix), "{}: a matrix file name must be letters, digits, '_' or '-'", path.display());
        let records = jsonl::read_records(&path)?;
        check_records(&path, &id, matrix, &records)?;
        matrices.insert(matrix.to_owned(), MatrixFile { path, records });
    }
    let spec_path = dir.join(RUN_SPEC_FILE);
    let spec = if regular_file(&spec_path)? { Some(RunSpec::load(&spec_path)?) } else { None };
    Ok(Run { id, dir: dir.to_owned(), provenance, matrices, spec })
}

/// Every record must belong to the run and matrix its file says; errors name `file:line`.
fn check_records(path: &Path, run_id: &str, matrix: &str, records: &[Record]) -> Result<()> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    // read_records skips blank lines; map each record back to its line number.
    let lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).map(|(i, _)| i + 1);
    for (record, line) in records.iter().zip(lines) {
        let at = format!("{}:{line}", path.display());
        if record.run.id != run_id {
            bail!("{at}: record of run {:?} inside run directory {run_id:?}", record.run.id);
        }
        if record.bench != matrix {
            bail!("{at}: record of matrix {:?} inside {matrix}.jsonl", record.bench);
        }
        if record.arm.is_empty() {
            bail!("{at}: record without an arm");
        }
    }
    Ok(())
}

pub(super) fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        out.push(entry.with_context(|| format!("cannot list {}", dir.display()))?.path());
    }
    out.sort();
    Ok(out)
}

fn regular_file(path: &Path) -> Result<bool> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            bail!("{}: symlinks are not followed; results must be regular files", path.display())
        }
        Ok(meta) => Ok(meta.is_file()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).with_context(|| format!("cannot stat {}", path.display())),
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Names that become file names and links on the site.
pub fn is_safe_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name.len() <= 128
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fixtures;

    #[test]
    fn a_corrupt_line_fails_the_load_naming_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let run = fixtures::write_run(dir.path(), "run-a", 1_000, &fixtures::kafka_sink_records("run-a"));
        let path = run.join("kafka_sink.jsonl");
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        let half = &lines[2][..lines[2].len() / 2];
        lines[2] = half;
        std::fs::write(&path, lines.join("\n")).unwrap();
        let err = format!("{:#}", load_results(dir.path()).unwrap_err());
        assert!(err.contains(&format!("{}:3: not a valid record", path.display())), "{err}");
    }

    #[test]
    fn unknown_schemas_are_refused_for_records_and_provenance() {
        let dir = tempfile::tempdir().unwrap();
        let run = fixtures::write_run(dir.path(), "run-a", 1_000, &fixtures::kafka_sink_records("run-a"));
        let path = run.join("kafka_sink.jsonl");
        let text = std::fs::read_to_string(&path).unwrap().replacen("streamlab.record/2", "streamlab.record/3", 1);
        std::fs::write(&path, text).unwrap();
        let err = format!("{:#}", load_results(dir.path()).unwrap_err());
        assert!(err.contains(":1: schema \"streamlab.record/3\"; this build reads"), "{err}");

        let dir = tempfile::tempdir().unwrap();
        let run = fixtures::write_run(dir.path(), "run-b", 1_000, &fixtures::kafka_sink_records("run-b"));
        let prov = run.join(PROVENANCE_FILE);
        let text = std::fs::read_to_string(&prov).unwrap().replace("streamlab.provenance/1", "streamlab.provenance/7");
        std::fs::write(&prov, text).unwrap();
        let err = format!("{:#}", load_results(dir.path()).unwrap_err());
        assert!(err.contains("unknown provenance schema \"streamlab.provenance/7\""), "{err}");
    }

    #[test]
    fn records_must_match_their_run_and_matrix() {
        let dir = tempfile::tempdir().unwrap();
        let run = fixtures::write_run(dir.path(), "run-a", 1_000, &fixtures::kafka_sink_records("other-run"));
        let err = format!("{:#}", load_results(dir.path()).unwrap_err());
        let at = format!("{}:1: record of run \"other-run\"", run.join("kafka_sink.jsonl").display());
        assert!(err.contains(&at), "{err}");
    }

    #[test]
    fn runs_load_oldest_first_and_stray_files_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        fixtures::write_run(dir.path(), "b-newer", 2_000, &fixtures::kafka_sink_records("b-newer"));
        fixtures::write_run(dir.path(), "c-older", 1_000, &fixtures::kafka_sink_records("c-older"));
        std::fs::write(dir.path().join("README.md"), "results").unwrap();
        let runs = load_results(dir.path()).unwrap();
        let ids: Vec<&str> = runs.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["c-older", "b-newer"]);
        assert!(load_results(&dir.path().join("missing")).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_of_the_results_dir_are_refused() {
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret.jsonl");
        std::fs::write(&secret, "{}").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let run = fixtures::write_run(dir.path(), "run-a", 1_000, &fixtures::kafka_sink_records("run-a"));
        std::os::unix::fs::symlink(&secret, run.join("leak.jsonl")).unwrap();
        let err = format!("{:#}", load_results(dir.path()).unwrap_err());
        assert!(err.contains("symlinks are not followed"), "{err}");
        assert!(!is_safe_name("../x") && !is_safe_name(".hidden") && is_safe_name("20261129T0000Z-ab_c.1"));
    }
}
