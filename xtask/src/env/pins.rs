//! Pinned artifacts: env/kafka/jars.lock (group:artifact:version + SHA-256), fetched into the cache and verified.
//!
//! The lock is validated as a whole before anything is downloaded. Jars come from Maven Central over HTTPS
//! (no Maven needed); if that fails, `mvn` fetches the same coordinates and every checksum is verified the
//! same way. Nothing reaches the cache unverified: a jar is written to a temp file and renamed only after its
//! SHA-256 matched, and a cached jar whose hash no longer matches is downloaded again.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::paths::{cache_dir, repo_root};
use streamlab_record::provenance::Pins;

/// The lock, relative to the repository root (also the name recorded in provenance).
pub const LOCK_FILE: &str = "env/kafka/jars.lock";
/// The POM `cargo xtask env lock` resolves.
pub const POM_FILE: &str = "env/kafka/pom.xml";
pub const DEFAULT_MAVEN_REPO: &str = "https://repo1.maven.org/maven2";
/// Overrides [`DEFAULT_MAVEN_REPO`], e.g. with an internal mirror of Maven Central.
pub const MAVEN_REPO_ENV: &str = "STREAMLAB_MAVEN_REPO";

const KAFKA_GROUP: &str = "org.apache.kafka";
const KAFKA_BROKER_ARTIFACT: &str = "kafka_2.13";
/// Must equal the kafka_2.13 version in the lock; a test keeps the two in step.
const KAFKA_VERSION: &str = "4.1.0";
/// The largest pinned jar is ~7 MB; anything far bigger is not the file we pinned.
const MAX_JAR_BYTES: u64 = 128 * 1024 * 1024;

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

/// Errors about the lock and the jars it pins.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}: {problem}", path.display())]
    Malformed { path: PathBuf, problem: String },
    #[error("{}: [[jar]] entry {index}{}: {problem}", path.display(), describe_entry(name))]
    BadEntry { path: PathBuf, index: usize, name: Option<String>, problem: String },
    #[error(
        "checksum mismatch for {file} ({coordinate}) from {origin}: expected sha256 {expected}, got {actual}; \
         refusing it"
    )]
    Mismatch { file: String, coordinate: String, origin: String, expected: String, actual: String },
}

fn describe_entry(name: &Option<String>) -> String {
    name.as_ref().map(|name| format!(" ({name})")).unwrap_or_default()
}

/// One pinned jar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Jar {
    pub group: String,
    pub artifact: String,
    pub version: String,
    /// `<artifact>-<version>.jar`.
    pub file: String,
    /// Lowercase hex.
    pub sha256: String,
}

impl Jar {
    /// `group:artifact:version`.
    pub fn coordinate(&self) -> String {
        format!("{}:{}:{}", self.group, self.artifact, self.version)
    }

    /// `org/apache/kafka/kafka_2.13/4.1.0/kafka_2.13-4.1.0.jar`: the same below a Maven repository and the cache.
    fn repo_path(&self) -> String {
        format!("{}/{}/{}/{}", self.group.replace('.', "/"), self.artifact, self.version, self.file)
    }

    fn url(&self, repo_url: &str) -> String {
        format!("{}/{}", repo_url.trim_end_matches('/'), self.repo_path())
    }

    /// Where this jar lives in the cache: `<cache>/maven/<group path>/<artifact>/<version>/<file>`.
    pub fn cache_path(&self, cache_dir: &Path) -> PathBuf {
        jar_cache_root(cache_dir).join(self.repo_path())
    }

    fn mismatch(&self, origin: &str, actual: String) -> PinError {
        PinError::Mismatch {
            file: self.file.clone(),
            coordinate: self.coordinate(),
            origin: origin.to_string(),
            expected: self.sha256.clone(),
            actual,
        }
    }
}

fn jar_cache_root(cache_dir: &Path) -> PathBuf {
    cache_dir.join("maven")
}

/// A validated jars.lock.
#[derive(Debug, Clone)]
pub struct Lock {
    /// SHA-256 of the lock file's bytes.
    pub sha256: String,
    pub jars: Vec<Jar>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLock {
    #[serde(default)]
    jar: Vec<toml::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJar {
    coordinate: String,
    file: String,
    sha256: String,
}

impl Lock {
    /// Reads and validates a lock; any problem is refused naming the file and the entry.
    pub fn load(path: &Path) -> Result<Lock, PinError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| PinError::Read { path: path.to_path_buf(), source })?;
        Lock::parse(&text, path)
    }

