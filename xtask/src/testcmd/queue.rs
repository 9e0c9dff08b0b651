//! The work either lane takes once its own part is done: each end-to-end test (xtask/tests/*.rs) on its own, and
//! the service-free checks, longest first by the last run's times. The lanes' own parts differ by minutes and
//! vary by ±40 s from run to run; pulling from one queue, they end within about one test of each other.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};

use super::{cached_test_times, cargo_cmd};
use crate::paths::repo_root;

/// A job with no time from the last run: about a lab run's.
const UNKNOWN_S: f64 = 60.0;
/// The site build and check and the workflow linters: 36-57 s in CI.
const SERVICE_FREE_S: f64 = 45.0;

#[derive(Debug, PartialEq)]
pub enum Job {
    /// One test of an end-to-end file: `cargo test --test FILE -- --ignored --exact TEST`.
    EndToEnd { file: String, test: String },
    /// The site build + check and the workflow lints.
    ServiceFree,
}

/// The jobs, and whether the lane of xtask's own environments is done: the docker end-to-end test must not run
/// beside xtask's docker tests (one of them sweeps away the containers of runs it takes for killed ones), so the
/// queue opens once that lane's own tests are over (in CI, minutes before the other lane's).
pub struct Queue {
    jobs: Mutex<VecDeque<Job>>,
    open: AtomicBool,
}

impl Queue {
    /// Every ignored test of every file in xtask/tests, and the service-free checks, longest first.
    pub fn of_end_to_end() -> Result<Queue> {
        let mut tests = Vec::new();
        for file in end_to_end_files() {
            tests.extend(ignored_tests(&file)?.into_iter().map(|test| (file.clone(), test)));
        }
        Ok(Queue::of(ordered(tests, &last_times())))
    }

    /// A queue with nothing in it (when the tests could not be listed).
    pub fn empty() -> Queue {
        Queue::of(Vec::new())
    }

    fn of(jobs: Vec<Job>) -> Queue {
        Queue { jobs: Mutex::new(jobs.into()), open: AtomicBool::new(false) }
    }

    /// Let both lanes take jobs.
    pub fn open(&self) {
        self.open.store(true, Ordering::SeqCst);
    }

    /// The next job once the queue is open, or None when it is empty or Ctrl-C was pressed.
    pub fn next(&self) -> Option<Job> {
        while !self.open.load(Ordering::SeqCst) && !crate::interrupt::requested() {
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        if crate::interrupt::requested() {
            return None;
        }
        self.jobs.lock().expect("a lane panicked holding the queue").pop_front()
    }
}

/// The jobs longest first by `times` (seconds by test name), unknown ones at [`UNKNOWN_S`]: the longest ones
/// start first, so the short ones fill the end and the lanes end close together.
fn ordered(tests: Vec<(String, String)>, times: &BTreeMap<String, f64>) -> Vec<Job> {
    let mut jobs: Vec<(f64, Job)> = tests
        .into_iter()
        .map(|(file, test)| (times.get(&test).copied().unwrap_or(UNKNOWN_S), Job::EndToEnd { file, test }))
        .collect();
    jobs.push((SERVICE_FREE_S, Job::ServiceFree));
    jobs.sort_by(|(a, _), (b, _)| b.total_cmp(a));
    jobs.into_iter().map(|(_, job)| job).collect()
}

/// Each test's time in the last run on this machine (`seconds<TAB>step: test` lines), by test name.
fn last_times() -> BTreeMap<String, f64> {
    let text = std::fs::read_to_string(cached_test_times()).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let (secs, name) = line.split_once('\t')?;
            let test = name.rsplit_once(": ").map_or(name, |(_, test)| test);
            Some((test.to_owned(), secs.parse().ok()?))
        })
        .collect()
}

/// xtask/tests/*.rs by name.
fn end_to_end_files() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo_root().join("xtask/tests"))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".rs").map(str::to_owned))
        .collect();
    names.sort();
    names
}

/// The ignored tests of one end-to-end file, as libtest lists them (`NAME: test`).
fn ignored_tests(file: &str) -> Result<Vec<String>> {
    let args = ["test", "--workspace", "--release", "--test", file, "--", "--ignored", "--list"];
    let listed =
        cargo_cmd(&args).read(std::time::Duration::from_secs(600)).with_context(|| format!("listing {file}"))?;
    Ok(listed.lines().filter_map(|l| l.strip_suffix(": test")).map(str::to_owned).collect())
}

/// `cargo test` of one end-to-end test.
pub fn end_to_end_args<'a>(file: &'a str, test: &'a str) -> Vec<&'a str> {
    vec!["test", "--workspace", "--release", "--test", file, "--", "--ignored", "--exact", test, "--test-threads=1"]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_jobs_go_first_and_an_unknown_one_counts_as_a_lab_run() {
        let tests = ["short", "long", "new"].map(|t| ("lab_run".to_owned(), t.to_owned())).into();
        let times = BTreeMap::from([("short".to_owned(), 20.0), ("long".to_owned(), 110.0)]);
        let order: Vec<String> = ordered(tests, &times)
            .into_iter()
            .map(|job| match job {
                Job::EndToEnd { test, .. } => test,
                Job::ServiceFree => "service-free".into(),
            })
            .collect();
        assert_eq!(order, ["long", "new", "service-free", "short"]);
    }

    #[test]
    fn an_open_queue_gives_each_job_once_in_order_then_none() {
        let queue = Queue::of(vec![Job::ServiceFree, Job::EndToEnd { file: "f".into(), test: "t".into() }]);
        queue.open();
        assert_eq!(queue.next(), Some(Job::ServiceFree));
        assert_eq!(queue.next(), Some(Job::EndToEnd { file: "f".into(), test: "t".into() }));
        assert_eq!(queue.next(), None);
    }

    #[test]
    fn every_end_to_end_file_lists_its_tests() {
        let files = end_to_end_files();
        assert!(files.contains(&"durability".to_owned()) && files.contains(&"lab_run".to_owned()), "{files:?}");
        assert!(!files.contains(&"common".to_owned()), "common is a helper module, not a file of tests");
    }
}
