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
    if !nix::unistd::geteuid().is_root() {
        bail!(
            "no Docker engine answers, and starting dockerd needs root: start one yourself (sudo {dockerd} {})",
            DOCKERD_FLAGS.join(" ")
        );
    }
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir)?;
    }
    println!("no Docker engine answers: starting {dockerd} {} (log: {})", DOCKERD_FLAGS.join(" "), log.display());
    let daemon = StartedDaemon { pid: Cmd::new(dockerd).args(DOCKERD_FLAGS).log_to(log).spawn()?.release() };
    let deadline = Instant::now() + Duration::from_secs(30);
    while Engine::answers().is_none() {
        if !process::is_alive(daemon.pid) || Instant::now() > deadline {
            bail!("dockerd did not come up; last lines of {}:\n{}", log.display(), process::log_tail(log, 20));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(Some(daemon))
}
