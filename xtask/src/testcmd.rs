//! `cargo xtask test`, the README's test command: formatting and lints, one release build of the workspace,
//! unit tests, then the integration tests against real services (the xtask ones start their own
//! environments; the harness ones share one native environment brought up here), the site checks and the
//! workflow linters. Prints how long each step took and ends with one `N passed, N failed` line.
//!
//! Why not cargo-nextest (measured side by side on the 2-core CI machine, 2026-12-06): warm, the two take the same
//! time (unit tests 23.6 s here, 21.9 s there; the ignored tests in two lanes about 440 s here, 422 s there), but
//! nextest would still need this command around it for the shared environment, the tools, dockerd and the site
//! checks, it orders nothing by the times recorded, and a fresh machine must first build it from crates.io (326 s).

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use streamlab_process::Cmd;
use streamlab_record::descriptor::DESCRIPTOR_FILE;
use streamlab_record::run_spec::Need;
use streamlab_record::tools::Tool;

use crate::env::backend::{Backend, EnvSpec};
use crate::env::native::NativeBackend;
use crate::paths::repo_root;

mod queue;

/// No step of the suite may take longer than this (a hung test must not hang CI).
const STEP_TIMEOUT: Duration = Duration::from_secs(3600);

#[derive(clap::Args)]
pub struct TestArgs {
    /// Unit tests only: no services, no browser.
    #[arg(long)]
    pub unit: bool,
}

/// Totals parsed from every `test result:` line, and each step's time.
#[derive(Default)]
struct Tally {
    passed: u64,
    failed: u64,
    failures: Vec<String>,
    times: Vec<(String, Span)>,
    /// Each test that ran in a step, `step: test`, with how long it took.
    test_times: Vec<(String, Duration)>,
}

/// How many of the slowest tests the summary names: where CI's time goes.
const SLOWEST_SHOWN: usize = 12;

pub fn run(args: TestArgs) -> Result<()> {
    crate::interrupt::install();
    let mut t = Tally::default();
    t.step("rustfmt", || cargo(&["fmt", "--all", "--check"]));
    t.step("clippy", || cargo(&["clippy", "--workspace", "--all-targets", "--release", "--", "-D", "warnings"]));
    // One release build of every target of the workspace serves the unit tests, the integration tests and every
    // lab run a test starts (`lab run` builds `--workspace` too, so cargo unifies the dependencies' features the
    // same way everywhere and builds each of them once); one invocation lets the harness's library and its
    // test build compile side by side.
    t.step("build (release, every target)", || cargo(&["build", "--workspace", "--release", "--all-targets"]));
    t.cargo_test("unit tests", &["test", "--workspace", "--release", "--no-fail-fast"], &[]);
    if !args.unit {
        // The docker backend's tests need an engine; one this command starts is stopped again at the end.
        let log = repo_root().join("target/streamlab/dockerd.log");
        let daemon = match crate::env::docker::daemon::ensure_engine(&log) {
            Ok(daemon) => daemon,
            Err(e) => {
                t.step("docker engine", || Err(e));
                None
            }
        };
        integration(&mut t);
        drop(daemon);
    }
    println!(
        "\nstreamlab tests: {} passed, {} failed (each step's time, and the CPU cores the machine kept busy)",
        t.passed, t.failed
    );
    for (name, span) in &t.times {
        println!("  {:>6.0} s  {:>4.1} cores  {name}", span.took.as_secs_f64(), span.busy_cores);
    }
    let mut slowest = t.test_times.clone();
    slowest.sort_by_key(|(_, took)| std::cmp::Reverse(*took));
    write_test_times(&slowest);
    println!("slowest tests (all of them in {}):", TEST_TIMES_FILE);
    for (name, took) in slowest.iter().take(SLOWEST_SHOWN) {
        println!("  {:>6.0} s  {name}", took.as_secs_f64());
    }
    for f in &t.failures {
        println!("  failed: {f}");
    }
    // The closing line CI reads.
    println!("{} passed, {} failed", t.passed, t.failed);
    anyhow::ensure!(t.failed == 0, "{} test step(s) failed", t.failed);
    Ok(())
}

/// The harness's modules whose ignored tests run against the shared environment (by test-name filter: the
/// workspace is tested as a whole so that nothing is built twice).
const SHARED_ENV_MODULES: [&str; 6] = ["arms::", "drivers::", "calibrate::", "probe::", "kafka::", "warm_up::"];

