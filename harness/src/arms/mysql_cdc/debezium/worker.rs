//! One Kafka Connect worker in standalone mode for one run: `ConnectStandalone worker.properties
//! connector.properties` on the plugin's pinned classpath, with connect-distributed.sh's heap and Kafka's JVM
//! flags, its files in the run's private directory; a worker or a task that fails is reported with the end of
//! its log.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use streamlab_record::tools::{ConnectPlugin, ConnectTools};

use super::super::child::{Pipeline, PipelineProcess};
use crate::arms::clients::java::PERFORMANCE_OPTS;
use crate::private_files::write_private;

/// connect-distributed.sh's KAFKA_HEAP_OPTS (the seed's worker image ran it unchanged).
const HEAP: &[&str] = &["-Xms256M", "-Xmx2G"];
/// INFO to stdout, as connect-log4j2 does to the console (the log is the worker's own file here).
const LOG_CONFIG: &str = "\
Configuration:
  Appenders:
    Console:
      name: STDOUT
      PatternLayout:
        pattern: \"[%d] %p %m (%c)%n\"
  Loggers:
    Root:
      level: INFO
      AppenderRef:
        - ref: STDOUT
";
/// The worker's log, in the run's private directory.
pub const LOG_FILE: &str = "connect.log";
/// How often `check` asks the REST API for the connector's state.
const STATUS_EVERY: Duration = Duration::from_millis(1000);

pub struct Worker {
    process: PipelineProcess,
    rest_port: u16,
    connector: String,
    last_status: Instant,
    pub command: String,
}

/// A free loopback port for the worker's REST listener.
pub fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl Worker {
    pub fn start(
        tools: &ConnectTools,
        plugin: &ConnectPlugin,
        dir: &Path,
        worker_props: &str,
        connector_props: &str,
        connector: &str,
        rest_port: u16,
    ) -> Result<Worker> {
        let worker_file = write_private(dir, "worker.properties", worker_props.as_bytes())?;
        let connector_file = write_private(dir, "connector.properties", connector_props.as_bytes())?;
        let log_config = write_private(dir, "connect-log4j2.yaml", LOG_CONFIG.as_bytes())?;
        let mut cmd = Command::new(&tools.java);
        cmd.args(HEAP).args(PERFORMANCE_OPTS);
        cmd.arg(format!("-Dlog4j2.configurationFile={}", log_config.display()));
        cmd.arg("-cp").arg(std::env::join_paths(&plugin.classpath).unwrap_or_default());
        cmd.arg("org.apache.kafka.connect.cli.ConnectStandalone").arg(&worker_file).arg(&connector_file);
        let command = format!(
            "{} {} {} -cp <{} pinned jars: {}, {}> org.apache.kafka.connect.cli.ConnectStandalone worker.properties \
             connector.properties",
            tools.java.display(),
            HEAP.join(" "),
            PERFORMANCE_OPTS.join(" "),
            plugin.classpath.len(),
            plugin.coordinate,
            plugin.lock
        );
        let process = PipelineProcess::spawn(cmd, dir.join(LOG_FILE), "the Kafka Connect worker")?;
        Ok(Worker { process, rest_port, connector: connector.to_owned(), last_status: Instant::now(), command })
    }

    /// The last `lines` lines of the worker's log.
    pub fn log_tail(&self, lines: usize) -> String {
        self.process.log_tail(lines)
    }
}

impl Pipeline for Worker {
    /// Err if the worker exited or the connector or a task FAILED, with the end of the worker's log.
    fn check(&mut self) -> Result<()> {
        self.process.check_alive()?;
        if self.last_status.elapsed() < STATUS_EVERY {
            return Ok(());
        }
        self.last_status = Instant::now();
        // Before the REST server listens there is nothing to ask; a refused connection is not a failure.
        let Ok(body) = http_get(self.rest_port, &format!("/connectors/{}/status", self.connector)) else {
            return Ok(());
        };
        let Ok(status) = serde_json::from_str::<serde_json::Value>(&body) else { return Ok(()) };
        let failed = std::iter::once(&status["connector"])
            .chain(status["tasks"].as_array().into_iter().flatten())
            .find(|s| s["state"] == "FAILED");
        if let Some(f) = failed {
            let trace = f["trace"].as_str().unwrap_or("").lines().take(12).collect::<Vec<_>>().join("\n");
            bail!("the connector {} FAILED:\n{trace}\nthe worker's log ends:\n{}", self.connector, self.log_tail(20));
        }
        Ok(())
    }

    fn stop(self) -> Result<()> {
        self.process.stop()
    }

    fn pid(&self) -> u32 {
        self.process.pid()
    }
}

/// Every `<kind> values:` block in a Kafka client's log (`kind`: ConsumerConfig, ProducerConfig, ...), one
/// per client created, as `key -> value`. A block is the `\tkey = value` lines after its header; the last
/// one ends with the logger's name in brackets, which is not part of the value.
pub fn logged_client_configs(log: &str, kind: &str) -> Vec<std::collections::BTreeMap<String, String>> {
    let header = format!("{kind} values:");
    let mut blocks = Vec::new();
    let mut lines = log.lines().peekable();
    while let Some(line) = lines.next() {
        if !line.trim_end().ends_with(&header) {
            continue;
        }
        let mut block = std::collections::BTreeMap::new();
        while let Some(entry) = lines.next_if(|l| l.starts_with('\t')) {
            let entry = entry.trim_start_matches('\t');
            let entry = match entry.rfind(" (org.apache.kafka.") {
                Some(at) if entry.ends_with(')') => &entry[..at],
                _ => entry,
            };
            if let Some((k, v)) = entry.split_once(" = ") {
                block.insert(k.trim().to_owned(), v.trim().to_owned());
            } else if let Some(k) = entry.strip_suffix(" =") {
                block.insert(k.trim().to_owned(), String::new());
            }
        }
        blocks.push(block);
    }
    blocks
}

/// A plain HTTP GET on loopback (the worker's REST API), returning the body.
fn http_get(port: u16, path: &str) -> Result<String> {
    let mut s = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(500))?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    // HTTP/1.0: the answer comes unchunked and the server closes the connection after it.
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
    let mut response = String::new();
    s.read_to_string(&mut response)?;
    let (head, body) = response.split_once("\r\n\r\n").context("no HTTP body")?;
    if !head.lines().next().is_some_and(|status| status.contains(" 200")) {
        bail!("{}", head.lines().next().unwrap_or(""));
    }
    Ok(body.to_owned())
}
