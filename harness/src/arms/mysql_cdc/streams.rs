//! Which binlog dump session is the arm's. Rig C's inserts start once the arm reads the binlog; a count of dump
//! sessions cannot tell the arm's stream from an earlier one that closes meanwhile (a stream whose client is
//! gone stays listed until the server next writes to it), so the count can stand still while the arm streams.
//! The arm's stream is a session opened after the arm started (its id was not listed before) whose client
//! socket one of the arm's processes holds.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use streamlab_process::procfs;

use super::Running;
use super::db::Db;

/// One session in `Binlog Dump` (or `Binlog Dump GTID`) as the server lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpSession {
    pub id: u64,
    pub user: String,
    /// `host:port` of the client as the server sees it.
    pub host: String,
    /// Seconds the session has been in its current state.
    pub time_s: u64,
}

impl DumpSession {
    /// The client's port, where the server names one (a TCP client; a Unix socket's is `localhost`).
    fn client_port(&self) -> Option<u16> {
        self.host.rsplit_once(':')?.1.parse().ok()
    }
}

/// Whose a session is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holder {
    /// One of the arm's processes holds its client socket.
    Arm,
    /// Another process on this host holds it.
    Other { pid: u32, name: String },
    /// No process here holds it (a server elsewhere sees another address), so it cannot be told apart.
    Unknown,
}

impl Holder {
    /// Which process on this host holds `session`'s client socket; `arm` are the arm's pids.
    pub fn of(session: &DumpSession, arm: &[u32]) -> Holder {
        let inodes = session.client_port().map(procfs::tcp_socket_inodes).unwrap_or_default();
        if arm.iter().any(|&pid| procfs::holds_socket(pid, &inodes)) {
            return Holder::Arm;
        }
        match procfs::socket_holder(&inodes) {
            Some((pid, name)) => Holder::Other { pid, name },
            None => Holder::Unknown,
        }
    }
}

impl fmt::Display for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Holder::Arm => f.write_str("the arm's"),
            Holder::Other { pid, name } => write!(f, "pid {pid} {name}"),
            Holder::Unknown => f.write_str("no process on this host"),
        }
    }
}

/// The server's dump sessions now.
pub fn dump_sessions(db: &Db) -> Result<Vec<DumpSession>> {
    let rows: Vec<(u64, String, String, u64)> = db.query(
        "SELECT id, user, host, time FROM information_schema.processlist WHERE command LIKE 'Binlog Dump%' \
         ORDER BY id",
    )?;
    Ok(rows.into_iter().map(|(id, user, host, time_s)| DumpSession { id, user, host, time_s }).collect())
}

/// The server's sessions just before the arm started: every session id (the arm's stream is none of them) and
/// the dump sessions among them (for the reason, should no stream come).
#[derive(Debug, Clone, Default)]
pub struct Before {
    ids: BTreeSet<u64>,
    dumps: Vec<DumpSession>,
}

impl Before {
    pub fn read(db: &Db) -> Result<Before> {
        let ids = db.query::<u64>("SELECT id FROM information_schema.processlist")?.into_iter().collect();
        Ok(Before { ids, dumps: dump_sessions(db)? })
    }
}

/// The arm's stream, and how long after the wait began the driver saw it.
#[derive(Debug, Clone)]
pub struct ArmStream {
    pub session: DumpSession,
    pub holder: Holder,
    pub after: Duration,
}

impl fmt::Display for ArmStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let DumpSession { id, user, host, .. } = &self.session;
        write!(
            f,
            "dump session {id} ({user}@{host}, {}), seen {:.1} s after the arm started",
            self.holder,
            self.after.as_secs_f64()
        )
    }
}

/// The pids whose sockets are the arm's: its own processes, and the harness itself for an in-process arm.
fn arm_pids(running: &dyn Running) -> Vec<u32> {
    let mut pids = running.pids();
    if running.in_process() {
        pids.push(std::process::id());
    }
    pids
}

/// Until the arm holds a dump session opened after it started (one no process here holds counts too: the
/// server is elsewhere), or `timeout`, with the sessions seen before and at the end in the reason.
pub fn wait_for_arm_stream(
    db: &Db,
    running: &mut dyn Running,
    before: &Before,
    timeout: Duration,
) -> Result<ArmStream> {
    let started = Instant::now();
    let mut holders: BTreeMap<u64, Holder> = BTreeMap::new();
    loop {
        running.check()?;
        let now = dump_sessions(db)?;
        let pids = arm_pids(running);
        for session in now.iter().filter(|s| !before.ids.contains(&s.id)) {
            let holder = holders.entry(session.id).or_insert_with(|| Holder::of(session, &pids)).clone();
            if matches!(holder, Holder::Arm | Holder::Unknown) {
                return Ok(ArmStream { session: session.clone(), holder, after: started.elapsed() });
            }
        }
        if started.elapsed() > timeout {
            bail!("{}", no_stream_reason(timeout, before, &now, &pids));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What was waited for and what was seen: the dump sessions before the arm started and now, and whose.
fn no_stream_reason(timeout: Duration, before: &Before, now: &[DumpSession], arm: &[u32]) -> String {
    let list = |sessions: &[DumpSession]| {
        if sessions.is_empty() {
            return "none".to_owned();
        }
        let each = sessions.iter().map(|s| {
            let age = if before.ids.contains(&s.id) { "listed before the arm started" } else { "new" };
            format!("{} {}@{} ({}, {age}, {} s in its state)", s.id, s.user, s.host, Holder::of(s, arm), s.time_s)
        });
        each.collect::<Vec<_>>().join("; ")
    };
    format!(
        "the arm opened no binlog stream within {} s (waited for a dump session opened after it started whose \
         client socket its processes {arm:?} hold); dump sessions before it started: {}; now: {}",
        timeout.as_secs(),
        list(&before.dumps),
        list(now)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tcp_clients_port_is_read_and_a_socket_clients_is_none() {
        let s = |host: &str| DumpSession { id: 1, user: "root".into(), host: host.into(), time_s: 0 };
        assert_eq!(s("127.0.0.1:40123").client_port(), Some(40_123));
        assert_eq!(s("[::1]:40124").client_port(), Some(40_124));
        assert_eq!(s("localhost").client_port(), None);
    }

    #[test]
    fn a_session_no_process_here_holds_is_unknown() {
        let gone = DumpSession { id: 1, user: "root".into(), host: "127.0.0.1:1".into(), time_s: 0 };
        assert_eq!(Holder::of(&gone, &[std::process::id()]), Holder::Unknown);
    }
}
