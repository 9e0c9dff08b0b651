//! The durability matrix's Java producer (harness/src/arms/durability/java/LedgerProducer.java): compiled once
//! with the JDK's javac against the pinned kafka-clients jar and its dependencies, into the cache under a name
//! that hashes the source and the classpath, so a changed source or pin compiles again and nothing else does.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};
use streamlab_process::Cmd;
use streamlab_record::tools::LedgerProducer;

use crate::env::kafka::java;
use crate::env::pins::{kafka_artifact_coordinate, kafka_classpath};
use crate::tools::java_version;

/// The source, relative to the repository.
pub const SOURCE: &str = "harness/src/arms/durability/java/LedgerProducer.java";
const MAIN_CLASS: &str = "LedgerProducer";
const COMPILE_TIMEOUT: Duration = Duration::from_secs(300);

/// Compile (or find the compiled) driver; the tools file describes it.
pub fn prepare() -> Result<LedgerProducer> {
    let source_path = crate::paths::repo_root().join(SOURCE);
    let source = std::fs::read(&source_path).with_context(|| format!("cannot read {}", source_path.display()))?;
    let jars = kafka_classpath()?;
    let javac = javac();
    let javac_version = crate::tools::first_line_of(&javac.to_string_lossy(), &["-version"])
        .with_context(|| format!("{} -version did not answer: a JDK (not only a JRE) is needed", javac.display()))?;
    let key = build_key(&source, &jars, &javac_version);
    let out = crate::paths::cache_dir().join("tools").join(format!("ledger-producer-{}", &key[..16]));
    if !out.join(format!("{MAIN_CLASS}.class")).is_file() {
        compile(&javac, &source_path, &jars, &out)?;
    }
    let java = java();
    Ok(LedgerProducer {
        java_version: java_version(&java)?,
        java,
        classpath: std::iter::once(out).chain(jars).collect(),
        main_class: MAIN_CLASS.to_owned(),
        kafka_clients: kafka_artifact_coordinate("kafka-clients")?,
        build: format!("{javac_version}; {SOURCE} sha256 {}", hex::encode(Sha256::digest(&source))),
    })
}

/// `$JAVA_HOME/bin/javac`, else javac on PATH.
fn javac() -> PathBuf {
    std::env::var_os("JAVA_HOME").map_or_else(|| "javac".into(), |h| PathBuf::from(h).join("bin").join("javac"))
}

/// What decides the compiled class: the source, the jars it compiles against (by name) and the compiler.
fn build_key(source: &[u8], jars: &[PathBuf], javac_version: &str) -> String {
    let mut h = Sha256::new();
    h.update(source);
    for jar in jars {
        h.update(jar.file_name().map(|n| n.as_encoded_bytes()).unwrap_or_default());
        h.update(b"\n");
    }
    h.update(javac_version.as_bytes());
    hex::encode(h.finalize())
}

/// javac into a fresh directory beside `out`, renamed into place once whole.
fn compile(javac: &Path, source: &Path, jars: &[PathBuf], out: &Path) -> Result<()> {
    let parent = out.parent().context("the cache directory has no parent")?;
    std::fs::create_dir_all(parent)?;
    let staging = tempfile::Builder::new().prefix(".ledger-producer-").tempdir_in(parent)?;
    let classpath = std::env::join_paths(jars).context("a jar path contains ':'")?;
    let output = Cmd::new(javac)
        .args(["-encoding", "UTF-8", "-d"])
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
        Err(_) if out.join(format!("{MAIN_CLASS}.class")).is_file() => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot move the compiled driver into {}", out.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_build_key_changes_with_the_source_the_jars_and_the_compiler() {
        let jars = vec![PathBuf::from("/c/kafka-clients-4.1.0.jar")];
        let key = build_key(b"class A {}", &jars, "javac 17");
        assert_eq!(key, build_key(b"class A {}", &[PathBuf::from("/elsewhere/kafka-clients-4.1.0.jar")], "javac 17"));
        assert_ne!(key, build_key(b"class B {}", &jars, "javac 17"));
        assert_ne!(key, build_key(b"class A {}", &[PathBuf::from("/c/kafka-clients-3.9.1.jar")], "javac 17"));
        assert_ne!(key, build_key(b"class A {}", &jars, "javac 21"));
    }

    #[test]
    #[ignore = "needs a JDK and the pinned jars (fetched if missing): cargo xtask test"]
    fn the_driver_compiles_against_the_pinned_kafka_clients() {
        let tool = prepare().unwrap();
        assert!(tool.classpath[0].join("LedgerProducer.class").is_file(), "{:?}", tool.classpath[0]);
        assert_eq!(tool.kafka_clients, format!("org.apache.kafka:kafka-clients:{}", crate::env::pins::kafka_version()));
        assert!(tool.build.contains("javac") && tool.build.contains("sha256"), "{}", tool.build);
    }
}
