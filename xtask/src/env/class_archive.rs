//! The brokers of a native environment start from a class-data sharing archive of Kafka's classes, as Apache
//! Kafka's own JVM image starts its broker (docker/jvm/launch: `-XX:SharedArchiveFile=/opt/kafka/kafka.jsa`):
//! the JVM maps the classes a broker loaded last time instead of loading and verifying them again. Measured here
//! on one broker: 6.1 CPU s and 3.6 s to "Kafka Server started" without it, 3.4 CPU s and 1.9 s with it.
//!
//! Start-up only: a fault's restart runs the broker as kafka-server-start.sh does, without the archive, so the
//! restart times durability measures stay a stock broker's. The archive is dumped once per Kafka version and
//! java by a broker of its own (started, probed on every listener, stopped: the JVM writes it at exit), and an
//! environment never fails for it: without one its brokers start as before (a dump that failed leaves
//! `<archive>.failed` saying why, and is not tried again while it is there; one cut short by Ctrl-C leaves nothing).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use sha2::{Digest, Sha256};

use super::host::{Role, ServiceHost};
use super::kafka::{self, Archive, KafkaPorts, KafkaStart};

/// How long the dumping broker may take to stop (its JVM writes the archive on the way out).
const DUMP_GRACE: Duration = Duration::from_secs(60);

/// The archive the brokers of `start` can start from: the cached one, else one dumped now. None, with a
/// warning, when none could be made.
pub fn for_brokers(host: &dyn ServiceHost, start: &KafkaStart) -> Option<PathBuf> {
    let path = archive_path(&host.java(), &start.classpath);
    if path.is_file() {
        return Some(path);
    }
    // A JVM that cannot dump one is not asked again at every start (remove the file to try again).
    let failed = path.with_extension("failed");
    if failed.is_file() {
        return None;
    }
    tracing::info!("a class-data sharing archive of Kafka {}'s broker, once: {}", start.pin.version, path.display());
    match dump(host, start, &path) {
        Ok(()) => Some(path),
        // Ctrl-C during the dump says nothing of this JVM: the next environment tries again.
        Err(e) if crate::interrupt::requested() => {
            tracing::warn!("the brokers start without a class-data sharing archive this time: {e:#}");
            None
        }
        Err(e) => {
            tracing::warn!("the brokers start without a class-data sharing archive ({}): {e:#}", failed.display());
            let _ = std::fs::write(&failed, format!("{e:#}\n"));
            None
        }
    }
}

/// `archive` if every broker in `pids` mapped it; a JVM that found it stale or unreadable starts without it, and
/// the archive is then removed, so the next environment dumps a fresh one.
pub fn taken(archive: PathBuf, pids: &[u32]) -> Option<PathBuf> {
    let Some(&pid) = pids.iter().find(|&&pid| !mapped_by(pid, &archive)) else { return Some(archive) };
    tracing::warn!("broker pid {pid} did not map {}; it is removed and dumped again next time", archive.display());
    let _ = std::fs::remove_file(&archive);
    None
}

/// Whether the running process `pid` maps `file`.
pub fn mapped_by(pid: u32, file: &Path) -> bool {
    let needle = file.to_string_lossy();
    std::fs::read_to_string(format!("/proc/{pid}/maps")).is_ok_and(|maps| maps.lines().any(|l| l.ends_with(&*needle)))
}

/// `<cache>/kafka-cds/broker-<key>.jsa`, the key hashing the java that runs it and the classpath it archives
/// (the JVM refuses an archive of another classpath; a stale one is caught by [`mapped_by`]).
fn archive_path(java: &Path, classpath: &std::ffi::OsStr) -> PathBuf {
    let java = which_java(java);
    let mut h = Sha256::new();
    h.update(java.as_os_str().as_encoded_bytes());
    if let Ok(meta) = std::fs::metadata(&java) {
        h.update(meta.len().to_le_bytes());
        h.update(format!("{:?}", meta.modified().ok()).as_bytes());
    }
    h.update(b"\n");
    h.update(classpath.as_encoded_bytes());
    let key = hex::encode(h.finalize());
    crate::paths::cache_dir().join("kafka-cds").join(format!("broker-{}.jsa", &key[..16]))
}

/// `java` as a file: itself if it names one, else the first on PATH, with its links resolved.
fn which_java(java: &Path) -> PathBuf {
    let found = if java.components().count() > 1 {
        Some(java.to_owned())
    } else {
        crate::paths::on_path(&java.to_string_lossy())
    };
    found.and_then(|p| p.canonicalize().ok()).unwrap_or_else(|| java.to_owned())
}

/// A single broker of `start`'s version in a directory of its own, with every listener probed (so the SASL, TLS
/// and OAuth code is loaded too), then stopped: its JVM writes the archive, which is moved into place whole.
fn dump(host: &dyn ServiceHost, start: &KafkaStart, path: &Path) -> Result<()> {
    let parent = path.parent().context("the archive has no directory")?;
    std::fs::create_dir_all(parent)?;
    let work = tempfile::Builder::new().prefix(".dump-").tempdir_in(parent)?;
    let staging = work.path().join("broker.jsa");
    let ports = streamlab_process::ports::free_loopback_ports(5)?;
    let launched = kafka::launch(
        host,
        &KafkaStart {
            dir: &work.path().join("kafka"),
            env_id: "class-archive",
            ports: vec![KafkaPorts::from_slice(&ports)],
            cpus: None,
            pin: start.pin,
            classpath: start.classpath.clone(),
            probe_classpath: start.probe_classpath.clone(),
            archive: Some(Archive::Dump(staging.clone())),
        },
    )?;
    let broker = launched.wait_ready()?;
    for pid in broker.pids() {
        host.stop(Role::Kafka, pid, DUMP_GRACE);
    }
    let written = std::fs::metadata(&staging).map(|m| m.len()).unwrap_or(0);
    ensure!(
        written > 0,
        "the broker wrote no archive at its exit (see {})",
        work.path().join("kafka/kafka.out").display()
    );
    std::fs::rename(&staging, path).with_context(|| format!("cannot move the archive to {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_archive_is_one_per_java_and_classpath() {
        let a = archive_path(Path::new("/nonexistent/java"), "a.jar:b.jar".as_ref());
        assert_eq!(a, archive_path(Path::new("/nonexistent/java"), "a.jar:b.jar".as_ref()));
        assert_ne!(a, archive_path(Path::new("/nonexistent/java"), "a.jar:c.jar".as_ref()));
        assert_ne!(a, archive_path(Path::new("/elsewhere/java"), "a.jar:b.jar".as_ref()));
        assert!(a.starts_with(crate::paths::cache_dir().join("kafka-cds")), "{}", a.display());
    }

    #[test]
    fn only_a_mapping_of_the_archive_counts() {
        // This process maps its own executable, not an archive.
        let me = std::fs::read_link("/proc/self/exe").unwrap();
        assert!(mapped_by(std::process::id(), &me));
        assert!(!mapped_by(std::process::id(), Path::new("/nonexistent/broker.jsa")));
        assert_eq!(taken(me.clone(), &[std::process::id()]), Some(me));
    }
}