    /// Validates lock text; `path` is only used to name it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Lock, PinError> {
        let malformed = |problem: String| PinError::Malformed { path: path.to_path_buf(), problem };
        let raw: RawLock = toml::from_str(text).map_err(|e| malformed(format!("not a valid lock: {e}")))?;
        if raw.jar.is_empty() {
            return Err(malformed("no [[jar]] entries".to_string()));
        }
        let jars = raw
            .jar
            .into_iter()
            .enumerate()
            .map(|(i, value)| parse_entry(value).map_err(|e| e.at(path, i + 1)))
            .collect::<Result<Vec<_>, _>>()?;
        check_unique(&jars).map_err(|(index, problem)| {
            EntryError { name: Some(jars[index].coordinate()), problem }.at(path, index + 1)
        })?;
        check_kafka_versions(&jars).map_err(malformed)?;
        Ok(Lock { sha256: sha256_hex(text.as_bytes()), jars })
    }

    /// The org.apache.kafka:kafka_2.13 version (validation guarantees it is there).
    pub fn kafka_version(&self) -> &str {
        self.jars
            .iter()
            .find(|jar| jar.group == KAFKA_GROUP && jar.artifact == KAFKA_BROKER_ARTIFACT)
            .map(|jar| jar.version.as_str())
            .unwrap_or_default()
    }

    /// The lock for provenance; `lock_file` is how the record names it (relative to the repository).
    pub fn pins(&self, lock_file: &str) -> Pins {
        Pins {
            lock_file: lock_file.to_string(),
            lock_sha256: self.sha256.clone(),
            artifacts: self.jars.iter().map(|jar| (jar.coordinate(), jar.sha256.clone())).collect(),
        }
    }
}

/// A problem with one entry, before it knows which file and index it belongs to.
struct EntryError {
    name: Option<String>,
    problem: String,
}

impl EntryError {
    fn at(self, path: &Path, index: usize) -> PinError {
        PinError::BadEntry { path: path.to_path_buf(), index, name: self.name, problem: self.problem }
    }
}

fn parse_entry(value: toml::Value) -> Result<Jar, EntryError> {
    let name = value.get("coordinate").and_then(|c| c.as_str()).map(str::to_string);
    let fail = |problem: String| EntryError { name: name.clone(), problem };
    let raw: RawJar = value.try_into().map_err(|e: toml::de::Error| fail(e.message().to_string()))?;
    let (group, artifact, version) = split_coordinate(&raw.coordinate).map_err(fail)?;
    let expected_file = format!("{artifact}-{version}.jar");
    if raw.file != expected_file {
        return Err(fail(format!("file is {:?}, expected {expected_file:?}", raw.file)));
    }
    if raw.sha256.len() != 64 || !raw.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(fail(format!("sha256 {:?} is not 64 hex characters", raw.sha256)));
    }
    Ok(Jar { group, artifact, version, file: raw.file, sha256: raw.sha256.to_ascii_lowercase() })
}

/// `group:artifact:version`, each part safe to use as path components.
fn split_coordinate(coordinate: &str) -> Result<(String, String, String), String> {
    let parts: Vec<&str> = coordinate.split(':').collect();
    let [group, artifact, version] = parts.as_slice() else {
        return Err(format!("coordinate {coordinate:?} is not group:artifact:version"));
    };
    let group_ok = group.split('.').all(is_path_safe);
    if !group_ok || !is_path_safe(artifact) || !is_path_safe(version) {
        return Err(format!("coordinate {coordinate:?} has an empty part or a character outside [A-Za-z0-9._-]"));
    }
    Ok((group.to_string(), artifact.to_string(), version.to_string()))
}