/// Tests marked #[ignore] need services, on two lanes, as most of their time is spent waiting on brokers and JVMs.
/// One lane runs the harness's tests against one environment brought up here; the other runs xtask's unit-level
/// tests, which start environments of their own one at a time. Then both take from one queue ([`queue`]) each
/// end-to-end test of the binary (xtask/tests/*.rs), which start their own, and the site and workflow checks,
/// until none is left. Together they run each ignored test once.
fn integration(t: &mut Tally) {
    let ignored = ["--no-fail-fast", "--", "--ignored", "--test-threads=1"];
    let mut own = vec!["test", "--workspace", "--release", "--lib", "--bins"];
    own.extend(ignored);
    for m in SHARED_ENV_MODULES {
        own.extend(["--skip", m]);
    }
    let started = Stopwatch::start();
    let spec = EnvSpec { with_mysql: true, ..EnvSpec::new("test-", crate::env::pins::default_pin()) };
    // Dropped at the end of this function: its services stop and its directory goes.
    let env = match NativeBackend.up(&spec) {
        Ok(env) => env,
        Err(e) => {
            t.step("environment up", || Err(e));
            return service_free_checks(t);
        }
    };
    let descriptor = env.descriptor().dir.join(DESCRIPTOR_FILE);
    // The client and CDC arms run the tools a lab run builds or locates (rdkafka_performance, Kafka's Java perf
    // tools, Kafka Connect with the Debezium plugins, the user's Redpanda Connect if STREAMLAB_REDPANDA_CONNECT
    // names one).
    let tools = repo_root().join("target/streamlab/tools.json");
    let prepared = crate::clients::redpanda_connect::from_env()
        .and_then(|redpanda| crate::clients::prepare(&tools, &[Need::Connect], &Tool::ALL.into(), redpanda));
    t.times.push(("shared environment and tools".into(), started.stop()));
    if let Err(e) = prepared {
        t.step("tools", || Err(e));
    }
    let queue = match queue::Queue::of_end_to_end() {
        Ok(q) => q,
        Err(e) => {
            t.step("end-to-end tests listed", || Err(e));
            queue::Queue::empty()
        }
    };
    let mut shared = vec!["test", "--workspace", "--release", "--lib", "--bins"];
    shared.extend(ignored);
    shared.extend(SHARED_ENV_MODULES);
    let shared_env = [("STREAMLAB_ENV", descriptor.as_path()), (streamlab_record::tools::TOOLS_ENV, tools.as_path())];
    std::thread::scope(|s| {
        let shared = s.spawn(|| {
            let harness = TestRun::of("harness integration (shared environment)", &shared, &shared_env);
            (harness, drain(&queue))
        });
        t.add(TestRun::of("xtask integration (own environments)", &own, &[]));
        queue.open();
        let mine = drain(&queue);
        let (harness, theirs) = shared.join().expect("the shared environment's test thread panicked");
        t.add(harness);
        t.add_lane("end-to-end and service-free, after xtask's", mine);
        t.add_lane("end-to-end and service-free, after the shared environment's", theirs);
    });
    drop(env);
}

/// What one lane did from the queue.
enum Done {
    Tests(TestRun),
    Steps(Vec<StepDone>),
}

/// Run jobs from `queue` until it is empty.
fn drain(queue: &queue::Queue) -> Vec<Done> {
    let mut done = Vec::new();
    while let Some(job) = queue.next() {
        done.push(match job {
            queue::Job::EndToEnd { file, test } => {
                Done::Tests(TestRun::of(&format!("end-to-end {file}"), &queue::end_to_end_args(&file, &test), &[]))
            }
            queue::Job::ServiceFree => Done::Steps(service_free_steps()),
        });
    }
    done
}

/// The checks that need no service, recorded in the tally.
fn service_free_checks(t: &mut Tally) {
    service_free_steps().into_iter().for_each(|step| t.record(step));
}

/// The checks that need no service, run: the site built and checked, the workflows linted.
fn service_free_steps() -> Vec<StepDone> {
    vec![
        StepDone::run("site build + check", site_checks),
        StepDone::run("workflow lints (actionlint + shellcheck, zizmor)", || {
            Cmd::new("bash").arg(repo_root().join("site/check/workflows.sh")).run(Duration::from_secs(300))
        }),
    ]
}

