//! What the machine's tools say about themselves.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use streamlab_process::Cmd;

/// A version query answers in seconds; a JVM's first start may take a few.
const QUERY_TIMEOUT: Duration = Duration::from_secs(60);

/// First non-empty line a program prints (stdout, else stderr: `java -version` writes there).
pub fn first_line_of(program: &str, args: &[&str]) -> Option<String> {
    let o = Cmd::new(program).args(args).output(QUERY_TIMEOUT).ok()?;
    if !o.status.success() {
        return None;
    }
    let text = if o.stdout.trim().is_empty() { o.stderr } else { o.stdout };
    text.lines().find(|l| !l.trim().is_empty()).map(|l| l.trim().to_owned())
}

/// `java -version`'s first line (the JVM prints it on stderr), e.g. `openjdk version "17.0.15" 2025-04-15`: the
/// JVM every Java tool the lab runs reports in provenance (Kafka's perf tools, Kafka Connect).
pub fn java_version(java: &Path) -> Result<String> {
    let out = Cmd::new(java).arg("-version").output(QUERY_TIMEOUT).with_context(|| {
        format!("cannot run {} -version (is a JDK >= 17 installed? see `cargo xtask doctor`)", java.display())
    })?;
    let text = if out.stderr.is_empty() { out.stdout } else { out.stderr };
    match text.lines().next().map(str::trim) {
        Some(first) if out.status.success() && !first.is_empty() => Ok(first.to_owned()),
        _ => bail!("{} -version failed ({}): {text}", java.display(), out.status),
    }
}
