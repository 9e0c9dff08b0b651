//! Running an environment's commands in containers: each service in a long-lived container, each one-shot
//! command (storage format, readiness probes, SQL) in a container removed when it ends. Every container
//! uses the host's network (loopback only), runs as the user who runs the lab, and mounts the environment
//! directory, the repository's env/ and the jar cache at the same paths as outside.

use std::collections::HashMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use streamlab_process::{Cmd, Output};
use streamlab_record::provenance::ImageInfo;

use super::engine::{self, Engine, Spec};
use crate::env::host::Server;
use crate::env::host::{ONE_SHOT_TIMEOUT, Role, ServiceHost};
use crate::env::{process, secrets};

/// Labels that say who may sweep a container: `lab` containers die with the xtask process that started them.
pub const OWNER_LABEL: &str = "org.streamlab.owner-pid";
pub const LIFETIME_LABEL: &str = "org.streamlab.lifetime";

pub struct DockerHost {
    pub engine: Arc<Engine>,
    pub env_id: String,
    pub dir: PathBuf,
    pub kafka_image: ImageInfo,
    pub mysql_image: Option<ImageInfo>,
    /// `detached` (env up by hand) or `tied` (lab runs and tests: swept once their xtask is gone).
    pub lifetime: &'static str,
    binds: Vec<(PathBuf, bool)>,
    /// The service containers started so far, by role name.
    services: Mutex<HashMap<String, String>>,
}

impl DockerHost {
    pub fn new(
        engine: Arc<Engine>,
        env_id: &str,
        dir: &Path,
        kafka_image: ImageInfo,
        mysql_image: Option<ImageInfo>,
        lifetime: &'static str,
    ) -> Result<DockerHost> {
        let binds = vec![
            engine::bind_dir(dir)?,
            (crate::paths::repo_root().join("env"), true),
            (crate::paths::cache_dir(), true),
        ];
        Ok(DockerHost {
            engine,
            env_id: env_id.to_owned(),
            dir: dir.to_owned(),
            kafka_image,
            mysql_image,
            lifetime,
            binds,
            services: Mutex::new(HashMap::new()),
        })
    }

    /// The container a service runs in, once started.
    pub fn container(&self, role: Role) -> Option<String> {
        self.services.lock().expect("services lock").get(&role.name()).cloned()
    }

    fn image(&self, role: Role) -> Result<&ImageInfo> {
        match role {
            Role::Kafka | Role::Broker(_) => Ok(&self.kafka_image),
            Role::Mysql => self.mysql_image.as_ref().context("this environment has no database image"),
        }
    }

    /// A container for `cmd`: its argv as the command, its environment, our mounts and labels.
    fn spec(&self, name: String, role: Role, cmd: &Cmd, wrapper: &str) -> Result<Spec> {
        let argv = cmd
            .argv()
            .into_iter()
            .map(|a| a.to_str().map(str::to_owned).context("a command argument is not UTF-8"))
            .collect::<Result<Vec<_>>>()?;
        let env =
            cmd.envs().into_iter().filter_map(|(k, v)| Some(format!("{}={}", k.to_str()?, v?.to_str()?))).collect();
        Ok(Spec {
            name,
            image: self.image(role)?.id.clone(),
            // `sh -c WRAPPER argv0 args...`: the wrapper redirects, then execs the command itself.
            entrypoint: vec!["/bin/sh".into(), "-c".into(), wrapper.into()],
            cmd: argv,
            env,
            binds: self.binds.clone(),
            // This process's uid:gid, so that files written into bind mounts are ours.
            user: Some(streamlab_process::os::uid_gid()),
            env_id: self.env_id.clone(),
            labels: vec![
                (OWNER_LABEL.into(), std::process::id().to_string()),
                (LIFETIME_LABEL.into(), self.lifetime.into()),
                ("org.streamlab.role".into(), role.name()),
            ],
            nano_cpus: None,
            cpuset_cpus: None,
        })
    }
}

impl ServiceHost for DockerHost {
    fn java(&self) -> PathBuf {
        "java".into()
    }

    fn mysql_server(&self) -> Result<Server> {
        self.image(Role::Mysql)?;
        Ok(Server { binary: "mariadbd".into(), flavour: "mariadb" })
    }

    fn output(&self, role: Role, cmd: Cmd) -> Result<Output> {
        let name = format!("{}-{}-run-{:08x}", self.env_id, role.name(), rand::random::<u32>());
        let mut spec = self.spec(name.clone(), role, &cmd, r#"exec "$0" "$@""#)?;
        // Input goes through an owner-only file in the mounted directory, never the command line.
        let input = match cmd.input() {
            Some(bytes) => {
                let file = self.dir.join(format!(".{name}.stdin"));
                secrets::write_secret(&file, std::str::from_utf8(bytes).context("stdin is not UTF-8")?)?;
                spec.entrypoint[2] = r#"exec "$0" "$@" <"$STREAMLAB_STDIN""#.into();
                spec.env.push(format!("STREAMLAB_STDIN={}", file.display()));
                Some(file)
            }
            None => None,
        };
        let finished = self.engine.run(&spec, ONE_SHOT_TIMEOUT);
        if let Some(file) = input {
            let _ = std::fs::remove_file(file);
        }
        let finished = finished?;
        Ok(Output {
            status: ExitStatus::from_raw(((finished.exit_code & 0xff) as i32) << 8),
            stdout: finished.stdout,
            stderr: finished.stderr,
            // The container's CPU is not this process's child's: unknown here.
            cpu_s: f64::NAN,
        })
    }

    fn spawn(&self, role: Role, cmd: Cmd, log: &Path, cpus: Option<&[usize]>) -> Result<u32> {
        let name = format!("{}-{}", self.env_id, role.name());
        let mut spec = self.spec(name.clone(), role, &cmd, r#"exec "$0" "$@" >>"$STREAMLAB_LOG" 2>&1"#)?;
        spec.env.push(format!("STREAMLAB_LOG={}", log.display()));
        if let Some(cpus) = cpus {
            let (nano, set) = cpu_caps(cpus);
            spec.nano_cpus = Some(nano);
            spec.cpuset_cpus = Some(set);
        }
        let id = self.engine.start(&spec)?;
        self.services.lock().expect("services lock").insert(role.name(), id.clone());
        let state = self.engine.inspect(&id)?.state.unwrap_or_default();
        match state.pid {
            Some(pid) if pid > 0 => Ok(pid as u32),
            _ => bail!(
                "container {name} ended at once (exit {}); last lines of {}:\n{}",
                state.exit_code.unwrap_or(-1),
                log.display(),
                process::log_tail(log, 30)
            ),
        }
    }

    fn stop(&self, role: Role, _pid: u32, grace: Duration) {
        let id = self.services.lock().expect("services lock").remove(&role.name());
        if let Some(id) = id {
            self.engine.stop(&id, grace);
            self.engine.remove(&id);
        }
    }

    /// The exited container goes, so the role's name is free for the next spawn.
    fn reclaim(&self, role: Role, pid: u32) {
        self.stop(role, pid, Duration::ZERO);
    }
}

/// NanoCpus and cpuset for exactly `cpus`: as many whole CPUs as listed, on those CPUs.
pub fn cpu_caps(cpus: &[usize]) -> (i64, String) {
    let set = cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",");
    (cpus.len() as i64 * 1_000_000_000, set)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_of_n_cpus_is_n_whole_cpus_on_those_cpus() {
        assert_eq!(cpu_caps(&[0]), (1_000_000_000, "0".into()));
        assert_eq!(cpu_caps(&[0, 1, 3]), (3_000_000_000, "0,1,3".into()));
    }
}
