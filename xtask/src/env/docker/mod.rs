//! The docker backend: the same Kafka (the pinned jars, the same listeners, certificates and passwords) and
//! MariaDB as the native backend, each in a container of a pinned image, on the host's network. Containers
//! carry the environment id as a label; a run's end, `env down`, a failed start and Ctrl-C remove them, and a
//! run sweeps what a killed run left before it starts.

pub mod daemon;
pub mod engine;
pub mod host;
pub mod images;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use streamlab_record::EnvDescriptor;
use streamlab_record::descriptor::BackendKind;
use streamlab_record::fault::{FaultRequest, FaultResult};
use streamlab_record::provenance::EnvInfo;

use self::engine::Engine;
use self::host::DockerHost;
use self::images::{ImageRole, Pinning};
use super::backend::{self, Backend, EnvSpec, Environment};
use super::health::{self, ServiceDown};
use super::host::{Role, ServiceHost};
use super::process::Lifetime;
use super::services::{running_pids, server_versions, start_services};
use super::{mariadb, pins};

/// How long a service container gets to stop before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(20);

pub struct DockerBackend;

impl Backend for DockerBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Docker
    }

    fn can_cap_broker(&self, cores: usize) -> std::result::Result<(), String> {
        super::broker_cpus(cores).map(|_| ())
    }

    fn prepare_what(&self) -> String {
        format!(
            "the pinned Kafka {} jars and the docker images (pulled by their pinned tags, or built here from Debian's \
             packages where no registry answers: about 2.5 min the first time)",
            pins::kafka_version()
        )
    }

    fn prepare(&self) -> Result<()> {
        pins::kafka_classpath()?;
        let engine = Engine::connect()?;
        sweep(&engine)?;
        images::ensure(&engine, ImageRole::Kafka, Pinning::LockedOnly)?;
        images::ensure(&engine, ImageRole::Mariadb, Pinning::LockedOnly)?;
        Ok(())
    }

    fn up(&self, spec: &EnvSpec) -> Result<Box<dyn Environment>> {
        Ok(Box::new(up(spec)?))
    }

    fn down(&self, env: &EnvDescriptor, keep: bool) -> Result<()> {
        remove(&Engine::connect()?, env, keep)
    }

    fn running_pids(&self, env: &EnvDescriptor) -> Vec<u32> {
        running_pids(env)
    }
}

/// A running docker environment; its containers and directory are removed when it is dropped.
pub struct DockerEnv {
    descriptor: EnvDescriptor,
    host: DockerHost,
    /// The Kafka it runs: what a broker started again after a fault gets.
    kafka: &'static pins::KafkaPin,
    /// Set by [`Environment::keep_running`]: the containers outlive this value.
    kept: bool,
}

impl DockerEnv {
    /// The roles of the broker containers: the one broker, or each node of a cluster.
    fn broker_roles(&self) -> Vec<Role> {
        match self.descriptor.kafka.brokers.as_slice() {
            [] => vec![Role::Kafka],
            nodes => nodes.iter().map(|b| Role::Broker(b.node_id)).collect(),
        }
    }

    /// The CPU caps the engine reports for the (first) broker's container: what inspect reads back.
    pub fn broker_caps(&self) -> Result<(i64, String)> {
        let role = self.broker_roles()[0];
        let id = self.host.container(role).context("the broker has no container")?;
        let config = self.host.engine.inspect(&id)?.host_config.unwrap_or_default();
        Ok((config.nano_cpus.unwrap_or(0), config.cpuset_cpus.unwrap_or_default()))
    }

    /// The same caps on every broker's container.
    fn apply_caps(&self, nano_cpus: i64, cpuset: String) -> Result<String> {
        for role in self.broker_roles() {
            let id = self.host.container(role).context("a broker has no container")?;
            self.host.engine.update_cpus(&id, Some(nano_cpus), Some(cpuset.clone()))?;
        }
        let (nano, set) = self.broker_caps()?;
        Ok(format!("{} (docker update, read back by inspect)", describe_caps(nano, &set)))
    }
}