fn is_path_safe(part: &str) -> bool {
    !part.is_empty()
        && part != "."
        && part != ".."
        && part.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// One version per group:artifact on a classpath; the error is the (0-based) index of the repeat.
fn check_unique(jars: &[Jar]) -> Result<(), (usize, String)> {
    let mut seen = BTreeSet::new();
    for (index, jar) in jars.iter().enumerate() {
        if !seen.insert((jar.group.as_str(), jar.artifact.as_str())) {
            return Err((index, format!("{}:{} is pinned more than once", jar.group, jar.artifact)));
        }
    }
    Ok(())
}

/// Every org.apache.kafka artifact at the broker's version.
fn check_kafka_versions(jars: &[Jar]) -> Result<(), String> {
    let broker = jars
        .iter()
        .find(|jar| jar.group == KAFKA_GROUP && jar.artifact == KAFKA_BROKER_ARTIFACT)
        .ok_or_else(|| format!("no {KAFKA_GROUP}:{KAFKA_BROKER_ARTIFACT} entry"))?;
    if let Some(odd) = jars.iter().find(|jar| jar.group == KAFKA_GROUP && jar.version != broker.version) {
        return Err(format!(
            "{} does not match {KAFKA_GROUP}:{KAFKA_BROKER_ARTIFACT}:{}: every Kafka artifact must be one version",
            odd.coordinate(),
            broker.version
        ));
    }
    Ok(())
}

/// How the jars came to be in the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchMethod {
    /// Everything was already cached and verified.
    Cache,
    /// Downloaded from the Maven repository over HTTPS.
    Https,
    /// HTTPS failed and `mvn` fetched the missing jars (verified all the same).
    MavenFallback,
}

impl fmt::Display for FetchMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FetchMethod::Cache => "cache",
            FetchMethod::Https => "HTTPS",
            FetchMethod::MavenFallback => "Maven fallback",
        })
    }
}

/// The outcome of [`ensure_jars`].
#[derive(Debug, Clone)]
pub struct Fetched {
    /// Every pinned jar in the cache, verified, in lock order.
    pub jars: Vec<PathBuf>,
    pub method: FetchMethod,
    pub downloaded: usize,
    pub downloaded_bytes: u64,
}

/// Makes every jar of `lock` present and verified under `cache_dir`, downloading what is missing or corrupt
/// from `repo_url` (a Maven repository base URL), else with `mvn`. A checksum mismatch is never retried.
pub fn ensure_jars(lock: &Lock, cache_dir: &Path, repo_url: &str) -> anyhow::Result<Fetched> {
    let missing = missing_jars(lock, cache_dir)?;
    let jars = lock.jars.iter().map(|jar| jar.cache_path(cache_dir)).collect();
    if missing.is_empty() {
        return Ok(Fetched { jars, method: FetchMethod::Cache, downloaded: 0, downloaded_bytes: 0 });
    }
    tracing::info!("{} of {} pinned jars to fetch from {repo_url}", missing.len(), lock.jars.len());
    let https = download_all(&missing, cache_dir, repo_url)?;
    let mut fetched =
        Fetched { jars, method: FetchMethod::Https, downloaded: https.done, downloaded_bytes: https.bytes };
    if let Some(error) = https.failure {
        let rest = &missing[https.done..];
        tracing::warn!("HTTPS download failed ({error:#}); falling back to Maven for {} jars", rest.len());
        fetched.downloaded_bytes += fetch_with_maven(rest, cache_dir)
            .with_context(|| format!("HTTPS failed ({error:#}) and so did the Maven fallback"))?;
        fetched.downloaded = missing.len();
        fetched.method = FetchMethod::MavenFallback;
    }
    tracing::info!("fetched {} jars, {:.1} MB", fetched.downloaded, megabytes(fetched.downloaded_bytes));
    Ok(fetched)
}

/// Jars not in the cache or whose cached copy no longer matches (that copy is removed, to be fetched again).
fn missing_jars<'a>(lock: &'a Lock, cache_dir: &Path) -> anyhow::Result<Vec<&'a Jar>> {
    let mut missing = Vec::new();
    for jar in &lock.jars {
        let path = jar.cache_path(cache_dir);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                missing.push(jar);
                continue;
            }
            Err(e) => return Err(e).with_context(|| format!("cannot read cached {}", path.display())),
        };
        let actual = sha256_hex(&bytes);
        if actual != jar.sha256 {
            tracing::warn!(
                "cached {} ({}) has sha256 {actual}, expected {}; downloading it again",
                path.display(),
                jar.coordinate(),
                jar.sha256
            );
            std::fs::remove_file(&path).with_context(|| format!("cannot remove corrupt {}", path.display()))?;
            missing.push(jar);
        }
    }
    Ok(missing)
}

/// How far the HTTPS downloads got: `done` jars (in order) are installed; `failure` stopped the rest.
struct HttpsOutcome {
    done: usize,
    bytes: u64,
    failure: Option<anyhow::Error>,
}

