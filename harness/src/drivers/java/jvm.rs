//! Running one of Kafka's Java tools as `kafka-run-class.sh` would (its heap and JVM flags), on the pinned
//! classpath the tools file names, with a private directory for the config files it reads.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use streamlab_process::Cmd;
use streamlab_record::tools::JavaTools;

use crate::kafka::java_tools::{PERFORMANCE_OPTS, TOOLS_LOG_CONFIG};

/// `kafka-producer-perf-test.sh` and `kafka-consumer-perf-test.sh` set this heap.
const HEAP: &str = "-Xmx512M";
const TOOLS_LOG_CONFIG_FILE: &str = "tools-log4j2.yaml";

/// A run's private directory (owner-only, removed on drop) and the JVM that runs the tools.
pub struct Jvm<'t> {
    tools: &'t JavaTools,
    dir: tempfile::TempDir,
}

/// What one tool run left behind.
#[derive(Debug)]
pub struct ToolRun {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    /// The JVM process from spawn to exit.
    pub wall: Duration,
    /// User + system CPU seconds of the JVM process.
    pub cpu_s: f64,
}

impl ToolRun {
    /// The last `lines` lines of stderr, for errors.
    pub fn stderr_tail(&self, lines: usize) -> String {
        let all: Vec<&str> = self.stderr.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

impl<'t> Jvm<'t> {
    pub fn new(tools: &'t JavaTools) -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("streamlab-java-")
            .tempdir()
            .context("cannot create a private directory for the Java tools' config")?;
        let jvm = Jvm { tools, dir };
        jvm.write_private(TOOLS_LOG_CONFIG_FILE, TOOLS_LOG_CONFIG.as_bytes())?;
        Ok(jvm)
    }

    /// Writes `name` in the private directory, readable by the owner only.
    pub fn write_private(&self, name: &str, contents: &[u8]) -> Result<PathBuf> {
        crate::private_files::write_private(self.dir.path(), name, contents)
    }

    /// `java <heap> <perf opts> <log config> -cp <pinned jars> <main class> <args>`.
    pub fn command(&self, main_class: &str, args: &[OsString]) -> Cmd {
        Cmd::new(&self.tools.java)
            .arg(HEAP)
            .args(PERFORMANCE_OPTS)
            .arg(format!("-Dlog4j2.configurationFile={}", self.dir.path().join(TOOLS_LOG_CONFIG_FILE).display()))
            // lz4-java and snappy-java unpack their native libraries here and never remove them: the private
            // directory goes with the run, /tmp would keep them.
            .arg(format!("-Djava.io.tmpdir={}", self.dir.path().display()))
            .arg("-cp")
            .arg(std::env::join_paths(&self.tools.classpath).unwrap_or_default())
            .arg(main_class)
            .args(args)
    }

    /// The command as a record shows it: the classpath summarised, the private directory as `<private>`.
    pub fn describe(&self, cmd: &Cmd) -> String {
        let private = self.dir.path().display().to_string();
        let classpath = format!(
            "<{} pinned jars: {} and its dependencies, env/kafka/jars.lock>",
            self.tools.classpath.len(),
            self.tools.kafka_tools
        );
        let argv = cmd.argv();
        let mut words = vec![argv[0].to_string_lossy().into_owned()];
        let mut after_cp = false;
        for arg in &argv[1..] {
            let arg = arg.to_string_lossy();
            words.push(if after_cp { classpath.clone() } else { arg.replace(&private, "<private>") });
            after_cp = arg == "-cp";
        }
        words.join(" ")
    }

    /// Runs the tool to its end (killed after `deadline`), its output captured; the JVM dies with the harness.
    pub fn run(&self, label: &str, cmd: Cmd, deadline: Duration) -> Result<ToolRun> {
        let started = Instant::now();
        let out = cmd.output(deadline).with_context(|| format!("{label}: the JVM"))?;
        Ok(ToolRun {
            status: out.status,
            stdout: out.stdout,
            stderr: out.stderr,
            wall: started.elapsed(),
            cpu_s: out.cpu_s,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> JavaTools {
        JavaTools {
            java: "/usr/bin/java".into(),
            classpath: vec!["/c/a.jar".into(), "/c/kafka-tools-4.1.0.jar".into()],
            kafka_tools: "org.apache.kafka:kafka-tools:4.1.0".into(),
            java_version: "openjdk version \"17.0.15\" 2025-04-15".into(),
        }
    }

    #[test]
    fn the_command_is_kafka_run_class_with_the_repo_log_config_and_is_described_without_paths() {
        let tools = tools();
        let jvm = Jvm::new(&tools).unwrap();
        let config = jvm.write_private("producer.properties", b"acks=1\n").unwrap();
        let cmd =
            jvm.command("org.apache.kafka.tools.ProducerPerformance", &["--producer.config".into(), config.into()]);
        let args: Vec<String> = cmd.argv().iter().skip(1).map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(args[0], "-Xmx512M");
        assert!(args.contains(&"/c/a.jar:/c/kafka-tools-4.1.0.jar".to_owned()), "{args:?}");
        let log = args.iter().find_map(|a| a.strip_prefix("-Dlog4j2.configurationFile=")).unwrap();
        assert_eq!(std::fs::read_to_string(log).unwrap(), TOOLS_LOG_CONFIG);
        assert!(TOOLS_LOG_CONFIG.contains("target: SYSTEM_ERR"), "the tools log to stderr only");
        assert!(TOOLS_LOG_CONFIG.contains("name: org.apache.kafka.common.config.AbstractConfig\n        level: INFO"));
        let described = jvm.describe(&cmd);
        assert!(
            described.ends_with(
                "-cp <2 pinned jars: org.apache.kafka:kafka-tools:4.1.0 and its dependencies, env/kafka/jars.lock> \
             org.apache.kafka.tools.ProducerPerformance --producer.config <private>/producer.properties"
            ),
            "{described}"
        );
        assert!(described.contains("-Dlog4j2.configurationFile=<private>/tools-log4j2.yaml"), "{described}");
    }

    #[test]
    fn private_files_are_owner_only_and_go_with_the_run() {
        use std::os::unix::fs::PermissionsExt;
        let tools = tools();
        let jvm = Jvm::new(&tools).unwrap();
        let path = jvm.write_private("consumer.properties", b"x=1\n").unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert!(jvm.write_private("consumer.properties", b"again").is_err(), "never overwritten");
        drop(jvm);
        assert!(!path.exists());
    }

    #[test]
    fn a_tool_run_reports_exit_status_output_and_its_own_cpu() {
        let tools = JavaTools { java: "/bin/sh".into(), ..tools() };
        let jvm = Jvm::new(&tools).unwrap();
        let cmd = Cmd::new("/bin/sh")
            .args(["-c", "echo out; echo err >&2; i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; exit 4"]);
        let run = jvm.run("spin", cmd, Duration::from_secs(60)).unwrap();
        assert_eq!((run.status.code(), run.stdout.as_str(), run.stderr.as_str()), (Some(4), "out\n", "err\n"));
        // The shell's own CPU, counted once it has been waited for (getrusage is process-wide: another test's
        // child reaped in the same window would add to it, so no upper bound beyond sanity).
        assert!(run.cpu_s > 0.0 && run.cpu_s < 30.0, "{run:?}");
        let slow = Cmd::new("/bin/sh").args(["-c", "sleep 30"]);
        let e = format!("{:#}", jvm.run("slow", slow, Duration::from_millis(200)).unwrap_err());
        assert!(e.contains("killed"), "{e}");
    }
}
