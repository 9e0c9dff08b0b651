//! Where an environment's commands run. Kafka and MariaDB/MySQL build their commands once, as
//! [`Cmd`] values of the workspace's process layer, and hand them to a [`ServiceHost`]: the native host runs them on this
//! machine, the docker host in containers of the pinned images (with the environment's directory mounted at
//! the same path, so every path in a command or config file means the same thing inside and out).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use streamlab_process::{Cmd, Output};

use super::process::{self, Lifetime};

/// The server binary this machine has, and its flavour.
pub struct Server {
    pub binary: PathBuf,
    pub flavour: &'static str,
}

/// Which service a command belongs to (a container host picks the image by it, and names a service's
/// container by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The single broker, and Kafka's one-shot tools (storage format, readiness probes).
    Kafka,
    /// One node of a cluster, by `node.id`.
    Broker(u32),
    Mysql,
}

impl Role {
    pub fn name(self) -> String {
        match self {
            Role::Kafka => "kafka".into(),
            Role::Broker(id) => format!("kafka-{id}"),
            Role::Mysql => "mysql".into(),
        }
    }
}

/// How long a one-shot command (storage format, a readiness probe, SQL) may run.
pub const ONE_SHOT_TIMEOUT: Duration = Duration::from_secs(300);

pub trait ServiceHost: Sync {
    /// The java that runs the broker and Kafka's tools.
    fn java(&self) -> PathBuf;
    /// The MariaDB/MySQL server this host runs, or why there is none.
    fn mysql_server(&self) -> Result<Server>;
    /// Run `cmd` to its end (with its stdin bytes, if it has any), collecting its output; killed after
    /// [`ONE_SHOT_TIMEOUT`].
    fn output(&self, role: Role, cmd: Cmd) -> Result<Output>;
    /// Start a service whose stdout and stderr are appended to `log`, on `cpus` if given; returns its pid
    /// on this machine.
    fn spawn(&self, role: Role, cmd: Cmd, log: &Path, cpus: Option<&[usize]>) -> Result<u32>;
    /// Stop a service started by [`ServiceHost::spawn`]: SIGTERM, then SIGKILL after `grace`.
    fn stop(&self, role: Role, pid: u32, grace: Duration);
    /// Collect what a service that ended (a fault killed it) left behind, so its role can be spawned again:
    /// its exit status here, its container in docker.
    fn reclaim(&self, role: Role, pid: u32);
}

/// This machine's own JDK and database server.
pub struct NativeHost {
    pub lifetime: Lifetime,
}

impl ServiceHost for NativeHost {
    fn java(&self) -> PathBuf {
        java()
    }

    fn mysql_server(&self) -> Result<Server> {
        find_server().context(
            "no MariaDB/MySQL server binary (mariadbd or mysqld) found; on Debian/Ubuntu: apt-get install mariadb-server",
        )
    }

    fn output(&self, _role: Role, cmd: Cmd) -> Result<Output> {
        cmd.output(ONE_SHOT_TIMEOUT)
    }

    fn spawn(&self, _role: Role, mut cmd: Cmd, log: &Path, cpus: Option<&[usize]>) -> Result<u32> {
        cmd = cmd.lifetime(self.lifetime).log_to(log);
        if let Some(cpus) = cpus {
            cmd = cmd.cpus(cpus);
        }
        // The pid is tracked through the descriptor and stopped by it (process::terminate also reaps it).
        Ok(cmd.spawn()?.release())
    }

    fn stop(&self, _role: Role, pid: u32, grace: Duration) {
        process::terminate(pid, grace);
    }

    fn reclaim(&self, _role: Role, pid: u32) {
        process::reap(pid);
    }
}

/// This machine's java: `$JAVA_HOME/bin/java`, else java on PATH.
pub fn java() -> PathBuf {
    std::env::var_os("JAVA_HOME").map(|h| PathBuf::from(h).join("bin").join("java")).unwrap_or_else(|| "java".into())
}

/// `mariadbd` if present, else `mysqld` (which may itself be MariaDB).
pub fn find_server() -> Option<Server> {
    let search = |name: &str| {
        std::env::var_os("PATH")
            .into_iter()
            .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .chain(["/usr/sbin".into(), "/usr/local/sbin".into()])
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    };
    if let Some(binary) = search("mariadbd") {
        return Some(Server { binary, flavour: "mariadb" });
    }
    let binary = search("mysqld")?;
    let version = Cmd::new(&binary).arg("--version").output(Duration::from_secs(30)).ok()?;
    let flavour = if version.stdout.contains("MariaDB") { "mariadb" } else { "mysql" };
    Some(Server { binary, flavour })
}
