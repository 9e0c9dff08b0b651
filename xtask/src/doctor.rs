//! `cargo xtask doctor`: what this machine has and lacks for the lab and the tests, each missing
//! item with the command that fixes it on Debian/Ubuntu.

use std::path::Path;

use anyhow::Result;

use crate::clients::redpanda_connect;
use crate::env::disk;
use crate::env::pins::{self, FetchRoute};
use crate::tools::first_line_of;

/// One line of the report.
struct Check {
    what: &'static str,
    /// What was found, or `None` if missing.
    found: Option<String>,
    fix: &'static str,
    /// Needed by `lab run` / `cargo xtask test` (others are optional).
    required: bool,
}

pub fn run() -> Result<()> {
    let checks = checks();
    let mut missing_required = 0;
    for c in &checks {
        let (mark, detail) = match &c.found {
            Some(found) => ("ok     ", found.clone()),
            None if c.required => {
                missing_required += 1;
                ("MISSING", format!("fix: {}", c.fix))
            }
            None => ("absent ", format!("optional; fix: {}", c.fix)),
        };
        println!("{mark} {:<34} {detail}", c.what);
    }
    println!("{}", jar_route_line());
    if let Err(e) = redpanda_connect::from_env() {
        println!("warning: {e:#}");
    }
    if missing_required > 0 {
        anyhow::bail!("{missing_required} required item(s) missing; run the fixes above (as root)");
    }
    let optional_missing: Vec<&str> =
        checks.iter().filter(|c| !c.required && c.found.is_none()).map(|c| c.what).collect();
    if optional_missing.iter().any(|w| w.contains("site tests") || w.contains("workflow lints")) {
        println!(
            "this machine can run `cargo xtask lab run`; `cargo xtask test` also needs: {}",
            optional_missing.join(", ")
        );
    } else {
        println!("this machine can run `cargo xtask lab run` and `cargo xtask test`");
    }
    Ok(())
}

fn checks() -> Vec<Check> {
    vec![
        Check {
            what: "JDK >= 17 (java)",
            found: java_17(),
            fix: "apt-get install -y openjdk-17-jdk-headless",
            required: true,
        },
        Check {
            what: "MariaDB/MySQL server",
            found: crate::env::host::find_server()
                .and_then(|s| first_line_of(&s.binary.to_string_lossy(), &["--version"])),
            fix: "apt-get install -y mariadb-server",
            required: true,
        },
        Check {
            what: "MariaDB/MySQL client",
            found: first_line_of("mariadb", &["--version"]).or_else(|| first_line_of("mysql", &["--version"])),
            fix: "apt-get install -y mariadb-client",
            required: true,
        },
        Check {
            what: "C compiler (cc)",
            found: first_line_of("cc", &["--version"]),
            fix: "apt-get install -y build-essential",
            required: true,
        },
        Check {
            what: "cmake (librdkafka build)",
            found: first_line_of("cmake", &["--version"]),
            fix: "apt-get install -y cmake",
            required: true,
        },
        Check {
            what: "pkg-config",
            found: first_line_of("pkg-config", &["--version"]),
            fix: "apt-get install -y pkg-config",
            required: true,
        },
        Check {
            what: "libcurl headers (librdkafka build)",
            found: header(&[
                "/usr/include/curl/curl.h",
                "/usr/include/x86_64-linux-gnu/curl/curl.h",
                "/usr/include/aarch64-linux-gnu/curl/curl.h",
            ]),
            fix: "apt-get install -y libcurl4-openssl-dev",
            required: true,
        },
        Check {
            what: "OpenSSL headers (TLS listeners)",
            found: header(&["/usr/include/openssl/ssl.h"]),
            fix: "apt-get install -y libssl-dev",
            required: true,
        },
        Check {
            what: "taskset (broker core sweeps)",
            found: first_line_of("taskset", &["--version"]),
            fix: "apt-get install -y util-linux",
            required: true,
        },
        Check {
            what: "git (provenance)",
            found: first_line_of("git", &["--version"]),
            fix: "apt-get install -y git",
            required: true,
        },
        Check {
            what: "Chromium (site tests)",
            found: first_line_of("chromium", &["--version"]),
            fix: "apt-get install -y chromium",
            required: false,
        },
        Check {
            what: "Node.js (site tests)",
            found: first_line_of("node", &["--version"]),
            fix: "apt-get install -y nodejs npm",
            required: false,
        },
        Check {
            what: "Go (actionlint, workflow lints)",
            found: first_line_of("go", &["version"]),
            fix: "apt-get install -y golang",
            required: false,
        },
        Check {
            what: "shellcheck (workflow lints)",
            found: first_line_of("shellcheck", &["--version"]),
            fix: "apt-get install -y shellcheck",
            required: false,
        },
        Check {
            what: "Docker engine (docker backend)",
            found: crate::env::docker::engine::Engine::answers(),
            fix: "apt-get install -y docker.io && dockerd --bridge=none --iptables=false --ip-masq=false & \
                  (no bridge: containers use the host's network; `--env auto` then picks docker)",
            required: false,
        },
        Check {
            what: "Redpanda Connect (mysql_cdc arms)",
            found: redpanda_connect::from_env().ok().flatten().map(|r| format!("{} ({})", r.version, r.path.display())),
            fix: "set STREAMLAB_REDPANDA_CONNECT=/path/to/redpanda-connect, a binary you have (its mysql_cdc input \
                  needs an enterprise licence; the lab never fetches or builds it); unset, its arms are not run",
            required: false,
        },
        Check {
            what: "free disk for the lab's services",
            found: free_disk(),
            fix: "free space on the filesystem of target/streamlab/envs: a lab run needs 5 GiB there",
            required: true,
        },
        Check {
            what: "debootstrap (local docker images)",
            found: first_line_of("debootstrap", &["--version"]),
            fix: "apt-get install -y debootstrap (only where no registry answers: `cargo xtask env images` builds the \
                  images from Debian's packages with it)",
            required: false,
        },
    ]
}

