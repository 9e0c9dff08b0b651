//! Apache Kafka from the pinned jars: one KRaft node that is broker and controller, or a cluster of N such
//! nodes (combined mode: every node a broker and a controller voter of a static quorum), each with PLAINTEXT,
//! SSL, SASL/SCRAM (256 and 512) and SASL/OAUTHBEARER listeners on loopback ports of its own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use streamlab_process::Cmd;
use streamlab_record::descriptor::{BrokerEnv, KafkaEnv, Listener};

use super::host::{Role, ServiceHost};
use super::listener_probe::{self, ProbeAnswer};
use super::pins::KafkaPin;
use super::process;
use super::{certs, secrets, templates};

/// The SASL user created at format time for both SCRAM mechanisms.
pub const SCRAM_USER: &str = "streamlab";
/// The principal of the unsecured OAUTHBEARER token.
pub const OAUTH_SUBJECT: &str = "admin";
/// How long every listener has, after the brokers logged their start, to answer a client.
const LISTENER_READY_TIMEOUT: Duration = Duration::from_secs(60);

/// Loopback ports of every broker listener.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct KafkaPorts {
    pub plaintext: u16,
    pub ssl: u16,
    pub scram: u16,
    pub oauth: u16,
    pub controller: u16,
}

impl KafkaPorts {
    pub fn from_slice(p: &[u16]) -> Self {
        KafkaPorts { plaintext: p[0], ssl: p[1], scram: p[2], oauth: p[3], controller: p[4] }
    }
}

/// What a broker's JVM does with the archive.
#[derive(Debug, Clone, PartialEq)]
pub enum Archive {
    /// Start from it.
    Use(PathBuf),
    /// Write the classes this JVM loaded into it when the JVM exits.
    Dump(PathBuf),
}

impl Archive {
    pub fn jvm_flag(&self) -> String {
        match self {
            Archive::Use(p) => format!("-XX:SharedArchiveFile={}", p.display()),
            Archive::Dump(p) => format!("-XX:ArchiveClassesAtExit={}", p.display()),
        }
    }

    /// The archive a Kafka tool's JVM (storage format, listener probe) may start from too: one the brokers read,
    /// never one a broker is writing. The JVM maps it only while the tool's classpath begins with the brokers'.
    fn for_tools(archive: Option<&Archive>) -> Option<&Archive> {
        archive.filter(|a| matches!(a, Archive::Use(_)))
    }
}

pub struct KafkaStart<'a> {
    pub dir: &'a Path,
    pub env_id: &'a str,
    /// One set of ports per broker: one entry starts a single node, N a cluster of N.
    pub ports: Vec<KafkaPorts>,
    pub cpus: Option<Vec<usize>>,
    /// The Kafka version to run: its jars and log configuration.
    pub pin: &'static KafkaPin,
    /// The broker's jars (`pin`'s) as the host's java sees them.
    pub classpath: std::ffi::OsString,
    /// The listener probe's classpath ([`listener_probe::probe_classpath`]).
    pub probe_classpath: std::ffi::OsString,
    /// The class-data sharing archive the brokers start from, or write at exit (env/class_archive.rs).
    pub archive: Option<Archive>,
}

/// One started node of the environment.
struct Node {
    id: u32,
    role: Role,
    ports: KafkaPorts,
    pid: u32,
    log: PathBuf,
    dir: PathBuf,
    properties: PathBuf,
    listeners: BTreeMap<String, Listener>,
    controller: String,
}

/// Brokers that have been started but may not be ready yet.
pub struct Launched<'h> {
    host: &'h dyn ServiceHost,
    nodes: Vec<Node>,
    probe_classpath: std::ffi::OsString,
    /// The brokers' class archive, which the probe's JVM starts from (its classpath extends theirs).
    probe_archive: Option<Archive>,
    password: String,
    password_file: PathBuf,
    ca_file: PathBuf,
    cpus: Option<Vec<usize>>,
}

/// The cluster-wide settings every node's properties share.
struct Cluster {
    id: String,
    /// `1@127.0.0.1:port,2@...`: the static quorum of a cluster; empty for a single node (which bootstraps a
    /// dynamic quorum of itself, `--standalone`).
    voters: String,
    nodes: usize,
}

