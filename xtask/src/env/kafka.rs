//! Native Apache Kafka: a KRaft combined broker+controller on the system JDK, from the pinned jars,
//! with PLAINTEXT, SSL, SASL/SCRAM (256 and 512) and SASL/OAUTHBEARER listeners on loopback.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use streamlab_process::Cmd;
use streamlab_record::descriptor::{KafkaEnv, Listener};

use super::host::{Role, ServiceHost};
use super::pins::KafkaPin;
use super::process;
use super::{certs, secrets, templates};
use crate::paths::repo_root;

/// The SASL user created at format time for both SCRAM mechanisms.
pub const SCRAM_USER: &str = "streamlab";
/// The principal of the unsecured OAUTHBEARER token.
pub const OAUTH_SUBJECT: &str = "admin";

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

pub struct KafkaStart<'a> {
    pub dir: &'a Path,
    pub env_id: &'a str,
    pub ports: KafkaPorts,
    pub cpus: Option<Vec<usize>>,
    /// The Kafka version to run: its jars and log configuration.
    pub pin: &'static KafkaPin,
    /// The broker's jars (`pin`'s) as the host's java sees them.
    pub classpath: std::ffi::OsString,
    /// Kafka's tools (the default pin's jars): readiness probes, whatever the broker's version.
    pub tools_classpath: std::ffi::OsString,
}

/// A broker that has been started but may not be ready yet.
pub struct Launched<'h> {
    host: &'h dyn ServiceHost,
    pid: u32,
    log: PathBuf,
    dir: PathBuf,
    classpath: std::ffi::OsString,
    password: String,
    listeners: BTreeMap<String, Listener>,
    controller: String,
    cpus: Option<Vec<usize>>,
}

/// Write config and credentials, format storage and start the broker (call from the main thread:
/// PR_SET_PDEATHSIG follows the thread that spawned the process).
pub fn launch<'h>(host: &'h dyn ServiceHost, s: &KafkaStart) -> Result<Launched<'h>> {
    std::fs::create_dir_all(s.dir.join("logs"))?;
    let password = secrets::random_password();
    let password_file = secrets::write_secret(&s.dir.join("scram.password"), &password)?;
    let tls = certs::generate(s.env_id)?;
    let ca_file = s.dir.join("ca.pem");
    std::fs::write(&ca_file, &tls.ca_pem)?;
    let properties = s.dir.join("server.properties");
    secrets::write_secret(&properties, &render_server_properties(s, &tls)?)?;
    format_storage(host, s.pin, &s.classpath, &properties, &password)?;
    let log = s.dir.join("kafka.out");
    let cmd = Cmd::new(host.java())
        .args(jvm_flags(s.dir, s.pin))
        .arg("-cp")
        .arg(&s.classpath)
        .arg("kafka.Kafka")
        .arg(&properties);
    let pid = host.spawn(Role::Kafka, cmd, &log, s.cpus.as_deref())?;
    Ok(Launched {
        host,
        pid,
        log,
        dir: s.dir.to_owned(),
        classpath: s.tools_classpath.clone(),
        password,
        listeners: listeners(s.ports, &password_file, &ca_file),
        controller: format!("127.0.0.1:{}", s.ports.controller),
        cpus: s.cpus.clone(),
    })
}

impl Launched<'_> {
    /// Wait until every listener answers; on failure the broker is stopped.
    pub fn wait_ready(self) -> Result<KafkaEnv> {
        if let Err(e) = wait_until_ready(
            self.host,
            &self.dir,
            &self.classpath,
            self.pid,
            &self.log,
            &self.listeners,
            &self.password,
        ) {
            self.stop();
            return Err(e);
        }
        Ok(KafkaEnv {
            version: broker_version(&self.log).unwrap_or_else(|| "unknown".into()),
            pid: Some(self.pid),
            listeners: self.listeners,
            controller: Some(self.controller),
            cpus: self.cpus,
            log_file: Some(self.log),
        })
    }

    pub fn stop(&self) {
        self.host.stop(Role::Kafka, self.pid, Duration::from_secs(5));
    }
}

