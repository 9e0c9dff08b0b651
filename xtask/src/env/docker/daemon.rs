//! A Docker engine for the test command where none answers: Debian's dockerd with the flags these machines
//! need (no bridge network, no iptables: containers use the host's network only), stopped again at the end.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use streamlab_process::Cmd;

use super::engine::Engine;
use crate::env::process;

/// The flags: never create the default bridge (a private address range) or touch the firewall.
pub const DOCKERD_FLAGS: [&str; 3] = ["--bridge=none", "--iptables=false", "--ip-masq=false"];

/// A dockerd this process started; stopped when dropped.
pub struct StartedDaemon {
    pid: u32,
}

impl Drop for StartedDaemon {
    fn drop(&mut self) {
        process::terminate(self.pid, Duration::from_secs(30));
    }
}

/// An engine that answers: the one already running (`None`), or a dockerd started now (stopped when the
/// returned value is dropped). Says why when it cannot.
pub fn ensure_engine(log: &Path) -> Result<Option<StartedDaemon>> {
    if let Some(engine) = Engine::answers() {
        println!("{engine} answers");
        return Ok(None);
    }
    let dockerd = ["/usr/sbin/dockerd", "/usr/bin/dockerd"].into_iter().find(|p| Path::new(p).exists()).context(
        "no Docker engine answers and dockerd is not installed (apt-get install docker.io, as .ci/run does)",
    )?;
    if !streamlab_process::os::is_root() {
        bail!(
            "no Docker engine answers, and starting dockerd needs root: start one yourself (sudo {dockerd} {})",
            DOCKERD_FLAGS.join(" ")
        );
    }
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut flags: Vec<String> = DOCKERD_FLAGS.iter().map(|f| f.to_string()).collect();
    flags.extend(listen_flag(std::env::var("DOCKER_HOST").ok().as_deref()));
    println!("no Docker engine answers: starting {dockerd} {} (log: {})", flags.join(" "), log.display());
    let daemon = StartedDaemon { pid: Cmd::new(dockerd).args(&flags).log_to(log).spawn()?.release() };
    let deadline = Instant::now() + Duration::from_secs(30);
    while Engine::answers().is_none() {
        if !process::is_alive(daemon.pid) || Instant::now() > deadline {
            bail!("dockerd did not come up; last lines of {}:\n{}", log.display(), process::log_tail(log, 20));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(Some(daemon))
}

/// Where the started dockerd listens: the unix socket DOCKER_HOST names, so that clients (bollard reads DOCKER_HOST
/// too) find it there; dockerd's default socket otherwise. A CI container job sets it to a socket of its own: GitHub
/// mounts the host's engine at the default path, whose containers would not see the job's files.
fn listen_flag(docker_host: Option<&str>) -> Option<String> {
    docker_host.filter(|h| h.starts_with("unix://")).map(|h| format!("--host={h}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_started_dockerd_listens_where_docker_host_points() {
        assert_eq!(
            listen_flag(Some("unix:///run/streamlab/docker.sock")).as_deref(),
            Some("--host=unix:///run/streamlab/docker.sock")
        );
        assert_eq!(listen_flag(None), None);
        // A TCP engine is someone else's to start: the lab never opens a network listener.
        assert_eq!(listen_flag(Some("tcp://127.0.0.1:2375")), None);
    }
}