/// Build and check the site twice: from the committed results, and from the demo results that
/// exercise every state (withdrawn, failed, not run, several runs).
fn site_checks() -> Result<()> {
    use crate::site::{BuildArgs, CheckArgs, build, check};
    let root = repo_root();
    let seeds = crate::lab::claim_points::load(&[])?;
    let committed = root.join("target/site");
    build(BuildArgs { results: None, out: Some(committed.clone()), claims: Vec::new() }, seeds.clone())?;
    check(CheckArgs { dir: Some(committed) })?;
    let demo = root.join("target/site-demo");
    let demo_results = Some(root.join("xtask/src/results/testdata/results"));
    build(BuildArgs { results: demo_results, out: Some(demo.clone()), claims: Vec::new() }, seeds.clone())?;
    check(CheckArgs { dir: Some(demo) })
}

fn cargo_cmd(args: &[&str]) -> Cmd {
    crate::cargo::cargo().args(args)
}

fn cargo(args: &[&str]) -> Result<()> {
    println!("\n== cargo {}", args.join(" "));
    let (_, success) = run_interruptible(cargo_cmd(args), false)?;
    anyhow::ensure!(success, "cargo {} failed", args.join(" "));
    Ok(())
}

/// How long a step's processes get to clean up after Ctrl-C (a lab run inside a test stops its services).
const INTERRUPT_GRACE: Duration = Duration::from_secs(60);

