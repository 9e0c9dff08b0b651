//! Is an environment's service still there and answering? Between tasks the runner asks every service
//! (the broker's process and a Kafka ApiVersions round trip; the database server's process and `SELECT 1`);
//! during a task it watches the processes only, which costs nothing.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::time::Duration;

use streamlab_record::EnvDescriptor;
use streamlab_record::descriptor::MysqlEnv;

use super::{mariadb, process};

/// How long a service may take to answer a health probe.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// A service that stopped, or stopped answering: what it was, how it ended, and its log's last lines.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceDown {
    /// `kafka broker`, `mariadb server`, ...
    pub service: String,
    /// `was killed by SIGKILL`, `exited with status 1`, `does not answer: ...`.
    pub how: String,
    /// The last error its log gives (`java.io.IOException: No space left on device`), which a tail of a Java
    /// stack trace often does not.
    pub last_error: Option<String>,
    pub log_tail: String,
}

impl std::fmt::Display for ServiceDown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the {} {}", self.service, self.how)?;
        match &self.last_error {
            Some(e) => write!(f, " (its log's last error: {e})"),
            None => Ok(()),
        }
    }
}

/// How far back in a service's log to look for its last error.
const ERROR_SEARCH_LINES: usize = 400;
/// The longest error line a reason quotes.
const ERROR_QUOTE_CHARS: usize = 300;

/// The last error `log` gives: its last exception (`java.io.IOException: No space left on device`, with or
/// without `Caused by: `), else its last ERROR or FATAL line; stack frames never count.
fn last_error(log: &str) -> Option<String> {
    let exception = |l: &str| {
        let l = l.strip_prefix("Caused by: ").unwrap_or(l);
        l.split_once(": ").is_some_and(|(class, _)| {
            !class.contains(char::is_whitespace)
                && class.contains('.')
                && (class.ends_with("Exception") || class.ends_with("Error"))
        })
    };
    let lines: Vec<&str> = log.lines().map(str::trim).collect();
    let found = lines
        .iter()
        .rev()
        .find(|l| exception(l))
        .or_else(|| lines.iter().rev().find(|l| l.contains("] ERROR ") || l.contains("] FATAL ")))?;
    let found = found.strip_prefix("Caused by: ").unwrap_or(found);
    Some(found.chars().take(ERROR_QUOTE_CHARS).collect())
}

fn log_error(log: Option<&Path>) -> Option<String> {
    last_error(&process::log_tail(log?, ERROR_SEARCH_LINES))
}

/// The first service whose process has ended (cheap: no network).
pub fn dead_process(env: &EnvDescriptor) -> Option<ServiceDown> {
    services(env).into_iter().find_map(|s| {
        let pid = s.pid?;
        (!process::is_alive(pid)).then(|| ServiceDown {
            service: s.name.clone(),
            how: how_it_ended(pid),
            last_error: log_error(s.log),
            log_tail: s.log.map(|l| process::log_tail(l, 20)).unwrap_or_default(),
        })
    })
}

/// Every service alive and answering, or the first one that is not (the database asked with this machine's client).
pub fn check(env: &EnvDescriptor) -> Result<(), ServiceDown> {
    if let Some(down) = dead_process(env) {
        return Err(down);
    }
    check_with(env, mysql_answers)
}

/// Every service answering, the database server asked by `mysql_probe` (a container backend asks with the
/// client in its image).
pub fn check_with(
    env: &EnvDescriptor,
    mysql_probe: impl Fn(&MysqlEnv) -> Result<(), String>,
) -> Result<(), ServiceDown> {
    for s in services(env) {
        let answer = match &s.kind {
            Kind::Kafka(probe) => match probe {
                Some(KafkaProbe::ApiVersions(server)) => api_versions(server),
                Some(KafkaProbe::Connect(server)) => connect(server).map(drop),
                None => Err("no listener to probe".to_owned()),
            },
            Kind::Mysql => env.mysql.as_ref().ok_or_else(|| "no database server".to_owned()).and_then(&mysql_probe),
        };
        if let Err(e) = answer {
            return Err(ServiceDown {
                service: s.name.clone(),
                how: format!("does not answer: {e}"),
                last_error: log_error(s.log),
                log_tail: s.log.map(|l| process::log_tail(l, 20)).unwrap_or_default(),
            });
        }
    }
    Ok(())
}

enum Kind {
    /// A broker, asked for ApiVersions on a listener that answers before any TLS or authentication; one with
    /// TLS listeners only (an external cluster's) is probed by connecting.
    Kafka(Option<KafkaProbe>),
    Mysql,
}