/// Write config and credentials, format storage and start every broker (call from the main thread:
/// PR_SET_PDEATHSIG follows the thread that spawned the process). On failure, what started is stopped.
pub fn launch<'h>(host: &'h dyn ServiceHost, s: &KafkaStart) -> Result<Launched<'h>> {
    std::fs::create_dir_all(s.dir)?;
    let password = secrets::random_password();
    let password_file = secrets::write_secret(&s.dir.join("scram.password"), &password)?;
    let tls = certs::generate(s.env_id)?;
    let ca_file = s.dir.join("ca.pem");
    std::fs::write(&ca_file, &tls.ca_pem)?;
    let cluster = Cluster {
        id: secrets::kafka_uuid(),
        voters: if s.ports.len() > 1 {
            s.ports
                .iter()
                .enumerate()
                .map(|(i, p)| format!("{}@127.0.0.1:{}", i + 1, p.controller))
                .collect::<Vec<_>>()
                .join(",")
        } else {
            String::new()
        },
        nodes: s.ports.len(),
    };
    let mut launched = Launched {
        host,
        nodes: Vec::new(),
        probe_classpath: s.probe_classpath.clone(),
        // Another pin's brokers run other jars than the probe: their archive is not the probe's.
        probe_archive: Archive::for_tools(s.archive.as_ref())
            .filter(|_| s.probe_classpath.as_encoded_bytes().starts_with(s.classpath.as_encoded_bytes()))
            .cloned(),
        password,
        password_file,
        ca_file,
        cpus: s.cpus.clone(),
    };
    for (i, ports) in s.ports.iter().enumerate() {
        match launch_node(&launched, s, &cluster, &tls, i as u32 + 1, *ports) {
            Ok(node) => launched.nodes.push(node),
            Err(e) => {
                launched.stop();
                return Err(e);
            }
        }
    }
    Ok(launched)
}

/// One node: its directory (the environment's Kafka directory itself for a single node, `node-<id>` in a
/// cluster), properties, formatted storage and process.
fn launch_node(
    l: &Launched,
    s: &KafkaStart,
    cluster: &Cluster,
    tls: &certs::TlsMaterial,
    id: u32,
    ports: KafkaPorts,
) -> Result<Node> {
    let dir = if cluster.nodes > 1 { s.dir.join(format!("node-{id}")) } else { s.dir.to_owned() };
    std::fs::create_dir_all(dir.join("logs"))?;
    std::fs::create_dir_all(dir.join(JVM_TMP_DIR))?;
    let properties = dir.join("server.properties");
    secrets::write_secret(&properties, &render_server_properties(&dir, id, ports, cluster, tls)?)?;
    let storage =
        StorageFormat { pin: s.pin, classpath: &s.classpath, archive: Archive::for_tools(s.archive.as_ref()) };
    storage.run(l.host, &properties, &cluster.id, cluster.voters.is_empty(), &l.password)?;
    let log = dir.join("kafka.out");
    let cmd = broker_command(l.host.java(), s.pin, &s.classpath, &properties, s.archive.as_ref());
    let role = if cluster.nodes > 1 { Role::Broker(id) } else { Role::Kafka };
    let pid = l.host.spawn(role, cmd, &log, s.cpus.as_deref())?;
    Ok(Node {
        id,
        role,
        ports,
        pid,
        log,
        listeners: listeners(&[ports], &l.password_file, &l.ca_file),
        controller: format!("127.0.0.1:{}", ports.controller),
        properties,
        dir,
    })
}

/// The broker process of the node whose `server.properties` is `properties` (its directory holds its logs):
/// what a start runs (with the environment's class archive, if any), and what a fault's restart runs again
/// (without one, as kafka-server-start.sh does).
pub fn broker_command(
    java: PathBuf,
    pin: &KafkaPin,
    classpath: &std::ffi::OsStr,
    properties: &Path,
    archive: Option<&Archive>,
) -> Cmd {
    let dir = properties.parent().unwrap_or(Path::new("."));
    let mut flags = jvm_flags(dir, pin);
    flags.extend(archive.map(Archive::jvm_flag));
    Cmd::new(java).args(flags).arg("-cp").arg(classpath).arg("kafka.Kafka").arg(properties)
}

