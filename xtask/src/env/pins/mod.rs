//! Pinned artifacts: one jar lock per Kafka version the lab runs (group:artifact:version + SHA-256), fetched into
//! the cache and verified. 4.1.0 (the default, with Kafka's tools) is env/kafka/jars.lock; 3.9.1 (seed 003's
//! broker) is env/kafka/3.9.1/jars.lock. Kafka Connect workers, one per connector plugin, are locked the same
//! way under env/connect/<plugin>/ ([`connect`]).
//!
//! The lock is validated as a whole before anything is downloaded. Jars come from Maven Central over HTTPS
//! (no Maven needed); if that fails, `mvn` fetches the same coordinates and every checksum is verified the
//! same way. Nothing reaches the cache unverified: a jar is written to a temp file and renamed only after its
//! SHA-256 matched, and a cached jar whose hash no longer matches is downloaded again.

pub mod connect;
mod fetch;
mod jar_set;
mod lock;
mod maven;
mod route;

use std::path::PathBuf;
use std::time::Instant;

use sha2::{Digest, Sha256};
use streamlab_record::provenance::Pins;

pub use connect::CONNECT_PINS;
pub(crate) use fetch::http_agent;
use fetch::{Fetched, ensure_jars};
use jar_set::JarSet;
use lock::{Lock, jar_cache_root};
pub use route::{FetchRoute, fetch_route};

use crate::paths::{cache_dir, repo_root};

/// The lock, relative to the repository root (also the name recorded in provenance).
pub const LOCK_FILE: &str = "env/kafka/jars.lock";
pub const DEFAULT_MAVEN_REPO: &str = "https://repo1.maven.org/maven2";
/// Overrides [`DEFAULT_MAVEN_REPO`], e.g. with an internal mirror of Maven Central.
pub const MAVEN_REPO_ENV: &str = "STREAMLAB_MAVEN_REPO";

pub(super) const KAFKA_GROUP: &str = "org.apache.kafka";
pub(super) const KAFKA_BROKER_ARTIFACT: &str = "kafka_2.13";
/// Must equal the kafka_2.13 version in the lock; a test keeps the two in step.
pub(super) const KAFKA_VERSION: &str = "4.1.0";
/// The largest pinned jar is ~7 MB; anything far bigger is not the file we pinned.
pub(super) const MAX_JAR_BYTES: u64 = 128 * 1024 * 1024;

/// The Apache Kafka version the lab runs unless a matrix asks for another (org.apache.kafka:kafka_2.13).
pub fn kafka_version() -> &'static str {
    KAFKA_VERSION
}

/// How a Kafka version logs: 4.x through log4j2, 3.x through log4j 1 (reload4j).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Logging {
    Log4j2,
    Reload4j,
}

/// A Kafka version the lab can run: where its lock, POM and log configuration live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KafkaPin {
    pub version: &'static str,
    /// Directory (relative to the repository) holding jars.lock, pom.xml and its log configuration.
    pub dir: &'static str,
    pub logging: Logging,
}

/// Every Kafka version the lab pins; the first is the default.
pub const KAFKA_PINS: &[KafkaPin] = &[
    KafkaPin { version: KAFKA_VERSION, dir: "env/kafka", logging: Logging::Log4j2 },
    KafkaPin { version: "3.9.1", dir: "env/kafka/3.9.1", logging: Logging::Reload4j },
];

/// The pin of `version`, or an error that lists the versions the lab can run.
pub fn pin(version: &str) -> anyhow::Result<&'static KafkaPin> {
    KAFKA_PINS.iter().find(|p| p.version == version).ok_or_else(|| {
        let known: Vec<&str> = KAFKA_PINS.iter().map(|p| p.version).collect();
        anyhow::anyhow!(
            "Kafka {version} is not pinned; the lab runs {known:?} (add env/kafka/<version>/ to pin another)"
        )
    })
}

/// The default pin (the newest Kafka, whose tools every environment uses).
pub fn default_pin() -> &'static KafkaPin {
    &KAFKA_PINS[0]
}

impl KafkaPin {
    /// The jar set: this directory's lock must pin the broker at this version.
    fn jar_set(&self) -> JarSet {
        JarSet {
            dir: self.dir,
            required: vec![format!("{KAFKA_GROUP}:{KAFKA_BROKER_ARTIFACT}:{}", self.version)],
            about: format!(
                "Apache Kafka {} from Maven Central: the KRaft broker (kafka_2.13), its runtime dependencies and\n\
                 its SLF4J binding (and Kafka's tools where the POM asks for them).",
                self.version
            ),
        }
    }

    /// `env/kafka[/<version>]/jars.lock`, as provenance names it.
    pub fn lock_file(&self) -> String {
        self.jar_set().lock_file()
    }