impl Environment for DockerEnv {
    fn descriptor(&self) -> &EnvDescriptor {
        &self.descriptor
    }

    fn cap_broker(&self, cores: usize) -> Result<Option<String>> {
        let cpus = super::broker_cpus(cores).map_err(anyhow::Error::msg)?;
        // No cap is a quota of every CPU we may use: the engine's update cannot remove a quota (0 means unchanged).
        let cpus = cpus.unwrap_or_else(super::process::allowed_cpus);
        let (nano, set) = host::cpu_caps(&cpus);
        self.apply_caps(nano, set).map(Some)
    }

    fn place_broker(&self, cpus: &[usize]) -> Result<bool> {
        let (nano, set) = host::cpu_caps(cpus);
        self.apply_caps(nano, set)?;
        Ok(true)
    }

    fn service_pids(&self) -> Vec<u32> {
        running_pids(&self.descriptor)
    }

    fn info(&self) -> EnvInfo {
        let mut info =
            backend::env_info(&self.descriptor, true, Some("containers on the host's network (loopback only)"));
        info.images.insert("kafka".into(), self.host.kafka_image.clone());
        if let Some(image) = &self.host.mysql_image {
            info.images.insert("mariadb".into(), image.clone());
        }
        if let Ok((nano, set)) = self.broker_caps() {
            info.cpu_caps.insert("broker".into(), describe_caps(nano, &set));
        }
        info
    }

    fn versions(&self) -> BTreeMap<String, String> {
        let mut v = server_versions(&self.descriptor);
        v.insert("kafka".into(), self.descriptor.kafka.version.clone());
        if let Ok(out) = self.host.output(Role::Kafka, streamlab_process::Cmd::new("java").arg("-version"))
            && let Some(line) = out.stderr.lines().next()
        {
            v.insert("java".into(), format!("{line} (in {})", self.host.kafka_image.reference));
        }
        if let Some(version) =
            self.host.engine.block_on(self.host.engine.docker().version()).ok().and_then(|v| v.version)
        {
            v.insert("docker-engine".into(), version);
        }
        v
    }

    fn dead_service(&self) -> Option<ServiceDown> {
        let mut down = health::dead_process(&self.descriptor)?;
        down.how = self.how_it_ended(&down.service).unwrap_or(down.how);
        Some(down)
    }

    fn health(&self) -> Result<(), ServiceDown> {
        if let Some(down) = self.dead_service() {
            return Err(down);
        }
        // The database is asked from inside its own container, by its own client, over loopback TCP.
        health::check_with(&self.descriptor, |m| {
            let password = streamlab_record::descriptor::read_secret(&m.password_file).map_err(|e| e.to_string())?;
            let id = self.host.container(Role::Mysql).ok_or("the server has no container")?;
            let port = m.port.to_string();
            let client = mariadb::client_for(&m.flavour);
            let cmd = [client, "--no-defaults", "-h", "127.0.0.1", "-P", &port, "-uroot", "-N", "-B", "-e", "SELECT 1"];
            match self.host.engine.exec(&id, &cmd, &[format!("MYSQL_PWD={password}")]) {
                Ok(out) if out.exit_code == 0 && out.stdout.trim() == "1" => Ok(()),
                Ok(out) => Err(format!("SELECT 1 answered {:?} {}", out.stdout.trim(), out.stderr.trim())),
                Err(e) => Err(format!("{e:#}")),
            }
        })
    }

    /// The broker's container is signalled through its process (the host sees the container's pids); a
    /// broker started again gets a fresh container under the same name.
    fn inject_fault(&mut self, request: &FaultRequest) -> FaultResult {
        super::fault::inject(&self.host, &mut self.descriptor, self.kafka, request)
    }

    fn keep_running(mut self: Box<Self>) -> EnvDescriptor {
        self.kept = true;
        self.descriptor.clone()
    }
}