impl Launched<'_> {
    /// Wait until every broker answers on every listener; on failure every broker is stopped.
    pub fn wait_ready(self) -> Result<KafkaEnv> {
        let ports: Vec<KafkaPorts> = self.nodes.iter().map(|n| n.ports).collect();
        let cluster_listeners = listeners(&ports, &self.password_file, &self.ca_file);
        if let Err(e) = self.wait_until_ready(&cluster_listeners) {
            self.stop();
            return Err(e);
        }
        let first = &self.nodes[0];
        let version = broker_version(&first.log).unwrap_or_else(|| "unknown".into());
        let single = self.nodes.len() == 1;
        Ok(KafkaEnv {
            version,
            // Set by whoever started the brokers, once it has seen them take the archive.
            start_archive: None,
            default_listener: None,
            pid: single.then_some(first.pid),
            controller: Some(self.nodes.iter().map(|n| n.controller.as_str()).collect::<Vec<_>>().join(",")),
            cpus: self.cpus.clone(),
            log_file: single.then(|| first.log.clone()),
            brokers: if single {
                Vec::new()
            } else {
                self.nodes
                    .iter()
                    .map(|n| BrokerEnv {
                        node_id: n.id,
                        pid: Some(n.pid),
                        listeners: n.listeners.clone(),
                        controller: n.controller.clone(),
                        data_dir: n.dir.join("data"),
                        log_file: Some(n.log.clone()),
                        properties: n.properties.clone(),
                    })
                    .collect()
            },
            listeners: cluster_listeners,
        })
    }

    /// Stop every broker started so far.
    pub fn stop(&self) {
        for n in &self.nodes {
            self.host.stop(n.role, n.pid, Duration::from_secs(5));
        }
    }
}

/// Each broker's heap and collector (a cluster's three fit in 24 GiB beside the clients, G1 with short pauses).
pub const BROKER_JVM: [&str; 4] = ["-Xms1g", "-Xmx1g", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20"];

/// Each lab-started broker's heap as records name it (`1g`): [`BROKER_JVM`]'s `-Xmx`.
pub fn broker_heap() -> String {
    BROKER_JVM.iter().find_map(|f| f.strip_prefix("-Xmx")).expect("BROKER_JVM sets -Xmx").to_owned()
}

/// How a lab-started Kafka environment is sized and started, for provenance.
pub fn sizing(brokers: usize, from_archive: bool) -> String {
    let shape = match brokers {
        1 => "1 broker (KRaft combined mode: broker and sole controller)".to_owned(),
        n => format!("{n} brokers in KRaft combined mode, each a controller and one of {n} quorum voters"),
    };
    // The thread pools as the broker template sets them.
    let template = crate::paths::repo_root().join("env/kafka/server.properties.j2");
    let threads: Vec<String> = std::fs::read_to_string(template)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.split_once('=').is_some_and(|(k, _)| k.trim().ends_with(".threads")))
        .map(|l| l.trim().to_owned())
        .collect();
    let start = if from_archive {
        "; started from a class-data sharing archive of Kafka's classes, as Apache Kafka's image starts its broker \
         (a fault's restart starts without it)"
    } else {
        ""
    };
    format!("{shape}; each JVM {}; {}{start}", BROKER_JVM.join(" "), threads.join(" "))
}

/// The broker's own temporary directory, inside its node's: lz4-java and snappy-java unpack their native libraries
/// into java.io.tmpdir and leave them there, so in /tmp every broker start left two files behind.
const JVM_TMP_DIR: &str = "tmp";

/// The broker's JVM: [`BROKER_JVM`], then its logging and its temporary directory.
fn jvm_flags(dir: &Path, pin: &KafkaPin) -> Vec<String> {
    let mut flags: Vec<String> = BROKER_JVM.iter().map(|f| f.to_string()).collect();
    flags.extend([
        "-Djava.awt.headless=true".into(),
        pin.broker_log_flag(),
        format!("-Dkafka.logs.dir={}", dir.join("logs").display()),
        format!("-Djava.io.tmpdir={}", dir.join(JVM_TMP_DIR).display()),
    ]);
    flags
}

