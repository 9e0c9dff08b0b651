//! The lab's own Java classes (the durability matrix's ledger producer, the environments' listener probe):
//! compiled once with the JDK's javac against the pinned Kafka jars, into the cache under a name that hashes the
//! source, the jars and the compiler, so a changed source or pin compiles again and nothing else does.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};
use streamlab_process::Cmd;

const COMPILE_TIMEOUT: Duration = Duration::from_secs(300);

/// One compiled class: the directory that holds it (for the classpath), and what compiled it.
pub struct Compiled {
    pub dir: PathBuf,
    pub javac_version: String,
    pub source_sha256: String,
}

/// What to compile: `source` (relative to the repository) declares `main_class`; `release` is javac's
/// `--release` when the class must run on an older JVM than the one compiling it (a container's).
pub struct JavaSource<'a> {
    pub source: &'a str,
    pub main_class: &'a str,
    /// The cache directory's name before the key: `ledger-producer` gives `ledger-producer-<key>`.
    pub cache_name: &'a str,
    pub release: Option<&'a str>,
}

/// Compile `java` against `jars` (or find it compiled in the cache).
pub fn compiled(java: &JavaSource, jars: &[PathBuf]) -> Result<Compiled> {
    let source_path = crate::paths::repo_root().join(java.source);
    let source = std::fs::read(&source_path).with_context(|| format!("cannot read {}", source_path.display()))?;
    let javac = javac();
    let javac_version = javac_version(&javac)?;
    let key = build_key(&source, jars, &javac_version, java.release);
    let dir = crate::paths::cache_dir().join("tools").join(format!("{}-{}", java.cache_name, &key[..16]));
    if !dir.join(format!("{}.class", java.main_class)).is_file() {
        compile(&javac, &source_path, jars, java, &dir)?;
    }
    Ok(Compiled { dir, javac_version, source_sha256: hex::encode(Sha256::digest(&source)) })
}

/// `$JAVA_HOME/bin/javac`, else javac on PATH.
fn javac() -> PathBuf {
    std::env::var_os("JAVA_HOME").map_or_else(|| "javac".into(), |h| PathBuf::from(h).join("bin").join("javac"))
}

/// `javac -version`, asked once per process: every environment's start needs the probe's key, and the answer
/// costs a JVM start.
fn javac_version(javac: &Path) -> Result<String> {
    static VERSION: OnceLock<String> = OnceLock::new();
    if let Some(v) = VERSION.get() {
        return Ok(v.clone());
    }
    let v = crate::tools::first_line_of(&javac.to_string_lossy(), &["-version"])
        .with_context(|| format!("{} -version did not answer: a JDK (not only a JRE) is needed", javac.display()))?;
    Ok(VERSION.get_or_init(|| v).clone())
}

/// What decides the compiled class: the source, the jars it compiles against (by name), the compiler and the
/// release it targets (none hashes as before releases were named, so existing caches stay valid).
fn build_key(source: &[u8], jars: &[PathBuf], javac_version: &str, release: Option<&str>) -> String {
    let mut h = Sha256::new();
    h.update(source);
    for jar in jars {
        h.update(jar.file_name().map(|n| n.as_encoded_bytes()).unwrap_or_default());
        h.update(b"\n");
    }
    h.update(javac_version.as_bytes());
    if let Some(release) = release {
        h.update(b"--release ");
        h.update(release.as_bytes());
    }
    hex::encode(h.finalize())
}

/// javac into a fresh directory beside `out`, renamed into place once whole.
fn compile(javac: &Path, source: &Path, jars: &[PathBuf], java: &JavaSource, out: &Path) -> Result<()> {
    let parent = out.parent().context("the cache directory has no parent")?;
    std::fs::create_dir_all(parent)?;
    let staging = tempfile::Builder::new().prefix(&format!(".{}-", java.cache_name)).tempdir_in(parent)?;
    let classpath = std::env::join_paths(jars).context("a jar path contains ':'")?;
    let mut cmd = Cmd::new(javac).args(["-encoding", "UTF-8"]);
    if let Some(release) = java.release {
        cmd = cmd.args(["--release", release]);
    }
    let output = cmd
        .arg("-d")
        .arg(staging.path())
        .arg("-cp")
        .arg(&classpath)
        .arg(source)
        .output(COMPILE_TIMEOUT)
        .with_context(|| format!("cannot run {}", javac.display()))?;
    if !output.status.success() {
        bail!("javac {} failed ({}):\n{}", source.display(), output.status, output.tail(30));
    }
    match std::fs::rename(staging.keep(), out) {
        Ok(()) => Ok(()),
        // Another run compiled the same key meanwhile: theirs is as good as ours.
        Err(_) if out.join(format!("{}.class", java.main_class)).is_file() => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot move the compiled class into {}", out.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_build_key_changes_with_the_source_the_jars_the_compiler_and_the_release() {
        let jars = vec![PathBuf::from("/c/kafka-clients-4.1.0.jar")];
        let key = build_key(b"class A {}", &jars, "javac 17", None);
        let elsewhere = [PathBuf::from("/elsewhere/kafka-clients-4.1.0.jar")];
        assert_eq!(key, build_key(b"class A {}", &elsewhere, "javac 17", None));
        assert_ne!(key, build_key(b"class B {}", &jars, "javac 17", None));
        assert_ne!(key, build_key(b"class A {}", &[PathBuf::from("/c/kafka-clients-3.9.1.jar")], "javac 17", None));
        assert_ne!(key, build_key(b"class A {}", &jars, "javac 21", None));
        assert_ne!(key, build_key(b"class A {}", &jars, "javac 17", Some("17")));
    }
}