/// Run `cmd` to its end (stdout captured when `capture`), killed at [`STEP_TIMEOUT`]. Ctrl-C reaches its whole
/// process group (cargo, the test binaries, the lab runs they start: each cleans up after itself), which then
/// gets [`INTERRUPT_GRACE`] before SIGKILL.
fn run_interruptible(cmd: Cmd, capture: bool) -> Result<(Captured, bool)> {
    let mut child = if capture { cmd.pipe_stdout_show_stderr() } else { cmd }.spawn()?;
    let reader = child.take_stdout().map(|pipe| std::thread::spawn(move || capture_lines(pipe)));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if crate::interrupt::requested() {
            child.signal_group(streamlab_process::procfs::Sig::SIGINT);
            break child.wait_timeout(INTERRUPT_GRACE)?;
        }
        if started.elapsed() > STEP_TIMEOUT {
            break child.wait_timeout(Duration::ZERO)?;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let stdout = reader.map(|r| r.join().unwrap_or_default()).unwrap_or_default();
    crate::interrupt::check()?;
    let status = status.with_context(|| format!("did not finish within {} s", STEP_TIMEOUT.as_secs()))?;
    Ok((stdout, status.success()))
}

/// A non-test step that ran: its name, time and result.
struct StepDone {
    name: String,
    span: Span,
    result: Result<()>,
}

impl StepDone {
    fn run(name: &str, f: impl FnOnce() -> Result<()>) -> StepDone {
        let started = Stopwatch::start();
        let result = f().and_then(|()| crate::interrupt::check());
        StepDone { name: name.to_owned(), span: started.stop(), result }
    }
}

impl Tally {
    /// A non-test step counts as one passed or failed check.
    fn step(&mut self, name: &str, f: impl FnOnce() -> Result<()>) {
        self.record(StepDone::run(name, f));
    }

    fn record(&mut self, step: StepDone) {
        let StepDone { name, span, result } = step;
        self.times.push((name.clone(), span));
        match result {
            Ok(()) => self.passed += 1,
            Err(e) => {
                eprintln!("step {name} failed: {e:#}");
                self.failed += 1;
                self.failures.push(name);
            }
        }
    }

    /// What a lane took from the queue, under one time: each test run and step counted as its own.
    fn add_lane(&mut self, lane: &str, done: Vec<Done>) {
        let before = self.times.len();
        for d in done {
            match d {
                Done::Tests(run) => self.add(run),
                Done::Steps(steps) => steps.into_iter().for_each(|step| self.record(step)),
            }
        }
        let spans: Vec<Span> = self.times.drain(before..).map(|(_, span)| span).collect();
        self.times.push((lane.to_owned(), Span::sum(&spans)));
    }

    /// Run `cargo test` and add it to the tally.
    fn cargo_test(&mut self, name: &str, args: &[&str], env: &[(&str, &Path)]) {
        self.add(TestRun::of(name, args, env));
    }

    /// Echo a finished test run's output and add its `test result:` lines to the tally.
    fn add(&mut self, run: TestRun) {
        let TestRun { name, span, outcome } = run;
        self.times.push((name.clone(), span));
        let (Captured { text: stdout, test_times }, success) = match outcome {
            Ok(o) => o,
            Err(e) => {
                eprintln!("step {name} failed: {e:#}");
                self.failed += 1;
                self.failures.push(name);
                return;
            }
        };
        println!("\n== {name}");
        print!("{stdout}");
        self.test_times.extend(test_times.into_iter().map(|(test, took)| (format!("{name}: {test}"), took)));
        let (passed, failed) = parse_results(&stdout);
        self.passed += passed;
        self.failed += failed;
        if !success {
            self.failures.push(name);
            if failed == 0 {
                // A build error or crash: count it so the run cannot look green.
                self.failed += 1;
            }
        }
    }
}

/// One `cargo test` to its end: its stdout (the results), whether it succeeded, how long it took.
struct TestRun {
    name: String,
    span: Span,
    outcome: Result<(Captured, bool)>,
}

/// A test step's stdout as it ran: the text, and how long each test took. libtest prints a test's result line as
/// the test ends; at one test thread a test took the time since the line before it that ended one, or since the
/// binary's `running N tests`.
#[derive(Default)]
struct Captured {
    text: String,
    test_times: Vec<(String, Duration)>,
}

fn capture_lines(pipe: impl Read) -> Captured {
    let mut captured = Captured::default();
    let mut since = Instant::now();
    // A test whose processes print to the same stdout (a lab run's progress) gets its result on a line of its
    // own: `test NAME ... <their output>`, ..., `ok`.
    let mut pending: Option<String> = None;
    let (mut reader, mut bytes) = (BufReader::new(pipe), Vec::new());
    // Byte lines, decoded leniently: the pipe is drained to its end whatever a test prints.
    while reader.read_until(b'\n', &mut bytes).is_ok_and(|n| n > 0) {
        let line = String::from_utf8_lossy(&bytes).trim_end_matches('\n').to_owned();
        bytes.clear();
        let now = Instant::now();
        if line.starts_with("running ") {
            (since, pending) = (now, None);
        } else if let Some(test) = finished_test(&line) {
            captured.test_times.push((test.to_owned(), now - since));
            (since, pending) = (now, None);
        } else if let Some(test) = started_test(&line) {
            pending = Some(test.to_owned());
        } else if matches!(line.as_str(), "ok" | "FAILED")
            && let Some(test) = pending.take()
        {
            captured.test_times.push((test, now - since));
            since = now;
        }
        captured.text.push_str(&line);
        captured.text.push('\n');
    }
    captured
}

/// The test a libtest line starts whose result comes on a later line (its processes printed after ` ... `).
fn started_test(line: &str) -> Option<&str> {
    let (name, rest) = line.strip_prefix("test ")?.split_once(" ... ")?;
    (!rest.starts_with("ignored")).then_some(name)
}

/// The test a libtest result line names, `test NAME ... ok` or `... FAILED`; not an ignored one, nor the
/// "has been running for over 60 seconds" notice.
fn finished_test(line: &str) -> Option<&str> {
    let (name, result) = line.strip_prefix("test ")?.rsplit_once(" ... ")?;
    matches!(result, "ok" | "FAILED").then_some(name)
}

impl TestRun {
    fn of(name: &str, args: &[&str], env: &[(&str, &Path)]) -> TestRun {
        println!("\n== {name}: cargo {}", args.join(" "));
        let started = Stopwatch::start();
        let mut cmd = cargo_cmd(args);
        for (key, value) in env {
            cmd = cmd.env(key, value);
        }
        let outcome = run_interruptible(cmd, true);
        TestRun { name: name.to_owned(), span: started.stop(), outcome }
    }
}

/// How long a step took, and how many of the machine's cores were busy meanwhile on average (with whatever ran
/// beside it): a step near the core count waits on CPU, one well below it waits on something else.
#[derive(Clone, Copy)]
struct Span {
    took: Duration,
    busy_cores: f64,
}

impl Span {
    /// Spans one after another: their times added, their busy cores weighted by time.
    fn sum(spans: &[Span]) -> Span {
        let took: Duration = spans.iter().map(|s| s.took).sum();
        let busy: f64 = spans.iter().map(|s| s.busy_cores * s.took.as_secs_f64()).sum();
        Span { took, busy_cores: busy / took.as_secs_f64().max(1e-3) }
    }
}

struct Stopwatch {
    started: Instant,
    busy_s: Option<f64>,
}

impl Stopwatch {
    fn start() -> Stopwatch {
        Stopwatch { started: Instant::now(), busy_s: streamlab_process::procfs::host_busy_seconds() }
    }

    fn stop(self) -> Span {
        let took = self.started.elapsed();
        let busy = self.busy_s.zip(streamlab_process::procfs::host_busy_seconds()).map(|(a, b)| b - a);
        Span { took, busy_cores: busy.map_or(f64::NAN, |b| b / took.as_secs_f64().max(1e-3)) }
    }
}

/// Every test's time, slowest first, one `seconds<TAB>step: test` line each: where CI's time goes.
const TEST_TIMES_FILE: &str = "target/streamlab/test-times.tsv";

/// The same, kept in the cache for the next run on this machine (a fresh clone has no target/): the queue's order.
fn cached_test_times() -> std::path::PathBuf {
    crate::paths::cache_dir().join("test-times.tsv")
}

fn write_test_times(slowest: &[(String, Duration)]) {
    let text: String = slowest.iter().map(|(name, took)| format!("{:.1}\t{name}\n", took.as_secs_f64())).collect();
    for path in [repo_root().join(TEST_TIMES_FILE), cached_test_times()] {
        if let Err(e) = streamlab_process::files::write_atomic(&path, text.as_bytes()) {
            eprintln!("{e:#}");
        }
    }
}

/// Sum `test result: ... N passed; M failed` lines.
fn parse_results(stdout: &str) -> (u64, u64) {
    let count = |line: &str, word: &str| {
        line.split(';').find_map(|part| part.trim().strip_suffix(word)?.split_whitespace().last()?.parse::<u64>().ok())
    };
    stdout
        .lines()
        .filter(|l| l.starts_with("test result:"))
        .map(|l| (count(l, " passed").unwrap_or(0), count(l, " failed").unwrap_or(0)))
        .fold((0, 0), |(p, f), (a, b)| (p + a, f + b))
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_test_takes_the_time_since_the_line_before_it_that_ended_one() {
        assert_eq!(super::finished_test("test lab::a_test ... ok"), Some("lab::a_test"));
        assert_eq!(super::finished_test("test b ... FAILED"), Some("b"));
        assert_eq!(super::finished_test("test c ... ignored, starts Kafka"), None);
        assert_eq!(super::finished_test("test d has been running for over 60 seconds"), None);
        let out =
            "running 2 tests\ntest a ... ok\nnoise\ntest b ... FAILED\n\ntest result: FAILED. 1 passed; 1 failed\n";
        let captured = super::capture_lines(out.as_bytes());
        assert_eq!(captured.text, out);
        let names: Vec<&str> = captured.test_times.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        // A test whose lab run printed between its name and its result.
        let out = "running 2 tests\ntest c ... run 2026: 2 tasks\n  ok kafka_sink raw\nok\ntest d ... ignored, x\n";
        let names: Vec<String> = super::capture_lines(out.as_bytes()).test_times.into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["c"]);
    }

    #[test]
    fn result_lines_are_summed() {
        let out = "test result: ok. 7 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n\
                   noise\n\
                   test result: FAILED. 2 passed; 1 failed; 3 ignored; 0 measured; 0 filtered out\n";
        assert_eq!(super::parse_results(out), (9, 1));
    }

    /// Every ignored harness test needs the shared environment, so its module path must match one of the
    /// shared filters; one that does not would run in the own-environments step without services and fail it.
    #[test]
    fn every_ignored_harness_test_runs_in_the_shared_environment() {
        let src = crate::paths::repo_root().join("harness/src");
        let mut stray = Vec::new();
        let mut found = 0;
        let mut stack = vec![src.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                if !text.contains("#[ignore") {
                    continue;
                }
                found += 1;
                let module =
                    path.strip_prefix(&src).unwrap().with_extension("").to_string_lossy().replace('/', "::") + "::";
                if !super::SHARED_ENV_MODULES.iter().any(|m| module.starts_with(m)) {
                    stray.push(module);
                }
            }
        }
        assert!(found > 5, "the walk found the harness's integration tests");
        assert!(stray.is_empty(), "add their module to SHARED_ENV_MODULES: {stray:?}");
    }
}