fn render_server_properties(
    dir: &Path,
    node_id: u32,
    ports: KafkaPorts,
    cluster: &Cluster,
    tls: &certs::TlsMaterial,
) -> Result<String> {
    // java.util.Properties turns the two characters `\n` back into a newline.
    let one_line = |pem: &str| pem.trim_end().replace('\n', "\\n");
    // Internal topics replicated as far as the cluster allows (3, min ISR 2, on three or more nodes).
    let replication = cluster.nodes.min(3);
    templates::render(
        "kafka/server.properties.j2",
        minijinja::context! {
            node_id => node_id,
            ports => ports,
            voters => cluster.voters,
            cluster => cluster.nodes > 1,
            internal_rf => replication,
            internal_min_isr => replication.min(2),
            data_dir => dir.join("data").display().to_string(),
            tls_chain => one_line(&tls.broker_chain_pem),
            tls_key => one_line(&tls.broker_key_pem),
        },
    )
}

/// What formats a node's storage: Kafka's StorageTool from the brokers' jars, started from their class archive if
/// they have one (half the tool's CPU on this machine: 1.15 against 0.7 s).
struct StorageFormat<'a> {
    pin: &'a KafkaPin,
    classpath: &'a std::ffi::OsStr,
    archive: Option<&'a Archive>,
}

impl StorageFormat<'_> {
    fn run(
        &self,
        host: &dyn ServiceHost,
        properties: &Path,
        cluster_id: &str,
        standalone: bool,
        password: &str,
    ) -> Result<()> {
        let dir = properties.parent().context("the broker properties have no directory")?;
        let args = storage_format_args(properties, cluster_id, standalone, password);
        let argfile = secrets::write_secret(&dir.join("storage-format.args"), &args)?;
        let output = host
            .output(Role::Kafka, self.command(&host.java(), &argfile))
            .context("cannot run java (is a JDK >= 17 installed? see `cargo xtask doctor`)");
        let _ = std::fs::remove_file(&argfile);
        let output = output?;
        if !output.status.success() {
            bail!("formatting Kafka storage failed ({}):\n{}{}", output.status, output.stdout, output.stderr);
        }
        Ok(())
    }

    /// StorageTool takes its SCRAM credentials as arguments; they go through a java @argfile (owner-only, removed
    /// after the run) so the password never shows on a command line. The launcher expands @argfiles only up to
    /// the main class, so the main class and every argument after it are in the file.
    fn command(&self, java: &Path, argfile: &Path) -> Cmd {
        Cmd::new(java)
            .args(["-Xmx256m", "-XX:TieredStopAtLevel=1"])
            .args(self.archive.map(Archive::jvm_flag))
            .arg(self.pin.tools_log_flag())
            .arg("-cp")
            .arg(self.classpath)
            .arg(format!("@{}", argfile.display()))
    }
}

/// A single node bootstraps a dynamic quorum of itself (`--standalone`); a cluster's nodes share one cluster
/// id and name their static quorum in `controller.quorum.voters`.
fn storage_format_args(properties: &Path, cluster_id: &str, standalone: bool, password: &str) -> String {
    let scram = |mech: &str| format!("{mech}=[name={SCRAM_USER},password={password}]");
    let properties = properties.display().to_string();
    let quorum = if standalone { Some("--standalone") } else { None };
    let args = [
        Some("kafka.tools.StorageTool"),
        Some("format"),
        quorum,
        Some("-t"),
        Some(cluster_id),
        Some("-c"),
        Some(&properties),
        Some("--add-scram"),
        Some(&scram("SCRAM-SHA-256")),
        Some("--add-scram"),
        Some(&scram("SCRAM-SHA-512")),
    ];
    // One quoted token a line: quotes keep paths with spaces whole; backslashes and quotes are escaped.
    args.iter().flatten().map(|a| format!("\"{}\"\n", a.replace('\\', "\\\\").replace('"', "\\\""))).collect()
}