/// Downloads jars in order; stops at the first transport failure (the Maven fallback takes the rest), but
/// returns an error at once for a checksum mismatch or a cache that cannot be written.
fn download_all(jars: &[&Jar], cache_dir: &Path, repo_url: &str) -> anyhow::Result<HttpsOutcome> {
    let agent = http_agent(Duration::from_secs(300));
    let mut outcome = HttpsOutcome { done: 0, bytes: 0, failure: None };
    for jar in jars {
        let url = jar.url(repo_url);
        let bytes = match fetch_bytes(&agent, &url) {
            Ok(bytes) => bytes,
            Err(error) => {
                outcome.failure = Some(error.context(url));
                break;
            }
        };
        install_verified(jar, &bytes, &url, cache_dir)?;
        outcome.done += 1;
        outcome.bytes += bytes.len() as u64;
    }
    Ok(outcome)
}

fn http_agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(10)))
        .timeout_global(Some(timeout))
        .user_agent(concat!("streamlab-xtask/", env!("CARGO_PKG_VERSION")))
        .tls_config(ureq::tls::TlsConfig::builder().root_certs(root_certs()).build())
        .build()
        .into()
}

/// The operating system's CA bundle, as curl and the JDK use it: machines whose egress proxy re-signs TLS with
/// a locally installed CA verify too. Without a bundle, the Mozilla roots built into ureq.
fn root_certs() -> ureq::tls::RootCerts {
    let bundles = std::env::var_os("SSL_CERT_FILE").map(PathBuf::from).into_iter().chain(
        ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"]
            .map(PathBuf::from),
    );
    for bundle in bundles {
        let Ok(pem) = std::fs::read(&bundle) else { continue };
        let certs: Vec<_> = ureq::tls::parse_pem(&pem)
            .filter_map(|item| match item {
                Ok(ureq::tls::PemItem::Certificate(cert)) => Some(cert),
                _ => None,
            })
            .collect();
        if !certs.is_empty() {
            return ureq::tls::RootCerts::new_with_certs(&certs);
        }
    }
    ureq::tls::RootCerts::WebPki
}

fn fetch_bytes(agent: &ureq::Agent, url: &str) -> anyhow::Result<Vec<u8>> {
    let mut response = agent.get(url).call()?;
    Ok(response.body_mut().with_config().limit(MAX_JAR_BYTES).read_to_vec()?)
}

/// Checks `bytes` against the pin, then writes them to the jar's cache path through a temp file and a rename,
/// so the cache never holds an unverified or half-written jar.
fn install_verified(jar: &Jar, bytes: &[u8], origin: &str, cache_dir: &Path) -> anyhow::Result<()> {
    let actual = sha256_hex(bytes);
    if actual != jar.sha256 {
        return Err(jar.mismatch(origin, actual).into());
    }
    write_atomically(&jar.cache_path(cache_dir), bytes)
}

