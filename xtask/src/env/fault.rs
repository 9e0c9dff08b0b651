//! Faults on one broker of an environment the lab started, asked for by an arm (harness/record's `fault`
//! handshake) and injected here, on the host that runs the broker: kill -9 (and, after a while, the same broker
//! started again from its properties and data, as a supervisor would), SIGSTOP for a while then SIGCONT, or a
//! clean restart (SIGTERM, wait for the exit, start again). Every step is timed (epoch ms); a broker started
//! again has its new pid written into the descriptor (env.json, atomically).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use streamlab_process::procfs::{self, Sig};
use streamlab_record::EnvDescriptor;
use streamlab_record::fault::{FaultKind, FaultRequest, FaultResult, FaultStatus, FaultStep};

use super::host::{Role, ServiceHost};
use super::kafka;
use super::pins::KafkaPin;
use super::process;
use super::services;

/// How long a killed broker may take to be gone.
const KILL_WAIT: Duration = Duration::from_secs(30);
/// How long a clean shutdown may take before it is cut short with SIGKILL (a controlled shutdown moves
/// leadership away first: seconds on a loaded machine).
const RESTART_GRACE: Duration = Duration::from_secs(60);
/// The longest hold a request may ask for (a stop or a kill's downtime).
pub const MAX_HOLD: Duration = Duration::from_secs(120);

/// One broker as a fault sees it.
struct Target {
    role: Role,
    pid: Option<u32>,
    properties: PathBuf,
    log: PathBuf,
}

fn target(d: &EnvDescriptor, node_id: u32) -> Result<Target, String> {
    if d.kafka.brokers.is_empty() {
        if node_id != 1 {
            return Err(format!("the environment runs one broker (node 1), not node {node_id}"));
        }
        let dir = d.dir.join("kafka");
        return Ok(Target {
            role: Role::Kafka,
            pid: d.kafka.pid,
            properties: dir.join("server.properties"),
            log: d.kafka.log_file.clone().unwrap_or_else(|| dir.join("kafka.out")),
        });
    }
    let b = d.kafka.brokers.iter().find(|b| b.node_id == node_id).ok_or_else(|| {
        let ids: Vec<u32> = d.kafka.brokers.iter().map(|b| b.node_id).collect();
        format!("the environment has no broker {node_id}; its brokers are {ids:?}")
    })?;
    let dir = b.properties.parent().map(PathBuf::from).unwrap_or_else(|| d.dir.clone());
    Ok(Target {
        role: Role::Broker(node_id),
        pid: b.pid,
        properties: b.properties.clone(),
        log: b.log_file.clone().unwrap_or_else(|| dir.join("kafka.out")),
    })
}

/// The broker's pid in the descriptor (`None` while it is down), written to env.json at once.
fn set_pid(d: &mut EnvDescriptor, node_id: u32, pid: Option<u32>) -> Result<(), String> {
    match d.kafka.brokers.iter_mut().find(|b| b.node_id == node_id) {
        Some(b) => b.pid = pid,
        None => d.kafka.pid = pid,
    }
    services::write_descriptor(d).map_err(|e| format!("cannot write the descriptor: {e:#}"))
}

/// Inject `request` on `host`, which runs the environment `d` describes (its Kafka from `pin`).
pub fn inject(host: &dyn ServiceHost, d: &mut EnvDescriptor, pin: &KafkaPin, request: &FaultRequest) -> FaultResult {
    let mut run = Run { result: FaultResult::refused(request, ""), started: Instant::now() };
    run.result.reason = None;
    let outcome = match Duration::from_millis(request.hold_ms) {
        hold if hold > MAX_HOLD => {
            Err(format!("a hold of {} ms is more than the {} s allowed", request.hold_ms, MAX_HOLD.as_secs()))
        }
        hold => target(d, request.node_id).and_then(|t| match request.kind {
            FaultKind::Kill => run.kill(host, d, pin, t, hold),
            FaultKind::Stop => run.stop(t, hold),
            FaultKind::Restart => run.restart(host, d, pin, t),
        }),
    };
    let mut result = run.result;
    match outcome {
        Ok(()) => result.status = FaultStatus::Done,
        Err(e) => {
            result.status = FaultStatus::Failed;
            result.reason = Some(e);
        }
    }
    result
}

struct Run {
    result: FaultResult,
    started: Instant,
}