struct Service<'a> {
    name: String,
    pid: Option<u32>,
    log: Option<&'a Path>,
    kind: Kind,
}

fn services(env: &EnvDescriptor) -> Vec<Service<'_>> {
    // A SASL_PLAINTEXT listener answers ApiVersions before authentication (an external cluster may have no other).
    let plaintext = |listeners: &std::collections::BTreeMap<String, streamlab_record::descriptor::Listener>| {
        let first_server =
            |l: &streamlab_record::descriptor::Listener| l.bootstrap.split(',').next().map(str::to_owned);
        let probed = |protocol: &str| listeners.values().find(|l| l.security_protocol == protocol);
        match probed("PLAINTEXT").or_else(|| probed("SASL_PLAINTEXT")) {
            Some(l) => first_server(l).map(KafkaProbe::ApiVersions),
            None => listeners.values().next().and_then(first_server).map(KafkaProbe::Connect),
        }
    };
    let mut out: Vec<Service> = if env.kafka.brokers.is_empty() {
        vec![Service {
            name: "kafka broker".into(),
            pid: env.kafka.pid,
            log: env.kafka.log_file.as_deref(),
            kind: Kind::Kafka(plaintext(&env.kafka.listeners)),
        }]
    } else {
        env.kafka
            .brokers
            .iter()
            .map(|b| Service {
                name: format!("kafka broker {}", b.node_id),
                pid: b.pid,
                log: b.log_file.as_deref(),
                kind: Kind::Kafka(plaintext(&b.listeners)),
            })
            .collect()
    };
    if let Some(m) = &env.mysql {
        out.push(Service {
            name: format!("{} server", m.flavour),
            pid: m.pid,
            log: m.log_file.as_deref(),
            kind: Kind::Mysql,
        });
    }
    out
}

/// How long a dead process's threads may take to finish exiting before its status can be read (a JVM with a
/// large heap on a loaded host can take seconds).
const EXIT_SETTLE: Duration = Duration::from_secs(15);

/// How a dead service ended (`exited with status N`, `was killed by SIGKILL`), read without reaping it: the
/// environment's teardown still sees the process.
fn how_it_ended(pid: u32) -> String {
    streamlab_process::procfs::how_it_ended(pid, EXIT_SETTLE).unwrap_or_else(|| "is no longer running".into())
}

enum KafkaProbe {
    ApiVersions(String),
    Connect(String),
}

/// A TCP connection to `server` (`host:port`).
fn connect(server: &str) -> Result<TcpStream, String> {
    let addr = server.to_socket_addrs().map_err(|e| format!("{server}: {e}"))?.next();
    let addr = addr.ok_or_else(|| format!("{server}: no address"))?;
    TcpStream::connect_timeout(&addr, PROBE_TIMEOUT).map_err(|e| format!("{server}: {e}"))
}

/// One Kafka ApiVersions (v0) round trip: the broker reads and answers requests.
fn api_versions(bootstrap: &str) -> Result<(), String> {
    const CORRELATION_ID: i32 = 0x5117_ab00;
    let mut stream = connect(bootstrap)?;
    stream.set_read_timeout(Some(PROBE_TIMEOUT)).and_then(|_| stream.set_write_timeout(Some(PROBE_TIMEOUT))).ok();
    stream.write_all(&api_versions_request(CORRELATION_ID)).map_err(|e| format!("{bootstrap}: {e}"))?;
    let mut header = [0u8; 10];
    stream.read_exact(&mut header).map_err(|e| format!("{bootstrap}: no ApiVersions response: {e}"))?;
    parse_api_versions_header(&header).map_err(|e| format!("{bootstrap}: {e}"))?;
    Ok(())
}

/// ApiVersions v0: length, api key 18, version 0, correlation id, client id.
fn api_versions_request(correlation_id: i32) -> Vec<u8> {
    const CLIENT_ID: &[u8] = b"streamlab-health";
    let mut body = Vec::new();
    body.extend_from_slice(&18i16.to_be_bytes());
    body.extend_from_slice(&0i16.to_be_bytes());
    body.extend_from_slice(&correlation_id.to_be_bytes());
    body.extend_from_slice(&(CLIENT_ID.len() as i16).to_be_bytes());
    body.extend_from_slice(CLIENT_ID);
    let mut out = (body.len() as i32).to_be_bytes().to_vec();
    out.extend(body);
    out
}