/// Writes `path` via a sibling temp file and a rename; the temp file is removed on failure.
fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path.parent().context("a file path has a parent")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let temp =
        dir.join(format!(".{}.{}", path.file_name().and_then(|n| n.to_str()).unwrap_or("download"), unique_suffix()));
    let written = write_and_sync(&temp, bytes).and_then(|()| std::fs::rename(&temp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written.with_context(|| format!("cannot write {}", path.display()))
}

fn write_and_sync(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::File::create(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

fn unique_suffix() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!("{}-{}.part", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// Fetches exactly `jars` (no transitive dependencies) with `mvn dependency:copy-dependencies`, which honours
/// the user's Maven settings (proxies, mirrors), then verifies and installs each one. Returns the bytes installed.
fn fetch_with_maven(jars: &[&Jar], cache_dir: &Path) -> anyhow::Result<u64> {
    let sh = xshell::Shell::new()?;
    let scratch = sh.create_temp_dir()?;
    let pom = scratch.path().join("pom.xml");
    let out = scratch.path().join("jars");
    std::fs::write(&pom, fetch_pom(jars))?;
    tracing::info!("running mvn dependency:copy-dependencies for {} jars", jars.len());
    run_maven(xshell::cmd!(
        sh,
        "mvn -B -q -f {pom} dependency:copy-dependencies -DexcludeTransitive=true -Dmdep.useRepositoryLayout=true -DoutputDirectory={out}"
    ))?;
    let mut installed = 0;
    for jar in jars {
        let copied = out.join(jar.repo_path());
        let bytes = std::fs::read(&copied).with_context(|| format!("Maven did not produce {}", copied.display()))?;
        install_verified(jar, &bytes, "mvn dependency:copy-dependencies", cache_dir)?;
        installed += bytes.len() as u64;
    }
    Ok(installed)
}

/// A throwaway POM depending on exactly these jars, each with every transitive dependency excluded.
fn fetch_pom(jars: &[&Jar]) -> String {
    let dependencies: String = jars
        .iter()
        .map(|jar| {
            format!(
                "    <dependency><groupId>{}</groupId><artifactId>{}</artifactId><version>{}</version>\
                 <exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions>\
                 </dependency>\n",
                jar.group, jar.artifact, jar.version
            )
        })
        .collect();
    format!(
        "<project xmlns=\"http://maven.apache.org/POM/4.0.0\">\n  <modelVersion>4.0.0</modelVersion>\n  \
         <groupId>dev.streamlab</groupId>\n  <artifactId>streamlab-fetch</artifactId>\n  <version>0</version>\n  \
         <packaging>pom</packaging>\n  <dependencies>\n{dependencies}  </dependencies>\n</project>\n"
    )
}

/// Which way this machine can fetch pinned jars, for `doctor`.
#[allow(dead_code, reason = "reported by `cargo xtask doctor`")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchRoute {
    /// The Maven repository answers over HTTPS: no Maven needed.
    Https { repo_url: String },
    /// HTTPS fails but `mvn` runs: fetching falls back to Maven (checksums still verified).
    MavenFallback { repo_url: String, https_error: String },
    /// Neither works: only an already-filled cache can be used.
    Unavailable { repo_url: String, https_error: String, maven_error: String },
}

/// Probes the configured repository (one small HTTPS request) and, if that fails, whether `mvn` runs.
#[allow(dead_code, reason = "reported by `cargo xtask doctor`")]
pub fn fetch_route() -> FetchRoute {
    probe_fetch_route(&maven_repo_url())
}

#[allow(dead_code, reason = "reported by `cargo xtask doctor`")]
pub fn probe_fetch_route(repo_url: &str) -> FetchRoute {
    let repo_url = repo_url.trim_end_matches('/').to_string();
    let probe = format!(
        "{repo_url}/org/apache/kafka/{KAFKA_BROKER_ARTIFACT}/{KAFKA_VERSION}/{KAFKA_BROKER_ARTIFACT}-{KAFKA_VERSION}.pom"
    );
    let https_error = match http_agent(Duration::from_secs(15)).head(&probe).call() {
        Ok(_) => return FetchRoute::Https { repo_url },
        Err(e) => format!("{probe}: {e}"),
    };
    match maven_version() {
        Ok(_) => FetchRoute::MavenFallback { repo_url, https_error },
        Err(maven_error) => FetchRoute::Unavailable { repo_url, https_error, maven_error: format!("{maven_error:#}") },
    }
}

fn maven_version() -> anyhow::Result<String> {
    let sh = xshell::Shell::new()?;
    let version = xshell::cmd!(sh, "mvn -B -v").quiet().ignore_stderr().read()?;
    Ok(strip_ansi(version.lines().next().unwrap_or_default()))
}

/// Runs Maven with its output captured: shown (the tail) only when it fails.
fn run_maven(cmd: xshell::Cmd<'_>) -> anyhow::Result<()> {
    let output = cmd.quiet().ignore_status().output()?;
    if output.status.success() {
        return Ok(());
    }
    let log =
        strip_ansi(&format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr)));
    let lines: Vec<&str> = log.lines().collect();
    anyhow::bail!("mvn failed ({}):\n{}", output.status, lines[lines.len().saturating_sub(30)..].join("\n"))
}

/// Maven 3.8 prints colour codes even in batch mode (`mvn -v` always starts with ESC[0m).
fn strip_ansi(text: &str) -> String {
    let mut plain = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            // Skip a CSI sequence: ESC [ parameters, up to and including the final letter.
            chars.by_ref().skip(1).find(|c| c.is_ascii_alphabetic());
        } else {
            plain.push(c);
        }
    }
    plain
}

