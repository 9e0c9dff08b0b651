//! `cargo xtask test`, the README's test command: formatting and lints, unit tests, then the
//! integration tests against real services (a native environment this command brings up and
//! down), the site checks and the workflow linter. Ends with one `N passed, N failed` line.

use std::process::{Command, Stdio};

use anyhow::{Context, Result};
use streamlab_record::descriptor::DESCRIPTOR_FILE;

use crate::env::backend::{Backend, EnvSpec};
use crate::env::native::NativeBackend;
use crate::paths::repo_root;

#[derive(clap::Args)]
pub struct TestArgs {
    /// Unit tests only: no services, no browser.
    #[arg(long)]
    pub unit: bool,
}

/// Totals parsed from every `test result:` line.
#[derive(Default)]
struct Tally {
    passed: u64,
    failed: u64,
    failures: Vec<String>,
}

pub fn run(args: TestArgs) -> Result<()> {
    crate::interrupt::install();
    let mut tally = Tally::default();
    step(&mut tally, "rustfmt", cargo(&["fmt", "--all", "--check"]));
    step(&mut tally, "clippy", cargo(&["clippy", "--workspace", "--all-targets", "--release", "--", "-D", "warnings"]));
    cargo_test(&mut tally, "unit tests", &["test", "--workspace", "--release"], &[]);
    if !args.unit {
        // The integration tests start these binaries (the release xtask sits next to its tests). The harness
        // is built on its own, as `lab run` builds it: built together, cargo unifies their dependencies'
        // features differently and every `lab run` inside a test would rebuild it.
        let built =
            cargo(&["build", "--release", "-p", "xtask"]).and_then(|_| cargo(&["build", "--release", "-p", "harness"]));
        step(&mut tally, "build harness and xtask", built);
        // The docker backend's tests need an engine; one this command starts is stopped again at the end.
        let log = repo_root().join("target/streamlab/dockerd.log");
        let engine = crate::env::docker::daemon::ensure_engine(&log);
        let daemon = match engine {
            Ok(daemon) => daemon,
            Err(e) => {
                step(&mut tally, "docker engine", Err(e));
                None
            }
        };
        integration(&mut tally)?;
        drop(daemon);
        step(&mut tally, "site build + check", site_checks());
        step(&mut tally, "actionlint", run_cmd(Command::new("bash").arg(repo_root().join("site/check/actionlint.sh"))));
    }
    println!("\nstreamlab tests: {} passed, {} failed", tally.passed, tally.failed);
    for f in &tally.failures {
        println!("  failed: {f}");
    }
    // The closing line CI reads.
    println!("{} passed, {} failed", tally.passed, tally.failed);
    anyhow::ensure!(tally.failed == 0, "{} test step(s) failed", tally.failed);
    Ok(())
}

/// Tests marked #[ignore] need services: the xtask ones start their own environments (one at a
/// time); the harness ones share one environment brought up here.
fn integration(tally: &mut Tally) -> Result<()> {
    cargo_test(
        tally,
        "xtask integration (own environments)",
        &["test", "--release", "-p", "xtask", "--", "--ignored", "--test-threads=1"],
        &[],
    );
    println!("\n== bringing up a native environment for the harness integration tests");
    let spec = EnvSpec { with_mysql: true, ..EnvSpec::new("test-", crate::env::pins::default_pin()) };
    // Dropped at the end of this function: its services stop and its directory goes.
    let env = match NativeBackend.up(&spec) {
        Ok(env) => env,
        Err(e) => {
            step(tally, "environment up", Err(e));
            return Ok(());
        }
    };
    let descriptor = env.descriptor().dir.join(DESCRIPTOR_FILE);
    // The client and CDC arms run the tools a lab run builds or locates (rdkafka_performance, Kafka's Java perf
    // tools, Kafka Connect with the Debezium plugins, the user's Redpanda Connect if STREAMLAB_REDPANDA_CONNECT
    // names one).
    let tools = repo_root().join("target/streamlab/tools.json");
    let prepared = crate::clients::redpanda_connect::from_env()
        .and_then(|redpanda| crate::clients::prepare(&tools, &crate::clients::TOOL_NEEDS, redpanda));
    if let Err(e) = prepared {
        step(tally, "tools", Err(e));
    }
    cargo_test(
        tally,
        "harness integration (shared environment)",
        &["test", "--release", "-p", "harness", "--", "--ignored", "--test-threads=1"],
        &[("STREAMLAB_ENV", descriptor.as_path()), (streamlab_record::tools::TOOLS_ENV, tools.as_path())],
    );
    drop(env);
    Ok(())
}

/// Build and check the site twice: from the committed results, and from the demo results that
/// exercise every state (withdrawn, failed, not run, several runs).
fn site_checks() -> Result<()> {
    use crate::site::{BuildArgs, CheckArgs, build, check};
    let root = repo_root();
    let committed = root.join("target/site");
    build(BuildArgs { results: None, out: Some(committed.clone()) })?;
    check(CheckArgs { dir: Some(committed) })?;
    let demo = root.join("target/site-demo");
    build(BuildArgs { results: Some(root.join("xtask/src/site/testdata/results")), out: Some(demo.clone()) })?;
    check(CheckArgs { dir: Some(demo) })
}

fn cargo(args: &[&str]) -> Result<()> {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(repo_root()).args(args);
    run_cmd(&mut cmd)
}

fn run_cmd(cmd: &mut Command) -> Result<()> {
    println!("\n== {cmd:?}");
    let status = cmd.status().with_context(|| format!("cannot run {:?}", cmd.get_program()))?;
    anyhow::ensure!(status.success(), "{:?} failed ({status})", cmd.get_program());
    Ok(())
}

/// A non-test step counts as one passed or failed check.
fn step(tally: &mut Tally, name: &str, result: Result<()>) {
    let result = result.and_then(|()| crate::interrupt::check());
    match result {
        Ok(()) => tally.passed += 1,
        Err(e) => {
            eprintln!("step {name} failed: {e:#}");
            tally.failed += 1;
            tally.failures.push(name.to_owned());
        }
    }
}

/// Run `cargo test`, echoing its output and adding its `test result:` lines to the tally.
fn cargo_test(tally: &mut Tally, name: &str, args: &[&str], env: &[(&str, &std::path::Path)]) {
    println!("\n== {name}: cargo {}", args.join(" "));
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(repo_root()).args(args).stdout(Stdio::piped());
    for (key, value) in env {
        cmd.env(key, value);
    }
    let output = match cmd.spawn().and_then(|c| c.wait_with_output()) {
        Ok(o) => o,
        Err(e) => return step(tally, name, Err(e.into())),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    print!("{stdout}");
    let (passed, failed) = parse_results(&stdout);
    tally.passed += passed;
    tally.failed += failed;
    if !output.status.success() {
        tally.failures.push(name.to_owned());
        if failed == 0 {
            // A build error or crash: count it so the run cannot look green.
            tally.failed += 1;
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
    fn result_lines_are_summed() {
        let out = "test result: ok. 7 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n\
                   noise\n\
                   test result: FAILED. 2 passed; 1 failed; 3 ignored; 0 measured; 0 filtered out\n";
        assert_eq!(super::parse_results(out), (9, 1));
    }
}
