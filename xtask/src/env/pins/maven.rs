//! Maven: the fallback fetcher (same checksums) and the resolver behind `cargo xtask env lock`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use streamlab_process::Cmd;

use super::lock::Jar;
use super::sha256_hex;

/// Fetches exactly `jars` (no transitive dependencies) with `mvn dependency:copy-dependencies`, which honours
/// the user's Maven settings (proxies, mirrors), then verifies and installs each one. Returns the bytes installed.
pub(super) fn fetch_with_maven(jars: &[&Jar], cache_dir: &Path) -> anyhow::Result<u64> {
    let scratch = tempfile::tempdir()?;
    let pom = scratch.path().join("pom.xml");
    let out = scratch.path().join("jars");
    std::fs::write(&pom, fetch_pom(jars))?;
    tracing::info!("running mvn dependency:copy-dependencies for {} jars", jars.len());
    run_maven(&pom, &["-DexcludeTransitive=true"], &out)?;
    let mut installed = 0;
    for jar in jars {
        let copied = out.join(jar.repo_path());
        let bytes = std::fs::read(&copied).with_context(|| format!("Maven did not produce {}", copied.display()))?;
        jar.install_verified(&bytes, "mvn dependency:copy-dependencies", cache_dir)?;
        installed += bytes.len() as u64;
    }
    Ok(installed)
}

/// A throwaway POM depending on exactly these jars, each with every transitive dependency excluded.
pub(super) fn fetch_pom(jars: &[&Jar]) -> String {
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

pub(super) fn maven_version() -> anyhow::Result<String> {
    let version = Cmd::new("mvn").args(["-B", "-v"]).read(Duration::from_secs(120))?;
    Ok(strip_ansi(version.lines().next().unwrap_or_default()))
}

/// `mvn dependency:copy-dependencies` of `pom` into `out` in Maven's repository layout, with its output
/// captured: shown (the tail) only when it fails.
fn run_maven(pom: &Path, extra: &[&str], out: &Path) -> anyhow::Result<()> {
    let output = Cmd::new("mvn")
        .args(["-B", "-q", "-f"])
        .arg(pom)
        .arg("dependency:copy-dependencies")
        .args(extra)
        .arg("-Dmdep.useRepositoryLayout=true")
        .arg(format!("-DoutputDirectory={}", out.display()))
        .output(MAVEN_TIMEOUT)?;
    if output.status.success() {
        return Ok(());
    }
    let log = strip_ansi(&format!("{}{}", output.stdout, output.stderr));
    let lines: Vec<&str> = log.lines().collect();
    anyhow::bail!("mvn failed ({}):\n{}", output.status, lines[lines.len().saturating_sub(30)..].join("\n"))
}

/// A resolve of a few hundred jars from a cold local repository.
const MAVEN_TIMEOUT: Duration = Duration::from_secs(1800);

/// Maven 3.8 prints colour codes even in batch mode (`mvn -v` always starts with ESC[0m).
pub(super) fn strip_ansi(text: &str) -> String {
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
pub(super) fn resolve_with_maven(pom: &Path) -> anyhow::Result<Vec<Jar>> {
    let scratch = tempfile::tempdir()?;
    let out = scratch.path().join("jars");
    tracing::info!("resolving {} with {}", pom.display(), maven_version()?);
    run_maven(pom, &["-DincludeScope=runtime"], &out)?;
    let mut jars = jars_in_repository_layout(&out)?;
    jars.sort_by_key(Jar::coordinate);
    Ok(jars)
}

/// Reads `<dir>/<group path>/<artifact>/<version>/<file>.jar` back into pinned jars.
pub(super) fn jars_in_repository_layout(dir: &Path) -> anyhow::Result<Vec<Jar>> {
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

pub(super) fn files_below(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
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

#[cfg(test)]
mod tests {
    use super::super::fetch::{FetchMethod, ensure_jars};
    use super::*;
    use crate::env::pins::testutil::*;

    /// Maven Central unreachable over HTTPS (a closed loopback port): `mvn` fetches, and checksums still hold.
    #[test]
    #[ignore = "downloads from Maven Central: cargo xtask test"]
    fn maven_fallback_verifies_every_checksum() {
        // The test command's machine has Maven (.ci/run installs it): a missing mvn is a failure, not a skip.
        maven_version().expect("mvn is not runnable here; .ci/run installs it (apt-get install maven)");
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
    fn fetch_pom_names_each_jar_without_transitive_dependencies() {
        let jar = small_jar();
        let pom = fetch_pom(&[&jar]);
        assert!(pom.contains("<groupId>org.jspecify</groupId><artifactId>jspecify</artifactId><version>1.0.0"));
        assert!(pom.contains("<exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion>"));
    }
}