/// Resolves the POM's runtime dependencies with Maven into a temp dir and hashes every jar, sorted.
fn resolve_with_maven(pom: &Path) -> anyhow::Result<Vec<Jar>> {
    let sh = xshell::Shell::new()?;
    let scratch = sh.create_temp_dir()?;
    let out = scratch.path().join("jars");
    tracing::info!("resolving {} with {}", pom.display(), maven_version()?);
    run_maven(xshell::cmd!(
        sh,
        "mvn -B -q -f {pom} dependency:copy-dependencies -DincludeScope=runtime -Dmdep.useRepositoryLayout=true -DoutputDirectory={out}"
    ))?;
    let mut jars = jars_in_repository_layout(&out)?;
    jars.sort_by_key(Jar::coordinate);
    Ok(jars)
}

/// Reads `<dir>/<group path>/<artifact>/<version>/<file>.jar` back into pinned jars.
fn jars_in_repository_layout(dir: &Path) -> anyhow::Result<Vec<Jar>> {
    let mut jars = Vec::new();
    for path in files_below(dir)? {
        if path.extension().is_none_or(|ext| ext != "jar") {
            continue;
        }
        let relative = path.strip_prefix(dir)?;
        let parts: Vec<&str> = relative.iter().filter_map(|p| p.to_str()).collect();
        let [group @ .., artifact, version, file] = parts.as_slice() else {
            anyhow::bail!("{} is not in Maven's repository layout", relative.display());
        };
        anyhow::ensure!(
            *file == format!("{artifact}-{version}.jar"),
            "{} has a classifier or an unexpected name; the lock only pins plain jars",
            relative.display()
        );
        let bytes = std::fs::read(&path)?;
        jars.push(Jar {
            group: group.join("."),
            artifact: artifact.to_string(),
            version: version.to_string(),
            file: file.to_string(),
            sha256: sha256_hex(&bytes),
        });
    }
    anyhow::ensure!(!jars.is_empty(), "Maven copied no jars into {}", dir.display());
    Ok(jars)
}

fn files_below(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))? {
            let path = entry?.path();
            if path.is_dir() { pending.push(path) } else { files.push(path) }
        }
    }
    Ok(files)
}

fn render_lock(jars: &[Jar]) -> String {
    let kafka = jars
        .iter()
        .find(|jar| jar.group == KAFKA_GROUP && jar.artifact == KAFKA_BROKER_ARTIFACT)
        .map_or("?", |jar| jar.version.as_str());
    let header = format!(
        "# Apache Kafka {kafka} from Maven Central: the KRaft broker (kafka_2.13), Kafka's tools (kafka-tools),\n\
         # their runtime dependencies and the log4j2 SLF4J binding, as Maven resolves {POM_FILE}.\n\
         # Generated by `cargo xtask env lock`; do not edit by hand. `cargo xtask env fetch` downloads every jar\n\
         # into the cache and refuses any whose SHA-256 differs from the one here.\n"
    );
    header + &lock_entries(jars)
}