/// `17.2 GiB free under /work/main/target/streamlab/envs`, if that is enough for a run.
fn free_disk() -> Option<String> {
    let dir = crate::paths::envs_dir();
    let free = disk::ensure_free(&dir, disk::RUN_NEEDS_BYTES).ok()?;
    Some(format!("{:.1} GiB free under {}", disk::gib(free), dir.display()))
}

/// `java -version` reports e.g. `openjdk version "17.0.15"`; 17 or newer passes.
fn java_17() -> Option<String> {
    // The JDK Kafka will run on: $JAVA_HOME/bin/java, else java on PATH.
    let line = first_line_of(&crate::env::host::java().to_string_lossy(), &["-version"])?;
    let major = java_major(&line)?;
    (major >= 17).then_some(line)
}

fn java_major(version_line: &str) -> Option<u32> {
    let quoted = version_line.split('"').nth(1)?;
    let mut parts = quoted.split('.');
    let first: u32 = parts.next()?.parse().ok()?;
    // Java 8 and older say "1.8.0_...".
    if first == 1 { parts.next()?.parse().ok() } else { Some(first) }
}

fn header(paths: &[&str]) -> Option<String> {
    paths.iter().find(|p| Path::new(p).exists()).map(|p| p.to_string())
}

fn jar_route_line() -> String {
    let cache = crate::paths::cache_dir();
    match pins::fetch_route() {
        FetchRoute::Https { repo_url } => {
            format!("ok      {:<34} fetched over HTTPS from {repo_url} into {}", "Kafka jars (pinned)", cache.display())
        }
        FetchRoute::MavenFallback { repo_url, https_error } => format!(
            "ok      {:<34} HTTPS to {repo_url} fails ({https_error}); this machine falls back to Maven \
             (every checksum still verified)",
            "Kafka jars (pinned)"
        ),
        FetchRoute::Unavailable { repo_url, https_error, maven_error } => format!(
            "MISSING {:<34} neither HTTPS to {repo_url} ({https_error}) nor Maven ({maven_error}) works; \
             only an already-filled cache at {} can be used",
            "Kafka jars (pinned)",
            cache.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn java_majors_parse_old_and_new_styles() {
        assert_eq!(super::java_major(r#"openjdk version "17.0.15" 2025-04-15"#), Some(17));
        assert_eq!(super::java_major(r#"java version "1.8.0_402""#), Some(8));
        assert_eq!(super::java_major(r#"openjdk version "21" 2023-09-19"#), Some(21));
        assert_eq!(super::java_major("garbage"), None);
    }
}