pub fn java() -> PathBuf {
    std::env::var_os("JAVA_HOME").map(|h| PathBuf::from(h).join("bin").join("java")).unwrap_or_else(|| "java".into())
}

fn jvm_flags(dir: &Path, pin: &KafkaPin) -> Vec<String> {
    vec![
        "-Xms1g".into(),
        "-Xmx1g".into(),
        "-XX:+UseG1GC".into(),
        "-XX:MaxGCPauseMillis=20".into(),
        "-Djava.awt.headless=true".into(),
        pin.broker_log_flag(),
        format!("-Dkafka.logs.dir={}", dir.join("logs").display()),
    ]
}

/// Kafka's CLI tools log warnings to stderr only, so their stdout carries just their results.
pub fn tools_log_config() -> String {
    format!("-Dlog4j2.configurationFile={}", repo_root().join("env/kafka/tools-log4j2.yaml").display())
}

fn render_server_properties(s: &KafkaStart, tls: &certs::TlsMaterial) -> Result<String> {
    // java.util.Properties turns the two characters `\n` back into a newline.
    let one_line = |pem: &str| pem.trim_end().replace('\n', "\\n");
    templates::render(
        "kafka/server.properties.j2",
        minijinja::context! {
            ports => s.ports,
            data_dir => s.dir.join("data").display().to_string(),
            tls_chain => one_line(&tls.broker_chain_pem),
            tls_key => one_line(&tls.broker_key_pem),
        },
    )
}

fn format_storage(
    host: &dyn ServiceHost,
    pin: &KafkaPin,
    classpath: &std::ffi::OsStr,
    properties: &Path,
    password: &str,
) -> Result<()> {
    let dir = properties.parent().context("the broker properties have no directory")?;
    let argfile = secrets::write_secret(&dir.join("storage-format.args"), &storage_format_args(properties, password))?;
    let output = host
        .output(Role::Kafka, storage_format_command(&host.java(), &pin.tools_log_flag(), classpath, &argfile))
        .context("cannot run java (is a JDK >= 17 installed? see `cargo xtask doctor`)");
    let _ = std::fs::remove_file(&argfile);
    let output = output?;
    if !output.status.success() {
        bail!("formatting Kafka storage failed ({}):\n{}{}", output.status, output.stdout, output.stderr);
    }
    Ok(())
}

/// StorageTool takes its SCRAM credentials as arguments; they go through a java @argfile (owner-only, removed
/// after the run) so the password never shows on a command line. The launcher expands @argfiles only up to the
/// main class, so the main class and every argument after it are in the file.
fn storage_format_command(java: &Path, log_flag: &str, classpath: &std::ffi::OsStr, argfile: &Path) -> Cmd {
    Cmd::new(java)
        .args(["-Xmx256m", "-XX:TieredStopAtLevel=1"])
        .arg(log_flag)
        .arg("-cp")
        .arg(classpath)
        .arg(format!("@{}", argfile.display()))
}

fn storage_format_args(properties: &Path, password: &str) -> String {
    let cluster_id = secrets::kafka_uuid();
    let scram = |mech: &str| format!("{mech}=[name={SCRAM_USER},password={password}]");
    let properties = properties.display().to_string();
    let args = [
        "kafka.tools.StorageTool",
        "format",
        "--standalone",
        "-t",
        &cluster_id,
        "-c",
        &properties,
        "--add-scram",
        &scram("SCRAM-SHA-256"),
        "--add-scram",
        &scram("SCRAM-SHA-512"),
    ];
    // One quoted token a line: quotes keep paths with spaces whole; backslashes and quotes are escaped.
    args.iter().map(|a| format!("\"{}\"\n", a.replace('\\', "\\\\").replace('"', "\\\""))).collect()
}