fn lock_entries(jars: &[Jar]) -> String {
    jars.iter()
        .map(|jar| {
            format!(
                "\n[[jar]]\ncoordinate = \"{}\"\nfile = \"{}\"\nsha256 = \"{}\"\n",
                jar.coordinate(),
                jar.file,
                jar.sha256
            )
        })
        .collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn megabytes(bytes: u64) -> f64 {
    bytes as f64 / 1_000_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed lock, for tests that need real pins.
    fn committed_lock() -> Lock {
        Lock::load(&lock_path()).expect("the committed lock is valid")
    }

    /// The smallest pinned jar (a few KB), to keep network tests quick.
    fn small_jar() -> Jar {
        let lock = committed_lock();
        let jar = lock.jars.iter().find(|jar| jar.artifact == "jspecify").expect("jspecify is pinned");
        jar.clone()
    }

    fn lock_text(jars: &[Jar]) -> String {
        render_lock(jars)
    }

    fn write_lock(dir: &Path, text: &str) -> PathBuf {
        let path = dir.join("jars.lock");
        std::fs::write(&path, text).unwrap();
        path
    }

    /// A one-jar lock around `jar` plus a kafka_2.13 entry, so the whole-set rules hold; the kafka entry is
    /// dropped from the returned lock so only `jar` is fetched.
    fn single_jar_lock(dir: &Path, jar: &Jar) -> Lock {
        let broker = committed_lock().jars.into_iter().find(|j| j.artifact == KAFKA_BROKER_ARTIFACT).unwrap();
        let path = write_lock(dir, &lock_text(&[jar.clone(), broker]));
        let mut lock = Lock::load(&path).unwrap();
        lock.jars.retain(|j| j.artifact == jar.artifact);
        lock
    }

    fn flip_first_hex_digit(sha: &str) -> String {
        let first = if sha.starts_with('0') { '1' } else { '0' };
        format!("{first}{}", &sha[1..])
    }

    fn leftover_files(dir: &Path) -> Vec<PathBuf> {
        if dir.exists() { files_below(dir).unwrap() } else { Vec::new() }
    }

    #[test]
    fn committed_lock_pins_kafka_and_its_tools_at_one_version() {
        let lock = committed_lock();
        assert_eq!(lock.kafka_version(), kafka_version());
        let coordinates: Vec<String> = lock.jars.iter().map(Jar::coordinate).collect();
        let mut sorted = coordinates.clone();
        sorted.sort();
        assert_eq!(coordinates, sorted, "the lock is sorted by coordinate");
        for expected in ["org.apache.kafka:kafka-tools:4.1.0", "org.apache.logging.log4j:log4j-slf4j-impl:2.24.3"] {
            assert!(coordinates.iter().any(|c| c == expected), "{expected} is pinned");
        }
        assert!(!coordinates.iter().any(|c| c.contains("connect-runtime")), "Connect is excluded");
        let pins = lock.pins(LOCK_FILE);
        assert_eq!(pins.artifacts.len(), lock.jars.len());
        assert_eq!(pins.lock_sha256, sha256_hex(&std::fs::read(lock_path()).unwrap()));
    }

    #[test]
    fn tampered_checksum_is_refused_before_anything_is_cached() {
        let dir = tempfile::tempdir().unwrap();
        let mut jar = small_jar();
        let real = jar.sha256.clone();
        jar.sha256 = flip_first_hex_digit(&real);
        let lock = single_jar_lock(dir.path(), &jar);
        let cache = dir.path().join("cache");

        let error = ensure_jars(&lock, &cache, &maven_repo_url()).unwrap_err();

        let message = format!("{error:#}");
        for needle in [jar.coordinate(), jar.file.clone(), jar.sha256.clone(), real] {
            assert!(message.contains(&needle), "{message:?} names {needle:?}");
        }
        assert!(matches!(error.downcast_ref::<PinError>(), Some(PinError::Mismatch { .. })));
        assert_eq!(leftover_files(&cache), Vec::<PathBuf>::new(), "nothing reaches the cache");
    }

    #[test]
    fn malformed_lock_is_refused_naming_file_and_entry() {
        let good = committed_lock().jars;
        let coordinate = good[0].coordinate();
        let sha = good[0].sha256.clone();
        let text = lock_text(&good);
        let cases = [
            ("short sha256", text.replacen(&sha, "abc123", 1), coordinate.clone()),
            ("non-hex sha256", text.replacen(&sha, &format!("zz{}", &sha[2..]), 1), coordinate.clone()),
            ("missing field", text.replacen(&format!("sha256 = \"{sha}\"\n"), "", 1), coordinate.clone()),
            ("unknown field", text.replacen("[[jar]]\n", "[[jar]]\nsize = 3\n", 1), coordinate.clone()),
            ("wrong file", text.replacen(&good[0].file, "other.jar", 1), coordinate.clone()),
            ("bad coordinate", text.replacen(&coordinate, "a:b", 1), "entry 1".to_string()),
            ("path traversal", text.replacen(&coordinate, "a:..:1", 1), "entry 1".to_string()),
            ("broken line", text.replacen(&format!("\"{sha}\""), &format!("\"{sha}"), 1), "line 9".to_string()),
            (
                "duplicate",
                format!("{text}{}", lock_entries(&good[..1])),
                format!("entry {} ({coordinate})", good.len() + 1),
            ),
        ];
        let dir = tempfile::tempdir().unwrap();
        for (case, text, entry) in cases {
            let path = write_lock(dir.path(), &text);
            let message = Lock::load(&path).expect_err(case).to_string();
            assert!(message.contains(&path.display().to_string()), "{case}: {message:?} names the file");
            assert!(message.contains(&entry), "{case}: {message:?} names {entry:?}");
        }
    }

    #[test]
    fn kafka_artifacts_at_another_version_are_refused() {
        let mut jars = committed_lock().jars;
        let tools = jars.iter_mut().find(|jar| jar.artifact == "kafka-tools").unwrap();
        tools.version = "4.0.0".to_string();
        tools.file = "kafka-tools-4.0.0.jar".to_string();
        let message = Lock::parse(&lock_text(&jars), Path::new(LOCK_FILE)).unwrap_err().to_string();
        assert!(message.contains("org.apache.kafka:kafka-tools:4.0.0"), "{message}");
    }

    #[test]
    fn fetches_one_pinned_jar_then_serves_it_from_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let jar = small_jar();
        let lock = single_jar_lock(dir.path(), &jar);
        let cache = dir.path().join("cache");

        let first = ensure_jars(&lock, &cache, &maven_repo_url()).unwrap();
        assert_eq!((first.method, first.downloaded), (FetchMethod::Https, 1));
        assert_eq!(first.jars, vec![jar.cache_path(&cache)]);
        assert!(first.jars[0].ends_with("org/jspecify/jspecify/1.0.0/jspecify-1.0.0.jar"));
        assert_eq!(sha256_hex(&std::fs::read(&first.jars[0]).unwrap()), jar.sha256);

        let second = ensure_jars(&lock, &cache, &maven_repo_url()).unwrap();
        assert_eq!((second.method, second.downloaded), (FetchMethod::Cache, 0));
        assert_eq!(leftover_files(&cache), first.jars, "no temp files are left behind");
    }

    #[test]
    fn corrupted_cached_jar_is_detected_and_fetched_again() {
        let dir = tempfile::tempdir().unwrap();
        let jar = small_jar();
        let lock = single_jar_lock(dir.path(), &jar);
        let cache = dir.path().join("cache");
        let path = jar.cache_path(&cache);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"not the pinned jar").unwrap();

        assert_eq!(missing_jars(&lock, &cache).unwrap(), vec![&lock.jars[0]], "the corrupt copy is detected");
        std::fs::write(&path, b"not the pinned jar").unwrap();
        let fetched = ensure_jars(&lock, &cache, &maven_repo_url()).unwrap();

        assert_eq!((fetched.method, fetched.downloaded), (FetchMethod::Https, 1));
        assert_eq!(sha256_hex(&std::fs::read(&path).unwrap()), jar.sha256);
    }

    /// Maven Central unreachable over HTTPS (a closed loopback port): `mvn` fetches, and checksums still hold.
    #[test]
    fn maven_fallback_verifies_every_checksum() {
        if let Err(e) = maven_version() {
            eprintln!("skipping: mvn is not runnable here ({e:#})");
            return;
        }
        let unreachable = "http://127.0.0.1:9/maven2";
        let dir = tempfile::tempdir().unwrap();
        let jar = small_jar();

        let good = single_jar_lock(dir.path(), &jar);
        let fetched = ensure_jars(&good, &dir.path().join("good"), unreachable).unwrap();
        assert_eq!((fetched.method, fetched.downloaded), (FetchMethod::MavenFallback, 1));
        assert_eq!(sha256_hex(&std::fs::read(&fetched.jars[0]).unwrap()), jar.sha256);

        let mut tampered = jar.clone();
        tampered.sha256 = flip_first_hex_digit(&jar.sha256);
        let bad = single_jar_lock(dir.path(), &tampered);
        let error = ensure_jars(&bad, &dir.path().join("bad"), unreachable).unwrap_err();
        assert!(format!("{error:#}").contains(&tampered.sha256), "{error:#}");
        assert_eq!(leftover_files(&dir.path().join("bad")), Vec::<PathBuf>::new());
    }

    #[test]
    fn fetch_route_tells_https_from_the_maven_fallback() {
        assert_eq!(
            probe_fetch_route(&format!("{}/", maven_repo_url())),
            FetchRoute::Https { repo_url: maven_repo_url() }
        );
        let closed = probe_fetch_route("http://127.0.0.1:9/maven2");
        assert!(matches!(closed, FetchRoute::MavenFallback { .. } | FetchRoute::Unavailable { .. }), "{closed:?}");
    }

    #[test]
    fn fetch_pom_names_each_jar_without_transitive_dependencies() {
        let jar = small_jar();
        let pom = fetch_pom(&[&jar]);
        assert!(pom.contains("<groupId>org.jspecify</groupId><artifactId>jspecify</artifactId><version>1.0.0"));
        assert!(pom.contains("<exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion>"));
    }
}