    /// This version's jars, downloaded if missing and verified, in lock order.
    pub fn classpath(&self) -> anyhow::Result<Vec<PathBuf>> {
        Ok(self.fetch()?.jars)
    }

    fn fetch(&self) -> anyhow::Result<Fetched> {
        self.jar_set().fetch()
    }

    /// The lock as provenance records it.
    pub fn provenance(&self) -> anyhow::Result<Pins> {
        Ok(self.jar_set().load()?.pins(&self.lock_file()))
    }

    /// The JVM flag that points the broker at its log configuration.
    pub fn broker_log_flag(&self) -> String {
        let root = repo_root();
        match self.logging {
            Logging::Log4j2 => format!("-Dlog4j2.configurationFile={}", root.join("env/kafka/log4j2.yaml").display()),
            Logging::Reload4j => {
                format!("-Dlog4j.configuration=file:{}", root.join(self.dir).join("log4j.properties").display())
            }
        }
    }

    /// The JVM flag for this version's command-line tools (StorageTool): warnings to stderr only.
    pub fn tools_log_flag(&self) -> String {
        let root = repo_root();
        match self.logging {
            Logging::Log4j2 => {
                format!("-Dlog4j2.configurationFile={}", root.join("env/kafka/tools-log4j2.yaml").display())
            }
            Logging::Reload4j => {
                format!("-Dlog4j.configuration=file:{}", root.join(self.dir).join("tools-log4j.properties").display())
            }
        }
    }
}

/// The pinned `org.apache.kafka:<artifact>:<version>` (e.g. `kafka-tools`), as the lock names it.
pub fn kafka_artifact_coordinate(artifact: &str) -> anyhow::Result<String> {
    let lock = Lock::load(&lock_path())?;
    let jar = lock.jars.iter().find(|jar| jar.group == KAFKA_GROUP && jar.artifact == artifact);
    jar.map(|jar| jar.coordinate())
        .ok_or_else(|| anyhow::anyhow!("{LOCK_FILE} pins no {KAFKA_GROUP}:{artifact}; run `cargo xtask env lock`"))
}

/// `<repo>/env/kafka/jars.lock`.
pub fn lock_path() -> PathBuf {
    repo_root().join(LOCK_FILE)
}

/// `$STREAMLAB_MAVEN_REPO` without a trailing slash, else Maven Central.
pub fn maven_repo_url() -> String {
    std::env::var(MAVEN_REPO_ENV)
        .ok()
        .map(|url| url.trim().trim_end_matches('/').to_string())
        .filter(|url| !url.is_empty())
        .unwrap_or_else(|| DEFAULT_MAVEN_REPO.to_string())
}

/// Every jar of the default Kafka, downloaded if missing and verified, in lock order: the default broker's
/// classpath and the tools' classpath for every environment.
pub fn kafka_classpath() -> anyhow::Result<Vec<PathBuf>> {
    Ok(fetch_pinned_jars()?.jars)
}

/// Like [`kafka_classpath`], also telling how the jars were obtained (for provenance and `doctor`).
pub fn fetch_pinned_jars() -> anyhow::Result<Fetched> {
    let lock = Lock::load(&lock_path())?;
    ensure_jars(&lock, &cache_dir(), &maven_repo_url())
}

/// The lock as provenance records it: its path, its hash and every artifact's hash.
pub fn provenance_pins() -> anyhow::Result<Pins> {
    Ok(Lock::load(&lock_path())?.pins(LOCK_FILE))
}

/// `cargo xtask env fetch`: every pinned Kafka version's jars and every Connect plugin's worker classpath.
pub fn fetch_command() -> anyhow::Result<()> {
    let cache = jar_cache_root(&cache_dir());
    let report = |what: &str, fetched: Fetched, started: Instant| {
        tracing::info!(
            "{what}: {} pinned jars verified in {} ({} downloaded, {:.1} MB, via {}) in {:.1} s",
            fetched.jars.len(),
            cache.display(),
            fetched.downloaded,
            megabytes(fetched.downloaded_bytes),
            fetched.method,
            started.elapsed().as_secs_f64()
        );
    };
    for pin in KAFKA_PINS {
        let started = Instant::now();
        report(&format!("Kafka {}", pin.version), pin.fetch()?, started);
    }
    for pin in CONNECT_PINS {
        let started = Instant::now();
        report(&format!("Kafka Connect with {}", pin.name), pin.fetch()?, started);
    }
    Ok(())
}

/// Which locks `env lock` regenerates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockScope<'a> {
    /// Every Kafka version's and every Connect plugin's.
    All,
    /// One Kafka version's.
    Kafka(&'a str),
    /// Every Connect plugin's.
    Connect,
}