impl Run {
    fn step(&mut self, what: impl Into<String>) {
        self.result.steps.push(FaultStep { what: what.into(), ts_ms: streamlab_process::clock::now_ms() });
    }

    fn running_pid(&mut self, t: &Target) -> Result<u32, String> {
        let pid = t.pid.filter(|&p| process::is_alive(p)).ok_or_else(|| "the broker is not running".to_owned())?;
        self.result.old_pid = Some(pid);
        Ok(pid)
    }

    fn kill(
        &mut self,
        host: &dyn ServiceHost,
        d: &mut EnvDescriptor,
        pin: &KafkaPin,
        t: Target,
        hold: Duration,
    ) -> Result<(), String> {
        let pid = self.running_pid(&t)?;
        self.result.old_cpu_s = procfs::pid_cpu_seconds(pid);
        procfs::signal(pid, Sig::SIGKILL);
        self.step("SIGKILL sent");
        let deadline = Instant::now() + KILL_WAIT;
        while process::is_alive(pid) {
            if Instant::now() > deadline {
                return Err(format!("the broker (pid {pid}) was still alive {} s after SIGKILL", KILL_WAIT.as_secs()));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        host.reclaim(t.role, pid);
        self.step("process gone");
        // Down: the runner's watch must not mistake it for a service that died on its own.
        set_pid(d, self.result.request.node_id, None)?;
        if !hold_for(hold) {
            return Err("interrupted while the broker was down; it was not started again".into());
        }
        self.start_again(host, d, pin, &t)
    }

    fn stop(&mut self, t: Target, hold: Duration) -> Result<(), String> {
        let pid = self.running_pid(&t)?;
        // SIGCONT however this ends (an interrupt, a panic): a stopped broker is never left behind.
        let _cont = Resume(pid);
        procfs::signal(pid, Sig::SIGSTOP);
        self.step("SIGSTOP sent");
        let held = hold_for(hold);
        procfs::signal(pid, Sig::SIGCONT);
        self.step("SIGCONT sent");
        if held { Ok(()) } else { Err("interrupted: SIGCONT sent early".into()) }
    }

    fn restart(
        &mut self,
        host: &dyn ServiceHost,
        d: &mut EnvDescriptor,
        pin: &KafkaPin,
        t: Target,
    ) -> Result<(), String> {
        let pid = self.running_pid(&t)?;
        self.result.old_cpu_s = procfs::pid_cpu_seconds(pid);
        self.step("SIGTERM sent");
        let stopping = Instant::now();
        host.stop(t.role, pid, RESTART_GRACE);
        let cut_short = stopping.elapsed() >= RESTART_GRACE;
        self.step(if cut_short { "process gone (SIGKILL after the grace period)" } else { "process gone" });
        set_pid(d, self.result.request.node_id, None)?;
        if crate::interrupt::requested() {
            return Err("interrupted while the broker was down; it was not started again".into());
        }
        self.start_again(host, d, pin, &t)
    }

    /// The same broker, from its properties and data, on the CPUs the environment gives its brokers.
    fn start_again(
        &mut self,
        host: &dyn ServiceHost,
        d: &mut EnvDescriptor,
        pin: &KafkaPin,
        t: &Target,
    ) -> Result<(), String> {
        let classpath = services::broker_classpath(pin).map_err(|e| format!("{e:#}"))?;
        // As kafka-server-start.sh restarts it: without the environment's class archive, so the restart takes a
        // stock broker's time.
        let cmd = kafka::broker_command(host.java(), pin, &classpath, &t.properties, None);
        let pid = host
            .spawn(t.role, cmd, &t.log, d.kafka.cpus.as_deref())
            .map_err(|e| format!("cannot start the broker again: {e:#}"))?;
        self.step(format!("started again (pid {pid})"));
        self.result.new_pid = Some(pid);
        set_pid(d, self.result.request.node_id, Some(pid))?;
        tracing::debug!("fault {:?} done in {:.1} s", self.result.request.kind, self.started.elapsed().as_secs_f64());
        Ok(())
    }
}

/// Sleep for `hold`; false if Ctrl-C cut it short.
fn hold_for(hold: Duration) -> bool {
    let until = Instant::now() + hold;
    while Instant::now() < until {
        if crate::interrupt::requested() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20).min(until.saturating_duration_since(Instant::now())));
    }
    true
}

/// Sends SIGCONT when dropped.
struct Resume(u32);

