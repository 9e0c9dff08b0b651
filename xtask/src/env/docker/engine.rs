//! A blocking face on bollard: xtask is synchronous, so each call runs on a small tokio runtime of its own.
//! Everything the lab creates carries the [`LABEL`] label, so a sweep finds what a killed run left.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use bollard::Docker;
use bollard::errors::Error as DockerError;
use bollard::models::{ContainerCreateBody, ContainerInspectResponse, ContainerUpdateBody, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptions, ListContainersOptions, LogsOptions, RemoveContainerOptions, StopContainerOptions,
};
use futures_util::StreamExt;

/// The label every container of the lab carries; its value is the environment id.
pub const LABEL: &str = "org.streamlab.env";

/// A connection to the Docker engine this machine answers on (DOCKER_HOST or the default socket).
pub struct Engine {
    docker: Docker,
    runtime: tokio::runtime::Runtime,
}

/// One container to create: image, command (argv, run as is), environment, bind mounts, user, CPU caps.
#[derive(Debug, Clone, Default)]
pub struct Spec {
    pub name: String,
    pub image: String,
    /// Replaces the image's entrypoint (official images have their own start scripts).
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    pub env: Vec<String>,
    /// Host path -> the same path inside, read-only or not.
    pub binds: Vec<(PathBuf, bool)>,
    /// `uid:gid`, so files in bind mounts belong to the user who runs the lab.
    pub user: Option<String>,
    pub env_id: String,
    /// Labels beside the environment id.
    pub labels: Vec<(String, String)>,
    pub nano_cpus: Option<i64>,
    pub cpuset_cpus: Option<String>,
}

/// What a finished one-shot container printed, and how it ended.
#[derive(Debug)]
pub struct Finished {
    pub exit_code: i64,
    pub stdout: String,
    pub stderr: String,
}