/// The descriptor's view of the listeners of the brokers on `ports` (both SCRAM mechanisms share one SASL
/// listener): each listener bootstraps from every broker.
fn listeners(ports: &[KafkaPorts], password_file: &Path, ca_file: &Path) -> BTreeMap<String, Listener> {
    let at = |port: fn(&KafkaPorts) -> u16| {
        ports.iter().map(|p| format!("127.0.0.1:{}", port(p))).collect::<Vec<_>>().join(",")
    };
    let plain = |protocol: &str, bootstrap: String| Listener {
        bootstrap,
        security_protocol: protocol.into(),
        sasl_mechanism: None,
        username: None,
        password_file: None,
        ca_file: None,
    };
    let scram = |mechanism: &str| Listener {
        sasl_mechanism: Some(mechanism.into()),
        username: Some(SCRAM_USER.into()),
        password_file: Some(password_file.to_owned()),
        ..plain("SASL_PLAINTEXT", at(|p| p.scram))
    };
    BTreeMap::from([
        ("plaintext".into(), plain("PLAINTEXT", at(|p| p.plaintext))),
        ("ssl".into(), Listener { ca_file: Some(ca_file.to_owned()), ..plain("SSL", at(|p| p.ssl)) }),
        ("scram256".into(), scram("SCRAM-SHA-256")),
        ("scram512".into(), scram("SCRAM-SHA-512")),
        (
            "oauth".into(),
            Listener {
                sasl_mechanism: Some("OAUTHBEARER".into()),
                username: Some(OAUTH_SUBJECT.into()),
                ..plain("SASL_PLAINTEXT", at(|p| p.oauth))
            },
        ),
    ])
}

/// Java client properties for one listener (used for readiness and by Java tool arms).
pub fn java_client_properties(l: &Listener, password: &str) -> String {
    let mut p = format!("security.protocol={}\n", l.security_protocol);
    if let Some(ca) = &l.ca_file {
        p += &format!("ssl.truststore.type=PEM\nssl.truststore.location={}\n", ca.display());
    }
    match l.sasl_mechanism.as_deref() {
        Some("OAUTHBEARER") => {
            p += "sasl.mechanism=OAUTHBEARER\n";
            p += &format!(
                "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
                 unsecuredLoginStringClaim_sub=\"{}\";\n",
                l.username.as_deref().unwrap_or(OAUTH_SUBJECT)
            );
        }
        Some(mechanism) => {
            p += &format!("sasl.mechanism={mechanism}\n");
            p += &format!(
                "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \
                 username=\"{}\" password=\"{password}\";\n",
                l.username.as_deref().unwrap_or(SCRAM_USER)
            );
        }
        None => {}
    }
    p
}

impl Launched<'_> {
    /// Ready = every broker logged its start, then on every listener a Java client read the cluster's brokers
    /// from metadata and had each of them answer (all listeners probed at once, by one JVM).
    fn wait_until_ready(&self, listeners: &BTreeMap<String, Listener>) -> Result<()> {
        let started = Instant::now();
        for n in &self.nodes {
            let what = format!("Kafka broker {}", n.id);
            process::wait_ready(&what, n.pid, &n.log, Duration::from_secs(90), || {
                std::fs::read_to_string(&n.log).is_ok_and(|t| t.contains("Kafka Server started"))
            })?;
        }
        tracing::debug!("brokers logged their start after {:.1} s", started.elapsed().as_secs_f64());
        // A broker that has just logged its start can still time out the first SASL handshake on a loaded
        // machine (CI saw one SCRAM listener do so), so a listener that did not answer is probed again until
        // the deadline; the last answer is the error.
        let deadline = Instant::now() + LISTENER_READY_TIMEOUT;
        let mut pending: Vec<(&String, &Listener)> = listeners.iter().collect();
        loop {
            let answers = self.probe_listeners(&pending)?;
            let mut failed = Vec::new();
            for (name, l, answer) in answers {
                let missing = answer.missing(self.nodes.iter().map(|n| n.id));
                if !missing.is_empty() {
                    failed.push((name, l, missing, answer));
                }
            }
            let Some((name, l, missing, answer)) = failed.first() else { return Ok(()) };
            if Instant::now() >= deadline {
                bail!(
                    "listener {name} ({}): broker(s) {missing:?} did not answer a client within {} s: {answer}",
                    l.bootstrap,
                    LISTENER_READY_TIMEOUT.as_secs(),
                );
            }
            tracing::debug!("listener {name} did not answer yet; probing it again");
            pending = failed.iter().map(|(name, l, _, _)| (*name, *l)).collect();
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    /// One JVM probes every listener in `listeners` at once ([`listener_probe`]); each listener's answer is
    /// `ok` with the broker ids that answered on it, or why it did not.
    fn probe_listeners<'l>(
        &self,
        listeners: &[(&'l String, &'l Listener)],
    ) -> Result<Vec<(&'l String, &'l Listener, ProbeAnswer)>> {
        let clients = listeners.iter().map(|&(name, l)| (name.as_str(), l, java_client_properties(l, &self.password)));
        let answers = listener_probe::run(
            self.host,
            &self.probe_classpath,
            self.probe_archive.as_ref().map(Archive::jvm_flag),
            &self.nodes[0].dir,
            clients,
        )?;
        Ok(listeners.iter().zip(answers).map(|(&(name, l), answer)| (name, l, answer)).collect())
    }
}

