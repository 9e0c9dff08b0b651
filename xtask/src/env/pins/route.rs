//! Which way this machine can fetch pinned jars, for `doctor`.

use std::time::Duration;

use super::fetch::http_agent;
use super::maven::maven_version;
use super::{KAFKA_BROKER_ARTIFACT, KAFKA_VERSION, maven_repo_url};

/// Which way this machine can fetch pinned jars, for `doctor`.
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
pub fn fetch_route() -> FetchRoute {
    probe_fetch_route(&maven_repo_url())
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[ignore = "downloads from Maven Central: cargo xtask test"]
    fn fetch_route_tells_https_from_the_maven_fallback() {
        assert_eq!(
            probe_fetch_route(&format!("{}/", maven_repo_url())),
            FetchRoute::Https { repo_url: maven_repo_url() }
        );
        let closed = probe_fetch_route("http://127.0.0.1:9/maven2");
        assert!(matches!(closed, FetchRoute::MavenFallback { .. } | FetchRoute::Unavailable { .. }), "{closed:?}");
    }
}