impl Engine {
    /// Connect and agree on an API version; an engine that does not answer is an error that says how to get one.
    pub fn connect() -> Result<Engine> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .context("cannot start the runtime for the Docker client")?;
        let docker = Docker::connect_with_local_defaults().context("cannot connect to the Docker engine")?;
        let docker = runtime.block_on(async {
            tokio::time::timeout(Duration::from_secs(5), docker.negotiate_version())
                .await
                .map_err(|_| anyhow::anyhow!("the Docker engine did not answer within 5 s"))?
                .map_err(anyhow::Error::from)
        });
        let docker = docker.map_err(|e| {
            e.context("no Docker engine answers (start one: `dockerd --bridge=none --iptables=false --ip-masq=false &`, see `cargo xtask doctor`)")
        })?;
        Ok(Engine { docker, runtime })
    }

    /// Whether an engine answers on this machine, without a word if not (for `--env auto` and doctor).
    pub fn answers() -> Option<String> {
        let engine = Engine::connect().ok()?;
        let version = engine.runtime.block_on(engine.docker.version()).ok()?;
        Some(format!(
            "Docker engine {} (API {})",
            version.version.unwrap_or_default(),
            version.api_version.unwrap_or_default()
        ))
    }

    pub fn docker(&self) -> &Docker {
        &self.docker
    }

    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.runtime.block_on(f)
    }

    /// Create and start a container; on a failed start it is removed again.
    pub fn start(&self, spec: &Spec) -> Result<String> {
        let body = create_body(spec);
        let options = CreateContainerOptions { name: Some(spec.name.clone()), ..Default::default() };
        let id = self
            .block_on(self.docker.create_container(Some(options), body))
            .with_context(|| format!("cannot create container {} from {}", spec.name, spec.image))?
            .id;
        if let Err(e) = self.block_on(self.docker.start_container(&id, None)) {
            self.remove(&id);
            return Err(e).with_context(|| format!("cannot start container {}", spec.name));
        }
        Ok(id)
    }

    /// Run a container to its end and collect its output; it is removed afterwards whatever happened.
    pub fn run(&self, spec: &Spec, timeout: Duration) -> Result<Finished> {
        let id = self.start(spec)?;
        let finished = self.wait_and_collect(&id, timeout);
        self.remove(&id);
        finished.with_context(|| format!("container {} ({})", spec.name, spec.cmd.join(" ")))
    }

    fn wait_and_collect(&self, id: &str, timeout: Duration) -> Result<Finished> {
        let exit_code = self.block_on(async {
            let mut wait = self.docker.wait_container(id, None);
            match tokio::time::timeout(timeout, wait.next()).await {
                Err(_) => bail!("did not finish within {} s", timeout.as_secs()),
                Ok(None) => bail!("the engine ended the wait without a status"),
                Ok(Some(Ok(r))) => Ok(r.status_code),
                // bollard reports a non-zero exit as an error carrying the code.
                Ok(Some(Err(DockerError::DockerContainerWaitError { code, .. }))) => Ok(code),
                Ok(Some(Err(e))) => Err(e.into()),
            }
        })?;
        let (stdout, stderr) = self.output(id)?;
        Ok(Finished { exit_code, stdout, stderr })
    }

    /// Everything a container has written so far, stdout and stderr apart.
    pub fn output(&self, id: &str) -> Result<(String, String)> {
        let options = LogsOptions { stdout: true, stderr: true, ..Default::default() };
        self.block_on(async {
            let mut logs = self.docker.logs(id, Some(options));
            let (mut out, mut err) = (Vec::new(), Vec::new());
            while let Some(chunk) = logs.next().await {
                match chunk? {
                    bollard::container::LogOutput::StdErr { message } => err.extend_from_slice(&message),
                    other => out.extend_from_slice(&other.into_bytes()),
                }
            }
            Ok::<_, DockerError>((
                String::from_utf8_lossy(&out).into_owned(),
                String::from_utf8_lossy(&err).into_owned(),
            ))
        })
        .context("cannot read the container's output")
    }

    /// Run `cmd` inside a running container (as the container's user), with `env` added, and collect its output.
    pub fn exec(&self, id: &str, cmd: &[&str], env: &[String]) -> Result<Finished> {
        use bollard::exec::{CreateExecOptions, StartExecResults};
        let options = CreateExecOptions {
            cmd: Some(cmd.iter().map(|c| (*c).to_owned()).collect()),
            env: Some(env.to_vec()),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            ..Default::default()
        };
        self.block_on(async {
            let exec = self.docker.create_exec(id, options).await?.id;
            let (mut out, mut err) = (Vec::new(), Vec::new());
            if let StartExecResults::Attached { mut output, .. } = self.docker.start_exec(&exec, None).await? {
                while let Some(chunk) = output.next().await {
                    match chunk? {
                        bollard::container::LogOutput::StdErr { message } => err.extend_from_slice(&message),
                        other => out.extend_from_slice(&other.into_bytes()),
                    }
                }
            }
            let exit_code = self.docker.inspect_exec(&exec).await?.exit_code.unwrap_or(-1);
            Ok::<_, DockerError>(Finished {
                exit_code,
                stdout: String::from_utf8_lossy(&out).into_owned(),
                stderr: String::from_utf8_lossy(&err).into_owned(),
            })
        })
        .with_context(|| format!("cannot run {cmd:?} in container {id}"))
    }

    pub fn inspect(&self, id: &str) -> Result<ContainerInspectResponse> {
        self.block_on(self.docker.inspect_container(id, None)).with_context(|| format!("cannot inspect container {id}"))
    }

    /// Change a running container's CPU caps (`None` leaves one as it is).
    pub fn update_cpus(&self, id: &str, nano_cpus: Option<i64>, cpuset_cpus: Option<String>) -> Result<()> {
        let body = ContainerUpdateBody { nano_cpus, cpuset_cpus, ..Default::default() };
        self.block_on(self.docker.update_container(id, body)).with_context(|| format!("cannot update container {id}"))
    }

    /// SIGTERM, `grace` to stop, then SIGKILL (the engine's `stop`).
    pub fn stop(&self, id: &str, grace: Duration) {
        let options = StopContainerOptions { t: Some(grace.as_secs() as i32), signal: None };
        let _ = self.block_on(self.docker.stop_container(id, Some(options)));
    }

    /// Remove a container and its anonymous volumes, running or not; a container already gone is fine.
    pub fn remove(&self, id: &str) {
        let options = RemoveContainerOptions { force: true, v: true, ..Default::default() };
        match self.block_on(self.docker.remove_container(id, Some(options))) {
            Ok(()) | Err(DockerError::DockerResponseServerError { status_code: 404, .. }) => {}
            Err(e) => eprintln!("warning: could not remove container {id}: {e}"),
        }
    }

    /// The lab's containers (all, or one environment's), running or not.
    pub fn labelled(&self, env_id: Option<&str>) -> Result<Vec<Labelled>> {
        let label = env_id.map_or_else(|| LABEL.to_owned(), |id| format!("{LABEL}={id}"));
        let filters = HashMap::from([("label".to_owned(), vec![label])]);
        let options = ListContainersOptions { all: true, filters: Some(filters), ..Default::default() };
        let list = self.block_on(self.docker.list_containers(Some(options))).context("cannot list containers")?;
        Ok(list
            .into_iter()
            .map(|c| Labelled {
                name: c
                    .names
                    .unwrap_or_default()
                    .first()
                    .map(|n| n.trim_start_matches('/').to_owned())
                    .unwrap_or_default(),
                id: c.id.unwrap_or_default(),
                labels: c.labels.unwrap_or_default(),
            })
            .collect())
    }

    /// Stop and remove every container of one environment; returns their names.
    pub fn remove_env(&self, env_id: &str, grace: Duration) -> Result<Vec<String>> {
        let containers = self.labelled(Some(env_id))?;
        for c in &containers {
            self.stop(&c.id, grace);
            self.remove(&c.id);
        }
        Ok(containers.into_iter().map(|c| c.name).collect())
    }
}

/// A container the lab made, as the engine lists it.
pub struct Labelled {
    pub id: String,
    pub name: String,
    pub labels: HashMap<String, String>,
}

fn create_body(spec: &Spec) -> ContainerCreateBody {
    let binds = spec
        .binds
        .iter()
        .map(|(path, read_only)| {
            // The engine binds the real directory; inside, it has the path the configs name.
            let source = path.canonicalize().unwrap_or_else(|_| path.clone());
            let (s, t) = (source.display(), path.display());
            if *read_only { format!("{s}:{t}:ro") } else { format!("{s}:{t}") }
        })
        .collect();
    ContainerCreateBody {
        image: Some(spec.image.clone()),
        entrypoint: Some(spec.entrypoint.clone()),
        cmd: Some(spec.cmd.clone()),
        env: Some(spec.env.clone()),
        user: spec.user.clone(),
        labels: Some(
            std::iter::once((LABEL.to_owned(), spec.env_id.clone())).chain(spec.labels.iter().cloned()).collect(),
        ),
        host_config: Some(HostConfig {
            // Loopback only: the host's network, never a bridge.
            network_mode: Some("host".into()),
            binds: Some(binds),
            nano_cpus: spec.nano_cpus,
            cpuset_cpus: spec.cpuset_cpus.clone(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A writable bind of `path`, created first (the engine would create it as root otherwise).
pub fn bind_dir(path: &Path) -> Result<(PathBuf, bool)> {
    std::fs::create_dir_all(path).with_context(|| format!("cannot create {}", path.display()))?;
    Ok((path.to_owned(), false))
}
