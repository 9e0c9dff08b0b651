//! Pinned artifacts: env/kafka/jars.lock (group:artifact:version + SHA-256), fetched into the cache and verified.
//!
//! The lock is validated as a whole before anything is downloaded. Jars come from Maven Central over HTTPS
//! (no Maven needed); if that fails, `mvn` fetches the same coordinates and every checksum is verified the
//! same way. Nothing reaches the cache unverified: a jar is written to a temp file and renamed only after its
//! SHA-256 matched, and a cached jar whose hash no longer matches is downloaded again.

mod fetch;
mod lock;
mod maven;
mod route;

use std::path::PathBuf;
use std::time::Instant;

use sha2::{Digest, Sha256};
use streamlab_record::provenance::Pins;

use fetch::{Fetched, ensure_jars};
pub(crate) use fetch::{http_agent, write_atomically};
use lock::{Lock, jar_cache_root, render_lock};
use maven::resolve_with_maven;
pub use route::{FetchRoute, fetch_route};

use crate::paths::{cache_dir, repo_root};

/// The lock, relative to the repository root (also the name recorded in provenance).
pub const LOCK_FILE: &str = "env/kafka/jars.lock";
/// The POM `cargo xtask env lock` resolves.
pub const POM_FILE: &str = "env/kafka/pom.xml";
pub const DEFAULT_MAVEN_REPO: &str = "https://repo1.maven.org/maven2";
/// Overrides [`DEFAULT_MAVEN_REPO`], e.g. with an internal mirror of Maven Central.
pub const MAVEN_REPO_ENV: &str = "STREAMLAB_MAVEN_REPO";

pub(super) const KAFKA_GROUP: &str = "org.apache.kafka";
pub(super) const KAFKA_BROKER_ARTIFACT: &str = "kafka_2.13";
/// Must equal the kafka_2.13 version in the lock; a test keeps the two in step.
pub(super) const KAFKA_VERSION: &str = "4.1.0";
/// The largest pinned jar is ~7 MB; anything far bigger is not the file we pinned.
pub(super) const MAX_JAR_BYTES: u64 = 128 * 1024 * 1024;

/// The Apache Kafka version the lock pins (org.apache.kafka:kafka_2.13).
pub fn kafka_version() -> &'static str {
    KAFKA_VERSION
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

/// Every pinned jar, downloaded if missing and verified, in lock order: the broker's and the tools' classpath.
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

/// `cargo xtask env fetch`.
pub fn fetch_command() -> anyhow::Result<()> {
    let started = Instant::now();
    let fetched = fetch_pinned_jars()?;
    let cache = jar_cache_root(&cache_dir());
    tracing::info!(
        "Kafka {}: {} pinned jars verified in {} ({} downloaded, {:.1} MB, via {}) in {:.1} s",
        kafka_version(),
        fetched.jars.len(),
        cache.display(),
        fetched.downloaded,
        megabytes(fetched.downloaded_bytes),
        fetched.method,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `cargo xtask env lock`: resolve env/kafka/pom.xml with Maven and rewrite env/kafka/jars.lock.
pub fn lock_command() -> anyhow::Result<()> {
    let root = repo_root();
    let jars = resolve_with_maven(&root.join(POM_FILE))?;
    let text = render_lock(&jars);
    let path = lock_path();
    // Validate what we are about to write with the same rules every reader applies.
    let lock = Lock::parse(&text, &path)?;
    write_atomically(&path, text.as_bytes())?;
    tracing::info!("wrote {} ({} jars, Kafka {})", path.display(), lock.jars.len(), lock.kafka_version());
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
        render_lock(jars)
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
