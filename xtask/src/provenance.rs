//! provenance.json: where and with what a run ran. Written at the start of a run and rewritten at its end.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub const PROVENANCE_SCHEMA: &str = "streamlab.provenance/1";
pub const PROVENANCE_FILE: &str = "provenance.json";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    pub schema: String,
    pub run_id: String,
    pub started_ts_ms: u64,
    #[serde(default)]
    pub finished_ts_ms: Option<u64>,
    /// The exact command that reproduces this run.
    pub reproduce: String,
    pub profile: String,
    pub git: Git,
    pub host: Host,
    pub env: EnvInfo,
    /// Every version observed at run time: java, rustc, cargo, kafka broker, mariadb, librdkafka, crates...
    pub versions: BTreeMap<String, String>,
    pub pins: Pins,
    pub matrices: Vec<MatrixInfo>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Git {
    pub commit: String,
    pub dirty: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Host {
    pub hostname: String,
    pub cpu_brand: String,
    pub physical_cores: Option<u32>,
    pub logical_cores: u32,
    pub frequency_mhz: u64,
    pub memory_bytes: u64,
    pub os: String,
    pub kernel: String,
    pub arch: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvInfo {
    /// `native`, `docker` or `external`.
    pub backend: String,
    /// Whether the lab started and stopped the services itself (false for `external`).
    pub managed: bool,
    pub kafka_version: Option<String>,
    /// `mariadb` or `mysql`.
    pub mysql_flavour: Option<String>,
    pub mysql_version: Option<String>,
    /// CPU caps applied during the run, e.g. `broker: "0"` for an affinity of CPU 0.
    #[serde(default)]
    pub cpu_caps: BTreeMap<String, String>,
    #[serde(default)]
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pins {
    /// Path of the lock file in the repository and its SHA-256.
    pub lock_file: String,
    pub lock_sha256: String,
    /// `group:artifact:version` -> SHA-256 of every pinned artifact.
    pub artifacts: BTreeMap<String, String>,
}

/// A matrix as it was when the run used it: the file's hash plus what the site needs to present it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixInfo {
    pub name: String,
    pub file: String,
    pub sha256: String,
    pub title: String,
    pub question: String,
    pub seed: Option<String>,
    pub default_arm: Option<String>,
    /// Arm name -> human title, in file order.
    pub arms: Vec<ArmInfo>,
    pub sweeps: Vec<SweepInfo>,
    #[serde(default)]
    pub does_not_say: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmInfo {
    pub name: String,
    pub title: String,
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepInfo {
    pub name: String,
    pub title: String,
    #[serde(default)]
    pub caption: Option<String>,
    pub arms: Vec<String>,
    /// The knob this sweep varies; absent for an arms-only comparison.
    #[serde(default)]
    pub knob: Option<String>,
    /// Point labels in display order.
    pub labels: Vec<String>,
    /// Knobs held fixed for every point of the sweep, as `knob = value`.
    #[serde(default)]
    pub fixed: Vec<String>,
}

impl Provenance {
    /// On `--resume`: keep the first attempt's start time, versions and caps alongside this attempt's.
    pub fn merge_earlier(&mut self, earlier: Provenance) {
        self.started_ts_ms = earlier.started_ts_ms;
        for (k, v) in earlier.versions {
            self.versions.entry(k).or_insert(v);
        }
        for (k, v) in earlier.env.cpu_caps {
            self.env.cpu_caps.entry(k).or_insert(v);
        }
        let note = format!("resumed; first started at {}", earlier.started_ts_ms);
        self.env.note = Some(match self.env.note.take() {
            Some(n) => format!("{n}; {note}"),
            None => note,
        });
    }

    /// Record a broker CPU cap that was applied; true if it was new.
    pub fn note_broker_cap(&mut self, cap: &str) -> bool {
        let entry = self.env.cpu_caps.entry("broker (per broker_cores point)".to_owned()).or_default();
        if entry.split("; ").any(|c| c == cap) {
            return false;
        }
        if !entry.is_empty() {
            entry.push_str("; ");
        }
        entry.push_str(cap);
        true
    }

    pub fn load(path: &std::path::Path) -> anyhow::Result<Self> {
        use anyhow::Context;
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        let value: serde_json::Value =
            serde_json::from_str(&text).with_context(|| format!("{}: not valid JSON", path.display()))?;
        let schema = value.get("schema").and_then(|s| s.as_str()).unwrap_or("<missing>");
        anyhow::ensure!(
            schema == PROVENANCE_SCHEMA,
            "{}: unknown provenance schema {schema:?}; this build reads {PROVENANCE_SCHEMA:?}",
            path.display()
        );
        serde_json::from_value(value).with_context(|| format!("{}: not a valid provenance record", path.display()))
    }
}

/// Host facts from sysinfo.
pub fn collect_host() -> Host {
    use sysinfo::System;
    let mut sys = System::new();
    sys.refresh_cpu_all();
    sys.refresh_memory();
    let cpus = sys.cpus();
    Host {
        hostname: System::host_name().unwrap_or_default(),
        cpu_brand: cpus.first().map(|c| c.brand().trim().to_owned()).unwrap_or_default(),
        physical_cores: System::physical_core_count().map(|n| n as u32),
        logical_cores: cpus.len() as u32,
        frequency_mhz: cpus.first().map_or(0, |c| c.frequency()),
        memory_bytes: sys.total_memory(),
        os: System::long_os_version().unwrap_or_default(),
        kernel: System::kernel_version().unwrap_or_default(),
        arch: System::cpu_arch(),
    }
}

/// `git rev-parse HEAD` and whether the work tree has changes.
pub fn collect_git(root: &std::path::Path) -> Git {
    let run = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let commit = run(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into());
    // results/ is data the lab writes; a run in progress must not mark its own commit dirty.
    let dirty = run(&["status", "--porcelain", "--", ".", ":(exclude)results"]).is_none_or(|s| !s.is_empty());
    Git { commit, dirty }
}

/// Tool versions as the tools report them (absent tools are omitted).
pub fn collect_tool_versions() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    // The JDK Kafka runs on ($JAVA_HOME/bin/java, else java on PATH).
    let java = crate::env::kafka::java();
    let java = java.to_string_lossy();
    const JAVA: &str = "java";
    let probes: [(&str, &str, &[&str]); 5] = [
        ("rustc", "rustc", &["--version"]),
        ("cargo", "cargo", &["--version"]),
        ("java", JAVA, &["-version"]),
        ("go", "go", &["version"]),
        ("docker", "docker", &["--version"]),
    ];
    for (name, program, args) in probes {
        let program = if program == JAVA { &*java } else { program };
        if let Some(v) = first_line_of(program, args) {
            out.insert(name.to_owned(), v);
        }
    }
    out
}

/// First non-empty line a program prints (stdout, else stderr: `java -version` writes there).
pub fn first_line_of(program: &str, args: &[&str]) -> Option<String> {
    let o = std::process::Command::new(program).args(args).output().ok()?;
    if !o.status.success() {
        return None;
    }
    let text = if o.stdout.iter().any(|b| !b.is_ascii_whitespace()) { o.stdout } else { o.stderr };
    String::from_utf8_lossy(&text).lines().find(|l| !l.trim().is_empty()).map(|l| l.trim().to_owned())
}

/// Versions of the client crates the harness links, read from Cargo.lock.
pub fn crate_versions(lock: &std::path::Path) -> BTreeMap<String, String> {
    const CRATES: [&str; 6] = ["rdkafka", "rdkafka-sys", "spate", "partitionline", "mysql_async", "mysql_common"];
    let Ok(text) = std::fs::read_to_string(lock) else { return BTreeMap::new() };
    let Ok(doc) = text.parse::<toml::Table>() else { return BTreeMap::new() };
    let packages = doc.get("package").and_then(|p| p.as_array()).cloned().unwrap_or_default();
    packages
        .iter()
        .filter_map(|p| {
            let name = p.get("name")?.as_str()?;
            let version = p.get("version")?.as_str()?;
            CRATES.contains(&name).then(|| (format!("crate:{name}"), version.to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crate_versions_come_from_the_lock_file() {
        let v = crate_versions(&crate::paths::repo_root().join("Cargo.lock"));
        assert_eq!(v.get("crate:rdkafka").map(String::as_str), Some("0.39.0"));
        assert!(v.get("crate:rdkafka-sys").is_some_and(|s| s.starts_with("4.10.0")));
    }

    #[test]
    fn host_facts_are_filled() {
        let h = collect_host();
        assert!(h.logical_cores >= 1 && h.memory_bytes > 0 && !h.kernel.is_empty());
    }
}
