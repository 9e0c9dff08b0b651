//! Getting pinned jars into the cache: over HTTPS from the Maven repository, verified against the lock
//! before they are written, with Maven as the fallback.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;

use super::lock::{Jar, Lock};
use super::maven::fetch_with_maven;
use super::{MAX_JAR_BYTES, megabytes, sha256_hex};

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
pub(super) fn missing_jars<'a>(lock: &'a Lock, cache_dir: &Path) -> anyhow::Result<Vec<&'a Jar>> {
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
pub(super) struct HttpsOutcome {
    done: usize,
    bytes: u64,
    failure: Option<anyhow::Error>,
}

/// Downloads jars in order; stops at the first transport failure (the Maven fallback takes the rest), but
/// returns an error at once for a checksum mismatch or a cache that cannot be written.
pub(super) fn download_all(jars: &[&Jar], cache_dir: &Path, repo_url: &str) -> anyhow::Result<HttpsOutcome> {
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
        jar.install_verified(&bytes, &url, cache_dir)?;
        outcome.done += 1;
        outcome.bytes += bytes.len() as u64;
    }
    Ok(outcome)
}

pub(crate) fn http_agent(timeout: Duration) -> ureq::Agent {
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
pub(super) fn root_certs() -> ureq::tls::RootCerts {
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

pub(super) fn fetch_bytes(agent: &ureq::Agent, url: &str) -> anyhow::Result<Vec<u8>> {
    let mut response = agent.get(url).call()?;
    Ok(response.body_mut().with_config().limit(MAX_JAR_BYTES).read_to_vec()?)
}

#[cfg(test)]
mod tests {
    use super::super::lock::PinError;
    use super::super::maven_repo_url;
    use super::*;
    use crate::env::pins::testutil::*;

    #[test]
    #[ignore = "downloads from Maven Central: cargo xtask test"]
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
    #[ignore = "downloads from Maven Central: cargo xtask test"]
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
    #[ignore = "downloads from Maven Central: cargo xtask test"]
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
}
