//! Where an environment's commands run. Kafka and MariaDB/MySQL build their commands once, as plain
//! `std::process::Command` values, and hand them to a [`ServiceHost`]: the native host runs them on this
//! machine, the docker host in containers of the pinned images (with the environment's directory mounted at
//! the same path, so every path in a command or config file means the same thing inside and out).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use anyhow::{Context, Result};

use super::mariadb::Server;
use super::process::{self, Lifetime};

/// Which service a command belongs to (a container host picks the image by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Kafka,
    Mysql,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Kafka => "kafka",
            Role::Mysql => "mysql",
        }
    }
}

pub trait ServiceHost: Sync {
    /// The java that runs the broker and Kafka's tools.
    fn java(&self) -> PathBuf;
    /// The MariaDB/MySQL server this host runs, or why there is none.
    fn mysql_server(&self) -> Result<Server>;
    /// Run `cmd` to its end with `stdin` as its input, collecting its output.
    fn output(&self, role: Role, cmd: Command, stdin: Option<&[u8]>) -> Result<Output>;
    /// Start a service whose stdout and stderr are appended to `log`, on `cpus` if given; returns its pid
    /// on this machine.
    fn spawn(&self, role: Role, cmd: Command, log: &Path, cpus: Option<&[usize]>) -> Result<u32>;
    /// Stop a service started by [`ServiceHost::spawn`]: SIGTERM, then SIGKILL after `grace`.
    fn stop(&self, role: Role, pid: u32, grace: Duration);
}

/// This machine's own JDK and database server.
pub struct NativeHost {
    pub lifetime: Lifetime,
}

impl ServiceHost for NativeHost {
    fn java(&self) -> PathBuf {
        super::kafka::java()
    }

    fn mysql_server(&self) -> Result<Server> {
        super::mariadb::find_server().context(
            "no MariaDB/MySQL server binary (mariadbd or mysqld) found; on Debian/Ubuntu: apt-get install mariadb-server",
        )
    }

    fn output(&self, _role: Role, mut cmd: Command, stdin: Option<&[u8]>) -> Result<Output> {
        let program = cmd.get_program().to_string_lossy().into_owned();
        let mut child = cmd
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot run {program}"))?;
        if let Some(input) = stdin {
            child.stdin.take().context("no stdin")?.write_all(input)?;
        }
        Ok(child.wait_with_output()?)
    }

    fn spawn(&self, _role: Role, cmd: Command, log: &Path, cpus: Option<&[usize]>) -> Result<u32> {
        let child = process::spawn(cmd, log, self.lifetime)?;
        let pid = child.id();
        // The pid is tracked through the descriptor; dropping the handle does not stop the process.
        drop(child);
        if let Some(cpus) = cpus
            && let Err(e) = process::set_affinity(pid, cpus)
        {
            process::terminate(pid, Duration::from_secs(5));
            return Err(e);
        }
        Ok(pid)
    }

    fn stop(&self, _role: Role, pid: u32, grace: Duration) {
        process::terminate(pid, grace);
    }
}