/// The response's length, correlation id and error code: a broker that answers with error 0 is alive.
fn parse_api_versions_header(header: &[u8; 10]) -> Result<(), String> {
    let correlation = i32::from_be_bytes(header[4..8].try_into().expect("4 bytes"));
    let error = i16::from_be_bytes(header[8..10].try_into().expect("2 bytes"));
    if correlation != 0x5117_ab00 {
        return Err(format!("ApiVersions answered for correlation id {correlation}"));
    }
    if error != 0 {
        return Err(format!("ApiVersions answered error code {error}"));
    }
    Ok(())
}

fn mysql_answers(m: &MysqlEnv) -> Result<(), String> {
    let password =
        std::fs::read_to_string(&m.password_file).map_err(|e| format!("{}: {e}", m.password_file.display()))?;
    let client = if m.flavour == "mariadb" { "mariadb" } else { "mysql" };
    match mariadb::query_tcp_with(client, m.port, password.trim(), "SELECT 1") {
        Ok(out) if out.trim() == "1" => Ok(()),
        Ok(out) => Err(format!("SELECT 1 answered {out:?}")),
        Err(e) => Err(format!("{e:#}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_brokers_reason_names_the_last_error_its_log_gives_not_a_stack_frame() {
        let log = "[2026-12-01 19:52:15,101] INFO [Partition t-3 broker=1] Log loaded (kafka.cluster.Partition)
[2026-12-01 19:52:15,790] ERROR Error while appending records to t-3 in dir /data (org.apache.kafka.storage.internals.log.LogDirFailureChannel)
java.io.IOException: No space left on device
\tat java.base/sun.nio.ch.FileDispatcherImpl.write0(Native Method)
\tat org.apache.kafka.storage.internals.log.UnifiedLog.append(UnifiedLog.java:1103) ~[kafka-storage-4.1.0.jar:?]
\t... 12 more
";
        assert_eq!(last_error(log).as_deref(), Some("java.io.IOException: No space left on device"));
        let caused = "java.lang.RuntimeException: wrapper\nCaused by: java.nio.file.AccessDeniedException: /data/x\n\tat a.b(C.java:1)\n";
        assert_eq!(last_error(caused).as_deref(), Some("java.nio.file.AccessDeniedException: /data/x"));
        // No exception: the last ERROR line; nothing wrong: nothing.
        let plain = "[t] INFO started\n[t] ERROR Shutdown broker because all log dirs in /data have failed (kafka.log.LogManager)\n";
        assert!(last_error(plain).unwrap().contains("all log dirs in /data have failed"));
        assert_eq!(last_error("[t] INFO Kafka Server started\n"), None);
        let down = ServiceDown {
            service: "kafka broker".into(),
            how: "exited with status 1".into(),
            last_error: last_error(log),
            log_tail: String::new(),
        };
        assert_eq!(
            down.to_string(),
            "the kafka broker exited with status 1 (its log's last error: java.io.IOException: No space left on device)"
        );
    }

    #[test]
    fn the_api_versions_request_is_well_formed() {
        let req = api_versions_request(7);
        assert_eq!(i32::from_be_bytes(req[0..4].try_into().unwrap()) as usize, req.len() - 4);
        assert_eq!(&req[4..8], &[0, 18, 0, 0], "api key 18, version 0");
        assert_eq!(i32::from_be_bytes(req[8..12].try_into().unwrap()), 7);
        assert_eq!(&req[14..], b"streamlab-health");
    }

    #[test]
    fn a_response_with_an_error_or_another_correlation_id_is_not_an_answer() {
        let ok = [0, 0, 1, 0, 0x51, 0x17, 0xab, 0x00, 0, 0];
        assert_eq!(parse_api_versions_header(&ok), Ok(()));
        let error = [0, 0, 1, 0, 0x51, 0x17, 0xab, 0x00, 0, 35];
        assert!(parse_api_versions_header(&error).unwrap_err().contains("error code 35"));
        let other = [0, 0, 1, 0, 0, 0, 0, 1, 0, 0];
        assert!(parse_api_versions_header(&other).unwrap_err().contains("correlation id 1"));
    }

    #[test]
    fn a_child_killed_by_a_signal_says_so_and_is_left_for_its_owner_to_reap() {
        let mut child = streamlab_process::Cmd::new("sleep").arg("30").spawn().unwrap();
        let pid = child.pid();
        streamlab_process::procfs::signal(pid, streamlab_process::procfs::Sig::SIGKILL);
        while process::is_alive(pid) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(how_it_ended(pid), "was killed by SIGKILL");
        // Not reaped: the owner still collects the status.
        assert!(!child.wait().unwrap().success());
    }

    #[test]
    fn nothing_listening_is_not_an_answer() {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        assert!(api_versions(&format!("127.0.0.1:{port}")).is_err());
    }
}