/// "Kafka version: 4.1.0" as the broker logged it at start.
fn broker_version(log: &Path) -> Option<String> {
    let text = std::fs::read_to_string(log).ok()?;
    let rest = text.lines().find_map(|l| l.split("Kafka version: ").nth(1))?;
    rest.split_whitespace().next().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_archive_flag_says_whether_the_jvm_reads_or_writes_the_archive() {
        assert_eq!(Archive::Use("/c/b.jsa".into()).jvm_flag(), "-XX:SharedArchiveFile=/c/b.jsa");
        assert_eq!(Archive::Dump("/c/b.jsa".into()).jvm_flag(), "-XX:ArchiveClassesAtExit=/c/b.jsa");
    }

    #[test]
    fn provenance_gets_the_cluster_shape_heap_thread_pools_and_how_the_brokers_started() {
        let three = sizing(3, false);
        assert!(three.starts_with("3 brokers in KRaft combined mode, each a controller and one of 3 quorum voters"));
        assert!(three.contains("-Xmx1g") && three.contains("num.io.threads=2"), "{three}");
        assert!(!three.contains("archive"), "{three}");
        let one = sizing(1, true);
        assert!(one.starts_with("1 broker (KRaft combined mode"));
        assert!(
            one.ends_with(
                "class-data sharing archive of Kafka's classes, as Apache Kafka's image starts its broker \
                               (a fault's restart starts without it)"
            ),
            "{one}"
        );
    }

    #[test]
    fn a_tool_starts_from_an_archive_the_brokers_read_never_from_one_a_broker_writes() {
        let (read, write) = (Archive::Use("/a.jsa".into()), Archive::Dump("/a.jsa".into()));
        assert_eq!(Archive::for_tools(Some(&read)), Some(&read));
        assert_eq!(Archive::for_tools(Some(&write)), None);
        assert_eq!(Archive::for_tools(None), None);
    }

    #[test]
    fn the_scram_password_reaches_storage_tool_through_a_file_not_the_command_line() {
        let password = secrets::random_password();
        let archive = Archive::Use(PathBuf::from("/cache/broker.jsa"));
        let format = StorageFormat {
            pin: super::super::pins::default_pin(),
            classpath: "a.jar:b.jar".as_ref(),
            archive: Some(&archive),
        };
        let cmd = format.command(Path::new("java"), Path::new("/env dir/storage-format.args"));
        let line: Vec<String> = cmd.argv().into_iter().skip(1).map(|a| a.to_string_lossy().into_owned()).collect();
        assert!(!line.iter().any(|a| a.contains(&password) || a.contains("scram")), "{line:?}");
        assert_eq!(line.last().map(String::as_str), Some("@/env dir/storage-format.args"));
        // The tool starts from the brokers' archive, before its classpath.
        let flag = line.iter().position(|a| a == "-XX:SharedArchiveFile=/cache/broker.jsa");
        assert!(flag.is_some_and(|at| at < line.iter().position(|a| a == "-cp").unwrap()), "{line:?}");

        let args = storage_format_args(Path::new("/env dir/server \"x\".properties"), "cluster-id", true, &password);
        let lines: Vec<&str> = args.lines().collect();
        assert_eq!(lines[0], "\"kafka.tools.StorageTool\"");
        assert!(lines.contains(&"\"/env dir/server \\\"x\\\".properties\""), "{args}");
        assert!(lines.contains(&format!("\"SCRAM-SHA-512=[name={SCRAM_USER},password={password}]\"").as_str()));
    }
}