impl Drop for Resume {
    fn drop(&mut self) {
        procfs::signal(self.0, Sig::SIGCONT);
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};
    use streamlab_process::procfs;

    use streamlab_record::descriptor::DESCRIPTOR_FILE;
    use streamlab_record::fault::{FaultKind, FaultRequest, FaultStatus};

    use crate::env::backend::{Backend, EnvSpec, Environment};
    use crate::env::health;
    use crate::env::native::tests::assert_probe_answers_on_every_listener;
    use crate::env::native::{NativeBackend, processes_mentioning};
    use crate::env::pins;
    use crate::env::process;

    /// Every broker answers ApiVersions again (a broker started again takes a JVM start to listen).
    fn wait_healthy(env: &dyn Environment) {
        let deadline = Instant::now() + Duration::from_secs(180);
        while let Err(down) = env.health() {
            assert!(Instant::now() < deadline, "not healthy after 180 s: {down}");
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    fn on_disk(env: &dyn Environment) -> streamlab_record::EnvDescriptor {
        streamlab_record::EnvDescriptor::load(&env.descriptor().dir.join(DESCRIPTOR_FILE)).unwrap()
    }

    /// One cluster for everything a 3-broker environment must do (each start costs three JVMs and their formats):
    /// serve every listener, take each fault, name a dead broker, go down without leftovers.
    #[test]
    #[ignore = "starts a 3-broker Kafka cluster: cargo xtask test"]
    fn a_cluster_of_three_brokers_serves_every_listener_takes_each_fault_names_a_dead_broker_and_leaves_nothing() {
        let root = tempfile::tempdir().unwrap();
        let spec =
            EnvSpec { root: root.path().to_owned(), brokers: 3, ..EnvSpec::new("t-fault-", pins::default_pin()) };
        let mut env = NativeBackend.up(&spec).unwrap();
        let dir = env.descriptor().dir.clone();

        // The cluster: three KRaft nodes, each listener bootstrapping from all of them, internal topics at RF 3.
        let d = env.descriptor();
        assert_eq!(d.kafka.pids().len(), 3, "{:?}", d.kafka.brokers);
        assert_eq!(d.kafka.brokers.iter().map(|b| b.node_id).collect::<Vec<_>>(), vec![1, 2, 3]);
        assert_eq!(d.kafka.listeners["plaintext"].bootstrap.split(',').count(), 3);
        let properties = std::fs::read_to_string(&d.kafka.brokers[1].properties).unwrap();
        assert!(properties.contains("node.id=2") && properties.contains("controller.quorum.voters=1@"));
        assert!(properties.contains("offsets.topic.replication.factor=3"), "internal topics at RF 3");
        assert_probe_answers_on_every_listener(d);
        assert_eq!(health::check(d), Ok(()));

        // kill -9, down for 300 ms, started again: a new pid in the descriptor and in env.json.
        let old = env.descriptor().kafka.brokers[1].pid.unwrap();
        let kill = env.inject_fault(&FaultRequest { kind: FaultKind::Kill, node_id: 2, hold_ms: 300 });
        assert_eq!(kill.status, FaultStatus::Done, "{kill:?}");
        let steps: Vec<&str> = kill.steps.iter().map(|s| s.what.as_str()).collect();
        assert_eq!(&steps[..2], ["SIGKILL sent", "process gone"]);
        assert!(steps[2].starts_with("started again (pid "), "{steps:?}");
        assert!(kill.steps[2].ts_ms >= kill.steps[1].ts_ms + 300, "held down for 300 ms: {:?}", kill.steps);
        let new = kill.new_pid.unwrap();
        assert_ne!(new, old);
        assert!(!process::is_alive(old) && process::is_alive(new));
        assert!(kill.old_cpu_s.is_some_and(|s| s > 0.0), "{kill:?}");
        assert_eq!(env.descriptor().kafka.brokers[1].pid, Some(new));
        assert_eq!(on_disk(env.as_ref()).kafka.brokers[1].pid, Some(new), "env.json names the new process");
        assert!(health::dead_process(env.descriptor()).is_none());
        // The cluster started from the class archive; the restart runs as kafka-server-start.sh does, without it.
        let archive = env.descriptor().kafka.start_archive.clone().expect("native brokers start from the archive");
        let cmdline = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap().replace('\0', " ");
        assert!(cmdline(env.descriptor().kafka.brokers[0].pid.unwrap()).contains("-XX:SharedArchiveFile="));
        assert!(!cmdline(new).contains("-XX:SharedArchiveFile"), "{}", cmdline(new));
        assert!(crate::env::class_archive::mapped_by(env.descriptor().kafka.brokers[2].pid.unwrap(), &archive));
        assert!(!crate::env::class_archive::mapped_by(new, &archive));
        wait_healthy(env.as_ref());

        // SIGSTOP for 1 s: the broker is stopped meanwhile, running after.
        let leader = env.descriptor().kafka.brokers[0].pid.unwrap();
        let watched = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if procfs::state(leader) == Some('T') {
                    return true;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            false
        });
        let stop = env.inject_fault(&FaultRequest { kind: FaultKind::Stop, node_id: 1, hold_ms: 1000 });
        assert_eq!(stop.status, FaultStatus::Done, "{stop:?}");
        assert!(watched.join().unwrap(), "the broker was never seen stopped");
        assert_ne!(procfs::state(leader), Some('T'), "SIGCONT brought it back");
        assert!(stop.steps[1].ts_ms >= stop.steps[0].ts_ms + 1000, "{:?}", stop.steps);
        assert_eq!(stop.new_pid, None);

        // A clean restart: SIGTERM, the exit, the same broker again.
        let before = env.descriptor().kafka.brokers[2].pid.unwrap();
        let restart = env.inject_fault(&FaultRequest { kind: FaultKind::Restart, node_id: 3, hold_ms: 0 });
        assert_eq!(restart.status, FaultStatus::Done, "{restart:?}");
        assert_eq!(restart.steps[0].what, "SIGTERM sent");
        assert!(restart.steps[1].what.starts_with("process gone"), "{:?}", restart.steps);
        assert_ne!(restart.new_pid, Some(before));
        let log = std::fs::read_to_string(env.descriptor().kafka.brokers[2].log_file.as_ref().unwrap()).unwrap();
        assert!(
            log.contains("Terminating process due to signal SIGTERM"),
            "a clean shutdown: {}",
            &log[log.len().saturating_sub(3000)..]
        );
        wait_healthy(env.as_ref());

        // Nothing the environment does not run, and no node it does not have.
        let nobody = env.inject_fault(&FaultRequest { kind: FaultKind::Kill, node_id: 9, hold_ms: 0 });
        assert_eq!(nobody.status, FaultStatus::Failed);
        assert!(nobody.reason.unwrap().contains("no broker 9"));
        let too_long = env.inject_fault(&FaultRequest { kind: FaultKind::Stop, node_id: 1, hold_ms: 3_600_000 });
        assert_eq!(too_long.status, FaultStatus::Failed);

        // kill -9 behind the environment's back: the health check names the broker and how it ended.
        let victim = env.descriptor().kafka.brokers[1].pid.unwrap();
        procfs::signal(victim, procfs::Sig::SIGKILL);
        while process::is_alive(victim) {
            std::thread::sleep(Duration::from_millis(20));
        }
        // Its log may add its last error (this broker was killed and restarted above); the cause comes first.
        let down = health::dead_process(env.descriptor()).expect("a dead broker").to_string();
        assert!(down.starts_with("the kafka broker 2 was killed by SIGKILL"), "{down}");

        drop(env);
        assert!(!std::path::Path::new(&format!("/proc/{victim}")).exists(), "the killed broker was reaped");
        assert!(processes_mentioning(&dir).is_empty(), "processes left: {:?}", processes_mentioning(&dir));
        assert!(!dir.exists());
    }

    #[test]
    fn an_external_cluster_refuses_every_fault_with_the_reason() {
        let backend =
            crate::env::choose(streamlab_record::run_spec::BackendChoice::External, Some("127.0.0.1:9"), None, None)
                .unwrap();
        let root = tempfile::tempdir().unwrap();
        let spec = EnvSpec { root: root.path().to_owned(), ..EnvSpec::new("t-ext-", pins::default_pin()) };
        let mut env = backend.up(&spec).unwrap();
        let r = env.inject_fault(&FaultRequest { kind: FaultKind::Kill, node_id: 1, hold_ms: 0 });
        assert_eq!(r.status, FaultStatus::Refused);
        assert!(r.reason.unwrap().contains("never kills, stops or restarts what it did not start"));
        assert!(r.steps.is_empty());
    }
}
