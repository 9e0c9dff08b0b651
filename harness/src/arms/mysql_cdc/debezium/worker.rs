//! One Kafka Connect worker in standalone mode for one run: `ConnectStandalone worker.properties
//! connector.properties` (or `connector.json`, KIP-980's form, which can create the connector STOPPED) on the
//! plugin's pinned classpath, with connect-distributed.sh's heap and Kafka's JVM flags, its files in the run's
//! private directory; a worker or a task that fails is reported with the end of its log. The REST API sets a
//! stopped connector's offsets and resumes it (KIP-875), and the log says what its clients ran with.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use streamlab_process::{Child, Cmd, Lifetime};
use streamlab_record::tools::{ConnectPlugin, ConnectTools};

use super::super::pipeline::Pipeline;
use crate::kafka::java_tools::PERFORMANCE_OPTS;
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
const LOG_FILE: &str = "connect.log";
/// How often `check` asks the REST API for the connector's state.
const STATUS_EVERY: Duration = Duration::from_millis(1000);
/// How long a worker may take to answer on REST with its connector created (a JVM start on a busy machine).
const REST_TIMEOUT: Duration = Duration::from_secs(180);

/// The connector's file: `connector.properties` (the seed's form) or `connector.json` (KIP-980's, with an
/// initial state).
pub struct ConnectorFile<'a> {
    pub name: &'static str,
    pub text: &'a str,
}

pub struct Worker {
    process: Child,
    log: PathBuf,
    rest_port: u16,
    connector: String,
    last_status: Instant,
    pub command: String,
}

impl Worker {
    pub fn start(
        tools: &ConnectTools,
        plugin: &ConnectPlugin,
        dir: &Path,
        worker_props: &str,
        connector_file: ConnectorFile<'_>,
        connector: &str,
        rest_port: u16,
    ) -> Result<Worker> {
        let worker_file = write_private(dir, "worker.properties", worker_props.as_bytes())?;
        let connector_path = write_private(dir, connector_file.name, connector_file.text.as_bytes())?;
        let log_config = write_private(dir, "connect-log4j2.yaml", LOG_CONFIG.as_bytes())?;
        let cmd = Cmd::new(&tools.java)
            .args(HEAP)
            .args(PERFORMANCE_OPTS)
            .arg(format!("-Dlog4j2.configurationFile={}", log_config.display()))
            .arg("-cp")
            .arg(std::env::join_paths(&plugin.classpath).unwrap_or_default())
            .arg("org.apache.kafka.connect.cli.ConnectStandalone")
            .arg(&worker_file)
            .arg(&connector_path);
        let command = format!(
            "{} {} {} -cp <{} pinned jars: {}, {}> org.apache.kafka.connect.cli.ConnectStandalone worker.properties \
             {}",
            tools.java.display(),
            HEAP.join(" "),
            PERFORMANCE_OPTS.join(" "),
            plugin.classpath.len(),
            plugin.coordinate,
            plugin.lock,
            connector_file.name
        );
        let log = dir.join(LOG_FILE);
        // Dies with the harness; the log is read for the clients' settings after it stopped.
        let process = cmd.lifetime(Lifetime::TiedToParent).log_to(&log).spawn().context("the Kafka Connect worker")?;
        Ok(Worker { process, log, rest_port, connector: connector.to_owned(), last_status: Instant::now(), command })
    }

    /// Err once the worker's JVM has exited, with the end of its log.
    fn check_running(&mut self) -> Result<()> {
        self.process.check_running().context("the Kafka Connect worker")
    }

    /// The last `lines` lines of the worker's log.
    pub fn log_tail(&self, lines: usize) -> String {
        self.process.log_tail(lines)
    }

    pub fn log_path(&self) -> PathBuf {
        self.log.clone()
    }

