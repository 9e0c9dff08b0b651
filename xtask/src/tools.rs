//! What the machine's tools say about themselves.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// First non-empty line a program prints (stdout, else stderr: `java -version` writes there).
pub fn first_line_of(program: &str, args: &[&str]) -> Option<String> {
    let o = std::process::Command::new(program).args(args).output().ok()?;
    if !o.status.success() {
        return None;
    }
    let text = if o.stdout.iter().any(|b| !b.is_ascii_whitespace()) { o.stdout } else { o.stderr };
    String::from_utf8_lossy(&text).lines().find(|l| !l.trim().is_empty()).map(|l| l.trim().to_owned())
}

/// `java -version`'s first line (the JVM prints it on stderr), e.g. `openjdk version "17.0.15" 2025-04-15`: the
/// JVM every Java tool the lab runs reports in provenance (Kafka's perf tools, Kafka Connect).
pub fn java_version(java: &Path) -> Result<String> {
    let out = Command::new(java).arg("-version").output().with_context(|| {
        format!("cannot run {} -version (is a JDK >= 17 installed? see `cargo xtask doctor`)", java.display())
    })?;
    let text = String::from_utf8_lossy(if out.stderr.is_empty() { &out.stdout } else { &out.stderr }).into_owned();
    match text.lines().next().map(str::trim) {
        Some(first) if out.status.success() && !first.is_empty() => Ok(first.to_owned()),
        _ => bail!("{} -version failed ({}): {text}", java.display(), out.status),
    }
}
