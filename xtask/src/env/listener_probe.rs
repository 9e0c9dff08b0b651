//! Whether every listener of a lab-started cluster serves clients: one JVM (env/kafka/ListenerProbe.java) runs an
//! Admin client per listener, reads the brokers from the cluster's metadata and has each of them answer on that
//! listener. One JVM for all listeners: a JVM per listener cost a JVM start each at every environment's start.

use std::ffi::{OsStr, OsString};
use std::path::Path;

use anyhow::{Context, Result};
use streamlab_process::{Cmd, Output};
use streamlab_record::descriptor::Listener;

use super::host::{Role, ServiceHost};
use super::secrets;
use crate::javac::JavaSource;
use crate::paths::repo_root;

/// Probe each `(name, listener, its Java client properties)` of `clients` in one JVM on `host`, their property
/// files written into `dir`; one answer per listener, in order. `archive_flag` starts the JVM from the brokers'
/// class archive when they have one (its classpath begins with theirs).
pub fn run<'a>(
    host: &dyn ServiceHost,
    classpath: &OsStr,
    archive_flag: Option<String>,
    dir: &Path,
    clients: impl Iterator<Item = (&'a str, &'a Listener, String)>,
) -> Result<Vec<ProbeAnswer>> {
    let mut cmd = Cmd::new(host.java())
        .args(["-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"])
        .args(archive_flag)
        .arg(tools_log_config())
        .arg("-cp")
        .arg(classpath)
        .arg(LISTENER_PROBE.main_class);
    let mut names = Vec::new();
    for (name, l, properties) in clients {
        let props = dir.join(format!("client-{name}.properties"));
        secrets::write_secret(&props, &format!("bootstrap.servers={}\n{properties}", l.bootstrap))?;
        cmd = cmd.arg(format!("{name}={}", props.display()));
        names.push(name);
    }
    let out = host.output(Role::Kafka, cmd).context("cannot run java")?;
    Ok(names.into_iter().map(|name| ProbeAnswer::of(name, &out)).collect())
}

/// Kafka's CLI tools log warnings to stderr only, so their stdout carries just their results.
pub fn tools_log_config() -> String {
    format!("-Dlog4j2.configurationFile={}", repo_root().join("env/kafka/tools-log4j2.yaml").display())
}

/// The listener probe (env/kafka/ListenerProbe.java), compiled for Java 17: a container's JVM runs it too.
const LISTENER_PROBE: JavaSource = JavaSource {
    source: "env/kafka/ListenerProbe.java",
    main_class: "ListenerProbe",
    cache_name: "listener-probe",
    release: Some("17"),
};

/// The listener probe's classpath: the pinned Kafka jars it runs on, then its class (compiled on first use). The
/// jars come first, as the brokers of the default pin list them, so the probe's JVM can map their class archive
/// (a JVM maps one whose classpath begins its own: 1.25 against 0.7 CPU-s a probe here).
pub fn probe_classpath() -> Result<OsString> {
    let jars = super::pins::kafka_classpath()?;
    let probe = crate::javac::compiled(&LISTENER_PROBE, &jars)?;
    std::env::join_paths(jars.into_iter().chain(std::iter::once(probe.dir))).context("a jar path contains ':'")
}

/// One listener's line of the probe's output: the broker ids that answered on it, or the probe's words.
#[derive(Debug, PartialEq)]
pub enum ProbeAnswer {
    Answered(Vec<u32>),
    Failed(String),
}

impl ProbeAnswer {
    /// `name ok 1,2,3` or `name failed <cause>`; no line for `name` is a failure that quotes what the JVM said.
    fn of(name: &str, out: &Output) -> ProbeAnswer {
        let line = out.stdout.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' '));
        match line.map(|l| l.split_once(' ').unwrap_or((l, ""))) {
            Some(("ok", ids)) => {
                ProbeAnswer::Answered(ids.split(',').filter_map(|id| id.trim().parse().ok()).collect())
            }
            Some((_, cause)) => ProbeAnswer::Failed(cause.to_owned()),
            None => ProbeAnswer::Failed(format!("the probe said nothing of it ({}):\n{}", out.status, out.tail(20))),
        }
    }

    /// The brokers among `ids` that did not answer.
    pub fn missing(&self, ids: impl Iterator<Item = u32>) -> Vec<u32> {
        match self {
            ProbeAnswer::Answered(answered) => ids.filter(|id| !answered.contains(id)).collect(),
            ProbeAnswer::Failed(_) => ids.collect(),
        }
    }
}

impl std::fmt::Display for ProbeAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProbeAnswer::Answered(ids) => write!(f, "brokers {ids:?} answered"),
            ProbeAnswer::Failed(cause) => f.write_str(cause),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_listener_reads_its_own_line_of_the_probe_and_a_missing_line_is_a_failure() {
        use std::os::unix::process::ExitStatusExt;
        let out = Output {
            status: std::process::ExitStatus::from_raw(256),
            stdout: "plaintext ok 1,2,3\nscram256 failed SaslAuthenticationException: bad\nssl ok 1,3\n".into(),
            stderr: "a JVM warning".into(),
            cpu_s: 0.0,
        };
        assert_eq!(ProbeAnswer::of("plaintext", &out), ProbeAnswer::Answered(vec![1, 2, 3]));
        assert!(ProbeAnswer::of("plaintext", &out).missing(1..=3).is_empty());
        assert_eq!(ProbeAnswer::of("ssl", &out).missing(1..=3), [2], "broker 2 did not answer on ssl");
        let scram = ProbeAnswer::of("scram256", &out);
        assert_eq!(scram.missing(1..=3), [1, 2, 3]);
        assert_eq!(scram.to_string(), "SaslAuthenticationException: bad");
        // A listener the probe printed no line for failed, with what the JVM said.
        let silent = ProbeAnswer::of("scram512", &out).to_string();
        assert!(silent.contains("said nothing") && silent.contains("a JVM warning"), "{silent}");
    }
}