    /// For a connector created STOPPED: once the worker shows it stopped, set its source offsets (`offsets`,
    /// the body of `PATCH /connectors/<name>/offsets`) and resume it. Returns what the worker answered.
    pub fn resume_at(&mut self, offsets: &str) -> Result<String> {
        let status = format!("/connectors/{}/status", self.connector);
        let deadline = Instant::now() + REST_TIMEOUT;
        loop {
            self.check_running()?;
            if let Ok((200, body)) = http(self.rest_port, "GET", &status, None)
                && body.contains(r#""state":"STOPPED""#)
            {
                break;
            }
            if Instant::now() > deadline {
                bail!("the worker did not show {} STOPPED within {} s", self.connector, REST_TIMEOUT.as_secs());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let path = format!("/connectors/{}/offsets", self.connector);
        let (code, altered) = http(self.rest_port, "PATCH", &path, Some(offsets))?;
        if code != 200 {
            bail!("PATCH {path} answered {code}: {altered}");
        }
        let resume = format!("/connectors/{}/resume", self.connector);
        let (code, body) = http(self.rest_port, "PUT", &resume, None)?;
        if code != 202 {
            bail!("PUT {resume} answered {code}: {body}");
        }
        Ok(altered)
    }
}

impl Pipeline for Worker {
    /// Err if the worker exited or the connector or a task FAILED, with the end of the worker's log.
    fn check(&mut self) -> Result<()> {
        self.check_running()?;
        if self.last_status.elapsed() < STATUS_EVERY {
            return Ok(());
        }
        self.last_status = Instant::now();
        // Before the REST server listens there is nothing to ask; a refused connection is not a failure.
        let Ok((200, body)) = http(self.rest_port, "GET", &format!("/connectors/{}/status", self.connector), None)
        else {
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
        Pipeline::stop(self.process)
    }

    fn pid(&self) -> u32 {
        self.process.pid()
    }
}

/// Every `<kind> values:` block in a Kafka client's log (`kind`: ProducerConfig, ConsumerConfig, ...), one
/// per client created, as `key -> value`: the one parser for the source task's producer and the sink tasks'
/// consumers. A block is the `\tkey = value` lines after its header; the last one may end with the logger's
/// name in brackets, which is not part of the value.
pub fn logged_client_configs(log: &str, kind: &str) -> Vec<BTreeMap<String, String>> {
    let header = format!("{kind} values:");
    let mut blocks = Vec::new();
    let mut lines = log.lines().peekable();
    while let Some(line) = lines.next() {
        if !line.trim_end().ends_with(&header) {
            continue;
        }
        let mut block = BTreeMap::new();
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

/// A request to the worker's REST API on loopback, with an optional JSON body; returns the status code and
/// the body. No proxy: the worker listens on 127.0.0.1, whatever the environment's HTTP_PROXY says.
fn http(port: u16, method: &str, path: &str, body: Option<&str>) -> Result<(u16, String)> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .proxy(None)
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_millis(500)))
        // Altering offsets writes them to the offset store first: more than a status read takes.
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into();
    let url = format!("http://127.0.0.1:{port}{path}");
    let body = body.unwrap_or("");
    let response = match method {
        "GET" => agent.get(&url).call(),
        "PUT" => agent.put(&url).content_type("application/json").send(body),
        "PATCH" => agent.patch(&url).content_type("application/json").send(body),
        other => bail!("no {other} request to the worker's REST API"),
    };
    let mut response = response.with_context(|| format!("{method} {url}"))?;
    let text = response.body_mut().read_to_string().with_context(|| format!("{method} {url}: the body"))?;
    Ok((response.status().as_u16(), text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_producer_block_of_the_connectors_task_is_read_from_the_log() {
        // The shape of Kafka Connect 4.1.0's log (this module's log pattern): a ProducerConfig block per
        // client, the task's named connector-producer-<connector>-0.
        let log = "[2026-12-01 02:07:41,905] INFO ProducerConfig values: \n\tacks = -1\n\tbatch.size = 32768\n\t\
                   client.id = n-schemahistory\n\tlinger.ms = 5\n (org.apache.kafka.clients.producer.ProducerConfig)\n\
                   [2026-12-01 02:07:42,810] INFO ProducerConfig values: \n\tacks = -1\n\tbatch.size = 1000000\n\t\
                   client.id = connector-producer-n-0\n\tcompression.type = lz4\n\tlinger.ms = 1\n\
                   (org.apache.kafka.clients.producer.ProducerConfig)\n";
        let blocks = logged_client_configs(log, "ProducerConfig");
        assert_eq!(blocks.len(), 2);
        let block = &blocks[1];
        assert_eq!(block["client.id"], "connector-producer-n-0");
        assert_eq!(block["batch.size"], "1000000");
        assert_eq!(block["compression.type"], "lz4");
        assert_eq!(block["linger.ms"], "1", "the logger's name on the next line is not a setting");
        assert_eq!(blocks[0]["linger.ms"], "5");
        assert!(logged_client_configs(log, "ConsumerConfig").is_empty());
    }
}