impl DockerEnv {
    /// `exited with status 137 (OOM-killed)` from the engine, for the service named like `kafka broker` or
    /// `kafka broker 2`.
    fn how_it_ended(&self, service: &str) -> Option<String> {
        let role = match service.strip_prefix("kafka broker") {
            Some("") => Role::Kafka,
            Some(node) => Role::Broker(node.trim().parse().ok()?),
            None => Role::Mysql,
        };
        let state = self.host.engine.inspect(&self.host.container(role)?).ok()?.state?;
        let code = state.exit_code.unwrap_or(-1);
        let oom = if state.oom_killed == Some(true) { " (OOM-killed)" } else { "" };
        Some(format!(
            "exited with status {code}{oom} (its container {})",
            state.status.map(|s| s.to_string()).unwrap_or_default()
        ))
    }
}

impl Drop for DockerEnv {
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        if let Err(e) = remove(&self.host.engine, &self.descriptor, false) {
            eprintln!("warning: could not tear down environment {}: {e:#}", self.descriptor.id);
        }
    }
}

/// Start Kafka (and MariaDB if asked) in containers and write the descriptor. On failure, no container and
/// no directory is left.
pub fn up(spec: &EnvSpec) -> Result<DockerEnv> {
    let engine = Arc::new(Engine::connect()?);
    let kafka_image = images::ensure(&engine, ImageRole::Kafka, Pinning::LockedOnly)?;
    let mysql_image =
        if spec.with_mysql { Some(images::ensure(&engine, ImageRole::Mariadb, Pinning::LockedOnly)?) } else { None };
    let dir = spec.dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // `env up` by hand: never swept while its containers run; lab runs and tests: swept once their xtask is gone.
    let lifetime = if spec.lifetime == Lifetime::Detached { "detached" } else { "tied" };
    let result = DockerHost::new(engine.clone(), &spec.id, &dir, kafka_image, mysql_image, lifetime).and_then(|host| {
        let descriptor = start_services(&host, spec, BackendKind::Docker)?;
        Ok(DockerEnv { descriptor, host, kafka: spec.kafka, kept: false })
    });
    if result.is_err() {
        let _ = engine.remove_env(&spec.id, Duration::from_secs(2));
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}

/// Remove an environment's containers (stopping them first) and, unless `keep`, its directory.
pub fn remove(engine: &Engine, env: &EnvDescriptor, keep: bool) -> Result<()> {
    engine.remove_env(&env.id, STOP_GRACE)?;
    if !keep && env.dir.exists() {
        std::fs::remove_dir_all(&env.dir).with_context(|| format!("cannot remove {}", env.dir.display()))?;
    }
    Ok(())
}

/// Remove the containers of lab runs and tests whose xtask is gone (killed before it could clean up), and
/// say what was removed. Containers of `env up` stay until `env down`.
pub fn sweep(engine: &Engine) -> Result<Vec<String>> {
    let mut removed = Vec::new();
    for c in engine.labelled(None)? {
        let tied = c.labels.get(host::LIFETIME_LABEL).is_none_or(|l| l != "detached");
        let owner_alive = c
            .labels
            .get(host::OWNER_LABEL)
            .and_then(|p| p.parse::<u32>().ok())
            .is_some_and(|pid| super::process::is_alive(pid) && super::process::is_ours(pid, "xtask"));
        if tied && !owner_alive {
            engine.remove(&c.id);
            removed.push(c.name);
        }
    }
    if !removed.is_empty() {
        eprintln!("removed {} container(s) a killed run left behind: {}", removed.len(), removed.join(", "));
    }
    Ok(removed)
}

/// `cpuset 0, NanoCpus 1000000000` as a reader wants it; an empty cpuset and a zero quota are no cap.
pub fn describe_caps(nano_cpus: i64, cpuset: &str) -> String {
    let set = if cpuset.is_empty() { "every CPU".to_owned() } else { format!("cpuset {cpuset}") };
    let quota = if nano_cpus == 0 { "no CPU quota".to_owned() } else { format!("NanoCpus {nano_cpus}") };
    format!("{set}, {quota}")
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, TcpListener};
    use std::path::Path;

    use streamlab_process::Cmd;
    use streamlab_record::descriptor::DESCRIPTOR_FILE;

    use super::*;
    use crate::env::kafka::{self, KafkaPorts};
    use streamlab_process::ports;

    fn options(root: &Path, with_mysql: bool) -> EnvSpec {
        EnvSpec { root: root.to_owned(), with_mysql, ..EnvSpec::new("t-", pins::default_pin()) }
    }

    fn labelled(env_id: &str) -> Vec<String> {
        Engine::connect().unwrap().labelled(Some(env_id)).unwrap().into_iter().map(|c| c.name).collect()
    }

    /// The cgroup CPU quota a process inside the container sees (v1 or v2), and how many CPUs it may use.
    fn quota_inside(env: &DockerEnv) -> (String, String) {
        let id = env.host.container(Role::Kafka).unwrap();
        let read = "cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null || cut -d' ' -f1 /sys/fs/cgroup/cpu.max";
        let quota = env.host.engine.exec(&id, &["sh", "-c", read], &[]).unwrap();
        let nproc = env.host.engine.exec(&id, &["nproc"], &[]).unwrap();
        (quota.stdout.trim().to_owned(), nproc.stdout.trim().to_owned())
    }

    #[test]
    #[ignore = "starts Kafka and MariaDB in Docker: cargo xtask test"]
    fn a_docker_environment_serves_every_listener_caps_the_broker_and_goes_down_without_leftovers() {
        let root = tempfile::tempdir().unwrap();
        let started = std::time::Instant::now();
        let env = up(&options(root.path(), true)).unwrap();
        eprintln!("docker environment ready after {:.1} s", started.elapsed().as_secs_f64());
        let d = env.descriptor().clone();
        assert_eq!((d.backend, d.kafka.version.as_str()), (BackendKind::Docker, "4.1.0"));
        assert_eq!(labelled(&d.id).len(), 2, "one container per service");

        // A real client round-trips a record on each of the five listeners.
        let probe = Cmd::new(crate::paths::harness_binary()).args(["probe", "--env"]).arg(d.dir.join(DESCRIPTOR_FILE));
        let probe = probe.output(std::time::Duration::from_secs(120)).unwrap();
        assert!(probe.status.success(), "probe failed: {}", probe.stderr);
        let report: BTreeMap<String, String> = serde_json::from_str(&probe.stdout).unwrap();
        assert_eq!(report.len(), 5);
        assert!(report.values().all(|v| v == "ok"), "{report:?}");

        // A wrong SCRAM password is refused, the right one let in (Kafka's own tool, in the broker's image).
        let scram = &d.kafka.listeners["scram512"];
        let classpath = std::env::join_paths(pins::kafka_classpath().unwrap()).unwrap();
        let api_versions = |password: &str| {
            let props = d.dir.join(format!("check-{}.properties", password.len()));
            crate::env::secrets::write_secret(&props, &kafka::java_client_properties(scram, password)).unwrap();
            let cmd = Cmd::new("java")
                .arg(crate::env::listener_probe::tools_log_config())
                .arg("-cp")
                .arg(&classpath)
                .args(["org.apache.kafka.tools.BrokerApiVersionsCommand", "--bootstrap-server", &scram.bootstrap])
                .arg("--command-config")
                .arg(&props);
            env.host.output(Role::Kafka, cmd).unwrap()
        };
        let wrong = api_versions("not-the-password");
        let text = format!("{}{}", wrong.stdout, wrong.stderr);
        assert!(!wrong.status.success() || !text.contains("(id: 1"), "a wrong password got in: {text}");
        assert!(text.contains("Authentication failed"), "{text}");
        let right = streamlab_record::descriptor::read_secret(scram.password_file.as_ref().unwrap()).unwrap();
        assert!(api_versions(&right).stdout.contains("(id: 1"));

        // The server answers over loopback TCP with ROW/FULL binlog, and refuses a wrong password.
        let m = d.mysql.as_ref().unwrap();
        assert_eq!(m.flavour, "mariadb");
        let password = streamlab_record::descriptor::read_secret(&m.password_file).unwrap();
        let sql = "SELECT 1, @@binlog_format, @@binlog_row_image, @@log_bin";
        let row = mariadb::query_tcp_on(&env.host, "mariadb", m.port, &password, sql).unwrap();
        assert_eq!(row.trim(), "1\tROW\tFULL\t1");
        assert!(mariadb::query_tcp_on(&env.host, "mariadb", m.port, "wrong", "SELECT 1").is_err());
        assert_eq!(env.health(), Ok(()));

        // A cap of 1 CPU, read back from the engine and from inside the container; then lifted again.
        let applied = env.cap_broker(1).unwrap().unwrap();
        assert!(applied.contains("cpuset 0, NanoCpus 1000000000"), "{applied}");
        assert_eq!(env.broker_caps().unwrap(), (1_000_000_000, "0".into()));
        assert_eq!(quota_inside(&env), ("100000".into(), "1".into()));
        let all = crate::env::process::allowed_cpus();
        let lifted = env.cap_broker(0).unwrap().unwrap();
        assert!(lifted.contains(&format!("NanoCpus {}", all.len() * 1_000_000_000)), "{lifted}");
        assert_eq!(quota_inside(&env), ((all.len() * 100_000).to_string(), all.len().to_string()));

        drop(env);
        assert!(labelled(&d.id).is_empty(), "containers left: {:?}", labelled(&d.id));
        assert!(!d.dir.exists(), "the environment directory was not removed");
    }

    #[test]
    #[ignore = "starts Kafka in Docker: cargo xtask test"]
    fn a_broker_container_that_cannot_start_fails_with_its_log_tail_and_leaves_nothing() {
        let root = tempfile::tempdir().unwrap();
        let held = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let mut ports = ports::free_loopback_ports(5).unwrap();
        ports[0] = held.local_addr().unwrap().port();
        let opts = EnvSpec { kafka_ports: Some(KafkaPorts::from_slice(&ports)), ..options(root.path(), false) };
        let err = format!("{:#}", up(&opts).err().expect("the broker cannot bind its port"));
        assert!(err.contains("last lines of"), "no log tail in: {err}");
        assert!(err.contains("Address already in use"), "the cause is not in the tail: {err}");
        assert!(labelled(&opts.id).is_empty(), "containers left: {:?}", labelled(&opts.id));
        assert!(!root.path().join(&opts.id).exists(), "a failed start left its directory behind");
    }

    #[test]
    #[ignore = "needs a Docker engine: cargo xtask test"]
    fn a_sweep_removes_what_a_killed_run_left_and_keeps_what_env_up_started() {
        let engine = Engine::connect().unwrap();
        let image = images::ensure(&engine, ImageRole::Kafka, Pinning::LockedOnly).unwrap();
        // A pid that is not running: the xtask that owned these is gone.
        let dead = (50_000..u32::MAX).find(|&p| !crate::env::process::is_alive(p)).unwrap();
        let id = backend::new_id("t-sweep-");
        let start = |lifetime: &str, name: &str| {
            engine
                .start(&engine::Spec {
                    name: format!("{id}-{name}"),
                    image: image.id.clone(),
                    entrypoint: vec!["sleep".into()],
                    cmd: vec!["60".into()],
                    env_id: id.clone(),
                    labels: vec![
                        (host::OWNER_LABEL.into(), dead.to_string()),
                        (host::LIFETIME_LABEL.into(), lifetime.into()),
                    ],
                    ..Default::default()
                })
                .unwrap()
        };
        start("tied", "orphan");
        start("detached", "by-hand");
        let removed = sweep(&engine).unwrap();
        assert!(removed.contains(&format!("{id}-orphan")), "{removed:?}");
        assert_eq!(labelled(&id), vec![format!("{id}-by-hand")]);
        engine.remove_env(&id, Duration::from_secs(1)).unwrap();
        assert!(labelled(&id).is_empty());
    }
}