/// `cargo xtask env lock [--kafka VERSION | --connect]`: resolve each pom.xml with Maven and rewrite its
/// jars.lock, refusing one that would not pin what its readers check.
pub fn lock_command(scope: LockScope<'_>) -> anyhow::Result<()> {
    let kafka: Vec<&KafkaPin> = match scope {
        LockScope::All => KAFKA_PINS.iter().collect(),
        LockScope::Kafka(version) => vec![pin(version)?],
        LockScope::Connect => Vec::new(),
    };
    for pin in kafka {
        let lock = pin.jar_set().regenerate()?;
        tracing::info!("wrote {} ({} jars, Kafka {})", pin.lock_file(), lock.jars.len(), lock.kafka_version());
    }
    if matches!(scope, LockScope::All | LockScope::Connect) {
        for pin in CONNECT_PINS {
            let jars = pin.regenerate()?;
            tracing::info!(
                "wrote {} ({jars} jars, {} on {})",
                pin.lock_file(),
                pin.coordinate,
                connect::connect_runtime_coordinate()
            );
        }
    }
    Ok(())
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn megabytes(bytes: u64) -> f64 {
    bytes as f64 / 1_000_000.0
}

/// Fixtures shared by the submodules' tests: the committed lock and one-jar locks around a small jar.
#[cfg(test)]
pub(crate) mod testutil {
    use std::path::{Path, PathBuf};

    use super::lock::{Jar, Lock, render_lock};
    use super::maven::files_below;
    use super::{KAFKA_BROKER_ARTIFACT, lock_path};

    /// The committed lock, for tests that need real pins.
    pub(crate) fn committed_lock() -> Lock {
        Lock::load(&lock_path()).expect("the committed lock is valid")
    }

    /// The smallest pinned jar (a few KB), to keep network tests quick.
    pub(crate) fn small_jar() -> Jar {
        let lock = committed_lock();
        let jar = lock.jars.iter().find(|jar| jar.artifact == "jspecify").expect("jspecify is pinned");
        jar.clone()
    }

    pub(crate) fn lock_text(jars: &[Jar]) -> String {
        render_lock("test lock", jars, "env/kafka/pom.xml")
    }

    pub(crate) fn write_lock(dir: &Path, text: &str) -> PathBuf {
        let path = dir.join("jars.lock");
        std::fs::write(&path, text).unwrap();
        path
    }

    /// A one-jar lock around `jar` plus a kafka_2.13 entry, so the whole-set rules hold; the kafka entry is
    /// dropped from the returned lock so only `jar` is fetched.
    pub(crate) fn single_jar_lock(dir: &Path, jar: &Jar) -> Lock {
        let broker = committed_lock().jars.into_iter().find(|j| j.artifact == KAFKA_BROKER_ARTIFACT).unwrap();
        let path = write_lock(dir, &lock_text(&[jar.clone(), broker]));
        let mut lock = Lock::load(&path).unwrap();
        lock.jars.retain(|j| j.artifact == jar.artifact);
        lock
    }

    pub(crate) fn flip_first_hex_digit(sha: &str) -> String {
        let first = if sha.starts_with('0') { '1' } else { '0' };
        format!("{first}{}", &sha[1..])
    }

    pub(crate) fn leftover_files(dir: &Path) -> Vec<PathBuf> {
        if dir.exists() { files_below(dir).unwrap() } else { Vec::new() }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn every_pinned_kafka_version_has_a_valid_lock_at_that_version_and_a_logging_binding() {
        for pin in KAFKA_PINS {
            let lock = Lock::load(&pin.jar_set().lock_path()).unwrap_or_else(|e| panic!("{}: {e}", pin.lock_file()));
            assert_eq!(lock.kafka_version(), pin.version, "{}", pin.lock_file());
            let binding = match pin.logging {
                Logging::Log4j2 => "log4j-slf4j-impl",
                Logging::Reload4j => "slf4j-reload4j",
            };
            assert!(lock.jars.iter().any(|j| j.artifact == binding), "{} has no {binding}", pin.lock_file());
            let config = pin.broker_log_flag();
            let path = config.split_once('=').unwrap().1.trim_start_matches("file:");
            assert!(Path::new(path).exists(), "{path} is missing");
        }
        assert_eq!(default_pin().version, kafka_version());
    }

    #[test]
    fn an_unpinned_version_is_refused_naming_the_pinned_ones() {
        let err = pin("3.7.0").unwrap_err().to_string();
        assert!(err.contains("3.7.0") && err.contains("4.1.0") && err.contains("3.9.1"), "{err}");
        assert_eq!(pin("3.9.1").unwrap().dir, "env/kafka/3.9.1");
    }
}