/// The descriptor's view of the listeners (both SCRAM mechanisms share one SASL listener).
fn listeners(ports: KafkaPorts, password_file: &Path, ca_file: &Path) -> BTreeMap<String, Listener> {
    let at = |port: u16| format!("127.0.0.1:{port}");
    let plain = |protocol: &str, port| Listener {
        bootstrap: at(port),
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
        ..plain("SASL_PLAINTEXT", ports.scram)
    };
    BTreeMap::from([
        ("plaintext".into(), plain("PLAINTEXT", ports.plaintext)),
        ("ssl".into(), Listener { ca_file: Some(ca_file.to_owned()), ..plain("SSL", ports.ssl) }),
        ("scram256".into(), scram("SCRAM-SHA-256")),
        ("scram512".into(), scram("SCRAM-SHA-512")),
        (
            "oauth".into(),
            Listener {
                sasl_mechanism: Some("OAUTHBEARER".into()),
                username: Some(OAUTH_SUBJECT.into()),
                ..plain("SASL_PLAINTEXT", ports.oauth)
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

/// Ready = the broker logged its start, then a Java client completed ApiVersions + metadata on every listener
/// (all listeners probed at once).
fn wait_until_ready(
    host: &dyn ServiceHost,
    dir: &Path,
    classpath: &std::ffi::OsStr,
    pid: u32,
    log: &Path,
    listeners: &BTreeMap<String, Listener>,
    password: &str,
) -> Result<()> {
    let started = Instant::now();
    process::wait_ready("the Kafka broker", pid, log, Duration::from_secs(60), || {
        std::fs::read_to_string(log).is_ok_and(|t| t.contains("Kafka Server started"))
    })?;
    tracing::debug!("broker logged its start after {:.1} s", started.elapsed().as_secs_f64());
    let mut probes = Vec::new();
    for (name, l) in listeners {
        let props = dir.join(format!("client-{name}.properties"));
        secrets::write_secret(&props, &java_client_properties(l, password))?;
        let cmd = Cmd::new(host.java())
            .args(["-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"])
            .arg(tools_log_config())
            .arg("-cp")
            .arg(classpath)
            .args(["org.apache.kafka.tools.BrokerApiVersionsCommand", "--bootstrap-server", &l.bootstrap])
            .arg("--command-config")
            .arg(&props);
        probes.push((name, l, cmd));
    }
    let answers: Vec<_> = std::thread::scope(|scope| {
        let running: Vec<_> = probes
            .into_iter()
            .map(|(name, l, cmd)| (name, l, scope.spawn(move || host.output(Role::Kafka, cmd))))
            .collect();
        running.into_iter().map(|(name, l, probe)| (name, l, probe.join().expect("probe thread"))).collect()
    });
    for (name, l, out) in answers {
        let out = out.context("cannot run java")?;
        if !out.status.success() || !out.stdout.contains(&format!("{} (id: 1", l.bootstrap)) {
            bail!("listener {name} ({}) did not answer ApiVersions:\n{}{}", l.bootstrap, out.stdout, out.stderr);
        }
    }
    Ok(())
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
    fn the_scram_password_reaches_storage_tool_through_a_file_not_the_command_line() {
        let password = secrets::random_password();
        let cmd = storage_format_command(
            Path::new("java"),
            "-Dlog4j2.configurationFile=x",
            "a.jar:b.jar".as_ref(),
            Path::new("/env dir/storage-format.args"),
        );
        let line: Vec<String> = cmd.argv().into_iter().skip(1).map(|a| a.to_string_lossy().into_owned()).collect();
        assert!(!line.iter().any(|a| a.contains(&password) || a.contains("scram")), "{line:?}");
        assert_eq!(line.last().map(String::as_str), Some("@/env dir/storage-format.args"));

        let args = storage_format_args(Path::new("/env dir/server \"x\".properties"), &password);
        let lines: Vec<&str> = args.lines().collect();
        assert_eq!(lines[0], "\"kafka.tools.StorageTool\"");
        assert!(lines.contains(&"\"/env dir/server \\\"x\\\".properties\""), "{args}");
        assert!(lines.contains(&format!("\"SCRAM-SHA-512=[name={SCRAM_USER},password={password}]\"").as_str()));
    }
}
