//! A jar lock (env/kafka/jars.lock, env/connect/<plugin>/jars.lock): parsed and validated as a whole, naming the
//! file and the entry of any problem, and rendered back when `env lock` regenerates it. What a lock must pin
//! (the broker, the Connect runtime and a connector) is its owner's check: see [`Lock::require`].

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use streamlab_record::provenance::Pins;

use super::{KAFKA_BROKER_ARTIFACT, KAFKA_GROUP, sha256_hex};

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

pub(super) fn describe_entry(name: &Option<String>) -> String {
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
    pub(super) fn repo_path(&self) -> String {
        format!("{}/{}/{}/{}", self.group.replace('.', "/"), self.artifact, self.version, self.file)
    }

    pub(super) fn url(&self, repo_url: &str) -> String {
        format!("{}/{}", repo_url.trim_end_matches('/'), self.repo_path())
    }

    /// Where this jar lives in the cache: `<cache>/maven/<group path>/<artifact>/<version>/<file>`.
    pub fn cache_path(&self, cache_dir: &Path) -> PathBuf {
        jar_cache_root(cache_dir).join(self.repo_path())
    }

    /// Checks `bytes` against the pin, then writes them to the jar's cache path atomically, so the cache never
    /// holds an unverified or half-written jar.
    pub(super) fn install_verified(&self, bytes: &[u8], origin: &str, cache_dir: &Path) -> anyhow::Result<()> {
        let actual = sha256_hex(bytes);
        if actual != self.sha256 {
            return Err(self.mismatch(origin, actual).into());
        }
        streamlab_process::files::write_atomic(&self.cache_path(cache_dir), bytes)
    }

    pub(super) fn mismatch(&self, origin: &str, actual: String) -> PinError {
        PinError::Mismatch {
            file: self.file.clone(),
            coordinate: self.coordinate(),
            origin: origin.to_string(),
            expected: self.sha256.clone(),
            actual,
        }
    }
}

pub(super) fn jar_cache_root(cache_dir: &Path) -> PathBuf {
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
pub(super) struct RawLock {
    #[serde(default)]
    jar: Vec<toml::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawJar {
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

    /// The org.apache.kafka:kafka_2.13 version, or "" in a lock without the broker (a Connect worker's).
    pub fn kafka_version(&self) -> &str {
        self.version_of(KAFKA_GROUP, KAFKA_BROKER_ARTIFACT).unwrap_or_default()
    }

    /// The pinned version of `group:artifact`, if the lock has it.
    pub fn version_of(&self, group: &str, artifact: &str) -> Option<&str> {
        self.jars.iter().find(|jar| jar.group == group && jar.artifact == artifact).map(|jar| jar.version.as_str())
    }

    /// Every `group:artifact:version` of `required` is pinned at exactly that version; the error names what the
    /// lock has instead.
    pub fn require(&self, required: &[&str]) -> Result<(), String> {
        for coordinate in required {
            let (group, artifact, version) = split_coordinate(coordinate)?;
            match self.version_of(&group, &artifact) {
                Some(pinned) if pinned == version => {}
                Some(pinned) => return Err(format!("pins {group}:{artifact}:{pinned}, not {version}")),
                None => return Err(format!("does not pin {coordinate}")),
            }
        }
        Ok(())
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
pub(super) struct EntryError {
    name: Option<String>,
    problem: String,
}

impl EntryError {
    fn at(self, path: &Path, index: usize) -> PinError {
        PinError::BadEntry { path: path.to_path_buf(), index, name: self.name, problem: self.problem }
    }
}

pub(super) fn parse_entry(value: toml::Value) -> Result<Jar, EntryError> {
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
pub(super) fn split_coordinate(coordinate: &str) -> Result<(String, String, String), String> {
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

pub(super) fn is_path_safe(part: &str) -> bool {
    !part.is_empty()
        && part != "."
        && part != ".."
        && part.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// One version per group:artifact on a classpath; the error is the (0-based) index of the repeat.
pub(super) fn check_unique(jars: &[Jar]) -> Result<(), (usize, String)> {
    let mut seen = BTreeSet::new();
    for (index, jar) in jars.iter().enumerate() {
        if !seen.insert((jar.group.as_str(), jar.artifact.as_str())) {
            return Err((index, format!("{}:{} is pinned more than once", jar.group, jar.artifact)));
        }
    }
    Ok(())
}

/// Every lock is a classpath that runs Kafka code: it has org.apache.kafka artifacts, all at one version (a
/// second kafka-clients or connect-api on the same classpath would shadow the first, class by class). The
/// broker's version leads the message when it is there.
pub(super) fn check_kafka_versions(jars: &[Jar]) -> Result<(), String> {
    let mut kafka = jars.iter().filter(|jar| jar.group == KAFKA_GROUP);
    let lead = jars
        .iter()
        .find(|jar| jar.group == KAFKA_GROUP && jar.artifact == KAFKA_BROKER_ARTIFACT)
        .or_else(|| kafka.clone().next())
        .ok_or_else(|| format!("no {KAFKA_GROUP} entry: not a Kafka classpath"))?;
    if let Some(odd) = kafka.find(|jar| jar.version != lead.version) {
        return Err(format!(
            "{} does not match {}: every Kafka artifact must be one version",
            odd.coordinate(),
            lead.coordinate()
        ));
    }
    Ok(())
}

/// The lock text: `about` (one or more lines, without `#`) says what the jars are, then how it was made.
pub(super) fn render_lock(about: &str, jars: &[Jar], pom_file: &str) -> String {
    let about: String = about.lines().map(|line| format!("# {line}\n")).collect();
    let header = format!(
        "{about}# Resolved by Maven from {pom_file} (runtime scope).\n\
         # Generated by `cargo xtask env lock`; do not edit by hand. `cargo xtask env fetch` downloads every jar\n\
         # into the cache and refuses any whose SHA-256 differs from the one here.\n"
    );
    header + &lock_entries(jars)
}

pub(super) fn lock_entries(jars: &[Jar]) -> String {
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

#[cfg(test)]
mod tests {
    use super::super::{LOCK_FILE, kafka_version, lock_path};
    use super::*;
    use crate::env::pins::testutil::*;

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
        assert!(message.contains("org.apache.kafka:kafka_2.13:4.1.0"), "the broker leads: {message}");
    }

    #[test]
    fn a_lock_without_kafka_is_refused_and_require_names_what_is_missing() {
        let jar = small_jar();
        let message = Lock::parse(&lock_text(std::slice::from_ref(&jar)), Path::new("x.lock")).unwrap_err();
        assert!(message.to_string().contains("no org.apache.kafka entry"), "{message}");

        let lock = committed_lock();
        assert_eq!(lock.require(&["org.apache.kafka:kafka_2.13:4.1.0"]), Ok(()));
        let wrong = lock.require(&["org.apache.kafka:kafka_2.13:4.0.0"]).unwrap_err();
        assert!(wrong.contains("kafka_2.13:4.1.0, not 4.0.0"), "{wrong}");
        let absent = lock.require(&["io.debezium:debezium-connector-jdbc:3.5.0.Final"]).unwrap_err();
        assert!(absent.contains("does not pin io.debezium:debezium-connector-jdbc:3.5.0.Final"), "{absent}");
    }
}
